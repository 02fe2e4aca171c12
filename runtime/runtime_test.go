package runtime

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// testImpls implements the few built-ins these tests use, directly on
// the tape, so that the runtime is tested independently of stdlib's
// subpackages.
func testImpls() stdlib.Impls {
	m := stdlib.Impls{}
	m.Add("log", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return stdlib.ADValue(c.Tape.Log(toTapeValue(c.Tape, args[0]))), nil
	})
	m.Add("exp", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return stdlib.ADValue(c.Tape.Exp(toTapeValue(c.Tape, args[0]))), nil
	})
	m.Add("sum", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return stdlib.RealValue(c.Tape.Sum(toTapeValue(c.Tape, args[0]))), nil
	})
	return m
}

func toTapeValue(t *autodiff.Tape, v stdlib.Value) autodiff.Value {
	if v.Type.Base == 1 && v.Type.Dims == 0 { // int
		return t.Const(float64(v.Int))
	}
	return v.AD
}

func bindSource(t testing.TB, src string, set *data.Set) *Model {
	t.Helper()
	m, errs := ir.CheckSource("t.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if set == nil {
		set = &data.Set{}
	}
	bm, err := Bind(m, set, Options{Impls: testImpls(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// bindBuiltins checks src and binds it to set (nil for no data) with
// every built-in and seed 1 unless opts gives them, failing the test on
// any error.
func bindBuiltins(t testing.TB, file, src string, set *data.Set, opts Options) *Model {
	t.Helper()
	m, errs := ir.CheckSource(file, src)
	if len(errs) > 0 {
		t.Fatalf("%v\nin\n%s", errs, src)
	}
	if set == nil {
		set = &data.Set{}
	}
	if opts.Impls == nil {
		opts.Impls = Builtins()
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	bm, err := Bind(m, set, opts)
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// newDensity is a new density of bindBuiltins's model.
func newDensity(t testing.TB, file, src string, set *data.Set, opts Options) *Density {
	t.Helper()
	d, err := bindBuiltins(t, file, src, set, opts).NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func setFromJSON(t testing.TB, js string) *data.Set {
	t.Helper()
	vals, err := data.ReadJSON("data.json", strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	set := &data.Set{}
	if err := set.AddFile(vals); err != nil {
		t.Fatal(err)
	}
	return set
}

const normalModel = `
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model {
  for (i in 1:N) target += -0.5 * ((y[i] - mu) / sigma)^2;
  target += -N * log(sigma);
}`

func TestNormalLogDensityAndGradient(t *testing.T) {
	ys := []float64{1.2, -0.3, 2.5, 0.7}
	bm := bindSource(t, normalModel, setFromJSON(t, `{"y": [1.2, -0.3, 2.5, 0.7]}`))
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	if d.Dim() != 2 {
		t.Fatalf("dim %d", d.Dim())
	}
	theta := []float64{0.4, math.Log(1.7)}
	want := func(th []float64) float64 {
		mu, sigma := th[0], math.Exp(th[1])
		lp := 0.0
		for _, y := range ys {
			z := (y - mu) / sigma
			lp += -0.5 * z * z
		}
		return lp - float64(len(ys))*math.Log(sigma) + th[1] // Jacobian of sigma = exp(u)
	}
	grad := make([]float64, 2)
	lp, err := d.LogDensityGrad(theta, grad)
	if err != nil {
		t.Fatal(err)
	}
	if w := want(theta); math.Abs(lp-w) > 1e-12*math.Abs(w) {
		t.Errorf("log density %g, want %g", lp, w)
	}
	num := make([]float64, 2)
	autodiff.NumericGradient(want, theta, num)
	for i := range grad {
		if math.Abs(grad[i]-num[i]) > 1e-6*(1+math.Abs(num[i])) {
			t.Errorf("grad[%d] = %g, finite differences %g", i, grad[i], num[i])
		}
	}
	// A second evaluation on the same tape gives the same result.
	lp2, err := d.LogDensityGrad(theta, grad)
	if err != nil || lp2 != lp {
		t.Errorf("second evaluation %g (%v), first %g", lp2, err, lp)
	}
}

func TestNSizeInferredAndColumns(t *testing.T) {
	bm := bindSource(t, `
data { int N; vector[N] y; }
parameters { vector<lower=-1, upper=2>[N] v; matrix[2, 2] M; }
transformed parameters { real s = sum(v); }
model { target += -0.5 * sum(v .* v); }
generated quantities { array[2] real g = {s, 2 * s}; }`, setFromJSON(t, `{"y": [1, 2, 3]}`))
	cols := strings.Join(bm.Columns(), " ")
	want := "v.1 v.2 v.3 M.1.1 M.2.1 M.1.2 M.2.2 s g.1 g.2"
	if cols != want {
		t.Errorf("columns %q, want %q", cols, want)
	}
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	theta := []float64{0, 1, -1, 1, 2, 3, 4}
	row, err := d.Draw(nil, theta, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	inv := func(u float64) float64 { return -1 + 3/(1+math.Exp(-u)) }
	v := []float64{inv(0), inv(1), inv(-1)}
	s := v[0] + v[1] + v[2]
	wantRow := []float64{v[0], v[1], v[2], 1, 3, 2, 4, s, s, 2 * s}
	if len(row) != len(wantRow) {
		t.Fatalf("row %v", row)
	}
	for i := range row {
		if math.Abs(row[i]-wantRow[i]) > 1e-12 {
			t.Errorf("column %s = %g, want %g", bm.Columns()[i], row[i], wantRow[i])
		}
	}
}

func TestUnconstrainRoundTrip(t *testing.T) {
	bm := bindSource(t, `
parameters {
  real<lower=0> a;
  real<lower=a, upper=a + 2> b;
  matrix<lower=-1>[2, 2] M;
  array[2] vector<upper=5>[2] av;
}
model { }`, nil)
	init := setFromJSON(t, `{"a": 0.5, "b": 1.7, "M": [[0, 1], [2, 3]], "av": [[1, 2], [3, 4]]}`)
	theta, err := bm.Unconstrain(init, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.Draw(nil, theta, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// Columns in Stan order: M.1.1 M.2.1 M.1.2 M.2.2, av.1.1 av.2.1 av.1.2 av.2.2.
	want := []float64{0.5, 1.7, 0, 2, 1, 3, 1, 3, 2, 4}
	for i := range want {
		if math.Abs(row[i]-want[i]) > 1e-12 {
			t.Errorf("%s = %g, want %g", bm.Columns()[i], row[i], want[i])
		}
	}
	bad := setFromJSON(t, `{"a": 0.5, "b": 3}`)
	if _, err := bm.Unconstrain(bad, rand.New(rand.NewPCG(1, 1)), 2); err == nil || !strings.Contains(err.Error(), "initial value of b") {
		t.Errorf("b outside (a, a+2) accepted: %v", err)
	}
	// Missing values are drawn.
	theta, err = bm.Unconstrain(&data.Set{}, rand.New(rand.NewPCG(3, 4)), 2)
	if err != nil || len(theta) != bm.Dim() {
		t.Fatalf("random init: %v", err)
	}
	for _, u := range theta {
		if u < -2 || u > 2 {
			t.Errorf("random init %g outside (-2, 2)", u)
		}
	}
}

// TestLoopAssignmentGradient checks the log density and gradient of a model
// that fills containers element by element in a loop, with compound
// assignments to elements and reads of earlier elements (the cells of an
// unpacked container), against the same computation in Go and finite
// differences.
func TestLoopAssignmentGradient(t *testing.T) {
	const src = `
parameters { real a; real b; }
model {
  vector[6] s;
  array[3] real r;
  matrix[2, 2] M;
  s[1] = a;
  for (k in 2:6) {
    s[k] = b * s[k - 1];
    s[k] += a;
    s[k] *= 0.5;
  }
  r[1] = a;
  r[2] = r[1] * b;
  r[3] = r[2] + s[6];
  r[2] -= 1;
  M[1, 1] = a; M[1, 2] = b; M[2, 1] = s[3]; M[2, 2] = r[3];
  M[2, 2] /= 2;
  target += -0.5 * (s' * s) - 0.5 * sum(r) * sum(r) + sum(M) * a;
}`
	bm := bindSource(t, src, &data.Set{})
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	want := func(th []float64) float64 {
		a, b := th[0], th[1]
		var s [6]float64
		s[0] = a
		for k := 1; k < 6; k++ {
			s[k] = (b*s[k-1] + a) * 0.5
		}
		r := [3]float64{a, a * b, a*b + s[5]}
		r[1]--
		m := [4]float64{a, b, s[2], r[2] / 2}
		lp := 0.0
		for _, v := range s {
			lp -= 0.5 * v * v
		}
		sr := r[0] + r[1] + r[2]
		return lp - 0.5*sr*sr + (m[0]+m[1]+m[2]+m[3])*a
	}
	for _, theta := range [][]float64{{0.3, -0.7}, {1.1, 0.4}} {
		grad := make([]float64, 2)
		lp, err := d.LogDensityGrad(theta, grad)
		if err != nil {
			t.Fatal(err)
		}
		if w := want(theta); math.Abs(lp-w) > 1e-12*math.Max(1, math.Abs(w)) {
			t.Errorf("theta %v: log density %.17g, want %.17g", theta, lp, w)
		}
		num := make([]float64, 2)
		autodiff.NumericGradient(want, theta, num)
		for i := range grad {
			if math.Abs(grad[i]-num[i]) > 1e-6*(1+math.Abs(num[i])) {
				t.Errorf("theta %v: grad[%d] = %g, finite differences %g", theta, i, grad[i], num[i])
			}
		}
	}
}

// TestBoundsOrder checks that bounds that cross at some parameter values
// give a domain error (a rejection) naming the variable.
func TestBoundsOrder(t *testing.T) {
	bm := bindSource(t, `parameters { real<lower=0, upper=3> a; vector<lower=a, upper=2>[2] b; }
model { }`, nil)
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float64, 3)
	if _, err := d.LogDensityGrad([]float64{-1, 0, 0}, grad); err != nil {
		t.Fatalf("a below 2: %v", err)
	}
	_, err = d.LogDensityGrad([]float64{2, 0, 0}, grad) // a = 3·inv_logit(2) ≈ 2.64
	var re *Error
	if !errors.As(err, &re) || !re.Reject() || !strings.Contains(err.Error(), "the lower bound of b (2.64") {
		t.Errorf("crossed bounds: %v, want a domain error naming b", err)
	}
}

// TestLogJacobian checks that LogJacobian is the difference between the
// log densities with and without the log-Jacobian, for bounded, simplex
// and Cholesky-factor parameters, and that it evaluates no model term.
func TestLogJacobian(t *testing.T) {
	src := `
parameters {
  real mu;
  real<lower=0> sigma;
  real<lower=-1, upper=2> b;
  simplex[3] w;
  cholesky_factor_corr[3] L;
}
model {
  target += normal_lpdf(mu | 0, sigma) + log(w[1]) + b + L[3, 2];
}`
	d := newDensity(t, "lj.shm", src, &data.Set{}, Options{Impls: Builtins()})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		theta := make([]float64, d.Dim())
		for k := range theta {
			theta[k] = rng.NormFloat64()
		}
		d.Jacobian = true
		with, err := d.LogDensity(theta)
		if err != nil {
			t.Fatal(err)
		}
		d.Jacobian = false
		without, err := d.LogDensity(theta)
		if err != nil {
			t.Fatal(err)
		}
		lj, err := d.LogJacobian(theta)
		if err != nil {
			t.Fatal(err)
		}
		if lj == 0 || math.Abs(lj-(with-without)) > 1e-12*(1+math.Abs(lj)) {
			t.Errorf("theta %v: LogJacobian %.15g, want %.15g", theta, lj, with-without)
		}
	}
	if _, err := d.LogJacobian([]float64{1}); err == nil {
		t.Error("LogJacobian accepted a point of the wrong size")
	}
}

// TestWithContext checks that a model bound under a context that has
// ended evaluates its density under the context WithContext gives, and
// that the copy's context stops it.
func TestWithContext(t *testing.T) {
	const src = `parameters { real mu; }
model { real s = 0; for (i in 1:2000) s += 1; mu ~ normal(s, 1); }
`
	ctx, cancel := context.WithCancel(context.Background())
	bm := bindBuiltins(t, "t.shm", src, nil, Options{Context: ctx})
	cancel()
	eval := func(m *Model) error {
		d, err := m.NewDensity()
		if err != nil {
			return err
		}
		_, err = d.LogDensity([]float64{0})
		return err
	}
	if err := eval(bm); !errors.Is(err, context.Canceled) {
		t.Errorf("the model bound under an ended context: %v, want an interruption", err)
	}
	if err := eval(bm.WithContext(context.Background())); err != nil {
		t.Errorf("WithContext(Background): %v", err)
	}
	if err := eval(bm.WithContext(ctx)); !errors.Is(err, context.Canceled) {
		t.Errorf("WithContext(ended): %v, want an interruption", err)
	}
}
