package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"
)

// regression is a linear regression y ~ normal(alpha + X beta, sigma) with
// priors beta ~ normal(0, 1), alpha ~ normal(0, 1) and parameters
// theta = (beta[D], alpha, log sigma) on the unconstrained scale (the
// log-Jacobian log sigma is added). Constant terms are dropped.
type regression struct {
	N, D  int
	X     []float64 // N×D row-major
	y     []float64
	theta []float64
}

func newRegression(n, d int, seed uint64) *regression {
	rng := rand.New(rand.NewPCG(seed, 1))
	r := &regression{N: n, D: d, X: make([]float64, n*d), y: make([]float64, n), theta: make([]float64, d+2)}
	for i := range r.X {
		r.X[i] = rng.NormFloat64()
	}
	for j := 0; j < d; j++ {
		r.theta[j] = rng.NormFloat64()
	}
	r.theta[d] = 0.5
	r.theta[d+1] = math.Log(1.3)
	for i := 0; i < n; i++ {
		mu := r.theta[d]
		for j := 0; j < d; j++ {
			mu += r.X[i*d+j] * r.theta[j]
		}
		r.y[i] = mu + 1.3*rng.NormFloat64()
	}
	// Evaluate away from the generating values.
	for j := range r.theta {
		r.theta[j] += 0.1 * rng.NormFloat64()
	}
	return r
}

// analytic returns the log density and its gradient, derived by hand:
// with r_n = (y_n - mu_n)/sigma,
//
//	∂/∂beta_d = Σ r_n X_nd / sigma - beta_d
//	∂/∂alpha = Σ r_n / sigma - alpha
//	∂/∂log sigma = Σ r_n² - N + 1
func (r *regression) analytic(theta, grad []float64) float64 {
	D := r.D
	beta, alpha, s := theta[:D], theta[D], theta[D+1]
	sigma := math.Exp(s)
	clear(grad)
	lp := -0.5*alpha*alpha - float64(r.N)*s + s
	for j := 0; j < D; j++ {
		lp -= 0.5 * beta[j] * beta[j]
		grad[j] = -beta[j]
	}
	grad[D] = -alpha
	grad[D+1] = 1 - float64(r.N)
	for i := 0; i < r.N; i++ {
		row := r.X[i*D : i*D+D]
		mu := alpha
		for j, x := range row {
			mu += x * beta[j]
		}
		z := (r.y[i] - mu) / sigma
		lp -= 0.5 * z * z
		for j, x := range row {
			grad[j] += z * x / sigma
		}
		grad[D] += z / sigma
		grad[D+1] += z * z
	}
	return lp
}

// data binds X and y as constants kept across Reset.
func (r *regression) data(t *Tape) (X, y Value) {
	t.ResetAll()
	X = t.NewConst(MatrixShape(r.N, r.D), r.X)
	y = t.ConstVec(r.y)
	if err := t.Keep(); err != nil {
		panic(err)
	}
	return X, y
}

// priors adds the priors and the Jacobian term.
func priors(t *Tape, beta, alpha, s Value) Value {
	half := t.Const(-0.5)
	lp := t.Mul(half, t.Add(t.DotSelf(beta), t.Square(alpha)))
	return t.Add(lp, s)
}

// vectorized writes the model with whole-vector operations:
// target += -0.5 dot_self((y - (X beta + alpha)) / sigma) - N log sigma.
func (r *regression) vectorized(t *Tape, X, y, theta Value) Value {
	beta, alpha, s := t.Slice(theta, 0, r.D), t.Index(theta, r.D), t.Index(theta, r.D+1)
	sigma := t.Exp(s)
	mu := t.Add(t.MatMul(X, beta), alpha)
	z := t.Div(t.Sub(y, mu), sigma)
	lik := t.Sub(t.Mul(t.Const(-0.5), t.DotSelf(z)), t.Mul(t.Const(float64(r.N)), s))
	return t.Add(lik, priors(t, beta, alpha, s))
}

// withPartials writes the likelihood as one precomputed-partials node (as
// stdlib's normal_lpdf), dropping the constant -N/2 log 2π to match.
func (r *regression) withPartials(t *Tape, X, y, theta Value) Value {
	beta, alpha, s := t.Slice(theta, 0, r.D), t.Index(theta, r.D), t.Index(theta, r.D+1)
	sigma := t.Exp(s)
	mu := t.Add(t.MatMul(X, beta), alpha)
	lik := t.Sub(normalLpdf(t, y, mu, sigma), t.Const(-0.5*math.Log(2*math.Pi)*float64(r.N)))
	return t.Add(lik, priors(t, beta, alpha, s))
}

// scalarLoop writes the model as a loop over observations and predictors,
// one scalar node per arithmetic operation.
func (r *regression) scalarLoop(t *Tape, X, y, theta Value) Value {
	alpha, s := t.Index(theta, r.D), t.Index(theta, r.D+1)
	sigma := t.Exp(s)
	half := t.Const(0.5)
	lp := t.Const(0)
	for i := 0; i < r.N; i++ {
		mu := alpha
		for j := 0; j < r.D; j++ {
			mu = t.Add(mu, t.Mul(t.At(X, i, j), t.Index(theta, j)))
		}
		z := t.Div(t.Sub(t.Index(y, i), mu), sigma)
		lp = t.Sub(lp, t.Add(t.Mul(half, t.Square(z)), s))
	}
	return t.Add(lp, priors(t, t.Slice(theta, 0, r.D), alpha, s))
}

