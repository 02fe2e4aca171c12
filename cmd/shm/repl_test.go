package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/stancsv"
)

// normalModel is a normal model with unknown mean and scale, written with
// few built-ins so that its log density is easy to check by hand.
const normalModel = `data { int<lower=1> N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model { target += -0.5 * dot_self((y - mu) / sigma) - N * log(sigma); }
`

// normalData are equally spaced, so that every nearest-neighbour distance
// (and so resolution(y)) is 2.
const normalData = `{"N": 5, "y": [1, 3, 5, 7, 9]}`

func runRepl(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runWithInput(append([]string{"repl"}, args...), strings.NewReader(input), &out, &errb)
	return out.String(), errb.String(), code
}

func TestReplScriptExpressions(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	input := strings.Join([]string{
		"mean(y)",
		"resolution(y)",
		"// a comment",
		"z = y * 2",
		"z[2] + N",
		"linspaced_vector(20, 0, 1)",
		":names",
		":data",
		"",
	}, "\n")
	stdout, stderr, code := runRepl(t, input, model, dataFile)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	want := `model nm: 2 parameter(s), 2 unconstrained coordinate(s)
  mu     real  unconstrained
  sigma  real  <lower=0>
5
2
z = vector[5] [2, 6, 10, 14, 18]
11
vector[20] [0, 0.0526316, 0.105263, 0.157895, 0.210526, …, 0.789474, 0.842105, 0.894737, 0.947368, 1]
N y z
data files: ` + dataFile + "\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
}

// TestReplScriptErrors checks that errors are reported with their input
// line and position and that the session goes on after each.
func TestReplScriptErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.shm", "data { int N; vector[N] y; }\nparameters {\n  real mu;\n}\nmodel {\n  y ~ nromal(mu, 1);\n}\n")
	good := writeFile(t, dir, "good.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	badData := writeFile(t, dir, "bad.json", `{"N": 2, "y": [1, 2, 3]}`)
	input := strings.Join([]string{
		"foo(1)",
		":load " + bad,
		":load " + good + " " + dataFile,
		"mean(y)",
		":load " + bad, // a failed load keeps the model
		"mean(y)",
		":data " + badData, // a failed rebind changes nothing
		"mean(y)",
		":bogus",
		":draws mu",
		":lp mu=1",
		":sample --chains 0",
		"1 +",
		":quit",
		"mean(y)", // not run
	}, "\n")
	stdout, stderr, code := runRepl(t, input)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "model good: 2 parameter(s), 2 unconstrained coordinate(s)\n" +
		"  mu     real  unconstrained\n  sigma  real  <lower=0>\n5\n5\n5\n"
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	for _, want := range []string{
		"input line 1:\n<line 1>:1:1: unknown function \"foo\"\n  foo(1)\n  ^\n",
		"input line 2:\n" + bad + `:6:7: unknown distribution "nromal"; did you mean "normal"?`,
		"input line 5:\n" + bad + ":6:7:",
		"input line 7: error: " + badData + `: key "y"`,
		"(nothing changed)",
		"input line 9: error: unknown command :bogus",
		"input line 10: error: no run yet: :sample first",
		"input line 11: error: :lp gives no value for the parameter sigma",
		"input line 12: error: :sample: --chains must be at least 1, got 0",
		"input line 13:\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "input line 15") {
		t.Errorf("a line after :quit ran:\n%s", stderr)
	}
}

