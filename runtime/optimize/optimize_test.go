package optimize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// funcTarget adapts a function to Target.
type funcTarget struct {
	n  int
	fn func(x, grad []float64) (float64, error)
}

func (f funcTarget) Dim() int                                          { return f.n }
func (f funcTarget) LogDensityGrad(x, grad []float64) (float64, error) { return f.fn(x, grad) }

// quadratic is log p(x) = -(x-m)'A(x-m)/2 with A = Q diag(eig) Q' for a
// random rotation Q: its mode is m and the gap f(x) - f(m) is -log p(x).
type quadratic struct {
	a [][]float64
	m []float64
}

func newQuadratic(n int, eigMin, eigMax float64, seed uint64) *quadratic {
	rng := rand.New(rand.NewPCG(seed, 1))
	// Q from Gram–Schmidt of a random matrix.
	q := make([][]float64, n)
	for i := range q {
		q[i] = make([]float64, n)
		for j := range q[i] {
			q[i][j] = rng.NormFloat64()
		}
		for k := range i {
			d := dot(q[i], q[k])
			axpy(q[i], q[i], -d, q[k])
		}
		nrm := norm(q[i])
		for j := range q[i] {
			q[i][j] /= nrm
		}
	}
	eig := make([]float64, n)
	for i := range eig {
		t := 0.0
		if n > 1 {
			t = float64(i) / float64(n-1)
		}
		eig[i] = eigMin * math.Pow(eigMax/eigMin, t)
	}
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n)
		for j := range a[i] {
			for k := range n {
				a[i][j] += q[k][i] * eig[k] * q[k][j]
			}
		}
	}
	m := make([]float64, n)
	for i := range m {
		m[i] = rng.NormFloat64() * 3
	}
	return &quadratic{a: a, m: m}
}

func (q *quadratic) target() Target {
	n := len(q.m)
	d := make([]float64, n)
	return funcTarget{n, func(x, grad []float64) (float64, error) {
		for i := range d {
			d[i] = x[i] - q.m[i]
		}
		lp := 0.0
		for i := range n {
			grad[i] = -dot(q.a[i], d)
			lp += 0.5 * d[i] * grad[i]
		}
		return lp, nil
	}}
}

// rosenbrock is minus the generalized Rosenbrock function, with mode 1,...,1.
func rosenbrock(n int) Target {
	return funcTarget{n, func(x, g []float64) (float64, error) {
		clear(g)
		f := 0.0
		for i := 0; i+1 < n; i++ {
			a := x[i+1] - x[i]*x[i]
			b := 1 - x[i]
			f += 100*a*a + b*b
			g[i] += 400*a*x[i] + 2*b
			g[i+1] -= 200 * a
		}
		return -f, nil
	}}
}

// logistic is a logistic regression log likelihood with a normal(0, 10)
// prior on the coefficients, on simulated data.
type logistic struct {
	x [][]float64 // rows of covariates, the first 1
	y []float64
}

func newLogistic(rows, cols int, seed uint64) *logistic {
	rng := rand.New(rand.NewPCG(seed, 2))
	beta := make([]float64, cols)
	for j := range beta {
		beta[j] = rng.NormFloat64()
	}
	l := &logistic{}
	for range rows {
		r := make([]float64, cols)
		r[0] = 1
		for j := 1; j < cols; j++ {
			r[j] = rng.NormFloat64()
		}
		y := 0.0
		if rng.Float64() < 1/(1+math.Exp(-dot(r, beta))) {
			y = 1
		}
		l.x, l.y = append(l.x, r), append(l.y, y)
	}
	return l
}

const logisticPriorVar = 100

func (l *logistic) target() Target {
	cols := len(l.x[0])
	return funcTarget{cols, func(b, g []float64) (float64, error) {
		lp := 0.0
		for j := range g {
			g[j] = -b[j] / logisticPriorVar
			lp -= 0.5 * b[j] * b[j] / logisticPriorVar
		}
		for i, r := range l.x {
			eta := dot(r, b)
			// log σ(η) = -log1p(e^-η); log(1-σ(η)) = -log1p(e^η).
			if l.y[i] == 1 {
				lp -= softplus(-eta)
			} else {
				lp -= softplus(eta)
			}
			resid := l.y[i] - 1/(1+math.Exp(-eta))
			axpy(g, g, resid, r)
		}
		return lp, nil
	}}
}