// logDensityGrad evaluates one model form on a tape whose data are kept:
// the work a runtime does per gradient.
func logDensityGrad(t *Tape, model func(t *Tape, X, y, theta Value) Value, X, y Value, theta, grad []float64) (float64, error) {
	t.Reset()
	lp := model(t, X, y, t.VarVec(theta))
	if err := t.Gradient(lp); err != nil {
		return 0, err
	}
	return t.Scalar(lp), t.VarGrad(grad)
}

func TestRegression(t *testing.T) {
	r := newRegression(1000, 10, 7)
	want := make([]float64, len(r.theta))
	wantLP := r.analytic(r.theta, want)
	forms := []struct {
		name  string
		model func(t *Tape, X, y, theta Value) Value
	}{
		{"vectorized", r.vectorized},
		{"partials", r.withPartials},
		{"scalar loop", r.scalarLoop},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tp := NewTape()
			X, y := r.data(tp)
			grad := make([]float64, len(r.theta))
			for rep := range 2 { // the second evaluation reuses the arena
				lp, err := logDensityGrad(tp, f.model, X, y, r.theta, grad)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(lp-wantLP) > 1e-10*math.Abs(wantLP) {
					t.Errorf("evaluation %d: log density %.16g, want %.16g", rep, lp, wantLP)
				}
				for i := range want {
					if math.Abs(grad[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
						t.Errorf("evaluation %d: gradient[%d] = %.16g, want %.16g", rep, i, grad[i], want[i])
					}
				}
			}
		})
	}
}

// TestNoAllocs checks that a realistic evaluation — kept data, scalar and
// vector ops, views, a gather, a concat, a partials node, a custom node,
// scratch memory, a gradient sweep and VarGrad — allocates nothing once the
// tape is warm.
func TestNoAllocs(t *testing.T) {
	r := newRegression(200, 5, 3)
	tp := NewTape()
	X, y := r.data(tp)
	node := &expScale{}
	groups := []int{0, 2, 1, 2, 0, 1}
	grad := make([]float64, len(r.theta))
	eval := func() {
		tp.Reset()
		theta := tp.VarVec(r.theta)
		lp := r.withPartials(tp, X, y, theta)
		lp = tp.Add(lp, r.scalarLoop(tp, X, y, theta))
		lp = tp.Add(lp, r.vectorized(tp, X, y, theta))
		beta := tp.Slice(theta, 0, 3)
		scaled := node.forward(tp, beta, tp.Index(theta, 4))
		g := tp.Gather(scaled, groups)
		c := tp.Concat(VectorShape(8), g, tp.Index(theta, 0), tp.Const(2))
		lp = tp.Add(lp, tp.LogSumExp(tp.Unary(InvLogit, c)))
		lp = tp.Add(lp, tp.Sum(tp.Binary(Pow, tp.Exp(beta), tp.Const(1.5))))
		tmp := tp.Scratch(300)
		tmp[0] = tp.Scalar(lp)
		if err := tp.Gradient(lp); err != nil {
			t.Fatal(err)
		}
		if err := tp.VarGrad(grad); err != nil {
			t.Fatal(err)
		}
	}
	eval() // warm up: the arenas grow to their working size
	if n := testing.AllocsPerRun(20, eval); n != 0 {
		t.Errorf("steady-state evaluation allocates %v times, want 0", n)
	}
}

func benchmarkRegression(b *testing.B, form string) {
	r := newRegression(1000, 10, 7)
	models := map[string]func(t *Tape, X, y, theta Value) Value{
		"vectorized": r.vectorized, "partials": r.withPartials, "scalar": r.scalarLoop,
	}
	model := models[form]
	tp := NewTape()
	X, y := r.data(tp)
	grad := make([]float64, len(r.theta))
	if _, err := logDensityGrad(tp, model, X, y, r.theta, grad); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := logDensityGrad(tp, model, X, y, r.theta, grad); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tp.NumNodes()), "nodes")
}

// BenchmarkRegressionVectorized is the gradient of the N=1000, D=10
// regression written with vector operations.
func BenchmarkRegressionVectorized(b *testing.B) { benchmarkRegression(b, "vectorized") }

// BenchmarkRegressionPartials uses one precomputed-partials node for the
// likelihood, as stdlib's normal_lpdf will.
func BenchmarkRegressionPartials(b *testing.B) { benchmarkRegression(b, "partials") }

// BenchmarkRegressionScalarLoop is the same model as a scalar loop.
func BenchmarkRegressionScalarLoop(b *testing.B) { benchmarkRegression(b, "scalar") }

// BenchmarkRegressionHandWritten is the hand-derived gradient in plain Go,
// the floor the tape is measured against.
func BenchmarkRegressionHandWritten(b *testing.B) {
	r := newRegression(1000, 10, 7)
	grad := make([]float64, len(r.theta))
	b.ReportAllocs()
	for b.Loop() {
		r.analytic(r.theta, grad)
	}
}
