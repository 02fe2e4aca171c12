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
