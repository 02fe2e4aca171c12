package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/stancsv"
)

// TestPathfinderNormal: on an exactly normal posterior (linearModel) shm
// pathfinder's draws have the posterior's means within 0.3 posterior
// standard deviations (the criterion), its file has
// lp_approx__ and lp__ first and the Pareto k-hat in a closing comment
// and on stderr, and the same seed gives the same file.
func TestPathfinderNormal(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "lin.shm", linearModel)
	data := writeFile(t, dir, "lin.csv", "x,y\n0,1.1\n1,2.3\n2,2.9\n3,4.2\n4,5.1\n")
	var files [2][][]float64
	for i := range files {
		out := filepath.Join(t.TempDir(), "out")
		_, stderr, code := runCmd(t, "pathfinder", model, data, "--seed", "4", "--output", out, "--refresh", "0")
		if code != 0 || !strings.Contains(stderr, "Pareto k-hat of the importance weights: ") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		path := filepath.Join(out, "lin-pathfinder.csv")
		f, err := stancsv.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.Columns, []string{"lp_approx__", "lp__", "a", "b"}) || len(f.Draws) != 1000 || f.Method() != "pathfinder" {
			t.Fatalf("columns %v, %d draws, method %s", f.Columns, len(f.Draws), f.Method())
		}
		mean, sd := []float64{1.14, 0.99}, []float64{math.Sqrt(0.6), math.Sqrt(0.1)}
		for j := range 2 {
			m := 0.0
			for _, r := range f.Draws {
				m += r[2+j] / float64(len(f.Draws))
			}
			if math.Abs(m-mean[j]) > 0.3*sd[j] {
				t.Errorf("mean of %s = %v, want %v ± %v", f.Columns[2+j], m, mean[j], 0.3*sd[j])
			}
		}
		files[i] = f.Draws
		if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte("\n# Pareto k-hat = ")) {
			t.Errorf("no Pareto k-hat in the file (%v)", err)
		}
	}
	if !slices.EqualFunc(files[0], files[1], slices.Equal) {
		t.Error("the same seed gave other draws")
	}
}

// TestPathfinderFunnel: on Neal's funnel (20 dimensions), a known
// failure of Pathfinder, the k-hat is above 0.7 (about 1 for seeds 1–3)
// and the command warns to sample with NUTS.
func TestPathfinderFunnel(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "funnel.shm", "parameters { real v; vector[19] x; }\nmodel { v ~ normal(0, 3); x ~ normal(0, exp(v / 2)); }\n")
	_, stderr, code := runCmd(t, "pathfinder", model, "--seed", "1", "--output", filepath.Join(dir, "out"), "--refresh", "0")
	if code != 0 || !strings.Contains(stderr, "warning: Pareto k-hat above 0.7") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestPathfinderFlags: each count flag is refused out of range, naming
// it, as a usage error; draws that memory cannot hold are refused before
// any path runs.
func TestPathfinderFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-paths", "0"}, "--num-paths must be from 1 to"},
		{[]string{"--num-paths", "100000"}, "--num-paths is 100000, at most 1024"},
		{[]string{"--draws", "-1"}, "--draws must be from 1 to"},
		{[]string{"--num-elbo-draws", "0"}, "--num-elbo-draws must be from 1 to"},
		{[]string{"--tol-grad", "NaN"}, "--tol-grad = NaN, must be non-negative and finite"},
		{[]string{"--history-size", "2147483647"}, "--history-size is 2147483647, at most 1000"},
	} {
		_, stderr, code := runCmd(t, append([]string{"pathfinder", "nothere.shm"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
	}
	dir := t.TempDir()
	model := writeFile(t, dir, "lin.shm", linearModel)
	data := writeFile(t, dir, "lin.csv", "x,y\n0,1.1\n1,2.3\n")
	_, stderr, code := runCmd(t, "pathfinder", model, data, "--num-paths", "1024", "--draws", "2147483647", "--output", filepath.Join(dir, "out"))
	if code != 1 || !strings.Contains(stderr, "--num-paths 1024 × (--draws 2147483647 + --num-elbo-draws 25) + --num-psis-draws 1000: 2.199e+12 draws of 6 values need") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestSampleInitPathfinder: --init pathfinder starts every chain at a
// distinct draw of Pathfinder, within 4 posterior standard deviations of
// the posterior mean of linearModel (random initial points are up to
// uniform(−2, 2) away), the same for a seed; sample runs with it and
// records it in the header.
func TestSampleInitPathfinder(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "lin.shm", linearModel)
	data := writeFile(t, dir, "lin.csv", "x,y\n0,1.1\n1,2.3\n2,2.9\n3,4.2\n4,5.1\n")
	bm, err := bindModel(model, []string{data}, nil, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	inits, err := pathfinderInits(context.Background(), bm, 7, []int{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := pathfinderInits(context.Background(), bm, 7, []int{1, 2, 3, 4})
	// Chain 3 alone (--chain-id 3) starts where chain 3 of the four does.
	if third, _ := pathfinderInits(context.Background(), bm, 7, []int{3}); !slices.Equal(third[0], inits[2]) {
		t.Errorf("chain 3 alone starts at %v, with the others at %v", third[0], inits[2])
	}
	mean, sd := []float64{1.14, 0.99}, []float64{math.Sqrt(0.6), math.Sqrt(0.1)}
	for k, p := range inits {
		for j := range 2 {
			if math.Abs(p[j]-mean[j]) > 4*sd[j] {
				t.Errorf("chain %d starts at %v, far from the posterior", k+1, p)
			}
		}
		for _, q := range inits[:k] {
			if slices.Equal(p, q) {
				t.Errorf("two chains start at %v", p)
			}
		}
		if !slices.Equal(p, again[k]) {
			t.Errorf("chain %d: %v, then %v for the same seed", k+1, p, again[k])
		}
	}
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCmd(t, "sample", model, data, "--init", "pathfinder", "--chains", "2", "--warmup", "50", "--samples", "20", "--seed", "7", "--output", out, "--refresh", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := stancsv.ReadFile(filepath.Join(out, "lin-1.csv"))
	if err != nil || f.Config["init"] != "pathfinder" {
		t.Errorf("header init %q (%v)", f.Config["init"], err)
	}
	// Every path failing is one line naming --init; a model without
	// parameters needs no initial point.
	nowhere := writeFile(t, dir, "n.shm", "parameters {\n  real x;\n}\nmodel {\n  target += log(-1 - square(x));\n}\n")
	none := writeFile(t, dir, "none.shm", "generated quantities {\n  real x = 1;\n}\n")
	for _, c := range []struct {
		model string
		code  int
		want  string
	}{
		{nowhere, 1, "--init pathfinder: every path failed, nothing was sampled (give another --init): "},
		{none, 0, ""},
	} {
		_, stderr, code := runCmd(t, "sample", c.model, "--init", "pathfinder", "--chains", "2", "--warmup", "10", "--samples", "10", "--seed", "1", "--output", filepath.Join(dir, "o2"), "--refresh", "0")
		if code != c.code || !strings.Contains(stderr, c.want) || c.code == 1 && strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q on one line", c.model, code, stderr, c.code, c.want)
		}
	}
}
