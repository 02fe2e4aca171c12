package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/stdlib/ot"
)

// The comparison of a device backend (the host-compiled kernels here, the
// GPU in gpu_test.go) with package ot on the reference vectors of
// shared/testdata/sinkhorn and on a few generated problems.

// refFile is one reference vector of shared/testdata/sinkhorn.
type refFile = shared.SinkhornRef

func flatten(a [][]float64) []float64 { return shared.Flatten(a) }

// testCase is one problem: inputs and options (Grad is set per check).
type testCase struct {
	name          string
	x, y, la, lb  []float64
	d             int
	opt           ot.Options
	ref           *refFile // nil for generated problems
	small, random bool
}

func (c *testCase) n() int { return len(c.la) }
func (c *testCase) m() int { return len(c.lb) }

// referenceCases loads every JSON file of shared/testdata/sinkhorn.
func referenceCases(t testing.TB) []*testCase {
	t.Helper()
	var cases []*testCase
	for _, r := range shared.SinkhornRefs(t) {
		in := &r.Inputs
		c := &testCase{name: r.Name, x: flatten(in.X), y: flatten(in.Y), la: in.LogA, lb: in.LogB, ref: r,
			opt: ot.Options{Eps: in.Eps, Balanced: in.Balanced, Iters: in.T}}
		if in.Rho != nil {
			c.opt.Rho = *in.Rho
		}
		c.d = len(c.x) / c.n()
		c.small = c.n()*c.m() <= 10000
		cases = append(cases, c)
	}
	return cases
}

// normalPoints returns k coordinates drawn from N(mean, sd²) by rng.
func normalPoints(rng *rand.Rand, k int, mean, sd float64) []float64 {
	v := make([]float64, k)
	for i := range v {
		v[i] = mean + sd*rng.NormFloat64()
	}
	return v
}

// generatedCases are problems the reference vectors do not cover: points
// of dimension 5 and 10 (the kernels' generic path; 10 is more than the
// KMAX = 8 gradient sums one pass keeps), and a zero weight (log-weight
// −Inf) on each side.
func generatedCases() []*testCase {
	rng := rand.New(rand.NewPCG(7, 11))
	gen := func(name string, n, m, d int, opt ot.Options, zero bool) *testCase {
		c := &testCase{name: name, d: d, opt: opt, small: true, random: true}
		c.x = normalPoints(rng, n*d, 0, 1)
		c.y = normalPoints(rng, m*d, 0.5, 0.8)
		logw := func(k int) []float64 {
			w := make([]float64, k)
			s := 0.0
			for i := range w {
				w[i] = 0.2 + rng.Float64()
				s += w[i]
			}
			for i := range w {
				w[i] = math.Log(w[i] / s)
			}
			return w
		}
		c.la, c.lb = logw(n), logw(m)
		if zero {
			// Zero weights, then renormalize so the balanced masses stay equal.
			c.la[2], c.lb[1] = math.Inf(-1), math.Inf(-1)
			for _, w := range [][]float64{c.la, c.lb} {
				lse := math.Log(mass(w))
				for i := range w {
					w[i] -= lse
				}
			}
		}
		return c
	}
	return []*testCase{
		gen("gen_d5_balanced_T7", 9, 7, 5, ot.Options{Eps: 0.7, Balanced: true, Iters: 7}, false),
		gen("gen_d10_unbalanced_T6", 8, 11, 10, ot.Options{Eps: 1.5, Rho: 2, Iters: 6}, false),
		gen("gen_d2_zero_weights_balanced_T12", 10, 9, 2, ot.Options{Eps: 0.3, Balanced: true, Iters: 12}, true),
		gen("gen_d4_zero_weights_unbalanced_T9", 7, 8, 4, ot.Options{Eps: 0.4, Rho: 3, Iters: 9}, true),
	}
}

// backend is what is compared with package ot.
type backend struct {
	divergence func(x, y, la, lb []float64, opt ot.Options, grad *ot.Grad) (ot.Result, error)
	ot         func(x, y, la, lb []float64, opt ot.Options, grad *ot.Grad) (float64, error)
}

func fullGrad(n, m, d int) *ot.Grad {
	return &ot.Grad{X: make([]float64, n*d), Y: make([]float64, m*d), LogA: make([]float64, n), LogB: make([]float64, m)}
}

// partialGrads are the subsets of gradients the checks request besides
// all of them: the ones for the fixed-support and fixed-weight cases.
func partialGrads(n, m, d int) []*ot.Grad {
	return []*ot.Grad{
		{LogA: make([]float64, n)},
		{X: make([]float64, n*d)},
		{Y: make([]float64, m*d), LogB: make([]float64, m)},
	}
}

// checkRel fails unless |got − want| ≤ rtol·scale.
func checkRel(t *testing.T, what string, got, want, scale, rtol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= rtol*scale) {
		t.Errorf("%s = %.17g, want %.17g (diff %.3g > %.3g = %g × scale %.3g)", what, got, want, math.Abs(got-want), rtol*scale, rtol, scale)
	}
}

