package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shmlang/shm/calibrate"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/nuts"
)

const calibrateUsage = `usage:
  shm calibrate lambda model.shm [data...] --dir DIR (known truth or bootstrap) [flags]
      known truth:  --truth c0=0.3,kappa=0.15 and either --generate R --replicate y=y_rep
                    (datasets drawn by the model's generated quantities at the truth)
                    or --datasets a.json,b.json (datasets given as data files)
      bootstrap:    --bootstrap B --resample y [--lambda0 1]
                    (the truth is estimated by the best draw of a run at lambda0)
  shm calibrate iters model.shm [data...] --iters 20,40,80 [--ref 400] (--at name=value,... | --draws pilot.csv)
      the paper's Δ_S and Δ_∇ of each iteration budget against the reference
  shm calibrate crn model.shm [data...] --k 2,4,8 (--at ... | --draws pilot.csv)
      the variance of the crn-averaged loss and the time per replicate for each K
  shm calibrate eps data... --y NAME [--noise SIGMA] [--alpha 1]
      the data resolution h by the paper's three rules, and eps = (alpha h)^2
  shm calibrate task DIR ROUND.json --index I   (one array task of a Slurm job array: its runs)
`

// cmdCalibrate implements "shm calibrate".
func cmdCalibrate(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, calibrateUsage)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stdout, calibrateUsage)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "lambda":
		return cmdCalibrateLambda(ctx, args[1:], stdout, stderr)
	case "task":
		return cmdCalibrateTask(ctx, args[1:], stderr)
	case "iters":
		return cmdCalibrateIters(ctx, args[1:], stdout, stderr)
	case "crn":
		return cmdCalibrateCRN(ctx, args[1:], stdout, stderr)
	case "eps":
		return cmdCalibrateEps(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "shm calibrate: unknown procedure %q\n%s", args[0], calibrateUsage)
	return 2
}

// lambdaFlags are the options of "shm calibrate lambda".
type lambdaFlags struct {
	dir, param, truth, replicate, datasets, resample, region, lambdas, sbatch, hold string
	metric, estimate                                                                string
	generate, bootstrap, chains, warmup, samples, maxDepth, maxTemps, workers       int
	maxRunning, refresh, runsPerTask, warmWarmup                                    int
	seed                                                                            uint64
	level, target, start, factor, tol, delta, lambda0                               float64
	slurm, collect, exact                                                           bool
	set                                                                             map[string]bool // the flags given
	sets                                                                            setList
}

func (f *lambdaFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "folder of the calibration: its plan, datasets, each run's result and the tables (required)")
	fs.StringVar(&f.param, "param", "lambda", "data variable that holds the loss scale")
	fs.StringVar(&f.truth, "truth", "", "known truth: parameter values name=value,... (or a JSON file), or a CSV file with a truth per dataset (a row per --datasets file)")
	fs.IntVar(&f.generate, "generate", 0, "known truth: number of datasets drawn at the truth by the model's generated quantities")
	fs.StringVar(&f.replicate, "replicate", "", "with --generate: data=generated pairs, e.g. y=y_rep (comma-separated)")
	fs.StringVar(&f.datasets, "datasets", "", "known truth: data files or glob patterns, one file per dataset (comma-separated); their values replace the data's")
	fs.IntVar(&f.bootstrap, "bootstrap", 0, "unknown truth: number of bootstrap datasets")
	fs.StringVar(&f.resample, "resample", "", "with --bootstrap: data values whose rows are resampled together (comma-separated)")
	fs.StringVar(&f.hold, "hold", "", "transformed data variables that keep, in every run, their value on the data as given (comma-separated), e.g. eps")
	fs.Float64Var(&f.lambda0, "lambda0", 1, "with --bootstrap: the loss scale of the run that estimates the truth")
	fs.StringVar(&f.estimate, "estimate", "draw", "with --bootstrap: the estimate of the truth: draw (the draw of highest density of a run at --lambda0) or optimize (the mode, by L-BFGS)")
	fs.StringVar(&f.region, "region", "hpd", "credible region: hpd (the paper's threshold on the log density) or ellipse (Gaussian)")
	fs.Float64Var(&f.level, "level", 0.9, "credibility of the region")
	fs.Float64Var(&f.target, "target", 0.9, "coverage to reach")
	fs.StringVar(&f.lambdas, "lambdas", "", "a grid of loss scales to evaluate instead of the search (comma-separated)")
	fs.Float64Var(&f.start, "start", 1, "search: first loss scale")
	fs.Float64Var(&f.factor, "factor", 4, "search: step factor until the target coverage is bracketed")
	fs.Float64Var(&f.tol, "tol", 0.05, "search: relative width of the final bracket")
	fs.IntVar(&f.maxTemps, "max-temps", 12, "search: most loss scales evaluated")
	fs.IntVar(&f.chains, "chains", 1, "chains per run")
	fs.IntVar(&f.warmup, "warmup", 500, "warmup iterations per chain")
	fs.IntVar(&f.samples, "samples", 300, "sampling iterations per chain")
	fs.IntVar(&f.maxDepth, "max-depth", 10, "maximum tree depth")
	fs.Float64Var(&f.delta, "adapt-delta", 0.8, "target acceptance statistic")
	fs.StringVar(&f.metric, "metric", "diag", "metric: diag or dense")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed: datasets, runs and the search depend only on it")
	fs.IntVar(&f.workers, "workers", goruntime.NumCPU(), "runs at once on this machine")
	fs.IntVar(&f.refresh, "refresh", 100, "progress of every run's chains every refresh iterations (0: a line per finished run only)")
	fs.BoolVar(&f.slurm, "slurm", false, "run the tasks as Slurm job arrays (several runs per array task, arrays within MaxArraySize, cancelled when the calibration stops), one round per step of the search")
	fs.StringVar(&f.sbatch, "sbatch", "", "with --slurm: extra sbatch options, e.g. \"--partition=long --time=2:00:00\"")
	fs.IntVar(&f.maxRunning, "max-running", 0, "with --slurm: most array tasks running at once")
	fs.IntVar(&f.runsPerTask, "runs-per-task", 0, "with --slurm: runs per array task (default: about a minute of work, from the measured cost of the runs so far)")
	fs.BoolVar(&f.collect, "collect", false, "run nothing: the table from the results already in --dir")
	fs.BoolVar(&f.exact, "exact", false, "reuse nothing: every (lambda, dataset) a run with full adaptation (the reference for the default fast path, which reweights runs to other scales and warm-starts runs)")
	fs.IntVar(&f.warmWarmup, "warm-warmup", calibrate.DefaultReuse().WarmWarmup, "warmup iterations of a warm-started run (not with --exact)")
	fs.Var(&f.sets, "set", "data value name=value (repeatable)")
}

