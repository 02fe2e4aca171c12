package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/pathfinder"
)

// pathfinderFlags are the options of "shm pathfinder", CmdStan's
// pathfinder method's arguments.
type pathfinderFlags struct {
	methodFlags
	opts pathfinder.Options
}

func (f *pathfinderFlags) register(fs *flag.FlagSet) {
	f.methodFlags.register(fs)
	f.opts = pathfinder.DefaultOptions()
	o := &f.opts
	fs.IntVar(&o.NumPaths, "num-paths", o.NumPaths, "number of single paths, each from its own initial point")
	fs.IntVar(&o.NumDraws, "draws", o.NumDraws, "draws of each path's approximation")
	fs.IntVar(&o.NumMultiDraws, "num-psis-draws", o.NumMultiDraws, "draws returned, resampled from all paths' by their importance weights")
	fs.BoolVar(&o.PSISResample, "psis-resample", o.PSISResample, "resample the paths' draws by Pareto-smoothed importance weights (false: every path's draws)")
	fs.IntVar(&o.NumElboDraws, "num-elbo-draws", o.NumElboDraws, "Monte Carlo draws of each ELBO estimate")
	fs.IntVar(&o.NumIterations, "iter", o.NumIterations, "maximum L-BFGS iterations of a path")
	fs.IntVar(&o.HistorySize, "history-size", o.HistorySize, "update pairs kept by L-BFGS")
	registerLBFGS(fs, &o.InitAlpha, &o.TolObj, &o.TolRelObj, &o.TolGrad, &o.TolRelGrad, &o.TolParam, "first step length of the line search")
}

// maxPaths bounds --num-paths: each path holds its own density and draws.
const maxPaths = 1024

// validate checks the flags, naming the first bad one with its value.
func (f *pathfinderFlags) validate(set map[string]bool) error {
	if err := f.methodFlags.validate(set); err != nil {
		return err
	}
	o := f.opts
	for _, c := range []struct {
		name string
		v    int
	}{{"--num-paths", o.NumPaths}, {"--draws", o.NumDraws}, {"--num-psis-draws", o.NumMultiDraws}, {"--num-elbo-draws", o.NumElboDraws}, {"--iter", o.NumIterations}, {"--history-size", o.HistorySize}} {
		if c.v < 1 || c.v > maxCount {
			return fmt.Errorf("%s must be from 1 to %d, got %d", c.name, maxCount, c.v)
		}
	}
	if o.NumPaths > maxPaths {
		return fmt.Errorf("--num-paths is %d, at most %d", o.NumPaths, maxPaths)
	}
	if o.HistorySize > maxHistory {
		return fmt.Errorf("--history-size is %d, at most %d", o.HistorySize, maxHistory)
	}
	if err := o.Validate(); err != nil {
		return flagNames(err)
	}
	return nil
}

