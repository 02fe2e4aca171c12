package runtime

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// odeDensity binds a model and returns its log density and gradient at
// theta (unconstrained).
func odeDensity(t *testing.T, src string, theta []float64) (float64, []float64, error) {
	t.Helper()
	d := newDensity(t, "ode.shm", src, nil, Options{})
	grad := make([]float64, len(theta))
	lp, err := d.LogDensityGrad(theta, grad)
	return lp, grad, err
}

// TestODEClosedForms checks solutions and their gradients against closed
// forms, for every solver spelling: exponential decay y' = −k y (y(t) =
// y0 e^{−kt}) and the harmonic oscillator d²x/dt² = −ω² x from (1, 0) (x(t) =
// cos ωt). The log density is Σ_n w_n y(t_n), so its gradient is the
// weighted sum of the sensitivities.
func TestODEClosedForms(t *testing.T) {
	ts := []float64{0.5, 1, 2.5, 4}
	w := []float64{1, -0.5, 2, 0.25}
	decay := func(k, y0 float64) (lp, dk, dy0 float64) {
		for i, tt := range ts {
			e := math.Exp(-k * tt)
			lp += w[i] * y0 * e
			dk += w[i] * (-tt * y0 * e)
			dy0 += w[i] * e
		}
		return
	}
	osc := func(om float64) (lp, dom float64) {
		for i, tt := range ts {
			lp += w[i] * math.Cos(om*tt)
			dom += w[i] * (-tt * math.Sin(om*tt))
		}
		return
	}
	const fns = `functions {
  vector decay(real t, vector y, real k) { return -k * y; }
  array[] real decay_old(real t, array[] real y, array[] real theta, array[] real x_r, array[] int x_i) {
    return {-theta[1] * y[1]};
  }
  vector osc(real t, vector y, real omega) { return [y[2], -square(omega) * y[1]]'; }
}
transformed data {
  array[4] real ts = {0.5, 1, 2.5, 4};
  vector[4] w = [1, -0.5, 2, 0.25]';
}
`
	solvers := []struct{ name, call string }{
		{"ode_rk45", "ode_rk45_tol(%F, %Y, 0, ts, 1e-10, 1e-10, 100000, %A)"},
		{"ode_bdf", "ode_bdf_tol(%F, %Y, 0, ts, 1e-9, 1e-9, 1000000, %A)"},
		{"ode_rk45 (default tolerances)", "ode_rk45(%F, %Y, 0, ts, %A)"},
	}
	for _, s := range solvers {
		call := func(f, y, a string) string {
			return strings.NewReplacer("%F", f, "%Y", y, "%A", a).Replace(s.call)
		}
		tol := 1e-6
		if strings.Contains(s.name, "default") {
			tol = 1e-4
		}
		if s.name == "ode_bdf" {
			tol = 1e-5
		}
		t.Run(s.name+"/decay", func(t *testing.T) {
			src := fns + `parameters { real k; real y0; }
model {
  array[4] vector[1] y = ` + call("decay", "[y0]'", "k") + `;
  for (n in 1:4) target += w[n] * y[n][1];
}`
			k, y0 := 0.7, 1.3
			lp, grad, err := odeDensity(t, src, []float64{k, y0})
			if err != nil {
				t.Fatal(err)
			}
			wlp, dk, dy0 := decay(k, y0)
			check(t, "log density", lp, wlp, tol)
			check(t, "d/dk", grad[0], dk, tol)
			check(t, "d/dy0", grad[1], dy0, tol)
		})
		t.Run(s.name+"/oscillator", func(t *testing.T) {
			src := fns + `parameters { real omega; }
model {
  array[4] vector[2] y = ` + call("osc", "[1, 0]'", "omega") + `;
  for (n in 1:4) target += w[n] * y[n][1];
}`
			om := 1.7
			lp, grad, err := odeDensity(t, src, []float64{om})
			if err != nil {
				t.Fatal(err)
			}
			wlp, dom := osc(om)
			check(t, "log density", lp, wlp, tol)
			check(t, "d/domega", grad[0], dom, tol)
		})
	}
	for _, name := range []string{"integrate_ode_rk45", "integrate_ode_bdf"} {
		t.Run(name, func(t *testing.T) {
			src := fns + `parameters { real k; real y0; }
model {
  array[4, 1] real y = ` + name + `(decay_old, {y0}, 0, ts, {k}, rep_array(0.0, 0), rep_array(0, 0), 1e-10, 1e-10, 1000000);
  for (n in 1:4) target += w[n] * y[n, 1];
}`
			k, y0 := 0.4, 0.8
			lp, grad, err := odeDensity(t, src, []float64{k, y0})
			if err != nil {
				t.Fatal(err)
			}
			wlp, dk, dy0 := decay(k, y0)
			check(t, "log density", lp, wlp, 1e-6)
			check(t, "d/dk", grad[0], dk, 1e-6)
			check(t, "d/dy0", grad[1], dy0, 1e-6)
		})
	}
}

