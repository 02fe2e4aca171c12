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
	// _rng is then the run's. The files are read together (their draws
	// bounded together), and each output is written under a temporary
	// name and moved into place when all are complete: a failure or a
	// stop leaves none of this run's files and the previous ones as they
	// were.
	seedFlag := setFlags(fs)["seed"]
	ins, err := interruptible(ctx, func() ([]*stancsv.File, error) { return stancsv.ReadFiles(drawFiles...) })
	if err != nil {
		return fail(err)
	}
	type bound struct {
		r *methodRun
		d *runtime.Density
	}
	models := map[uint64]*bound{}
	type job struct {
		b      *bound
		header *stancsv.Config
	}
	jobs := make([]job, len(ins))
	from := map[string]string{} // output -> its input
	for i, in := range ins {
		path := drawFiles[i]
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
			r.inputs = append(r.inputs, drawFiles...)
			d, err := r.bm.NewDensity()
			if err != nil {
				return fail(err)
			}
			b = &bound{r, d}
			models[seed] = b
		}
		if err := sameFit(in, path, b.r); err != nil {
			return fail(err)
		}
		header := generateHeader(b.r, in, path)
		if prev, ok := from[header.OutputFile]; ok {
			return fail(fmt.Errorf("%s and %s would both give %s (chain id %d): give files of distinct chains, or run them apart with their own --output", prev, path, header.OutputFile, header.ID))
		}
		from[header.OutputFile] = path
		jobs[i] = job{b, header}
	}
	var writers []*stancsv.Writer
	defer func() {
		for _, w := range writers {
			w.Abort() // after Commit, nothing
		}
	}()
	for i, j := range jobs {
		w, unlock, err := j.b.r.create(j.header, j.b.r.bm.Columns())
		if err != nil {
			return fail(err)
		}
		defer unlock()
		writers = append(writers, w)
		if err := generateFile(ctx, j.b.d, j.b.r, ins[i], drawFiles[i], w); err != nil {
			return fail(err)
		}
		if err := w.Finish(); err != nil {
			return fail(err)
		}
	}
	var done []string
	for i, w := range writers {
		if err := w.Commit(); err != nil {
			return fail(err)
		}
		done = append(done, jobs[i].header.OutputFile)
	}
	if release() {
		fmt.Fprintf(stderr, "shm generate: interrupted after the run: its files are complete (%s)\n", strings.Join(done, ", "))
		return 1
	}
	for _, w := range done {
		fmt.Fprintln(stdout, w)
	}
	return 0
}

// sameFit refuses a file of draws or a mode (what names it) whose header
// says it is of another model text, other data files or other --set
// values than the run r is bound to (where the header records them:
// CmdStan's files do not).
func sameFit(in *stancsv.File, what string, r *methodRun) error {
	for _, c := range []struct{ key, want, what string }{
		{"model_sha256", r.bm.IR.SourceSHA256, "another model text than " + r.model},
		{"data.sha256", r.dataDigest, "other data files than these"},
		{"data.set", strings.Join(r.flags.sets, "; "), "other --set values than these"},
	} {
		if got, ok := in.Config[c.key]; ok && got != c.want {
			return fmt.Errorf("%s is of %s (its %s = %s): it is of another posterior", what, c.what, c.key, got)
		}
	}
	return nil
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

// generateHeader is the header of the output of in (the file path):
// DIR/MODEL-gq-ID.csv, ID in's chain id; its leading columns are in's
// columns ending in "__" (lp__, accept_stat__, ...).
func generateHeader(r *methodRun, in *stancsv.File, path string) *stancsv.Config {
	var lead []string
	for _, c := range in.Columns {
		if strings.HasSuffix(c, "__") {
			lead = append(lead, c)
		}
	}
	header := r.header([]string{methodArg(1, "generate_quantities", nil), methodArg(2, "fitted_params", path)}, lead)
	header.ID = 1
	if v, ok := in.Int("id"); ok && v >= 1 {
		header.ID = v
	}
	header.OutputFile = filepath.Join(r.flags.output, fmt.Sprintf("%s-gq-%d.csv", r.bm.IR.Name, header.ID))
	return header
}

// generateFile computes the transformed parameters and generated
// quantities at every row of in (the file path) and writes each row, in's
// leading columns and the parameters first, to w. The random stream is
// the one shm sample's chain drew them from: the seed the model was bound
// with (r's) and the id of in's header.
func generateFile(ctx context.Context, d *runtime.Density, r *methodRun, in *stancsv.File, path string, w *stancsv.Writer) error {
	params, idx, err := paramIndexes(r.bm, in, path, r.model)
	if err != nil {
		return err
	}
	var lead []int // the method's columns: lp__, accept_stat__, ...
	for j, c := range in.Columns {
		if strings.HasSuffix(c, "__") {
			lead = append(lead, j)
		}
	}
	id := 1
	if v, ok := in.Int("id"); ok && v >= 1 {
		id = v
	}
	rng := rand.New(rand.NewPCG(r.flags.seed, uint64(id)<<32|0x6a))
	point := make([]float64, len(params))
	var out []float64
	for k, row := range in.Draws {
		if err := ctx.Err(); err != nil {
			return err
		}
		for j, i := range idx {
			point[j] = row[i]
			if math.IsNaN(row[i]) || math.IsInf(row[i], 0) {
				return fmt.Errorf("%s: draw %d: %s is %g", path, k+1, params[j], row[i])
			}
		}
		out = out[:0]
		for _, i := range lead {
			out = append(out, row[i])
		}
		out = append(out, point...)
		var err error
		if out, err = d.Generate(out, point, rng); err != nil {
			return fmt.Errorf("%s: draw %d: %w", path, k+1, err)
		}
		if err := w.WriteRow(out); err != nil {
			return err
		}
	}
	return nil
}

// splitDrawFiles separates generate's arguments: the model, then data
// files and Stan CSV files of draws (isDrawsFile).
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
		return "", nil, nil, fmt.Errorf("no Stan CSV file of draws among %s (one whose header names lp__ or another column ending in __)", strings.Join(pos[1:], ", "))
	}
	return pos[0], data, draws, nil
}

// isDrawsFile reports whether path is a Stan CSV file: a .csv file whose
// first line that is not a comment names a column ending in "__" (lp__,
// log_p__, lp_approx__: every method's output has one; read up to 1
// MiB).
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
		for _, c := range strings.Split(line, ",") {
			if strings.HasSuffix(strings.TrimSpace(c), "__") {
				return true
			}
		}
		return false
	}
	return false
}
