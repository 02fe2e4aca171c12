package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shmlang/shm/calibrate"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
)

// budgetFlags are the options of "shm calibrate iters" and "crn": the
// model's data, the points at which budgets are compared, the budgets.
type budgetFlags struct {
	at, draws stringList
	sets      setList
	points    int
	seed      uint64
	list      string
	ref       int
}

func (f *budgetFlags) register(fs *flag.FlagSet, listName, listHelp string) {
	fs.Var(&f.at, "at", "a point: parameter values name=value,... or a JSON file (repeatable)")
	fs.Var(&f.draws, "draws", "Stan CSV file of a pilot run whose draws are the points (repeatable)")
	fs.IntVar(&f.points, "points", 10, "with --draws: the number of draws taken, evenly spaced")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of transformed data's draws and of the crn replicates")
	fs.StringVar(&f.list, listName, "", listHelp)
	fs.Var(&f.sets, "set", "data value name=value (repeatable)")
}

// budgets returns the distinct integers of the budget list, each at
// least least (why says why), and checks the points' flags (set: the
// flags given).
func (f *budgetFlags) budgets(name string, least int, why string, set map[string]bool) ([]int, error) {
	if f.list == "" {
		return nil, fmt.Errorf("--%s is required", name)
	}
	var out []int
	for _, s := range strings.Split(f.list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case err != nil || n < 1:
			return nil, fmt.Errorf("--%s: %q is not a positive integer", name, s)
		case n < least:
			return nil, fmt.Errorf("--%s: %d is below %d: %s", name, n, least, why)
		case slices.Contains(out, n):
			return nil, fmt.Errorf("--%s: %d is given twice", name, n)
		}
		out = append(out, n)
	}
	switch {
	case len(f.at) == 0 && len(f.draws) == 0:
		return nil, errors.New("give the points: --at name=value,... (repeatable) or --draws pilot.csv")
	case set["points"] && len(f.draws) == 0:
		return nil, errors.New("--points needs --draws: it is the number of a pilot run's draws taken as points (--at gives each point)")
	case len(f.draws) > 0 && f.points < 1:
		return nil, fmt.Errorf("--points must be at least 1, got %d", f.points)
	}
	return out, nil
}

// budgetBinder binds the model with the given budget overrides.
type budgetBinder func(opts runtime.Options) (*runtime.Model, error)

func newBudgetBinder(ctx context.Context, model string, files []string, f *budgetFlags) budgetBinder {
	return func(opts runtime.Options) (*runtime.Model, error) {
		m, err := checkModelContext(ctx, model)
		if err != nil {
			return nil, err
		}
		set, err := data.Load(files, f.sets)
		if err != nil {
			return nil, err
		}
		opts.Impls, opts.Print, opts.Seed, opts.DataFiles, opts.Context = builtins(), io.Discard, f.seed, files, ctx
		return runtime.Bind(m, set, opts)
	}
}

// budgetPoints returns the unconstrained points the flags give. Draws
// of another model (other columns) are refused; draws whose header names
// another model, with the model's columns, are warned about.
func budgetPoints(ctx context.Context, bm *runtime.Model, f *budgetFlags, warn io.Writer) ([][]float64, error) {
	var out [][]float64
	for _, at := range f.at {
		set, err := loadPoint("--at", at)
		if err != nil {
			return nil, err
		}
		if err := checkPoint("--at", set, bm, true); err != nil {
			return nil, err
		}
		theta, err := bm.Unconstrain(set, nil, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, theta)
	}
	if len(f.draws) > 0 {
		// Read in the background: a large file stops at a signal.
		fit, err := interruptible(ctx, func() (*diag.Fit, error) { return stancsv.ReadFit(f.draws...) })
		if err != nil {
			return nil, err
		}
		if err := checkDrawsModel(bm, fit.Model, fit.Columns, strings.Join(f.draws, ", "), warn); err != nil {
			return nil, err
		}
		var rows [][]float64
		for _, c := range fit.Chains {
			rows = append(rows, c.Draws...)
		}
		n := min(max(f.points, 1), len(rows))
		for i := 0; i < n; i++ {
			row := rows[i*len(rows)/n]
			byCol := map[string]float64{}
			for j, c := range fit.Columns {
				byCol[c] = row[j]
			}
			theta, err := bm.UnconstrainColumns(byCol)
			if err != nil {
				return nil, fmt.Errorf("--draws: %w", err)
			}
			out = append(out, theta)
		}
	}
	return out, nil
}