// finitePositive reports whether x is a positive finite number.
func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

func (f *lambdaFlags) validate() error {
	known := f.truth != ""
	switch {
	case f.dir == "":
		return errors.New("--dir is required")
	case f.estimate != "draw" && f.estimate != "optimize":
		return fmt.Errorf("--estimate must be draw or optimize, got %q", f.estimate)
	case f.bootstrap < 0 || (f.set["bootstrap"] && f.bootstrap == 0):
		return fmt.Errorf("--bootstrap must be at least 1, got %d", f.bootstrap)
	case f.generate < 0 || (f.set["generate"] && f.generate == 0):
		return fmt.Errorf("--generate must be at least 1, got %d", f.generate)
	case known == (f.bootstrap > 0):
		return errors.New("give either --truth (known truth) or --bootstrap B (unknown truth)")
	case known && (f.generate > 0) == (f.datasets != ""):
		return errors.New("with --truth, give either --generate R --replicate y=y_rep or --datasets files")
	case f.generate > 0 && f.replicate == "":
		return errors.New("--generate needs --replicate data=generated, e.g. y=y_rep")
	case f.bootstrap > 0 && f.resample == "":
		return errors.New("--bootstrap needs --resample: the data values whose rows are resampled")
	case f.metric != "diag" && f.metric != "dense":
		return fmt.Errorf("--metric must be diag or dense, got %q", f.metric)
	case f.region != "hpd" && f.region != "ellipse":
		return fmt.Errorf("--region must be hpd or ellipse, got %q", f.region)
	case !(f.level > 0 && f.level < 1):
		return fmt.Errorf("--level must be in (0, 1), got %g", f.level)
	case !(f.target > 0 && f.target <= 1):
		return fmt.Errorf("--target must be in (0, 1], got %g", f.target)
	case f.chains < 1:
		return fmt.Errorf("--chains must be at least 1, got %d", f.chains)
	case f.samples < 1:
		return fmt.Errorf("--samples must be at least 1, got %d", f.samples)
	case f.warmup < 0:
		return fmt.Errorf("--warmup must be at least 0, got %d", f.warmup)
	case f.maxDepth < 1:
		return fmt.Errorf("--max-depth must be at least 1, got %d", f.maxDepth)
	case !(f.delta > 0 && f.delta < 1):
		return fmt.Errorf("--adapt-delta must be in (0, 1), got %g", f.delta)
	case !finitePositive(f.start):
		return fmt.Errorf("--start must be positive and finite, got %g", f.start)
	case !finitePositive(f.lambda0):
		return fmt.Errorf("--lambda0 must be positive and finite, got %g", f.lambda0)
	case !(f.factor > 1) || math.IsInf(f.factor, 1):
		return fmt.Errorf("--factor must be above 1 and finite, got %g", f.factor)
	case !finitePositive(f.tol):
		return fmt.Errorf("--tol must be positive and finite, got %g", f.tol)
	case f.maxTemps < 1:
		return fmt.Errorf("--max-temps must be at least 1, got %d", f.maxTemps)
	case f.workers < 1:
		return fmt.Errorf("--workers must be at least 1, got %d", f.workers)
	case f.generate > 100000 || f.bootstrap > 100000:
		return errors.New("at most 100000 datasets")
	case f.runsPerTask < 0:
		return fmt.Errorf("--runs-per-task must be at least 1 (or 0: the default), got %d", f.runsPerTask)
	case f.warmWarmup < 1:
		return fmt.Errorf("--warm-warmup must be at least 1, got %d", f.warmWarmup)
	case f.maxRunning < 0:
		return fmt.Errorf("--max-running must be at least 1 (or 0: no limit), got %d", f.maxRunning)
	}
	if err := f.checkModes(); err != nil {
		return err
	}
	if f.slurm && !f.collect {
		for _, tool := range calibrate.SlurmTools() {
			if _, err := exec.LookPath(tool); err != nil {
				return fmt.Errorf("--slurm: Slurm's %s is not on PATH (is this a Slurm login node?): %v", tool, err)
			}
		}
	}
	return nil
}

