package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
)

// cmdDiagnose implements "shm diagnose": like CmdStan's diagnose method, it
// prints the log density and its gradient at a point beside finite
// differences.
func cmdDiagnose(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("diagnose", stderr)
	var sets setList
	fs.Var(&sets, "set", "data value name=value (repeatable)")
	init := fs.String("init", "", "initial values: name=value,... or a JSON file (default: random)")
	seed := fs.Uint64("seed", 1, "random seed for the initial point and transformed data")
	eps := fs.Float64("epsilon", 1e-6, "finite-difference step (on the unconstrained scale)")
	tol := fs.Float64("error", 1e-6, "report gradients whose error exceeds this")
	noiseFile := fs.String("crn-noise", "", "write the noise each crn(...) replicate draws to this CSV file (columns z1 … zK)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if err := checkDiagnoseFlags(*eps, *tol); err != nil {
		fmt.Fprintf(stderr, "shm diagnose: %v\n", err)
		return 2
	}
	if len(pos) < 1 {
		fmt.Fprintln(stderr, "usage: shm diagnose model.shm [data...] [--init name=value,...] [--set name=value] [--seed N]")
		return 2
	}
	// Ctrl-C and SIGTERM stop the evaluations (their loops check the
	// model's context) and say so.
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := reportStop(ctx, stderr, "diagnose")
	bm, err := bindModelContext(ctx, pos[0], pos[1:], sets, *seed, stderr)
	if err != nil {
		return fail(err)
	}
	if in, ok := sameFile(*noiseFile, pos); *noiseFile != "" && ok {
		fmt.Fprintf(stderr, "shm diagnose: --crn-noise %s is the input %s: writing the noise would replace it; give another file\n", *noiseFile, in)
		return 2
	}
	if *noiseFile != "" && len(bm.IR.CRNs) == 0 {
		fmt.Fprintf(stderr, "shm diagnose: --crn-noise: %s has no crn(K, ...) call: there is no noise to write\n", pos[0])
		return 2
	}
	for _, w := range bm.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	initSet, err := loadInit(*init)
	if err != nil {
		return fail(err)
	}
	if err := checkInit(*init, initSet, bm, stderr); err != nil {
		return fail(err)
	}
	radius := 2.0
	if x, ok := initRadius(*init); ok {
		radius = x
	}
	theta, err := bm.Unconstrain(initSet, rand.New(rand.NewPCG(*seed, 0x1a17)), radius)
	if err != nil {
		return fail(err)
	}
	d, err := bm.NewDensity()
	if err != nil {
		return fail(err)
	}
	d.Workers = goruntime.GOMAXPROCS(0)
	if *noiseFile != "" {
		noise, err := d.CRNNoise(theta)
		if err != nil {
			return fail(err)
		}
		if err := writeNoise(*noiseFile, noise); err != nil {
			return fail(err)
		}
	}
	grad := make([]float64, len(theta))
	lp, err := d.LogDensityGrad(theta, grad)
	if err != nil {
		return fail(err)
	}
	if math.IsNaN(lp) || math.IsInf(lp, 0) {
		// As CmdStan: no gradient test at a point of zero density.
		why := "a zero density"
		if term := d.NonFiniteTerm(); term != nil {
			why = term.Error()
		}
		return fail(fmt.Errorf("the log density at the initial point is %g (%s): no gradient to test; give --init inside the support", lp, why))
	}
	num := make([]float64, len(theta))
	var evalErr error
	f := func(x []float64) float64 {
		v, err := d.LogDensity(x)
		if err != nil && evalErr == nil {
			evalErr = err
		}
		return v
	}
	centralDifferences(f, theta, num, *eps)
	if evalErr != nil {
		return fail(fmt.Errorf("finite differences: %w", evalErr))
	}
	fmt.Fprintln(stdout, "TEST GRADIENT MODE")
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, " Log probability=%.6g\n\n", lp)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, " param idx\tvalue\tmodel\tfinite diff\terror\t")
	bad := 0
	cols := bm.Columns()
	for i := range theta {
		e := grad[i] - num[i]
		if math.Abs(e) > *tol*math.Max(1, math.Abs(num[i])) {
			bad++
		}
		fmt.Fprintf(tw, " %d\t%.6g\t%.6g\t%.6g\t%.6g\t\n", i, theta[i], grad[i], num[i], e)
	}
	tw.Flush()
	if len(theta) > 0 && len(cols) >= len(theta) {
		fmt.Fprintf(stdout, "\n(unconstrained coordinates; parameter columns %s … %s)\n", cols[0], cols[len(theta)-1])
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "%d gradient entries differ from finite differences by more than %g\n", bad, *tol)
		return 1
	}
	return 0
}