// checkDrawsModel returns an error unless the columns of a chain file
// (its sampler's columns, ending in __, aside) are the model's output
// columns, and warns when its header names another model (name is the
// header's "model", which CmdStan writes as the file's name + "_model").
func checkDrawsModel(bm *runtime.Model, name string, columns []string, files string, warn io.Writer) error {
	var got []string
	for _, c := range columns {
		if !strings.HasSuffix(c, "__") {
			got = append(got, c)
		}
	}
	want := bm.Columns()
	other := ""
	if name != "" && name != bm.IR.Name && name != bm.IR.Name+"_model" {
		other = fmt.Sprintf(" (its header says model = %s; the model is %s)", name, bm.IR.Name)
	}
	if !slices.Equal(got, want) {
		for _, c := range want {
			if !slices.Contains(got, c) {
				return fmt.Errorf("--draws %s: no column %s: the draws are not the model's%s", files, c, other)
			}
		}
		for _, c := range got {
			if !slices.Contains(want, c) {
				return fmt.Errorf("--draws %s: the column %s is not an output of the model: the draws are not the model's%s", files, c, other)
			}
		}
		return fmt.Errorf("--draws %s: its columns are not the model's, in its order (%s): the draws are not the model's%s", files, strings.Join(want, ", "), other)
	}
	if other != "" {
		fmt.Fprintf(warn, "warning: --draws %s%s: the columns are the model's, the draws are taken\n", files, other)
	}
	return nil
}

// evaluation is a log density and its gradient at one point.
type evaluation struct {
	lp   float64
	grad []float64
}

// evaluate returns the log density and gradient at every point and the
// time per gradient (the median of the given number of passes over the
// points).
func evaluate(bm *runtime.Model, points [][]float64, passes int) ([]evaluation, time.Duration, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return nil, 0, err
	}
	return evaluateDensity(d, points, passes)
}

// evaluateDensity is evaluate on a density the caller made.
func evaluateDensity(d *runtime.Density, points [][]float64, passes int) ([]evaluation, time.Duration, error) {
	out := make([]evaluation, len(points))
	var times []time.Duration
	for range max(passes, 1) {
		start := time.Now()
		for i, th := range points {
			g := make([]float64, len(th))
			lp, err := d.LogDensityGrad(th, g)
			if err != nil {
				return nil, 0, fmt.Errorf("point %d: %w", i+1, err)
			}
			out[i] = evaluation{lp, g}
		}
		times = append(times, time.Since(start)/time.Duration(len(points)))
	}
	slices.Sort(times)
	return out, times[len(times)/2], nil
}

// deltas returns the paper's Δ_S and Δ_∇ on the log density at each
// point: |lp − lp_ref| and ‖∇lp − ∇lp_ref‖ / max(1, ‖∇lp_ref‖).
func deltas(got, want []evaluation) (dlp, dgr []float64) {
	for i := range got {
		dlp = append(dlp, math.Abs(got[i].lp-want[i].lp))
		diff, norm := 0.0, 0.0
		for j := range got[i].grad {
			diff += (got[i].grad[j] - want[i].grad[j]) * (got[i].grad[j] - want[i].grad[j])
			norm += want[i].grad[j] * want[i].grad[j]
		}
		dgr = append(dgr, math.Sqrt(diff)/math.Max(1, math.Sqrt(norm)))
	}
	return dlp, dgr
}

// itersRow compares the iteration budget T with the reference: the
// paper's Δ_S and Δ_∇ on the log density the sampler sees, at each point
// (|lp_T − lp_ref| and ‖∇lp_T − ∇lp_ref‖ / max(1, ‖∇lp_ref‖); the loss
// enters the log density as −eta·S̄, so Δ_S is the first over eta).
type itersRow struct {
	T                int
	DeltaLP, DeltaGr []float64 // by point
	PerGradient      time.Duration
}

// itersTable evaluates the model at each budget and the reference.
func itersTable(bind budgetBinder, points func(*runtime.Model) ([][]float64, error), budgets []int, ref int) ([]itersRow, error) {
	bmRef, err := bind(runtime.Options{SinkhornIters: ref})
	if err != nil {
		return nil, err
	}
	if err := checkIterative(bmRef.IR); err != nil {
		return nil, err
	}
	pts, err := points(bmRef)
	if err != nil {
		return nil, err
	}
	want, _, err := evaluate(bmRef, pts, 1)
	if err != nil {
		return nil, fmt.Errorf("at the reference budget T = %d: %w", ref, err)
	}
	var rows []itersRow
	for _, T := range budgets {
		bm, err := bind(runtime.Options{SinkhornIters: T})
		if err != nil {
			return nil, err
		}
		got, per, err := evaluate(bm, pts, 3)
		if err != nil {
			return nil, fmt.Errorf("with iters = %d: %w", T, err)
		}
		r := itersRow{T: T, PerGradient: per}
		r.DeltaLP, r.DeltaGr = deltas(got, want)
		rows = append(rows, r)
	}
	return rows, nil
}

