package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/stdlib/sinkhorn"
)

// The post-sampling report's reference budget is refFactor times a call's
// own, and a call is flagged when its budget moves the log density by
// more than maxDeltaLP or its gradient by more than maxDeltaGrad relative
// (issue 48: enough to move the posterior).
const (
	refFactor    = 5
	maxDeltaLP   = 1
	maxDeltaGrad = 0.1
	reportDraws  = 4 // draws besides the posterior mean
)

// itersCall is the post-sampling report of one iterative call: the
// paper's monitors of its budget against refFactor times it, at each
// point (itersRow's definitions).
type itersCall struct {
	Call             *ir.Call
	Budget           string // the call's budget: "T = 80", "tol = 1e-06"...
	DeltaLP, DeltaGr []float64
	// PerGradient is the model's time per gradient at the run's budgets
	// (over the points, the median of three passes): the cost of this
	// accuracy.
	PerGradient time.Duration
	// Problems is the number of problems the call solved at the points
	// (three passes), Iters their iterations in total and MaxIters the
	// most of one: with tol, what convergence took.
	Problems, Iters int64
	MaxIters        int
}

// sinkhornReport writes the report of the iterative calls
// (ir.Model.Iterative) of the model bound as the run was (bm; bind binds
// it again with other options) at the posterior mean and a few draws of
// fit.
func sinkhornReport(w io.Writer, bind budgetBinder, bm *runtime.Model, fit *diag.Fit) error {
	if len(bm.IR.Iterative) == 0 {
		return nil
	}
	points, err := reportPoints(bm, fit, reportDraws)
	if err != nil {
		return err
	}
	calls, err := itersCalls(bind, bm, points)
	if err != nil {
		return err
	}
	return writeItersReport(w, bm.IR.File, calls, len(points))
}

// reportPoints returns the unconstrained posterior mean of fit and n of
// its draws, evenly spaced over the pooled chains.
func reportPoints(bm *runtime.Model, fit *diag.Fit, n int) ([][]float64, error) {
	var rows [][]float64
	for _, c := range fit.Chains {
		rows = append(rows, c.Draws...)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no draws to evaluate the Sinkhorn budgets at")
	}
	mean := make(map[string]float64, len(fit.Columns))
	for j, col := range fit.Columns {
		s := 0.0
		for _, r := range rows {
			s += r[j]
		}
		mean[col] = s / float64(len(rows))
	}
	theta, err := bm.UnconstrainColumns(mean)
	if err != nil {
		return nil, fmt.Errorf("the posterior mean: %w", err)
	}
	out := [][]float64{theta}
	n = min(n, len(rows))
	for i := range n {
		byCol := make(map[string]float64, len(fit.Columns))
		for j, col := range fit.Columns {
			byCol[col] = rows[i*len(rows)/n][j]
		}
		theta, err := bm.UnconstrainColumns(byCol)
		if err != nil {
			return nil, fmt.Errorf("draw %d: %w", i*len(rows)/n+1, err)
		}
		out = append(out, theta)
	}
	return out, nil
}

// itersCalls evaluates the model as sampled (bm) and, for each iterative
// call in turn, with that call's budget times refFactor.
func itersCalls(bind budgetBinder, bm *runtime.Model, points [][]float64) ([]itersCall, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return nil, err
	}
	got, per, err := evaluateDensity(d, points, 3)
	if err != nil {
		return nil, err
	}
	var out []itersCall
	seen := map[lang.Pos]bool{}
	for _, call := range bm.IR.Iterative {
		pos := call.Position()
		if seen[pos] {
			continue
		}
		seen[pos] = true
		ref, err := bind(runtime.Options{Refine: map[lang.Pos]int{pos: refFactor}})
		if err != nil {
			return nil, err
		}
		want, _, err := evaluate(ref, points, 1)
		if err != nil {
			return nil, fmt.Errorf("%s at %s with a budget %d times finer: %w", call.Func.Name, pos, refFactor, err)
		}
		c := itersCall{Call: call, Budget: callBudget(call), PerGradient: per}
		for _, st := range d.BuiltinStates() {
			n := sinkhorn.CallCounts(st, pos)
			c.Problems += n.Problems
			c.Iters += n.Iters
			c.MaxIters = max(c.MaxIters, n.Max)
		}
		c.DeltaLP, c.DeltaGr = deltas(got, want)
		out = append(out, c)
	}
	return out, nil
}

// namedArg returns a call's named argument, nil when absent.
func namedArg(call *ir.Call, name string) ir.Expr {
	for i, p := range call.Func.Named {
		if p.Name == name && i < len(call.Named) {
			return call.Named[i]
		}
	}
	return nil
}

// converged reports whether a call iterates to a tolerance (tol = ...).
func converged(call *ir.Call) bool { return namedArg(call, "tol") != nil }

// callBudget returns the text of a call's budget: "tol = ..." with a
// tolerance, otherwise "T = ..." with its iters argument's value when
// constant, sinkhorn's default when absent.
func callBudget(call *ir.Call) string {
	if tol := namedArg(call, "tol"); tol != nil {
		if v, ok := ir.ConstNumber(tol); ok {
			return "tol = " + strconv.FormatFloat(v, 'g', -1, 64)
		}
		return "tol"
	}
	iters := namedArg(call, "iters")
	if iters == nil {
		return "T = " + strconv.Itoa(sinkhorn.DefaultIters)
	}
	if n, ok := ir.ConstInt(iters); ok {
		return "T = " + strconv.FormatInt(n, 10)
	}
	return "T = iters"
}

// writeItersReport prints the report and a warning for each call whose
// budget is large enough to move the posterior.
func writeItersReport(w io.Writer, file string, calls []itersCall, points int) error {
	fmt.Fprintf(w, "\nSinkhorn iterations (each call against a reference %d times finer, %d T or tol / %d, at the posterior mean and %d draw(s): Δ_lp = |lp − lp_ref|, eta·Δ_S; Δ_∇ = ‖∇ − ∇_ref‖ / max(1, ‖∇_ref‖)):\n", refFactor, refFactor, refFactor, points-1)
	for _, c := range calls {
		iters := ""
		if converged(c.Call) && c.Problems > 0 {
			iters = fmt.Sprintf(", %.0f iterations per problem (at most %d)", float64(c.Iters)/float64(c.Problems), c.MaxIters)
		}
		fmt.Fprintf(w, "  %s at %s (%s): max Δ_lp %.3g, max Δ_∇ %.3g; %.3g ms per gradient of the model%s\n", c.Call.Func.Name, c.Call.Position(), c.Budget,
			slices.Max(c.DeltaLP), slices.Max(c.DeltaGr), float64(c.PerGradient.Microseconds())/1000, iters)
	}
	for _, c := range calls {
		dlp, dgr := slices.Max(c.DeltaLP), slices.Max(c.DeltaGr)
		if !(dlp <= maxDeltaLP) || !(dgr <= maxDeltaGrad) {
			_, err := fmt.Fprintf(w, "warning: %s:%s: %s with %s is not converged where the posterior is: against a budget %d times finer it moves the log density by up to %.3g and its gradient by up to %.0f%% (limits %g and %.0f%%), so the posterior is that of this approximation, not of the divergence. Unless that is meant, raise iters (shm calibrate iters compares budgets at a run's draws) or eps, or use tol = ... (a converged loss), or a smaller tol\n",
				file, c.Call.Position(), c.Call.Func.Name, c.Budget, refFactor, dlp, 100*dgr, float64(maxDeltaLP), 100*maxDeltaGrad)
			if err != nil {
				return err
			}
		}
	}
	return nil
}
