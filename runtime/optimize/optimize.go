// Package optimize finds a mode of a log density on R^n as CmdStan's optimize
// method does: L-BFGS (the default), BFGS, or Newton's method, with Stan's
// line search, defaults, convergence tests and termination messages.
//
// The target is maximized; internally, as in Stan, the objective minimized is
// f(x) = -log p(x). Points where the log density or its gradient is not
// finite, or where the Target returns an error other than a cancellation,
// are rejected: the line search shortens the step, as Stan does.
package optimize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Target is a log density on R^n (unconstrained parameters). LogDensityGrad
// returns log p(x) up to a constant and writes its gradient into grad (of
// length Dim). An error means the point cannot be evaluated and is treated as
// a log density of -Inf (a rejected step), unless it reports a context
// cancellation (errors.Is context.Canceled or context.DeadlineExceeded), which
// stops the run and is returned.
type Target interface {
	Dim() int
	LogDensityGrad(x, grad []float64) (float64, error)
}

// Algorithm selects the optimization method.
type Algorithm int

const (
	LBFGS  Algorithm = iota // limited-memory BFGS (Stan's default)
	BFGS                    // BFGS with a dense inverse-Hessian approximation
	Newton                  // Newton's method with a finite-difference Hessian
)

var algorithmNames = [...]string{LBFGS: "lbfgs", BFGS: "bfgs", Newton: "newton"}