// TestReplLogDensity checks :lp against the log density and gradient
// written out by hand.
func TestReplLogDensity(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	stdout, stderr, code := runRepl(t, ":lp mu=4, sigma=2\n:lp mu=4,sigma=2,tau=1\n", model, dataFile)
	if code != 1 || !strings.Contains(stderr, ":lp: tau is not a parameter of the model (parameters: mu, sigma)") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	y := []float64{1, 3, 5, 7, 9}
	mu, sigma, n := 4.0, 2.0, float64(len(y))
	var ss, s float64
	for _, v := range y {
		ss += (v - mu) * (v - mu)
		s += v - mu
	}
	lp := -0.5*ss/(sigma*sigma) - n*math.Log(sigma)
	// On the unconstrained scale u = log(sigma): the Jacobian adds u, and
	// d/du = sigma d/dsigma + 1.
	gradMu := s / (sigma * sigma)
	gradU := sigma*(ss/(sigma*sigma*sigma)-n/sigma) + 1
	want := fmt.Sprintf("lp = %.6g (unconstrained, with the log-Jacobian; %.6g without)\n", lp+math.Log(sigma), lp) +
		"  coordinate  unconstrained  gradient\n" +
		fmt.Sprintf("  mu          %-13.6g  %.6g\n", mu, gradMu) +
		fmt.Sprintf("  sigma       %-13.6g  %.6g\n", math.Log(sigma), gradU)
	if !strings.HasPrefix(stdout, "model nm") || !strings.HasSuffix(stdout, want) {
		t.Errorf("got\n%s\nwant it to end with\n%s", stdout, want)
	}
}

