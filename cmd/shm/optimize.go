package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/runtime/optimize"
)

// optimizeFlags are the options of "shm optimize", CmdStan's optimize
// method's arguments.
type optimizeFlags struct {
	methodFlags
	algorithm string
	jacobian  bool
	opts      optimize.Options
}

func (f *optimizeFlags) register(fs *flag.FlagSet) {
	f.methodFlags.register(fs)
	f.opts = optimize.DefaultOptions()
	fs.StringVar(&f.algorithm, "algorithm", "lbfgs", "lbfgs, bfgs or newton")
	fs.BoolVar(&f.jacobian, "jacobian", false, "include the Jacobian of the constraining transforms: the mode on the unconstrained scale (default: the MAP, or penalized maximum likelihood)")
	fs.IntVar(&f.opts.Iter, "iter", f.opts.Iter, "maximum number of iterations")
	o := &f.opts
	registerLBFGS(fs, &o.InitAlpha, &o.TolObj, &o.TolRelObj, &o.TolGrad, &o.TolRelGrad, &o.TolParam, "first step length of the line search (lbfgs, bfgs)")
	fs.IntVar(&f.opts.HistorySize, "history-size", f.opts.HistorySize, "update pairs kept by lbfgs")
}

// validate checks the flags, naming the first bad one with its value.
func (f *optimizeFlags) validate(set map[string]bool) error {
	if err := f.methodFlags.validate(set); err != nil {
		return err
	}
	alg, err := optimize.ParseAlgorithm(f.algorithm)
	if err != nil {
		return fmt.Errorf("--algorithm must be lbfgs, bfgs or newton, got %q", f.algorithm)
	}
	f.opts.Algorithm = alg
	if f.opts.Iter > maxCount {
		return fmt.Errorf("--iter is %d, at most %d", f.opts.Iter, maxCount)
	}
	if f.opts.HistorySize > maxHistory {
		return fmt.Errorf("--history-size is %d, at most %d", f.opts.HistorySize, maxHistory)
	}
	if err := f.opts.Validate(); err != nil {
		return flagNames(err)
	}
	return nil
}

// cmdOptimize implements "shm optimize model.shm data...": a posterior
// mode (or, with --jacobian, the mode on the unconstrained scale) by
// L-BFGS, BFGS or Newton's method, written as CmdStan's optimize method
// writes it: one row, lp__ first (the log density with its constants).
func cmdOptimize(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("optimize", stderr)
	var f optimizeFlags
	f.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) < 1 {
		fmt.Fprintln(stderr, "usage: shm optimize model.shm [data...] [--algorithm lbfgs|bfgs|newton --jacobian --iter N --init ... --seed N --output DIR ...]")
		return 2
	}
	if err := f.validate(setFlags(fs)); err != nil {
		fmt.Fprintf(stderr, "shm optimize: %v\n", err)
		return 2
	}
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "shm optimize: interrupted; no output written")
			return 1
		}
		return report(stderr, err)
	}
	r, err := startMethod(ctx, "optimize", pos, &f.methodFlags, stderr)
	if err != nil {
		return fail(err)
	}
	d, err := r.bm.NewDensity()
	if err != nil {
		return fail(err)
	}
	d.Jacobian, d.Constants = f.jacobian, true
	// BFGS keeps an n×n inverse Hessian; Newton's method a Hessian, its
	// finite differences and eigenvectors.
	if copies := map[optimize.Algorithm]int{optimize.BFGS: 1, optimize.Newton: 6}[f.opts.Algorithm]; copies > 0 {
		n := r.bm.Dim()
		if words, over := sysmem.Exceeds(copies*n, n); over {
			return fail(fmt.Errorf("--algorithm %s with %d parameters needs %s (%d×%d matrices), %s: use lbfgs", f.algorithm, n, sysmem.Bytes(8*words), n, n, sysmem.Beyond()))
		}
	}
	opts := f.opts
	table := &optimizeTable{w: stderr, refresh: f.refresh, alg: f.opts.Algorithm}
	opts.Progress = table.progress
	// Newton's eigendecompositions cannot stop: a signal ends the
	// command at once, leaving them to the exiting process.
	type outcome struct {
		res *optimize.Result
		err error
	}
	o, err := interruptible(ctx, func() (outcome, error) {
		res, err := optimize.Maximize(ctx, d, r.init, opts)
		return outcome{res, err}, nil
	})
	if ctx.Err() != nil || err != nil {
		return fail(ctx.Err())
	}
	res, runErr := o.res, o.err
	table.finish()
	if res == nil {
		if term := d.NonFiniteTerm(); term != nil {
			runErr = fmt.Errorf("%w (%v)", runErr, term)
		}
		return fail(fmt.Errorf("%w; give --init inside the support", runErr))
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "Optimization terminated with error: ")
		fmt.Fprintf(stderr, "  %v\n", runErr)
	} else {
		fmt.Fprintln(stderr, "Optimization terminated normally: ")
		fmt.Fprintf(stderr, "  %s\n", res.Message)
	}
	row := []float64{res.LogDensity}
	gq := rand.New(rand.NewPCG(f.seed, 1<<32|0x6a))
	if row, err = d.Draw(row, res.X, gq); err != nil {
		return fail(fmt.Errorf("at the optimum: %w", err))
	}
	header := r.header(optimizeArgs(&f), []string{"lp__"})
	var notes []string
	if runErr != nil {
		notes = []string{"Optimization terminated with error: " + runErr.Error() + " (the row is the last iterate, not an optimum)"}
	}
	path, err := r.write(header, [][]float64{row}, notes)
	if err != nil {
		return fail(err)
	}
	if release() {
		fmt.Fprintf(stderr, "shm optimize: interrupted after the run: its file is complete (%s)\n", path)
		return 1
	}
	printOptimum(stdout, append(header.MethodColumns, r.bm.Columns()...), row)
	fmt.Fprintf(stdout, "\nwritten to %s\n", path)
	if runErr != nil {
		fmt.Fprintf(stderr, "shm optimize: %v: %s holds the last iterate\n", runErr, path)
		return 1
	}
	return 0
}

