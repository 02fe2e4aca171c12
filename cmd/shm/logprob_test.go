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

// TestLogProb checks shm log_prob against the analytic log density of
// generateModel (constants dropped, as lp__) and its gradient with
// respect to (mu, log sigma), with and without the Jacobian, at a point
// given on the constrained scale, as params_r on the unconstrained one,
// and at every row of a Stan CSV file.
func TestLogProb(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "g.shm", generateModel)
	y := []float64{1.2, 0.4, 2.5, 1.9}
	data := writeFile(t, dir, "y.csv", "y\n1.2\n0.4\n2.5\n1.9\n")
	// lp = −mu²/200 − sigma − n log sigma − Σ(y − mu)²/(2 sigma²) [+ log sigma]
	want := func(mu, sigma float64, jacobian bool) (lp, gmu, gls float64) {
		ss, s1 := 0.0, 0.0
		for _, v := range y {
			ss += (v - mu) * (v - mu)
			s1 += v - mu
		}
		n := float64(len(y))
		lp = -mu*mu/200 - sigma - n*math.Log(sigma) - ss/(2*sigma*sigma)
		gmu = -mu/100 + s1/(sigma*sigma)
		gls = sigma * (-1 - n/sigma + ss/(sigma*sigma*sigma))
		if jacobian {
			lp, gls = lp+math.Log(sigma), gls+1
		}
		return lp, gmu, gls
	}
	params := writeFile(t, dir, "u.json", `{"params_r": [[1, 0.6931471805599453], [0.5, -1]]}`)
	draws := writeFile(t, dir, "g-1.csv", "lp__,accept_stat__,mu,sigma,prec,y_rep,k.1,k.2\n0,1,1,2,0,0,0,0\n0,1,0.5,0.36787944117144233,0,0,0,0\n")
	for _, c := range []struct {
		args     []string
		points   [][2]float64
		jacobian bool
	}{
		{[]string{"--constrained", "mu=1,sigma=2"}, [][2]float64{{1, 2}}, true},
		{[]string{"--constrained", "mu=1,sigma=2", "--jacobian=false"}, [][2]float64{{1, 2}}, false},
		{[]string{"--unconstrained", params}, [][2]float64{{1, 2}, {0.5, math.Exp(-1)}}, true},
		{[]string{"--constrained", draws, "--jacobian=false"}, [][2]float64{{1, 2}, {0.5, math.Exp(-1)}}, false},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if _, stderr, code := runCmd(t, append([]string{"log_prob", model, data, "--output", out, "--sig-figs", "15"}, c.args...)...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			f, err := stancsv.ReadFile(filepath.Join(out, "g-log_prob.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Columns, []string{"lp__", "g_mu", "g_sigma"}) || len(f.Draws) != len(c.points) || f.Method() != "log_prob" {
				t.Fatalf("columns %v, %d rows, method %s", f.Columns, len(f.Draws), f.Method())
			}
			for k, p := range c.points {
				lp, gmu, gls := want(p[0], p[1], c.jacobian)
				for j, w := range []float64{lp, gmu, gls} {
					if got := f.Draws[k][j]; math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)) {
						t.Errorf("point %d, %s = %v, want %v", k+1, f.Columns[j], got, w)
					}
				}
			}
		})
	}
}

// TestLogProbRefused: no points, both kinds, a point without a parameter,
// params_r of the wrong size, a CSV file of another model.
func TestLogProbRefused(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "g.shm", generateModel)
	data := writeFile(t, dir, "y.csv", "y\n1.2\n0.4\n")
	short := writeFile(t, dir, "u.json", `{"params_r": [1, 2, 3]}`)
	other := writeFile(t, dir, "o-1.csv", "lp__,nu\n0,1\n")
	nanRow := writeFile(t, dir, "n-1.csv", "lp__,mu,sigma\n0,1,1\n0,1,nan\n")
	nanR := writeFile(t, dir, "nan.json", `{"params_r": [[1, 2], [1, "NaN"]]}`)
	notJSON := writeFile(t, dir, "u.txt", "1,2")
	own := filepath.Join(t.TempDir(), "g-log_prob.csv") // a points file named as the output
	if err := os.WriteFile(own, []byte("lp__,mu,sigma\n0,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{model, data}, 2, "give the points with exactly one of --constrained and --unconstrained"},
		{[]string{model, data, "--constrained", "mu=1,sigma=2", "--unconstrained", short}, 2, "exactly one of"},
		{[]string{model, data, "--constrained", "mu=1"}, 1, "--constrained gives no value for the parameter sigma"},
		{[]string{model, data, "--constrained", "mu=1,sigma=-2"}, 1, "sigma"},
		{[]string{model, data, "--unconstrained", short}, 1, "params_r has sizes [3]; the model has 2 unconstrained coordinates"},
		{[]string{model, data, "--constrained", other}, 1, "has no column mu, a parameter of the model"},
		{[]string{model, data, "--constrained", nanRow}, 1, "--constrained " + nanRow + ": row 2: sigma is NaN: a point's parameters are finite"},
		{[]string{model, data, "--unconstrained", nanR}, 1, `key "params_r"[2][2] is NaN: a point's coordinates are finite`},
		{[]string{model, data, "--unconstrained", notJSON}, 1, "--unconstrained " + notJSON + ": a JSON file (.json) of params_r"},
		{[]string{model, data, "--constrained", own, "--output", filepath.Dir(own)}, 1, "the file " + own + " is the input " + own},
	} {
		args := append([]string{"log_prob"}, c.args...)
		if !slices.Contains(args, "--output") {
			args = append(args, "--output", filepath.Join(t.TempDir(), "out"))
		}
		_, stderr, code := runCmd(t, args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
