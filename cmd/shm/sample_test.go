package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// operatorModel needs no built-in functions, so these tests exercise the
// command independently of the standard library's implementations.
const operatorModel = `parameters { real mu; vector<lower=0>[2] s; }
model {
  target += -0.5 * mu^2;
  target += -s[1] - 2 * s[2];
}
generated quantities { real mu2 = mu * 2; }
`

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withoutTiming drops the elapsed-time comment lines, the only lines that
// legitimately differ between two runs with the same seed.
func withoutTiming(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "Elapsed Time") || strings.Contains(line, "seconds (") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

func TestSampleReproducibleAcrossParallelism(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	var outs [2][]string
	for k, parallel := range []string{"1", "4"} {
		out := filepath.Join(dir, "out"+parallel)
		stdout, stderr, code := runCmd(t, "sample", model, "--seed", "11", "--chains", "4", "--warmup", "150",
			"--samples", "100", "--output", out, "--parallel", parallel, "--refresh", "0")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "mu2") || !strings.Contains(stdout, "R_hat") {
			t.Fatalf("no summary:\n%s", stdout)
		}
		for c := 1; c <= 4; c++ {
			b, err := os.ReadFile(filepath.Join(out, "op-"+string(rune('0'+c))+".csv"))
			if err != nil {
				t.Fatal(err)
			}
			outs[k] = append(outs[k], withoutTiming(strings.ReplaceAll(string(b), out, "OUT")))
		}
	}
	// shm summary reads the files back.
	stdout, stderr, code := runCmd(t, "summary", filepath.Join(dir, "out1", "op-1.csv"), filepath.Join(dir, "out1", "op-2.csv"))
	if code != 0 || !strings.Contains(stdout, "s.2") {
		t.Errorf("summary: exit %d, %s\n%s", code, stderr, stdout)
	}
	for c := range outs[0] {
		if outs[0][c] != outs[1][c] {
			t.Errorf("chain %d differs between --parallel 1 and 4", c+1)
		}
	}
	if outs[0][0] == outs[0][1] {
		t.Error("chains 1 and 2 are identical")
	}
}

// TestSampleChainID checks that --chain-id numbers the chains from its
// value and that "--chains 1 --chain-id k" reproduces chain k of a larger
// run with the same seed (its draws and adaptation; the header says
// num_chains = 1), so a run can be split across invocations.
func TestSampleChainID(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	body := func(path string) (string, string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The draws and the adaptation (step size and inverse metric).
		var rows []string
		id, metric := "", false
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "# id = "):
				id = strings.TrimPrefix(line, "# ")
			case !strings.HasPrefix(line, "#") || strings.HasPrefix(line, "# Step size") || metric:
				rows = append(rows, line)
			}
			metric = strings.HasPrefix(line, "# Diagonal elements")
		}
		return strings.Join(rows, "\n"), id
	}
	all := filepath.Join(dir, "all")
	if _, stderr, code := runCmd(t, "sample", model, "--seed", "5", "--chains", "3", "--warmup", "100",
		"--samples", "50", "--output", all, "--refresh", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	one := filepath.Join(dir, "one")
	_, stderr, code := runCmd(t, "sample", model, "--seed", "5", "--chains", "1", "--chain-id", "2", "--warmup", "100",
		"--samples", "50", "--output", one, "--refresh", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "Chain 2 Iteration") || strings.Contains(stderr, "Chain 1 ") {
		t.Errorf("progress does not number the chain 2:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(one, "op-1.csv")); err == nil {
		t.Error("--chain-id 2 wrote op-1.csv")
	}
	want, wantID := body(filepath.Join(all, "op-2.csv"))
	got, gotID := body(filepath.Join(one, "op-2.csv"))
	if got != want {
		t.Errorf("--chains 1 --chain-id 2 differs from chain 2 of --chains 3:\n%s\n---\n%s", got, want)
	}
	if first, _ := body(filepath.Join(all, "op-1.csv")); first == want || strings.Count(want, "\n") < 52 {
		t.Errorf("chain 2's %d lines are not a distinct chain", strings.Count(want, "\n"))
	}
	if gotID != "id = 2" || wantID != "id = 2" {
		t.Errorf("headers say %q and %q, want id = 2", gotID, wantID)
	}
	if _, stderr, code := runCmd(t, "sample", model, "--chain-id", "0"); code != 2 || !strings.Contains(stderr, "--chain-id must be at least 1") {
		t.Errorf("--chain-id 0: exit %d, %s", code, stderr)
	}
}

// TestSampleCRNReproducibleAcrossParallelism checks that a model with
// crn(...) gives the same draws whether its replicates get the cores the
// chains leave idle (--parallel 1) or not (--parallel 2).
func TestSampleCRNReproducibleAcrossParallelism(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "crn.shm", `parameters { real mu; real<lower=0> sigma; }
model {
  mu ~ normal(0, 1);
  sigma ~ normal(0, 1);
  target += -4 * crn(6, square(mean(mu + sigma * std_normal_rng(8)) - 1) + square(sd(mu + sigma * std_normal_rng(8)) - 0.5));
}
`)
	var outs [2][]string
	for k, parallel := range []string{"1", "2"} {
		out := filepath.Join(dir, "out"+parallel)
		_, stderr, code := runCmd(t, "sample", model, "--seed", "5", "--chains", "2", "--warmup", "100",
			"--samples", "50", "--output", out, "--parallel", parallel, "--refresh", "0")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for c := 1; c <= 2; c++ {
			b, err := os.ReadFile(filepath.Join(out, "crn-"+string(rune('0'+c))+".csv"))
			if err != nil {
				t.Fatal(err)
			}
			outs[k] = append(outs[k], withoutTiming(strings.ReplaceAll(string(b), out, "OUT")))
		}
	}
	for c := range outs[0] {
		if outs[0][c] != outs[1][c] {
			t.Errorf("chain %d differs between --parallel 1 and 2", c+1)
		}
	}
}

