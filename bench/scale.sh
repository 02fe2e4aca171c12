#!/usr/bin/env bash
# The sparse Sinkhorn path at scale (issue 14): for D = 1 and 2, N points
# of each measure (default 100 000) at eps = resolution(y)², T = 80, one
# log density and unrolled gradient through shm (repl ":lp"), timed with
# its peak memory. The repl session includes parsing, reading the data,
# resolution(y) and the y–y term (computed once); ":lp" prints the time
# of the evaluation (value and unrolled gradient, with the y–y term at
# this first one) and the log density with and without the log-Jacobian,
# the latter from the transforms alone.
#
#   bash bench/scale.sh              # N=100000, D="1 2"
#   N=20000 D=2 bash bench/scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-100000}
dims=${D:-1 2}
out=${OUT:-out/scale}
mkdir -p "$out"
go build -o "$out/shm" ./cmd/shm
for d in $dims; do
  data="$out/data-n$n-d$d.csv"
  [ -f "$data" ] || go run ./bench/scale/gen -n "$n" -d "$d" > "$data"
  echo ":lp mu=0.05" | /usr/bin/time -f "D=$d N=$n: %e s wall, %U s user, %M KB peak resident" \
    "$out/shm" repl bench/scale/scale.shm "$data" 2>&1 | sed 's/^/  /'
done
