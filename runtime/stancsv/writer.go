package stancsv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SamplerColumns returns the sampler's columns of a NUTS run, in CmdStan's
// order.
func SamplerColumns() []string {
	return []string{"lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__"}
}

// FixedParamColumns returns the sampler's columns of a fixed_param run.
func FixedParamColumns() []string { return []string{"lp__", "accept_stat__"} }

// Config is the run configuration written to the comment header. Zero
// values of optional fields are written as CmdStan's defaults would be.
type Config struct {
	Model      string
	Start      time.Time // start_datetime (UTC); zero: omitted
	NumSamples int
	NumWarmup  int
	SaveWarmup bool
	Thin       int

	FixedParam bool // algorithm = fixed_param, no adaptation block

	AdaptEngaged bool
	Gamma        float64
	Delta        float64
	Kappa        float64
	T0           float64
	InitBuffer   int
	TermBuffer   int
	Window       int

	MaxDepth       int
	Metric         string // "diag_e" or "dense_e"
	MetricFile     string
	StepSize       float64
	StepSizeJitter float64
	NumChains      int

	ID        int // chain id
	DataFiles []string
	// Sets are the data values given on the command line (--set
	// name=value); DataSHA256 is a digest of the data files' contents:
	// chains of different data are told apart whatever the files' names
	// (shm's extension of CmdStan's header).
	Sets       []string
	DataSHA256 string
	// ModelSHA256 is a digest of the model's source text.
	ModelSHA256 string
	// TransformedDataSHA256, when not empty, is a digest of the values of
	// transformed data that drew random numbers (_rng): they depend on
	// the seed, and chains of other values are of other posteriors.
	TransformedDataSHA256 string
	// CRNSeed is the seed the noise of the model's crn(...) calls is
	// derived from, written when HasCRNSeed (a crn call without a seed
	// argument): chains of other noise are of other posteriors.
	CRNSeed    uint64
	HasCRNSeed bool
	Init       string // "2" (the default radius) or the init file or values
	Seed       uint64
	OutputFile string
	Refresh    int
	SigFigs    int // -1 or 0: default (6)

	// Method is the method of the run, "sample" when empty; for another
	// method (optimize, laplace, pathfinder, ...) MethodArgs are the lines
	// of its arguments below "method = NAME", indented as CmdStan writes
	// them, and the sample block's fields above are not written.
	Method     string
	MethodArgs []string
	// MethodColumns are the leading columns of such a method (lp__ for
	// optimize, log_p__ and log_g__ for laplace, ...), in place of the
	// sampler's.
	MethodColumns []string

	// Extra lines (without the "# ") appended to the header, e.g. the
	// program's name and version.
	Extra []string
}

// header renders the configuration as CmdStan 2.32 does.
func (c *Config) header() []string {
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	thin := max(c.Thin, 1)
	lines := []string{
		"stan_version_major = 2",
		"stan_version_minor = 32",
		"stan_version_patch = 2",
		"model = " + c.Model,
	}
	if c.ModelSHA256 != "" {
		lines = append(lines, "model_sha256 = "+c.ModelSHA256)
	}
	if !c.Start.IsZero() {
		lines = append(lines, "start_datetime = "+c.Start.UTC().Format("2006-01-02 15:04:05")+" UTC")
	}
	if c.Method != "" && c.Method != "sample" {
		lines = append(lines, "method = "+c.Method)
		lines = append(lines, c.MethodArgs...)
		return append(append(lines, c.common()...), c.Extra...)
	}
	lines = append(lines,
		"method = sample (Default)",
		"  sample",
		"    num_samples = "+strconv.Itoa(c.NumSamples),
		"    num_warmup = "+strconv.Itoa(c.NumWarmup),
		"    save_warmup = "+b(c.SaveWarmup),
		"    thin = "+strconv.Itoa(thin),
		"    adapt",
		"      engaged = "+b(c.AdaptEngaged && !c.FixedParam),
		"      gamma = "+f(c.Gamma),
		"      delta = "+f(c.Delta),
		"      kappa = "+f(c.Kappa),
		"      t0 = "+f(c.T0),
		"      init_buffer = "+strconv.Itoa(c.InitBuffer),
		"      term_buffer = "+strconv.Itoa(c.TermBuffer),
		"      window = "+strconv.Itoa(c.Window),
		"      save_metric = 0",
	)
	if c.FixedParam {
		lines = append(lines, "    algorithm = fixed_param")
	} else {
		lines = append(lines,
			"    algorithm = hmc (Default)",
			"      hmc",
			"        engine = nuts (Default)",
			"          nuts",
			"            max_depth = "+strconv.Itoa(c.MaxDepth),
			"        metric = "+c.Metric,
			"        metric_file = "+c.MetricFile,
			"        stepsize = "+f(c.StepSize),
			"        stepsize_jitter = "+f(c.StepSizeJitter),
		)
	}
	lines = append(lines, "    num_chains = "+strconv.Itoa(max(c.NumChains, 1)))
	lines = append(lines, c.common()...)
	return append(lines, c.Extra...)
}

