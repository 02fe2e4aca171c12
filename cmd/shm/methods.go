package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/stancsv"
)

// methodFlags are the options that CmdStan's methods other than sample
// (optimize, laplace, pathfinder) share with shm sample: the data, the
// initial point, the seed and the output.
type methodFlags struct {
	init, output     string
	seed             uint64
	sets             setList
	refresh, sigFigs int
	seedGiven        bool
	// pointsGiven leaves out --init and --refresh: the method computes
	// at given points (generate), with no initial point or iterations.
	pointsGiven bool
	// share is not a flag: the evaluations the method runs at once
	// (pathfinder's paths), which share an evaluation's memory.
	share int
}

func (f *methodFlags) register(fs *flag.FlagSet) {
	if !f.pointsGiven {
		fs.IntVar(&f.refresh, "refresh", 100, "progress every refresh iterations (0: none)")
		fs.StringVar(&f.init, "init", "", "initial values: name=value,..., a JSON file, or a number x: uniform(-x, x) unconstrained, 0: all zero (default: 2)")
	}
	fs.StringVar(&f.output, "output", "output", "directory for the Stan CSV file")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (default: from the clock, printed in the output)")
	fs.Var(&f.sets, "set", "data value name=value (repeatable)")
	fs.IntVar(&f.sigFigs, "sig-figs", 6, "significant digits in the output (up to 18)")
}

// validate checks the shared flags; set are the flags given.
func (f *methodFlags) validate(set map[string]bool) error {
	f.seedGiven = set["seed"]
	switch {
	case f.output == "":
		return errors.New("--output is empty: give a directory (default: output)")
	case f.refresh < 0:
		return fmt.Errorf("--refresh must not be negative (0: no progress lines), got %d", f.refresh)
	case f.refresh > maxCount:
		return fmt.Errorf("--refresh is %d, at most %d", f.refresh, maxCount)
	case f.sigFigs < 1 || f.sigFigs > 18:
		return fmt.Errorf("--sig-figs must be between 1 and 18, got %d", f.sigFigs)
	}
	return nil
}

// methodRun is a model bound for one run of a method, its initial point
// and what the output's header records of it.
type methodRun struct {
	model, method string
	files         []string
	// inputs are the files the run reads (the model, the data, and
	// those of its flags: a mode, draws, points): no output replaces one.
	inputs     []string
	bm         *runtime.Model
	flags      *methodFlags
	dataDigest string
	init       []float64 // unconstrained
	// initSet and radius are --init's values and the radius of the
	// random values of the others.
	initSet *data.Set
	radius  float64
}

// startMethod binds the model pos[0] to the data files pos[1:] for the
// method, and draws its initial point as shm sample's first chain does
// (the values of --init, the others uniform(-2, 2) or --init's radius on
// the unconstrained scale).
func startMethod(ctx context.Context, method string, pos []string, f *methodFlags, stderr io.Writer) (*methodRun, error) {
	if !f.seedGiven {
		f.seed = uint64(time.Now().UnixNano()) & (1<<31 - 1)
	}
	bm, err := bindModelShare(ctx, pos[0], pos[1:], f.sets, f.seed, stderr, max(f.share, 1))
	if err != nil {
		return nil, err
	}
	if bm.Dim() == 0 && (method == "optimize" || method == "laplace" || method == "pathfinder") {
		return nil, fmt.Errorf("%s has no parameters: %s has nothing to find (generate_quantities or sample run models without parameters)", pos[0], method)
	}
	r := &methodRun{model: pos[0], method: method, files: pos[1:], bm: bm, flags: f, inputs: slices.Clone(pos)}
	var initSet *data.Set
	if r.dataDigest, initSet, err = prepareRun(ctx, bm, r.files, f.init, stderr); err != nil {
		return nil, err
	}
	r.initSet, r.radius = initSet, 2.0
	if x, ok := initRadius(f.init); ok {
		r.radius = x
	}
	if r.init, err = r.initial(1); err != nil {
		return nil, err
	}
	return r, nil
}

// prepareRun does what every run of a bound model does first: the
// digest of the data files' contents (for its output's header), the
// model's warnings on w, and --init read and checked.
func prepareRun(ctx context.Context, bm *runtime.Model, files []string, init string, w io.Writer) (digest string, initSet *data.Set, err error) {
	if digest, err = interruptible(ctx, func() (string, error) { return dataDigest(files) }); err != nil {
		return "", nil, err
	}
	for _, warning := range bm.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	if initSet, err = loadInit(init); err != nil {
		return "", nil, err
	}
	if err := checkInit(init, initSet, bm, w); err != nil {
		return "", nil, err
	}
	return digest, initSet, nil
}

// registerLBFGS defines on fs the flags of L-BFGS's line search and
// convergence tests (optimize's, pathfinder's), CmdStan's names.
func registerLBFGS(fs *flag.FlagSet, initAlpha, tolObj, tolRelObj, tolGrad, tolRelGrad, tolParam *float64, initAlphaHelp string) {
	fs.Float64Var(initAlpha, "init-alpha", *initAlpha, initAlphaHelp)
	fs.Float64Var(tolObj, "tol-obj", *tolObj, "convergence: absolute change in the objective")
	fs.Float64Var(tolRelObj, "tol-rel-obj", *tolRelObj, "convergence: relative change in the objective, in units of machine epsilon")
	fs.Float64Var(tolGrad, "tol-grad", *tolGrad, "convergence: gradient norm")
	fs.Float64Var(tolRelGrad, "tol-rel-grad", *tolRelGrad, "convergence: relative gradient magnitude, in units of machine epsilon")
	fs.Float64Var(tolParam, "tol-param", *tolParam, "convergence: change in the parameters")
}

