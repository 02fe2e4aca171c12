package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/stancsv"
)

// linearModel is a regression with unit noise and flat priors: its
// posterior is exactly normal, mean the least-squares fit and covariance
// (XᵀX)⁻¹, so that the Laplace approximation is exact.
const linearModel = "data { int N; vector[N] x; vector[N] y; }\nparameters { real a; real b; }\nmodel { y ~ normal(a + b * x, 1); }\n"

// TestLaplaceExact: 10 000 draws of shm laplace on a posterior that is
// exactly normal have its mean and covariance within Monte Carlo error
// (4 standard errors), and log_p__ − log_g__ is the same at every draw
// (the normalizing constant), with the mode found by the command itself
// or read from shm optimize --jacobian's file.
func TestLaplaceExact(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "lin.shm", linearModel)
	data := writeFile(t, dir, "lin.csv", "x,y\n0,1.1\n1,2.3\n2,2.9\n3,4.2\n4,5.1\n")
	// XᵀX = [[5, 10], [10, 30]]; its inverse is [[0.6, −0.2], [−0.2, 0.1]].
	mean := []float64{1.14, 0.99}
	cov := [2][2]float64{{0.6, -0.2}, {-0.2, 0.1}}
	opt := filepath.Join(dir, "opt")
	if _, stderr, code := runCmd(t, "optimize", model, data, "--jacobian", "--output", opt, "--refresh", "0", "--seed", "1"); code != 0 {
		t.Fatal(stderr)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"mode found", nil},
		{"mode read", []string{"--mode", filepath.Join(opt, "lin-optimize.csv")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"laplace", model, data, "--draws", "10000", "--seed", "3", "--output", out, "--refresh", "0"}, c.args...)
			if _, stderr, code := runCmd(t, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			f, err := stancsv.ReadFile(filepath.Join(out, "lin-laplace.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Columns, []string{"log_p__", "log_g__", "a", "b"}) || len(f.Draws) != 10000 || f.Method() != "laplace" {
				t.Fatalf("columns %v, %d draws, method %s", f.Columns, len(f.Draws), f.Method())
			}
			n := float64(len(f.Draws))
			var m [2]float64
			for _, r := range f.Draws {
				m[0] += r[2] / n
				m[1] += r[3] / n
			}
			var s [2][2]float64
			for _, r := range f.Draws {
				for i := range 2 {
					for j := range 2 {
						s[i][j] += (r[2+i] - m[i]) * (r[2+j] - m[j]) / (n - 1)
					}
				}
			}
			for i := range 2 {
				if se := math.Sqrt(cov[i][i] / n); math.Abs(m[i]-mean[i]) > 4*se {
					t.Errorf("mean %d = %v, want %v ± %v", i, m[i], mean[i], 4*se)
				}
				for j := range 2 {
					// The variance of a sample covariance: (Σij² + ΣiiΣjj)/n.
					se := math.Sqrt((cov[i][j]*cov[i][j] + cov[i][i]*cov[j][j]) / n)
					if math.Abs(s[i][j]-cov[i][j]) > 4*se {
						t.Errorf("covariance %d,%d = %v, want %v ± %v", i, j, s[i][j], cov[i][j], 4*se)
					}
				}
			}
			first := f.Draws[0][0] - f.Draws[0][1]
			for k, r := range f.Draws {
				if d := r[0] - r[1]; math.Abs(d-first) > 1e-4 { // six significant digits each
					t.Fatalf("draw %d: log_p__ − log_g__ = %v, draw 1's %v", k+1, d, first)
				}
			}
		})
	}
}

// TestLaplaceRefused: bad flags, a --mode file that is not an optimum of
// the same density or lacks a parameter, and a point that is not a mode
// are errors naming the cause, with no file left.
func TestLaplaceRefused(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "lin.shm", linearModel)
	data := writeFile(t, dir, "lin.csv", "x,y\n0,1.1\n1,2.3\n2,2.9\n")
	flat := writeFile(t, dir, "flat.shm", "parameters { real a; }\nmodel { }\n")
	opt := filepath.Join(dir, "opt")
	if _, stderr, code := runCmd(t, "optimize", model, data, "--output", opt, "--refresh", "0", "--seed", "1"); code != 0 {
		t.Fatal(stderr)
	}
	mode := filepath.Join(opt, "lin-optimize.csv")
	chain := writeFile(t, dir, "lin-1.csv", "# method = sample (Default)\nlp__,a,b\n-1,1,1\n")
	other := writeFile(t, dir, "other-optimize.csv", "# method = optimize\n#   optimize\n#     jacobian = 1\nlp__,nu\n-1,2\n")
	none := writeFile(t, dir, "none.shm", "generated quantities {\n  real x = 1;\n}\n")
	otherData := writeFile(t, dir, "lin2.csv", "x,y\n0,11\n1,23\n2,29\n")
	otherMode := filepath.Join(dir, "opt2")
	if _, stderr, code := runCmd(t, "optimize", model, otherData, "--jacobian", "--output", otherMode, "--refresh", "0", "--seed", "1"); code != 0 {
		t.Fatal(stderr)
	}
	nanMode := writeFile(t, dir, "nan-optimize.csv", "# method = optimize\n#   optimize\n#     jacobian = 1\nlp__,a,b\n-1,nan,1\n")
	jmode := filepath.Join(otherMode, "lin-optimize.csv")
	// A mode file named as the run's output (an optimize file renamed).
	b, err := os.ReadFile(jmode)
	if err != nil {
		t.Fatal(err)
	}
	renamed := writeFile(t, t.TempDir(), "lin-laplace.csv", string(b))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{none}, 1, none + " has no parameters: laplace has nothing to find"},
		{[]string{model, data, "--mode", jmode}, 1, "--mode " + jmode + " is of other data files than these"},
		{[]string{model, data, "--mode", nanMode}, 1, "--mode " + nanMode + ": a is NaN: a point's parameters are finite"},
		{[]string{model, otherData, "--mode", renamed, "--output", filepath.Dir(renamed)}, 1, "the file " + renamed + " is the input " + renamed},
		{[]string{model, data, "--draws", "0"}, 2, "--draws must be from 1 to"},
		{[]string{model, data, "--draws", "2147483647"}, 1, "--draws 2147483647: 2.147e+09 draws of 6 values need"},
		{[]string{model, data, "--mode", mode}, 1, "was found with jacobian = 0, and this run has --jacobian=true: the mode is of another density"},
		{[]string{model, data, "--mode", chain}, 1, "is the output of sample, not of optimize"},
		{[]string{model, data, "--mode", other}, 1, "has no column a, a parameter of " + model},
		{[]string{flat}, 1, "the Hessian at the mode is not negative definite"},
	} {
		args := append([]string{"laplace"}, c.args...)
		if !slices.Contains(args, "--output") {
			args = append(args, "--output", filepath.Join(t.TempDir(), "out"))
		}
		_, stderr, code := runCmd(t, append(args, "--refresh", "0")...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	// The mode of the MAP with --jacobian=false is accepted.
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := runCmd(t, "laplace", model, data, "--mode", mode, "--jacobian=false", "--output", out, "--draws", "10"); code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