// common renders the header's lines after the method's: the id, the
// data, the initial values, the seed and the output.
func (c *Config) common() []string {
	sig := c.SigFigs
	if sig <= 0 {
		sig = -1
	}
	lines := []string{
		"id = " + strconv.Itoa(c.ID),
		"data",
		"  file = " + strings.Join(c.DataFiles, ","),
	}
	if len(c.Sets) > 0 {
		lines = append(lines, "  set = "+strings.Join(c.Sets, "; "))
	}
	if c.DataSHA256 != "" {
		lines = append(lines, "  sha256 = "+c.DataSHA256)
	}
	if c.TransformedDataSHA256 != "" {
		lines = append(lines, "  transformed_sha256 = "+c.TransformedDataSHA256)
	}
	lines = append(lines,
		"init = "+c.Init,
		"random",
		"  seed = "+strconv.FormatUint(c.Seed, 10),
	)
	if c.HasCRNSeed {
		lines = append(lines, "  crn_seed = "+strconv.FormatUint(c.CRNSeed, 10))
	}
	lines = append(lines,
		"output",
		"  file = "+c.OutputFile,
		"  diagnostic_file = ",
		"  refresh = "+strconv.Itoa(c.Refresh),
		"  sig_figs = "+strconv.Itoa(sig),
		"  profile_file = profile.csv",
		"num_threads = 1",
	)
	return lines
}

// Writer writes one chain's Stan CSV file. Create it with [Create], write the
// draws, the adaptation and the timing, then Close it to move the complete
// file into place, or Abort to remove it. Finish and Commit split Close in
// two, so that several files can be completed first and moved into place
// together.
type Writer struct {
	f        *os.File
	tmp      string
	path     string
	w        *bufio.Writer
	sigFigs  int
	ncol     int
	buf      []byte
	err      error
	finished bool // Finish has run: the temporary file is complete and closed
	done     bool // committed or aborted
}

// tempPrefix is the start of the name of a temporary file for base.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// TempPattern is the filepath.Glob pattern of the temporary files that
// Create makes for path (those of a killed process stay behind).
func TempPattern(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, tempPrefix(base)+"*")
}

