package runtime

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/stdlib"
)

// TestCRNDeterministicAndReparameterized checks that crn averages the body
// over K replicates whose draws are the same at every evaluation, that a
// normal draw with parameter arguments is mu + sigma·z with gradients, and
// that the value matches the average computed by hand from the same
// streams.
func TestCRNDeterministicAndReparameterized(t *testing.T) {
	bm := bindBuiltins(t, "t.shm", `
parameters { real mu; real<lower=0> sigma; }
model {
  target += -crn(5, (normal_rng(mu, sigma) - 1)^2, seed = 77);
}`, nil, Options{})
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	want := func(th []float64) float64 {
		mu, sigma := th[0], math.Exp(th[1])
		s := 0.0
		for k := 0; k < 5; k++ {
			z := crnStream(77, k).NormFloat64()
			s += math.Pow(mu+sigma*z-1, 2)
		}
		return -s/5 + th[1]
	}
	theta := []float64{0.3, -0.2}
	grad := make([]float64, 2)
	lp, err := d.LogDensityGrad(theta, grad)
	if err != nil {
		t.Fatal(err)
	}
	if w := want(theta); math.Abs(lp-w) > 1e-12 {
		t.Errorf("crn value %g, want %g", lp, w)
	}
	num := make([]float64, 2)
	autodiff.NumericGradient(want, theta, num)
	for i := range grad {
		if math.Abs(grad[i]-num[i]) > 1e-6 {
			t.Errorf("grad[%d] = %g, finite differences %g", i, grad[i], num[i])
		}
	}
	again, err := d.LogDensityGrad(theta, grad)
	if err != nil || again != lp {
		t.Errorf("second evaluation %g, first %g: the streams are not rewound", again, lp)
	}
	d2, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	if other, _ := d2.LogDensity(theta); other != lp {
		t.Errorf("another chain's density gives %g, want %g", other, lp)
	}
}

// TestCRNVectorNoise checks std_normal_rng(n) and uniform_rng(n) inside
// crn: replicate k's noise is the next draws of stream k, in call order.
func TestCRNVectorNoise(t *testing.T) {
	bm := bindBuiltins(t, "t.shm", `
parameters { real mu; }
model {
  target += crn(3, sum(mu + std_normal_rng(4)) + sum(uniform_rng(2)), seed = 5);
}`, nil, Options{})
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.LogDensity([]float64{0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for k := 0; k < 3; k++ {
		rng := crnStream(5, k)
		want += 4 * 0.5
		for i := 0; i < 4; i++ {
			want += rng.NormFloat64()
		}
		u := openUniform(rng)
		want += u() + u()
	}
	want /= 3
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("got %g, want %g", got, want)
	}
}

func TestCRNStats(t *testing.T) {
	bm := bindBuiltins(t, "t.shm", `
parameters { real mu; }
model {
  target += -crn(4, (normal_rng(mu, 1) - 1)^2, seed = 9);
}`, nil, Options{})
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	stats, err := d.CRNStats([]float64{0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || stats[0].K != 4 {
		t.Fatalf("stats %+v", stats)
	}
	var vals []float64
	for k := 0; k < 4; k++ {
		z := crnStream(9, k).NormFloat64()
		vals = append(vals, math.Pow(0.5+z-1, 2))
	}
	mean := (vals[0] + vals[1] + vals[2] + vals[3]) / 4
	ss := 0.0
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	if math.Abs(stats[0].Mean-mean) > 1e-12 || math.Abs(stats[0].VarMean-ss/12) > 1e-12 {
		t.Errorf("got mean %g var %g, want %g %g", stats[0].Mean, stats[0].VarMean, mean, ss/12)
	}
	// The point given by its columns unconstrains to itself.
	theta, err := bm.UnconstrainColumns(map[string]float64{"mu": 0.5})
	if err != nil || theta[0] != 0.5 {
		t.Errorf("UnconstrainColumns: %v %v", theta, err)
	}
}

// TestReparamFamiliesInsideCRN walks the family table: every family marked
// reparameterizable must draw inside crn(...), with a log density whose
// gradient with respect to the draw's parameters agrees with finite
// differences (the draws are common random numbers, so the density is a
// smooth function of the parameters).
func TestReparamFamiliesInsideCRN(t *testing.T) {
	// One call per family, with valid arguments for a in (0.5, 2).
	calls := map[string]string{
		"normal":                "normal_rng(a - 1, a)",
		"std_normal":            "a * std_normal_rng()",
		"student_t":             "student_t_rng(5, a - 1, a)",
		"cauchy":                "cauchy_rng(a - 1, a)",
		"double_exponential":    "double_exponential_rng(a - 1, a)",
		"logistic":              "logistic_rng(a - 1, a)",
		"lognormal":             "lognormal_rng(a - 1, a)",
		"exponential":           "exponential_rng(a)",
		"weibull":               "weibull_rng(a, a)",
		"uniform":               "uniform_rng(a - 1, a + 1)",
		"half_normal":           "half_normal_rng(a)",
		"multi_normal":          "sum(multi_normal_rng([a, 0]', [[a, 0.1], [0.1, 1]]))",
		"multi_normal_cholesky": "sum(multi_normal_cholesky_rng([a, 0]', [[a, 0], [0.3, 1]]))",
	}
	table := stdlib.Builtins()
	for _, name := range table.FamilyNames() {
		if !table.Family(name).Reparam {
			continue
		}
		call, ok := calls[name]
		if !ok {
			t.Errorf("family %s is marked reparameterizable; give the test a call of %s_rng", name, name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			src := "parameters { real<lower=0.5, upper=2> a; }\nmodel { target += -crn(4, square(" + call + ")); }\n"
			d := newDensity(t, "t.shm", src, nil, Options{})
			f := func(th []float64) float64 {
				lp, err := d.LogDensity(th)
				if err != nil {
					t.Fatal(err)
				}
				return lp
			}
			for _, u := range []float64{-0.4, 0.3} {
				theta := []float64{u}
				grad := make([]float64, 1)
				lp, err := d.LogDensityGrad(theta, grad)
				if err != nil {
					t.Fatal(err)
				}
				if math.IsNaN(lp) || math.IsInf(lp, 0) {
					t.Fatalf("log density %g at %g", lp, u)
				}
				num := make([]float64, 1)
				autodiff.NumericGradient(f, theta, num)
				if math.Abs(grad[0]-num[0]) > 1e-6*(1+math.Abs(num[0])) {
					t.Errorf("at %g: gradient %g, finite differences %g", u, grad[0], num[0])
				}
			}
		})
	}
}

// TestCRNDrawChecksArguments checks that a reparameterized draw inside crn
// checks its arguments as any draw does: a negative scale is a domain
// error, which rejects the proposal, naming the function and argument.
func TestCRNDrawChecksArguments(t *testing.T) {
	bm := bindBuiltins(t, "t.shm", `
parameters { real mu; real s; }
model {
  target += -crn(3, square(normal_rng(mu, s)), seed = 4);
}`, nil, Options{})
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.LogDensity([]float64{0.2, 0.5}); err != nil {
		t.Fatalf("a positive scale: %v", err)
	}
	_, err = d.LogDensity([]float64{0.2, -0.5})
	var rejects interface{ Reject() bool }
	if !errors.As(err, &rejects) || !rejects.Reject() || !strings.Contains(err.Error(), "normal_rng") || !strings.Contains(err.Error(), "positive") {
		t.Errorf("a negative scale: %v, want a rejection naming normal_rng and its scale", err)
	}
}
