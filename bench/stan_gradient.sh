#!/usr/bin/env bash
# Compiled Stan's (rstan's) time per log-density gradient on the posteriordb
# models of shm's gradient benchmark, at the same point (every unconstrained
# coordinate 0.1), to set beside
#   go test -run '^$' -bench Gradient -benchtime 300x ./models/posteriordb/
# Usage:
#   bash bench/stan_gradient.sh                       # all seven models
#   bash bench/stan_gradient.sh arK-arK speed/dogs-dogs
#   SHARED=/path/to/shared bash bench/stan_gradient.sh
# Data: $SHARED/posteriordb/<model file's basename>/data.json, SHARED
# defaulting to ../shared from the repository root. Compiled models are
# cached in out/stanbench (delete it to recompile); flags: bench/stan/Makevars.
# Needs Rscript and the R package rstan (2.21 tested); without them it skips.
# See bench/stan_gradient.R for what each column measures.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/rstan.sh
# Rcpp's notes about the missing codetools package are noise.
exec Rscript bench/stan_gradient.R "$@" 2> >(grep -v "recommended package .codetools" >&2)
