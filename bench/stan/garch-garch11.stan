// Stan 2.21 (rstan) translation of models/posteriordb/garch-garch11.shm:
// only array declarations are rewritten, array[n] T x; -> T x[n];
// (stanc 2.21 predates the array syntax).
// GARCH(1,1) volatility model (posteriordb garch-garch11).
data {
  int<lower=0> T;
  real y[T];
  real<lower=0> sigma1;
}
parameters {
  real mu;
  real<lower=0> alpha0;
  real<lower=0, upper=1> alpha1;
  real<lower=0, upper=(1 - alpha1)> beta1;
}
model {
  real s[T];
  s[1] = sigma1;
  for (t in 2:T) {
    s[t] = sqrt(alpha0 + alpha1 * square(y[t - 1] - mu) + beta1 * square(s[t - 1]));
  }
  y ~ normal(mu, s);
}