// maxEpsilon bounds diagnose's --epsilon: a step of more than 1 on the
// unconstrained scale is no derivative (CmdStan's default is 1e-6).
const maxEpsilon = 1.0

// checkDiagnoseFlags checks diagnose's --epsilon (the finite-difference
// step) and --error (the tolerance): a NaN, an infinity, a step not above
// 0 or a negative tolerance would silently test another thing, or
// nothing.
func checkDiagnoseFlags(eps, tol float64) error {
	switch {
	case !(eps > 0 && eps <= maxEpsilon):
		return fmt.Errorf("--epsilon must be in (0, %g], got %g", maxEpsilon, eps)
	case !(tol >= 0 && !math.IsInf(tol, 1)):
		return fmt.Errorf("--error must be a finite number at least 0, got %g", tol)
	}
	return nil
}

// centralDifferences approximates the gradient of f at x with step h.
func centralDifferences(f func([]float64) float64, x, grad []float64, h float64) {
	y := append([]float64(nil), x...)
	for i := range x {
		y[i] = x[i] + h
		fp := f(y)
		y[i] = x[i] - h
		fm := f(y)
		y[i] = x[i]
		grad[i] = (fp - fm) / (2 * h)
	}
}

// writeNoise writes the crn noise as CSV: one column per replicate, named
// z1 … zK for a model with one crn call and crn2.z1 … for later calls.
// The file is written under a temporary name and renamed when complete.
func writeNoise(path string, noise [][][]float64) error {
	var header []string
	var cols [][]float64
	for id, reps := range noise {
		for k, draws := range reps {
			name := fmt.Sprintf("z%d", k+1)
			if id > 0 {
				name = fmt.Sprintf("crn%d.z%d", id+1, k+1)
			}
			header = append(header, name)
			cols = append(cols, draws)
		}
	}
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	var b strings.Builder
	b.WriteString(strings.Join(header, ","))
	b.WriteByte('\n')
	for i := 0; i < rows; i++ {
		for j, c := range cols {
			if j > 0 {
				b.WriteByte(',')
			}
			if i < len(c) {
				b.WriteString(strconv.FormatFloat(c[i], 'g', 17, 64))
			}
		}
		b.WriteByte('\n')
	}
	return writeAtomic("--crn-noise", path, func(w io.Writer) error {
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// writeAtomic writes path through a temporary file in its folder, renamed
// into place once write has succeeded, so that path is complete or absent.
//
// Its errors name the flag that gave the path and the path as given
// ("--out nodir/t.png: no such file or directory (the folder nodir)"),
// never the temporary file's name.
func writeAtomic(flag, path string, write func(io.Writer) error) error {
	if path == "" {
		return fmt.Errorf("%s is empty: give a file name", flag)
	}
	fail := func(err error) error {
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s %s: %v (the folder %s)", flag, path, err, filepath.Dir(path))
		}
		return fmt.Errorf("%s %s: %v", flag, path, err)
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("%s %s: is a directory: give a file name", flag, path)
	}
	// Ctrl-C or SIGTERM while the file is written leaves no file, hidden
	// temporary included (the rename after it is one system call).
	_, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if release() {
		return fmt.Errorf("interrupted; %s %s not written", flag, path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}
