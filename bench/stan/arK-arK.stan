// Stan 2.21 (rstan) translation of models/posteriordb/arK-arK.shm:
// only array declarations are rewritten, array[n] T x; -> T x[n];
// (stanc 2.21 predates the array syntax).
// AR(K) model of a time series (posteriordb arK-arK).
data {
  int<lower=0> K;
  int<lower=0> T;
  real y[T];
}
parameters {
  real alpha;
  real beta[K];
  real<lower=0> sigma;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  sigma ~ cauchy(0, 2.5);
  for (t in (K + 1):T) {
    real m = alpha;
    for (k in 1:K) {
      m += beta[k] * y[t - k];
    }
    y[t] ~ normal(m, sigma);
  }
}
