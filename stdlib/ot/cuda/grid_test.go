package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/stdlib/ot"
)

// gridCase is a pair of measures on a unit grid.
type gridCase struct {
	name   string
	g      ot.Grid
	la, lb []float64
	opt    ot.Options
}

// gridCases are grid problems like Experiment D's (image histograms on a
// 16×16 grid, eps = 1, balanced and unbalanced), a non-square grid, a
// smaller eps (by the kernel table, and too small for it), and weights
// with zeros.
func gridCases() []gridCase {
	rng := rand.New(rand.NewPCG(5, 8))
	image := func(g ot.Grid, normalize bool, zeros int) []float64 {
		n := g.N()
		w := make([]float64, n)
		cx, cy := rng.Float64()*float64(g.H), rng.Float64()*float64(g.W)
		s := 0.0
		for k := range w {
			r, c := float64(k/g.W), float64(k%g.W)
			w[k] = 1e-6 + math.Exp(-((r-cx)*(r-cx)+(c-cy)*(c-cy))/20) + 0.3*rng.Float64()
			s += w[k]
		}
		for k := range w {
			if normalize {
				w[k] /= s
			}
			w[k] = math.Log(w[k])
		}
		for z := range zeros {
			w[(7*z+3)%n] = math.Inf(-1)
		}
		if normalize && zeros > 0 {
			l := math.Log(mass(w))
			for k := range w {
				w[k] -= l
			}
		}
		return w
	}
	var cs []gridCase
	for _, c := range []struct {
		name  string
		g     ot.Grid
		opt   ot.Options
		zeros int
	}{
		{"16x16_balanced_T64", ot.Grid{H: 16, W: 16}, ot.Options{Eps: 1, Balanced: true, Iters: 64}, 0},
		{"16x16_unbalanced_rho10_T64", ot.Grid{H: 16, W: 16}, ot.Options{Eps: 1, Rho: 10, Iters: 64}, 0},
		{"7x12_balanced_eps0.3_T20", ot.Grid{H: 7, W: 12}, ot.Options{Eps: 0.3, Balanced: true, Iters: 20}, 0},
		{"9x5_unbalanced_zeros_T15", ot.Grid{H: 9, W: 5}, ot.Options{Eps: 2, Rho: 1, Iters: 15}, 3},
		// 15²/0.3 > 600: the passes take logarithms term by term.
		{"16x16_balanced_eps0.3_T10", ot.Grid{H: 16, W: 16}, ot.Options{Eps: 0.3, Balanced: true, Iters: 10}, 0},
	} {
		cs = append(cs, gridCase{c.name, c.g, image(c.g, c.opt.Balanced, c.zeros), image(c.g, c.opt.Balanced, c.zeros), c.opt})
	}
	return cs
}

// TestHostGrid runs the fused kernel's grid path (compiled as host C++)
// against package ot's grid path (checkGridCase, to 1e-12 relative); a
// point gradient is refused, and a grid too large for the kernel gives
// ErrGridTooLarge.
func TestHostGrid(t *testing.T) {
	bin := buildHostKernels(t)
	for _, c := range gridCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := startHostKernels(t, bin)
			e := newEngine(h, 2)
			e.guard = 3
			checkGridCase(t, e, c, hostRtol)
			if n := h.byKernel[kFused]; n != h.launches {
				t.Errorf("%d launches, %d of them fused", h.launches, n)
			}
		})
	}
	t.Run("refusals", func(t *testing.T) {
		h := startHostKernels(t, bin)
		e := newEngine(h, 2)
		c := gridCases()[0]
		if _, err := e.gridDivergence(c.g, c.la, c.lb, c.opt, &ot.Grad{X: make([]float64, 2*c.g.N())}); err == nil {
			t.Error("a point gradient on the grid path was accepted")
		}
		big := ot.Grid{H: 64, W: 64}
		w := make([]float64, big.N())
		for i := range w {
			w[i] = -math.Log(float64(len(w)))
		}
		if _, err := e.gridDivergence(big, w, w, c.opt, nil); !errors.Is(err, ErrGridTooLarge) {
			t.Errorf("a %d×%d grid: error %v, want ErrGridTooLarge", big.H, big.W, err)
		}
		if _, err := newEngine(h, 3).gridOT(c.g, c.la, c.lb, c.opt, nil); err == nil {
			t.Error("a grid problem on a workspace of dimension 3 was accepted")
		}
	})
}

// checkGridCase compares the divergence and OT values of c on e's grid
// path, and their gradients with respect to both log-weights in both modes,
// with package ot's grid path, to rtol relative.
func checkGridCase(t *testing.T, e *engine, c gridCase, rtol float64) {
	t.Helper()
	n := c.g.N()
	cpu := ot.NewWorkspace(n, n, 2)
	defer cpu.Close()
	for _, gm := range []ot.GradMode{ot.GradUnrolled, ot.GradEnvelope} {
		opt := c.opt
		opt.Grad = gm
		what := fmt.Sprintf("grad mode %v", gm)
		grad := func() *ot.Grad { return &ot.Grad{LogA: make([]float64, n), LogB: make([]float64, n)} }
		gg, gw := grad(), grad()
		got, err := e.gridDivergence(c.g, c.la, c.lb, opt, gg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cpu.GridDivergence(c.g, c.la, c.lb, opt, nil, gw)
		if err != nil {
			t.Fatal(err)
		}
		scale := math.Max(math.Abs(want.OTxy), math.Max(math.Abs(want.OTxx), math.Abs(want.OTyy)))
		checkRel(t, what+": divergence", got.Divergence, want.Divergence, scale, rtol)
		checkRel(t, what+": OTxy", got.OTxy, want.OTxy, scale, rtol)
		checkGradsRel(t, what+": divergence", gg, gw, rtol)

		og, ow := grad(), grad()
		vg, err := e.gridOT(c.g, c.la, c.lb, opt, og)
		if err != nil {
			t.Fatal(err)
		}
		vw, err := cpu.GridOT(c.g, c.la, c.lb, opt, ow)
		if err != nil {
			t.Fatal(err)
		}
		checkRel(t, what+": OT", vg, vw, math.Abs(vw), rtol)
		checkGradsRel(t, what+": OT", og, ow, rtol)
	}
}
