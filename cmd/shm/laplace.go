package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"

	"gonum.org/v1/gonum/mat"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/optimize"
	"github.com/shmlang/shm/runtime/stancsv"
)

// cmdLaplace implements "shm laplace model.shm data...", CmdStan's laplace
// method: draws from the normal approximation of the posterior at a mode
// on the unconstrained scale, whose covariance is the inverse of the
// negative Hessian there (by finite differences of the gradient, as
// Stan's).
func cmdLaplace(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("laplace", stderr)
	var f methodFlags
	f.register(fs)
	mode := fs.String("mode", "", "a Stan CSV file of shm optimize or CmdStan's optimize: the mode (default: optimize first, with L-BFGS)")
	jacobian := fs.Bool("jacobian", true, "the density of the unconstrained parameters, Jacobian included (as the mode's)")
	draws := fs.Int("draws", 1000, "number of draws")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) < 1 {
		fmt.Fprintln(stderr, "usage: shm laplace model.shm [data...] [--mode FILE --draws 1000 --jacobian=true --seed N --output DIR ...]")
		return 2
	}
	err = f.validate(setFlags(fs))
	if err == nil && (*draws < 1 || *draws > maxCount) {
		err = fmt.Errorf("--draws must be from 1 to %d, got %d", maxCount, *draws)
	}
	if err != nil {
		fmt.Fprintf(stderr, "shm laplace: %v\n", err)
		return 2
	}
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "shm laplace: interrupted; no output written")
			return 1
		}
		return report(stderr, err)
	}
	r, err := startMethod(ctx, "laplace", pos, &f, stderr)
	if err != nil {
		return fail(err)
	}
	if *mode != "" {
		r.inputs = append(r.inputs, *mode)
	}
	d, err := r.bm.NewDensity()
	if err != nil {
		return fail(err)
	}
	d.Jacobian, d.Constants = *jacobian, true
	n := r.bm.Dim()
	if words, over := sysmem.Exceeds(5*n, n); over {
		return fail(fmt.Errorf("the Hessian of %d parameters and its finite differences need %s, %s", n, sysmem.Bytes(8*words), sysmem.Beyond()))
	}
	if err := r.checkRows(float64(*draws), 2, fmt.Sprintf("--draws %d", *draws)); err != nil {
		return fail(err)
	}
	theta, err := laplaceMode(ctx, d, r, *mode, *jacobian, stderr)
	if err != nil {
		return fail(err)
	}
	// The covariance is (−H)⁻¹ = (L Lᵀ)⁻¹: a draw is mode + L⁻ᵀ z. The
	// factorization cannot stop: a signal ends the command at once.
	chol, err := interruptible(ctx, func() (*mat.Cholesky, error) {
		h, err := optimize.Hessian(ctx, d, theta)
		if err != nil {
			return nil, fmt.Errorf("the Hessian at the mode: %w", err)
		}
		negH := mat.NewSymDense(n, nil)
		negH.ScaleSym(-1, h)
		var chol mat.Cholesky
		if !chol.Factorize(negH) {
			return nil, fmt.Errorf("the Hessian at the mode is not negative definite: the point is not a mode (or the posterior is flat in some direction); give another --mode, or check the model")
		}
		return &chol, nil
	})
	if err != nil {
		return fail(err)
	}
	var l mat.TriDense
	chol.LTo(&l)
	logDet := 0.0 // log √det(−H)
	for i := range n {
		logDet += math.Log(l.At(i, i))
	}
	rng := rand.New(rand.NewPCG(f.seed, 1))
	gq := rand.New(rand.NewPCG(f.seed, 1<<32|0x6a))
	z := mat.NewVecDense(max(n, 1), nil)
	x := mat.NewVecDense(max(n, 1), nil)
	point := make([]float64, n)
	rows := make([][]float64, 0, *draws)
	for k := range *draws {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		sq := 0.0
		for i := range n {
			v := rng.NormFloat64()
			z.SetVec(i, v)
			sq += v * v
		}
		if n > 0 {
			if err := x.SolveVec(l.T(), z); err != nil {
				return fail(fmt.Errorf("draw %d: %w", k+1, err))
			}
		}
		for i := range n {
			point[i] = theta[i] + x.AtVec(i)
		}
		logG := -0.5*sq - 0.5*float64(n)*math.Log(2*math.Pi) + logDet
		logP, err := d.LogDensity(point)
		if err != nil {
			logP = math.Inf(-1) // outside the support: a draw of weight 0
		}
		row := []float64{logP, logG}
		if row, err = d.Draw(row, point, gq); err != nil {
			return fail(fmt.Errorf("draw %d: %w", k+1, err))
		}
		rows = append(rows, row)
	}
	lines := []string{methodArg(1, "laplace", nil),
		methodArg(2, "mode", *mode),
		methodArg(2, "jacobian", *jacobian),
		methodArg(2, "draws", *draws),
		methodArg(2, "calculate_lp", true)}
	path, err := r.write(r.header(lines, []string{"log_p__", "log_g__"}), rows, nil)
	if err != nil {
		return fail(err)
	}
	if release() {
		fmt.Fprintf(stderr, "shm laplace: interrupted after the run: its file is complete (%s)\n", path)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// laplaceMode returns the mode on the unconstrained scale: read from the
// optimize output file path (its parameters' columns, its jacobian
// setting the same as the run's), or found by L-BFGS.
func laplaceMode(ctx context.Context, d *runtime.Density, r *methodRun, path string, jacobian bool, stderr io.Writer) ([]float64, error) {
	if path == "" {
		opts := optimize.DefaultOptions()
		table := &optimizeTable{w: stderr, refresh: r.flags.refresh, alg: opts.Algorithm}
		opts.Progress = table.progress
		res, err := optimize.Maximize(ctx, d, r.init, opts)
		table.finish()
		if err != nil {
			return nil, fmt.Errorf("finding the mode: %w", err)
		}
		return res.X, nil
	}
	f, err := interruptible(ctx, func() (*stancsv.File, error) { return stancsv.ReadFile(path) })
	if err != nil {
		return nil, fmt.Errorf("--mode: %w", err)
	}
	if m := f.Method(); m != "optimize" {
		return nil, fmt.Errorf("--mode %s is the output of %s, not of optimize", path, m)
	}
	if err := sameFit(f, "--mode "+path, r); err != nil {
		return nil, err
	}
	if j, ok := f.Config["jacobian"]; ok {
		if v, err := strconv.ParseBool(j); err == nil && v != jacobian {
			return nil, fmt.Errorf("--mode %s was found with jacobian = %s, and this run has --jacobian=%t: the mode is of another density", path, j, jacobian)
		}
	}
	if len(f.Draws) != 1 {
		return nil, fmt.Errorf("--mode %s has %d rows, want the one of an optimization", path, len(f.Draws))
	}
	byColumn := map[string]float64{}
	for j, c := range f.Columns {
		byColumn[c] = f.Draws[0][j]
	}
	if err := finitePoint("--mode "+path, r.bm, byColumn); err != nil {
		return nil, err
	}
	if _, _, err := paramIndexes(r.bm, f, "--mode "+path, r.model); err != nil {
		return nil, err
	}
	theta, err := r.bm.UnconstrainColumns(byColumn)
	if err != nil {
		return nil, fmt.Errorf("--mode %s: %w", path, err)
	}
	return theta, nil
}