func TestSampleFixedParam(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "gq.shm", "generated quantities { real z = normal_rng(0, 1) * 0 + 3; }\n")
	_, stderr, code := runCmd(t, "sample", model, "--seed", "1", "--chains", "1", "--samples", "10",
		"--output", dir, "--refresh", "0")
	if code == 0 {
		// normal_rng comes from the distributions package; with it present the
		// file must have the fixed_param header.
		b, err := os.ReadFile(filepath.Join(dir, "gq-1.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\nlp__,accept_stat__,z\n") {
			t.Errorf("fixed_param header missing:\n%s", b)
		}
		return
	}
	if !strings.Contains(stderr, "normal_rng is not implemented yet") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestSampleErrors(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sample"}, 2, "usage"},
		{[]string{"sample", model, "--chains", "0"}, 2, "--chains must be at least 1"},
		{[]string{"sample", model, "--chains", "1000000000"}, 2, "--chains is 1000000000, at most 10000"},
		{[]string{"sample", model, "--metric", "euclid"}, 2, "--metric must be diag or dense"},
		{[]string{"sample", model, "--adapt-delta", "1.5"}, 2, "--adapt-delta must be in (0, 1)"},
		{[]string{"sample", model, "--parallel", "-3"}, 2, "--parallel must be at least 1, got -3"},
		{[]string{"sample", model, "--init", "mu=1,s=[1,-1]", "--output", dir}, 1, "initial value of s"},
		{[]string{"sample", filepath.Join(dir, "missing.shm")}, 1, "no such file"},
	}
	for _, tt := range tests {
		_, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	// No partial output file is left behind by a failed run.
	files, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(files)+len(hidden) != 0 {
		t.Errorf("files left behind: %v %v", files, hidden)
	}
}

func TestDiagnose(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	stdout, stderr, code := runCmd(t, "diagnose", model, "--init", "mu=0.5,s=[1,2]")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// log density at mu = 0.5, s = (1, 2) with the log-Jacobian log 1 + log 2.
	if !strings.Contains(stdout, "Log probability=-4.43185") {
		t.Errorf("unexpected output:\n%s", stdout)
	}
	if strings.Count(stdout, "\n") < 7 {
		t.Errorf("expected one line per parameter:\n%s", stdout)
	}
}

// TestSampleStopsOnModelBug checks that a bug in the model reached only in
// part of the parameter space (an index out of range beyond mu = 2.5,
// inside some trajectories) stops the run with its position and leaves no
// output, instead of being counted as divergent transitions, while a
// domain error there (a negative scale) only rejects proposals.
func TestSampleStopsOnModelBug(t *testing.T) {
	dir := t.TempDir()
	const model = `parameters { real mu; }
model {
  vector[3] v = [1, 2, 3]';
  target += -0.5 * mu^2;
  if (mu > 2.5) {
    target += v[4];
  }
}
`
	bug := writeFile(t, dir, "bug.shm", model)
	out := filepath.Join(dir, "out")
	_, stderr, code := runCmd(t, "sample", bug, "--init", "mu=0", "--seed", "3", "--warmup", "300", "--samples", "2000", "--output", out)
	if code != 1 || !strings.Contains(stderr, "bug.shm:6:17: index 4 out of range: the size is 3") || !strings.Contains(stderr, "iteration") {
		t.Errorf("exit %d, stderr %q; want 1 and the bug's position", code, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) != 0 {
		t.Errorf("files left behind: %v", files)
	}
	domain := writeFile(t, dir, "domain.shm", strings.Replace(model, "target += v[4];", "target += normal_lpdf(mu | 0, -1);", 1))
	_, stderr, code = runCmd(t, "sample", domain, "--init", "mu=0", "--seed", "3", "--warmup", "300", "--samples", "2000", "--output", out)
	if code != 0 {
		t.Errorf("domain error: exit %d, stderr %q; want 0 (rejected proposals)", code, stderr)
	}
}

// TestInitForms checks CmdStan's forms of --init (a number: 0 puts every
// unconstrained coordinate at 0, x > 0 draws them from uniform(-x, x)),
// the warning for a name that is not a parameter, and that --init errors
// name --init.
func TestInitForms(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	// At the unconstrained origin: mu = 0, s = (1, 1), log-Jacobian 0.
	stdout, stderr, code := runCmd(t, "diagnose", model, "--init", "0")
	if code != 0 || !strings.Contains(stdout, "Log probability=-3") {
		t.Errorf("diagnose --init 0: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	for _, init := range []string{"0", "0.5"} {
		if _, stderr, code := runCmd(t, "sample", model, "--init", init, "--warmup", "20", "--samples", "20", "--output", out, "--refresh", "0"); code != 0 {
			t.Errorf("sample --init %s: exit %d: %s", init, code, stderr)
		}
	}
	_, stderr, code = runCmd(t, "sample", model, "--init", "mux=1", "--warmup", "20", "--samples", "20", "--output", out, "--refresh", "0")
	if code != 0 || !strings.Contains(stderr, "warning: --init gives mux, which is not a parameter") {
		t.Errorf("misspelled name: exit %d, stderr %q", code, stderr)
	}
	for _, tt := range []struct{ init, want string }{
		{"-1", "--init -1: a number must be finite and at least 0"},
		{"mu", `--init "mu": expected name=value`},
		{"mu=1,s=[1,-1]", "--init s: initial value of s"},
		// CmdStan refuses a one-element array for a scalar.
		{"mu=[1],s=[1,1]", "--init mu: initial value of mu has sizes [1], but real declares a scalar"},
	} {
		_, stderr, code := runCmd(t, "sample", model, "--init", tt.init, "--output", out)
		if code != 1 || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "--set") {
			t.Errorf("--init %s: exit %d, stderr %q; want %q", tt.init, code, stderr, tt.want)
		}
	}
}

// TestNonFiniteNamesTerm checks that when no initial point has a finite log
// density (here an infinite observation), the message names the statement
// whose term is not finite.
func TestNonFiniteNamesTerm(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "inf.shm", "data { int N; vector[N] y; }\nparameters { real mu; real<lower=0> sigma; }\nmodel {\n  mu ~ normal(0, 1);\n  y ~ normal(mu, sigma);\n}\n")
	data := writeFile(t, dir, "inf.csv", "y\n1\ninf\n2\n")
	_, stderr, code := runCmd(t, "sample", model, data, "--output", filepath.Join(dir, "out"))
	if code != 1 || !strings.Contains(stderr, "inf.shm:5:3: this term of the log density is -Inf") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCmd(t, "sample", model, data, "--init", "mu=0,sigma=1", "--output", filepath.Join(dir, "out"))
	if code != 1 || !strings.Contains(stderr, "initial point is -Inf: ") || !strings.Contains(stderr, "inf.shm:5:3") {
		t.Errorf("--init: exit %d, stderr %q", code, stderr)
	}
}

// TestSampleRejectionMessages checks that proposals rejected mid-sampling
// are reported on stderr with their reason and position (a NaN term, a
// domain error), at most maxRejectionMessages per chain, and that the run
// completes.
func TestSampleRejectionMessages(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "rej.shm", `parameters { real mu; }
model {
  mu ~ normal(0, 1);
  if (mu > 1.5) target += not_a_number();
  if (mu < -1.5) target += normal_lpdf(0 | 0, -1);
}
`)
	_, errs, code := runCmd(t, "sample", model, "--chains", "2", "--seed", "1", "--refresh", "0", "--output", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"a proposal is rejected: the log density is NaN: " + model + ":4:17: this term of the log density is NaN",
		"a proposal is rejected: " + model + ":5:28: normal_lpdf: scale sigma = -1 must be positive",
		"further rejections are not shown",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, chain := range []string{"Chain 1: a proposal", "Chain 2: a proposal"} {
		if n := strings.Count(errs, chain); n > maxRejectionMessages {
			t.Errorf("%d messages of %q", n, chain)
		}
	}
}

// TestFailedRunLeavesNoFolder: a run that fails before writing anything
// removes the --output folder it created, and keeps one that existed.
func TestFailedRunLeavesNoFolder(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "bad.shm", "parameters { real mu; }\nmodel { target += log(-1 - mu * mu); }\n")
	fresh := filepath.Join(dir, "fresh", "out")
	existing := filepath.Join(dir, "existing")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fresh, existing} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"sample", model, "--chains", "1", "--output", out}, &stdout, &stderr); code == 0 {
			t.Fatalf("--output %s: the run succeeded", out)
		}
	}
	if _, err := os.Stat(filepath.Dir(fresh)); !os.IsNotExist(err) {
		t.Errorf("the failed run left %s (%v)", filepath.Dir(fresh), err)
	}
	if _, err := os.Stat(existing); err != nil {
		t.Errorf("the folder that existed is gone: %v", err)
	}
}

