#!/usr/bin/env bash
# CPU versus GPU for the Sinkhorn divergence (issue 7), in two steps that
# may run on different machines (the GPU machine needs no Go toolchain):
#
#   bash bench/cuda.sh build DIR   # here: cuda-tagged binaries into DIR
#   bash bench/cuda.sh run DIR     # on the GPU machine, from the repo root
#
# run needs the repository (for the tests' working folders and the model)
# with ../shared beside it (the reference vectors), not Go.
#
# build fetches the CUDA kit if needed (.ci/cudaenv.sh) and writes DIR/shm
# (built with -tags cuda), DIR/cuda.test, DIR/sinkhorn.test,
# DIR/models.test, DIR/gen.test and DIR/gen (models/gen, for expd's
# data). run prints the GPU (nvidia-smi) and the CPU, then runs the steps
# named in STEPS (default: all of them, in this order):
#  tests:     the GPU tests: package cuda (both paths, fused and
#             multi-launch, batched launches, the culling of blocks and the
#             grid path) and the sinkhorn tape node against the CPU to
#             1e-9 on ../shared/testdata/sinkhorn, the auto backend's
#             threshold, and Experiments A's and D's densities on the GPU
#             against the CPU;
#  crossover: BenchmarkCrossover (one evaluation with the unrolled gradient,
#             n = m from 16 to 2048, 1-D and 2-D, eps = resolution²: CPU on
#             all cores, GPU fused (culling where cullPays says, every
#             problem culling, none; in the caller's order), GPU
#             multi-launch), BenchmarkBatch (K
#             concurrent evaluations of Experiment A's size),
#             BenchmarkFusedThreads (the fused kernel's thread count and
#             culling at that size), BenchmarkExpAGradientGPU (one gradient
#             of Experiment A, K = 6) and BenchmarkExpDGradientGPU (one
#             gradient of Experiment D, CPU and GPU grid paths);
#  divergence: BenchmarkDivergence (package ot on all cores against the GPU,
#             n = m in {64, ..., 16384}, d = 2, T = 80, value and
#             value+gradient);
#  expa:      Experiment A at the paper's configuration (docs/experiments.md)
#             with backend = "cuda", then "cpu" (all cores), and their
#             wall times;
#  expd:      one chain of Experiment D (unbalanced, image 32, the paper's
#             600 + 256 iterations) with backend = "cuda" (the GPU's grid
#             path), then "cpu", and their wall times;
#  sample:    samples bench/cuda/normal1024.shm (n = m = 1024, 1-D) with
#             backend = "cuda" and "cpu": same seed and initial point, so
#             the same draws, one chain of WARMUP + SAMPLES iterations
#             (default 15 + 15) at tree depth at most 4, and prints the two
#             times.
# Logs go to OUT (default out/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
dir=${2:-}
if [ -z "$dir" ] || { [ "$mode" != build ] && [ "$mode" != run ]; }; then
  echo "usage: bash bench/cuda.sh build|run DIR" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ "$mode" = build ]; then
  . .ci/cudaenv.sh
  go build -tags cuda -o "$dir/shm" ./cmd/shm
  go test -tags cuda -c -o "$dir/cuda.test" ./stdlib/ot/cuda
  go test -tags cuda -c -o "$dir/sinkhorn.test" ./stdlib/sinkhorn
  go test -tags cuda -c -o "$dir/models.test" ./models
  go test -tags cuda -c -o "$dir/gen.test" ./models/gen
  go build -o "$dir/gen" ./models/gen
  echo "cuda.sh: binaries in $dir"
  exit 0
fi