// checkModes refuses flags that conflict or that need a mode not asked
// for: a flag the calibration would silently ignore.
func (f *lambdaFlags) checkModes() error {
	// The ways of getting the datasets exclude each other.
	var sources []string
	for _, name := range []string{"generate", "datasets", "bootstrap"} {
		if f.set[name] {
			sources = append(sources, "--"+name)
		}
	}
	if len(sources) > 1 {
		return fmt.Errorf("%s and %s are two ways of getting the datasets: give one", sources[0], sources[1])
	}
	if f.set["bootstrap"] && f.set["truth"] {
		return errors.New("--bootstrap and --truth conflict: a bootstrap estimates the truth (unknown truth), --truth gives it (known truth)")
	}
	// Flags that need another flag.
	for _, need := range []struct{ flag, needs, what string }{
		{"replicate", "generate", "the datasets drawn by the generated quantities"},
		{"resample", "bootstrap", "the bootstrap's datasets"},
		{"lambda0", "bootstrap", "the bootstrap's estimate of the truth"},
		{"estimate", "bootstrap", "the bootstrap's estimate of the truth"},
		{"max-running", "slurm", "Slurm job arrays"},
		{"runs-per-task", "slurm", "Slurm job arrays"},
		{"sbatch", "slurm", "Slurm job arrays"},
	} {
		if f.set[need.flag] && !f.set[need.needs] {
			return fmt.Errorf("--%s needs --%s: it is a setting of %s", need.flag, need.needs, need.what)
		}
	}
	if f.set["warm-warmup"] && f.exact {
		return errors.New("--warm-warmup conflicts with --exact: --exact makes no warm-started run")
	}
	if f.lambdas != "" {
		for _, name := range []string{"start", "factor", "tol", "max-temps"} {
			if f.set[name] {
				return fmt.Errorf("--%s is a setting of the search, which --lambdas replaces by a grid: give one", name)
			}
		}
	}
	for _, s := range f.sets {
		name, _, _ := strings.Cut(s, "=")
		if strings.TrimSpace(name) == f.param {
			return fmt.Errorf("--set %s: %s is the loss scale (--param), which the calibration sets for every run: remove it", s, f.param)
		}
	}
	for _, list := range []struct{ flag, value string }{{"resample", f.resample}, {"hold", f.hold}} {
		if _, err := uniqueNames("--"+list.flag, list.value); err != nil {
			return err
		}
	}
	if f.replicate != "" {
		if _, err := f.replicates(); err != nil {
			return err
		}
	}
	return nil
}

// uniqueNames splits a comma-separated list of names, refusing an empty
// or repeated name.
func uniqueNames(flag, list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("%s %q: an empty name", flag, list)
		case slices.Contains(out, name):
			return nil, fmt.Errorf("%s %q: %s is given twice", flag, list, name)
		}
		out = append(out, name)
	}
	return out, nil
}

func cmdCalibrateLambda(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("calibrate lambda", stderr)
	var f lambdaFlags
	f.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) < 1 {
		fmt.Fprint(stderr, calibrateUsage)
		return 2
	}
	f.set = setFlags(fs)
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "shm calibrate lambda: %v\n", err)
		return 2
	}
	search := &calibrate.Search{Start: f.start, Target: f.target, Factor: f.factor, Tol: f.tol, MaxEvals: f.maxTemps}
	if f.lambdas != "" {
		for _, s := range strings.Split(f.lambdas, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !finitePositive(x) {
				fmt.Fprintf(stderr, "shm calibrate lambda: --lambdas: %q is not a positive finite number\n", s)
				return 2
			}
			if slices.Contains(search.Grid, x) {
				fmt.Fprintf(stderr, "shm calibrate lambda: --lambdas: %g is given twice\n", x)
				return 2
			}
			search.Grid = append(search.Grid, x)
		}
	}
	out, err := calibrateLambda(ctx, pos[0], pos[1:], &f, search, stderr)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "shm calibrate: interrupted; finished runs are kept in --dir, and a rerun resumes")
		return 1
	}
	if out != nil {
		if werr := out.WriteTable(stdout, f.target); werr != nil {
			return report(stderr, werr)
		}
		if werr := out.WriteCSV(calibrate.Dir(f.dir)); werr != nil {
			return report(stderr, werr)
		}
	}
	if err != nil {
		return report(stderr, err)
	}
	return 0
}