// checkArrayRel fails unless max_k |got_k − want_k| ≤ rtol·max_k |want_k|.
func checkArrayRel(t *testing.T, what string, got, want []float64, rtol float64) {
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

func checkGradsRel(t *testing.T, what string, got, want *ot.Grad, rtol float64) {
	t.Helper()
	for _, a := range []struct {
		name      string
		got, want []float64
	}{{"X", got.X, want.X}, {"Y", got.Y, want.Y}, {"LogA", got.LogA, want.LogA}, {"LogB", got.LogB, want.LogB}} {
		if (a.got == nil) != (a.want == nil) {
			t.Fatalf("%s: grad %s requested on one side only", what, a.name)
		}
		if a.want != nil {
			checkArrayRel(t, what+" grad "+a.name, a.got, a.want, rtol)
		}
	}
}

// compareWithCPU checks the backend's divergence and OT values and
// gradients (both modes) against package ot's, to rtol relative: scalars
// relative to the largest |OT| of the problem, arrays relative to their
// largest entry. With thorough it also checks the raw OT value, the value
// without gradients and some subsets of gradients (the code paths of nil
// gradient slices).
// For a reference file it also checks the results against the file's
// expected values, at the file's tolerance.
func compareWithCPU(t *testing.T, c *testCase, b backend, rtol float64, thorough bool) {
	t.Helper()
	n, m, d := c.n(), c.m(), c.d
	cpu := ot.NewWorkspaceWorkers(n, m, d, 1)
	defer cpu.Close()
	for _, mode := range []ot.GradMode{ot.GradUnrolled, ot.GradEnvelope} {
		opt := c.opt
		opt.Grad = mode
		tag := mode.String()

		// Divergence with every gradient.
		gw, gg := fullGrad(n, m, d), fullGrad(n, m, d)
		want, err := cpu.Divergence(c.x, c.y, c.la, c.lb, opt, nil, gw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.divergence(c.x, c.y, c.la, c.lb, opt, gg)
		if err != nil {
			t.Fatal(err)
		}
		scale := max(math.Abs(want.OTxy), math.Abs(want.OTxx), math.Abs(want.OTyy))
		checkRel(t, tag+" divergence", got.Divergence, want.Divergence, scale, rtol)
		checkRel(t, tag+" ot_xy", got.OTxy, want.OTxy, scale, rtol)
		checkRel(t, tag+" ot_xx", got.OTxx, want.OTxx, scale, rtol)
		checkRel(t, tag+" ot_yy", got.OTyy, want.OTyy, scale, rtol)
		if got.MassA != want.MassA || got.MassB != want.MassB || got.YYFromCache {
			t.Errorf("%s: masses (%v, %v), cached %v; want (%v, %v), false", tag, got.MassA, got.MassB, got.YYFromCache, want.MassA, want.MassB)
		}
		checkGradsRel(t, tag+" divergence", gg, gw, rtol)

		// Raw OT with every gradient.
		var vg float64
		og := fullGrad(n, m, d)
		if thorough {
			ow := fullGrad(n, m, d)
			vw, err := cpu.OT(c.x, c.y, c.la, c.lb, opt, ow)
			if err != nil {
				t.Fatal(err)
			}
			if vg, err = b.ot(c.x, c.y, c.la, c.lb, opt, og); err != nil {
				t.Fatal(err)
			}
			checkRel(t, tag+" sinkhorn_ot", vg, vw, math.Abs(vw), rtol)
			checkGradsRel(t, tag+" sinkhorn_ot", og, ow, rtol)
		}

		if r := c.ref; r != nil {
			ex := &r.Expected
			vt, vs, gt := r.Tolerance.ValueRtol, r.Tolerance.ValueScale, r.Tolerance.GradRtol
			if mode == ot.GradUnrolled {
				checkRel(t, "reference divergence", got.Divergence, ex.Divergence, vs, vt)
				checkRel(t, "reference ot_xy", got.OTxy, ex.OTxy, vs, vt)
				checkRel(t, "reference ot_xx", got.OTxx, ex.OTxx, vs, vt)
				checkRel(t, "reference ot_yy", got.OTyy, ex.OTyy, vs, vt)
				checkArrayRel(t, "reference grad_x", gg.X, flatten(ex.GradX), gt)
				checkArrayRel(t, "reference grad_y", gg.Y, flatten(ex.GradY), gt)
				checkArrayRel(t, "reference grad_log_a", gg.LogA, ex.GradLogA, gt)
				checkArrayRel(t, "reference grad_log_b", gg.LogB, ex.GradLogB, gt)
				if thorough {
					checkRel(t, "reference sinkhorn_ot", vg, ex.OTxy, vs, vt)
					checkArrayRel(t, "reference ot_xy_grad_x", og.X, flatten(ex.OTxyGradX), gt)
					checkArrayRel(t, "reference ot_xy_grad_log_a", og.LogA, ex.OTxyGradLogA, gt)
				}
			} else {
				checkArrayRel(t, "reference envelope_grad_x", gg.X, flatten(ex.EnvelopeGradX), gt)
				checkArrayRel(t, "reference envelope_grad_log_a", gg.LogA, ex.EnvelopeGradLogA, gt)
			}
		}
		if !thorough {
			continue
		}

		// The value without gradients is the same.
		got2, err := b.divergence(c.x, c.y, c.la, c.lb, opt, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRel(t, tag+" divergence without gradients", got2.Divergence, want.Divergence, scale, rtol)

		// Some gradients only.
		for _, pg := range partialGrads(n, m, d) {
			pw := &ot.Grad{X: zerosLike(pg.X), Y: zerosLike(pg.Y), LogA: zerosLike(pg.LogA), LogB: zerosLike(pg.LogB)}
			if _, err := cpu.Divergence(c.x, c.y, c.la, c.lb, opt, nil, pw); err != nil {
				t.Fatal(err)
			}
			if _, err := b.divergence(c.x, c.y, c.la, c.lb, opt, pg); err != nil {
				t.Fatal(err)
			}
			checkGradsRel(t, tag+" divergence (some gradients)", pg, pw, rtol)
		}
	}
}

// zerosLike returns zeros of the length of s, or nil for a nil s.
func zerosLike(s []float64) []float64 {
	if s == nil {
		return nil
	}
	return make([]float64, len(s))
}
