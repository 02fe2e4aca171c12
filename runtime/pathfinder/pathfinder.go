// Package pathfinder implements Pathfinder variational inference (Zhang,
// Carpenter, Gelman and Vehtari 2022, "Pathfinder: Parallel quasi-Newton
// variational inference", JMLR 23(306)) as Stan 2.33+ does (its services
// pathfinder single.hpp and multi.hpp).
//
// A single path runs L-BFGS (package optimize) from an initial point and, at
// every iterate, forms a normal approximation whose covariance is the L-BFGS
// inverse Hessian (a diagonal plus a low-rank term), estimates its ELBO by
// Monte Carlo, and returns draws from the approximation with the largest
// ELBO. Multi-path Pathfinder runs several paths in parallel and resamples
// their pooled draws by Pareto-smoothed importance sampling.
package pathfinder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shmlang/shm/runtime/optimize"
)

// Target is a log density on R^n (unconstrained parameters). LogDensityGrad
// returns log p(x) and writes its gradient into grad. An error means the
// point cannot be evaluated (log p = -Inf), unless it reports a context
// cancellation, which stops the run and is returned.
//
// A path calls its Target from one goroutine; Multi runs paths in parallel,
// so give each path its own Target unless it is safe for concurrent use.
type Target interface {
	Dim() int
	LogDensityGrad(x, grad []float64) (float64, error)
}

// Options configures Pathfinder. Start from DefaultOptions.
type Options struct {
	// L-BFGS settings, as optimize.Options (CmdStan's names in brackets).
	HistorySize   int     // [history_size] update pairs kept, J in the paper
	InitAlpha     float64 // [init_alpha]
	TolObj        float64 // [tol_obj]
	TolRelObj     float64 // [tol_rel_obj]
	TolGrad       float64 // [tol_grad]
	TolRelGrad    float64 // [tol_rel_grad]
	TolParam      float64 // [tol_param]
	NumIterations int     // [num_iterations] maximum L-BFGS iterations, L in the paper

	NumElboDraws int // [num_elbo_draws] Monte Carlo draws per ELBO estimate, K
	NumDraws     int // [num_draws] draws returned by each path, M

	NumPaths      int  // [num_paths] paths run by Multi
	PSISResample  bool // [psis_resample] resample the pooled draws by PSIS weights
	NumMultiDraws int  // [num_psis_draws] draws returned by Multi when resampling

	// Progress, when non-nil, is called after every L-BFGS iteration of
	// every path. Multi serializes the calls.
	Progress func(Progress)
}

// DefaultOptions returns Stan's defaults: L-BFGS with history 5,
// init_alpha 0.001, tol_obj 1e-12, tol_rel_obj 1e4, tol_grad 1e-8,
// tol_rel_grad 1e7, tol_param 1e-8 and 1000 iterations; 25 ELBO draws,
// 1000 draws, 4 paths, PSIS resampling to 1000 draws.
func DefaultOptions() Options {
	return Options{
		HistorySize:   5,
		InitAlpha:     1e-3,
		TolObj:        1e-12,
		TolRelObj:     1e4,
		TolGrad:       1e-8,
		TolRelGrad:    1e7,
		TolParam:      1e-8,
		NumIterations: 1000,
		NumElboDraws:  25,
		NumDraws:      1000,
		NumPaths:      4,
		PSISResample:  true,
		NumMultiDraws: 1000,
	}
}

// lbfgs returns the optimize options of the L-BFGS run.
func (o Options) lbfgs() optimize.Options {
	return optimize.Options{
		Algorithm: optimize.LBFGS, HistorySize: o.HistorySize, InitAlpha: o.InitAlpha,
		TolObj: o.TolObj, TolRelObj: o.TolRelObj, TolGrad: o.TolGrad, TolRelGrad: o.TolRelGrad,
		TolParam: o.TolParam, Iter: o.NumIterations,
	}
}