// calibrateLambda prepares the folder (plan, datasets) and runs the search.
func calibrateLambda(ctx context.Context, model string, files []string, f *lambdaFlags, search *calibrate.Search, stderr io.Writer) (*calibrate.Outcome, error) {
	dir := calibrate.Dir(f.dir)
	if f.collect {
		// --collect runs nothing and writes nothing: without a plan
		// there is nothing to collect.
		if _, err := dir.ReadPlan(); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--collect: %s holds no calibration (no plan.json): there are no results to collect", f.dir)
		} else if err != nil {
			return nil, err
		}
	}
	if _, err := dir.ReadPlan(); errors.Is(err, fs.ErrNotExist) {
		// A calibration writes, replaces and removes files in its folder:
		// not in one that holds other things.
		if entries, err := os.ReadDir(f.dir); err == nil && len(entries) > 0 {
			return nil, fmt.Errorf("--dir %s holds %s but no calibration (no plan.json): give a new or empty folder, as a calibration writes, replaces and removes files in it",
				f.dir, listFiles(entryNames(entries)))
		}
	}
	datasetFiles, err := expandFiles(f.datasets)
	if err != nil {
		return nil, err
	}
	// Hashing the inputs reads them whole (seconds for large files).
	plan, err := interruptible(ctx, func() (*calibrate.Plan, error) { return newPlan(model, files, f) })
	if err != nil {
		return nil, err
	}
	if f.datasets != "" {
		plan.Datasets = len(datasetFiles)
	}
	checked, err := checkModelContext(ctx, plan.Model)
	if err != nil {
		return nil, err
	}
	if err := checkLossScale(checked, plan.Param); err != nil {
		return nil, err
	}
	if err := checkDatasetFiles(checked, plan.Param, datasetFiles, stderr); err != nil {
		return nil, err
	}
	bind := planBinderChecked(plan, checked, f.workers)
	// The model bound to the data as given, at lambda0 (bootstrap) or at
	// the first scale: it lays out the parameters, draws the known-truth
	// datasets and, for a bootstrap, estimates the truth.
	lambda := f.start
	if f.bootstrap > 0 {
		lambda = f.lambda0
	}
	extra := []*data.Value{{Name: plan.Param, Data: []float64{lambda}}}
	if len(datasetFiles) > 0 {
		// Datasets given as files may hold all of the data (Experiment
		// D's images): bind with the first.
		values, err := data.ReadFile(datasetFiles[0])
		if err != nil {
			return nil, err
		}
		extra = append(values, extra...)
	}
	bm, err := bind(ctx, extra, plan.Seed)
	if err != nil {
		return nil, err
	}
	if err := checkDraws(bm, plan); err != nil {
		return nil, err
	}
	if f.hold != "" {
		// The bound model has the data as given: its values are held.
		names, err := uniqueNames("--hold", f.hold)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			v, err := bm.TransformedData(name)
			if err != nil {
				return nil, fmt.Errorf("--hold: %w", err)
			}
			plan.Hold = append(plan.Hold, calibrate.HeldValue{Name: v.Name, Dims: v.Dims, Data: v.Data, IsInt: v.IsInt})
		}
	}
	var pilot *calibrate.Posterior // the estimate's run
	switch {
	case strings.HasSuffix(strings.ToLower(strings.TrimSpace(f.truth)), ".csv"):
		if plan.DatasetTruth, err = datasetTruths(bm, f.truth, datasetFiles, stderr); err != nil {
			return nil, err
		}
	case f.truth != "":
		if plan.Truth, err = truthColumns(bm, f.truth); err != nil {
			return nil, err
		}
	case f.collect:
		old, err := dir.ReadPlan()
		if err != nil {
			return nil, err
		}
		plan.Truth = old.Truth
	default:
		if old, err := dir.ReadPlan(); err == nil && old.Truth != nil {
			plan.Truth = old.Truth // the estimate of an earlier run of this calibration
		} else {
			start := time.Now()
			fmt.Fprintf(stderr, "estimating the truth: a run at lambda %g on the data as given\n", f.lambda0)
			opts, stop := runMonitor(stderr, f.refresh, heartbeat, plan)("estimate")
			plan.Truth, pilot, err = plan.Estimate(ctx, bm, opts)
			stop()
			if err != nil {
				return nil, fmt.Errorf("estimating the truth: %w", err)
			}
			what := "the draw with the highest log density"
			if plan.EstimateBy == calibrate.EstimateOptimize {
				what = "the mode by L-BFGS"
			}
			fmt.Fprintf(stderr, "estimate (%s, %.1f s): %s\n", what, time.Since(start).Seconds(), columnsText(bm, plan.Truth))
		}
	}
	if f.generate > 0 {
		// Replicates that cannot replace their data are refused before
		// the folder holds anything.
		reps, err := f.replicates()
		if err == nil {
			err = calibrate.CheckReplicates(bm, plan.Truth, reps, plan.Seed)
		}
		if err != nil {
			return nil, err
		}
	}
	writePlan := dir.WritePlan
	if f.collect {
		writePlan = dir.CheckPlan // --collect writes nothing
	}
	if err := writePlan(plan); err != nil {
		return nil, err
	}
	if !f.collect {
		unlock, err := lockCalibration(f.dir)
		if err != nil {
			return nil, err
		}
		defer unlock()
		// The temporary files of a run killed during a write.
		if err := dir.RemoveStaleTemps(time.Minute); err != nil {
			return nil, err
		}
	}
	if pilot != nil && plan.Reuse != nil {
		// The estimate's adaptation starts the first scale's runs.
		if err := dir.WritePilot(f.lambda0, pilot); err != nil {
			return nil, err
		}
	}
	if f.collect {
		err = dir.CheckDatasets(plan)
	} else {
		err = writeDatasets(dir, plan, bm, f)
	}
	if err != nil {
		return nil, err
	}
	var runner calibrate.Runner = &calibrate.Pool{Dir: dir, Plan: plan, Bind: bind, Workers: f.workers, Log: stderr, Monitor: runMonitor(stderr, f.refresh, heartbeat, plan)}
	switch {
	case f.collect:
		runner = calibrate.Collector{}
	case f.slurm:
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		absDir, err := filepath.Abs(f.dir)
		if err != nil {
			return nil, err
		}
		runner = &calibrate.Slurm{Dir: calibrate.Dir(absDir), Exe: exe, Options: strings.Fields(f.sbatch), MaxRunning: f.maxRunning,
			RunsPerTask: f.runsPerTask, Log: stderr}
	}
	c := &calibrate.Calibration{Dir: dir, Plan: plan, Search: search, Region: f.region, Runner: runner, Log: stderr,
		Bind: bind, Workers: f.workers}
	return c.Run(ctx)
}