// TestReportsDoNotFailRun: a run whose reports fail at their points (the
// crn report's initial point rejected by the model) still exits 0 with
// its output, saying that the report was not made.
func TestReportsDoNotFailRun(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "r.shm", `parameters { real<lower=-3, upper=3> mu; }
model {
  if (mu < 1) reject("mu below 1");
  target += crn(2, normal_lpdf(2 | mu + 0.01 * std_normal_rng(), 0.5));
}
`)
	said := 0
	for seed := 1; seed <= 4; seed++ {
		var stdout, stderr bytes.Buffer
		code := run([]string{"sample", model, "--chains", "1", "--warmup", "50", "--samples", "50", "--seed", strconv.Itoa(seed),
			"--output", filepath.Join(dir, "out"), "--refresh", "0"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("seed %d: exit %d: %s", seed, code, stderr.String())
		}
		if strings.Contains(stdout.String(), "Common random numbers: not reported: ") {
			said++
		}
	}
	if said == 0 {
		t.Error("no seed put the crn report's initial point where the model rejects: the case is not exercised")
	}
}

// TestSummaryMixedRuns: summary refuses chains of other data (another
// --set value, a data file edited in place under the same name) unless
// --mixed pools them (with a warning), and refuses the same chain given
// twice, by name or as a copy.
func TestSummaryMixedRuns(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "data {\n  int N;\n  vector[N] y;\n  real s;\n}\nparameters {\n  real mu;\n}\nmodel {\n  y ~ normal(mu, s);\n}\n")
	data := writeFile(t, dir, "d.csv", "y\n1\n2\n3\n")
	sample := func(out, s string) string {
		t.Helper()
		if _, stderr, code := runCmd(t, "sample", model, data, "--set", "s="+s, "--chains", "1", "--warmup", "20", "--samples", "20",
			"--seed", "1", "--output", filepath.Join(dir, out), "--refresh", "0"); code != 0 {
			t.Fatalf("sample: %s", stderr)
		}
		return filepath.Join(dir, out, "m-1.csv")
	}
	a := sample("a", "1")
	b := sample("b", "2")
	writeFile(t, dir, "d.csv", "y\n1\n2\n4\n")
	c := sample("c", "1")
	copyFile := filepath.Join(dir, "copy-1.csv")
	text, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "copy-1.csv", string(text))
	for _, tc := range []struct {
		files []string
		code  int
		want  string
	}{
		{[]string{a, b}, 1, "file 2 is of another posterior than file 1: data.set = s=2, and s=1 (the --set values differ)"},
		{[]string{a, c}, 1, "file 2 is of another posterior than file 1: data.sha256 = "},
		{[]string{a, c}, 1, "; --mixed pools them anyway"},
		{[]string{"--mixed", a, b}, 0, "warning: file 2 is from another run than file 1: data.set = s=2, and s=1"},
		{[]string{"--mixed", a, c}, 0, "warning: file 2 is from another run than file 1: data.sha256 = "},
		{[]string{a, a}, 1, "file 2 is the chain of file 1 again (the same draws; chain id 1 and 1, seed 1 and 1)"},
		{[]string{a, copyFile}, 1, "file 2 is the chain of file 1 again"},
	} {
		_, stderr, code := runCmd(t, append([]string{"summary"}, tc.files...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.files, code, stderr, tc.code, tc.want)
		}
	}
}

