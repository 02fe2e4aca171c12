# Sourced by the bench scripts that run compiled Stan: from the repository
# root, it stops the script (exit 0, "skipped") without Rscript and rstan,
# and sets the data folder and the compiler flags of the Stan models.
if ! command -v Rscript >/dev/null ||
   ! Rscript -e 'quit(status = !requireNamespace("rstan", quietly = TRUE))' >/dev/null 2>&1; then
  echo "rstan not installed: skipped"
  exit 0
fi
export SHARED=${SHARED:-../shared}
export R_MAKEVARS_USER=$PWD/bench/stan/Makevars