// newPlan returns the plan the flags describe, without its truth.
func newPlan(model string, files []string, f *lambdaFlags) (*calibrate.Plan, error) {
	abs := func(p string) (string, error) { return filepath.Abs(p) }
	m, err := abs(model)
	if err != nil {
		return nil, err
	}
	plan := &calibrate.Plan{Model: m, Sets: f.sets, Param: f.param, Level: f.level, Chains: f.chains,
		Warmup: f.warmup, Samples: f.samples, MaxDepth: f.maxDepth, Delta: f.delta, Seed: f.seed}
	if f.metric == "dense" {
		plan.Metric = "dense" // (diag stays empty: the plans of earlier versions)
	}
	if f.estimate == "optimize" {
		plan.EstimateBy = calibrate.EstimateOptimize // (draw stays empty, as earlier plans)
	}
	if f.bootstrap > 0 {
		plan.Lambda0 = f.lambda0 // a rerun with another is another calibration
	}
	if !f.exact {
		plan.Reuse = calibrate.DefaultReuse()
		plan.Reuse.WarmWarmup = f.warmWarmup
	}
	for _, file := range files {
		a, err := abs(file)
		if err != nil {
			return nil, err
		}
		plan.Data = append(plan.Data, a)
	}
	// Every input file's contents: the model, the data, the datasets
	// given as files and a truth given as a file. A rerun after any of
	// them was edited is refused.
	inputs := append([]string{plan.Model}, plan.Data...)
	datasets, err := expandFiles(f.datasets)
	if err != nil {
		return nil, err
	}
	for _, d := range datasets {
		a, err := abs(d)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, a)
	}
	if truthFile(f.truth) {
		a, err := abs(strings.TrimSpace(f.truth))
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, a)
	}
	if plan.Files, err = calibrate.HashFiles(inputs...); err != nil {
		return nil, err
	}
	if err := distinctDatasets(datasets, plan.Files[len(plan.Data)+1:len(plan.Data)+1+len(datasets)]); err != nil {
		return nil, err
	}
	switch {
	case f.generate > 0:
		plan.Datasets = f.generate
	case f.datasets != "":
		// Set by the caller, from the files the patterns name.
	default:
		plan.Datasets = f.bootstrap
	}
	return plan, nil
}

// truthFile reports whether --truth names a file (a JSON point or a CSV
// file of truths) rather than giving name=value pairs.
func truthFile(truth string) bool {
	t := strings.ToLower(strings.TrimSpace(truth))
	return strings.HasSuffix(t, ".json") || strings.HasSuffix(t, ".csv")
}

// distinctDatasets refuses a dataset file given twice: by its path, or
// by its contents (hashes, in the files' order): it would count twice.
func distinctDatasets(files []string, hashes []calibrate.FileHash) error {
	byPath, byHash := map[string]string{}, map[string]string{}
	for i, file := range files {
		if first, ok := byPath[hashes[i].Path]; ok {
			return fmt.Errorf("--datasets: %s is given twice (as %s and %s): each dataset counts once", hashes[i].Path, first, file)
		}
		byPath[hashes[i].Path] = file
		if first, ok := byHash[hashes[i].SHA256]; ok {
			return fmt.Errorf("--datasets: %s and %s have the same contents: each dataset counts once", first, file)
		}
		byHash[hashes[i].SHA256] = file
	}
	return nil
}

