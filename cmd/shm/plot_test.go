package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotCommand samples a small model twice and draws every kind of
// figure from the files: the file is written where --out says (PNG that
// decodes, or SVG), dens overlays the two runs, and bad input is refused.
func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	var runs [2][]string
	for i, seed := range []string{"1", "2"} {
		out := filepath.Join(dir, "run"+seed)
		if _, stderr, code := runCmd(t, "sample", model, "--seed", seed, "--warmup", "100", "--samples", "100", "--output", out, "--refresh", "0"); code != 0 {
			t.Fatalf("sample: %s", stderr)
		}
		runs[i], _ = filepath.Glob(filepath.Join(out, "op-*.csv"))
	}
	for _, kind := range []string{"trace", "rank", "pairs", "energy"} {
		out := filepath.Join(dir, kind+".png")
		stdout, stderr, code := runCmd(t, append([]string{"plot", kind, "--out", out}, runs[0]...)...)
		if code != 0 || strings.TrimSpace(stdout) != out {
			t.Fatalf("plot %s: exit %d, stdout %q, stderr %q", kind, code, stdout, stderr)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(f)
		f.Close()
		if err != nil {
			t.Errorf("plot %s: %v", kind, err)
		}
	}
	svg := filepath.Join(dir, "dens.svg")
	args := append(append([]string{"plot", "dens", "--vars", "mu", "--out", svg}, runs[0]...), runs[1]...)
	if _, stderr, code := runCmd(t, args...); code != 0 {
		t.Fatalf("plot dens: %s", stderr)
	}
	text, _ := os.ReadFile(svg)
	if !strings.Contains(string(text), "run1") || !strings.Contains(string(text), "run2") {
		t.Errorf("the density overlay does not label both runs")
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plot", "violin", runs[0][0]}, 2, "usage: shm plot"},
		{[]string{"plot", "trace"}, 2, "usage: shm plot"},
		{[]string{"plot", "trace", "--vars", "nu", runs[0][0]}, 1, "no variable nu"},
		{[]string{"plot", "trace", "--out", filepath.Join(dir, "x.gif"), runs[0][0]}, 2, "must end in .png or .svg"},
		{[]string{"plot", "trace", filepath.Join(dir, "missing.csv")}, 1, "no such file"},
	} {
		_, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestPlotPPC samples a model with replicated data and draws its
// posterior predictive checks (density overlay and series), and refuses a
// check without data, of a variable the data lack, or without the
// replicates.
func TestPlotPPC(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "rep.shm", `data { int N; vector[N] y; }
parameters { real mu; }
model { y ~ normal(mu, 1); }
generated quantities {
  vector[N] y_rep;
  for (n in 1:N) y_rep[n] = normal_rng(mu, 1);
}
`)
	dataFile := writeFile(t, dir, "data.csv", "y\n0.1\n-0.4\n1.2\n0.8\n0.3\n-1.1\n0.5\n")
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCmd(t, "sample", model, dataFile, "--warmup", "100", "--samples", "100", "--output", out, "--refresh", "0"); code != 0 {
		t.Fatalf("sample: %s", stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "rep-*.csv"))
	for _, extra := range [][]string{nil, {"--series"}} {
		svg := filepath.Join(dir, "ppc.svg")
		args := append(append([]string{"plot", "ppc", "--data", dataFile, "--y", "y", "--out", svg}, extra...), files...)
		if _, stderr, code := runCmd(t, args...); code != 0 {
			t.Fatalf("plot ppc %v: %s", extra, stderr)
		}
		text, _ := os.ReadFile(svg)
		if !strings.Contains(string(text), "y_rep") || !strings.Contains(string(text), "observed") {
			t.Errorf("plot ppc %v: the figure does not name y_rep and the observed data", extra)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--y", "y"}, "needs --data FILE and --y NAME"},
		{[]string{"--data", dataFile, "--y", "z"}, "the data files have no z"},
		{[]string{"--data", dataFile, "--y", "y", "--yrep", "mu_rep"}, "needs the generated quantity mu_rep"},
	} {
		args := append(append([]string{"plot", "ppc", "--out", filepath.Join(dir, "x.png")}, tt.args...), files...)
		_, stderr, code := runCmd(t, args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
}
