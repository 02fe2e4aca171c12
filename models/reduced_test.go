package models_test

import (
	"math"
	"slices"
	"testing"

	"github.com/shmlang/shm/internal/modeltest"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/diag"
)

// TestReducedExpASinkhorn runs Experiment A's balanced Sinkhorn model on
// a reduced configuration (K = 2 replicates, T = 30 iterations, 2 chains
// of 150 + 150) and checks the paper's qualitative result: the
// generalized posterior is centred on the truth (mu* = 2, sigma* = 0.5
// inside the 90% intervals) with a spread like the paper's (sd(mu) about
// 0.2, sd(sigma) about 0.1: here within a factor of two), and no
// divergences (draws fails on one).
func TestReducedExpASinkhorn(t *testing.T) {
	if testing.Short() {
		t.Skip("a reduced experiment run (two minutes of CPU); run without -short")
	}
	y := shared.Path(t, "testdata", "expA", "data.csv")
	src := shared.EditedSource(t, "expA.shm", "crn(6,", "crn(2,", "iters = 80", "iters = 30")
	dr := draws(t, modeltest.Bind(t, "expA-reduced.shm", src, []string{y}, "lambda=1"), 2, 150, 150, 1)
	for _, p := range []struct {
		name         string
		truth, sd    float64
		sdLo, sdHigh float64
	}{
		{"mu", 2, 0.2, 0.1, 0.4},
		{"sigma", 0.5, 0.1, 0.05, 0.2},
	} {
		all := pooled(dr[p.name])
		m, sd := meanSD(all)
		lo, hi := quantileOf(all, 0.05), quantileOf(all, 0.95)
		r := diag.Rhat(dr[p.name])
		t.Logf("%s: mean %.4f, sd %.4f, 90%% interval [%.4f, %.4f], R-hat %.3f", p.name, m, sd, lo, hi, r)
		if !(lo <= p.truth && p.truth <= hi) {
			t.Errorf("%s: truth %g outside the 90%% interval [%.4f, %.4f]", p.name, p.truth, lo, hi)
		}
		if sd < p.sdLo || sd > p.sdHigh {
			t.Errorf("%s: posterior sd %.4f outside [%g, %g] (paper: %g)", p.name, sd, p.sdLo, p.sdHigh, p.sd)
		}
		if r > 1.05 {
			t.Errorf("%s: R-hat %.3f", p.name, r)
		}
	}
}

// TestExpAUnbalancedApproachesBalanced checks that the unbalanced model
// with rho = 1e6 agrees with the balanced one: with equal masses the
// unbalanced divergence tends to the balanced one as rho grows, with an
// error of order 1/rho. At three points, the log densities and gradients
// of expA_unbalanced.shm (rho = 1e6) must differ from expA.shm's by less
// than 1e-4 of their size, and the difference at rho = 1e5 must be about
// ten times the one at rho = 1e6.
func TestExpAUnbalancedApproachesBalanced(t *testing.T) {
	y := shared.Path(t, "testdata", "expA", "data.csv")
	bal, err := bind(t, "expA.shm", []string{y}, "lambda=1").NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	unb := map[string]*runtime.Density{}
	for _, rho := range []string{"1e6", "1e5"} {
		src := shared.EditedSource(t, "expA_unbalanced.shm", "rho = 1e6", "rho = "+rho)
		d, err := modeltest.Bind(t, "expA_unbalanced.shm", src, []string{y}, "lambda=1").NewDensity()
		if err != nil {
			t.Fatal(err)
		}
		unb[rho] = d
	}
	for _, theta := range [][]float64{{2, math.Log(0.5)}, {1.6, math.Log(0.8)}, {2.5, math.Log(0.3)}} {
		gb := make([]float64, 2)
		lpb, err := bal.LogDensityGrad(theta, gb)
		if err != nil {
			t.Fatal(err)
		}
		diff := map[string]float64{}
		for rho, d := range unb {
			g := make([]float64, 2)
			lp, err := d.LogDensityGrad(theta, g)
			if err != nil {
				t.Fatal(err)
			}
			diff[rho] = math.Abs(lp - lpb)
			t.Logf("theta %.3g: rho %s: log density %.10g (balanced %.10g), gradient %.6g (balanced %.6g)", theta, rho, lp, lpb, g, gb)
			if rho != "1e6" {
				continue
			}
			if diff[rho] > 1e-4*math.Abs(lpb) {
				t.Errorf("theta %.3g: log density %.10g at rho = 1e6, balanced %.10g", theta, lp, lpb)
			}
			for i := range g {
				if math.Abs(g[i]-gb[i]) > 1e-4*math.Max(1, math.Abs(gb[i])) {
					t.Errorf("theta %.3g: gradient %d is %.10g at rho = 1e6, balanced %.10g", theta, i, g[i], gb[i])
				}
			}
		}
		if r := diff["1e5"] / diff["1e6"]; r < 5 || r > 20 {
			t.Errorf("theta %.3g: |Δ log density| %.3g at rho = 1e5 and %.3g at rho = 1e6: ratio %.3g, want about 10 (an O(1/rho) error)", theta, diff["1e5"], diff["1e6"], r)
		}
	}
}

// quantileOf is the p-quantile of xs by linear interpolation between
// order statistics.
func quantileOf(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	h := p * float64(len(s)-1)
	i := int(h)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}