func softplus(v float64) float64 {
	if v > 0 {
		return v + math.Log1p(math.Exp(-v))
	}
	return math.Log1p(math.Exp(v))
}

// irls is the mode of the logistic posterior by Newton's method with the
// analytic Hessian, iterated to machine precision: an independent reference.
func (l *logistic) irls() []float64 {
	cols := len(l.x[0])
	b := make([]float64, cols)
	for range 100 {
		g := make([]float64, cols)
		h := make([][]float64, cols)
		for j := range h {
			h[j] = make([]float64, cols)
			h[j][j] = 1 / logisticPriorVar
			g[j] = -b[j] / logisticPriorVar
		}
		for i, r := range l.x {
			p := 1 / (1 + math.Exp(-dot(r, b)))
			axpy(g, g, l.y[i]-p, r)
			for j := range cols {
				for k := range cols {
					h[j][k] += p * (1 - p) * r[j] * r[k]
				}
			}
		}
		step := solve(h, g)
		axpy(b, b, 1, step)
		if norm(step) < 1e-14 {
			break
		}
	}
	return b
}

// solve solves a x = b by Gaussian elimination with partial pivoting.
func solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(append([]float64(nil), a[i]...), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := m[r][n]
		for k := r + 1; k < n; k++ {
			s -= m[r][k] * x[k]
		}
		x[r] = s / m[r][r]
	}
	return x
}

func withAlgorithm(a Algorithm) Options {
	o := DefaultOptions()
	o.Algorithm = a
	return o
}

var allAlgorithms = []Algorithm{LBFGS, BFGS, Newton}

func TestQuadratic(t *testing.T) {
	for _, tc := range []struct {
		n              int
		eigMin, eigMax float64
	}{
		{1, 2, 2}, {2, 0.5, 2}, {5, 1, 10}, {10, 1, 3}, {20, 0.1, 10},
		{50, 1, 100}, {10, 1e-2, 1e2}, {50, 1e-2, 1e2},
	} {
		for _, alg := range allAlgorithms {
			name := fmt.Sprintf("n=%d/cond=%g/%v", tc.n, tc.eigMax/tc.eigMin, alg)
			t.Run(name, func(t *testing.T) {
				q := newQuadratic(tc.n, tc.eigMin, tc.eigMax, uint64(tc.n))
				// Only the gradient-norm test is on, so that the bound
				// below is rigorous: for this target x - m = A⁻¹ ∇log p(x),
				// hence ||x - m|| <= ||∇log p(x)|| / λmin.
				o := withAlgorithm(alg)
				o.TolObj, o.TolRelObj, o.TolRelGrad, o.TolParam = 0, 0, 0, 0
				x0 := make([]float64, tc.n)
				res, err := Maximize(context.Background(), q.target(), x0, o)
				if err != nil {
					t.Fatal(err)
				}
				want := ConvergedGrad
				gradTol := o.TolGrad
				if alg == Newton {
					// Newton stops on |Δ log p| < 1e-8; on a quadratic its
					// first step is exact up to rounding.
					want, gradTol = ConvergedObj, 1e-6
				}
				if res.Termination != want {
					t.Fatalf("termination %q after %d iterations", res.Message, res.Iterations)
				}
				gn := norm(res.Grad)
				if gn >= gradTol {
					t.Errorf("gradient norm %g, want < %g", gn, gradTol)
				}
				d := make([]float64, tc.n)
				for i, v := range res.X {
					d[i] = v - q.m[i]
				}
				if dist := norm(d); dist > gn/tc.eigMin*(1+1e-6)+1e-15 {
					t.Errorf("||x - m|| = %g > ||grad||/λmin = %g", dist, gn/tc.eigMin)
				}
				if res.Evals < res.Iterations {
					t.Errorf("%d evaluations for %d iterations", res.Evals, res.Iterations)
				}
			})
		}
	}
}