// String returns the algorithm's CmdStan name: "lbfgs", "bfgs" or "newton".
func (a Algorithm) String() string {
	if a >= 0 && int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// ParseAlgorithm returns the algorithm with the CmdStan name s (case
// insensitive).
func ParseAlgorithm(s string) (Algorithm, error) {
	for i, name := range algorithmNames {
		if strings.EqualFold(s, name) {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("optimize: unknown algorithm %q (want lbfgs, bfgs or newton)", s)
}

// Options configures Maximize. The zero value is not valid: start from
// DefaultOptions.
type Options struct {
	Algorithm Algorithm

	// InitAlpha is the first step length tried by the line search, on the
	// first iteration and after a reset of the Hessian approximation.
	InitAlpha float64

	// TolObj stops when |f(x_k) - f(x_{k-1})| < TolObj.
	TolObj float64
	// TolRelObj stops when |f(x_k) - f(x_{k-1})| / max(|f(x_k)|,
	// |f(x_{k-1})|, 1) < TolRelObj·ε (ε the machine epsilon).
	TolRelObj float64
	// TolGrad stops when ||∇f(x_k)|| < TolGrad.
	TolGrad float64
	// TolRelGrad stops when g'Hg / max(|f(x_k)|, 1) < TolRelGrad·ε, with g
	// the gradient and H the current inverse-Hessian approximation.
	TolRelGrad float64
	// TolParam stops when ||x_k - x_{k-1}|| < TolParam.
	TolParam float64

	// HistorySize is the number of update pairs L-BFGS keeps.
	HistorySize int

	// Iter is the maximum number of iterations.
	Iter int

	// Progress, when non-nil, is called with the initial point (Iter 0) and
	// after every completed iteration. If it returns an error, Maximize
	// stops and returns that error with the result so far.
	Progress func(Progress) error
}

// DefaultOptions returns CmdStan's defaults: L-BFGS with history 5,
// init_alpha 0.001, tol_obj 1e-12, tol_rel_obj 1e4, tol_grad 1e-8,
// tol_rel_grad 1e7, tol_param 1e-8 and at most 2000 iterations.
func DefaultOptions() Options {
	return Options{
		Algorithm:   LBFGS,
		InitAlpha:   1e-3,
		TolObj:      1e-12,
		TolRelObj:   1e4,
		TolGrad:     1e-8,
		TolRelGrad:  1e7,
		TolParam:    1e-8,
		HistorySize: 5,
		Iter:        2000,
	}
}

// Validate reports the first option that is out of range, naming it as
// CmdStan does and giving its value.
func (o Options) Validate() error {
	if o.Algorithm < LBFGS || o.Algorithm > Newton {
		return fmt.Errorf("optimize: algorithm %d is not lbfgs, bfgs or newton", int(o.Algorithm))
	}
	if !(o.InitAlpha > 0) || math.IsInf(o.InitAlpha, 1) {
		return fmt.Errorf("optimize: init_alpha = %v, must be positive and finite", o.InitAlpha)
	}
	for _, t := range []struct {
		name string
		v    float64
	}{
		{"tol_obj", o.TolObj}, {"tol_rel_obj", o.TolRelObj}, {"tol_grad", o.TolGrad},
		{"tol_rel_grad", o.TolRelGrad}, {"tol_param", o.TolParam},
	} {
		if !(t.v >= 0) || math.IsInf(t.v, 1) {
			return fmt.Errorf("optimize: %s = %v, must be non-negative and finite", t.name, t.v)
		}
	}
	if o.HistorySize < 1 {
		return fmt.Errorf("optimize: history_size = %d, must be positive", o.HistorySize)
	}
	if o.Iter < 1 {
		return fmt.Errorf("optimize: iter = %d, must be positive", o.Iter)
	}
	return nil
}

// Progress reports the state after an iteration, the columns of CmdStan's
// optimization table.
type Progress struct {
	Iter       int     // 0 for the initial point
	LogDensity float64 // log p at X
	StepNorm   float64 // ||x_k - x_{k-1}|| (||dx||)
	GradNorm   float64 // ||∇ log p(x_k)||
	Alpha      float64 // the step length accepted by the line search
	Alpha0     float64 // the step length the line search started from
	Evals      int     // gradient evaluations so far
	Note       string  // e.g. "LS failed, Hessian reset"

	// X and Grad are the iterate and the gradient of log p there. They
	// belong to the optimizer and are valid only during the call.
	X, Grad []float64
}

// Termination is the reason an optimization stopped.
type Termination int

const (
	NotTerminated    Termination = iota // the run stopped on an error
	ConvergedObj                        // absolute change in objective below TolObj
	ConvergedRelObj                     // relative change in objective below TolRelObj·ε
	ConvergedGrad                       // gradient norm below TolGrad
	ConvergedRelGrad                    // relative gradient magnitude below TolRelGrad·ε
	ConvergedParam                      // parameter change below TolParam
	MaxIterations                       // Iter iterations done
	LineSearchFailed                    // no step satisfies the Wolfe conditions
)

var terminationMessages = [...]string{
	NotTerminated:    "Optimization did not terminate",
	ConvergedObj:     "Convergence detected: absolute change in objective function was below tolerance",
	ConvergedRelObj:  "Convergence detected: relative change in objective function was below tolerance",
	ConvergedGrad:    "Convergence detected: gradient norm is below tolerance",
	ConvergedRelGrad: "Convergence detected: relative gradient magnitude is below tolerance",
	ConvergedParam:   "Convergence detected: absolute parameter change was below tolerance",
	MaxIterations:    "Maximum number of iterations hit, may not be at an optima",
	LineSearchFailed: "Line search failed to achieve a sufficient decrease, no more progress can be made",
}

// String returns Stan's message for the termination.
func (t Termination) String() string {
	if t >= 0 && int(t) < len(terminationMessages) {
		return terminationMessages[t]
	}
	return fmt.Sprintf("Termination(%d)", int(t))
}

// Converged reports whether t is one of the convergence tests.
func (t Termination) Converged() bool { return t >= ConvergedObj && t <= ConvergedParam }

// ErrLineSearch is returned, wrapped, with the last iterate when the line
// search fails even after a reset of the Hessian approximation (Stan's
// TERM_LSFAIL). An unbounded log density typically ends this way.
var ErrLineSearch = errors.New("optimize: line search failed to achieve a sufficient decrease, no more progress can be made")

// Result is the outcome of Maximize.
type Result struct {
	X          []float64 // the last iterate: the mode when Termination.Converged()
	LogDensity float64   // log p(X)
	Grad       []float64 // ∇ log p(X)
	Iterations int       // iterations completed
	Evals      int       // gradient evaluations, including the initial point
	// Termination is the reason the run stopped; Message is its Stan wording.
	Termination Termination
	Message     string
}

// Maximize maximizes the log density of t from x0 with the algorithm and
// tolerances of opts.
//
// It returns an error, and no result, when the options are invalid or the
// initial point cannot be evaluated. When the run stops on a line-search
// failure (an error wrapping ErrLineSearch), a cancellation of ctx (checked
// before every evaluation) or an error from opts.Progress, it returns the
// last accepted iterate together with the error. Reaching Iter iterations is
// not an error: Result.Termination says so, as CmdStan does.
func Maximize(ctx context.Context, t Target, x0 []float64, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	n := t.Dim()
	if len(x0) != n {
		return nil, fmt.Errorf("optimize: initial point has %d values, target has dimension %d", len(x0), n)
	}
	ev := &evaluator{ctx: ctx, t: t}
	x := append([]float64(nil), x0...)
	g := make([]float64, n)
	f, rej, err := ev.eval(x, g)
	if err != nil {
		return nil, fmt.Errorf("optimize: initial point: %w", err)
	}
	if rej != nil {
		return nil, fmt.Errorf("optimize: initial point cannot be evaluated: %w", rej)
	}
	res := &Result{X: x, LogDensity: -f, Grad: make([]float64, n)}
	pr := Progress{Iter: 0, LogDensity: -f, GradNorm: norm(g), Evals: ev.evals, X: x, Grad: res.Grad}
	negate(res.Grad, g)
	if opts.Progress != nil {
		if err := opts.Progress(pr); err != nil {
			return finish(res, ev, NotTerminated), err
		}
	}
	switch opts.Algorithm {
	case Newton:
		return newton(ev, res, &opts)
	default:
		return quasiNewton(ev, res, g, &opts)
	}
}

// finish records the evaluation count and termination in res.
func finish(res *Result, ev *evaluator, term Termination) *Result {
	res.Evals = ev.evals
	res.Termination = term
	res.Message = term.String()
	return res
}

// evaluator evaluates the objective f = -log p and its gradient, counting
// gradient evaluations and classifying failures.
type evaluator struct {
	ctx   context.Context
	t     Target
	evals int
}

// eval writes ∇f(x) into g and returns f(x). A non-nil rej means the point
// is rejected (non-finite, or a Target error); a non-nil err stops the run.
func (e *evaluator) eval(x, g []float64) (f float64, rej, err error) {
	if err := e.ctx.Err(); err != nil {
		return 0, nil, err
	}
	e.evals++
	lp, err := e.t.LogDensityGrad(x, g)
	if err != nil {
		if isStop(e.ctx, err) {
			return 0, nil, err
		}
		return 0, err, nil
	}
	if math.IsNaN(lp) || math.IsInf(lp, 0) {
		return 0, fmt.Errorf("log density is %v", lp), nil
	}
	for i, v := range g {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("gradient %d is %v", i, v), nil
		}
	}
	negate(g, g)
	return -lp, nil, nil
}

// isStop reports whether err (from the Target) stops the run rather than
// rejecting the point.
func isStop(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func norm(a []float64) float64 { return math.Sqrt(dot(a, a)) }

// negate sets dst = -src.
func negate(dst, src []float64) {
	for i, v := range src {
		dst[i] = -v
	}
}

// axpy sets dst = x + a·p.
func axpy(dst, x []float64, a float64, p []float64) {
	for i := range dst {
		dst[i] = x[i] + a*p[i]
	}
}
