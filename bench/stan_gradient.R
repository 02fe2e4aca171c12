# Compiled Stan's (rstan's) time per log-density gradient on the posteriordb
# models of shm's BenchmarkGradient (models/posteriordb/bench_test.go), at
# the same point: every unconstrained coordinate 0.1. Run it through
# bench/stan_gradient.sh, from the repository root; arguments pick models.
#
# Columns: stan_us_raw is one grad_log_prob() call from an R loop;
# stan_us_corrected subtracts the same loop's time on a one-parameter model
# (R/Rcpp overhead); both are wall time. stan_us_cpp times the gradient in
# C++: static HMC with step size 1e-9 (so it stays at the point), L leapfrog
# steps per draw (L + 1 gradients), timed by Stan's own clock (CPU time of
# the sampling loop, get_elapsed_time). The metric is diag_e with its default
# unit diagonal: rstan 2.21 swaps unit_e's adapt_engaged branches, and the
# adaptive one resets the step size. Each time is the median of 5 rounds of
# ~0.5 s. log_prob is log_prob(adjust_transform = TRUE): with the Jacobian,
# `~` dropping constants, as shm's density does.
source("bench/stan_common.R")
models <- c("arK-arK", "arma-arma11", "garch-garch11", "eight_schools-eight_schools_noncentered",
            "speed/dogs-dogs", "speed/radon_mn-radon_hierarchical_intercept_noncentered",
            "speed/election88-election88_full")
args <- commandArgs(trailingOnly = TRUE)
if (length(args) > 0) models <- args

fit_of <- function(sm, data) suppressWarnings(suppressMessages(
  sampling(sm, data = data, chains = 1, iter = 1, algorithm = "Fixed_param", init = 0,
           refresh = 0, seed = 1, open_progress = FALSE)))

# Median over 5 rounds of one call of f(n), per unit of n, with n tuned so
# that a round takes ~0.5 s; f(n) returns its own time in seconds.
per_unit <- function(f) {
  n <- 1
  while ((t <- f(n)) < 0.05) n <- n * 4
  n <- max(1, round(n * 0.5 / t))
  median(replicate(5, f(n))) / n
}
r_loop <- function(fit, u) {
  force(fit); force(u)
  function(n) {
    t <- proc.time()[[3]]
    for (i in seq_len(n)) grad_log_prob(fit, u)
    proc.time()[[3]] - t
  }
}
hmc <- function(sm, data, init) {
  force(data); force(init)
  function(n) {
    L <- max(1, ceiling(n / 4) - 1)  # 4 draws of L + 1 gradients each
    f <- suppressWarnings(sampling(sm, data = data, chains = 1, iter = 4, warmup = 0,
      algorithm = "HMC", init = list(init), refresh = 0, seed = 1, open_progress = FALSE,
      control = list(metric = "diag_e", stepsize = 1e-9, int_time = 1e-9 * (L + 0.5),
                     adapt_engaged = FALSE)))
    sp <- suppressWarnings(get_sampler_params(f)[[1]])  # "warmup samples not saved"
    if (any(sp[, "stepsize__"] != 1e-9)) stop("HMC changed the step size")
    get_elapsed_time(f)[1, "sample"] * n / (4 * (L + 1))
  }
}

trivial <- compile("parameters { real x; } model { x ~ normal(0, 1); }", "trivial")
sms <- lapply(setNames(nm = models), function(m)  # compile all first: a quiet table
  tryCatch(compile(readLines(source_of(m)), basename(m)), error = identity))
overhead <- per_unit(r_loop(fit_of(trivial, list()), 0.1))
cat(sprintf("# rstan %s (Stan %s), %s, load average %s\n", packageVersion("rstan"),
            stan_version(), format(Sys.time(), "%Y-%m-%d %H:%M %Z"),
            sub("^(([^ ]+ ){3}).*", "\\1", readLines("/proc/loadavg"))))
cat(sprintf("# R loop overhead per grad_log_prob call (trivial model): %.2f us\n", overhead * 1e6))
cat(sprintf("%-58s %8s %12s %18s %12s %16s\n", "model", "n_params", "stan_us_raw",
            "stan_us_corrected", "stan_us_cpp", "log_prob"))
for (m in models) {
  row <- tryCatch({
    sm <- sms[[m]]
    if (inherits(sm, "error")) stop(sm)
    data <- read_json(file.path(shared, "posteriordb", basename(m), "data.json"))
    fit <- fit_of(sm, data)
    u <- rep(0.1, get_num_upars(fit))
    raw <- per_unit(r_loop(fit, u))
    cpp <- per_unit(hmc(sm, data, constrain_pars(fit, u)))
    sprintf("%8d %12.2f %18.2f %12.2f %16.8g", length(u), raw * 1e6, (raw - overhead) * 1e6,
            cpp * 1e6, log_prob(fit, u, adjust_transform = TRUE))
  }, error = function(e) paste("FAILED:", conditionMessage(e)))
  cat(sprintf("%-58s %s\n", m, row))
}