// TestPointFlagErrors checks the messages of the flags that give a point
// (--init of sample and diagnose, --at of calibrate iters): each names
// its flag, once, and the variable; a whole point (--at) refuses unknown
// names, and every flag refuses a name given twice.
func TestPointFlagErrors(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	skModel := writeFile(t, dir, "sk.shm", `data { int<lower=1> N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model { target += -sinkhorn(mu + sigma * y, y, eps = 0.5, iters = 20); }
`)
	out := filepath.Join(dir, "out")
	sample := func(init string) []string {
		return []string{"sample", model, dataFile, "--init", init, "--output", out, "--warmup", "10", "--samples", "10"}
	}
	diagnose := func(init string) []string { return []string{"diagnose", model, dataFile, "--init", init} }
	iters := func(at string) []string {
		return []string{"calibrate", "iters", skModel, dataFile, "--iters", "5", "--ref", "20", "--at", at}
	}
	for _, tt := range []struct {
		args []string
		want string
		code int
	}{
		{sample("nothere.json"), "--init: open nothere.json: no such file or directory", 1},
		{sample("mu=abc"), `--init mu: "abc" is not a number`, 1},
		{sample("mu=1,mu=2"), "--init: mu is given twice", 1},
		{sample("mu=NaN"), "--init: the value given for mu is NaN (a parameter's value must be finite)", 1},
		{sample("mu=1,zz=2"), "warning: --init gives zz, which is not a parameter of the model (parameters: mu, sigma)", 0},
		{diagnose("nothere.json"), "--init: open nothere.json: no such file or directory", 1},
		{diagnose("mu=1e400"), `--init mu: "1e400" is too large for a 64-bit float`, 1},
		{diagnose("sigma=1,sigma=2"), "--init: sigma is given twice", 1},
		{iters("nothere.json"), "--at: open nothere.json: no such file or directory", 1},
		{iters("mu=abc,sigma=1"), `--at mu: "abc" is not a number`, 1},
		{iters("mu=2,sigma=0.5,zz=3"), "--at: zz is not a parameter of the model (parameters: mu, sigma)", 1},
		{iters("mu=2,mu=3,sigma=0.5"), "--at: mu is given twice", 1},
		{iters("mu=2"), "--at gives no value for the parameter sigma", 1},
		{iters("mu=2,sigma=Inf"), "--at: the value given for sigma is +Inf", 1},
	} {
		_, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and %q", strings.Join(tt.args[:1], " "), code, stderr, tt.code, tt.want)
		}
		for _, wrong := range []string{"data file", "--at: --init", "--set"} {
			if strings.Contains(stderr, wrong) {
				t.Errorf("%v: %q in the message:\n%s", tt.args, wrong, stderr)
			}
		}
	}
}