// Validate reports the first option out of range, naming it as CmdStan does.
func (o Options) Validate() error {
	lo := o.lbfgs()
	if err := lo.Validate(); err != nil {
		return fmt.Errorf("pathfinder: %w", err)
	}
	for _, c := range []struct {
		name string
		v    int
	}{
		{"num_elbo_draws", o.NumElboDraws}, {"num_draws", o.NumDraws},
		{"num_paths", o.NumPaths}, {"num_psis_draws", o.NumMultiDraws},
	} {
		if c.v < 1 {
			return fmt.Errorf("pathfinder: %s = %d, must be positive", c.name, c.v)
		}
	}
	return nil
}

// Progress reports one L-BFGS iteration of a path.
type Progress struct {
	Path int // the path's id
	optimize.Progress
	ELBO     float64 // the ELBO estimate at this iterate; NaN at iteration 0 or when none could be formed
	BestELBO float64 // the largest so far
}

// Path is the outcome of one single-path Pathfinder run.
type Path struct {
	ID int
	// Draws are NumDraws draws (unconstrained) from the best approximation;
	// LogApprox holds their log densities under it (lp_approx__) and
	// LogDensity under the target (lp__, -Inf where it cannot be evaluated).
	Draws      [][]float64
	LogApprox  []float64
	LogDensity []float64

	BestIter   int     // the L-BFGS iteration whose approximation was kept
	ELBO       float64 // its ELBO estimate
	Iterations int     // L-BFGS iterations
	Evals      int     // log density evaluations: L-BFGS, ELBO and draws
	// Message is the L-BFGS termination message; a line-search failure
	// after the first iterations still yields draws (Stan warns).
	Message string
}

// Single runs single-path Pathfinder on t from x0. The draws depend only on
// the target, x0, the options, seed and id (which selects the random stream;
// Stan's path ids start at 1).
func Single(ctx context.Context, t Target, x0 []float64, opts Options, seed uint64, id int) (*Path, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return single(ctx, t, x0, opts, seed, id, opts.Progress)
}

