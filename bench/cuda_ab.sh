#!/usr/bin/env bash
# Two builds of the GPU path compared on one GPU machine, in one device
# call (issue 15), in two steps:
#
#   bash bench/cuda_ab.sh build DIR REV   # here: DIR/bins.txz
#   bash bench/cuda_ab.sh run DIR         # on the GPU machine, repo root
#
# build compiles, with -tags cuda, the working tree ("new": the binaries
# of bench/cuda.sh build) and revision REV ("base": shm, cuda.test and
# models.test, from a temporary git worktree), stripped, with each one's
# models of Experiments A and D, and packs them into DIR/bins.txz. DIR must lie in an ignored folder of the repository
# that the device call carries (e.g. .dev/ab, carry [".dev"]); so must a
# copy of ../shared's testdata and cifar10 at .dev/shared, linked as
# ../shared on the GPU machine when it has none. The device tool's own
# $OUT brings back at most 8 files, so keep this script's OUT elsewhere,
# give the script a limit below the device call's, and pack what it
# wrote either way:
#
#   R=$OUT; OUT=/tmp/ab timeout 520 bash bench/cuda_ab.sh run .dev/ab; tar -C /tmp -czf "$R"/out.tgz ab; cp /tmp/ab/summary.txt "$R"/
#
# Every result line also goes to stdout as it comes, so that the device
# call's output shows what was measured even when the files do not come
# back.
#
# run unpacks the binaries, then: the GPU tests of "new" (bench/cuda.sh's
# tests step: a count of passes and failures per binary); ROUNDS (default
# 3) rounds of one gradient of Experiment A (ExpAGradientGPU/cuda/
# workers=6) and six concurrent evaluations of its size (Batch/K=6,
# cohort/K=6), base and new alternated, and new's FusedVariants (the
# backward pass's sweeps paired or not, its fills beside them or not, the
# forward sweeps from a pivot or not, K = 1 and 6) and Exec (a round trip
# to the device on the caller's thread and via the context's thread); one
# gradient of A on all CPU
# cores and of D on the GPU (new); then, with base and with new,
# Experiment A at the paper's configuration (4 × (500 + 300),
# backend = "cuda") and one chain of Experiment D (unbalanced, image 32,
# 600 + 256, backend = "cuda"). Logs and a summary go to OUT (default
# out/cuda_ab).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
dir=${2:-}
if [ -z "$dir" ] || { [ "$mode" != build ] && [ "$mode" != run ]; }; then
  echo "usage: bash bench/cuda_ab.sh build DIR REV | run DIR" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ "$mode" = build ]; then
  rev=${3:?usage: bash bench/cuda_ab.sh build DIR REV}
  . .ci/cudaenv.sh
  tmp=$(mktemp -d)
  trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/bins/new" "$tmp/bins/base"
  flags=(-tags cuda -ldflags=-s\ -w)
  go build "${flags[@]}" -o "$tmp/bins/new/shm" ./cmd/shm
  go build -ldflags=-s\ -w -o "$tmp/bins/new/gen" ./models/gen
  for p in stdlib/ot/cuda:cuda stdlib/sinkhorn:sinkhorn models:models models/gen:gen; do
    go test "${flags[@]}" -c -o "$tmp/bins/new/${p#*:}.test" "./${p%:*}"
  done
  git worktree add -q "$tmp/base" "$rev"
  (cd "$tmp/base" && go build "${flags[@]}" -o "$tmp/bins/base/shm" ./cmd/shm && for p in stdlib/ot/cuda:cuda models:models; do
    go test "${flags[@]}" -c -o "$tmp/bins/base/${p#*:}.test" "./${p%:*}"
  done)
  for v in new base; do
    src=.
    [ $v = base ] && src=$tmp/base
    cp "$src/models/expA.shm" "$src/models/expD/expD_unbalanced.shm" "$tmp/bins/$v/"
  done
  git -C "$tmp/base" rev-parse HEAD >"$tmp/bins/base/REV"
  { git rev-parse HEAD; git status --short | head -5; } >"$tmp/bins/new/REV"
  tar -C "$tmp/bins" -cJf "$dir/bins.txz" new base
  ls -l "$dir/bins.txz"
  exit 0
fi