func check(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g (relative tolerance %g)", what, got, want, rel)
	}
}

// TestODEStiff solves Robertson's chemical kinetics problem, the classic
// stiff test, with ode_bdf to t = 40 and 10^11, against the reference
// values of Hairer and Wanner's test set, and logs the time it takes; the
// explicit solver gives up within its step budget.
func TestODEStiff(t *testing.T) {
	const src = `functions {
  vector robertson(real t, vector y, real k1, real k2, real k3) {
    return [-k1 * y[1] + k3 * y[2] * y[3],
            k1 * y[1] - k3 * y[2] * y[3] - k2 * square(y[2]),
            k2 * square(y[2])]';
  }
}
parameters { real k1; }
model {
  array[2] vector[3] y = %SOLVER(robertson, [1, 0, 0]', 0, {40, 1e11}, %TOL, k1, 3e7, 1e4);
  print(y[1], y[2]);
  target += y[1][1];
}`
	run := func(solver, tol string) (string, error) {
		var out strings.Builder
		d := newDensity(t, "rob.shm", strings.NewReplacer("%SOLVER", solver, "%TOL", tol).Replace(src), nil, Options{Print: &out})
		grad := make([]float64, 1)
		_, err := d.LogDensityGrad([]float64{0.04}, grad)
		return out.String(), err
	}
	start := time.Now()
	out, err := run("ode_bdf_tol", "1e-7, 1e-20, 100000")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ode_bdf: %v for value and gradient: %s", time.Since(start), strings.TrimSpace(out))
	var nums []float64
	for _, f := range strings.FieldsFunc(out, func(r rune) bool { return strings.ContainsRune("[], \n", r) }) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%v in %q", err, out)
		}
		nums = append(nums, x)
	}
	if len(nums) != 6 {
		t.Fatalf("printed %q", out)
	}
	y40, y1e11 := nums[:3], nums[3:]
	// Hairer & Wanner, Solving ODEs II (test set), Robertson at t = 40
	// and 10^11.
	want40 := [3]float64{0.7158270687193772, 9.185534764557135e-06, 0.2841637457458631}
	want4e5 := [3]float64{0.2083340149701255e-07, 0.8333360770334713e-13, 0.9999999791665050}
	for i := range want40 {
		if math.Abs(y40[i]-want40[i]) > 1e-4*want40[i] || math.Abs(y1e11[i]-want4e5[i]) > 1e-4*want4e5[i] {
			t.Errorf("component %d: y(40) = %.10g, want %.10g; y(1e11) = %.10g, want %.10g", i+1, y40[i], want40[i], y1e11[i], want4e5[i])
		}
	}
	if _, err := run("ode_rk45_tol", "1e-6, 1e-10, 2000"); err == nil || !strings.Contains(err.Error(), "more than 2000 steps") {
		t.Errorf("the explicit solver on a stiff problem: error %v, want its step budget exceeded", err)
	}
}

// TestODEMemoryIsDomainError: a solve whose recorded steps would fill the
// evaluation's memory rejects the proposal (a domain error) instead of
// stopping the run.
func TestODEMemoryIsDomainError(t *testing.T) {
	const src = `functions {
  vector osc(real t, vector y, real omega) { return [y[2], -square(omega) * y[1]]'; }
}
parameters { real omega; }
model {
  array[1] vector[2] y = ode_rk45_tol(osc, [1, 0]', 0, {1000.0}, 1e-10, 1e-10, 10000000, omega);
  target += y[1][1];
}`
	d := newDensity(t, "mem.shm", src, nil, Options{MaxValues: 200000})
	_, err := d.LogDensityGrad([]float64{3}, make([]float64, 1))
	var e *Error
	if !errors.As(err, &e) || !e.Domain || !strings.Contains(err.Error(), "half of what one evaluation may hold") {
		t.Fatalf("error %v, want a domain error about the memory", err)
	}
}