func single(ctx context.Context, t Target, x0 []float64, opts Options, seed uint64, id int, progress func(Progress)) (*Path, error) {
	n := t.Dim()
	if len(x0) != n {
		return nil, fmt.Errorf("pathfinder: path %d: initial point has %d values, target has dimension %d", id, len(x0), n)
	}
	if n == 0 {
		return nil, fmt.Errorf("pathfinder: path %d: the target has no parameters", id)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	ev := &drawEvaluator{ctx: ctx, t: t, grad: make([]float64, n)}

	var (
		alpha      = ones(n)
		prevX      = make([]float64, n)
		prevG      = make([]float64, n) // gradient of -log p
		ss, ys     [][]float64
		best       *approximation
		bestDraws  *drawSet
		bestELBO   = math.Inf(-1)
		bestIter   = -1
		iterations int
	)
	lo := opts.lbfgs()
	lo.Progress = func(p optimize.Progress) error {
		iterations = p.Iter
		elbo := math.NaN()
		report := func() {
			if progress != nil {
				progress(Progress{Path: id, Progress: p, ELBO: elbo, BestELBO: bestELBO})
			}
		}
		if p.Iter == 0 {
			copy(prevX, p.X)
			negateTo(prevG, p.Grad)
			report()
			return nil
		}
		s, y := make([]float64, n), make([]float64, n)
		for i := range n {
			s[i] = p.X[i] - prevX[i]
			y[i] = -p.Grad[i] - prevG[i]
		}
		copy(prevX, p.X)
		negateTo(prevG, p.Grad)
		// As the paper, a pair enters the history only when its
		// curvature is acceptable; Stan updates the diagonal only then
		// but stores every pair (L-BFGS's Wolfe steps give s'y > 0, so
		// the two differ only for y'y/s'y > 1e12).
		if curvatureOK(y, s) {
			alpha = updateDiagonal(alpha, y, s)
			ss, ys = append(ss, s), append(ys, y)
			if len(ss) > opts.HistorySize {
				ss, ys = ss[1:], ys[1:]
			}
		}
		if len(ss) == 0 {
			report()
			return nil
		}
		ap, err := newApproximation(p.X, prevG, alpha, ss, ys)
		if err != nil {
			report() // as Stan: this iterate's ELBO is -Inf (a failed estimate)
			return nil
		}
		ds, err := ev.draws(rng, ap, opts.NumElboDraws)
		if err != nil {
			return err
		}
		elbo = ds.elbo()
		if elbo > bestELBO {
			best, bestDraws, bestELBO, bestIter = ap, ds, elbo, p.Iter
		}
		report()
		return nil
	}
	res, err := optimize.Maximize(ctx, t, x0, lo)
	path := &Path{ID: id, Iterations: iterations}
	switch {
	case errors.Is(err, optimize.ErrLineSearch):
		if res.Iterations < 2 {
			return nil, fmt.Errorf("pathfinder: path %d: optimization failed to start, pathfinder cannot be run: %w", id, err)
		}
		path.Message = res.Message
	case err != nil:
		return nil, fmt.Errorf("pathfinder: path %d: %w", id, err)
	default:
		path.Message = res.Message
	}
	path.Evals = res.Evals + ev.evals
	if best == nil {
		return nil, fmt.Errorf("pathfinder: path %d: none of the %d L-BFGS iterations gave an approximation with a finite ELBO", id, res.Iterations)
	}
	path.BestIter, path.ELBO = bestIter, bestELBO
	all := bestDraws
	if more := opts.NumDraws - len(all.x); more > 0 {
		ds, err := ev.draws(rng, best, more)
		if err != nil {
			return nil, fmt.Errorf("pathfinder: path %d: %w", id, err)
		}
		all.append(ds)
	}
	path.Evals = res.Evals + ev.evals
	m := opts.NumDraws
	path.Draws, path.LogApprox, path.LogDensity = all.x[:m], all.lpApprox[:m], all.lp[:m]
	return path, nil
}

// drawSet holds draws from an approximation with their log densities.
type drawSet struct {
	x            [][]float64
	lpApprox, lp []float64
}

// elbo is the Monte Carlo ELBO estimate, the mean of lp - lpApprox (-Inf
// when a draw has zero density).
func (d *drawSet) elbo() float64 {
	s := 0.0
	for i, lp := range d.lp {
		s += lp - d.lpApprox[i]
	}
	return s / float64(len(d.lp))
}

func (d *drawSet) append(e *drawSet) {
	d.x = append(d.x, e.x...)
	d.lpApprox = append(d.lpApprox, e.lpApprox...)
	d.lp = append(d.lp, e.lp...)
}

// drawEvaluator draws from approximations and evaluates the target there.
type drawEvaluator struct {
	ctx   context.Context
	t     Target
	grad  []float64
	evals int
}

// draws returns k draws from ap, with the target's log density at each
// (-Inf where the target rejects the point or is not finite).
func (e *drawEvaluator) draws(rng *rand.Rand, ap *approximation, k int) (*drawSet, error) {
	n := len(ap.mu)
	d := &drawSet{x: make([][]float64, k), lpApprox: make([]float64, k), lp: make([]float64, k)}
	u := make([]float64, n)
	// Draw all normals first, as Stan, so the stream does not depend on
	// the target.
	us := make([][]float64, k)
	for i := range k {
		for j := range u {
			u[j] = rng.NormFloat64()
		}
		us[i] = append([]float64(nil), u...)
	}
	for i := range k {
		x := make([]float64, n)
		d.lpApprox[i] = ap.draw(us[i], x)
		d.x[i] = x
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
		e.evals++
		lp, err := e.t.LogDensityGrad(x, e.grad)
		if err != nil {
			if e.ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			lp = math.Inf(-1)
		}
		if math.IsNaN(lp) || math.IsInf(lp, 1) {
			lp = math.Inf(-1)
		}
		d.lp[i] = lp
	}
	return d, nil
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func negateTo(dst, src []float64) {
	for i, v := range src {
		dst[i] = -v
	}
}