out=${OUT:-out/cuda_ab}
rounds=${ROUNDS:-3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
b=$(mktemp -d)
tar -C "$b" -xJf "$dir/bins.txz"
[ -e ../shared ] || ln -s "$PWD/.dev/shared" ../shared
t0=$(date +%s)
el() { echo "[$(($(date +%s) - t0)) s] $*"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || echo "no nvidia-smi"; grep -m1 'model name' /proc/cpuinfo; nproc; date -u; cat "$b/base/REV" "$b/new/REV"; } | tee "$out/machine.txt"

# bench/cuda.sh's tests step wants its binaries in one folder.
OUT=$out/tests STEPS=tests bash bench/cuda.sh run "$b/new" >/dev/null 2>&1 || echo "tests step: exit $?"
for f in gpu_test sinkhorn_test models_test gen_test; do
  echo "tests $f: $(grep -c -- '--- PASS' "$out/tests/$f.log" || true) pass, $(grep -c -- '--- FAIL' "$out/tests/$f.log" || true) fail"
  grep -E -- '--- FAIL|^FAIL|panic' "$out/tests/$f.log" | head -5 || true
done | tee "$out/summary.txt"
el tests

for round in $(seq "$rounds"); do
  for v in base new; do
    (cd models && "$b/$v/models.test" -test.run '^$' -test.bench 'ExpAGradientGPU/cuda/workers=6' -test.benchtime 300x) 2>&1 |
      grep ns/op | sed "s/^/$v /" | tee -a "$out/expa.log" || true
    (cd stdlib/ot/cuda && "$b/$v/cuda.test" -test.run '^$' -test.bench 'Batch/(cohort/)?K=6$' -test.benchtime 100x) 2>&1 |
      grep ns/op | sed "s/^/$v /" | tee -a "$out/batch.log" || true
  done
  (cd stdlib/ot/cuda && "$b/new/cuda.test" -test.run '^$' -test.bench 'FusedVariants' -test.benchtime 100x &&
    "$b/new/cuda.test" -test.run '^$' -test.bench 'Exec' -test.benchtime 20000x) 2>&1 |
    grep ns/op | sed "s/^/new /" | tee -a "$out/batch.log" || true
  el "round $round"
done
(cd models && "$b/new/models.test" -test.run '^$' -test.bench 'ExpAGradientGPU/cpu' -test.benchtime 100x) 2>&1 | grep ns/op |
  tee -a "$out/expa.log" || true
(cd models/gen && "$b/new/gen.test" -test.run '^$' -test.bench 'ExpDGradientGPU' -test.benchtime 50x) 2>&1 | grep ns/op |
  tee "$out/expd.log" || true
el benchmarks

"$b/new/gen" expD --seed 1 --out "$out/expD_data" --first 32 --count 1 >/dev/null
for v in base new; do
  sed 's/iters = 80)/iters = 80, backend = "cuda")/' "$b/$v/expA.shm" >"$out/expA_$v.shm"
  s=$(date +%s%N)
  "$b/$v/shm" sample "$out/expA_$v.shm" ../shared/testdata/expA/data.csv --set lambda=1 --chains 4 --warmup 500 \
    --samples 300 --seed 1 --output "$out/expA_$v" >"$out/expA_$v.log" 2>"$out/expA_$v.err" || echo "Experiment A ($v): exit $?"
  echo "Experiment A, backend = \"cuda\" ($v): $((($(date +%s%N) - s) / 1000000)) ms wall" | tee -a "$out/summary.txt"
  grep -E 'took|^mu |^sigma ' "$out/expA_$v.log" | head -8 | tee -a "$out/summary.txt" || true
  sed 's/iters = 64/iters = 64, backend = "cuda"/' "$b/$v/expD_unbalanced.shm" >"$out/expD_$v.shm"
  s=$(date +%s%N)
  "$b/$v/shm" sample "$out/expD_$v.shm" "$out/expD_data/img032.json" --set lambda=0.5 --seed 32 --chains 1 \
    --warmup 600 --samples 256 --adapt-delta 0.75 --refresh 0 --output "$out/expD_$v" >"$out/expD_$v.log" 2>&1 || echo "Experiment D ($v): exit $?"
  echo "Experiment D, one chain, backend = \"cuda\" ($v): $((($(date +%s%N) - s) / 1000000)) ms wall" | tee -a "$out/summary.txt"
  grep -E 'took|^dx |^dy ' "$out/expD_$v.log" | head -6 | tee -a "$out/summary.txt" || true
  el "Experiments A and D ($v)"
done

{
  echo "---- one gradient of A (ms)"; awk '{print $1, $2, $4 / 1e6}' "$out/expa.log"
  echo "---- Batch (ms)"; awk '{print $1, $2, $4 / 1e6}' "$out/batch.log"
  echo "---- D"; awk '{print $1, $3 / 1e6}' "$out/expd.log"
} | tee -a "$out/summary.txt"
