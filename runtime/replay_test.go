package runtime

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shmlang/shm/ir"
)

// TestReplayedLoops checks replayed loops against the same plans without
// replay (bitwise) and the interpreter (to 1e-12: lifted loops sum in
// another order): the log density, its gradient and the output row at
// three points (the first evaluation records, the others replay), and
// which loops replay.
func TestReplayedLoops(t *testing.T) {
	const data = `{"N": 6, "J": 3, "x": [1.0, 2.0, 0.5, -1.0, 3.0, 0.0],
		"k": [0, 1, 1, 0, 1, 0], "y": [[0, 1, 1, 0, 1, 0], [1, 1, 0, 0, 0, 1], [0, 0, 1, 1, 1, 1]]}`
	const decls = `
data {
  int<lower=1> N;
  int<lower=1> J;
  vector[N] x;
  array[N] int k;
  array[J, N] int<lower=0, upper=1> y;
}
parameters {
  vector[3] beta;
  real<lower=0> sigma;
}
`
	tests := []struct {
		name, model, err string
		replayed         bool
	}{
		{name: "running counts beside a loop over parameters (dogs)", replayed: true, model: `
transformed parameters {
  matrix[J, N] n_avoid;
  matrix[J, N] n_shock;
  matrix[J, N] p;
  for (j in 1:J) {
    n_avoid[j, 1] = 0;
    n_shock[j, 1] = 0;
    for (t in 2:N) {
      n_avoid[j, t] = n_avoid[j, t - 1] + 1 - y[j, t - 1];
      n_shock[j, t] = n_shock[j, t - 1] + y[j, t - 1];
    }
    for (t in 1:N) {
      p[j, t] = beta[1] + beta[2] * n_avoid[j, t] + beta[3] * n_shock[j, t];
    }
  }
}
model {
  beta ~ normal(0, 10);
  for (j in 1:J) y[j] ~ bernoulli_logit(p[j]');
}`},
		{name: "a running sum into a real scalar", replayed: true, model: `
model {
  real s = 0;
  for (n in 1:N) s += x[n];
  target += -square(beta[1] - s) / sigma;
}`},
		{name: "a conditional on the data", replayed: true, model: `
transformed parameters {
  vector[N] c;
  for (n in 1:N) {
    if (k[n] == 1) c[n] = x[n];
    else c[n] = -x[n];
  }
}
model {
  x ~ normal(beta[1] + c, sigma);
}`},
		{name: "a loop over a parameter", model: `
model {
  vector[N] mu;
  for (n in 1:N) mu[n] = beta[1] * x[n];
  x ~ normal(mu, sigma);
}`},
		{name: "a variable also assigned a parameter", model: `
model {
  vector[N] c;
  for (n in 1:N) c[n] = x[n];
  c[1] = beta[2];
  x ~ normal(c, sigma);
}`},
		{name: "a loop with break", model: `
model {
  vector[N] c = rep_vector(0, N);
  for (n in 1:N) {
    if (x[n] > 2.5) break;
    c[n] = x[n];
  }
  x ~ normal(beta[1] + c, sigma);
}`},
		{name: "under a condition on a parameter", model: `
model {
  vector[N] c = rep_vector(0, N);
  if (beta[1] > 0) {
    for (n in 1:N) c[n] = x[n];
  }
  x ~ normal(beta[1] + c, sigma);
}`},
		{name: "a running sum from an element set under a condition on a parameter", model: `
model {
  vector[N] c = rep_vector(0, N);
  if (beta[1] > 0.5) c[1] = 5;
  for (n in 2:N) c[n] = c[n - 1] + x[n];
  x ~ normal(beta[2] + c, sigma);
}`},
		{name: "an index out of range", err: "out of range", model: `
model {
  vector[N] c;
  for (n in 1:N) c[n + 1] = x[n];
  x ~ normal(beta[1], sigma);
}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bm := bindBuiltins(t, "t.shm", decls+tt.model, setFromJSON(t, data), Options{})
			var ds [3]*Density // replayed, not replayed, interpreted
			for k := range ds {
				d, err := bm.NewDensity()
				if err != nil {
					t.Fatal(err)
				}
				if k > 0 {
					d.ev.replays = nil // before the plans are compiled
				}
				d.ev.noPlans = k == 2
				ds[k] = d
			}
			for point := range 3 {
				theta := make([]float64, ds[0].Dim())
				for i := range theta {
					theta[i] = 0.3 - 0.1*float64(i) + 0.7*float64(point)
				}
				var lp [3]float64
				var grad, row [3][]float64
				var errs [3]error
				for k, d := range ds {
					grad[k] = make([]float64, d.Dim())
					lp[k], errs[k] = d.LogDensityGrad(theta, grad[k])
					if errs[k] == nil {
						row[k], errs[k] = d.Draw(nil, theta, rand.New(rand.NewPCG(1, 2)))
					}
				}
				if tt.err != "" {
					for k := range errs {
						if errs[k] == nil || errs[k].Error() != errs[0].Error() || !strings.Contains(errs[k].Error(), tt.err) {
							t.Fatalf("point %d: errors %v; want the same error, with %q", point, errs, tt.err)
						}
					}
					continue
				}
				for k := range errs {
					if errs[k] != nil {
						t.Fatalf("point %d: errors %v", point, errs)
					}
				}
				for _, c := range []struct {
					k   int
					tol float64
				}{{1, 0}, {2, 1e-12}} {
					k, tol := c.k, c.tol
					near := func(a, b float64) bool {
						return math.Float64bits(a) == math.Float64bits(b) || math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
					}
					if !near(lp[0], lp[k]) {
						t.Errorf("point %d: log density %.17g, want %.17g (%d)", point, lp[0], lp[k], k)
					}
					for i := range grad[0] {
						if !near(grad[0][i], grad[k][i]) {
							t.Errorf("point %d: gradient %d: %.17g, want %.17g (%d)", point, i, grad[0][i], grad[k][i], k)
						}
					}
					for i := range row[0] {
						if !near(row[0][i], row[k][i]) {
							t.Errorf("point %d: output column %d: %.17g, want %.17g (%d)", point, i, row[0][i], row[k][i], k)
						}
					}
				}
			}
			if got := ds[0].ev.replayed > 0; got != tt.replayed {
				t.Errorf("replayed executions: %d, want replaying %v", ds[0].ev.replayed, tt.replayed)
			}
		})
	}
}

// throwawayStmt is a statement kind the IR's walker does not know: an
// assignment in disguise, as a new kind added without telling the
// analyses would be.
type throwawayStmt struct{ *ir.Assign }

// TestAnalysesRefuseUnknownStatement: a statement kind that writes a
// variable, unknown to ir.Parts, in a loop of the model block makes the
// loop analyses fail (a panic naming it) rather than replay or lift the
// loop as if the statement wrote nothing.
func TestAnalysesRefuseUnknownStatement(t *testing.T) {
	m, errs := ir.CheckSource("t.shm", `data { int N; vector[N] x; }
parameters { real mu; }
model {
  real s = 0;
  for (i in 1:N) { s = s + x[i]; }
  target += -mu^2 * s;
}
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(replayedLoops(m)) != 1 {
		t.Fatalf("the loop of data is not replayed: the case does not exercise the analyses")
	}
	loop := m.ModelBlock[1].(*ir.For)
	body := loop.Body.(*ir.Block)
	body.Stmts[0] = throwawayStmt{body.Stmts[0].(*ir.Assign)}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "unknown statement runtime.throwawayStmt") {
			t.Errorf("the analyses over an unknown statement kind: %v, want a panic naming it", r)
		}
	}()
	replayedLoops(m)
}