func TestRosenbrock(t *testing.T) {
	for _, n := range []int{2, 10} {
		for _, alg := range allAlgorithms {
			t.Run(fmt.Sprintf("n=%d/%v", n, alg), func(t *testing.T) {
				x0 := make([]float64, n)
				for i := range x0 {
					x0[i] = -1.2
					if i%2 == 1 {
						x0[i] = 1
					}
				}
				if n > 2 {
					clear(x0) // from -1.2, 1, ... the 10-d function has a local mode near x_1 = -1
				}
				res, err := Maximize(context.Background(), rosenbrock(n), x0, withAlgorithm(alg))
				if err != nil {
					t.Fatal(err)
				}
				if !res.Termination.Converged() {
					t.Fatalf("termination %q after %d iterations", res.Message, res.Iterations)
				}
				// Stan's relative-gradient test stops at g'Hg < 1e7·ε ≈ 2e-9
				// (|f| < 1), so f, about g'Hg/2 for an exact H, ends near
				// 1e-9; allow for L-BFGS's approximate H.
				if -res.LogDensity > 1e-8 {
					t.Errorf("f = %g at the end, want < 1e-8", -res.LogDensity)
				}
				for i, v := range res.X {
					if math.Abs(v-1) > 1e-3 {
						t.Errorf("x[%d] = %v, want 1 ± 1e-3", i, v)
					}
				}
			})
		}
	}
}

