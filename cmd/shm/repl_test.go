package main

import (
	"bytes"
	"context"
	"fmt"
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
		"input line 10: error: no run yet (:sample)",
		"input line 11: error: no value for sigma",
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
	if code != 1 || !strings.Contains(stderr, "tau is not a parameter") {
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

	// The files match those of shm sample, but for their names, the
	// refresh setting and the timing.
	sampleOut := filepath.Join(dir, "sample")
	args := append([]string{"sample", model, "--output", sampleOut, "--refresh", "100"}, strings.Fields(flags)...)
	if _, errs, code := runCmd(t, args...); code != 0 {
		t.Fatalf("shm sample: exit %d: %s", code, errs)
	}
	for c := 1; c <= 2; c++ {
		name := fmt.Sprintf("op-%d.csv", c)
		a, err := os.ReadFile(filepath.Join(replOut, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(sampleOut, name))
		if err != nil {
			t.Fatal(err)
		}
		got := withoutTiming(strings.ReplaceAll(string(a), replOut, "OUT"))
		want := withoutTiming(strings.ReplaceAll(string(b), sampleOut, "OUT"))
		if got != want {
			t.Errorf("%s differs from shm sample's", name)
		}
	}

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
	if err := r.load(model, []string{filepath.Join(dir, "nm.json")}); err != nil {
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
