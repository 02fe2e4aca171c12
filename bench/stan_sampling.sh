#!/usr/bin/env bash
# Compiled Stan's sampling of a posteriordb model (wall time, leapfrog
# steps per draw), to set beside `shm sample` on the same machine.
# Usage:
#   bash bench/stan_sampling.sh speed/election88-election88_full [CHAINS WARMUP SAMPLES]
# (defaults 4 1000 1000). Data and compiled models as in
# bench/stan_gradient.sh; needs Rscript and rstan, else it skips.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/rstan.sh
exec Rscript bench/stan_sampling.R "$1" "${2:-4}" "${3:-1000}" "${4:-1000}" 2> >(grep -v "recommended package .codetools" >&2)
