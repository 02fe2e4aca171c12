// Stan 2.21 (rstan) translation of models/posteriordb/speed/dogs-dogs.shm:
// only array declarations are rewritten, array[n] T x; -> T x[n];
// (stanc 2.21 predates the array syntax).
// Dog avoidance learning (posteriordb dogs-dogs), written with scalar loops
// as the original is: a speed benchmark for loop-heavy code (issue 18).
data {
  int<lower=0> n_dogs;
  int<lower=0> n_trials;
  int<lower=0, upper=1> y[n_dogs, n_trials];
}
parameters {
  vector[3] beta;
}
transformed parameters {
  matrix[n_dogs, n_trials] n_avoid;
  matrix[n_dogs, n_trials] n_shock;
  matrix[n_dogs, n_trials] p;
  for (j in 1:n_dogs) {
    n_avoid[j, 1] = 0;
    n_shock[j, 1] = 0;
    for (t in 2:n_trials) {
      n_avoid[j, t] = n_avoid[j, t - 1] + 1 - y[j, t - 1];
      n_shock[j, t] = n_shock[j, t - 1] + y[j, t - 1];
    }
    for (t in 1:n_trials) {
      p[j, t] = beta[1] + beta[2] * n_avoid[j, t] + beta[3] * n_shock[j, t];
    }
  }
}
model {
  beta ~ normal(0, 100);
  for (j in 1:n_dogs) {
    for (t in 1:n_trials) {
      y[j, t] ~ bernoulli_logit(p[j, t]);
    }
  }
}