// cmdPathfinder implements "shm pathfinder model.shm data...": Pathfinder
// variational inference (Zhang et al. 2022) as CmdStan's pathfinder
// method: single paths of L-BFGS, each giving the normal approximation of
// highest ELBO along its way, their draws pooled and resampled by
// Pareto-smoothed importance weights.
func cmdPathfinder(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("pathfinder", stderr)
	var f pathfinderFlags
	f.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) < 1 {
		fmt.Fprintln(stderr, "usage: shm pathfinder model.shm [data...] [--num-paths 4 --draws 1000 --init ... --seed N --output DIR ...]")
		return 2
	}
	if err := f.validate(setFlags(fs)); err != nil {
		fmt.Fprintf(stderr, "shm pathfinder: %v\n", err)
		return 2
	}
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "shm pathfinder: interrupted; no output written")
			return 1
		}
		return report(stderr, err)
	}
	f.share = f.opts.NumPaths
	r, err := startMethod(ctx, "pathfinder", pos, &f.methodFlags, stderr)
	if err != nil {
		return fail(err)
	}
	o := f.opts
	// Each path keeps its draws and an ELBO estimate's; the run keeps
	// the resampled draws.
	kept := float64(o.NumPaths)*(float64(o.NumDraws)+float64(o.NumElboDraws)) + float64(o.NumMultiDraws)
	what := fmt.Sprintf("--num-paths %d × (--draws %d + --num-elbo-draws %d) + --num-psis-draws %d", o.NumPaths, o.NumDraws, o.NumElboDraws, o.NumMultiDraws)
	if err := r.checkRows(kept, 2, what); err != nil {
		return fail(err)
	}
	starts, err := pathStarts(r.bm, f.opts.NumPaths, r.initial)
	if err != nil {
		return fail(err)
	}
	opts := f.opts
	if f.refresh > 0 {
		opts.Progress = func(p pathfinder.Progress) {
			if p.Iter%f.refresh == 0 {
				fmt.Fprintf(stderr, "Path [%d] :Iter %d log prob %.6g best ELBO %.6g\n", p.Path, p.Iter, p.LogDensity, p.BestELBO)
			}
		}
	}
	res, err := pathfinder.Multi(ctx, starts, opts, f.seed)
	if err != nil {
		return fail(err)
	}
	for k, perr := range res.PathErrors {
		if perr != nil {
			fmt.Fprintf(stderr, "Path [%d] failed: %v\n", k+1, perr)
		}
	}
	fmt.Fprintf(stderr, "Pareto k-hat of the importance weights: %.3g\n", res.ParetoK)
	if math.IsNaN(res.ParetoK) {
		fmt.Fprintln(stderr, "warning: the Pareto k-hat could not be estimated (too few draws): the approximation's quality is unknown")
	}
	if res.ParetoK > 0.7 {
		fmt.Fprintln(stderr, "warning: Pareto k-hat above 0.7: the approximation is far from the posterior; sample with NUTS (the draws may still serve as initial values)")
	}
	d, err := r.bm.NewDensity()
	if err != nil {
		return fail(err)
	}
	gq := rand.New(rand.NewPCG(f.seed, 1<<32|0x6a))
	rows := make([][]float64, 0, len(res.Draws))
	for k, theta := range res.Draws {
		row := []float64{res.LogApprox[k], res.LogDensity[k]}
		if row, err = d.Draw(row, theta, gq); err != nil {
			return fail(fmt.Errorf("draw %d: %w", k+1, err))
		}
		rows = append(rows, row)
	}
	lines := []string{methodArg(1, "pathfinder", nil),
		methodArg(2, "init_alpha", o.InitAlpha), methodArg(2, "tol_obj", o.TolObj), methodArg(2, "tol_rel_obj", o.TolRelObj),
		methodArg(2, "tol_grad", o.TolGrad), methodArg(2, "tol_rel_grad", o.TolRelGrad), methodArg(2, "tol_param", o.TolParam),
		methodArg(2, "history_size", o.HistorySize), methodArg(2, "num_psis_draws", o.NumMultiDraws), methodArg(2, "num_paths", o.NumPaths),
		methodArg(2, "psis_resample", o.PSISResample), methodArg(2, "num_draws", o.NumDraws), methodArg(2, "num_elbo_draws", o.NumElboDraws),
		methodArg(2, "num_iterations", o.NumIterations)}
	notes := []string{fmt.Sprintf("Pareto k-hat = %.6g, ESS = %.6g", res.ParetoK, res.ESS)}
	path, err := r.write(r.header(lines, []string{"lp_approx__", "lp__"}), rows, notes)
	if err != nil {
		return fail(err)
	}
	if release() {
		fmt.Fprintf(stderr, "shm pathfinder: interrupted after the run: its file is complete (%s)\n", path)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// pathStarts returns n paths' starts on bm: each its own density (a
// Density is not safe for concurrent use) and the initial point init(k)
// of path k (from 1).
func pathStarts(bm *runtime.Model, n int, init func(k int) ([]float64, error)) ([]pathfinder.Start, error) {
	starts := make([]pathfinder.Start, n)
	for k := range starts {
		d, err := bm.NewDensity()
		if err != nil {
			return nil, err
		}
		x, err := init(k + 1)
		if err != nil {
			return nil, err
		}
		starts[k] = pathfinder.Start{Target: d, Init: x}
	}
	return starts, nil
}

// pathfinderInits returns the initial points of the chains ids of bm
// (unconstrained): draws of multi-path Pathfinder with Stan's defaults,
// its paths started as the first chains' random initial points. Chain k
// takes draw (k−1)·331 mod the number of draws, whatever the other
// chains: "--chains 1 --chain-id k" starts where chain k of a larger run
// does.
func pathfinderInits(ctx context.Context, bm *runtime.Model, seed uint64, ids []int) ([][]float64, error) {
	opts := pathfinder.DefaultOptions()
	starts, err := pathStarts(bm, opts.NumPaths, func(k int) ([]float64, error) {
		return bm.Unconstrain(&data.Set{}, rand.New(rand.NewPCG(seed, uint64(k))), 2)
	})
	if err != nil {
		return nil, err
	}
	res, err := pathfinder.Multi(ctx, starts, opts, seed)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// One line: the paths' errors, joined, would print without it.
		return nil, fmt.Errorf("--init pathfinder: every path failed, nothing was sampled (give another --init): %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	inits := make([][]float64, len(ids))
	for i, id := range ids {
		inits[i] = res.Draws[(id-1)*331%len(res.Draws)]
	}
	return inits, nil
}
