package runtime

import (
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
)

// TestTruncation checks T[lo, hi], T[lo, ] and T[, hi] against the
// normalized density written out with the normal cdf, and the gradient
// against finite differences.
func TestTruncation(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	tests := []struct {
		trunc string
		norm  func(mu, s float64) float64 // log of the normalizing mass
	}{
		{"T[0, 2]", func(mu, s float64) float64 { return math.Log(phi((2-mu)/s) - phi((0-mu)/s)) }},
		{"T[0, ]", func(mu, s float64) float64 { return math.Log(1 - phi((0-mu)/s)) }},
		{"T[, 2]", func(mu, s float64) float64 { return math.Log(phi((2 - mu) / s)) }},
	}
	ys := []float64{0.3, 1.1, 1.9}
	for _, tt := range tests {
		t.Run(tt.trunc, func(t *testing.T) {
			src := `data { array[3] real y; }
parameters { real mu; real<lower=0> s; }
model { for (i in 1:3) y[i] ~ normal(mu, s) ` + tt.trunc + `; }`
			m, errs := ir.CheckSource("trunc.shm", src)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			set := setFromJSON(t, `{"y": [0.3, 1.1, 1.9]}`)
			bm, err := Bind(m, set, Options{Impls: Builtins()})
			if err != nil {
				t.Fatal(err)
			}
			d, err := bm.NewDensity()
			if err != nil {
				t.Fatal(err)
			}
			// ~ drops −log(sqrt(2π)) but keeps −log s (s is a parameter).
			want := func(th []float64) float64 {
				mu, s := th[0], math.Exp(th[1])
				lp := th[1] // Jacobian
				for _, y := range ys {
					z := (y - mu) / s
					lp += -0.5*z*z - math.Log(s) - tt.norm(mu, s)
				}
				return lp
			}
			theta := []float64{0.7, math.Log(0.8)}
			grad := make([]float64, 2)
			lp, err := d.LogDensityGrad(theta, grad)
			if err != nil {
				t.Fatal(err)
			}
			if w := want(theta); math.Abs(lp-w) > 1e-10 {
				t.Errorf("log density %.12g, want %.12g", lp, w)
			}
			num := make([]float64, 2)
			autodiff.NumericGradient(want, theta, num)
			for i := range grad {
				if math.Abs(grad[i]-num[i]) > 1e-6 {
					t.Errorf("grad[%d] = %g, finite differences %g", i, grad[i], num[i])
				}
			}
		})
	}
	// An outcome outside the bounds has zero density.
	m, _ := ir.CheckSource("t.shm", `data { real y; } parameters { real mu; } model { y ~ normal(mu, 1) T[0, 1]; }`)
	bm, err := Bind(m, setFromJSON(t, `{"y": 3}`), Options{Impls: Builtins()})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := bm.NewDensity()
	if lp, _ := d.LogDensity([]float64{0.5}); !math.IsInf(lp, -1) {
		t.Errorf("outcome outside T[0, 1]: log density %g, want -Inf", lp)
	}
}
