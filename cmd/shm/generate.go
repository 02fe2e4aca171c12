package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/stancsv"
)

// cmdGenerate implements "shm generate model.shm data... DRAWS.csv...",
// CmdStan's generate_quantities method: the transformed parameters and
// generated quantities computed again at every draw of existing Stan CSV
// files (shm's or CmdStan's), one output file per input file.
func cmdGenerate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("generate", stderr)
	f := methodFlags{pointsGiven: true}
	f.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if err := f.validate(setFlags(fs)); err != nil {
		fmt.Fprintf(stderr, "shm generate: %v\n", err)
		return 2
	}
	model, dataFiles, drawFiles, err := splitDrawFiles(pos)
	if err != nil {
		fmt.Fprintf(stderr, "shm generate: %v\n", err)
		return 2
	}
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "shm generate: interrupted; no output written")
			return 1
		}
		return report(stderr, err)
	}
	// The model is bound with each file's seed (--seed replaces it), as
	// the run that wrote the file bound it: transformed data drawn with
	// _rng is then the run's.
	seedFlag := setFlags(fs)["seed"]
	type bound struct {
		r *methodRun
		d *runtime.Density
	}
	models := map[uint64]*bound{}
	var written []string
	defer func() {
		for _, w := range written {
			os.Remove(w) // the run failed: none of its files is left
		}
	}()
	for _, path := range drawFiles {
		in, err := stancsv.ReadFile(path)
		if err != nil {
			return fail(err)
		}
		seed := f.seed
		if !seedFlag {
			if seed, err = fileSeed(in, path); err != nil {
				return fail(err)
			}
		}
		b := models[seed]
		if b == nil {
			g := f
			g.seed, g.seedGiven = seed, true
			r, err := startMethod(ctx, "generate_quantities", append([]string{model}, dataFiles...), &g, stderr)
			if err != nil {
				return fail(err)
			}
			d, err := r.bm.NewDensity()
			if err != nil {
				return fail(err)
			}
			b = &bound{r, d}
			models[seed] = b
		}
		out, err := generateFile(ctx, b.d, b.r, in, path)
		if err != nil {
			return fail(err)
		}
		written = append(written, out)
	}
	done := written
	written = nil // complete: kept
	if release() {
		fmt.Fprintf(stderr, "shm generate: interrupted after the run: its files are complete (%s)\n", strings.Join(done, ", "))
		return 1
	}
	for _, w := range done {
		fmt.Fprintln(stdout, w)
	}
	return 0
}

// fileSeed returns the seed of the run that wrote in (the file path):
// its header's random seed.
func fileSeed(in *stancsv.File, path string) (uint64, error) {
	s, ok := in.Config["random.seed"]
	if !ok {
		s = in.Config["seed"]
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: its header gives no random seed (random.seed) for the generated quantities' draws: give --seed", path)
	}
	return v, nil
}

// generateFile computes the transformed parameters and generated
// quantities at every row of in (the file path) and writes them, after
// in's sampler columns and the parameters, to DIR/MODEL-gq-ID.csv. The
// random stream is the one shm sample's chain drew them from: the seed
// the model was bound with (r's) and the id of in's header.
func generateFile(ctx context.Context, d *runtime.Density, r *methodRun, in *stancsv.File, path string) (string, error) {
	var params []string
	for _, e := range r.bm.Layout.Entries {
		params = append(params, e.Columns...)
	}
	idx := make([]int, len(params))
	for j, c := range params {
		if idx[j] = slices.Index(in.Columns, c); idx[j] < 0 {
			return "", fmt.Errorf("%s has no column %s, a parameter of %s (its columns: %s)", path, c, r.model, listFiles(in.Columns))
		}
	}
	var lead []int // the method's columns: lp__, accept_stat__, ...
	var leadNames []string
	for j, c := range in.Columns {
		if strings.HasSuffix(c, "__") {
			lead, leadNames = append(lead, j), append(leadNames, c)
		}
	}
	seed := r.flags.seed
	id := 1
	if v, ok := in.Int("id"); ok && v >= 1 {
		id = v
	}
	rng := rand.New(rand.NewPCG(seed, uint64(id)<<32|0x6a))
	rows := make([][]float64, 0, len(in.Draws))
	point := make([]float64, len(params))
	for k, row := range in.Draws {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		for j, i := range idx {
			point[j] = row[i]
			if math.IsNaN(row[i]) || math.IsInf(row[i], 0) {
				return "", fmt.Errorf("%s: draw %d: %s is %g", path, k+1, params[j], row[i])
			}
		}
		out := make([]float64, 0, len(lead)+len(params)+8)
		for _, i := range lead {
			out = append(out, row[i])
		}
		out = append(out, point...)
		out, err := d.Generate(out, point, rng)
		if err != nil {
			return "", fmt.Errorf("%s: draw %d: %w", path, k+1, err)
		}
		rows = append(rows, out)
	}
	header := r.header([]string{methodArg(1, "generate_quantities", nil), methodArg(2, "fitted_params", path)}, leadNames)
	header.ID = id
	base := strings.TrimSuffix(filepath.Base(r.outputPath()), "-generate_quantities.csv")
	header.OutputFile = filepath.Join(r.flags.output, fmt.Sprintf("%s-gq-%d.csv", base, id))
	return r.write(header, rows, nil)
}

// splitDrawFiles separates generate's arguments: the model, then data
// files and Stan CSV files of draws (a CSV file whose header, below its
// comment lines, names lp__: every method's output does, no data file
// does).
func splitDrawFiles(pos []string) (model string, data, draws []string, err error) {
	if len(pos) < 2 {
		return "", nil, nil, errors.New("usage: shm generate model.shm [data...] DRAWS.csv... [--output DIR --seed N]")
	}
	for _, p := range pos[1:] {
		if isDrawsFile(p) {
			draws = append(draws, p)
		} else {
			data = append(data, p)
		}
	}
	if len(draws) == 0 {
		return "", nil, nil, fmt.Errorf("no Stan CSV file of draws among %s (one whose header names lp__)", strings.Join(pos[1:], ", "))
	}
	return pos[0], data, draws, nil
}

// isDrawsFile reports whether path is a Stan CSV file: a .csv file whose
// first line that is not a comment names lp__ (read up to 1 MiB).
func isDrawsFile(path string) bool {
	if !strings.EqualFold(filepath.Ext(path), ".csv") {
		return false
	}
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	sc := bufio.NewScanner(io.LimitReader(fh, 1<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return slices.Contains(strings.Split(line, ","), "lp__")
	}
	return false
}
