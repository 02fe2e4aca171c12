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
# (built with -tags cuda), DIR/cuda.test and DIR/sinkhorn.test. run
#  1. prints the GPU (nvidia-smi) and the CPU;
#  2. runs the GPU tests: package cuda and the sinkhorn tape node against
#     the CPU to 1e-9 on ../shared/testdata/sinkhorn, and the auto
#     backend's threshold;
#  3. runs BenchmarkDivergence (package ot on all cores against the GPU,
#     n = m in {64, ..., 16384}, d = 2, T = 80, value and value+gradient);
#  4. samples bench/cuda/normal1024.shm (n = m = 1024, 1-D) with
#     backend = "cuda" and "cpu": same seed and initial point, so the same
#     draws, one chain of WARMUP + SAMPLES iterations (default 15 + 15) at
#     tree depth at most 4, and prints the two times.
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
  echo "cuda.sh: binaries in $dir"
  exit 0
fi

out=${OUT:-out/cuda}
warmup=${WARMUP:-15}
samples=${SAMPLES:-15}
mkdir -p "$out"
out=$(cd "$out" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv | tee "$out/machine.txt"
{ grep -m1 'model name' /proc/cpuinfo; echo "cores: $(nproc)"; date -u; } | tee -a "$out/machine.txt"

(cd stdlib/ot/cuda && "$dir/cuda.test" -test.run 'TestGPU' -test.v) >"$out/gpu_test.log" 2>&1
(cd stdlib/sinkhorn && "$dir/sinkhorn.test" -test.v) >"$out/sinkhorn_test.log" 2>&1
echo "GPU tests passed (logs in $out)"

(cd stdlib/ot/cuda && "$dir/cuda.test" -test.run '^$' -test.bench Divergence -test.benchtime 1x) 2>&1 | tee "$out/bench.log"

for backend in cuda cpu; do
  sed "s/backend = \"cuda\"/backend = \"$backend\"/" bench/cuda/normal1024.shm >"$out/normal1024_$backend.shm"
  start=$(date +%s%N)
  "$dir/shm" sample "$out/normal1024_$backend.shm" --set N=1024 --chains 1 --warmup "$warmup" --samples "$samples" \
    --max-depth 4 --init mu=2,sigma=0.5 --seed 1 --refresh 0 --output "$out/$backend" >"$out/sample_$backend.log" 2>&1
  echo "sample, backend = \"$backend\": $(( ($(date +%s%N) - start) / 1000000 )) ms wall"
  grep -E 'took|^mu |^sigma ' "$out/sample_$backend.log"
done