// TestSampleNotesOtherChains: a run into a folder that holds chain files
// of its model from an earlier run (which a summary of the folder would
// mix in) says so, naming them.
func TestSampleNotesOtherChains(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "parameters {\n  real x;\n}\nmodel {\n  x ~ normal(0, 1);\n}\n")
	out := filepath.Join(dir, "out")
	args := []string{"sample", model, "--warmup", "20", "--samples", "20", "--seed", "1", "--output", out}
	if _, stderr, code := runCmd(t, append(args, "--chains", "3")...); code != 0 || strings.Contains(stderr, "note:") {
		t.Fatalf("first run: exit %d, %s", code, stderr)
	}
	_, stderr, code := runCmd(t, append(args, "--chains", "1")...)
	if want := "note: " + out + " also holds m-2.csv, m-3.csv of an earlier run, not of this one"; code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("second run: exit %d, %q, want %q", code, stderr, want)
	}
}

// TestOutputIsAnInput: an output that would replace an input (a chain
// file that is the run's data file, --crn-noise naming the model or the
// data) is refused, the input left as it was.
func TestOutputIsAnInput(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  target += -crn(2, sinkhorn(mu + std_normal_rng(N), y, eps = 0.5, iters = 10));\n}\n")
	const text = "y\n1\n2\n1.5\n"
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	data := writeFile(t, out, "m-1.csv", text)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sample", model, data, "--output", out, "--chains", "1", "--warmup", "10", "--samples", "10"}, 1,
			"--output " + out + ": chain 1's file " + data + " is the input " + data + ": the run would replace it"},
		{[]string{"diagnose", model, data, "--crn-noise", data}, 2, "--crn-noise " + data + " is the input " + data},
		{[]string{"diagnose", model, data, "--crn-noise", model}, 2, "--crn-noise " + model + " is the input " + model},
	} {
		_, stderr, code := runCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if b, err := os.ReadFile(data); err != nil || string(b) != text {
			t.Errorf("%v: the data file now holds %q (%v)", tc.args, b, err)
		}
	}
}