// checkIterative returns an error when the model has no call whose
// iteration budget reaches the log density, or only calls with a
// tolerance (for which another iteration count would only change the
// cap): budgets compared on such a model would all print zeros.
func checkIterative(m *ir.Model) error {
	if len(m.Iterative) == 0 {
		return fmt.Errorf("%s has no sinkhorn call whose iterations reach the log density: there is no budget to compare", m.File)
	}
	if slices.ContainsFunc(m.Iterative, func(c *ir.Call) bool { return !converged(c) }) {
		return nil
	}
	return fmt.Errorf("every sinkhorn call of %s has tol = ...: --iters would only change their cap (shm sample's report compares each against tol / 5)", m.File)
}

// crnRow is the Monte Carlo error of the averaged loss with K replicates.
type crnRow struct {
	K           int
	Call        string    // the crn call's position
	VarMean     []float64 // Var̂[S̄_K] by point
	PerGradient time.Duration
}

// crnTable evaluates the model's crn calls with each K.
func crnTable(bind budgetBinder, points func(*runtime.Model) ([][]float64, error), ks []int) ([]crnRow, error) {
	var rows []crnRow
	var pts [][]float64
	for _, k := range ks {
		bm, err := bind(runtime.Options{CRNReplicates: k})
		if err != nil {
			return nil, err
		}
		if len(bm.IR.CRNs) == 0 {
			return nil, errors.New("the model has no crn(K, ...) call")
		}
		if pts == nil {
			if pts, err = points(bm); err != nil {
				return nil, err
			}
		}
		_, per, err := evaluate(bm, pts, 3)
		if err != nil {
			return nil, fmt.Errorf("with crn K = %d: %w", k, err)
		}
		d, err := bm.NewDensity()
		if err != nil {
			return nil, err
		}
		byCall := map[string]*crnRow{}
		var order []string
		for i, th := range pts {
			stats, err := d.CRNStats(th)
			if err != nil {
				return nil, fmt.Errorf("with crn K = %d, point %d: %w", k, i+1, err)
			}
			for _, s := range stats {
				pos := bm.IR.File + ":" + s.Call.Position().String()
				r := byCall[pos]
				if r == nil {
					r = &crnRow{K: k, Call: pos, PerGradient: per}
					byCall[pos] = r
					order = append(order, pos)
				}
				r.VarMean = append(r.VarMean, s.VarMean)
			}
		}
		for _, pos := range order {
			rows = append(rows, *byCall[pos])
		}
	}
	return rows, nil
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func cmdCalibrateIters(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("calibrate iters", stderr)
	var f budgetFlags
	f.register(fs, "iters", "iteration budgets T to compare, e.g. 20,40,80 (comma-separated)")
	fs.IntVar(&f.ref, "ref", 0, "the reference budget T_ref (default: 5 times the largest T)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	set := setFlags(fs)
	budgets, err := f.budgets("iters", 1, "", set)
	if err == nil && set["ref"] && f.ref < 1 {
		err = fmt.Errorf("--ref must be a positive integer, got %d (leave it out for 5 times the largest T)", f.ref)
	}
	if err == nil && len(pos) < 1 {
		err = errors.New("usage: shm calibrate iters model.shm [data...] --iters 20,40,80 (--at ... | --draws pilot.csv)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "shm calibrate iters: %v\n", err)
		return 2
	}
	if f.ref == 0 {
		f.ref = 5 * slices.Max(budgets)
	}
	if f.ref <= slices.Max(budgets) {
		fmt.Fprintf(stderr, "shm calibrate iters: --ref %d must exceed every budget of --iters (the largest is %d): it is the converged reference\n", f.ref, slices.Max(budgets))
		return 2
	}
	bind := newBudgetBinder(ctx, pos[0], pos[1:], &f)
	rows, err := itersTable(bind, func(bm *runtime.Model) ([][]float64, error) { return budgetPoints(ctx, bm, &f, stderr) }, budgets, f.ref)
	if err != nil {
		return reportStop(ctx, stderr, "calibrate iters")(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Sinkhorn iterations against T_ref = %d at %d point(s): Δ_lp = |lp_T − lp_ref| (eta·Δ_S), Δ_∇ = ‖∇_T − ∇_ref‖ / max(1, ‖∇_ref‖)\n", f.ref, len(rows[0].DeltaLP))
	fmt.Fprintln(tw, "T\tmax Δ_lp\tmedian Δ_lp\tmax Δ_∇\tmedian Δ_∇\tms/gradient\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.3g\t%.3g\t%.3g\t%.3g\t%.2f\t\n", r.T, slices.Max(r.DeltaLP), median(r.DeltaLP),
			slices.Max(r.DeltaGr), median(r.DeltaGr), float64(r.PerGradient.Microseconds())/1000)
	}
	if err := tw.Flush(); err != nil {
		return report(stderr, err)
	}
	return 0
}

func cmdCalibrateCRN(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("calibrate crn", stderr)
	var f budgetFlags
	f.register(fs, "k", "numbers of replicates K to compare, each at least 2, e.g. 2,4,8 (comma-separated)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	ks, err := f.budgets("k", 2, "Var[S̄_K] is estimated from the spread of the K replicates, and one replicate has none", setFlags(fs))
	if err == nil && len(pos) < 1 {
		err = errors.New("usage: shm calibrate crn model.shm [data...] --k 2,4,8 (--at ... | --draws pilot.csv)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "shm calibrate crn: %v\n", err)
		return 2
	}
	bind := newBudgetBinder(ctx, pos[0], pos[1:], &f)
	rows, err := crnTable(bind, func(bm *runtime.Model) ([][]float64, error) { return budgetPoints(ctx, bm, &f, stderr) }, ks)
	if err != nil {
		return reportStop(ctx, stderr, "calibrate crn")(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Common random numbers at %d point(s): Var[S̄_K] = Σ_k (S_k − S̄_K)² / (K (K − 1)), the variance of the averaged loss\n", len(rows[0].VarMean))
	fmt.Fprintln(tw, "crn call\tK\tmedian Var[S̄_K]\tmax Var[S̄_K]\tmedian sd\tms/gradient\tms/replicate\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.3g\t%.3g\t%.3g\t%.2f\t%.2f\t\n", r.Call, r.K, median(r.VarMean), slices.Max(r.VarMean),
			math.Sqrt(median(r.VarMean)), float64(r.PerGradient.Microseconds())/1000, float64(r.PerGradient.Microseconds())/1000/float64(r.K))
	}
	if err := tw.Flush(); err != nil {
		return report(stderr, err)
	}
	return 0
}

func cmdCalibrateEps(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("calibrate eps", stderr)
	var y string
	var noise, alpha float64
	var sets setList
	fs.StringVar(&y, "y", "", "the observed points: a data value, a vector or an N×d matrix (required)")
	fs.Float64Var(&noise, "noise", math.NaN(), "the known measurement noise (rule 1)")
	fs.Float64Var(&alpha, "alpha", 1, "the scale knob alpha of eps = (alpha h)^2")
	fs.Var(&sets, "set", "data value name=value (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	noiseSet := setFlags(fs)["noise"]
	switch {
	case y == "":
		fmt.Fprintln(stderr, "usage: shm calibrate eps data... --y NAME [--noise SIGMA] [--alpha 1]")
		return 2
	case !finitePositive(alpha):
		fmt.Fprintf(stderr, "shm calibrate eps: --alpha must be positive and finite, got %g\n", alpha)
		return 2
	case noiseSet && !finitePositive(noise):
		fmt.Fprintf(stderr, "shm calibrate eps: --noise must be positive and finite, got %g\n", noise)
		return 2
	}
	if len(pos) == 0 {
		fmt.Fprintf(stderr, "shm calibrate eps: no data file given: --y %s names a value of the data files (shm calibrate eps data... --y NAME)\n", y)
		return 2
	}
	set, err := interruptible(ctx, func() (*data.Set, error) { return data.Load(pos, sets) })
	if ctx.Err() != nil {
		return stopStatus(stderr, "calibrate eps")
	}
	if err != nil {
		return report(stderr, err)
	}
	v, ok := set.Lookup(y)
	if !ok {
		return report(stderr, fmt.Errorf("--y %s: no data value %s in %s (their values: %s)", y, y, strings.Join(pos, ", "), listOrNone(set.Names())))
	}
	n, d := 0, 1
	switch len(v.Dims) {
	case 1:
		n = v.Dims[0]
	case 2:
		n, d = v.Dims[0], v.Dims[1]
	default:
		return report(stderr, fmt.Errorf("%s: want a vector or an N×d matrix of points, got sizes %v", y, v.Dims))
	}
	r, err := interruptible(ctx, func() (calibrate.Resolution, error) { return calibrate.Resolve(v.Data, n, d, noise) })
	if ctx.Err() != nil {
		return stopStatus(stderr, "calibrate eps")
	}
	if err == nil {
		err = r.Check(alpha)
	}
	if err != nil {
		return report(stderr, fmt.Errorf("%s: %w", y, err))
	}
	fmt.Fprintf(stdout, "Data resolution of %s (%d points in %d dimension(s)):\n%s", y, n, d, r.Table(alpha))
	return 0
}