func TestLogistic(t *testing.T) {
	l := newLogistic(200, 5, 7)
	want := l.irls()
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			res, err := Maximize(context.Background(), l.target(), make([]float64, 5), withAlgorithm(alg))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Termination.Converged() {
				t.Fatalf("termination %q", res.Message)
			}
			// Gradient ≈ 0: reduced 1e4-fold from the start, and the log
			// density within 1e-6 of the IRLS maximum (Stan's relative
			// gradient test stops at g'Hg < 1e7·ε·|log p| ≈ 2e-7 here).
			g0 := make([]float64, 5)
			l.target().LogDensityGrad(make([]float64, 5), g0)
			if gn := norm(res.Grad); gn > 1e-4*norm(g0) {
				t.Errorf("gradient norm %g at the optimum, %g at the start", gn, norm(g0))
			}
			lpMax, _ := l.target().LogDensityGrad(want, g0)
			if gap := lpMax - res.LogDensity; gap < -1e-12 || gap > 1e-6 {
				t.Errorf("log density %v, IRLS maximum %v", res.LogDensity, lpMax)
			}
			for i, v := range res.X {
				if math.Abs(v-want[i]) > 1e-4*math.Max(1, math.Abs(want[i])) {
					t.Errorf("beta[%d] = %v, IRLS gives %v", i, v, want[i])
				}
			}
			// The result's gradient is the target's gradient there.
			g := make([]float64, 5)
			lp, _ := l.target().LogDensityGrad(res.X, g)
			if lp != res.LogDensity || !equal(g, res.Grad) {
				t.Errorf("result (lp %v, grad %v) differs from the target's (%v, %v)", res.LogDensity, res.Grad, lp, g)
			}
		})
	}
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestTerminationReasons(t *testing.T) {
	zero := func() Options {
		o := DefaultOptions()
		o.TolObj, o.TolRelObj, o.TolGrad, o.TolRelGrad, o.TolParam = 0, 0, 0, 0, 0
		return o
	}
	q := newQuadratic(10, 0.1, 10, 3)
	for _, tc := range []struct {
		name  string
		set   func(*Options)
		want  Termination
		check func(t *testing.T, r *Result)
	}{
		{"tol_obj", func(o *Options) { o.TolObj = 1e-3 }, ConvergedObj, nil},
		{"tol_rel_obj", func(o *Options) { o.TolRelObj = 1e12 }, ConvergedRelObj, nil},
		{"tol_grad", func(o *Options) { o.TolGrad = 1e-2 }, ConvergedGrad, func(t *testing.T, r *Result) {
			if gn := norm(r.Grad); gn >= 1e-2 {
				t.Errorf("gradient norm %g, want < 1e-2", gn)
			}
		}},
		{"tol_rel_grad", func(o *Options) { o.TolRelGrad = 1e10 }, ConvergedRelGrad, nil},
		{"tol_param", func(o *Options) { o.TolParam = 1e-2 }, ConvergedParam, nil},
		{"iter", func(o *Options) { o.Iter = 3 }, MaxIterations, func(t *testing.T, r *Result) {
			if r.Iterations != 3 {
				t.Errorf("%d iterations, want 3", r.Iterations)
			}
		}},
	} {
		for _, alg := range []Algorithm{LBFGS, BFGS} {
			t.Run(tc.name+"/"+alg.String(), func(t *testing.T) {
				o := zero()
				o.Algorithm = alg
				tc.set(&o)
				res, err := Maximize(context.Background(), q.target(), make([]float64, 10), o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Termination != tc.want || res.Message != tc.want.String() {
					t.Fatalf("termination %v %q, want %v", res.Termination, res.Message, tc.want)
				}
				if tc.check != nil {
					tc.check(t, res)
				}
			})
		}
	}
	if got := ConvergedRelGrad.String(); got != "Convergence detected: relative gradient magnitude is below tolerance" {
		t.Errorf("message %q", got)
	}
	if got := MaxIterations.String(); got != "Maximum number of iterations hit, may not be at an optima" {
		t.Errorf("message %q", got)
	}
}

func TestNewtonMaxIterations(t *testing.T) {
	o := withAlgorithm(Newton)
	o.Iter = 2
	res, err := Maximize(context.Background(), rosenbrock(2), []float64{-1.2, 1}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination != MaxIterations || res.Iterations != 2 {
		t.Errorf("termination %v after %d iterations, want max iterations after 2", res.Termination, res.Iterations)
	}
	// Each iteration: 2n gradients for the Hessian and at least one trial.
	if res.Evals < 1+2*(2*2+1) {
		t.Errorf("%d evaluations, want at least %d", res.Evals, 1+2*(2*2+1))
	}
}

// TestNonFiniteRegion: log p is -Inf (or the target errs) for x_0 > 1.5,
// with the mode at x = 1 inside; the line search's tenfold expansions land
// in the bad region and must back off.
func TestNonFiniteRegion(t *testing.T) {
	for _, mode := range []string{"-Inf", "NaN", "error"} {
		tg := funcTarget{2, func(x, g []float64) (float64, error) {
			if x[0] > 1.5 {
				switch mode {
				case "-Inf":
					return math.Inf(-1), nil
				case "NaN":
					return math.NaN(), nil
				default:
					return 0, errors.New("reject: x out of support")
				}
			}
			g[0], g[1] = -(x[0] - 1), -4*(x[1]+2)
			return -0.5*(x[0]-1)*(x[0]-1) - 2*(x[1]+2)*(x[1]+2), nil
		}}
		for _, alg := range allAlgorithms {
			t.Run(mode+"/"+alg.String(), func(t *testing.T) {
				o := withAlgorithm(alg)
				o.InitAlpha = 1 // first trial x_0 = -20 + 21 > 1.5
				res, err := Maximize(context.Background(), tg, []float64{-20, 3}, o)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(res.X[0]-1) > 1e-4 || math.Abs(res.X[1]+2) > 1e-4 {
					t.Errorf("x = %v, want (1, -2); %s", res.X, res.Message)
				}
			})
		}
	}
}

func TestInitialPointNotFinite(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(x, g []float64) (float64, error)
		want string
	}{
		{"-Inf", func(x, g []float64) (float64, error) { return math.Inf(-1), nil }, "log density is -Inf"},
		{"NaN grad", func(x, g []float64) (float64, error) { g[0] = math.NaN(); return 0, nil }, "gradient 0 is NaN"},
		{"error", func(x, g []float64) (float64, error) { return 0, errors.New("scale is negative") }, "scale is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Maximize(context.Background(), funcTarget{1, tc.fn}, []float64{0}, DefaultOptions())
			if err == nil || !strings.Contains(err.Error(), "initial point") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one about the initial point and %q", err, tc.want)
			}
		})
	}
}

