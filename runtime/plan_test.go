package runtime

import (
	"fmt"
	"math"
	goruntime "runtime"
	"strings"
	"testing"
)

// TestScalarPlansMatchInterpreter evaluates models whose statements and
// scalar expressions are compiled into plans (loops, conditions, break and
// continue, scalar and element assignments, compound ones, calls, ~
// statements, and a truncated ~ left to the interpreter), and the same
// models with plans off, and requires bitwise the same log density and
// gradient, and the same errors.
func TestScalarPlansMatchInterpreter(t *testing.T) {
	const data = `{"T": 12, "K": 3, "y": [0.3, -1.2, 0.8, 2.1, -0.4, 0.0, 1.5, -2.2, 0.9, 0.1, -0.7, 1.3],
		"g": [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], "M": [[1, 2], [3, 4]]}`
	const decls = `
data {
  int<lower=1> T;
  int<lower=1> K;
  array[T] real y;
  array[T] int g;
  array[2, 2] int M;
}
parameters {
  real alpha;
  array[K] real beta;
  vector[3] gamma;
  real<lower=0> sigma;
}
`
	tests := []struct{ name, model, err string }{
		{name: "loops", model: `
model {
  matrix[2, 3] A;
  vector[T] mu;
  for (t in (K + 1):T) {
    real m = alpha;
    for (k in 1:K) {
      m += beta[k] * y[t - k];
    }
    mu[t] = m;
    y[t] ~ normal(m, sigma);
  }
  for (t in 1:K) {
    mu[t] = -alpha + gamma[g[t]] / (1 + t) - 2 ^ t * 0.01;
  }
  for (i in 1:2) {
    for (j in 1:3) {
      A[i, j] = gamma[j] * M[i, 2] - (i * 7 / 2 % 3) + (j %/% 2) + (i < j) + (gamma[j] >= 0.5 ? 1 : 0);
    }
  }
  target += -0.5 * (mu' * mu) + A[2, 3] * alpha - A[1, 1] * A[2, 2];
  {
    vector[T] s;
    int n = 0;
    s[1] = 1;
    for (t in 2:T) {
      s[t] = sqrt(0.1 + square(y[t - 1] - alpha) + 0.5 * square(s[t - 1]));
      s[t] += 1;
      s[t] *= exp(-0.01 * t);
      if (t > 9) break;
      if (g[t] == 2) continue;
      n += t;
      target += log1p(square(s[t]));
    }
    target += n * 0.001;
    y[2:10] ~ normal(alpha, s[2:10] + sigma);
    y[1] ~ normal(alpha, sigma) T[-10, 10];
  }
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  gamma ~ normal(0, 1);
  sigma ~ normal(0, 1);
}`},
		{name: "index out of range", model: `
model {
  vector[3] v = gamma;
  for (t in 1:T) {
    target += v[g[t] + t %/% 10];
  }
}`, err: "index 4 out of range: the size is 3"},
		{name: "division by zero", model: `
model {
  int z = K - 3;
  target += alpha * (K / z);
}`, err: "integer division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bm := bindBuiltins(t, "t.shm", decls+tt.model, setFromJSON(t, data), Options{})
			var lp [2]float64
			var grad [2][]float64
			var errs [2]error
			for k, noPlans := range []bool{false, true} {
				d, err := bm.NewDensity()
				if err != nil {
					t.Fatal(err)
				}
				// Lifted and hoisted loops sum their terms in another
				// order (TestLiftedLoops): this test compares the rest
				// bitwise.
				strategies{plans: !noPlans, replay: true}.apply(d)
				theta := make([]float64, d.Dim())
				for i := range theta {
					theta[i] = 0.3 - 0.1*float64(i)
				}
				grad[k] = make([]float64, d.Dim())
				lp[k], errs[k] = d.LogDensityGrad(theta, grad[k])
				if !noPlans && len(d.ev.stmtPlans) == 0 {
					t.Errorf("%d expressions and %d statements planned", len(d.ev.plans), len(d.ev.stmtPlans))
				}
			}
			if tt.err != "" {
				if errs[0] == nil || errs[1] == nil || errs[0].Error() != errs[1].Error() {
					t.Fatalf("errors: planned %v, interpreted %v", errs[0], errs[1])
				}
				if got := errs[0].Error(); !strings.Contains(got, tt.err) {
					t.Errorf("error %q, want one containing %q", got, tt.err)
				}
				return
			}
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("errors: planned %v, interpreted %v", errs[0], errs[1])
			}
			if math.Float64bits(lp[0]) != math.Float64bits(lp[1]) {
				t.Errorf("log density: planned %.17g, interpreted %.17g", lp[0], lp[1])
			}
			for i := range grad[0] {
				if math.Float64bits(grad[0][i]) != math.Float64bits(grad[1][i]) {
					t.Errorf("gradient %d: planned %.17g, interpreted %.17g", i, grad[0][i], grad[1][i])
				}
			}
		})
	}
}

// TestLoopAllocations checks that a model written with loops allocates no
// memory per scalar operation in steady state: one gradient allocates as
// many times with 40 observations as with 400 (the allocations left are
// per declared container, not per element).
func TestLoopAllocations(t *testing.T) {
	const src = `
data {
  int<lower=1> T;
  array[T] real y;
  array[T] int g;
}
parameters {
  real alpha;
  vector[3] beta;
  real<lower=0> sigma;
}
model {
  vector[T] mu;
  mu[1] = alpha;
  for (t in 2:T) {
    real m = alpha + beta[g[t]] * y[t - 1];
    mu[t] = m;
    mu[t] += 0.5 * mu[t - 1];
    y[t] ~ normal(mu[t], sigma);
  }
  target += -square(mu[1]);
  beta ~ normal(0, 1);
}`
	allocs, bytes := make([]float64, 2), make([]float64, 2)
	for k, n := range []int{40, 400} {
		ys, gs := make([]string, n), make([]string, n)
		for i := range ys {
			ys[i] = fmt.Sprint(math.Sin(float64(i)))
			gs[i] = fmt.Sprint(1 + i%3)
		}
		js := fmt.Sprintf(`{"T": %d, "y": [%s], "g": [%s]}`, n, strings.Join(ys, ", "), strings.Join(gs, ", "))
		d := newDensity(t, "t.shm", src, setFromJSON(t, js), Options{})
		theta := []float64{0.1, 0.2, -0.3, 0.4, 0.5}
		grad := make([]float64, len(theta))
		eval := func() {
			if _, err := d.LogDensityGrad(theta, grad); err != nil {
				t.Fatal(err)
			}
		}
		eval()
		allocs[k] = testing.AllocsPerRun(20, eval)
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		for range 20 {
			eval()
		}
		goruntime.ReadMemStats(&after)
		bytes[k] = float64(after.TotalAlloc-before.TotalAlloc) / 20
	}
	if allocs[0] != allocs[1] || allocs[1] > 8 {
		t.Errorf("allocations per gradient: %v with 40 observations, %v with 400; want the same, at most 8", allocs[0], allocs[1])
	}
	// The container filled element by element (its cells, its initial
	// NaNs) reuses memory from gradient to gradient.
	if bytes[1] > bytes[0]+512 {
		t.Errorf("bytes allocated per gradient: %.0f with 40 observations, %.0f with 400; want them not to grow", bytes[0], bytes[1])
	}
}
