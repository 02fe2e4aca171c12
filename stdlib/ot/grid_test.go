package ot

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGridReferenceVectors runs the separable path on the reference files
// whose support is a pixel grid.
func TestGridReferenceVectors(t *testing.T) {
	found := 0
	for _, r := range loadRefs(t) {
		in := &r.Inputs
		x, y := flatten(in.X), flatten(in.Y)
		n := len(in.LogA)
		side := int(math.Round(math.Sqrt(float64(n))))
		g := Grid{H: side, W: side}
		if side*side != n || !slices.Equal(x, g.Points()) || !slices.Equal(y, g.Points()) {
			continue
		}
		found++
		t.Run(r.Name, func(t *testing.T) {
			ex := &r.Expected
			rt := r.Tolerance.GradRtol
			w := NewWorkspace(n, n, 2)
			defer w.Close()
			gr := &Grad{LogA: make([]float64, n), LogB: make([]float64, n)}
			res, err := w.GridDivergence(g, in.LogA, in.LogB, refOptions(r, GradUnrolled), nil, gr)
			if err != nil {
				t.Fatal(err)
			}
			checkScalar(t, "divergence", res.Divergence, ex.Divergence, r)
			checkScalar(t, "ot_xy", res.OTxy, ex.OTxy, r)
			checkScalar(t, "ot_xx", res.OTxx, ex.OTxx, r)
			checkScalar(t, "ot_yy", res.OTyy, ex.OTyy, r)
			checkArray(t, "grad_log_a", gr.LogA, ex.GradLogA, rt)
			checkArray(t, "grad_log_b", gr.LogB, ex.GradLogB, rt)
			f, gg := w.Potentials()
			checkArray(t, "f_xy", f, ex.Fxy, rt)
			checkArray(t, "g_xy", gg, ex.Gxy, rt)

			genv := &Grad{LogA: make([]float64, n)}
			if _, err := w.GridDivergence(g, in.LogA, in.LogB, refOptions(r, GradEnvelope), nil, genv); err != nil {
				t.Fatal(err)
			}
			checkArray(t, "envelope_grad_log_a", genv.LogA, ex.EnvelopeGradLogA, rt)

			got := &Grad{LogA: make([]float64, n)}
			v, err := w.GridOT(g, in.LogA, in.LogB, refOptions(r, GradUnrolled), got)
			if err != nil {
				t.Fatal(err)
			}
			checkScalar(t, "sinkhorn_ot", v, ex.OTxy, r)
			checkArray(t, "ot_xy_grad_log_a", got.LogA, ex.OTxyGradLogA, rt)

			st, err := w.GridSelfTerm(g, in.LogB, refOptions(r, GradUnrolled))
			if err != nil {
				t.Fatal(err)
			}
			gc := &Grad{LogA: make([]float64, n)}
			res2, err := w.GridDivergence(g, in.LogA, in.LogB, refOptions(r, GradUnrolled), st, gc)
			if err != nil {
				t.Fatal(err)
			}
			if res2.Divergence != res.Divergence {
				t.Errorf("cached y–y: %v, uncached %v", res2.Divergence, res.Divergence)
			}
			checkArray(t, "grad_log_a (cached y–y)", gc.LogA, ex.GradLogA, rt)
		})
	}
	if found == 0 {
		t.Fatal("no grid reference vectors found")
	}
}

// TestGridMatchesDense compares the separable path with the dense path on
// random non-square grids, values and log-weight gradients in both modes.
func TestGridMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, tc := range []struct {
		g Grid
		o Options
	}{
		{Grid{5, 7}, Options{Eps: 0.7, Balanced: true, Iters: 20}},
		{Grid{6, 4}, Options{Eps: 2, Rho: 3, Iters: 15}},
		{Grid{1, 9}, Options{Eps: 0.5, Rho: 1, Iters: 5}},
		{Grid{12, 11}, Options{Eps: 1, Rho: 10, Iters: 30}},
	} {
		n := tc.g.N()
		la := make([]float64, n)
		lb := make([]float64, n)
		for i := range la {
			la[i] = math.Log(1e-3 + rng.Float64())
			lb[i] = math.Log(1e-3 + rng.Float64())
		}
		if tc.o.Balanced {
			normalize(la)
			normalize(lb)
		}
		pts := tc.g.Points()
		w := NewWorkspace(n, n, 2)
		for _, mode := range []GradMode{GradUnrolled, GradEnvelope} {
			tc.o.Grad = mode
			gd := &Grad{LogA: make([]float64, n), LogB: make([]float64, n)}
			gg := &Grad{LogA: make([]float64, n), LogB: make([]float64, n)}
			rd, err := w.Divergence(pts, pts, la, lb, tc.o, nil, gd)
			if err != nil {
				t.Fatal(err)
			}
			rg, err := w.GridDivergence(tc.g, la, lb, tc.o, nil, gg)
			if err != nil {
				t.Fatal(err)
			}
			scale := max(math.Abs(rd.OTxy), math.Abs(rd.OTxx), math.Abs(rd.OTyy))
			if math.Abs(rd.Divergence-rg.Divergence) > 1e-12*scale {
				t.Errorf("%v %+v: dense S = %.17g, grid %.17g", tc.g, tc.o, rd.Divergence, rg.Divergence)
			}
			checkArray(t, "grid vs dense grad_log_a", gg.LogA, gd.LogA, 1e-10)
			checkArray(t, "grid vs dense grad_log_b", gg.LogB, gd.LogB, 1e-10)
		}
		w.Close()
	}
}

func TestGridErrors(t *testing.T) {
	w := NewWorkspace(4, 4, 2)
	la := []float64{-1, -1, -1, -1}
	o := Options{Eps: 1, Rho: 1, Iters: 2}
	if _, err := w.GridDivergence(Grid{2, 3}, la, la, o, nil, nil); err == nil {
		t.Error("length mismatch accepted")
	}
	if _, err := w.GridDivergence(Grid{2, 2}, la, la, o, nil, &Grad{X: make([]float64, 8)}); err == nil {
		t.Error("gradient with respect to grid points accepted")
	}
	if _, err := w.GridDivergence(Grid{0, 2}, nil, nil, o, nil, nil); err == nil {
		t.Error("empty grid accepted")
	}
}

func TestGridNoAllocations(t *testing.T) {
	g := Grid{6, 5}
	n := g.N()
	la := make([]float64, n)
	lb := make([]float64, n)
	for i := range la {
		la[i] = -math.Log(float64(n)) + 0.01*float64(i%3)
		lb[i] = -math.Log(float64(n)) - 0.02*float64(i%4)
	}
	w := NewWorkspace(n, n, 2)
	defer w.Close()
	gr := &Grad{LogA: make([]float64, n), LogB: make([]float64, n)}
	for _, mode := range []GradMode{GradUnrolled, GradEnvelope} {
		o := Options{Eps: 1, Rho: 2, Iters: 4, Grad: mode}
		run := func() {
			if _, err := w.GridDivergence(g, la, lb, o, nil, gr); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if a := testing.AllocsPerRun(5, run); a != 0 {
			t.Errorf("%v: %v allocations per grid evaluation", mode, a)
		}
	}
}
