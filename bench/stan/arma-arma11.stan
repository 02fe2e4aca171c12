// Stan 2.21 (rstan) translation of models/posteriordb/arma-arma11.shm:
// only array declarations are rewritten, array[n] T x; -> T x[n];
// (stanc 2.21 predates the array syntax).
// ARMA(1,1) model of a time series (posteriordb arma-arma11).
data {
  int<lower=1> T;
  real y[T];
}
parameters {
  real mu;
  real phi;
  real theta;
  real<lower=0> sigma;
}
model {
  vector[T] nu;
  vector[T] err;
  nu[1] = mu + phi * mu;
  err[1] = y[1] - nu[1];
  for (t in 2:T) {
    nu[t] = mu + phi * y[t - 1] + theta * err[t - 1];
    err[t] = y[t] - nu[t];
  }
  mu ~ normal(0, 10);
  phi ~ normal(0, 2);
  theta ~ normal(0, 2);
  sigma ~ cauchy(0, 2.5);
  err ~ normal(0, sigma);
}