// checkDatasetFiles refuses a dataset file that replaces none of the
// model's data (every run on it would be a run on the data as given), and
// warns about the names in it that the model does not use, or that the
// calibration overrides (the loss scale).
func checkDatasetFiles(m *ir.Model, param string, files []string, warn io.Writer) error {
	isData := map[string]bool{}
	var names []string
	for _, d := range m.Data {
		isData[d.Var.Name] = true
		if d.Var.Name != param {
			names = append(names, d.Var.Name)
		}
	}
	for _, file := range files {
		values, err := data.ReadFile(file)
		if err != nil {
			return fmt.Errorf("--datasets: %w", err)
		}
		replaced := 0
		for _, v := range values {
			switch {
			case v.Name == param:
				fmt.Fprintf(warn, "warning: --datasets %s: its %s is ignored: the loss scale (--param) is set by the calibration\n", file, v.Name)
			case isData[v.Name]:
				replaced++
			default:
				fmt.Fprintf(warn, "warning: --datasets %s: %s is not a data variable of the model (ignored)\n", file, v.Name)
			}
		}
		if replaced == 0 {
			return fmt.Errorf("--datasets %s holds none of the model's data (%s): every run on it would be a run on the data as given", file, listOrNone(names))
		}
	}
	return nil
}

// planBinder binds the plan's model to its data with extra values. The
// model is read and checked once, by the first bind, for every bind of
// the process.
func planBinder(plan *calibrate.Plan) calibrate.Binder { return planBinderChecked(plan, nil, 1) }

// planBinderChecked is planBinder with the model already read and checked
// (nil: read by the first bind), for share runs side by side that share
// the memory (runtime.Options.MemoryShare).
func planBinderChecked(plan *calibrate.Plan, checked *ir.Model, share int) calibrate.Binder {
	var mu sync.Mutex
	return func(ctx context.Context, extra []*data.Value, seed uint64) (*runtime.Model, error) {
		mu.Lock()
		m := checked
		var err error
		if m == nil {
			if m, err = checkModelContext(ctx, plan.Model); err == nil {
				checked = m
			}
		}
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		set, err := data.Load(plan.Data, plan.Sets)
		if err != nil {
			return nil, err
		}
		for _, v := range extra {
			set.AddSet(v)
		}
		return runtime.Bind(m, set, runtime.Options{Impls: builtins(), Print: io.Discard, Seed: seed, DataFiles: plan.Data,
			Context: ctx, Hold: plan.HeldValues(), MemoryShare: share})
	}
}

// checkLossScale returns an error unless name is a real scalar data
// variable of m: the variable --param names, which each run sets to its
// loss scale.
func checkLossScale(m *ir.Model, name string) error {
	var reals []string
	for _, d := range m.Data {
		scalarReal := d.Var.Type == lang.RealType && len(d.Sizes) == 0
		if d.Var.Name == name {
			if !scalarReal {
				return fmt.Errorf("--param %s: the loss scale must be a real (scalar) data variable; %s is declared %s", name, name, d.Var.Type)
			}
			return nil
		}
		if scalarReal {
			reals = append(reals, d.Var.Name)
		}
	}
	for _, s := range m.TransformedData {
		if d, ok := s.(*ir.DeclStmt); ok && d.Decl.Var.Name == name {
			return fmt.Errorf("--param %s: %s is transformed data; the loss scale must be a real (scalar) data variable (the model's: %s)", name, name, listOrNone(reals))
		}
	}
	return fmt.Errorf("--param %s: no real data variable of that name (the model's: %s)", name, listOrNone(reals))
}

// listOrNone joins names with commas, "none" for no name.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkDraws returns an error when a run's draws (chains × samples) are
// too few for the credible regions: the ellipse's covariance needs more
// draws than parameter columns.
func checkDraws(bm *runtime.Model, plan *calibrate.Plan) error {
	cols := 0
	for _, e := range bm.Layout.Entries {
		cols += len(e.Columns)
	}
	if n := plan.Chains * plan.Samples; n <= cols {
		return fmt.Errorf("--chains %d × --samples %d = %d draws per run: the credible regions need more draws than the model's %d parameter value(s)", plan.Chains, plan.Samples, n, cols)
	}
	return nil
}

// truthColumns reads --truth (every parameter given) as values by output
// column.
func truthColumns(bm *runtime.Model, arg string) (map[string]float64, error) {
	set, err := loadPoint("--truth", arg)
	if err != nil {
		return nil, err
	}
	if err := checkPoint("--truth", set, bm, true); err != nil {
		return nil, err
	}
	theta, err := bm.Unconstrain(set, nil, 0)
	if err != nil {
		return nil, err
	}
	d, err := bm.NewDensity()
	if err != nil {
		return nil, err
	}
	row, err := d.Draw(nil, theta, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, fmt.Errorf("--truth: %w", err)
	}
	return bm.ParamValues(row), nil
}