// Create starts the file path: it writes the header and the column names
// (the sampler columns of cfg, then columns) to a temporary file in path's
// directory.
func Create(path string, cfg *Config, columns []string) (*Writer, error) {
	if cfg.SigFigs > MaxSigFigs {
		return nil, fmt.Errorf("stancsv: %d significant figures requested, at most %d", cfg.SigFigs, MaxSigFigs)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return nil, fmt.Errorf("stancsv: %w", err)
	}
	w := &Writer{f: f, tmp: f.Name(), path: path, w: bufio.NewWriterSize(f, 1<<16), sigFigs: cfg.SigFigs}
	if err := w.writeHeader(cfg, columns); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// NewStream is like Create but writes to out directly (no file, no rename);
// Close only flushes.
func NewStream(out io.Writer, cfg *Config, columns []string) (*Writer, error) {
	if cfg.SigFigs > MaxSigFigs {
		return nil, fmt.Errorf("stancsv: %d significant figures requested, at most %d", cfg.SigFigs, MaxSigFigs)
	}
	w := &Writer{w: bufio.NewWriter(out), sigFigs: cfg.SigFigs}
	if err := w.writeHeader(cfg, columns); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) writeHeader(cfg *Config, columns []string) error {
	for _, l := range cfg.header() {
		w.comment(l)
	}
	cols := SamplerColumns()
	switch {
	case cfg.Method != "" && cfg.Method != "sample":
		cols = slices.Clone(cfg.MethodColumns)
	case cfg.FixedParam:
		cols = FixedParamColumns()
	}
	all := append(cols, columns...)
	w.ncol = len(all)
	w.write(strings.Join(all, ",") + "\n")
	return w.err
}

func (w *Writer) write(s string) {
	if w.err == nil {
		_, w.err = w.w.WriteString(s)
	}
}

// comment writes "# " + s.
func (w *Writer) comment(s string) { w.write("# " + s + "\n") }

// Comment writes a comment line ("# " + s).
func (w *Writer) Comment(s string) error {
	w.comment(s)
	return w.err
}

// WriteRow writes one draw: the sampler values followed by the model's
// values, as many as there are columns.
func (w *Writer) WriteRow(values []float64) error {
	if w.err != nil {
		return w.err
	}
	if len(values) != w.ncol {
		return fmt.Errorf("stancsv: row has %d values for %d columns", len(values), w.ncol)
	}
	b := w.buf[:0]
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendValue(b, v, w.sigFigs)
	}
	b = append(b, '\n')
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// WriteAdaptation writes CmdStan's adaptation block: "Adaptation
// terminated", the step size and the inverse metric (dim values for diag_e,
// dim rows of dim values for dense_e).
func (w *Writer) WriteAdaptation(stepSize float64, dense bool, dim int, invMetric []float64) error {
	want := dim
	if dense {
		want = dim * dim
	}
	if len(invMetric) != want {
		return fmt.Errorf("stancsv: inverse metric has %d values, want %d", len(invMetric), want)
	}
	w.comment("Adaptation terminated")
	w.comment("Step size = " + FormatValue(stepSize, w.sigFigs))
	row := func(x []float64) string {
		s := make([]string, len(x))
		for i, v := range x {
			s[i] = FormatValue(v, w.sigFigs)
		}
		return strings.Join(s, ", ")
	}
	if dense {
		w.comment("Elements of inverse mass matrix:")
		for i := 0; i < dim; i++ {
			w.comment(row(invMetric[i*dim : (i+1)*dim]))
		}
	} else {
		w.comment("Diagonal elements of inverse mass matrix:")
		w.comment(row(invMetric))
	}
	return w.err
}

// WriteTiming writes the elapsed-time block that ends a CmdStan file. Times
// are rounded to milliseconds, as CmdStan measures them.
func (w *Writer) WriteTiming(warmup, sampling time.Duration) error {
	ws := float64(warmup.Milliseconds()) / 1000
	ss := float64(sampling.Milliseconds()) / 1000
	title := " Elapsed Time: "
	pad := strings.Repeat(" ", len(title))
	w.comment("")
	w.comment(title + FormatValue(ws, w.sigFigs) + " seconds (Warm-up)")
	w.comment(pad + FormatValue(ss, w.sigFigs) + " seconds (Sampling)")
	w.comment(pad + FormatValue(ws+ss, w.sigFigs) + " seconds (Total)")
	w.comment("")
	return w.err
}

// Close flushes the file, syncs it and renames it to its final name:
// Finish, then Commit.
func (w *Writer) Close() error {
	if err := w.Finish(); err != nil {
		return err
	}
	return w.Commit()
}

// Finish flushes the file, syncs it and closes it under its temporary
// name; Commit then moves it into place, or Abort removes it. A stream
// (NewStream) is only flushed.
func (w *Writer) Finish() error {
	if w.done || w.finished {
		return errors.New("stancsv: writer already closed")
	}
	w.finished = true
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.f == nil {
		w.done = true
		return w.err
	}
	if w.err == nil {
		// CreateTemp makes the file private; output files are ordinary ones.
		w.err = w.f.Chmod(0o644)
	}
	if w.err == nil {
		w.err = w.f.Sync()
	}
	if cerr := w.f.Close(); w.err == nil {
		w.err = cerr
	}
	if w.err != nil {
		w.done = true
		os.Remove(w.tmp)
		return fmt.Errorf("stancsv: writing %s: %w", w.path, w.err)
	}
	return nil
}

// Commit renames the finished file to its final name.
func (w *Writer) Commit() error {
	switch {
	case w.done:
		if w.f == nil && w.finished {
			return nil // a stream: nothing to move
		}
		return errors.New("stancsv: writer already closed")
	case !w.finished:
		return errors.New("stancsv: Commit before Finish")
	}
	w.done = true
	if err := os.Rename(w.tmp, w.path); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("stancsv: writing %s: %w", w.path, err)
	}
	return nil
}

// Abort discards the file, also after Finish. It is safe to call after
// Close or Commit (then it does nothing), so `defer w.Abort()` cleans up on
// every error path.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.f != nil {
		if !w.finished {
			w.f.Close()
		}
		os.Remove(w.tmp)
	}
}
