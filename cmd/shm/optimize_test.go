package main

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/stancsv"
)

// TestOptimizeMode checks shm optimize against analytic modes, with every
// algorithm: a gamma(3, 2) scale has its mode at (a−1)/b = 1 on the
// constrained scale and, with --jacobian (the density of log s), at
// a/b = 1.5; a normal mean with a normal(0, 10) prior and unit noise has
// its mode at Σy/(n + 1/100). lp__ is the log density with its
// constants, as CmdStan's.
func TestOptimizeMode(t *testing.T) {
	dir := t.TempDir()
	scale := writeFile(t, dir, "s.shm", "parameters {\n  real<lower=0> s;\n}\nmodel {\n  s ~ gamma(3, 2);\n}\n")
	mean := writeFile(t, dir, "m.shm", "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 10);\n  y ~ normal(mu, 1);\n}\ngenerated quantities {\n  real twice = 2 * mu;\n}\n")
	y := writeFile(t, dir, "y.csv", "y\n1.5\n0.2\n2.9\n")
	gammaLp := func(s float64) float64 { return 3*math.Log(2) - math.Log(2) + 2*math.Log(s) - 2*s }
	muHat := 4.6 / (3 + 0.01)
	normalLp := func(mu float64) float64 {
		lp := -0.5*(mu/10)*(mu/10) - math.Log(10) - 0.5*math.Log(2*math.Pi)
		for _, v := range []float64{1.5, 0.2, 2.9} {
			lp += -0.5*(v-mu)*(v-mu) - 0.5*math.Log(2*math.Pi)
		}
		return lp
	}
	for _, alg := range []string{"lbfgs", "bfgs", "newton"} {
		for _, c := range []struct {
			name   string
			args   []string
			column string
			want   float64
			lp     float64
		}{
			{"MAP", []string{scale}, "s", 1, gammaLp(1)},
			{"unconstrained mode", []string{scale, "--jacobian"}, "s", 1.5, gammaLp(1.5) + math.Log(1.5)},
			{"normal mean", []string{mean, y}, "mu", muHat, normalLp(muHat)},
		} {
			t.Run(alg+" "+c.name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out")
				args := append([]string{"optimize"}, c.args...)
				args = append(args, "--algorithm", alg, "--seed", "3", "--output", out, "--refresh", "0")
				stdout, stderr, code := runCmd(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				files, _ := filepath.Glob(filepath.Join(out, "*-optimize.csv"))
				if len(files) != 1 {
					t.Fatalf("files %v", files)
				}
				f, err := stancsv.ReadFile(files[0])
				if err != nil {
					t.Fatal(err)
				}
				if f.Method() != "optimize" || f.Config["algorithm"] != alg || len(f.Draws) != 1 || f.Columns[0] != "lp__" {
					t.Fatalf("method %q, algorithm %q, %d rows, columns %v", f.Method(), f.Config["algorithm"], len(f.Draws), f.Columns)
				}
				row := f.Draws[0]
				got := row[slices.Index(f.Columns, c.column)]
				if math.Abs(got-c.want) > 1e-4 {
					t.Errorf("%s = %v, want %v", c.column, got, c.want)
				}
				if math.Abs(row[0]-c.lp) > 1e-6 {
					t.Errorf("lp__ = %v, want %v", row[0], c.lp)
				}
				if i := slices.Index(f.Columns, "twice"); i >= 0 && math.Abs(row[i]-2*got) > 1e-5 {
					t.Errorf("generated quantity twice = %v at mu = %v", row[i], got)
				}
				if !strings.Contains(stdout, c.column+" ") || !strings.Contains(stderr, "Optimization terminated normally") {
					t.Errorf("stdout %q, stderr %q", stdout, stderr)
				}
			})
		}
	}
}

// TestOptimizeRefused checks that bad flags are usage errors naming the
// flag and its value, and that a model without a finite starting point or
// with an unbounded density fails naming the cause (the unbounded one's
// file holds its last iterate, as CmdStan writes it, and says so).
func TestOptimizeRefused(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "s.shm", "parameters {\n  real<lower=0> s;\n}\nmodel {\n  s ~ gamma(3, 2);\n}\n")
	unbounded := writeFile(t, dir, "u.shm", "parameters {\n  real x;\n}\nmodel {\n  target += x;\n}\n")
	nowhere := writeFile(t, dir, "n.shm", "parameters {\n  real x;\n}\nmodel {\n  target += log(-1 - square(x));\n}\n")
	none := writeFile(t, dir, "none.shm", "generated quantities {\n  real x = 1;\n}\n")
	huge := writeFile(t, dir, "h.shm", "parameters {\n  vector[2000000] z;\n}\nmodel {\n  z ~ std_normal();\n}\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{model, "--algorithm", "sgd"}, 2, `--algorithm must be lbfgs, bfgs or newton, got "sgd"`},
		{[]string{model, "--tol-rel-grad", "-1"}, 2, "--tol-rel-grad = -1, must be non-negative and finite"},
		{[]string{model, "--init-alpha", "0"}, 2, "--init-alpha = 0, must be positive and finite"},
		{[]string{model, "--history-size", "0"}, 2, "--history-size = 0, must be positive"},
		{[]string{model, "--iter", "0"}, 2, "--iter = 0, must be positive"},
		{[]string{model, "--history-size", "99999999999"}, 2, "--history-size is 99999999999, at most 1000"},
		{[]string{model, "--sig-figs", "0"}, 2, "--sig-figs must be between 1 and 18, got 0"},
		{[]string{model, "--output", ""}, 2, "--output is empty"},
		{[]string{unbounded}, 1, "line search failed"},
		{[]string{nowhere}, 1, "initial point"},
		{[]string{none}, 1, none + " has no parameters: optimize has nothing to find"},
		{[]string{huge, "--algorithm", "newton"}, 1, "--algorithm newton with 2000000 parameters needs"},
		{[]string{huge, "--algorithm", "bfgs"}, 1, "--algorithm bfgs with 2000000 parameters needs"},
	} {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"optimize"}, c.args...)
			if !slices.Contains(args, "--output") {
				args = append(args, "--output", out)
			}
			_, stderr, code := runCmd(t, append(args, "--refresh", "0")...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.want)
			}
		})
	}
}