out=${OUT:-out/cuda}
warmup=${WARMUP:-15}
samples=${SAMPLES:-15}
steps=${STEPS:-tests crossover divergence expa expd sample}
mkdir -p "$out"
out=$(cd "$out" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv | tee "$out/machine.txt"
{ grep -m1 'model name' /proc/cpuinfo; echo "cores: $(nproc)"; date -u; } | tee -a "$out/machine.txt"

step() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

if step tests; then
  (cd stdlib/ot/cuda && "$dir/cuda.test" -test.run 'TestGPU' -test.v) >"$out/gpu_test.log" 2>&1
  (cd stdlib/sinkhorn && "$dir/sinkhorn.test" -test.v) >"$out/sinkhorn_test.log" 2>&1
  (cd models && "$dir/models.test" -test.run 'GPU' -test.v) >"$out/models_test.log" 2>&1
  (cd models/gen && "$dir/gen.test" -test.run 'GPU' -test.v) >"$out/gen_test.log" 2>&1
  echo "GPU tests passed (logs in $out)"
fi

if step crossover; then
  (cd stdlib/ot/cuda && "$dir/cuda.test" -test.run '^$' -test.bench 'Crossover|Batch' -test.benchtime 20x) 2>&1 | tee "$out/crossover.log"
  (cd stdlib/ot/cuda && "$dir/cuda.test" -test.run '^$' -test.bench 'FusedThreads' -test.benchtime 100x) 2>&1 | tee "$out/threads.log"
  (cd models && "$dir/models.test" -test.run '^$' -test.bench 'ExpAGradientGPU' -test.benchtime 100x) 2>&1 | tee "$out/expa_gradient.log"
  (cd models/gen && "$dir/gen.test" -test.run '^$' -test.bench 'ExpDGradientGPU' -test.benchtime 50x) 2>&1 | tee "$out/expd_gradient.log"
fi

if step divergence; then
  (cd stdlib/ot/cuda && "$dir/cuda.test" -test.run '^$' -test.bench Divergence -test.benchtime 1x) 2>&1 | tee "$out/bench.log"
fi

if step expa; then
  for backend in cuda cpu; do
    sed "s/iters = 80)/iters = 80, backend = \"$backend\")/" models/expA.shm >"$out/expA_$backend.shm"
    start=$(date +%s%N)
    "$dir/shm" sample "$out/expA_$backend.shm" ../shared/testdata/expA/data.csv --set lambda=1 --chains 4 \
      --warmup 500 --samples 300 --seed 1 --output "$out/expA_$backend" >"$out/expA_$backend.log" 2>"$out/expA_$backend.err"
    echo "Experiment A, backend = \"$backend\": $(( ($(date +%s%N) - start) / 1000000 )) ms wall"
    grep -E 'took|^mu |^sigma |R-hat|divergen' "$out/expA_$backend.log" | head -8
  done
fi

if step expd; then
  "$dir/gen" expD --seed 1 --out "$out/expD_data" --first 32 --count 1 >/dev/null
  for backend in cuda cpu; do
    sed "s/iters = 64/iters = 64, backend = \"$backend\"/" models/expD/expD_unbalanced.shm >"$out/expD_$backend.shm"
    start=$(date +%s%N)
    "$dir/shm" sample "$out/expD_$backend.shm" "$out/expD_data/img032.json" --set lambda=0.5 --seed 32 --chains 1 \
      --warmup 600 --samples 256 --adapt-delta 0.75 --refresh 0 --output "$out/expD_$backend" >"$out/expD_$backend.log" 2>&1
    echo "Experiment D (unbalanced, image 32, one chain), backend = \"$backend\": $(( ($(date +%s%N) - start) / 1000000 )) ms wall"
    grep -E 'took|^dx |^dy |divergen' "$out/expD_$backend.log" | head -6
  done
fi

if step sample; then
  for backend in cuda cpu; do
    sed "s/backend = \"cuda\"/backend = \"$backend\"/" bench/cuda/normal1024.shm >"$out/normal1024_$backend.shm"
    start=$(date +%s%N)
    "$dir/shm" sample "$out/normal1024_$backend.shm" --set N=1024 --chains 1 --warmup "$warmup" --samples "$samples" \
      --max-depth 4 --init mu=2,sigma=0.5 --seed 1 --refresh 0 --output "$out/$backend" >"$out/sample_$backend.log" 2>&1
    echo "sample, backend = \"$backend\": $(( ($(date +%s%N) - start) / 1000000 )) ms wall"
    grep -E 'took|^mu |^sigma ' "$out/sample_$backend.log"
  done
fi
