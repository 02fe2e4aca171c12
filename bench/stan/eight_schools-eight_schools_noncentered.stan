// Stan 2.21 (rstan) translation of models/posteriordb/eight_schools-eight_schools_noncentered.shm:
// only array declarations are rewritten, array[n] T x; -> T x[n];
// (stanc 2.21 predates the array syntax).
// Eight schools, non-centred parameterization
// (posteriordb eight_schools-eight_schools_noncentered).
data {
  int<lower=0> J;
  real y[J];
  real<lower=0> sigma[J];
}
parameters {
  vector[J] theta_trans;
  real mu;
  real<lower=0> tau;
}
transformed parameters {
  vector[J] theta = mu + tau * theta_trans;
}
model {
  theta_trans ~ normal(0, 1);
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  y ~ normal(theta, sigma);
}