// maxHistory bounds --history-size: L-BFGS keeps two vectors per pair
// (Stan's default is 5; beyond a few hundred the pairs only cost).
const maxHistory = 1000

// flagNames rewrites the optimizer's option names (tol_rel_grad, after
// the packages' prefixes "pathfinder: optimize: ") as the command's flags
// (--tol-rel-grad).
func flagNames(err error) error {
	msg := err.Error()
	for _, name := range []string{"init_alpha", "tol_obj", "tol_rel_obj", "tol_grad", "tol_rel_grad", "tol_param", "history_size", "iter"} {
		i := strings.Index(msg, name+" = ")
		if i >= 0 && (i == 0 || strings.HasSuffix(msg[:i], ": ")) {
			return errors.New("--" + strings.ReplaceAll(name, "_", "-") + msg[i+len(name):])
		}
	}
	return err
}

// optimizeArgs are the header lines of an optimize run's arguments.
func optimizeArgs(f *optimizeFlags) []string {
	o := f.opts
	lines := []string{methodArg(1, "optimize", nil), methodArg(2, "algorithm", o.Algorithm.String())}
	if o.Algorithm != optimize.Newton {
		lines = append(lines, methodArg(3, o.Algorithm.String(), nil),
			methodArg(4, "init_alpha", o.InitAlpha),
			methodArg(4, "tol_obj", o.TolObj),
			methodArg(4, "tol_rel_obj", o.TolRelObj),
			methodArg(4, "tol_grad", o.TolGrad),
			methodArg(4, "tol_rel_grad", o.TolRelGrad),
			methodArg(4, "tol_param", o.TolParam))
		if o.Algorithm == optimize.LBFGS {
			lines = append(lines, methodArg(4, "history_size", o.HistorySize))
		}
	}
	return append(lines,
		methodArg(2, "jacobian", f.jacobian),
		methodArg(2, "iter", o.Iter),
		methodArg(2, "save_iterations", false))
}

// optimizeTable prints CmdStan's table of an optimization's iterations:
// the initial log density, every refresh-th iteration and the last (none
// for refresh 0).
type optimizeTable struct {
	w       io.Writer
	refresh int
	alg     optimize.Algorithm
	last    optimize.Progress
	printed bool // whether last is printed
	started bool // whether there is a last
}

// progress is the optimizer's Progress callback.
func (t *optimizeTable) progress(p optimize.Progress) error {
	if t.refresh == 0 {
		return nil
	}
	t.last, t.printed = p, false
	t.started = true
	if p.Iter == 0 {
		fmt.Fprintf(t.w, "Initial log joint probability = %.6g\n", p.LogDensity)
		if t.alg == optimize.Newton {
			fmt.Fprintln(t.w, "    Iter      log prob        ||dx||      ||grad||  # evals")
		} else {
			fmt.Fprintln(t.w, "    Iter      log prob        ||dx||      ||grad||       alpha      alpha0  # evals  Notes ")
		}
		t.printed = true
		return nil
	}
	if p.Iter%t.refresh == 0 {
		t.print()
	}
	return nil
}

// finish prints the last iteration, unless it is printed.
func (t *optimizeTable) finish() {
	if t.refresh > 0 && t.started && !t.printed {
		t.print()
	}
}

func (t *optimizeTable) print() {
	p := t.last
	if t.alg == optimize.Newton {
		fmt.Fprintf(t.w, "%8d  %12.6g  %12.6g  %12.6g  %7d\n", p.Iter, p.LogDensity, p.StepNorm, p.GradNorm, p.Evals)
	} else {
		fmt.Fprintf(t.w, "%8d  %12.6g  %12.6g  %12.6g  %10.6g  %10.6g  %7d  %s\n", p.Iter, p.LogDensity, p.StepNorm, p.GradNorm, p.Alpha, p.Alpha0, p.Evals, p.Note)
	}
	t.printed = true
}

// printOptimum prints the row's first columns (those of the method,
// then the model's), one per line, on w: at most maxPrinted of them.
func printOptimum(w io.Writer, columns []string, row []float64) {
	const maxPrinted = 40
	width := 0
	for _, c := range columns[:min(len(columns), maxPrinted)] {
		width = max(width, len(c))
	}
	for i, c := range columns[:min(len(columns), len(row), maxPrinted)] {
		fmt.Fprintf(w, "%-*s  %.6g\n", width, c, row[i])
	}
	if len(columns) > maxPrinted {
		fmt.Fprintf(w, "... and %d more columns\n", len(columns)-maxPrinted)
	}
}