// TestSummarySameChainWrittenOtherwise: a chain written again with other
// digits, its warmup draws, thinned or longer (its draws differ from the
// first file's) is the same chain: summary refuses it as given twice,
// where it counted the draws of one chain twice. Chains of other ids or
// seeds of the same model pool.
func TestSummarySameChainWrittenOtherwise(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "n.shm", "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  y ~ normal(mu, 1);\n}\n")
	data := writeFile(t, dir, "d.csv", "y\n1\n2\n3\n")
	sample := func(out string, flags ...string) string {
		t.Helper()
		args := []string{"sample", model, data, "--chains", "1", "--warmup", "30", "--samples", "20", "--seed", "1",
			"--output", filepath.Join(dir, out), "--refresh", "0"}
		for i := 0; i < len(flags); i++ {
			if k := slices.Index(args, flags[i]); k >= 0 && i+1 < len(flags) {
				args[k+1] = flags[i+1] // the run's setting replaces the default
				i++
				continue
			}
			args = append(args, flags[i])
		}
		if _, stderr, code := runCmd(t, args...); code != 0 {
			t.Fatalf("sample %v: %s", flags, stderr)
		}
		names, err := filepath.Glob(filepath.Join(dir, out, "n-*.csv"))
		if err != nil || len(names) != 1 {
			t.Fatalf("sample %v wrote %v (%v)", flags, names, err)
		}
		return names[0]
	}
	first := sample("o1")
	const again = "file 2 is the chain of file 1 again (the same model, data, seed 1, chain id 1 and sampler settings; the files differ at most in how the draws were written: sig_figs, thin, save_warmup, num_samples): give each chain once"
	for _, tc := range []struct {
		name  string
		flags []string
		code  int
		want  string
	}{
		{"sig-figs", []string{"--sig-figs", "8"}, 1, again},
		{"save-warmup", []string{"--save-warmup"}, 1, again},
		{"thin", []string{"--thin", "2"}, 1, again},
		{"samples", []string{"--samples", "35"}, 1, again},
		{"chain-id", []string{"--chain-id", "2"}, 0, ""},
		{"seed", []string{"--chain-id", "2", "--seed", "2"}, 0, "warning: file 2 is from another run than file 1: random.seed = 2, and 1"},
		{"warmup", []string{"--warmup", "40"}, 0, "warning: file 2 is from another run than file 1: num_warmup = 40, and 30"},
	} {
		second := sample(tc.name, tc.flags...)
		stdout, stderr, code := runCmd(t, "summary", first, second)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, stderr, tc.code, tc.want)
		}
		if code == 0 && !strings.Contains(stdout, "2 chains") {
			t.Errorf("%s: the summary is not of 2 chains:\n%s", tc.name, stdout)
		}
		if code == 1 && stdout != "" {
			t.Errorf("%s: refused, but wrote a summary:\n%s", tc.name, stdout)
		}
	}
}

