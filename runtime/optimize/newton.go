package optimize

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// newtonTol is the improvement in log p below which Newton's method stops;
// Stan fixes it at 1e-8 (CmdStan's newton takes no tolerances).
const newtonTol = 1e-8

// newton runs Stan's Newton's method from res.X: each iteration computes the
// Hessian by finite differences of the gradient (Hessian), solves with its
// eigenvalues replaced by their absolute values (floored at
// √ε·max(1, max|λ|)) so that the step is an ascent direction, and halves the
// step, starting from 1, until log p does not decrease.
func newton(ev *evaluator, res *Result, o *Options) (*Result, error) {
	n := len(res.X)
	x := res.X
	lp := res.LogDensity
	grad := append([]float64(nil), res.Grad...)
	xNew := make([]float64, n)
	gNew := make([]float64, n)
	dir := make([]float64, n)
	stop := func(term Termination, err error) (*Result, error) {
		res.X, res.LogDensity = x, lp
		copy(res.Grad, grad)
		return finish(res, ev, term), err
	}
	for k := 1; k <= o.Iter; k++ {
		h, evals, err := hessian(ev.ctx, ev.t, x)
		ev.evals += evals
		if err != nil {
			return stop(NotTerminated, fmt.Errorf("optimize: newton iteration %d: %w", k, err))
		}
		if err := newtonDirection(h, grad, dir); err != nil {
			return stop(NotTerminated, fmt.Errorf("optimize: newton iteration %d: %w", k, err))
		}
		step, lpNew := 2.0, math.Inf(-1)
		improved := false
		for {
			step *= 0.5
			if step < 1e-50 {
				break
			}
			axpy(xNew, x, step, dir)
			f, rej, err := ev.eval(xNew, gNew)
			if err != nil {
				return stop(NotTerminated, fmt.Errorf("optimize: newton iteration %d: %w", k, err))
			}
			if rej == nil && -f >= lp {
				lpNew, improved = -f, true
				break
			}
		}
		lpPrev := lp
		stepNorm := 0.0
		if improved {
			for i := range x {
				d := xNew[i] - x[i]
				stepNorm += d * d
			}
			stepNorm = math.Sqrt(stepNorm)
			x, xNew = xNew, x
			lp = lpNew
			negate(grad, gNew)
		}
		res.Iterations = k
		if o.Progress != nil {
			copy(res.Grad, grad)
			err := o.Progress(Progress{Iter: k, LogDensity: lp, StepNorm: stepNorm, GradNorm: norm(grad),
				Alpha: step, Alpha0: 1, Evals: ev.evals, X: x, Grad: res.Grad})
			if err != nil {
				return stop(NotTerminated, err)
			}
		}
		if math.Abs(lp-lpPrev) < newtonTol {
			return stop(ConvergedObj, nil)
		}
	}
	return stop(MaxIterations, nil)
}

// newtonDirection sets dir = V |Λ|⁻¹ V' grad for the Hessian h = V Λ V',
// Stan's make_negative_definite_and_solve (with the sign of the result
// flipped: dir is the ascent step for log p).
func newtonDirection(h *mat.SymDense, grad, dir []float64) error {
	var eig mat.EigenSym
	if !eig.Factorize(h, true) {
		return fmt.Errorf("eigendecomposition of the Hessian failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	maxAbs := 0.0
	for _, v := range vals {
		maxAbs = math.Max(maxAbs, math.Abs(v))
	}
	sqrtEps := math.Sqrt(epsilon)
	delta := math.Max(sqrtEps*maxAbs, sqrtEps)
	n := len(grad)
	proj := make([]float64, n)
	for j := range n {
		s := 0.0
		for i := range n {
			s += vecs.At(i, j) * grad[i]
		}
		proj[j] = s / math.Max(math.Abs(vals[j]), delta)
	}
	for i := range n {
		s := 0.0
		for j := range n {
			s += vecs.At(i, j) * proj[j]
		}
		dir[i] = s
	}
	for _, v := range dir {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("the Newton step is not finite")
		}
	}
	return nil
}

// Hessian returns the Hessian of the log density of t at x, estimated as
// Stan's finite_diff_hessian_auto (used by its laplace method and Newton's
// method): central differences of the gradient with step
// h_i = ε^(1/3)·max(1, |x_i|) in each coordinate, symmetrized as
// H_ij = (∂_i g_j + ∂_j g_i) / 2. It costs 2n gradient evaluations.
//
// Any error of the target, or a non-finite gradient, at one of the 2n points
// is an error.
func Hessian(ctx context.Context, t Target, x []float64) (*mat.SymDense, error) {
	if len(x) != t.Dim() {
		return nil, fmt.Errorf("optimize: Hessian: point has %d values, target has dimension %d", len(x), t.Dim())
	}
	h, _, err := hessian(ctx, t, x)
	if err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	return h, nil
}

// hessian is Hessian, also returning the number of gradient evaluations.
func hessian(ctx context.Context, t Target, x []float64) (*mat.SymDense, int, error) {
	n := len(x)
	gPlus := make([][]float64, n)
	gMinus := make([][]float64, n)
	steps := make([]float64, n)
	xt := append([]float64(nil), x...)
	evals := 0
	cbrtEps := math.Cbrt(epsilon)
	for i := range n {
		steps[i] = cbrtEps * math.Max(1, math.Abs(x[i]))
		for _, side := range [2]float64{1, -1} {
			if err := ctx.Err(); err != nil {
				return nil, evals, err
			}
			g := make([]float64, n)
			xt[i] = x[i] + side*steps[i]
			evals++
			_, err := t.LogDensityGrad(xt, g)
			xt[i] = x[i]
			if err != nil {
				return nil, evals, fmt.Errorf("the Hessian: gradient at x%+g·e_%d: %w", side*steps[i], i, err)
			}
			for j, v := range g {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, evals, fmt.Errorf("the Hessian: gradient %d at x%+g·e_%d is %v", j, side*steps[i], i, v)
				}
			}
			if side > 0 {
				gPlus[i] = g
			} else {
				gMinus[i] = g
			}
		}
	}
	h := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			v := (gPlus[j][i]-gMinus[j][i])/(4*steps[j]) + (gPlus[i][j]-gMinus[i][j])/(4*steps[i])
			h.SetSym(i, j, v)
		}
	}
	return h, evals, nil
}