// expandFiles splits a comma-separated list of files and glob patterns
// (each pattern's matches sorted) into file names.
func expandFiles(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var out []string
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if !strings.ContainsAny(item, "*?[") {
			out = append(out, item)
			continue
		}
		matches, err := filepath.Glob(item)
		if err != nil {
			return nil, fmt.Errorf("--datasets %q: %w", item, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("--datasets %q matches no file", item)
		}
		out = append(out, matches...)
	}
	return out, nil
}

// datasetTruths reads a truth per dataset from a CSV file with a column
// per parameter column (others are warned about and ignored): its rows in
// the datasets' order, or, when it has a "file" column, the row naming
// each dataset's file (base names compared). Every value must be finite
// and in the parameters' support; a file or a column named twice is
// refused, naming the file, row and column.
func datasetTruths(bm *runtime.Model, path string, datasets []string, warn io.Writer) ([]map[string]float64, error) {
	if len(datasets) == 0 {
		return nil, fmt.Errorf("--truth %s gives a truth per dataset: give the datasets with --datasets", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--truth: %w", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("--truth %s: %w", path, err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("--truth %s: no rows", path)
	}
	var params []string
	for _, e := range bm.Layout.Entries {
		params = append(params, e.Columns...)
	}
	col := map[string]int{}
	var others []string
	for j, h := range rows[0] {
		h = strings.TrimSpace(h)
		if _, ok := col[h]; ok {
			return nil, fmt.Errorf("--truth %s: the column %s is named twice", path, h)
		}
		if h != "file" && !slices.Contains(params, h) {
			others = append(others, h)
		}
		col[h] = j
	}
	if len(others) > 0 {
		// Not refused: a truth file may describe its datasets too
		// (Experiment D's has index and label columns).
		fmt.Fprintf(warn, "warning: --truth %s: the column(s) %s are not parameters of the model (its parameters: %s): ignored\n", path, strings.Join(others, ", "), strings.Join(params, ", "))
	}
	for _, c := range params {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("--truth %s has no column %s", path, c)
		}
	}
	// rowOf[i] is the row (index in rows) of dataset i.
	rowOf := make([]int, len(datasets))
	if j, ok := col["file"]; ok {
		byFile := map[string]int{}
		for k, r := range rows[1:] {
			name := filepath.Base(strings.TrimSpace(r[j]))
			if first, ok := byFile[name]; ok {
				return nil, fmt.Errorf("--truth %s: rows %d and %d both give the truth of %s", path, first+1, k+2, name)
			}
			byFile[name] = k + 1
		}
		seen := map[string]string{}
		for i, d := range datasets {
			name := filepath.Base(d)
			if other, ok := seen[name]; ok {
				return nil, fmt.Errorf("--truth %s names datasets by file name, and %s and %s have the same name %s", path, other, d, name)
			}
			seen[name] = d
			if rowOf[i], ok = byFile[name]; !ok {
				return nil, fmt.Errorf("--truth %s has no row for %s", path, name)
			}
		}
	} else {
		if len(rows)-1 != len(datasets) {
			return nil, fmt.Errorf("--truth %s has %d rows for %d datasets (or give a \"file\" column)", path, len(rows)-1, len(datasets))
		}
		for i := range rowOf {
			rowOf[i] = i + 1
		}
	}
	out := make([]map[string]float64, len(datasets))
	for i, d := range datasets {
		r := rows[rowOf[i]]
		line := rowOf[i] + 1 // the header is row 1
		out[i] = map[string]float64{}
		for _, c := range params {
			x, err := strconv.ParseFloat(strings.TrimSpace(r[col[c]]), 64)
			if err != nil {
				return nil, fmt.Errorf("--truth %s: row %d (%s), column %s: %q is not a number", path, line, filepath.Base(d), c, r[col[c]])
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("--truth %s: row %d (%s), column %s: %v (a parameter's value must be finite)", path, line, filepath.Base(d), c, x)
			}
			out[i][c] = x
		}
		if _, err := bm.UnconstrainColumns(out[i]); err != nil {
			return nil, fmt.Errorf("--truth %s: row %d (%s): %w", path, line, filepath.Base(d), err)
		}
	}
	return out, nil
}

// columnsText renders values by column in the model's order.
func columnsText(bm *runtime.Model, byColumn map[string]float64) string {
	var parts []string
	for _, e := range bm.Layout.Entries {
		for _, c := range e.Columns {
			parts = append(parts, fmt.Sprintf("%s=%.6g", c, byColumn[c]))
		}
	}
	return strings.Join(parts, ", ")
}

