package runtime

import (
	"math"
	"testing"
)

// TestDensityConstants checks Density.Constants: with it, ~ statements
// (plain, in a loop that may be lifted, vectorized) and _lupdf calls keep
// their constant terms, so the log density equals that of the same model
// written with _lpdf calls (Stan's propto = false); without it they drop
// them, by the analytic constant of the normal, −n·log √(2π), and of the
// exponential's none. The gradient is the same either way.
func TestDensityConstants(t *testing.T) {
	const data = `{"N": 3, "y": [0.5, -1.2, 2.0]}`
	const decls = "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n  real<lower=0> sigma;\n}\n"
	tilde := decls + "model {\n  sigma ~ exponential(1);\n  for (n in 1:N) y[n] ~ normal(mu, sigma);\n  y ~ normal(mu, sigma);\n  target += normal_lupdf(y | mu, sigma);\n}\n"
	lpdf := decls + "model {\n  target += exponential_lpdf(sigma | 1);\n  for (n in 1:N) target += normal_lpdf(y[n] | mu, sigma);\n  target += normal_lpdf(y | mu, sigma);\n  target += normal_lpdf(y | mu, sigma);\n}\n"
	theta := []float64{0.3, math.Log(1.7)}
	eval := func(src string, constants bool) (float64, []float64) {
		d := newDensity(t, "m.shm", src, setFromJSON(t, data), Options{})
		d.Constants = constants
		grad := make([]float64, 2)
		lp, err := d.LogDensityGrad(theta, grad)
		if err != nil {
			t.Fatal(err)
		}
		return lp, grad
	}
	want, wantGrad := eval(lpdf, false)
	kept, keptGrad := eval(tilde, true)
	dropped, droppedGrad := eval(tilde, false)
	if math.Abs(kept-want) > 1e-12*math.Abs(want) {
		t.Errorf("with constants: lp %v, want %v (the _lpdf model)", kept, want)
	}
	// Three normals over 3 points each: 9 terms of −log √(2π).
	if c := -9 * 0.5 * math.Log(2*math.Pi); math.Abs(kept-dropped-c) > 1e-12 {
		t.Errorf("kept − dropped = %v, want %v", kept-dropped, c)
	}
	for i := range wantGrad {
		if math.Abs(keptGrad[i]-wantGrad[i]) > 1e-12 || math.Abs(droppedGrad[i]-wantGrad[i]) > 1e-12 {
			t.Errorf("gradient %d: %v with constants, %v without, want %v", i, keptGrad[i], droppedGrad[i], wantGrad[i])
		}
	}
}

// TestDensityConstantsDiscrete: a _lupmf call keeps its constant term
// (−log k!) with Density.Constants, as its _lpmf.
func TestDensityConstantsDiscrete(t *testing.T) {
	const data = `{"k": [3, 0, 5]}`
	const decls = "data {\n  array[3] int k;\n}\nparameters {\n  real mu;\n}\n"
	eval := func(body string, constants bool) float64 {
		d := newDensity(t, "m.shm", decls+"model {\n  "+body+"\n}\n", setFromJSON(t, data), Options{})
		d.Constants = constants
		lp, err := d.LogDensityGrad([]float64{0.4}, make([]float64, 1))
		if err != nil {
			t.Fatal(err)
		}
		return lp
	}
	full := eval("target += poisson_lpmf(k | exp(mu));", false)
	kept := eval("target += poisson_lupmf(k | exp(mu));", true)
	dropped := eval("target += poisson_lupmf(k | exp(mu));", false)
	if math.Abs(kept-full) > 1e-12 {
		t.Errorf("with constants: %v, want %v", kept, full)
	}
	// −log 3! − log 0! − log 5!
	if c := -math.Log(6) - math.Log(120); math.Abs(kept-dropped-c) > 1e-12 {
		t.Errorf("kept − dropped = %v, want %v", kept-dropped, c)
	}
}
