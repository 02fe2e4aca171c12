package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/stancsv"
)

// expDImage writes a synthetic data file of the Experiment D models: a
// smooth 32×32 three-channel image and a 16×16 window of it as the
// target.
func expDImage(t *testing.T) string {
	img := make([][][]float64, 3)
	obs := make([][][]float64, 3)
	for c := range 3 {
		img[c] = make([][]float64, 32)
		for i := range 32 {
			img[c][i] = make([]float64, 32)
			for j := range 32 {
				img[c][i][j] = 128 + 100*math.Sin(float64(i+2*c)/5)*math.Cos(float64(j)/7)
			}
		}
		obs[c] = make([][]float64, 16)
		for i := range 16 {
			obs[c][i] = make([]float64, 16)
			for j := range 16 {
				obs[c][i][j] = img[c][i+9][j+6] / 255
			}
		}
	}
	b, err := json.Marshal(map[string]any{"img": img, "obs": obs})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "img.json", string(b))
}

// TestSinkhornReportShipped: every shipped model with a sinkhorn call
// prints the report after sampling, one line per call, and its numbers
// are those of shm calibrate iters (itersTable, T against 5 T) at the
// report's points, bit for bit.
func TestSinkhornReportShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("samples every shipped Sinkhorn model")
	}
	img := expDImage(t)
	expA := "../../../shared/testdata/expA/data.csv"
	cases := map[string]struct {
		data []string
		sets []string
	}{
		"expA.shm":                 {[]string{expA}, []string{"lambda=1"}},
		"expA_unbalanced.shm":      {[]string{expA}, []string{"lambda=1"}},
		"expA_noise_as_data.shm":   {[]string{expA, "../../../shared/testdata/expA/crn_z.csv"}, []string{"lambda=1", "K=6"}},
		"expB/expB.shm":            {[]string{"../../models/expB/data/data.csv"}, []string{"lambda=2.4837"}},
		"expC/expC.shm":            {[]string{"../../models/expC/data/data.csv"}, []string{"lambda=1"}},
		"expD/expD_balanced.shm":   {[]string{img}, []string{"lambda=0.5"}},
		"expD/expD_unbalanced.shm": {[]string{img}, []string{"lambda=0.5"}},
		"gandk/gandk_recipe.shm":   {[]string{"../../models/gandk/data/data.csv"}, []string{"lambda=1"}},
		"gandk/gandk.shm":          {[]string{"../../models/gandk/data/data.csv"}, []string{"lambda=1"}},
	}
	var shipped []string
	for _, pattern := range []string{"../../models/*.shm", "../../models/*/*.shm"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if regexp.MustCompile(`\bsinkhorn(_ot)?\(`).Match(text) {
				shipped = append(shipped, strings.TrimPrefix(f, "../../models/"))
			}
		}
	}
	if len(shipped) < len(cases) {
		t.Fatalf("found %d shipped Sinkhorn models (%v), the table has %d", len(shipped), shipped, len(cases))
	}
	for _, name := range shipped {
		c, ok := cases[name]
		if !ok {
			t.Errorf("%s calls sinkhorn but has no case here: add its data", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			model := "../../models/" + name
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"sample", model}, c.data...)
			for _, s := range c.sets {
				args = append(args, "--set", s)
			}
			args = append(args, "--chains", "1", "--warmup", "30", "--samples", "20", "--seed", "1", "--output", out, "--refresh", "0")
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			csvs, err := filepath.Glob(filepath.Join(out, "*.csv"))
			if err != nil || len(csvs) != 1 {
				t.Fatalf("output files %v (%v)", csvs, err)
			}
			fit, err := stancsv.ReadFit(csvs...)
			if err != nil {
				t.Fatal(err)
			}
			f := budgetFlags{sets: c.sets, seed: 1}
			bind := newBudgetBinder(context.Background(), model, c.data, &f)
			bm, err := bind(runtime.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pts, err := reportPoints(bm, fit, reportDraws)
			if err != nil {
				t.Fatal(err)
			}
			calls, err := itersCalls(bind, bm, pts)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 {
				t.Fatalf("%d calls reported, want the model's one", len(calls))
			}
			call := calls[0]
			if strings.HasPrefix(call.Budget, "tol = ") {
				// A converged call: calibrate iters has no budgets to
				// compare it with; its report is against tol / 5, and a
				// shipped converged loss is converged where it is used.
				line := fmt.Sprintf("  %s at %s (%s): max Δ_lp %.3g, max Δ_∇ %.3g; ", call.Call.Func.Name, call.Call.Position(), call.Budget,
					slices.Max(call.DeltaLP), slices.Max(call.DeltaGr))
				if !strings.Contains(stdout.String(), line) || !strings.Contains(stdout.String(), " iterations per problem (at most ") {
					t.Errorf("the output lacks the report line %q:\n%s", line, stdout.String())
				}
				if strings.Contains(stdout.String(), "is not converged") {
					t.Errorf("a shipped converged loss warns:\n%s", stdout.String())
				}
				return
			}
			T, err := strconv.Atoi(strings.TrimPrefix(call.Budget, "T = "))
			if err != nil {
				t.Fatalf("budget %q: %v", call.Budget, err)
			}
			rows, err := itersTable(bind, func(*runtime.Model) ([][]float64, error) { return pts, nil }, []int{T}, refFactor*T)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rows[0].DeltaLP, call.DeltaLP) || !slices.Equal(rows[0].DeltaGr, call.DeltaGr) {
				t.Errorf("report Δ_lp %v, Δ_∇ %v; calibrate iters %v, %v", call.DeltaLP, call.DeltaGr, rows[0].DeltaLP, rows[0].DeltaGr)
			}
			line := fmt.Sprintf("  %s at %s (T = %d): max Δ_lp %.3g, max Δ_∇ %.3g; ", call.Call.Func.Name, call.Call.Position(), T,
				slices.Max(rows[0].DeltaLP), slices.Max(rows[0].DeltaGr))
			if !strings.Contains(stdout.String(), "Sinkhorn iterations") || !strings.Contains(stdout.String(), line) {
				t.Errorf("the output lacks the report line %q:\n%s", line, stdout.String())
			}
		})
	}
}