// replicates parses --replicate: data=generated pairs.
func (f *lambdaFlags) replicates() ([]calibrate.Replicate, error) {
	var reps []calibrate.Replicate
	for _, pair := range strings.Split(f.replicate, ",") {
		d, g, ok := strings.Cut(strings.TrimSpace(pair), "=")
		d, g = strings.TrimSpace(d), strings.TrimSpace(g)
		if !ok || d == "" || g == "" {
			return nil, fmt.Errorf("--replicate %q: want data=generated, e.g. y=y_rep", pair)
		}
		for _, r := range reps {
			if r.Data == d {
				return nil, fmt.Errorf("--replicate %q: the data %s is replaced twice", f.replicate, d)
			}
			if r.Generated == g {
				return nil, fmt.Errorf("--replicate %q: the generated quantity %s is used twice", f.replicate, g)
			}
		}
		reps = append(reps, calibrate.Replicate{Data: d, Generated: g})
	}
	return reps, nil
}

// writeDatasets writes the datasets the flags ask for into the folder,
// with the records of their digests, unless they are there already (they
// depend only on the plan), and checks each against its record.
func writeDatasets(dir calibrate.Dir, plan *calibrate.Plan, bm *runtime.Model, f *lambdaFlags) error {
	if !dir.DatasetsStored(plan.Datasets) {
		if err := storeDatasets(dir, plan, bm, f); err != nil {
			return err
		}
	}
	return dir.CheckDatasets(plan)
}

// storeDatasets writes the datasets (calibrate.Dir.StoreDataset: those
// not there already).
func storeDatasets(dir calibrate.Dir, plan *calibrate.Plan, bm *runtime.Model, f *lambdaFlags) error {
	switch {
	case f.generate > 0:
		reps, err := f.replicates()
		if err != nil {
			return err
		}
		return calibrate.Simulate(dir, bm, plan.Truth, reps, plan.Datasets, plan.Seed)
	case f.datasets != "":
		files, err := expandFiles(f.datasets)
		if err != nil {
			return err
		}
		for i, file := range files {
			values, err := data.ReadFile(file)
			if err != nil {
				return err
			}
			if err := dir.StoreDataset(i, values); err != nil {
				return err
			}
		}
		return nil
	}
	set, err := data.Load(plan.Data, plan.Sets)
	if err != nil {
		return err
	}
	names, err := uniqueNames("--resample", f.resample)
	if err != nil {
		return err
	}
	return calibrate.Bootstrap(dir, set, names, plan.Datasets, plan.Seed)
}

// cmdCalibrateTask runs one task of a Slurm job array.
func cmdCalibrateTask(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlagSet("calibrate task", stderr)
	index := fs.Int("index", -1, "array task index within the round file ($SLURM_ARRAY_TASK_ID plus the array's offset)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) != 2 || *index < 0 {
		fmt.Fprint(stderr, calibrateUsage)
		return 2
	}
	dir := calibrate.Dir(pos[0])
	plan, err := dir.ReadPlan()
	if err != nil {
		return report(stderr, err)
	}
	if err := plan.CheckFiles(); err != nil {
		return report(stderr, err)
	}
	tasks, err := calibrate.ReadRound(pos[1], *index)
	if err != nil {
		return report(stderr, err)
	}
	var todo []calibrate.Task
	for _, t := range tasks {
		if r, err := dir.ReadResult(t, plan); err == nil && r != nil {
			fmt.Fprintf(stderr, "lambda %g, dataset %d: already done\n", t.Lambda, t.Dataset+1)
			continue
		}
		todo = append(todo, t)
	}
	if len(todo) == 0 {
		return 0
	}
	fmt.Fprintf(stderr, "array task %d: %d run(s), from lambda %g, dataset %d\n", *index, len(todo), todo[0].Lambda, todo[0].Dataset+1)
	pool := &calibrate.Pool{Dir: dir, Plan: plan, Bind: planBinder(plan), Workers: 1, Log: stderr, Monitor: runMonitor(stderr, 100, heartbeat, plan)}
	if err := pool.Run(ctx, todo); err != nil {
		return report(stderr, err)
	}
	return 0
}

// runMonitor returns a calibrate.Pool's Monitor: each run's chains report
// as shm sample's do (a line every refresh iterations, a heartbeat while
// an iteration is slow, the warning when warmup keeps hitting the maximum
// tree depth), each line starting with the run's label.
func runMonitor(w io.Writer, refresh int, heartbeat time.Duration, plan *calibrate.Plan) func(label string) (calibrate.SampleOptions, func()) {
	var mu sync.Mutex // serializes the lines of runs side by side
	ids := make([]int, max(plan.Chains, 1))
	for i := range ids {
		ids[i] = i + 1
	}
	maxDepth := plan.MaxDepth
	if maxDepth <= 0 {
		maxDepth = nuts.DefaultConfig().MaxDepth
	}
	return func(label string) (calibrate.SampleOptions, func()) {
		p := newChainProgress(w, &mu, refresh, maxDepth, plan.Samples, ids)
		p.label, p.heartbeat = label, heartbeat
		return calibrate.SampleOptions{Progress: p.progress, Activity: p.activity}, p.start()
	}
}

// entryNames returns the names of folder entries.
func entryNames(entries []os.DirEntry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