// TestUnbounded: log densities without a maximum end with the line-search
// error (or, for Newton, without an error at a point that keeps improving)
// after a bounded number of evaluations and never with NaN.
func TestUnbounded(t *testing.T) {
	targets := map[string]Target{
		"linear": funcTarget{2, func(x, g []float64) (float64, error) {
			g[0], g[1] = 1, 2
			return x[0] + 2*x[1], nil
		}},
		"convex": funcTarget{2, func(x, g []float64) (float64, error) {
			g[0], g[1] = x[0], x[1]
			return 0.5 * (x[0]*x[0] + x[1]*x[1]), nil
		}},
		"exp": funcTarget{1, func(x, g []float64) (float64, error) {
			g[0] = math.Exp(x[0])
			return g[0], nil
		}},
	}
	for name, tg := range targets {
		for _, alg := range []Algorithm{LBFGS, BFGS} {
			t.Run(name+"/"+alg.String(), func(t *testing.T) {
				x0 := make([]float64, tg.Dim())
				x0[0] = 1
				res, err := Maximize(context.Background(), tg, x0, withAlgorithm(alg))
				if !errors.Is(err, ErrLineSearch) {
					t.Fatalf("error %v, want ErrLineSearch (result %+v)", err, res)
				}
				if res.Termination != LineSearchFailed {
					t.Errorf("termination %v", res.Termination)
				}
				for _, v := range append(append([]float64{res.LogDensity}, res.X...), res.Grad...) {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("non-finite value in result %+v", res)
					}
				}
				// 20 tenfold expansions per line search, each tried twice
				// (after a reset), plus rejected points: bounded work.
				if res.Evals > 1000 {
					t.Errorf("%d evaluations", res.Evals)
				}
			})
		}
	}
}

// cancelTarget cancels its context at its n-th evaluation.
type cancelTarget struct {
	Target
	cancel func()
	at     int
	calls  int
}

func (c *cancelTarget) LogDensityGrad(x, g []float64) (float64, error) {
	c.calls++
	if c.calls == c.at {
		c.cancel()
	}
	return c.Target.LogDensityGrad(x, g)
}

