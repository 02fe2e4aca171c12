# Compiled Stan's (rstan's) sampling of a posteriordb model, to set beside
# `shm sample`: wall time, Stan's own warmup and sampling times per chain,
# leapfrog steps per draw and tree depth. Run through bench/stan_sampling.sh.
source("bench/stan_common.R")
args <- commandArgs(trailingOnly = TRUE)
model <- args[1]
chains <- as.integer(args[2]); warmup <- as.integer(args[3]); samples <- as.integer(args[4])
sm <- compile(readLines(source_of(model)), basename(model))
data <- read_json(file.path(shared, "posteriordb", basename(model), "data.json"))
t0 <- Sys.time()
fit <- sampling(sm, data = data, chains = chains, cores = min(chains, parallel::detectCores()),
                iter = warmup + samples, warmup = warmup, seed = 1, refresh = 0)
wall <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
sp <- get_sampler_params(fit, inc_warmup = TRUE)
all <- do.call(rbind, sp)
post <- do.call(rbind, lapply(sp, function(x) x[(warmup + 1):(warmup + samples), , drop = FALSE]))
cat(sprintf("# rstan %s (Stan %s), %s, %d cores\n", packageVersion("rstan"), stan_version(),
            format(Sys.time(), "%Y-%m-%d %H:%M %Z"), parallel::detectCores()))
cat(sprintf("%s: %d chains x (%d + %d): wall %.1f s\n", model, chains, warmup, samples, wall))
print(get_elapsed_time(fit))
cat(sprintf("leapfrog steps per draw: %.1f (warmup and sampling), %.1f (sampling); tree depth %.2f; step size %.4g; divergences %d\n",
            mean(all[, "n_leapfrog__"]), mean(post[, "n_leapfrog__"]), mean(post[, "treedepth__"]),
            mean(sapply(sp, function(x) x[warmup + samples, "stepsize__"])), sum(post[, "divergent__"])))
