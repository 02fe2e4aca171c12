package pathfinder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/shmlang/shm/runtime/diag"
)

// Start is the target and initial point of one path of Multi.
type Start struct {
	Target Target
	Init   []float64
}

// Result is the outcome of multi-path Pathfinder.
type Result struct {
	// Draws are the returned draws (unconstrained): NumMultiDraws draws
	// resampled with replacement by their PSIS weights, or, without
	// PSISResample, every path's draws in path order. LogApprox and
	// LogDensity are their lp_approx__ and lp__.
	Draws      [][]float64
	LogApprox  []float64
	LogDensity []float64

	// ParetoK is the Pareto k-hat of the importance ratios lp__ -
	// lp_approx__ of the pooled draws (see diag.PSIS): above 0.7 the
	// approximation is unreliable.
	ParetoK float64
	// ESS is the PSIS effective sample size of the pooled draws.
	ESS float64

	// Paths holds each path's result in order of the starts, nil for a
	// path that failed; PathErrors holds the failures' errors.
	Paths      []*Path
	PathErrors []error
	Evals      int // log density evaluations of all paths
}

// Multi runs multi-path Pathfinder: one single path per start (on its own
// goroutine, path ids 1, 2, ...), then PSIS over the pooled draws of the
// paths that succeeded. A path that fails is dropped, with its error in
// Result.PathErrors, as Stan does; Multi fails only when every path fails,
// or at once on a cancellation of ctx.
//
// The result depends only on the targets, starts, options and seed, not on
// the goroutines' scheduling: each path has its own random stream.
func Multi(ctx context.Context, starts []Start, opts Options, seed uint64) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(starts) != opts.NumPaths {
		return nil, fmt.Errorf("pathfinder: %d starts for num_paths = %d", len(starts), opts.NumPaths)
	}
	progress := opts.Progress
	if progress != nil {
		var mu sync.Mutex
		progress = func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			opts.Progress(p)
		}
	}
	res := &Result{Paths: make([]*Path, len(starts)), PathErrors: make([]error, len(starts)), ParetoK: math.NaN()}
	var wg sync.WaitGroup
	for i, st := range starts {
		wg.Go(func() {
			res.Paths[i], res.PathErrors[i] = single(ctx, st.Target, st.Init, opts, seed, i+1, progress)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pathfinder: %w", err)
	}
	var pool drawSet
	for _, p := range res.Paths {
		if p != nil {
			res.Evals += p.Evals
			pool.append(&drawSet{x: p.Draws, lpApprox: p.LogApprox, lp: p.LogDensity})
		}
	}
	if len(pool.x) == 0 {
		return nil, fmt.Errorf("pathfinder: no path ran successfully: %w", errors.Join(res.PathErrors...))
	}
	ratios := make([]float64, len(pool.x))
	for i, lp := range pool.lp {
		ratios[i] = lp - pool.lpApprox[i]
	}
	ps, err := diag.PSIS(ratios, 1)
	if err != nil {
		return nil, fmt.Errorf("pathfinder: importance weights of %d draws: %w", len(ratios), err)
	}
	res.ParetoK, res.ESS = ps.K, ps.ESS
	if !opts.PSISResample {
		res.Draws, res.LogApprox, res.LogDensity = pool.x, pool.lpApprox, pool.lp
		return res, nil
	}
	// Resample with replacement, on a stream of its own (id 0).
	rng := rand.New(rand.NewPCG(seed, 0))
	cum := make([]float64, len(ps.LogWeights))
	total := 0.0
	for i, lw := range ps.LogWeights {
		total += math.Exp(lw)
		cum[i] = total
	}
	m := opts.NumMultiDraws
	res.Draws, res.LogApprox, res.LogDensity = make([][]float64, m), make([]float64, m), make([]float64, m)
	for k := range m {
		u := rng.Float64() * total
		i := sort.SearchFloat64s(cum, u)
		// Skip ties at zero weight (cum equal to u at a zero-weight draw).
		for i < len(cum)-1 && cum[i] <= u {
			i++
		}
		res.Draws[k] = pool.x[i]
		res.LogApprox[k], res.LogDensity[k] = pool.lpApprox[i], pool.lp[i]
	}
	return res, nil
}
