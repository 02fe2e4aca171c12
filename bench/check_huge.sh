#!/usr/bin/env bash
# Times "shm check" on generated programs of N lines (default 100 000):
# every line an undeclared name, every line a type error, one error on the
# last line, and a valid program; wall time and peak memory per binary
# (default ./shm; give others, such as an older build, to compare).
# The results go to BENCHMARKS.md ("Checking huge files").
# Usage: bash bench/check_huge.sh [N] [BINARY...]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(./shm)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gen() { # name, statement with %d for the line number, last statement
  awk -v n="$n" -v stmt="$2" -v last="$3" 'BEGIN {
    print "parameters {\n  real mu;\n}\nmodel {"
    for (i = 0; i < n; i++) printf("  " stmt "\n", i, i % 7)
    print "  " last "\n}" }' >"$dir/$1.shm"
}
gen undeclared 'real x%d = undefined_var%d + 2 * mu;' 'mu ~ normal(0, 1);'
gen type_errors 'real x%d = mu[1] + %d * mu;' 'mu ~ normal(0, 1);'
gen last_line 'real x%d = mu + %d * mu;' 'mu ~ normal(0, undefined);'
gen valid 'real x%d = mu + %d * mu;' 'mu ~ normal(0, 1);'
for f in undeclared type_errors last_line valid; do
  for b in "${bins[@]}"; do
    /usr/bin/time -f "$f $b: %e s, %M KB peak" "$b" check "$dir/$f.shm" >/dev/null 2>"$dir/err" || true
    tail -1 "$dir/err"
  done
done