// sameAsSample checks that the chain files the REPL wrote to replOut
// after ":sample flags" of model are those of shm sample with the same
// flags, but for their names, the refresh setting and the timing.
func sameAsSample(t *testing.T, model, flags, replOut string) {
	t.Helper()
	sampleOut := filepath.Join(t.TempDir(), "sample")
	args := append([]string{"sample", model, "--output", sampleOut, "--refresh", "100"}, strings.Fields(flags)...)
	if _, errs, code := runCmd(t, args...); code != 0 {
		t.Fatalf("shm sample: exit %d: %s", code, errs)
	}
	names, err := filepath.Glob(filepath.Join(sampleOut, "*.csv"))
	if err != nil || len(names) == 0 {
		t.Fatalf("shm sample wrote no files (%v)", err)
	}
	for _, path := range names {
		name := filepath.Base(path)
		a, err := os.ReadFile(filepath.Join(replOut, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := withoutTiming(strings.ReplaceAll(string(a), replOut, "OUT"))
		want := withoutTiming(strings.ReplaceAll(string(b), sampleOut, "OUT"))
		if got != want {
			t.Errorf("%s differs from shm sample's", name)
		}
	}
}

// TestReplSampleSaveWarmup: :sample --save-warmup keeps its run (its
// files have the warmup draws before the adaptation, as shm sample's;
// the in-memory copy had them after it, and the run was refused).
func TestReplSampleSaveWarmup(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	replOut := filepath.Join(dir, "repl")
	flags := "--chains 2 --warmup 30 --samples 20 --seed 7 --save-warmup"
	stdout, stderr, code := runRepl(t, ":sample "+flags+"\n:summary\n:write "+replOut, model)
	if code != 0 || !strings.Contains(stdout, "2 chain(s) × 20 draws (seed 7)") || !strings.Contains(stdout, "2 chains: each with iter=(20,20); warmup=(30,30)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	sameAsSample(t, model, flags, replOut)
}

// TestReplSample samples in memory and checks the summary, :draws and
// :write, whose files must be those of "shm sample" with the same flags.
func TestReplSample(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	replOut := filepath.Join(dir, "repl")
	flags := "--chains 2 --warmup 200 --samples 200 --seed 7"
	input := strings.Join([]string{
		":sample " + flags,
		":summary",
		":draws mu",
		":draws s",
		":draws s[2]",
		":write " + replOut,
	}, "\n")
	stdout, stderr, code := runRepl(t, input, model)
	if code != 1 { // ":draws s" fails
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "input line 4: error: s has 2 columns (s.1, s.2): choose one") {
		t.Errorf("stderr:\n%s", stderr)
	}
	for _, want := range []string{
		"2 chain(s) × 200 draws (seed 7)",
		"Inference for Stan model: op\n2 chains: each with iter=(200,200)",
		"R_hat", "\nmu  ", "\nmu2  ", "\ns.2  ",
		"mu: 400 draws from 2 chain(s)\n",
		"s.2: 400 draws from 2 chain(s)\n",
		"wrote " + filepath.Join(replOut, "op-1.csv") + "\nwrote " + filepath.Join(replOut, "op-2.csv") + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	sameAsSample(t, model, flags, replOut)

	// :draws mu reports the type-7 quantiles of the draws in the files and
	// a histogram of all of them.
	var mu []float64
	for c := 1; c <= 2; c++ {
		f, err := stancsv.ReadFile(filepath.Join(replOut, fmt.Sprintf("op-%d.csv", c)))
		if err != nil {
			t.Fatal(err)
		}
		j := slices.Index(f.Columns, "mu")
		for _, row := range f.SamplingDraws() {
			mu = append(mu, row[j])
		}
	}
	sort.Float64s(mu)
	quantile := func(p float64) float64 {
		h := float64(len(mu)-1) * p
		i := int(h)
		return mu[i] + (h-float64(i))*(mu[i+1]-mu[i])
	}
	section := stdout[strings.Index(stdout, "mu: 400 draws"):strings.Index(stdout, "s.2: 400 draws")]
	lines := strings.Split(strings.TrimSpace(section), "\n")
	if len(lines) != 3+12 {
		t.Fatalf(":draws mu: %d lines, want 15:\n%s", len(lines), section)
	}
	fields := strings.Fields(lines[2])
	if len(fields) != 7 {
		t.Fatalf("quantile line %q", lines[2])
	}
	for k, p := range []float64{0.05, 0.25, 0.5, 0.75, 0.95} {
		if want := fmt.Sprintf("%.4g", quantile(p)); fields[2+k] != want {
			t.Errorf("%g quantile: got %s, want %s", p, fields[2+k], want)
		}
	}
	total := 0
	for _, line := range lines[3:] {
		f := strings.Fields(line)
		n, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			t.Fatalf("histogram line %q: %v", line, err)
		}
		total += n
	}
	if total != 400 {
		t.Errorf("histogram counts %d draws, want 400", total)
	}
}

func TestHistogram(t *testing.T) {
	tests := []struct {
		x      []float64
		bins   int
		edges  []float64
		counts []int
	}{
		{[]float64{0, 1, 2, 3, 4}, 4, []float64{0, 1, 2, 3}, []int{1, 1, 1, 2}},
		{[]float64{0, 0.5, 0.5, 10}, 2, []float64{0, 5}, []int{3, 1}},
		{[]float64{3, 3, 3}, 5, []float64{3}, []int{3}},
	}
	for _, tt := range tests {
		edges, counts := histogram(tt.x, tt.bins)
		if !slices.Equal(edges, tt.edges) || !slices.Equal(counts, tt.counts) {
			t.Errorf("histogram(%v, %d) = %v, %v; want %v, %v", tt.x, tt.bins, edges, counts, tt.edges, tt.counts)
		}
	}
}

func TestSplitFields(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b\tc ", []string{"a", "b", "c"}},
		{`--set "y=[1, 2]" --seed 3`, []string{"--set", "y=[1, 2]", "--seed", "3"}},
		{`'my dir'/x.csv ""`, []string{"my dir/x.csv", ""}},
	}
	for _, tt := range tests {
		if got := splitFields(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitFields(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestColumnName(t *testing.T) {
	for in, want := range map[string]string{"mu": "mu", "s[2]": "s.2", " b[1, 3] ": "b.1.3", "s.1": "s.1"} {
		if got := columnName(in); got != want {
			t.Errorf("columnName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	writeFile(t, dir, "nm.json", normalData)
	if err := os.Mkdir(filepath.Join(dir, "nmdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRepl(&bytes.Buffer{}, &bytes.Buffer{}, 1)
	if err := r.load(context.Background(), model, []string{filepath.Join(dir, "nm.json")}); err != nil {
		t.Fatal(err)
	}
	if err := r.exec(context.Background(), "yy_mean = mean(y)"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line string
		want []string
	}{
		{"resol", []string{"ution"}},
		{"x = sink", []string{"horn", "horn_ot", "horn_plan"}},
		{"mean(y", []string{"", "y_mean"}},
		{"sig", []string{"ma"}},
		{":sa", []string{"mple"}},
		{":s", []string{"ample", "et", "ummary"}},
		{":sample --cha", []string{"in-id", "ins"}},
		{":load " + filepath.Join(dir, "nm"), []string{".json", ".shm", "dir/"}},
		{":draws m", nil}, // no run yet
		{"zzz", nil},
	}
	for _, tt := range tests {
		got, _ := r.Do([]rune(tt.line), len([]rune(tt.line)))
		var words []string
		for _, g := range got {
			words = append(words, string(g))
		}
		if !slices.Equal(words, tt.want) {
			t.Errorf("Do(%q) = %q, want %q", tt.line, words, tt.want)
		}
	}
}

// TestReplErrorLines checks that REPL errors count the input's lines
// (commands, blank lines and comments included) and speak of expressions,
// not of grammar rules.
func TestReplErrorLines(t *testing.T) {
	_, errs, code := runRepl(t, "real x = 1 +;\n:help\n\n// a comment\nx + ;\n")
	if code == 0 {
		t.Fatal("exit 0")
	}
	for _, want := range []string{
		"input line 1:\n<line 1>:1:13: expected an expression after \"+\"",
		"input line 5:\n<line 5>:1:5: expected an expression after \"+\", found \";\"",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "PUnary") || strings.Contains(errs, "PExpr") {
		t.Errorf("a grammar rule in %q", errs)
	}
}

// otherModel is a model of other data than normalModel's, with one
// parameter.
const otherModel = `data { int<lower=1> N; vector[N] y; real<lower=0> lambda; }
parameters { real theta; }
model { y ~ normal(theta, lambda); }
`

// TestReplStaleRun checks that the commands that read the last run
// (:summary, :draws, :plot, :write, and :draws's completion) never use a
// run of another model or other data: a rebinding (:load, :data, :set)
// and a failed :sample drop it, saying so, and the commands then say
// there is no run.
func TestReplStaleRun(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	other := writeFile(t, dir, "other.shm", otherModel)
	otherData := writeFile(t, dir, "other.json", `{"N": 3, "y": [1, 2, 3], "lambda": 1}`)
	moreData := writeFile(t, dir, "more.json", `{"N": 3, "y": [1, 2, 4]}`)
	badModel := writeFile(t, dir, "bad.shm", "parameters { real mu; }\nmodel { mu ~ nromal(0, 1); }\n")
	t.Setenv("TMPDIR", dir) // :plot's figures
	const sample = ":sample --chains 1 --warmup 50 --samples 50 --seed 3"
	readers := func(out string) []string {
		return []string{":summary", ":draws mu", ":plot trace", ":write " + filepath.Join(dir, strings.ReplaceAll(out, " ", "_"))}
	}
	for _, tt := range []struct {
		name   string
		change []string // after a successful :sample, before the readers
		errs   []string // in stderr
		kept   bool     // the run is still the last one
	}{
		{"load", []string{":load " + other + " " + otherData}, []string{
			"note: the last run (model nm) is dropped: :load changed the model or its data",
			"error: no run of the current model and data (:load dropped the run of model nm): :sample first"}, false},
		{"reload", []string{":load"}, []string{
			"error: no run of the current model and data (:load dropped the run of model nm): :sample first"}, false},
		{"data", []string{":data " + moreData}, []string{
			"note: the last run (model nm) is dropped: :data changed the model or its data",
			"error: no run of the current model and data (:data dropped the run of model nm): :sample first"}, false},
		{"set", []string{":set N=5"}, []string{
			"note: the last run (model nm) is dropped: :set changed the model or its data",
			"error: no run of the current model and data (:set dropped the run of model nm): :sample first"}, false},
		{"failed flags", []string{":sample --chains 0"}, []string{
			"error: :sample: --chains must be at least 1, got 0; the previous run (model nm) is dropped",
			"error: no run (the failed :sample dropped the run of model nm): :sample first"}, false},
		{"failed init", []string{":sample --init mu=NaN,sigma=1"}, []string{
			"error: --init: the value given for mu is NaN (a parameter's value must be finite); the previous run (model nm) is dropped",
			"error: no run (the failed :sample dropped the run of model nm): :sample first"}, false},
		{"load then failed sample", []string{":load " + other + " " + otherData, ":sample --init theta=abc"}, []string{
			`error: --init theta: "abc" is not a number`,
			"error: no run of the current model and data (:load dropped the run of model nm): :sample first"}, false},
		// What changes nothing keeps the run.
		{"failed load", []string{":load " + badModel}, []string{`unknown distribution "nromal"`}, true},
		{"failed rebind", []string{":set N=4"}, []string{"(nothing changed)"}, true},
		{"failed lp", []string{":lp mu=1"}, []string{":lp gives no value for the parameter sigma"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := append(append([]string{sample}, tt.change...), readers(tt.name)...)
			stdout, stderr, _ := runRepl(t, strings.Join(lines, "\n"), model, dataFile)
			for _, want := range tt.errs {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			n := 1 + len(tt.change)
			if tt.kept {
				for _, want := range []string{"Inference for Stan model: nm", "mu: 50 draws", "shm-nm-trace-", "nm-1.csv"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("the run was not kept: stdout lacks %q:\n%s", want, stdout)
					}
				}
				return
			}
			for k := range readers(tt.name) {
				prefix := fmt.Sprintf("input line %d: error: no run ", n+k+1)
				if !strings.Contains(stderr, prefix) {
					t.Errorf("stderr lacks %q:\n%s", prefix, stderr)
				}
			}
			for _, stale := range []string{"Inference for Stan model", "draws from", ".png", "wrote "} {
				if strings.Contains(stdout, stale) {
					t.Errorf("stdout has %q from the dropped run:\n%s", stale, stdout)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))); err == nil {
				t.Errorf(":write wrote the dropped run")
			}
		})
	}

	// Completion offers the columns of the current run only.
	r := newRepl(&bytes.Buffer{}, &bytes.Buffer{}, 1)
	ctx := context.Background()
	for _, line := range []string{":load " + model + " " + dataFile, sample} {
		if err := r.exec(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := r.Do([]rune(":draws m"), len(":draws m")); len(got) != 1 {
		t.Fatalf("before :set: Do(\":draws m\") = %q", got)
	}
	if err := r.exec(ctx, ":set N=5"); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Do([]rune(":draws m"), len(":draws m")); len(got) != 0 {
		t.Errorf("after :set: Do(\":draws m\") = %q, want nothing", got)
	}
	// A new run is the current one.
	if err := r.exec(ctx, sample); err != nil {
		t.Fatal(err)
	}
	if err := r.exec(ctx, ":summary"); err != nil {
		t.Errorf(":summary after a new :sample: %v", err)
	}
}

// TestReplPointErrors checks the messages of :lp's point: each names
// :lp (not a command-line flag) and the variable.
func TestReplPointErrors(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	nanFile := writeFile(t, dir, "nan.json", `{"mu": "NaN", "sigma": 1}`)
	vecModel := writeFile(t, dir, "vec.shm", "parameters { vector[3] b; }\nmodel { b ~ normal(0, 1); }\n")
	for _, tt := range []struct {
		model string
		line  string
		want  string
	}{
		{model, ":lp mu=abc,sigma=1", `:lp mu: "abc" is not a number`},
		{model, ":lp mu=1e400,sigma=1", `:lp mu: "1e400" is too large for a 64-bit float`},
		{model, ":lp nothere=1", ":lp: nothere is not a parameter of the model (parameters: mu, sigma)"},
		{model, ":lp mu=1,sigma=1,zz=3", ":lp: zz is not a parameter of the model (parameters: mu, sigma)"},
		{model, ":lp mu=1,mu=2,sigma=1", ":lp: mu is given twice"},
		{model, ":lp mu=NaN,sigma=1", ":lp: the value given for mu is NaN (a parameter's value must be finite)"},
		{model, ":lp mu=1,sigma=-inf", ":lp: the value given for sigma is -Inf (a parameter's value must be finite)"},
		{model, ":lp " + nanFile, ":lp " + nanFile + ": the value given for mu is NaN"},
		{model, ":lp nothere.json", ":lp: open nothere.json: no such file or directory"},
		{model, ":lp mu=1", ":lp gives no value for the parameter sigma (a point gives every parameter: mu, sigma)"},
		{model, ":lp", "usage: :lp name=value,... or :lp point.json (parameters: mu, sigma)"},
		{model, ":lp mu", `:lp "mu": expected name=value`},
		{model, ":lp mu=1,sigma=-1", ":lp sigma: initial value of sigma (real<lower=0>): element 1 = -1 is not above the lower bound 0"},
		{model, ":lp mu=[1,2],sigma=1", ":lp mu: initial value of mu has sizes [2], but real declares a scalar"},
		{vecModel, ":lp b=[1,NaN,3]", ":lp: the value given for b[2] is NaN"},
		{model, ":set N=abc", `:set N: "abc" is not a number`},
	} {
		_, stderr, code := runRepl(t, tt.line, tt.model, dataFile)
		if code != 1 || !strings.Contains(stderr, "input line 1: error: "+tt.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant %q", tt.line, code, stderr, tt.want)
		}
		if strings.Contains(stderr, "--set") || strings.Contains(stderr, "--init") || strings.Contains(stderr, "data file") {
			t.Errorf("%s: a flag or a data file in the message:\n%s", tt.line, stderr)
		}
	}
}

// TestReplLongLines checks that an error never echoes a long input line
// whole (each line of a message is cut to maxMessageLine characters, with
// its length), and that a line over maxLineBytes is refused unread, the
// session going on.
func TestReplLongLines(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	garbage := strings.Repeat("a", 300000)
	for _, tt := range []struct {
		name string
		line string
		want []string
	}{
		{"garbage", garbage, []string{"<line 1>:1:1: aaaa", fmt.Sprintf("… (%d characters)", len("<line 1>:1:1: "+garbage+" is not declared")), "\n  aaaa", "…\n  ^"}},
		{"unknown command", ":" + garbage, []string{"error: unknown command :aaaa", "…"}},
		{"load", ":load " + garbage + ".shm", []string{"error: open aaaa", "characters)"}},
		{"set", ":set " + garbage, []string{`error: :set "aaaa`}},
		{"lp", ":lp " + garbage + "=1", []string{"error: :lp", "characters)"}},
		{"sample", ":sample --" + garbage, []string{"error: :sample: unknown flag --aaaa", "characters)"}},
		{"too long", strings.Repeat("b", maxLineBytes+10), []string{"input line 1: error: the line has 1048586 bytes, more than the 1048576 (1 MiB) a line may have: long values belong in a data file (:data file.json)"}},
		{"too long, CRLF", strings.Repeat("1", maxLineBytes+1) + "\r", []string{"error: the line has 1048577 bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runRepl(t, tt.line+"\nmean(y)\n", model, dataFile)
			if code != 1 {
				t.Errorf("exit %d", code)
			}
			if len(stderr) > 1000 {
				t.Errorf("stderr has %d bytes:\n%.2000s", len(stderr), stderr)
			}
			for _, line := range strings.Split(stderr, "\n") {
				if n := len([]rune(line)); n > maxMessageLine+len("… (1234567 characters)") {
					t.Errorf("a line of %d characters: %.300s", n, line)
				}
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if !strings.HasSuffix(stdout, "\n5\n") {
				t.Errorf("the line after it did not run: stdout\n%s", stdout)
			}
		})
	}

	// The same limit on a terminal, where the line comes whole.
	r := newRepl(&bytes.Buffer{}, &bytes.Buffer{}, 1)
	err := r.exec(context.Background(), strings.Repeat("x", maxLineBytes+1))
	if err == nil || !strings.Contains(err.Error(), "the line has 1048577 bytes") {
		t.Errorf("exec of a long line: %v", err)
	}
}

func TestReadLine(t *testing.T) {
	type line struct {
		text string
		size int
	}
	for _, tt := range []struct {
		in   string
		want []line
	}{
		{"", nil},
		{"a\nbc\n", []line{{"a", 1}, {"bc", 2}}},
		{"a\r\nbc", []line{{"a", 1}, {"bc", 2}}},
		{"\n\nx", []line{{"", 0}, {"", 0}, {"x", 1}}},
		{"12345\n123456\n1234567\nok\n", []line{{"12345", 5}, {"123456", 6}, {"", 7}, {"ok", 2}}},
		{"123456\r\n" + strings.Repeat("z", 90) + "\nend", []line{{"123456", 6}, {"", 90}, {"end", 3}}},
		{strings.Repeat("z", 15) + "\r\n" + strings.Repeat("y", 16) + "\r\nx\r", []line{{"", 15}, {"", 16}, {"x", 1}}},
	} {
		// A small buffer, so that long lines come in several reads.
		br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
		var got []line
		for {
			text, size, err := readLine(br, 6)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if err == io.EOF && size == 0 {
				break
			}
			got = append(got, line{text, size})
			if err == io.EOF {
				break
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("readLine(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	// No end of line after runawayLine times the limit (/dev/zero): the
	// input is given up.
	br := bufio.NewReaderSize(io.MultiReader(strings.NewReader("ok\n"), zeros{}), 16)
	if text, _, err := readLine(br, 6); text != "ok" || err != nil {
		t.Fatalf("the first line: %q, %v", text, err)
	}
	if _, size, err := readLine(br, 6); !errors.Is(err, errRunawayLine) || size > (runawayLine+1)*6+16 {
		t.Errorf("an endless line: %v after %d bytes, want errRunawayLine after about %d", err, size, runawayLine*6)
	}
	_, errs, code := runRepl(t, strings.Repeat("0", (runawayLine+1)*maxLineBytes))
	if code != 1 || !strings.Contains(errs, "no end of line after") || !strings.Contains(errs, "input line 1: ") {
		t.Errorf("a script of one endless line: exit %d, %q", code, errs)
	}
}

// zeros is an endless reader of zero bytes, as /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestReplHostileInput checks that a script's byte order mark is skipped
// (its first command runs), and that the REPL's lines get the parser's
// reports of bytes it does not expect and of operators without operands.
func TestReplHostileInput(t *testing.T) {
	input := "\ufeff:names\nreal x = 1\x00;\nx + * 2\nx + ;\nreal z = \xff;\n/* open\n"
	_, errs, code := runRepl(t, input)
	if code == 0 {
		t.Fatal("exit 0")
	}
	for _, want := range []string{
		"input line 2:\n<line 2>:1:11: invalid character NUL (0x00)\n  real x = 1\u2400;\n            ^",
		"input line 3:\n<line 3>:1:5: expected an expression after \"+\", found \"*\"",
		"input line 4:\n<line 4>:1:5: expected an expression after \"+\", found \";\"\n  x + ;\n      ^",
		"input line 5:\n<line 5>:1:10: invalid UTF-8 byte 0xff",
		"input line 6:\n<line 6>:1:1: unterminated comment: /* at 1:1 has no */",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "input line 1:") {
		t.Errorf("the byte order mark of the script's first line: %s", errs)
	}
}

// TestReplIndentedColumns checks that the errors of an indented line name
// the columns of the line as typed, with the caret under the character,
// for the parser's errors and the checker's alike.
func TestReplIndentedColumns(t *testing.T) {
	_, errs, code := runRepl(t, "  y = undefined_var + 1;\n\t x = 1 2;\n")
	if code == 0 {
		t.Fatal("exit 0")
	}
	for _, want := range []string{
		"input line 1:\n<line 1>:1:7: undefined_var is not declared\n    y = undefined_var + 1;\n        ^",
		"input line 2:\n<line 2>:1:9: missing ';' before \"2\"\n  \t x = 1 2;\n  \t       ^",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestReplWriteStopped: a :write stopped by its context (Ctrl-C, SIGTERM)
// leaves no file of the run, hidden temporaries included, and a complete
// :write moves every chain into place.
func TestReplWriteStopped(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	var stdout, stderr bytes.Buffer
	r := newRepl(&stdout, &stderr, 1)
	if err := r.load(context.Background(), model, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.exec(context.Background(), ":sample --chains 3 --warmup 20 --samples 3000 --seed 2"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.exec(ctx, ":write "+out)
	if err == nil || !strings.Contains(err.Error(), "interrupted; no file of the run written") {
		t.Errorf(":write with a stopped context: %v", err)
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf(":write stopped: left %v", left)
	}
	if err := r.exec(context.Background(), ":write "+out); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) != 3 {
		t.Errorf(":write: %v, want three chain files", files)
	}
	// A run of two chains into the folder of three: the third is noted.
	if err := r.exec(context.Background(), ":sample --chains 2 --warmup 20 --samples 20 --seed 3"); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if err := r.exec(context.Background(), ":write "+out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "note: "+out+" also holds op-3.csv of an earlier run") {
		t.Errorf(":write beside an earlier run's chain: stderr %q", stderr.String())
	}
}

// TestReplWriteRefusesInputs: :write and :sample --output refuse a chain
// file that is one of the session's inputs (a data file named as a chain
// of the model), before anything is written or sampled, and leave it
// as it was.
func TestReplWriteRefusesInputs(t *testing.T) {
	t.Chdir(t.TempDir()) // short names: the REPL cuts long messages
	dir := "."
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm-1.json", normalData)
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{":sample --chains 1 --warmup 20 --samples 20 --seed 1", ":write " + dir}, ".: chain 1's file nm-1.csv"},
		{[]string{":sample --chains 1 --warmup 20 --samples 20 --seed 1 --output " + dir}, ":sample: --output " + dir + ": chain 1's file"},
	} {
		data := filepath.Join(dir, "nm-1.csv")
		if err := os.WriteFile(data, []byte("unused\n5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runRepl(t, strings.Join(c.lines, "\n")+"\n", model, dataFile, data)
		if code != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "is the input "+data) {
			t.Errorf("%v: exit %d, stderr %q", c.lines, code, stderr)
		}
		if b, _ := os.ReadFile(data); string(b) != "unused\n5\n" {
			t.Errorf("%v: the data file now holds %.40q", c.lines, b)
		}
	}
}

// TestReplSampleSeedPosterior: the REPL's :sample records in its chains'
// headers what of the posterior depends on the seed (transformed data
// drawn with _rng, crn noise), as shm sample does, and its chains of one
// run pool.
func TestReplSampleSeedPosterior(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "sd.shm", "transformed data { real c = normal_rng(0, 1); }\nparameters { real mu; }\n"+
		"model { mu ~ normal(c, 1); target += crn(2, -0.5 * square(mu - std_normal_rng())); }\n")
	replOut := filepath.Join(dir, "repl")
	flags := "--chains 2 --warmup 30 --samples 20 --seed 3"
	stdout, stderr, code := runRepl(t, ":sample "+flags+"\n:write "+replOut, model)
	if code != 0 || !strings.Contains(stdout, "2 chain(s) × 20 draws (seed 3)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	text, err := os.ReadFile(filepath.Join(replOut, "sd-2.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n#   transformed_sha256 = ", "\n#   crn_seed = 3\n"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the REPL's header has no %q", strings.TrimSpace(want))
		}
	}
	sameAsSample(t, model, flags, replOut)
}
