package runtime

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLiftedLoops runs models whose loops are lifted into whole-vector
// operations (lift.go) and the same models on the interpreter: the
// containers the loops fill must be bitwise equal (the transformed
// parameters and generated quantities of a draw), the log density and
// gradient equal to rounding (only the order of the sum differs), and a
// loop whose iterations would fail must report the interpreter's error.
func TestLiftedLoops(t *testing.T) {
	const data = `{"N": 12, "y": [0.3, -1.2, 0.8, 2.1, -0.4, 0.0, 1.5, -2.2, 0.9, 0.1, -0.7, 1.3],
		"x": [1.0, 2.0, 0.5, -1.0, 3.0, 0.0, 1.5, -2.0, 0.25, 1.0, -0.5, 2.0],
		"g": [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], "bad": [1, 2, 3, 4, 1, 2, 3, 1, 2, 3, 1, 2],
		"k": [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1],
		"k2": [[0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1], [1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 1], [0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1]]}`
	const decls = `
data {
  int<lower=1> N;
  array[N] real y;
  vector[N] x;
  array[N] int g;
  array[N] int bad;
  array[N] int k;
  array[3, N] int k2;
}
parameters {
  real alpha;
  vector[3] gamma;
  real<lower=0> sigma;
}
`
	tests := []struct {
		name, model, err string
		lifted, hoisted  bool
		runs             int // lifted executions in a gradient, when not 0
	}{
		{name: "regression with a group look-up (radon)", lifted: true, model: `
model {
  vector[N] muj;
  vector[N] mu;
  for (n in 1:N) {
    muj[n] = gamma[g[n]] + x[n] * alpha;
    mu[n] = muj[n] + y[n] * 0.1;
    target += normal_lpdf(y[n] | mu[n], sigma);
  }
  gamma ~ normal(0, 1);
}`},
		{name: "transformed parameter filled in a loop (election88)", lifted: true, model: `
transformed parameters {
  vector[N] eta;
  for (i in 1:N) eta[i] = alpha + gamma[g[i]] * x[i] - 0.5 * gamma[1] * x[i] * x[i] + i * 0.01;
}
model {
  k ~ bernoulli_logit(eta);
  gamma ~ normal(0, 1);
}
generated quantities {
  array[N] real e2;
  for (i in 2:(N - 1)) e2[i] = exp(-eta[i]) + inv_logit(eta[i - 1 + 1]);
}`},
		{name: "sampling statements with int outcomes and math", lifted: true, model: `
model {
  for (n in 1:N) {
    k[n] ~ bernoulli_logit(-alpha + gamma[g[n]] * square(x[n]));
    y[n] ~ normal(exp(gamma[g[n]] / 4) - g[n] * 2 + n, sigma);
  }
}`},
		{name: "part of a container", lifted: true, model: `
model {
  vector[N] mu = rep_vector(alpha, N);
  for (n in 3:(N - 2)) mu[n] = gamma[g[n - 1]] * x[n];
  target += -0.5 * dot_self(mu);
  for (n in 1:N) target += normal_lpdf(y[n] | mu[n], sigma);
}`},
		// The transformed parameters' inner loops run lifted 3 times
		// each; the model block's nest is one lifted loop over its pairs,
		// and the last loop another.
		{name: "rows of a matrix and of a 2-D array (dogs)", lifted: true, runs: 8, model: `
transformed parameters {
  matrix[3, N] P;
  array[N, 3] real Q;
  for (j in 1:3) {
    for (n in 1:N) P[j, n] = gamma[j] + alpha * x[n] * j;
    for (n in 1:N) Q[n, j] = P[j, n] - k2[j, n];
  }
}
model {
  for (j in 1:3) {
    for (n in 1:N) k2[j, n] ~ bernoulli_logit(P[j, n]);
  }
  for (n in 1:N) y[n] ~ normal(Q[n, 1] + Q[n, 3], sigma);
}`},
		{name: "a nest over the elements of a matrix", lifted: true, runs: 2, model: `
transformed parameters {
  matrix[3, N] P;
  for (j in 1:3)
    for (n in 1:N) {
      real s = gamma[j] * x[n];
      P[j, n] = s + alpha * (j - n);
    }
}
model {
  for (n in 1:N) {
    for (j in 2:3) k2[j, n] ~ bernoulli_logit(P[j, n] - P[1, n] * j);
  }
}`},
		// Inner bounds that vary with the outer variable: the inner loops
		// run lifted one by one.
		{name: "a triangular nest", lifted: true, runs: 3, model: `
model {
  for (j in 1:3) {
    for (n in j:N) k2[j, n] ~ bernoulli_logit(gamma[j] * x[n - j + 1]);
  }
}`},
		{name: "an index out of range in a nest", err: "index 4 out of range", model: `
model {
  for (j in 1:2) {
    for (n in 1:N) y[n] ~ normal(gamma[bad[n] + j - 1], sigma);
  }
}`},
		{name: "local scalars and an inner loop (arK)", lifted: true, model: `
model {
  vector[N] mu = rep_vector(0, N);
  for (t in 4:N) {
    real m = alpha;
    int c = 0;
    for (j in 1:3) {
      real w = gamma[j] * y[t - j];
      m += w;
      m *= 0.9;
      c += j * t;
    }
    m -= c * 0.001;
    mu[t] = m;
    y[t] ~ normal(m, sigma);
  }
  target += -0.01 * dot_self(mu);
}`},
		{name: "a container written by two statements stays a loop", hoisted: true, model: `
model {
  vector[N] mu = rep_vector(0, N);
  for (n in 1:N) {
    mu[N - n + 1] = alpha * n;
    mu[n] = gamma[1] * n;
  }
  y ~ normal(mu, sigma);
}`},
		{name: "a loop-carried dependence stays a loop", model: `
model {
  vector[N] mu;
  mu[1] = alpha;
  for (n in 2:N) mu[n] = 0.5 * mu[n - 1] + gamma[g[n]];
  y ~ normal(mu, sigma);
}`},
		{name: "a recursion with hoisted arithmetic (garch)", hoisted: true, model: `
model {
  array[N] real s;
  s[1] = sigma;
  for (t in 2:N) {
    s[t] = sqrt(sigma + alpha * alpha * square(y[t - 1] - alpha) + 0.5 * square(s[t - 1]));
  }
  y ~ normal(alpha, s);
}`},
		{name: "two recursions with hoisted arithmetic (arma)", hoisted: true, model: `
model {
  vector[N] nu;
  vector[N] err;
  nu[1] = alpha;
  err[1] = y[1] - nu[1];
  for (t in 2:N) {
    real w = exp(gamma[3] * x[t]);
    nu[t] = alpha + gamma[1] * y[t - 1] + gamma[2] * err[t - 1] * w;
    err[t] = y[t] - nu[t];
    target += -0.5 * square(err[t] / sigma) - log(sigma) + 0.1 * -(x[t] * gamma[2]);
    y[t] ~ normal(nu[t] - gamma[3] / (1 + x[t] * x[t]), sigma + 1);
  }
}`},
		{name: "two recursions (arma, the posteriordb form)", hoisted: true, model: `
model {
  vector[N] nu;
  vector[N] err;
  nu[1] = alpha;
  err[1] = y[1] - nu[1];
  for (t in 2:N) {
    real w = exp(gamma[3] * x[t]);
    nu[t] = alpha + gamma[1] * y[t - 1] + gamma[2] * err[t - 1] * w;
    err[t] = y[t] - nu[t];
  }
  err ~ normal(0, sigma);
}`},
		{name: "a running sum, compound assignments and elements from before the loop", hoisted: true, model: `
model {
  vector[N] mu = rep_vector(alpha, N);
  array[N] real s;
  real acc = gamma[1];
  s[1] = sigma;
  for (t in 2:N) {
    real w;
    w = mu[t] * 0.5;
    w += -s[t - 1] / (1 + t * sigma);
    s[t] = sqrt(square(w) + sigma);
    acc = acc * 0.9 + s[t] * gamma[2] - k[t];
    mu[t] *= acc;
    mu[t - 1] -= inv_logit(w) * g[t];
  }
  target += -0.5 * dot_self(mu) - square(acc) + log(s[N]);
}`},
		{name: "an index out of range in a recursion", err: "index 5 out of range", model: `
model {
  vector[4] mu = rep_vector(alpha, 4);
  for (t in 2:N) mu[t] = mu[t - 1] * gamma[1];
  target += -dot_self(mu);
}`},
		{name: "a hoisted index out of range", err: "index 0 out of range", model: `
model {
  vector[N] s;
  s[1] = alpha;
  s[2] = alpha;
  for (t in 3:N) s[t] = 0.5 * s[t - 1] + gamma[1] * y[t - 3];
  y ~ normal(s, sigma);
}`},
		{name: "a hoisted index out of range the loop never reaches", model: `
model {
  vector[N] s;
  s[1] = alpha;
  for (t in 2:(N + 1)) {
    if (t > N) break;
    s[t] = 0.5 * s[t - 1] + gamma[1] * x[t];
  }
  y ~ normal(s, sigma);
}`},
		{name: "shifted indices ascending by one", lifted: true, hoisted: true, model: `
model {
  vector[N] mu = rep_vector(alpha, N);
  for (n in 2:(N - 1)) mu[n] = gamma[1] * x[n + 1] + y[1 + n] - x[n - 1] + k2[2, n + 1] * sigma;
  for (n in 1:3) mu[n] += k2[n, 5] * gamma[2] + k2[n, 5 - n] * gamma[3];
  y ~ normal(mu, sigma);
}`},
		{name: "a window moving with the outer loop (same length, new start)", lifted: true, model: `
model {
  vector[N] mu = rep_vector(alpha, N);
  for (j in 1:3) {
    for (n in j:(j + 5)) mu[n] = gamma[j] * x[n] + n;
    target += -0.5 * dot_self(mu);
  }
  y ~ normal(mu, sigma);
}`},
		{name: "a nest whose inner start moves with an outer loop", lifted: true, model: `
model {
  for (m in 1:3)
    for (i in 1:3)
      for (n in m:(m + 6))
        target += normal_lpdf(y[n] | k2[i, n] * gamma[i] + n * alpha, sigma);
}`},
		{name: "nests of the same size in other shapes (2 × 6, then 3 × 4)", lifted: true, model: `
model {
  for (m in 1:2)
    for (i in 1:(m + 1))
      for (n in 1:(12 %/% (m + 1)))
        target += normal_lpdf(y[n] | k2[i, n] * gamma[i] + n * alpha, sigma);
}`},
		{name: "a nest of one inner iteration", lifted: true, model: `
model {
  for (i in 1:3)
    for (n in 2:2)
      target += normal_lpdf(y[n] | k2[i, n] * gamma[i] + n * alpha, sigma);
}`},
		{name: "a shifted index past the end", err: "index 13 out of range", model: `
model {
  for (n in 1:N) target += normal_lpdf(y[n + 1] | alpha, sigma);
}`},
		{name: "int overflow of a shift", err: "integer overflow: 8 + 2147483640 is 2147483648", model: `
model {
  for (n in 1:N) target += normal_lpdf(y[n] | (n + 2147483640) * 1e-9 + alpha, sigma);
}`},
		{name: "int overflow of a product", err: "integer overflow: 2 * 1073741824 is 2147483648", model: `
model {
  for (n in 1:N) target += normal_lpdf(y[n] | g[n] * 1073741824 * 1e-9 + alpha, sigma);
}`},
		{name: "int overflow of a local's compound assignment", err: "integer overflow", model: `
model {
  for (n in 1:N) {
    int m = n;
    m *= 1073741824;
    target += normal_lpdf(y[n] | m * 1e-9 + alpha, sigma);
  }
}`},
		{name: "a shifted index before the start", err: "index 0 out of range", model: `
model {
  for (n in 1:N) target += normal_lpdf(x[n - 1] | alpha, sigma);
}`},
		{name: "a shift that overflows", err: "integer overflow: 2147483647 * 2147483647", model: `
model {
  for (n in 1:N) target += normal_lpdf(x[n + (2147483647 * 2147483647 * 2 + 4 * 2147483647)] | alpha, sigma);
}`},
		{name: "a nest with shifted indices", lifted: true, model: `
model {
  for (i in 1:2)
    for (n in 2:N)
      target += normal_lpdf(y[n] | k2[i + 1, n - 1] * alpha + k2[3 - i, n] * gamma[i], sigma);
}`},
		{name: "a nest's inner index past the end", err: "index 13 out of range", model: `
model {
  for (i in 1:3)
    for (n in 1:N)
      target += normal_lpdf(y[n] | k2[i, n + 1] * alpha, sigma);
}`},
		{name: "a nest's outer index past the end", err: "index 4 out of range", model: `
model {
  for (i in 1:3)
    for (n in 1:N)
      target += normal_lpdf(y[n] | k2[i + 1, n] * alpha, sigma);
}`},
		{name: "index out of range", err: "index 4 out of range", model: `
model {
  vector[N] mu;
  for (n in 1:N) mu[n] = gamma[bad[n]];
  y ~ normal(mu, sigma);
}`},
		{name: "range outside the container", err: "out of range", model: `
model {
  vector[5] mu;
  for (n in 1:N) mu[n] = gamma[g[n]];
  y[1:5] ~ normal(mu, sigma);
}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bm := bindBuiltins(t, "t.shm", decls+tt.model, setFromJSON(t, data), Options{})
			var lp [2]float64
			var grad, row [2][]float64
			var errs [2]error
			lifted, hoisted := 0, 0
			for k, noPlans := range []bool{false, true} {
				d, err := bm.NewDensity()
				if err != nil {
					t.Fatal(err)
				}
				d.ev.noPlans = noPlans
				theta := make([]float64, d.Dim())
				for i := range theta {
					theta[i] = 0.3 - 0.1*float64(i)
				}
				grad[k] = make([]float64, d.Dim())
				lp[k], errs[k] = d.LogDensityGrad(theta, grad[k])
				if !noPlans {
					lifted, hoisted = d.ev.lifted, d.ev.hoisted // in one evaluation of the log density
				}
				if errs[k] == nil {
					row[k], errs[k] = d.Draw(nil, theta, rand.New(rand.NewPCG(1, 2)))
				}
			}
			if tt.err != "" {
				if errs[0] == nil || errs[1] == nil || errs[0].Error() != errs[1].Error() {
					t.Fatalf("errors: lifted %v, interpreted %v", errs[0], errs[1])
				}
				if !strings.Contains(errs[0].Error(), tt.err) {
					t.Errorf("error %q, want one containing %q", errs[0], tt.err)
				}
				return
			}
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("errors: lifted %v, interpreted %v", errs[0], errs[1])
			}
			if (lifted > 0) != tt.lifted {
				t.Errorf("lifted loops run %d times, want lifting %v", lifted, tt.lifted)
			}
			if (hoisted > 0) != tt.hoisted {
				t.Errorf("loops with hoisted subexpressions run %d times, want hoisting %v", hoisted, tt.hoisted)
			}
			if tt.runs != 0 && lifted != tt.runs {
				t.Errorf("lifted loops run %d times, want %d", lifted, tt.runs)
			}
			if math.Abs(lp[0]-lp[1]) > 1e-12*math.Abs(lp[1]) {
				t.Errorf("log density: lifted %.17g, interpreted %.17g", lp[0], lp[1])
			}
			for i := range grad[0] {
				if math.Abs(grad[0][i]-grad[1][i]) > 1e-12*math.Max(1, math.Abs(grad[1][i])) {
					t.Errorf("gradient %d: lifted %.17g, interpreted %.17g", i, grad[0][i], grad[1][i])
				}
			}
			for i := range row[0] {
				if math.Float64bits(row[0][i]) != math.Float64bits(row[1][i]) && !(math.IsNaN(row[0][i]) && math.IsNaN(row[1][i])) {
					t.Errorf("output column %d: lifted %.17g, interpreted %.17g", i, row[0][i], row[1][i])
				}
			}
		})
	}
}

// TestHoistedRecursion runs a loop with hoisted subexpressions that meets
// itself again through a recursive call in its body: the inner executions
// run as written, and the outer one keeps its vectors.
func TestHoistedRecursion(t *testing.T) {
	const model = `
functions {
  real rec(int d, int n, vector x, real a) {
    vector[n] s;
    s[1] = a;
    for (t in 2:n) {
      real r = 0;
      if (d > 0) r = rec(d - 1, n, x, a * 0.5);
      s[t] = a * x[t] - square(x[t - 1] * a) + 0.5 * s[t - 1] + r;
    }
    return sum(s);
  }
}
data {
  vector[4] x;
}
parameters {
  real a;
}
model {
  target += -0.5 * square(rec(2, 4, x, a));
}`
	bm := bindBuiltins(t, "t.shm", model, setFromJSON(t, `{"x": [0.5, -1.0, 2.0, 0.25]}`), Options{})
	var lp [2]float64
	var grad [2][]float64
	for k, noPlans := range []bool{false, true} {
		d, err := bm.NewDensity()
		if err != nil {
			t.Fatal(err)
		}
		d.ev.noPlans = noPlans
		grad[k] = make([]float64, 1)
		if lp[k], err = d.LogDensityGrad([]float64{0.7}, grad[k]); err != nil {
			t.Fatal(err)
		}
		if !noPlans && d.ev.hoisted != 1 {
			t.Errorf("loops with hoisted subexpressions run %d times, want 1 (the outer call's)", d.ev.hoisted)
		}
	}
	if math.Abs(lp[0]-lp[1]) > 1e-12*math.Abs(lp[1]) || math.Abs(grad[0][0]-grad[1][0]) > 1e-12*math.Abs(grad[1][0]) {
		t.Errorf("hoisted: lp %.17g, gradient %.17g; interpreted: %.17g, %.17g", lp[0], grad[0][0], lp[1], grad[1][0])
	}
}