// initial returns the initial point of path or chain k (from 1), drawn
// as shm sample's chain k draws it.
func (r *methodRun) initial(k int) ([]float64, error) {
	return r.bm.Unconstrain(r.initSet, rand.New(rand.NewPCG(r.flags.seed, uint64(k))), r.radius)
}

// outputPath is the run's Stan CSV file: DIR/MODEL-METHOD.csv.
func (r *methodRun) outputPath() string {
	return filepath.Join(r.flags.output, r.bm.IR.Name+"-"+r.method+".csv")
}

// header is the output's header: the method's arguments (args, indented
// as CmdStan writes them) and leading columns, then what every run
// records.
func (r *methodRun) header(args, columns []string) *stancsv.Config {
	initText := "2"
	if r.flags.init != "" {
		initText = r.flags.init
	}
	h := &stancsv.Config{
		Model: r.bm.IR.Name, Method: r.method, MethodArgs: args, MethodColumns: columns,
		ID: 1, DataFiles: r.files, Sets: r.flags.sets, DataSHA256: r.dataDigest, ModelSHA256: r.bm.IR.SourceSHA256,
		Init: initText, Seed: r.flags.seed, OutputFile: r.outputPath(), Refresh: r.flags.refresh, SigFigs: r.flags.sigFigs,
	}
	recordSeedDependence(h, r.bm)
	return h
}

// write writes the rows (each the method's columns, then the model's
// output columns) to header.OutputFile, whole or not at all; notes, if
// any, end it as comment lines.
func (r *methodRun) write(header *stancsv.Config, rows [][]float64, notes []string) (string, error) {
	return r.writeColumns(header, r.bm.Columns(), rows, notes)
}

// writeColumns is write with the columns that follow the method's.
func (r *methodRun) writeColumns(header *stancsv.Config, columns []string, rows [][]float64, notes []string) (string, error) {
	w, unlock, err := r.create(header, columns)
	if err != nil {
		return "", err
	}
	defer unlock()
	defer w.Abort()
	for _, row := range rows {
		if err := w.WriteRow(row); err != nil {
			return "", err
		}
	}
	for _, n := range notes {
		if err := w.Comment(n); err != nil {
			return "", err
		}
	}
	return header.OutputFile, w.Close()
}

// create starts header.OutputFile, the method's columns and then
// columns, under a temporary name (Close or Finish and Commit move it
// into place, Abort removes it), holding its lock until unlock. An output
// that is one of the run's inputs (r.inputs) is refused.
func (r *methodRun) create(header *stancsv.Config, columns []string) (w *stancsv.Writer, unlock func(), err error) {
	path := header.OutputFile
	if in, ok := sameFile(path, r.inputs); ok {
		return nil, nil, fmt.Errorf("--output %s: the file %s is the input %s: the run would replace it; give another folder", r.flags.output, path, in)
	}
	if err := os.MkdirAll(r.flags.output, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("--output %s: cannot make the folder %s: %v", r.flags.output, pe.Path, pe.Err)
		}
		return nil, nil, fmt.Errorf("--output %s: %v", r.flags.output, err)
	}
	if err := checkHeader(columns, 0); err != nil {
		return nil, nil, err
	}
	unlock, err = lockOutput([]string{path})
	if err != nil {
		return nil, nil, err
	}
	stale, _ := filepath.Glob(stancsv.TempPattern(path))
	for _, s := range stale {
		os.Remove(s)
	}
	if w, err = stancsv.Create(path, header, columns); err != nil {
		unlock()
		return nil, nil, err
	}
	return w, unlock, nil
}

// paramIndexes returns the model's parameter columns and their places
// among the columns of f (the file what, read for the model owner): an
// error naming the first column f lacks.
func paramIndexes(bm *runtime.Model, f *stancsv.File, what, owner string) ([]string, []int, error) {
	params := bm.ParamColumns()
	idx := make([]int, len(params))
	for j, c := range params {
		if idx[j] = slices.Index(f.Columns, c); idx[j] < 0 {
			return nil, nil, fmt.Errorf("%s has no column %s, a parameter of %s (its columns: %s)", what, c, owner, listFiles(f.Columns))
		}
	}
	return params, idx, nil
}

// checkRows refuses a run whose rows (n of them, each its method's lead
// columns and the model's output columns) kept in memory until they are
// written would exceed half of the memory; what names them for the
// message ("--draws 1000000").
func (r *methodRun) checkRows(n float64, lead int, what string) error {
	width := float64(lead + len(r.bm.Columns()) + r.bm.Dim())
	if limit := sysmem.MaxElements(); limit > 0 && n*width > float64(limit) {
		return fmt.Errorf("%s: %.4g draws of %.0f values need %s, %s", what, n, width, sysmem.Bytes(8*n*width), sysmem.Beyond())
	}
	return nil
}

// methodArg renders one argument line of a method's header: indent
// levels of two spaces, "name = value".
func methodArg(indent int, name string, value any) string {
	var v string
	switch x := value.(type) {
	case float64:
		v = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		v = "0"
		if x {
			v = "1"
		}
	default:
		v = fmt.Sprint(x)
	}
	line := strings.Repeat("  ", indent) + name
	if value != nil {
		line += " = " + v
	}
	return line
}
