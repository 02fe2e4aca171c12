package stancsv

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testConfig() *Config {
	return &Config{
		Model: "bernoulli_model", NumSamples: 3, NumWarmup: 2, SaveWarmup: true, Thin: 1,
		AdaptEngaged: true, Gamma: 0.05, Delta: 0.8, Kappa: 0.75, T0: 10, InitBuffer: 75, TermBuffer: 50, Window: 25,
		MaxDepth: 10, Metric: "diag_e", StepSize: 1, NumChains: 1, ID: 2, DataFiles: []string{"bernoulli.data.json"},
		Init: "2", Seed: 1234, OutputFile: "out.csv", Refresh: 100,
	}
}

// testRows are five rows of sampler columns, theta and x.1.2, two of
// warmup for testConfig.
var testRows = [][]float64{
	{-7.5, 0.9, 1.2, 2, 3, 0, 8.1, 0.25, 1e-5},
	{-7.25, 1, 1.2, 1, 1, 0, 7.9, 0.3, math.NaN()},
	{-6.9, 0.75, 0.93, 2, 3, 1, 7.3, 0.123456789, math.Inf(-1)},
	{-7.0, 0.8, 0.93, 3, 7, 0, 7.5, 0.2, 123456789},
	{-8.0, 0.95, 0.93, 1, 1, 0, 8.5, 0.1, 0},
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out-2.csv")
	cfg := testConfig()
	w, err := Create(path, cfg, []string{"theta", "x.1.2"})
	if err != nil {
		t.Fatal(err)
	}
	rows := testRows
	for i, r := range rows {
		if i == 2 {
			if err := w.WriteAdaptation(0.932037, false, 2, []float64{0.591014, 2.5}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteRow([]float64{1}); err == nil {
		t.Error("short row accepted")
	}
	if err := w.WriteTiming(1234*time.Millisecond, 2500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("output file exists before Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Abort() // no-op after Close
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "out-2.csv" {
		t.Fatalf("directory holds %v, want only out-2.csv", entries)
	}
	raw, _ := os.ReadFile(path)
	text := string(raw)
	for _, want := range []string{
		"# model = bernoulli_model\n",
		"#     num_samples = 3\n", "#     num_warmup = 2\n", "#     save_warmup = 1\n", "#     thin = 1\n",
		"#       engaged = 1\n", "#       delta = 0.8\n", "#         engine = nuts (Default)\n",
		"#             max_depth = 10\n", "#         metric = diag_e\n", "# id = 2\n",
		"#   file = bernoulli.data.json\n", "#   seed = 1234\n",
		"\nlp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,theta,x.1.2\n",
		"-7.25,1,1.2,1,1,0,7.9,0.3,nan\n",
		"# Adaptation terminated\n# Step size = 0.932037\n# Diagonal elements of inverse mass matrix:\n# 0.591014, 2.5\n",
		"-6.9,0.75,0.93,2,3,1,7.3,0.123457,-inf\n",
		"-7,0.8,0.93,3,7,0,7.5,0.2,1.23457e+08\n",
		"# \n#  Elapsed Time: 1.234 seconds (Warm-up)\n#                0.002 seconds (Sampling)\n#                1.236 seconds (Total)\n# \n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("file lacks %q", want)
		}
	}

	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Columns, append(SamplerColumns(), "theta", "x.1.2")) {
		t.Errorf("columns %v", f.Columns)
	}
	if len(f.Draws) != 5 || f.NumWarmupRows != 2 || len(f.SamplingDraws()) != 3 {
		t.Fatalf("%d rows, %d warmup", len(f.Draws), f.NumWarmupRows)
	}
	for i, r := range rows {
		for j, v := range r {
			got := f.Draws[i][j]
			want, _ := parseRow(FormatValue(v, 6))
			if !(got == want[0] || math.IsNaN(got) && math.IsNaN(v)) {
				t.Errorf("row %d col %d: read %g, wrote %g", i, j, got, v)
			}
		}
	}
	if !f.HasAdaptation || f.StepSize != 0.932037 || !slices.Equal(f.InvMetric, []float64{0.591014, 2.5}) || f.DenseMetric {
		t.Errorf("adaptation: %v %g %v dense=%v", f.HasAdaptation, f.StepSize, f.InvMetric, f.DenseMetric)
	}
	if !f.HasTiming || f.WarmupSeconds != 1.234 || f.SamplingSeconds != 0.002 {
		t.Errorf("timing %g %g", f.WarmupSeconds, f.SamplingSeconds)
	}
	for key, want := range map[string]string{
		"model": "bernoulli_model", "num_samples": "3", "thin": "1", "max_depth": "10", "seed": "1234",
		"data.file": "bernoulli.data.json", "output.file": "out.csv", "file": "bernoulli.data.json",
		"method.sample.num_warmup": "2", "method.sample.algorithm.hmc.engine.nuts.max_depth": "10",
	} {
		if got := f.Config[key]; got != want {
			t.Errorf("config %q = %q, want %q", key, got, want)
		}
	}
	// Another chain of the run: another id, other draws.
	g := *f
	g.Config = maps.Clone(f.Config)
	g.Config["id"] = "3"
	g.Draws = slices.Clone(f.Draws)
	g.Draws[4] = slices.Clone(g.Draws[4])
	g.Draws[4][7]++
	fit, err := ToFit([]*File{f, &g})
	if err != nil {
		t.Fatal(err)
	}
	if len(fit.Chains) != 2 || len(fit.Chains[0].Draws) != 3 || fit.Chains[0].MaxDepth != 10 || fit.Model != "bernoulli_model" {
		t.Errorf("fit %+v", fit)
	}
}

func TestSigFigsAndDense(t *testing.T) {
	var buf bytes.Buffer
	cfg := testConfig()
	cfg.SigFigs = 18
	cfg.Metric = "dense_e"
	w, err := NewStream(&buf, cfg, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAdaptation(0.5, true, 2, []float64{1, 0.1, 0.1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRow([]float64{-1, 0.5, 0.5, 1, 1, 0, 1, 0.1, 2.0 / 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		"#   sig_figs = 18\n",
		"# Elements of inverse mass matrix:\n# 1, 0.100000000000000006\n# 0.100000000000000006, 2\n",
		",0.100000000000000006,0.66666666666666663\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	f, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if !f.DenseMetric || !slices.Equal(f.InvMetric, []float64{1, 0.1, 0.1, 2}) || f.Draws[0][8] != 2.0/3 {
		t.Errorf("read back dense %v %v, value %v", f.DenseMetric, f.InvMetric, f.Draws[0][8])
	}
	if _, err := NewStream(&buf, &Config{SigFigs: 19}, nil); err == nil {
		t.Error("19 significant figures accepted")
	}
}

func TestFixedParamHeader(t *testing.T) {
	var buf bytes.Buffer
	cfg := testConfig()
	cfg.FixedParam = true
	w, err := NewStream(&buf, cfg, []string{"y_rep.1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRow([]float64{0, 0, 1.5}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	text := buf.String()
	if !strings.Contains(text, "\nlp__,accept_stat__,y_rep.1\n0,0,1.5\n") || !strings.Contains(text, "#     algorithm = fixed_param\n") {
		t.Errorf("fixed_param output:\n%s", text)
	}
}

func TestAbortRemovesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	w, err := Create(path, testConfig(), []string{"theta"})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteRow([]float64{1, 2, 3, 4, 5, 6, 7, 8})
	w.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("directory not empty after Abort: %v", entries)
	}
	if _, err := Create(filepath.Join(dir, "missing", "out.csv"), testConfig(), nil); err == nil {
		t.Error("no error creating a file in a missing directory")
	}
}

// A file in CmdStan 2.32's own layout (bernoulli example, shortened, with
// " (Default)" markers, Windows line ends and a dense metric).
const cmdstanFile = "# stan_version_major = 2\r\n" +
	`# stan_version_minor = 32
# stan_version_patch = 2
# model = bernoulli_model
# start_datetime = 2023-06-12 19:58:25 UTC
# method = sample (Default)
#   sample
#     num_samples = 4
#     num_warmup = 1000 (Default)
#     save_warmup = 0 (Default)
#     thin = 1 (Default)
#     adapt
#       engaged = 1 (Default)
#       gamma = 0.050000000000000003 (Default)
#       delta = 0.80000000000000004 (Default)
#       kappa = 0.75 (Default)
#       t0 = 10 (Default)
#       init_buffer = 75 (Default)
#       term_buffer = 50 (Default)
#       window = 25 (Default)
#       save_metric = 0 (Default)
#     algorithm = hmc (Default)
#       hmc
#         engine = nuts (Default)
#           nuts
#             max_depth = 10 (Default)
#         metric = dense_e
#         metric_file =  (Default)
#         stepsize = 1 (Default)
#         stepsize_jitter = 0 (Default)
#     num_chains = 1 (Default)
# id = 1 (Default)
# data
#   file = bernoulli.data.json
# init = 2 (Default)
# random
#   seed = 3252652196
# output
#   file = output.csv (Default)
#   diagnostic_file =  (Default)
#   refresh = 100 (Default)
#   sig_figs = -1 (Default)
#   profile_file = profile.csv (Default)
# num_threads = 1 (Default)
# stanc_version = stanc3 v2.32.2
# stancflags = 
lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,theta,z.1
# Adaptation terminated
# Step size = 0.932037
# Elements of inverse mass matrix:
# 0.591014, -0.01
# -0.01, 1.2
-7.28395,0.95,0.932037,1,3,0,7.30627,0.283036,1
-6.79903,1,0.932037,1,1,0,7.17086,0.230061,-1.5e-05
-7.51288,0.824458,0.932037,2,3,0,7.55041,0.355497,nan
-6.84927,0.978618,0.932037,2,3,0,7.54014,0.220195,inf
# 
#  Elapsed Time: 0.007 seconds (Warm-up)
#                0.02 seconds (Sampling)
#                0.027 seconds (Total)
# 
`

func TestReadCmdStan(t *testing.T) {
	f, err := Read(strings.NewReader(cmdstanFile))
	if err != nil {
		t.Fatal(err)
	}
	if f.Config["stan_version_major"] != "2" || f.Config["model"] != "bernoulli_model" || f.Config["delta"] != "0.80000000000000004" ||
		f.Config["metric_file"] != "" || f.Config["stancflags"] != "" || f.Config["seed"] != "3252652196" {
		t.Errorf("config %v", f.Config)
	}
	if n, ok := f.Int("num_warmup"); !ok || n != 1000 {
		t.Errorf("num_warmup %d %v", n, ok)
	}
	if d, ok := f.Float("delta"); !ok || d != 0.8 {
		t.Errorf("delta %g", d)
	}
	if len(f.Columns) != 9 || f.Columns[8] != "z.1" || len(f.Draws) != 4 || f.NumWarmupRows != 0 {
		t.Fatalf("columns %v, %d draws, %d warmup", f.Columns, len(f.Draws), f.NumWarmupRows)
	}
	if f.Draws[1][8] != -1.5e-05 || !math.IsNaN(f.Draws[2][8]) || !math.IsInf(f.Draws[3][8], 1) || f.Draws[0][0] != -7.28395 {
		t.Errorf("draws %v", f.Draws)
	}
	if !f.DenseMetric || !slices.Equal(f.InvMetric, []float64{0.591014, -0.01, -0.01, 1.2}) || f.StepSize != 0.932037 {
		t.Errorf("metric %v %v step %g", f.DenseMetric, f.InvMetric, f.StepSize)
	}
	if f.WarmupSeconds != 0.007 || f.SamplingSeconds != 0.02 {
		t.Errorf("timing %g %g", f.WarmupSeconds, f.SamplingSeconds)
	}
	if _, err := Read(strings.NewReader("# only comments\n")); err == nil {
		t.Error("file without header accepted")
	}
	if _, err := Read(strings.NewReader("a,b\n1,2\n1,x\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad value: error %v", err)
	}
	if _, err := Read(strings.NewReader("a,b\n1,2,3\n")); err == nil {
		t.Error("long row accepted")
	}
}

// TestReadNotDraws checks that a CSV file with neither a Stan CSV header
// nor an lp__ column (a data file) is refused, naming its first columns,
// and that either one makes it a file of draws.
func TestReadNotDraws(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		text, want string
	}{
		{"a,b\n1,2\n3,4\n", `not a file of draws: it has neither a Stan CSV header (its # lines) nor an lp__ column (columns "a", "b")`},
		{"y\n", `(columns "y")`},
		{"a,b,c,d,e,f,g\n1,2,3,4,5,6,7\n", `(columns "a", "b", "c", "d", "e", … (7 in all))`},
		{long + "\n1\n", `(columns "` + long[:40] + `…")`},
		{"lp__,a\n1,2\n", ""},
		{"# model = m\na,b\n1,2\n", ""},
	} {
		_, err := Read(strings.NewReader(c.text))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%.30q: error %v, want %q", c.text, err, c.want)
		}
	}
}

func TestToFitMismatch(t *testing.T) {
	a, err := Read(strings.NewReader("lp__,x\n1,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read(strings.NewReader("lp__,y\n1,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ToFit([]*File{a, b}); err == nil {
		t.Error("files with different columns combined")
	}
	if _, err := ToFit(nil); err == nil {
		t.Error("no files accepted")
	}
}

// TestToFitRuns checks that ToFit refuses a file cut short (at a line
// boundary, so that it still parses) and files of another model, and warns
// about files of another run (seed, data).
func TestToFitRuns(t *testing.T) {
	dir := t.TempDir()
	written := 0 // each file's draws differ from the others'
	write := func(name string, edit func(c *Config)) string {
		written++
		cfg := testConfig()
		cfg.SaveWarmup = false
		edit(cfg)
		path := filepath.Join(dir, name)
		w, err := Create(path, cfg, []string{"theta"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range cfg.NumSamples {
			if err := w.WriteRow([]float64{-7, 0.9, 1, 2, 3, 0, 8, float64(i + 1000*written)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteTiming(time.Second, time.Second); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.csv", func(*Config) {})
	same := write("b.csv", func(c *Config) { c.ID = 3 })
	fit, err := ReadFit(a, same)
	if err != nil || len(fit.Warnings) != 0 {
		t.Fatalf("two chains of one run: %v, warnings %q", err, fit.Warnings)
	}
	other := write("c.csv", func(c *Config) { c.Seed = 99; c.DataFiles = []string{"other.json"} })
	fit, err = ReadFit(a, other)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(fit.Warnings, "\n"); !strings.Contains(w, "random.seed = 99") || !strings.Contains(w, "data.file = other.json") {
		t.Errorf("warnings %q, want the seed and the data files", fit.Warnings)
	}
	// Chains of other posteriors: the same model name, another text (a
	// prior edited between runs), other data contents, other --set values.
	for i, c := range []struct {
		key  string
		edit func(c *Config, n int)
	}{
		{"model_sha256", func(c *Config, n int) { c.ModelSHA256 = fmt.Sprintf("%08x", n) }},
		{"data.sha256", func(c *Config, n int) { c.DataSHA256 = fmt.Sprintf("%08x", n) }},
		{"data.set", func(c *Config, n int) { c.Sets = []string{fmt.Sprintf("lambda=%d", n)} }},
		// Models whose posterior depends on the seed: transformed data
		// drawn with _rng, crn(...) noise from the run's seed.
		{"data.transformed_sha256", func(c *Config, n int) { c.Seed, c.TransformedDataSHA256 = uint64(n), fmt.Sprintf("%08x", n) }},
		{"random.crn_seed", func(c *Config, n int) { c.Seed, c.CRNSeed, c.HasCRNSeed = uint64(n), uint64(n), true }},
	} {
		first := write(fmt.Sprintf("p%d-1.csv", i), func(cfg *Config) { cfg.ID = 4; c.edit(cfg, 1) })
		second := write(fmt.Sprintf("p%d-2.csv", i), func(cfg *Config) { c.edit(cfg, 2) })
		_, err := ReadFit(first, second)
		var mixed *MixedError
		if !errors.As(err, &mixed) || mixed.File != 2 || mixed.Key != c.key || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s differs: %v, want a *MixedError naming file 2 and %s", c.key, err, c.key)
		}
		fit, err := ReadMixedFit(first, second)
		if err != nil {
			t.Fatalf("%s differs, pooled on purpose: %v", c.key, err)
		}
		if w := strings.Join(fit.Warnings, "\n"); len(fit.Chains) != 2 || !strings.Contains(w, "file 2 is from another run than file 1: "+c.key+" = ") {
			t.Errorf("%s differs, pooled on purpose: %d chains, warnings %q", c.key, len(fit.Chains), fit.Warnings)
		}
	}
	model := write("d.csv", func(c *Config) { c.Model = "other_model" })
	if _, err := ReadFit(a, model); err == nil || !strings.Contains(err.Error(), "other_model") {
		t.Errorf("files of two models: %v", err)
	}
	// Cut the last draw (and the timing after it) at a line boundary.
	text, err := os.ReadFile(same)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(text), "\n")
	last := 0
	for i, l := range lines {
		if l != "" && !strings.HasPrefix(l, "#") {
			last = i
		}
	}
	cut := filepath.Join(dir, "cut.csv")
	if err := os.WriteFile(cut, []byte(strings.Join(lines[:last], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFit(a, cut); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("a file cut short: %v", err)
	}
	// Cut before the end of the last draw's line (inside its last
	// value, of which a digit may be missing): the rows' count still
	// matches the header, but the line has no end.
	lastDraw := strings.TrimSuffix(lines[last], "\n")
	inside := filepath.Join(dir, "inside.csv")
	if err := os.WriteFile(inside, []byte(strings.Join(lines[:last], "")+lastDraw), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: stancsv: line %d, the last, has no end of line: the file was cut short or is still being written", inside, last+1)
	if _, err := ReadFit(a, inside); err == nil || err.Error() != want {
		t.Errorf("a file cut inside its last value: %v, want %s", err, want)
	}
}

// TestReadBudget: the numbers of the files read together (header columns,
// draws, a metric's rows) are counted before a line is split, and a file
// beyond the budget is an error naming the line; within it, the values
// read are unchanged.
func TestReadBudget(t *testing.T) {
	text := "lp__,a,b\n# Adaptation terminated\n# Step size = 0.5\n# Diagonal elements of inverse mass matrix:\n# 1, 2\n" +
		"-1,2,3\n-4,5,nan\n"
	for _, c := range []struct {
		budget int64
		want   string // "" for no error
	}{
		{0, ""}, // no bound
		{11, ""},
		{10, "line 7: stancsv: the files hold more than 10 numbers"},
		{4, "line 5: stancsv: the files hold more than 4 numbers"},
		{2, "line 1: stancsv: the files hold more than 2 numbers"},
	} {
		f, err := read(strings.NewReader(text), &budget{left: c.budget, max: c.budget})
		if c.want == "" {
			if err != nil || len(f.Draws) != 2 || f.Draws[1][1] != 5 || !math.IsNaN(f.Draws[1][2]) || len(f.InvMetric) != 2 {
				t.Errorf("budget %d: %v, %+v", c.budget, err, f)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("budget %d: %v, want %q", c.budget, err, c.want)
		}
	}
	// One budget for the files of one read.
	dir := t.TempDir()
	var paths []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("c%d.csv", i))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if _, err := readFiles(&budget{left: 22, max: 22}, paths[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := readFiles(&budget{left: 22, max: 22}, paths); err == nil || !strings.Contains(err.Error(), "c2.csv: line 1: stancsv: the files hold more than 22 numbers") {
		t.Errorf("three files of 11 numbers, a budget of 22: %v", err)
	}
}

// TestReadRefusesCopies: a header that names a column twice is refused,
// and the same draws under another chain id and seed are the same chain
// given twice.
func TestReadRefusesCopies(t *testing.T) {
	if _, err := Read(strings.NewReader("lp__,lp__,mu\n-1,0.5,2\n")); err == nil || !strings.Contains(err.Error(), `line 1: column 2 is "lp__" again (column 1)`) {
		t.Errorf("a column twice: %v", err)
	}
	a, err := Read(strings.NewReader("# id = 1\n# seed = 5\nlp__,mu\n-1,0.5\n-2,0.7\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read(strings.NewReader("# id = 7\n# seed = 9\nlp__,mu\n-1,0.5\n-2,0.7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ToFit([]*File{a, b}); err == nil || !strings.Contains(err.Error(), "file 2 is the chain of file 1 again (the same draws") {
		t.Errorf("the same draws under another id: %v", err)
	}
}

// writeChain writes a chain file of cfg into dir: its warmup draws when
// cfg.SaveWarmup, then its draws after warmup, both thinned by cfg.Thin,
// iteration i's value of theta draw(i) (i from 0, warmup first).
func writeChain(t *testing.T, dir, name string, cfg *Config, draw func(i int) float64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := Create(path, cfg, []string{"theta"})
	if err != nil {
		t.Fatal(err)
	}
	thin := max(cfg.Thin, 1)
	row := func(i int) {
		if err := w.WriteRow([]float64{-7, 0.9, 1, 2, 3, 0, 8, draw(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < cfg.NumWarmup; i += thin {
		if cfg.SaveWarmup {
			row(i)
		}
	}
	if err := w.WriteAdaptation(0.9, false, 1, []float64{1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < cfg.NumSamples; i += thin {
		row(cfg.NumWarmup + i)
	}
	if err := w.WriteTiming(time.Second, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestToFitSameChainByHeader: files whose headers agree on the model,
// the data, the seed, the chain id and the sampler settings that change
// the draws hold one chain, however they wrote its draws (digits,
// thinning, warmup draws kept, a longer run): ToFit refuses them as the
// chain given twice, though their draws differ. Files that differ in one
// of those are other chains.
func TestToFitSameChainByHeader(t *testing.T) {
	dir := t.TempDir()
	base := func() *Config {
		c := testConfig()
		c.NumWarmup, c.NumSamples, c.SaveWarmup = 10, 20, false
		c.ModelSHA256, c.DataSHA256 = "aa", "bb"
		return c
	}
	// The chain's values, as written with the run's sig_figs: the same
	// chain rounded otherwise.
	value := func(i int) float64 { return 1 + float64(i)/7 }
	rounded := func(i int) float64 { x, _ := strconv.ParseFloat(FormatValue(value(i), 3), 64); return x }
	first := writeChain(t, dir, "first.csv", base(), value)
	const again = "file 2 is the chain of file 1 again (the same model, data, seed 1234, chain id 2 and sampler settings"
	for i, c := range []struct {
		name string
		edit func(c *Config)
		want string // "": another chain, gathered
	}{
		{"sig_figs", func(c *Config) { c.SigFigs = 3 }, again},
		{"save_warmup", func(c *Config) { c.SaveWarmup = true }, again},
		{"thin", func(c *Config) { c.Thin = 2 }, again},
		{"thin and save_warmup", func(c *Config) { c.Thin, c.SaveWarmup = 3, true }, again},
		{"num_samples", func(c *Config) { c.NumSamples = 30 }, again},
		{"num_samples shorter", func(c *Config) { c.NumSamples = 5 }, again},
		{"num_chains and output file", func(c *Config) { c.NumChains, c.OutputFile = 4, "elsewhere.csv" }, again},
		{"data file renamed", func(c *Config) { c.DataFiles = []string{"renamed.json"} }, again},
		{"id", func(c *Config) { c.ID = 3 }, ""},
		{"seed", func(c *Config) { c.Seed = 5 }, ""},
		{"num_warmup", func(c *Config) { c.NumWarmup = 12 }, ""},
		{"delta", func(c *Config) { c.Delta = 0.95 }, ""},
		{"max_depth", func(c *Config) { c.MaxDepth = 8 }, ""},
		{"metric", func(c *Config) { c.Metric = "dense_e" }, ""},
		{"stepsize", func(c *Config) { c.StepSize = 0.5 }, ""},
		{"window", func(c *Config) { c.Window = 10 }, ""},
		{"init", func(c *Config) { c.Init = "0" }, ""},
		{"model text", func(c *Config) { c.ModelSHA256 = "cc" }, "another posterior"},
		{"data contents", func(c *Config) { c.DataSHA256 = "cc" }, "another posterior"},
		// A model whose posterior depends on the seed: file 1 and the
		// other of another seed (first edits file 1).
		{"transformed data", func(c *Config) { c.Seed, c.TransformedDataSHA256 = 5, "cc" }, "another posterior"},
		{"crn noise", func(c *Config) { c.Seed, c.CRNSeed, c.HasCRNSeed = 5, 5, true }, "another posterior"},
	} {
		first := first
		switch c.name {
		case "transformed data":
			cfg := base()
			cfg.TransformedDataSHA256 = "dd"
			first = writeChain(t, dir, fmt.Sprintf("first%d.csv", i), cfg, value)
		case "crn noise":
			cfg := base()
			cfg.CRNSeed, cfg.HasCRNSeed = cfg.Seed, true
			first = writeChain(t, dir, fmt.Sprintf("first%d.csv", i), cfg, value)
		}
		cfg := base()
		c.edit(cfg)
		draw := rounded
		if c.want != again {
			draw = func(i int) float64 { return -value(i) } // another chain's
		}
		second := writeChain(t, dir, fmt.Sprintf("second%d.csv", i), cfg, draw)
		fit, err := ReadFit(first, second)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s differs: %v, want another chain, gathered", c.name, err)
		case c.want == "" && len(fit.Chains) != 2:
			t.Errorf("%s differs: %d chains", c.name, len(fit.Chains))
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s differs: %v, want %q", c.name, err, c.want)
		}
		// The order of the files does not matter.
		if _, err := ReadFit(second, first); (err == nil) != (c.want == "") {
			t.Errorf("%s differs, files the other way round: %v", c.name, err)
		}
	}
	// A CmdStan file (no digests) of the same seed and id and settings,
	// another thinning: the same chain; with another data file, another.
	cmd := func(name string, edit func(c *Config)) string {
		cfg := base()
		cfg.ModelSHA256, cfg.DataSHA256 = "", ""
		edit(cfg)
		return writeChain(t, dir, name, cfg, rounded)
	}
	a := cmd("cmdstan-a.csv", func(*Config) {})
	if _, err := ReadFit(a, cmd("cmdstan-b.csv", func(c *Config) { c.Thin = 2 })); err == nil || !strings.Contains(err.Error(), again) {
		t.Errorf("CmdStan files of one chain: %v", err)
	}
	if _, err := ReadFit(a, cmd("cmdstan-c.csv", func(c *Config) { c.Thin, c.DataFiles = 2, []string{"other.json"} })); err != nil {
		t.Errorf("CmdStan files of other data files: %v", err)
	}
	// Files without a seed or an id are told apart by their draws only.
	bare := func(name, id string) *File {
		f, err := Read(strings.NewReader("# id = " + id + "\nlp__,mu\n-1,0.5\n-2,0.7\n"))
		if err != nil {
			t.Fatal(err)
		}
		f.Draws[1][1] += float64(len(name))
		return f
	}
	if _, err := ToFit([]*File{bare("x", "1"), bare("yy", "1")}); err != nil {
		t.Errorf("files without a seed: %v", err)
	}
}

// TestToFitSameDrawsNaN: a file of draws with NaN values (a generated
// quantity that is not a number) given twice is the chain given twice.
func TestToFitSameDrawsNaN(t *testing.T) {
	f, err := Read(strings.NewReader("lp__,mu,g\n-1,0.5,nan\n-2,0.7,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ToFit([]*File{f, f}); err == nil || !strings.Contains(err.Error(), "file 2 is the chain of file 1 again (the same draws") {
		t.Errorf("a file with NaN draws twice: %v", err)
	}
}

// TestToFitConstantChains: chains whose every column holds one value (a
// model without randomness: fixed_param and generated quantities of the
// data) repeat one another; their equal draws are not a chain given
// twice.
func TestToFitConstantChains(t *testing.T) {
	var files []*File
	for id := 1; id <= 2; id++ {
		f, err := Read(strings.NewReader(fmt.Sprintf("# id = %d\n# random\n#   seed = 1\nlp__,accept_stat__,x\n0,0,1\n0,0,1\n", id)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if fit, err := ToFit(files); err != nil || len(fit.Chains) != 2 {
		t.Errorf("constant chains: %v", err)
	}
}

// TestToFitSameOtherRun: the output of one run of another method written
// twice (more draws, other digits) is refused; other seeds are other
// runs; generated quantities of one input chain are one chain whatever
// their seed.
func TestToFitSameOtherRun(t *testing.T) {
	file := func(method, args, seed, id, rows string) *File {
		f, err := Read(strings.NewReader("# model = m\n# method = " + method + "\n#   " + method + "\n" + args + "# id = " + id + "\n# random\n#   seed = " + seed + "\n# output\n#   file = o" + seed + ".csv\n#   sig_figs = 6\nlog_p__,a\n" + rows))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	lap := func(draws, seed, rows string) *File {
		return file("laplace", "#     mode = \n#     draws = "+draws+"\n", seed, "1", rows)
	}
	gq := func(seed, id string) *File {
		return file("generate_quantities", "#     fitted_params = run/m-1.csv\n", seed, id, "0,1\n0,"+id+seed+"\n")
	}
	for _, c := range []struct {
		name    string
		a, b    *File
		refused bool
	}{
		{"more draws", lap("2", "5", "0,1\n0,2\n"), lap("3", "5", "0,1\n0,2\n0,3\n"), true},
		{"other seed", lap("2", "5", "0,1\n0,2\n"), lap("2", "6", "0,3\n0,4\n"), false},
		{"generate, other seeds", gq("1", "1"), gq("2", "1"), true},
		{"generate, other chains", gq("1", "1"), gq("1", "2"), false},
	} {
		_, err := ToFit([]*File{c.a, c.b})
		if refused := err != nil && strings.Contains(err.Error(), "again"); refused != c.refused {
			t.Errorf("%s: error %v, want refused %v", c.name, err, c.refused)
		}
	}
}
