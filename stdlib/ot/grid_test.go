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
		// (L−1)²/eps = 720 > kernelMaxArg: the passes take logarithms term
		// by term (lseLine) instead of multiplying by the kernel.
		{Grid{7, 6}, Options{Eps: 0.05, Rho: 2, Iters: 10}},
		{Grid{7, 6}, Options{Eps: 0.05, Balanced: true, Iters: 10}},
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

// TestGridKernelPass compares the pass by products with the kernel
// (lseLineKernel) with the pass that takes a logarithm per term (lseLine),
// on lines with a wide range of values, zero weights (−∞) and the
// non-finite values the kernel pass leaves to lseLine, in both kernel
// variants (AVX2 when available, pure Go).
func TestGridKernelPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		n      int
		invEps float64
		fill   func(v []float64)
		kernel bool // whether lseLineKernel takes the line
	}{
		{"16, eps 1, spread 1", 16, 1, func(v []float64) { randLine(rng, v, 1) }, true},
		{"16, eps 1, spread 300", 16, 1, func(v []float64) { randLine(rng, v, 300) }, true},
		{"25, eps 1, offset 1e4", 25, 1, func(v []float64) { randLine(rng, v, 20); addTo(v, 1e4) }, true},
		{"7, eps 0.1, spread 50", 7, 10, func(v []float64) { randLine(rng, v, 50) }, true},
		{"5, eps 3", 5, 1.0 / 3, func(v []float64) { randLine(rng, v, 5) }, true},
		{"1", 1, 1, func(v []float64) { v[0] = 0.7 }, true},
		{"some zero weights", 16, 1, func(v []float64) {
			randLine(rng, v, 10)
			v[0], v[7], v[15] = -inf, -inf, -inf
		}, true},
		{"one nonzero weight", 16, 1, func(v []float64) {
			for j := range v {
				v[j] = -inf
			}
			v[11] = -3
		}, true},
		{"all zero weights", 16, 1, func(v []float64) {
			for j := range v {
				v[j] = -inf
			}
		}, true},
		{"+Inf", 16, 1, func(v []float64) { randLine(rng, v, 1); v[3] = inf }, false},
		{"NaN", 16, 1, func(v []float64) { randLine(rng, v, 1); v[9] = math.NaN() }, false},
	} {
		for _, simd := range []bool{false, haveSIMD} {
			n := tc.n
			e := &engine{simd: simd}
			e.gridReserve(Grid{n, n})
			e.gridTable(tc.invEps)
			if tc.kernel && !e.grid.byKernel {
				t.Fatalf("%s: (L−1)²/eps = %v, above kernelMaxArg", tc.name, e.grid.k1[0])
			}
			k := kern{simd: simd}
			v := make([]float64, n)
			want := make([]float64, n)
			got := make([]float64, n)
			for range 20 {
				tc.fill(v)
				e.lseLine(k, v, e.grid.k1, want)
				for i := range got {
					got[i] = 12345
				}
				ok := e.lseLineKernel(k, v, e.grid.ek1, got)
				if ok != tc.kernel {
					t.Fatalf("%s: lseLineKernel took the line: %v, want %v", tc.name, ok, tc.kernel)
				}
				if !ok {
					if got[0] != 12345 {
						t.Errorf("%s: lseLineKernel wrote to a line it did not take", tc.name)
					}
					continue
				}
				scale := 1.0
				for _, x := range v {
					if !math.IsInf(x, -1) {
						scale = max(scale, math.Abs(x))
					}
				}
				for i := range got {
					if math.IsInf(want[i], -1) && math.IsInf(got[i], -1) {
						continue
					}
					if d := math.Abs(got[i] - want[i]); !(d <= 8e-16*scale) {
						t.Errorf("%s (simd %v): lse[%d] = %.17g, term by term %.17g (|diff| %.3g, %.3g units of the line's scale)",
							tc.name, simd, i, got[i], want[i], d, d/scale/0x1p-52)
					}
				}
			}
		}
	}
}

func randLine(rng *rand.Rand, v []float64, spread float64) {
	for j := range v {
		v[j] = spread * (2*rng.Float64() - 1)
	}
}

func addTo(v []float64, c float64) {
	for j := range v {
		v[j] += c
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
