package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/stancsv"
)

// cmdLogProb implements "shm log_prob model.shm data...", CmdStan's
// log_prob method: the log density (constants dropped, as lp__ of shm
// sample) and its gradient with respect to the unconstrained parameters,
// at points given on the constrained scale (name=value,..., a JSON file
// or the rows of a Stan CSV file) or on the unconstrained scale (a JSON
// file of params_r).
func cmdLogProb(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("log_prob", stderr)
	f := methodFlags{pointsGiven: true}
	f.register(fs)
	constrained := fs.String("constrained", "", "the points on the constrained scale: name=value,..., a JSON file, or a Stan CSV file (every row)")
	unconstrained := fs.String("unconstrained", "", "the points on the unconstrained scale: a JSON file of params_r, a vector or an array of vectors")
	jacobian := fs.Bool("jacobian", true, "include the Jacobian of the constraining transforms")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	err = f.validate(setFlags(fs))
	switch {
	case err != nil:
	case len(pos) < 1:
		err = errors.New("usage: shm log_prob model.shm [data...] --constrained POINTS | --unconstrained FILE [--jacobian=true --output DIR]")
	case (*constrained == "") == (*unconstrained == ""):
		err = errors.New("give the points with exactly one of --constrained and --unconstrained")
	}
	if err != nil {
		fmt.Fprintf(stderr, "shm log_prob: %v\n", err)
		return 2
	}
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "shm log_prob: interrupted; no output written")
			return 1
		}
		return report(stderr, err)
	}
	f.seedGiven = true // no draws: the seed is transformed data's, 0 unless given
	r, err := startMethod(ctx, "log_prob", pos, &f, stderr)
	if err != nil {
		return fail(err)
	}
	for _, p := range []string{*constrained, *unconstrained} {
		if strings.HasSuffix(strings.ToLower(p), ".csv") || strings.HasSuffix(strings.ToLower(p), ".json") {
			r.inputs = append(r.inputs, p)
		}
	}
	var points [][]float64
	if *constrained != "" {
		points, err = constrainedPoints(ctx, r.bm, *constrained)
	} else {
		points, err = unconstrainedPoints(r.bm, *unconstrained)
	}
	if err != nil {
		return fail(err)
	}
	d, err := r.bm.NewDensity()
	if err != nil {
		return fail(err)
	}
	d.Jacobian = *jacobian
	rows := make([][]float64, 0, len(points))
	for k, theta := range points {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		grad := make([]float64, len(theta))
		lp, err := d.LogDensityGrad(theta, grad)
		if err != nil {
			return fail(fmt.Errorf("point %d: %w", k+1, err))
		}
		rows = append(rows, append([]float64{lp}, grad...))
	}
	path, err := writeLogProb(r, *constrained, *unconstrained, *jacobian, rows)
	if err != nil {
		return fail(err)
	}
	if release() {
		fmt.Fprintf(stderr, "shm log_prob: interrupted after the run: its file is complete (%s)\n", path)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// writeLogProb writes log_prob's rows to DIR/MODEL-log_prob.csv: lp__,
// then g_NAME for each unconstrained coordinate, as CmdStan names them.
func writeLogProb(r *methodRun, constrained, unconstrained string, jacobian bool, rows [][]float64) (string, error) {
	lead := []string{"lp__"}
	for _, name := range unconstrainedNames(r.bm) {
		lead = append(lead, "g_"+name)
	}
	args := []string{methodArg(1, "log_prob", nil),
		methodArg(2, "unconstrained_params", unconstrained),
		methodArg(2, "constrained_params", constrained),
		methodArg(2, "jacobian", jacobian)}
	header := r.header(args, lead)
	// The gradient's columns take the place of the model's.
	return r.writeColumns(header, nil, rows, nil)
}

// unconstrainedNames are the names of the model's unconstrained
// coordinates: a parameter's name, with .1, .2, ... when it has several
// (as many as its free values: K − 1 for a simplex[K]).
func unconstrainedNames(bm *runtime.Model) []string {
	var names []string
	for _, e := range bm.Layout.Entries {
		name := e.Decl.Var.Name
		if e.Size == 1 && len(e.Dims) == 0 {
			names = append(names, name)
			continue
		}
		for k := range e.Size {
			names = append(names, fmt.Sprintf("%s.%d", name, k+1))
		}
	}
	return names
}

// constrainedPoints reads the points of --constrained: the rows of a
// Stan CSV file (every parameter's columns), or one point of
// name=value,... or a JSON file, every parameter given; each is
// unconstrained.
func constrainedPoints(ctx context.Context, bm *runtime.Model, arg string) ([][]float64, error) {
	if strings.EqualFold(filepath.Ext(arg), ".csv") {
		f, err := interruptible(ctx, func() (*stancsv.File, error) { return stancsv.ReadFile(arg) })
		if err != nil {
			return nil, fmt.Errorf("--constrained: %w", err)
		}
		cols, idx, err := paramIndexes(bm, f, "--constrained "+arg, "the model")
		if err != nil {
			return nil, err
		}
		points := make([][]float64, 0, len(f.Draws))
		for k, row := range f.Draws {
			byColumn := make(map[string]float64, len(cols))
			for j, c := range cols {
				byColumn[c] = row[idx[j]]
			}
			if err := finitePoint(fmt.Sprintf("--constrained %s: row %d", arg, k+1), bm, byColumn); err != nil {
				return nil, err
			}
			theta, err := bm.UnconstrainColumns(byColumn)
			if err != nil {
				return nil, fmt.Errorf("--constrained %s: row %d: %w", arg, k+1, err)
			}
			points = append(points, theta)
		}
		if len(points) == 0 {
			return nil, fmt.Errorf("--constrained %s has no rows", arg)
		}
		return points, nil
	}
	set, err := loadPoint("--constrained", arg)
	if err != nil {
		return nil, err
	}
	if err := checkPoint("--constrained", set, bm, true); err != nil {
		return nil, err
	}
	theta, err := bm.Unconstrain(set, rand.New(rand.NewPCG(1, 1)), 0)
	if err != nil {
		return nil, fmt.Errorf("--constrained: %w", err)
	}
	return [][]float64{theta}, nil
}

// unconstrainedPoints reads the points of --unconstrained: a JSON file
// whose params_r is a vector of the model's unconstrained coordinates, or
// an array of them (one point each).
func unconstrainedPoints(bm *runtime.Model, path string) ([][]float64, error) {
	if !strings.EqualFold(filepath.Ext(path), ".json") {
		return nil, fmt.Errorf("--unconstrained %s: a JSON file (.json) of params_r", path)
	}
	vals, err := data.ReadFile(path) // bounded, refused at a NUL byte
	if err != nil {
		return nil, fmt.Errorf("--unconstrained: %w", err)
	}
	var pr *data.Value
	for _, v := range vals {
		if v.Name == "params_r" {
			pr = v
		}
	}
	if pr == nil {
		return nil, fmt.Errorf("--unconstrained %s has no params_r (the unconstrained coordinates)", path)
	}
	n := bm.Dim()
	switch k := slices.IndexFunc(pr.Data, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }); {
	case k >= 0:
		return nil, fmt.Errorf("--unconstrained %s: %s is %g: a point's coordinates are finite", path, pr.Where(k), pr.Data[k])
	case len(pr.Dims) == 1 && pr.Dims[0] == n, n == 1 && len(pr.Dims) == 0:
		return [][]float64{pr.Data}, nil
	case len(pr.Dims) == 2 && pr.Dims[1] == n:
		points := make([][]float64, pr.Dims[0])
		for i := range points {
			points[i] = pr.Data[i*n : (i+1)*n]
		}
		return points, nil
	}
	return nil, fmt.Errorf("--unconstrained %s: params_r has sizes %v; the model has %d unconstrained coordinates (give a vector of %d, or an array of them)", path, pr.Dims, n, n)
}

// finitePoint refuses a point (its parameters' columns) with a value that
// is not finite, naming source and the column.
func finitePoint(source string, bm *runtime.Model, byColumn map[string]float64) error {
	for _, c := range bm.ParamColumns() {
		if v := byColumn[c]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %s is %g: a point's parameters are finite", source, c, v)
		}
	}
	return nil
}