func TestCancel(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ct := &cancelTarget{Target: rosenbrock(10), cancel: cancel, at: 30}
			res, err := Maximize(ctx, ct, make([]float64, 10), withAlgorithm(alg))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if ct.calls != 30 {
				t.Errorf("%d evaluations, want 30: none after the cancellation", ct.calls)
			}
			if res == nil || len(res.X) != 10 {
				t.Errorf("no partial result: %+v", res)
			}
		})
	}
	// A target that reports the cancellation itself stops the run too.
	ctxErr := funcTarget{1, func(x, g []float64) (float64, error) {
		if x[0] != 0 {
			return 0, fmt.Errorf("interrupted: %w", context.Canceled)
		}
		g[0] = 1
		return 0, nil
	}}
	if _, err := Maximize(context.Background(), ctxErr, []float64{0}, DefaultOptions()); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestProgress(t *testing.T) {
	var iters []int
	var lps []float64
	o := DefaultOptions()
	o.Progress = func(p Progress) error {
		iters = append(iters, p.Iter)
		lps = append(lps, p.LogDensity)
		if p.Iter > 0 && (p.Alpha <= 0 || p.Alpha0 <= 0 || p.StepNorm <= 0) {
			t.Errorf("iteration %d: alpha %v alpha0 %v ||dx|| %v", p.Iter, p.Alpha, p.Alpha0, p.StepNorm)
		}
		if len(p.X) != 2 || len(p.Grad) != 2 {
			t.Errorf("iteration %d: X %v Grad %v", p.Iter, p.X, p.Grad)
		}
		return nil
	}
	res, err := Maximize(context.Background(), rosenbrock(2), []float64{-1.2, 1}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(iters) != res.Iterations+1 {
		t.Fatalf("%d calls for %d iterations", len(iters), res.Iterations)
	}
	for i, it := range iters {
		if it != i {
			t.Fatalf("call %d reports iteration %d", i, it)
		}
		if i > 0 && lps[i] < lps[i-1] {
			t.Errorf("log density decreased at iteration %d: %v < %v", i, lps[i], lps[i-1])
		}
	}
	stopErr := errors.New("stop here")
	o.Progress = func(p Progress) error {
		if p.Iter == 4 {
			return stopErr
		}
		return nil
	}
	res, err = Maximize(context.Background(), rosenbrock(2), []float64{-1.2, 1}, o)
	if !errors.Is(err, stopErr) || res.Iterations != 4 {
		t.Errorf("error %v after %d iterations, want the callback's after 4", err, res.Iterations)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.InitAlpha = 0 }, "init_alpha = 0"},
		{func(o *Options) { o.InitAlpha = math.Inf(1) }, "init_alpha = +Inf"},
		{func(o *Options) { o.TolObj = -1 }, "tol_obj = -1"},
		{func(o *Options) { o.TolRelObj = math.NaN() }, "tol_rel_obj = NaN"},
		{func(o *Options) { o.TolGrad = -1e-8 }, "tol_grad = -1e-08"},
		{func(o *Options) { o.TolRelGrad = -2 }, "tol_rel_grad = -2"},
		{func(o *Options) { o.TolParam = math.Inf(1) }, "tol_param = +Inf"},
		{func(o *Options) { o.HistorySize = 0 }, "history_size = 0"},
		{func(o *Options) { o.Iter = -5 }, "iter = -5"},
		{func(o *Options) { o.Algorithm = 7 }, "algorithm 7"},
	} {
		o := DefaultOptions()
		tc.set(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
		}
		if _, err := Maximize(context.Background(), rosenbrock(2), []float64{0, 0}, o); err == nil {
			t.Errorf("Maximize accepted options with %s", tc.want)
		}
	}
	if _, err := Maximize(context.Background(), rosenbrock(2), []float64{0}, DefaultOptions()); err == nil {
		t.Error("Maximize accepted an initial point of the wrong length")
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, a := range allAlgorithms {
		got, err := ParseAlgorithm(strings.ToUpper(a.String()))
		if err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAlgorithm("sgd"); err == nil {
		t.Error("ParseAlgorithm accepted sgd")
	}
}

// TestHessian compares the finite-difference Hessian with the analytic one
// of f(x) = x0² x1 + exp(x1) sin(x2) + x0 x2³ + 1e3·x3² at points with
// |x_i| below and above 1 (the step scales with max(1, |x_i|)).
func TestHessian(t *testing.T) {
	tg := funcTarget{4, func(x, g []float64) (float64, error) {
		g[0] = 2*x[0]*x[1] + x[2]*x[2]*x[2]
		g[1] = x[0]*x[0] + math.Exp(x[1])*math.Sin(x[2])
		g[2] = math.Exp(x[1])*math.Cos(x[2]) + 3*x[0]*x[2]*x[2]
		g[3] = 2e3 * x[3]
		return x[0]*x[0]*x[1] + math.Exp(x[1])*math.Sin(x[2]) + x[0]*x[2]*x[2]*x[2] + 1e3*x[3]*x[3], nil
	}}
	analytic := func(x []float64) [4][4]float64 {
		e := math.Exp(x[1])
		var h [4][4]float64
		h[0][0], h[0][1], h[0][2] = 2*x[1], 2*x[0], 3*x[2]*x[2]
		h[1][1], h[1][2] = e*math.Sin(x[2]), e*math.Cos(x[2])
		h[2][2] = -e*math.Sin(x[2]) + 6*x[0]*x[2]
		h[3][3] = 2e3
		for i := range 4 {
			for j := range i {
				h[i][j] = h[j][i]
			}
		}
		return h
	}
	for _, x := range [][]float64{{0.3, -0.2, 0.7, 0.1}, {12, 2.5, -30, 400}} {
		h, err := Hessian(context.Background(), tg, x)
		if err != nil {
			t.Fatal(err)
		}
		want := analytic(x)
		for i := range 4 {
			for j := range 4 {
				// Central differences: error O(h²·f''') + O(ε·|g|/h), with
				// h = ε^(1/3)·max(1,|x|) ≈ 6e-6·max(1,|x|).
				tol := 1e-6 * math.Max(1, math.Abs(want[i][j]))
				if got := h.At(i, j); math.Abs(got-want[i][j]) > tol {
					t.Errorf("x=%v: H[%d][%d] = %v, want %v ± %g", x, i, j, got, want[i][j], tol)
				}
				if h.At(i, j) != h.At(j, i) {
					t.Errorf("H not symmetric at %d,%d", i, j)
				}
			}
		}
	}
	bad := funcTarget{1, func(x, g []float64) (float64, error) {
		if x[0] > 0 {
			return 0, errors.New("boundary")
		}
		g[0] = 0
		return 0, nil
	}}
	if _, err := Hessian(context.Background(), bad, []float64{0}); err == nil || !strings.Contains(err.Error(), "boundary") {
		t.Errorf("error %v, want the target's", err)
	}
}
