package ot

import (
	"github.com/shmlang/shm/internal/shared"
	"math"
	"testing"
)

// refFile is one reference vector of shared/testdata/sinkhorn.
type refFile = shared.SinkhornRef

// refOptions returns the options of a reference vector with the given
// gradient mode.
func refOptions(r *refFile, mode GradMode) Options {
	o := Options{Eps: r.Inputs.Eps, Balanced: r.Inputs.Balanced, Iters: r.Inputs.T, Grad: mode}
	if r.Inputs.Rho != nil {
		o.Rho = *r.Inputs.Rho
	}
	return o
}

func flatten(a [][]float64) []float64 { return shared.Flatten(a) }

func loadRefs(t testing.TB) []*refFile { return shared.SinkhornRefs(t) }

func checkScalar(t *testing.T, what string, got, want float64, r *refFile) {
	t.Helper()
	tol := r.Tolerance.ValueRtol * r.Tolerance.ValueScale
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.17g, want %.17g (diff %.3g > tol %.3g)", what, got, want, math.Abs(got-want), tol)
	}
}

func checkArray(t *testing.T, what string, got, want []float64, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	var scale, diff float64
	for k := range want {
		scale = max(scale, math.Abs(want[k]))
		diff = max(diff, math.Abs(got[k]-want[k]))
	}
	if !(diff <= rtol*scale) {
		t.Errorf("%s: max diff %.3g > %.3g (= %g × max|want| %.3g)", what, diff, rtol*scale, rtol, scale)
	}
}

func TestReferenceVectors(t *testing.T) {
	for _, r := range loadRefs(t) {
		t.Run(r.Name, func(t *testing.T) {
			in := &r.Inputs
			x, y := flatten(in.X), flatten(in.Y)
			n, m := len(in.LogA), len(in.LogB)
			d := len(x) / n
			ex := &r.Expected
			cfgs := kernelConfigs()
			if n*m > 10000 && len(cfgs) > 2 {
				// Large files: pure Go on one worker, SIMD on two.
				cfgs = []kernelConfig{cfgs[0], cfgs[len(cfgs)-1]}
			}
			for _, cfg := range cfgs {
				w := NewWorkspaceWorkers(n, m, d, cfg.workers)
				w.e.simd = cfg.simd
				w.SetParallelThreshold(1) // exercise the parallel path too
				// Divergence, unrolled.
				gr := &Grad{X: make([]float64, n*d), Y: make([]float64, m*d), LogA: make([]float64, n), LogB: make([]float64, m)}
				res, err := w.Divergence(x, y, in.LogA, in.LogB, refOptions(r, GradUnrolled), nil, gr)
				if err != nil {
					t.Fatal(err)
				}
				checkScalar(t, "divergence", res.Divergence, ex.Divergence, r)
				checkScalar(t, "ot_xy", res.OTxy, ex.OTxy, r)
				checkScalar(t, "ot_xx", res.OTxx, ex.OTxx, r)
				checkScalar(t, "ot_yy", res.OTyy, ex.OTyy, r)
				checkScalar(t, "mass_a", res.MassA, ex.MassA, r)
				checkScalar(t, "mass_b", res.MassB, ex.MassB, r)
				rt := r.Tolerance.GradRtol
				checkArray(t, "grad_x", gr.X, flatten(ex.GradX), rt)
				checkArray(t, "grad_y", gr.Y, flatten(ex.GradY), rt)
				checkArray(t, "grad_log_a", gr.LogA, ex.GradLogA, rt)
				checkArray(t, "grad_log_b", gr.LogB, ex.GradLogB, rt)
				f, g := w.Potentials()
				checkArray(t, "f_xy", f, ex.Fxy, rt)
				checkArray(t, "g_xy", g, ex.Gxy, rt)

				// Envelope.
				genv := &Grad{X: make([]float64, n*d), LogA: make([]float64, n)}
				res2, err := w.Divergence(x, y, in.LogA, in.LogB, refOptions(r, GradEnvelope), nil, genv)
				if err != nil {
					t.Fatal(err)
				}
				// The same iterations, rounded alike except where the
				// scaling path chains its sweeps (not for an envelope
				// gradient: scaling_chain.go): equal to rounding.
				if !closeRel(res2.Divergence, res.Divergence, 1e-13, math.Abs(res.Divergence)) {
					t.Errorf("divergence depends on the gradient mode: %v vs %v", res2.Divergence, res.Divergence)
				}
				checkArray(t, "envelope_grad_x", genv.X, flatten(ex.EnvelopeGradX), rt)
				checkArray(t, "envelope_grad_log_a", genv.LogA, ex.EnvelopeGradLogA, rt)

				// Raw OT.
				got := &Grad{X: make([]float64, n*d), LogA: make([]float64, n)}
				v, err := w.OT(x, y, in.LogA, in.LogB, refOptions(r, GradUnrolled), got)
				if err != nil {
					t.Fatal(err)
				}
				checkScalar(t, "sinkhorn_ot", v, ex.OTxy, r)
				checkArray(t, "ot_xy_grad_x", got.X, flatten(ex.OTxyGradX), rt)
				checkArray(t, "ot_xy_grad_log_a", got.LogA, ex.OTxyGradLogA, rt)

				// Cached y–y term.
				st, err := w.SelfTerm(y, in.LogB, refOptions(r, GradUnrolled))
				if err != nil {
					t.Fatal(err)
				}
				gc := &Grad{X: make([]float64, n*d), LogA: make([]float64, n)}
				res3, err := w.Divergence(x, y, in.LogA, in.LogB, refOptions(r, GradUnrolled), st, gc)
				if err != nil {
					t.Fatal(err)
				}
				if res3.Divergence != res.Divergence || res3.OTyy != res.OTyy {
					t.Errorf("cached y–y: divergence %v, ot_yy %v; uncached %v, %v", res3.Divergence, res3.OTyy, res.Divergence, res.OTyy)
				}
				checkArray(t, "grad_x (cached y–y)", gc.X, flatten(ex.GradX), rt)
				checkArray(t, "grad_log_a (cached y–y)", gc.LogA, ex.GradLogA, rt)

				if ex.PlanXY != nil {
					plan, err := w.Plan(x, y, in.LogA, in.LogB, refOptions(r, GradUnrolled), nil)
					if err != nil {
						t.Fatal(err)
					}
					checkArray(t, "plan_xy", plan, flatten(ex.PlanXY), rt)
				}
				w.Close()
			}
		})
	}
}

// kernelConfig is one way of running the kernels in tests.
type kernelConfig struct {
	workers int
	simd    bool
}

// kernelConfigs returns pure Go on 1 and 2 workers, and the SIMD kernels
// when the machine has them.
func kernelConfigs() []kernelConfig {
	cs := []kernelConfig{{1, false}, {2, false}}
	if haveSIMD {
		cs = append(cs, kernelConfig{1, true}, kernelConfig{2, true})
	}
	return cs
}