// reportModel is a Sinkhorn loss whose budget and eps the cases set.
const reportModel = `data {
  int N;
  vector[N] y;
  vector[N] z;
  real eps;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 10);
  target += -10 * LOSS;
}
`

// TestSinkhornReportWarning: the warning names the call and fires where
// the budget is far from converged (eps small against the points'
// spacing, few iterations), not where it is converged.
func TestSinkhornReportWarning(t *testing.T) {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("y,z\n")
	for i := range 40 {
		fmt.Fprintf(&csv, "%g,%g\n", 1+math.Sin(float64(3*i)), math.Cos(float64(5*i)))
	}
	data := writeFile(t, dir, "d.csv", csv.String())
	for _, tc := range []struct {
		name, budget, eps string
		warn, crn         bool
	}{
		{"far", "iters = 3", "0.001", true, false},
		{"converged", "iters = 300", "1", false, false},
		{"tol", "tol = 1e-8", "1", false, false},
		{"loose tol", "tol = 0.5", "0.01", true, false},
		{"tol inside crn", "tol = 1e-8", "1", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loss := "sinkhorn(mu + z, y, eps = eps, " + tc.budget + ")"
			if tc.crn {
				loss = "crn(2, sinkhorn(mu + z + 0.1 * std_normal_rng(N), y, eps = eps, " + tc.budget + "))"
			}
			model := writeFile(t, t.TempDir(), "m.shm", strings.Replace(reportModel, "LOSS", loss, 1))
			var stdout, stderr bytes.Buffer
			code := run([]string{"sample", model, data, "--set", "eps=" + tc.eps, "--chains", "1", "--warmup", "50", "--samples", "50",
				"--seed", "2", "--output", filepath.Join(t.TempDir(), "o"), "--refresh", "0"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			want := "warning: " + model + ":12:"
			if got := strings.Contains(out, want) && strings.Contains(out, "sinkhorn with "+strings.Replace(tc.budget, "iters", "T", 1)+" is not converged"); got != tc.warn {
				t.Errorf("warning %v, want %v:\n%s", got, tc.warn, out)
			}
			if !strings.Contains(out, "sinkhorn at 12:") {
				t.Errorf("no report line:\n%s", out)
			}
			// A converged call says what convergence took.
			if strings.HasPrefix(tc.budget, "tol") != strings.Contains(out, " iterations per problem (at most ") {
				t.Errorf("iteration counts for %s:\n%s", tc.budget, out)
			}
		})
	}
}

// TestIterativeCalls: the checker lists the calls whose budget can move
// the log density, not those of transformed data or generated
// quantities.
func TestIterativeCalls(t *testing.T) {
	src := `functions {
  real loss(vector x, vector y) { return sinkhorn(x, y, eps = 1, iters = 7); }
}
data { vector[3] y; }
transformed data { real s0 = sinkhorn(y, y, eps = 1); }
parameters { real mu; }
transformed parameters { real s1 = sinkhorn(y + mu, y, eps = 1, iters = 9); }
model { target += -loss(y + mu, y) - sinkhorn_ot(y + mu, y, eps = 2) - sinkhorn(y * mu, y, eps = 1, tol = 1e-7); }
generated quantities { real s2 = sinkhorn(y + mu, y, eps = 1); }
`
	m, err := checkModel(writeFile(t, t.TempDir(), "m.shm", src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range m.Iterative {
		got = append(got, c.Func.Name+"@"+c.Position().String()+"="+callBudget(c))
	}
	want := []string{"sinkhorn@2:42=T = 7", "sinkhorn@7:36=T = 9", "sinkhorn_ot@8:38=T = 100", "sinkhorn@8:72=tol = 1e-07"}
	if !slices.Equal(got, want) {
		t.Errorf("iterative calls %v, want %v", got, want)
	}
}
