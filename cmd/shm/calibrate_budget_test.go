package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
)

// expAWith writes Experiment A's model with its text changed by replace
// (old, new pairs) and returns its path.
func expAWith(t *testing.T, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "models", "expA.shm"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			t.Fatalf("expA.shm has no %q", replace[i])
		}
		text = strings.ReplaceAll(text, replace[i], replace[i+1])
	}
	return writeFile(t, t.TempDir(), "expA.shm", text)
}

// directEval binds a model file and evaluates it at the constrained point
// mu, sigma: log density and gradient, and the crn statistics.
func directEval(t *testing.T, model, dataFile string) (evaluation, []runtime.CRNStat) {
	t.Helper()
	bm, err := bindModel(model, []string{dataFile}, []string{"lambda=1"}, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	set := &data.Set{}
	set.AddSet(&data.Value{Name: "mu", Data: []float64{1.7}})
	set.AddSet(&data.Value{Name: "sigma", Data: []float64{0.6}})
	theta, err := bm.Unconstrain(set, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, len(theta))
	lp, err := d.LogDensityGrad(theta, g)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := d.CRNStats(theta)
	if err != nil {
		t.Fatal(err)
	}
	return evaluation{lp, g}, stats
}

// TestCalibrateIters checks shm calibrate iters on Experiment A against
// the model evaluated directly with iters = T written in its text.
func TestCalibrateIters(t *testing.T) {
	dataFile := shared.Path(t, "testdata", "expA", "data.csv")
	model := filepath.Join("..", "..", "models", "expA.shm")
	f := &budgetFlags{at: stringList{"mu=1.7,sigma=0.6"}, sets: setList{"lambda=1"}, seed: 1}
	bind := newBudgetBinder(context.Background(), model, []string{dataFile}, f)
	rows, err := itersTable(bind, func(bm *runtime.Model) ([][]float64, error) {
		return budgetPoints(context.Background(), bm, f, io.Discard)
	}, []int{10, 30}, 90)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := directEval(t, expAWith(t, "iters = 80", "iters = 90"), dataFile)
	for i, T := range []int{10, 30} {
		got, _ := directEval(t, expAWith(t, "iters = 80", "iters = "+itoa(T)), dataFile)
		wantLP := math.Abs(got.lp - ref.lp)
		diff, norm := 0.0, 0.0
		for j := range got.grad {
			diff += (got.grad[j] - ref.grad[j]) * (got.grad[j] - ref.grad[j])
			norm += ref.grad[j] * ref.grad[j]
		}
		wantGr := math.Sqrt(diff) / math.Max(1, math.Sqrt(norm))
		r := rows[i]
		if r.T != T || r.DeltaLP[0] != wantLP || r.DeltaGr[0] != wantGr {
			t.Errorf("T = %d: Δ_lp %g, Δ_∇ %g; direct evaluation: %g, %g", T, r.DeltaLP[0], r.DeltaGr[0], wantLP, wantGr)
		}
		if wantLP == 0 || wantGr == 0 {
			t.Errorf("T = %d: no difference from T_ref: the budget was not applied", T)
		}
	}
	// The command prints the table.
	var stdout, stderr bytes.Buffer
	code := run([]string{"calibrate", "iters", model, dataFile, "--set", "lambda=1", "--iters", "10,30", "--ref", "90",
		"--at", "mu=1.7,sigma=0.6"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "T_ref = 90") || strings.Count(stdout.String(), "\n") != 4 {
		t.Errorf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestCalibrateItersRefuses: settings that would print a table of zeros
// or compare against a reference no finer than the budgets are refused,
// saying why, with a non-zero status.
func TestCalibrateItersRefuses(t *testing.T) {
	dataFile := shared.Path(t, "testdata", "expA", "data.csv")
	model := filepath.Join("..", "..", "models", "expA.shm")
	dir := t.TempDir()
	plain := writeFile(t, dir, "plain.shm", "data { int N; vector[N] y; real lambda; }\nparameters { real mu; }\nmodel { y ~ normal(mu, 1); }\n")
	tol := writeFile(t, dir, "tol.shm", "data { int N; vector[N] y; real lambda; }\nparameters { real mu; }\nmodel { target += -sinkhorn(mu + y, y, eps = 0.1, tol = 1e-6); }\n")
	for _, tc := range []struct {
		model string
		args  []string
		want  string
	}{
		{model, []string{"--iters", "10,30", "--ref", "30"}, "--ref 30 must exceed every budget"},
		{model, []string{"--iters", "10,30", "--ref", "-5"}, "--ref must be a positive integer, got -5"},
		{model, []string{"--iters", "10", "--draws", "x.csv", "--points", "0"}, "--points must be at least 1"},
		{plain, []string{"--iters", "10"}, "has no sinkhorn call whose iterations reach the log density"},
		{tol, []string{"--iters", "10"}, "every sinkhorn call of " + tol + " has tol"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"calibrate", "iters", tc.model, dataFile, "--set", "lambda=1", "--at", "mu=1.7,sigma=0.6"}, tc.args...)
		code := run(args, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want an error with %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestCalibrateCRN checks shm calibrate crn on Experiment A against the
// model evaluated directly with crn(K, ...) written in its text.
func TestCalibrateCRN(t *testing.T) {
	dataFile := shared.Path(t, "testdata", "expA", "data.csv")
	model := filepath.Join("..", "..", "models", "expA.shm")
	f := &budgetFlags{at: stringList{"mu=1.7,sigma=0.6"}, sets: setList{"lambda=1"}, seed: 1}
	bind := newBudgetBinder(context.Background(), model, []string{dataFile}, f)
	rows, err := crnTable(bind, func(bm *runtime.Model) ([][]float64, error) {
		return budgetPoints(context.Background(), bm, f, io.Discard)
	}, []int{3, 12})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []int{3, 12} {
		_, stats := directEval(t, expAWith(t, "crn(6,", "crn("+itoa(k)+","), dataFile)
		if len(stats) != 1 || stats[0].K != k {
			t.Fatalf("K = %d: direct statistics %+v", k, stats)
		}
		if r := rows[i]; r.K != k || r.VarMean[0] != stats[0].VarMean || !(r.VarMean[0] > 0) {
			t.Errorf("K = %d: Var[S̄_K] %g; direct evaluation %g", k, r.VarMean[0], stats[0].VarMean)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"calibrate", "crn", model, dataFile, "--set", "lambda=1", "--k", "3,12", "--at", "mu=1.7,sigma=0.6"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "expA.shm:20:20") || strings.Count(stdout.String(), "\n") != 4 {
		t.Errorf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCalibrateEps checks the three rules on a grid with known spacing.
func TestCalibrateEps(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("y.1,y.2\n")
	for i := 0; i < 4; i++ {
		for j := 0; j < 3; j++ {
			b.WriteString(itoa(2*i) + "," + itoa(3*j) + "\n") // spacing 2 and 3
		}
	}
	file := writeFile(t, dir, "grid.csv", b.String())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"calibrate", "eps", file, "--y", "y", "--noise", "0.5", "--alpha", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	// Noise 0.5: eps = (2·0.5)² = 1; nearest neighbour 2 (every point
	// has one at distance 2): eps 16; spacing 2: eps 16.
	squeezed := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		squeezed[strings.Join(strings.Fields(line), " ")] = true
	}
	for _, want := range []string{"1. known noise 0.5 1", "2. median nearest neighbour 2 16", "3. grid spacing 2 16"} {
		found := false
		for line := range squeezed {
			found = found || strings.HasPrefix(line, want+" ")
		}
		if !found {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if !strings.Contains(out, "12 points in 2 dimension(s)") {
		t.Errorf("no point count in\n%s", out)
	}
}
