package ot

import (
	"fmt"
	"math"
	"testing"
)

// TestFixedCoordinates checks Grad.FixedX and FixedY on the scaling and the
// automatic path (the dense and sparse ones only clear the entries), with
// the AVX2 and the pure-Go kernels, in both gradient modes, for Divergence
// and OT: the entries of fixed coordinates are zero and every other entry
// has the bits it has without the flags.
func TestFixedCoordinates(t *testing.T) {
	flags := func(d int, fixed ...int) []bool {
		f := make([]bool, d)
		for _, k := range fixed {
			f[k] = true
		}
		return f
	}
	cases := map[string]bool{"2d/pulse": true, "2d/clusters-unbalanced-rho1e-3": true, "3d/small-eps": true}
	for _, c := range sparseCases(t) {
		if !cases[c.name] {
			continue
		}
		d := c.d
		allFixed := make([]bool, d)
		for k := range allFixed {
			allFixed[k] = true
		}
		fixings := []struct {
			name     string
			fixX, fy []bool
		}{
			{"x first", flags(d, 0), nil},
			{"x last, y first", flags(d, d-1), flags(d, 0)},
			{"x all", allFixed, nil},
			{"y last", nil, flags(d, d-1)},
		}
		for _, path := range []Path{PathScaling, PathAuto} {
			for _, simd := range []bool{false, haveSIMD} {
				what := fmt.Sprintf("%s/path=%d/simd=%v", c.name, path, simd)
				t.Run(what, func(t *testing.T) {
					n, m := len(c.la), len(c.lb)
					// A new workspace for each evaluation: the sparse path
					// reuses an earlier evaluation's culling, which may
					// change the last bits.
					eval := func(ot bool, o Options, g *Grad) *Workspace {
						w := NewWorkspaceWorkers(n, m, d, 1)
						w.e.simd = simd
						w.SetPath(path)
						var err error
						if ot {
							_, err = w.OT(c.x, c.y, c.la, c.lb, o, g)
						} else {
							_, err = w.Divergence(c.x, c.y, c.la, c.lb, o, nil, g)
						}
						if err != nil {
							t.Fatal(err)
						}
						w.Close()
						return w
					}
					for _, mode := range []GradMode{GradUnrolled, GradEnvelope} {
						o := c.opt
						o.Grad = mode
						for _, ot := range []bool{false, true} {
							full := newGrad(n, m, d)
							eval(ot, o, full)
							for _, fx := range fixings {
								g := newGrad(n, m, d)
								g.FixedX, g.FixedY = fx.fixX, fx.fy
								w := eval(ot, o, g)
								if path == PathScaling && (w.e.sc == nil || w.e.sc.kernelSweeps == 0) {
									t.Fatalf("%s: no kernel sweep ran on the scaling path", fx.name)
								}
								at := fmt.Sprintf("mode %v, ot %v, %s", mode, ot, fx.name)
								checkFixedGrad(t, at+": X", g.X, full.X, fx.fixX, d)
								checkFixedGrad(t, at+": Y", g.Y, full.Y, fx.fy, d)
								checkFixedGrad(t, at+": LogA", g.LogA, full.LogA, nil, 1)
								checkFixedGrad(t, at+": LogB", g.LogB, full.LogB, nil, 1)
							}
						}
					}
				})
			}
		}
	}
}

// checkFixedGrad reports the entries of got that are not zero at a fixed
// coordinate, or differ from want in their bits elsewhere.
func checkFixedGrad(t *testing.T, what string, got, want []float64, fixed []bool, d int) {
	t.Helper()
	for k, x := range got {
		switch {
		case fixed != nil && fixed[k%d]:
			if x != 0 {
				t.Errorf("%s[%d] = %g at a fixed coordinate, want 0", what, k, x)
				return
			}
		case math.Float64bits(x) != math.Float64bits(want[k]):
			t.Errorf("%s[%d] = %.17g, without fixed coordinates %.17g", what, k, x, want[k])
			return
		}
	}
}

func TestFixedCoordinatesLength(t *testing.T) {
	w := NewWorkspace(2, 2, 2)
	defer w.Close()
	x := []float64{0, 0, 1, 1}
	g := &Grad{X: make([]float64, 4), FixedX: []bool{true}}
	_, err := w.Divergence(x, x, uniformLogW(2), uniformLogW(2), Options{Eps: 0.1, Balanced: true, Iters: 3}, nil, g)
	if err == nil {
		t.Fatal("FixedX with one flag for points of dimension 2 was accepted")
	}
}