// seedModels are models whose posterior depends on the seed (transformed
// data drawn with _rng; crn noise from the run's seed) and ones whose
// posterior does not (crn with its own seed; a plain model with
// transformed data computed from constants).
var seedModels = []struct {
	name, text string
	key        string // the header key that tells their posteriors apart; "": none
}{
	{"tdrng", "transformed data { real c = normal_rng(0, 10); }\nparameters { real mu; }\nmodel { mu ~ normal(c, 1); }\n", "data.transformed_sha256"},
	{"crnrun", "parameters { real mu; }\nmodel { target += crn(3, -0.5 * square(mu - std_normal_rng())); }\n", "random.crn_seed"},
	{"crnseed", "parameters { real mu; }\nmodel { target += crn(3, -0.5 * square(mu - std_normal_rng()), seed = 7); }\n", ""},
	{"plain", "transformed data { real c = 2 * 1.5; }\nparameters { real mu; }\nmodel { mu ~ normal(c, 1); }\n", ""},
}

// TestSummarySeedPosteriors: chains of a model whose posterior depends on
// the seed, run with other seeds, are of other posteriors: summary and
// plot refuse them, naming the header key, unless --mixed pools them;
// chains of a model whose posterior does not depend on the seed pool
// across seeds (chains run apart with --chain-id).
func TestSummarySeedPosteriors(t *testing.T) {
	dir := t.TempDir()
	for _, m := range seedModels {
		model := writeFile(t, dir, m.name+".shm", m.text)
		out := filepath.Join(dir, m.name)
		for _, seed := range []string{"1", "2"} {
			if _, stderr, code := runCmd(t, "sample", model, "--chains", "1", "--chain-id", seed, "--warmup", "30", "--samples", "20",
				"--seed", seed, "--output", out, "--refresh", "0"); code != 0 {
				t.Fatalf("%s: sample: %s", m.name, stderr)
			}
		}
		files := []string{filepath.Join(out, m.name+"-1.csv"), filepath.Join(out, m.name+"-2.csv")}
		_, stderr, code := runCmd(t, append([]string{"summary"}, files...)...)
		seedWarning := "warning: file 2 is from another run than file 1: random.seed = 2, and 1"
		if m.key == "" {
			if code != 0 || !strings.Contains(stderr, seedWarning) || strings.Contains(stderr, "posterior") {
				t.Errorf("%s, two seeds: exit %d, stderr %q; want them pooled with a warning on the seed", m.name, code, stderr)
			}
			continue
		}
		want := "file 2 is of another posterior than file 1: " + m.key + " = "
		if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--mixed pools them anyway") {
			t.Errorf("%s, two seeds: exit %d, stderr %q; want 1 and %q", m.name, code, stderr, want)
		}
		_, stderr, code = runCmd(t, append([]string{"plot", "trace", "--out", filepath.Join(dir, m.name+".png")}, files...)...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s, two seeds, plot: exit %d, stderr %q; want 1 and %q", m.name, code, stderr, want)
		}
		stdout, stderr, code := runCmd(t, append([]string{"summary", "--mixed"}, files...)...)
		if code != 0 || !strings.Contains(stderr, "warning: file 2 is from another run than file 1: "+m.key+" = ") || !strings.Contains(stdout, "2 chains") {
			t.Errorf("%s, two seeds, --mixed: exit %d, stderr %q\n%s", m.name, code, stderr, stdout)
		}
	}
}
