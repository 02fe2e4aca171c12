#!/usr/bin/env bash
# shm's time per gradient against compiled Stan's on the loop models,
# robust to a machine whose speed drifts: ROUNDS rounds (default 5), each
# shm's Go benchmark (one core) then Stan's C++-timed gradient
# (bench/stan_gradient.sh), and the minimum of each over the rounds.
# Usage:
#   bash bench/stan_ratio.sh              # the seven models of the benchmark
#   ROUNDS=3 bash bench/stan_ratio.sh
# Needs Rscript and rstan (else it says so and stops); data and caching as
# in bench/stan_gradient.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
. bench/rstan.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go test -c -o "$out/pdb.test" ./models/posteriordb/
for r in $(seq "$rounds"); do
  (cd models/posteriordb && GOMAXPROCS=1 "$out/pdb.test" -test.run '^$' -test.bench Gradient -test.benchtime 1000x) |
    awk '/^BenchmarkGradient/ { sub("BenchmarkGradient/", "", $1); print "shm", $1, $3 / 1000 }' >> "$out/times"
  bash bench/stan_gradient.sh | awk '!/^#/ && $1 != "model" && NF >= 5 { print "stan", $1, $5 }' >> "$out/times"
  echo "round $r of $rounds done" >&2
done
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds rounds, minimum µs per gradient; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf "%-58s %10s %10s %8s\n" model shm_us stan_us ratio
awk '{ k = $1 " " $2; if (!(k in m) || $3 < m[k]) m[k] = $3; names[$2] = 1 }
     END {
       for (n in names) if (("shm " n) in m && ("stan " n) in m)
         printf "%-58s %10.2f %10.2f %8.2f\n", n, m["shm " n], m["stan " n], m["shm " n] / m["stan " n]
     }' "$out/times" | sort
