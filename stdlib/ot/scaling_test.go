package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits reports whether a and b hold the same values bit for bit (any
// NaN equal to any NaN).
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if math.Float64bits(a[k]) != math.Float64bits(b[k]) && !(math.IsNaN(a[k]) && math.IsNaN(b[k])) {
			return false
		}
	}
	return true
}

// sameGrad reports whether two gradients are equal bit for bit.
func sameGrad(g, h *Grad) bool {
	return sameBits(g.X, h.X) && sameBits(g.Y, h.Y) && sameBits(g.LogA, h.LogA) && sameBits(g.LogB, h.LogB)
}

// sweepTestProblem is the problem of the one-sweep tests: n points x ~
// N(0, I) and m points y ~ N(shift, spread² I) in d dimensions, uniform
// weights, eps = resolution(y)².
func sweepTestProblem(t *testing.T, rng *rand.Rand, n, m, d int, shift, spread float64) (x, y []float64, eps float64, sides [2]side) {
	x = gaussPts(rng, n, d, 0, 1)
	y = gaussPts(rng, m, d, shift, spread)
	h := resolutionOf(t, y, d)
	sides = [2]side{{pts: x, logw: uniformLogW(n), n: n}, {pts: y, logw: uniformLogW(m), n: m}}
	return x, y, h * h, sides
}

// gradError is the largest error of g against ref over the four arrays,
// each relative to the largest entry of its reference.
func gradError(g, ref *Grad) float64 {
	e := 0.0
	for _, p := range [][2][]float64{{g.X, ref.X}, {g.Y, ref.Y}, {g.LogA, ref.LogA}, {g.LogB, ref.LogB}} {
		scale := maxAbs(p[1])
		for k, w := range p[1] {
			if d := math.Abs(p[0][k] - w); d > 0 {
				e = max(e, d/scale)
			}
		}
	}
	return e
}

// pathErrors are the errors of one path's results against the
// double-double reference: the x–y OT gradient (unrolled) and the
// divergence's gradients (unrolled, envelope).
func pathErrors(r pathResult, div, xy refResult, withDiv bool) map[string]float64 {
	e := map[string]float64{"OT unrolled": gradError(r.gOT, xy.gU)}
	if withDiv {
		e["divergence unrolled"] = gradError(r.gU, div.gU)
		e["divergence envelope"] = gradError(r.gE, div.gE)
	}
	return e
}

// TestScalingAccuracy checks the scaling path on the adversarial cases of
// TestSparseMatchesDense, with the AVX2 and the pure-Go kernels: values
// within 1e-12 of the dense path, and gradients (unrolled, envelope) at
// least as accurate as the dense path's, measured against the
// double-double reference (ddref_test.go): an error at most twice the
// dense path's plus 1e-13 of the gradient's scale. The dense path's own
// gradients are off by up to 1e-10 where potentials are large (its
// backward weights are normalized with the stored potentials, whose
// rounding is 1e5·u in the shifted case); the scaling path normalizes each
// row by its forward sum and is typically far closer to the reference,
// so a direct 1e-12 comparison of the two gradients would measure the
// dense path's error. Some of the cases' kernel sweeps must end in
// finishRows (a few rows computed as a dense sweep).
func TestScalingAccuracy(t *testing.T) {
	const rtol = 1e-12
	cases := sparseCases(t)
	finished, chained, ran := 0, 0, 0 // kernel sweeps completed by finishRows, chained; cases run
	defer func() {
		if ran == len(cases) && finished == 0 && !t.Failed() {
			t.Error("no kernel sweep was completed by finishRows: the cases do not exercise it")
		}
		if ran == len(cases) && chained == 0 && !t.Failed() {
			t.Error("no kernel sweep was chained: the cases do not exercise scaling_chain.go")
		}
	}()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran++
			o := c.opt
			o.Grad = GradUnrolled
			var div, xy refResult
			if c.skipDivergence {
				xy = refOT(c.x, c.y, c.la, c.lb, c.d, o)
			} else {
				div, xy = refDivergence(c.x, c.y, c.la, c.lb, c.d, o)
			}
			dense := evalPath(t, c, PathDense, haveSIMD, 1)
			denseErr := pathErrors(dense, div, xy, !c.skipDivergence)
			for _, v := range []struct{ simd, culled bool }{{false, false}, {haveSIMD, false}, {false, true}, {haveSIMD, true}} {
				simd := v.simd
				what := fmt.Sprintf("simd=%v culled=%v", simd, v.culled)
				got := evalPath(t, c, PathScaling, simd, 1, v.culled)
				if c.mustCull && got.kernelSweeps == 0 {
					t.Errorf("%s: no kernel sweep ran (%d absorptions)", what, got.absorbs)
				}
				if got.mismatches > 0 {
					t.Errorf("%s: %d of %d kernels absorbed again in the backward pass differ from the forward pass's", what, got.mismatches, got.reabsorbs)
				}
				t.Logf("%s: %d kernel sweeps (%d completed by finishRows, %d chained), %d absorptions, %d again in the backward pass", what, got.kernelSweeps, got.partial, got.chained, got.absorbs, got.reabsorbs)
				finished += got.partial
				chained += got.chained
				scale := math.Abs(dense.div.OTxy) + math.Abs(dense.div.OTxx) + math.Abs(dense.div.OTyy)
				for _, v := range []struct {
					name      string
					got, want float64
				}{
					{"divergence", got.div.Divergence, dense.div.Divergence},
					{"ot_xy", got.div.OTxy, dense.div.OTxy},
					{"ot_xx", got.div.OTxx, dense.div.OTxx},
					{"ot_yy", got.div.OTyy, dense.div.OTyy},
				} {
					if !closeRel(v.got, v.want, rtol, max(math.Abs(v.want), 1e-3*scale)) {
						t.Errorf("%s: %s = %.17g, dense %.17g", what, v.name, v.got, v.want)
					}
				}
				if !closeRel(got.ot, dense.ot, rtol, math.Abs(dense.ot)) {
					t.Errorf("%s: ot = %.17g, dense %.17g", what, got.ot, dense.ot)
				}
				for k, e := range pathErrors(got, div, xy, !c.skipDivergence) {
					if de := denseErr[k]; !(e <= 2*de+1e-13) {
						t.Errorf("%s: %s gradient: error %.3g against the reference, dense path %.3g", what, k, e, de)
					} else {
						t.Logf("%s: %s gradient: error %.3g, dense path %.3g", what, k, e, de)
					}
				}
			}
		})
	}
}

// TestScalingMarginChoice checks that a problem on the scaling path takes
// the wide margin where its kernel grows slowly with the margin (Experiment
// A's 1-D data, C's pulse: curves) and the standard one where it fills a
// plane (B's spiral), that the symmetric problems take theirs, and that
// every epoch records the limit it was selected with.
func TestScalingMarginChoice(t *testing.T) {
	want := map[string]float64{"1d/expA": scalingMarginWide, "2d/pulse": scalingMarginWide, "2d/spiral": scalingMargin}
	for _, c := range sparseCases(t) {
		margin, ok := want[c.name]
		if !ok {
			continue
		}
		n, m := len(c.la), len(c.lb)
		w := NewWorkspaceWorkers(n, m, c.d, 1)
		w.SetPath(PathScaling)
		if _, err := w.OT(c.x, c.y, c.la, c.lb, c.opt, nil); err != nil {
			t.Fatal(err)
		}
		sc := w.e.sc
		if sc.chosen != margin {
			t.Errorf("%s: margin %v, want %v", c.name, sc.chosen, margin)
		}
		L := sc.logOf(max(n, m)) + sc.bits*math.Ln2 + margin
		for k := range sc.n {
			if sc.epochs[k].L != L {
				t.Errorf("%s: epoch %d selected with L = %v, want %v", c.name, k, sc.epochs[k].L, L)
			}
		}
		// The symmetric problems take their own margin: the y–y problem
		// is a divergence's last.
		if _, err := w.Divergence(c.x, c.y, c.la, c.lb, c.opt, nil, nil); err != nil {
			t.Fatal(err)
		}
		if sc.chosen != scalingMarginSymmetric {
			t.Errorf("%s: y–y margin %v, want %v", c.name, sc.chosen, scalingMarginSymmetric)
		}
		L = sc.logOf(max(n, m)) + sc.bits*math.Ln2 + scalingMarginSymmetric
		for k := range sc.n {
			if sc.epochs[k].L != L {
				t.Errorf("%s: y–y epoch %d selected with L = %v, want %v", c.name, k, sc.epochs[k].L, L)
			}
		}
		delete(want, c.name)
	}
	if len(want) > 0 {
		t.Errorf("cases not found: %v", want)
	}
}

// TestReferenceMatchesVectors checks the double-double reference itself
// against the shared vectors (computed independently in 80-bit extended
// precision): values to 1e-13 of their scale, gradients to 1e-12 of their
// largest entry.
func TestReferenceMatchesVectors(t *testing.T) {
	for _, r := range loadRefs(t) {
		t.Run(r.Name, func(t *testing.T) {
			in := &r.Inputs
			x, y := flatten(in.X), flatten(in.Y)
			d := len(x) / len(in.LogA)
			div, xy := refDivergence(x, y, in.LogA, in.LogB, d, refOptions(r, GradUnrolled))
			ex := &r.Expected
			scale := r.Tolerance.ValueScale
			for _, v := range []struct {
				name      string
				got, want float64
			}{{"divergence", div.v, ex.Divergence}, {"ot_xy", xy.v, ex.OTxy}} {
				if !(math.Abs(v.got-v.want) <= 1e-13*scale) {
					t.Errorf("%s = %.17g, want %.17g", v.name, v.got, v.want)
				}
			}
			for _, a := range []struct {
				name      string
				got, want []float64
			}{
				{"grad_x", div.gU.X, flatten(ex.GradX)},
				{"grad_y", div.gU.Y, flatten(ex.GradY)},
				{"grad_log_a", div.gU.LogA, ex.GradLogA},
				{"grad_log_b", div.gU.LogB, ex.GradLogB},
				{"envelope_grad_x", div.gE.X, flatten(ex.EnvelopeGradX)},
				{"envelope_grad_log_a", div.gE.LogA, ex.EnvelopeGradLogA},
				{"ot_xy_grad_x", xy.gU.X, flatten(ex.OTxyGradX)},
			} {
				checkArray(t, a.name, a.got, a.want, 1e-12)
			}
		})
	}
}

// TestScalingSweepErrorBound checks the error bounds of one kernel sweep
// against the dense sweep with the same inputs, with precisions small
// enough that terms are dropped (2^-4 and 2^-10 in place of 2^-54, margin
// 2). An accepted kernel sweep drops, in each row, terms adding up to less
// than 2^-b of the row's kept sum σ_i, and the backward pass normalizes the
// kept weights by σ_i, so every row's weights differ from the exact ones
// by at most 2·2^-b in total:
//
//	forward:  |Δ LSE_i|      ≤ 2·2^-b
//	backward: |Δ rowGrad_ik| ≤ 2·2^-b·|r_i|·max_j |x_ik − y_jk|
//	          |Δ colSum_j|   ≤ 2·2^-b·Σ_i |r_i|
//	          |Δ colGrad_jk| ≤ 2·2^-b·Σ_i |r_i|·max_j' |x_ik − y_j'k|
//
// (each plus 1e-12 of the quantity's scale for rounding). It also checks
// that the low precision did drop something.
func TestScalingSweepErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const n, m, d = 90, 70, 2
	x, y, eps, sides := sweepTestProblem(t, rng, n, m, d, 0.2, 0.9)
	c := newConsts(Options{Eps: eps, Balanced: true, Iters: 1})
	rows, cols := sides[0], sides[1]
	for _, bits := range []float64{4, 10} {
		w := NewWorkspaceWorkers(n, m, d, 1)
		e := w.e
		e.reserve(max(n, m))
		e.sc = newScalingState()
		e.sc.bits, e.sc.margin, e.sc.wide = bits, 2, 0
		e.sc.begin(false, [2]bool{}, nil, n*m, 2, max(n, m), d, false)
		// Absorb from a dense sweep with rough potentials, then sweep from
		// the kernel with potentials that drifted by up to half a unit.
		g := make([]float64, m)
		u := make([]float64, m)
		for j := range g {
			g[j] = eps * (3*rng.NormFloat64() + float64(j%5))
			u[j] = g[j]*c.invEps + cols.logw[j]
		}
		out := make([]float64, n)
		e.scalingStep(0, [2]side{rows, cols}, u, g, out, c, -1)
		if e.sc.cur[0] < 0 {
			t.Fatalf("bits %g: no epoch was absorbed", bits)
		}
		u2 := make([]float64, m)
		for j := range u2 {
			u2[j] = u[j] + 0.5*(2*rng.Float64()-1)
		}
		if ok, _ := e.kernelSweep(0, rows, cols, u2, out, c, -1, false); !ok {
			t.Fatalf("bits %g: the kernel sweep was refused", bits)
		}
		sig := append([]float64(nil), e.sc.sigs[0][:n]...)
		cf := append([]float64(nil), e.sc.v[:m]...) // the sweep's column factors
		lse := make([]float64, n)
		for i := range n {
			mx := math.Inf(-1)
			for j := range m {
				mx = max(mx, u2[j]-sqDist(x[i*d:i*d+d], y[j*d:j*d+d])/eps)
			}
			var s float64
			for j := range m {
				s += math.Exp(u2[j] - sqDist(x[i*d:i*d+d], y[j*d:j*d+d])/eps - mx)
			}
			lse[i] = mx + math.Log(s)
		}
		sNeg := make([]float64, n)
		r := make([]float64, n)
		for i := range n {
			sNeg[i] = -lse[i]
			r[i] = rng.NormFloat64()
		}
		type res struct{ rowGrad, colSum, colGrad []float64 }
		inv := make([]float64, n) // the reciprocals a chained sweep keeps
		for i, s := range sig {
			inv[i] = 1 / s
		}
		run := func(kernel bool, inv []float64) res {
			job := sweepJob{weighted: true, normalized: true, rows: x, cols: y, nr: n, nc: m, u: u2, s: sNeg, r: r,
				invEps: c.invEps, rowGrad: make([]float64, n*d), wantColSum: true, wantColGrad: true}
			if kernel {
				e.kernelWeighted(&e.sc.epochs[e.sc.cur[0]], 0, job, sig, inv, cf, nil)
			} else {
				job.out = make([]float64, n)
				e.sweep(job)
			}
			return res{job.rowGrad, append([]float64(nil), e.colSum[:m]...), append([]float64(nil), e.colGrad[:m*d]...)}
		}
		dense, kernel := run(false, nil), run(true, nil)
		kernelInv := run(true, inv)
		tol := 2 * math.Exp2(-bits)
		var dropped bool
		check := func(what string, k int, got, want, bound, scale float64) {
			t.Helper()
			diff := math.Abs(got - want)
			if diff > 1e-12*scale {
				dropped = true
			}
			if !(diff <= bound+1e-12*scale) {
				t.Errorf("bits %g: %s[%d] = %.17g, dense %.17g: |Δ| = %.3g > bound %.3g", bits, what, k, got, want, diff, bound)
			}
		}
		maxDiff := func(i, k int) float64 {
			var md float64
			for j := range m {
				md = max(md, math.Abs(x[i*d+k]-y[j*d+k]))
			}
			return md
		}
		var sr float64
		for i := range n {
			sr += math.Abs(r[i])
			check("LSE", i, out[i]/(-c.tau*eps), lse[i], tol, math.Abs(lse[i]))
			for k := range d {
				md := maxDiff(i, k)
				check("rowGrad", i*d+k, kernel.rowGrad[i*d+k], dense.rowGrad[i*d+k], tol*math.Abs(r[i])*md, math.Abs(r[i])*md)
				check("rowGrad (1/σ kept)", i*d+k, kernelInv.rowGrad[i*d+k], dense.rowGrad[i*d+k], tol*math.Abs(r[i])*md, math.Abs(r[i])*md)
			}
		}
		for j := range m {
			check("colSum", j, kernel.colSum[j], dense.colSum[j], tol*sr, sr)
			check("colSum (1/σ kept)", j, kernelInv.colSum[j], dense.colSum[j], tol*sr, sr)
			for k := range d {
				var l float64
				for i := range n {
					l += math.Abs(r[i]) * maxDiff(i, k)
				}
				check("colGrad", j*d+k, kernel.colGrad[j*d+k], dense.colGrad[j*d+k], tol*l, l)
				check("colGrad (1/σ kept)", j*d+k, kernelInv.colGrad[j*d+k], dense.colGrad[j*d+k], tol*l, l)
			}
		}
		if !dropped {
			t.Errorf("bits %g: the kernel sweep agrees with the dense one to rounding: nothing was dropped", bits)
		}
		w.Close()
	}
}

// TestScalingNoAllocations checks that the scaling path allocates nothing
// in steady state, also when x changes at every evaluation, in 1-D and 2-D,
// with both gradient modes.
func TestScalingNoAllocations(t *testing.T) {
	for _, culled := range []bool{false, true} {
		checkNoAllocations(t, PathScaling, "kernel sweep", func(w *Workspace) bool { return w.e.sc != nil && w.e.sc.kernelSweeps > 0 }, culled)
	}
}

// TestScalingFallback runs a problem whose kernel cannot be absorbed on
// the scaling path: far measures at a small eps (costs of 1e62 units of
// eps, whose offsets float64 cannot carry to the unit), as a sampler's
// warmup can propose. The absorptions fail and the sweeps fall back to the
// sparse ones: in 1-D the x–y problem's results are the sparse path's,
// bitwise (its gradient is NaN there, on both paths); in 2-D the sweep
// whose absorption fails first is a dense sweep (scalingDenseAbsorb), so
// the values agree to rounding (the gradient is not finite on either
// path).
func TestScalingFallback(t *testing.T) {
	for _, d := range []int{1, 2} {
		rng := rand.New(rand.NewPCG(91, 92))
		const n, m = 60, 50
		x := gaussPts(rng, n, d, 1e30, 1e28)
		y := gaussPts(rng, m, d, 0, 1)
		h := resolutionOf(t, y, d)
		c := sparseCase{name: "fallback", x: x, y: y, la: uniformLogW(n), lb: uniformLogW(m), d: d, opt: Options{Eps: h * h, Balanced: true, Iters: 30}}
		sparse := evalPath(t, c, PathSparse, haveSIMD, 1)
		for _, culled := range []bool{false, true} {
			got := evalPath(t, c, PathScaling, haveSIMD, 1, culled)
			if got.failed == 0 {
				t.Fatalf("d=%d culled=%v: every absorption succeeded (%d): the case does not exercise the fallback", d, culled, got.absorbs)
			}
			if d > 1 && !culled {
				if !closeRel(got.ot, sparse.ot, 1e-12, math.Abs(sparse.ot)) || !closeRel(got.div.OTxy, sparse.div.OTxy, 1e-12, math.Abs(sparse.div.OTxy)) {
					t.Errorf("d=%d: ot %v, ot_xy %v; sparse path %v, %v", d, got.ot, got.div.OTxy, sparse.ot, sparse.div.OTxy)
				}
				continue
			}
			if got.ot != sparse.ot || got.div.OTxy != sparse.div.OTxy {
				t.Errorf("d=%d culled=%v: ot %v, ot_xy %v; sparse path %v, %v", d, culled, got.ot, got.div.OTxy, sparse.ot, sparse.div.OTxy)
			}
			if !sameGrad(got.gOT, sparse.gOT) {
				t.Errorf("d=%d culled=%v: the OT gradient differs from the sparse path's", d, culled)
			}
		}
	}
}

// TestScalingEpochMaxima checks what an absorption stores for the
// exactness test of later sweeps in both orientations: for every point a
// of either side, top[side][a] = max over the other side's points b of
// off[side][a] + off[other][b] − C_ab/eps + ref[other][b] (the largest
// term of a's row in a sweep with the absorption's column factors), with
// the AVX2 and the pure-Go kernels, for n and m not multiples of four.
func TestScalingEpochMaxima(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	const n, m, d = 37, 29, 2
	x, y, eps, sides := sweepTestProblem(t, rng, n, m, d, 0.3, 0.8)
	c := newConsts(Options{Eps: eps, Balanced: true, Iters: 1})
	for _, simd := range []bool{false, haveSIMD} {
		w := NewWorkspaceWorkers(n, m, d, 1)
		e := w.e
		e.simd = simd
		e.reserve(max(n, m))
		e.sc = newScalingState()
		e.sc.begin(false, [2]bool{}, nil, n*m, 2, max(n, m), d, false)
		g := make([]float64, m)
		u := make([]float64, m)
		for j := range g {
			g[j] = eps * (3*rng.NormFloat64() + float64(j%5))
			u[j] = g[j]*c.invEps + sides[1].logw[j]
		}
		out := make([]float64, n)
		e.scalingStep(0, sides, u, g, out, c, -1)
		if e.sc.cur[0] < 0 {
			t.Fatalf("simd=%v: no epoch was absorbed", simd)
		}
		ep := &e.sc.epochs[e.sc.cur[0]]
		for s := range 2 {
			p, q := sides[s], sides[1-s]
			for a := range p.n {
				want := math.Inf(-1)
				for b := range q.n {
					k := ep.off[s][a] + ep.off[1-s][b] - sqDist(p.pts[a*d:a*d+d], q.pts[b*d:b*d+d])*c.invEps
					want = max(want, k+ep.ref[1-s][b])
				}
				if got := ep.top[s][a]; !(math.Abs(got-want) <= 1e-9*(1+math.Abs(want))) {
					t.Errorf("simd=%v: top[%d][%d] = %.17g, want %.17g", simd, s, a, got, want)
				}
			}
		}
		// The kernel (rows x) keeps the entries within L of their row's
		// or their column's largest term, and only those (up to rounding).
		L := ep.L
		km := &ep.k[0]
		for i := range n {
			cols, _ := km.row(i)
			kept := make(map[int32]bool)
			for _, j := range cols {
				kept[j] = true
			}
			for j := range m {
				k := ep.off[0][i] + ep.off[1][j] - sqDist(x[i*d:i*d+d], y[j*d:j*d+d])*c.invEps
				over := max(k+ep.ref[1][j]-(ep.top[0][i]-L), k+ep.ref[0][i]-(ep.top[1][j]-L))
				tol := 1e-9 * (1 + math.Abs(k))
				if over > tol && !kept[int32(j)] || over < -tol && kept[int32(j)] {
					t.Errorf("simd=%v: entry (%d, %d), %.3g above its threshold: kept %v", simd, i, j, over, kept[int32(j)])
				}
			}
		}
		w.Close()
	}
}

// TestScalingWorkers checks that the scaling path's results do not depend
// on the number of workers its products are split across (every product
// split, SetParallelThreshold(1)): values and gradients bitwise equal on
// one and on three workers, with the AVX2 and the pure-Go kernels.
func TestScalingWorkers(t *testing.T) {
	for _, c := range sparseCases(t) {
		for _, v := range []struct{ simd, culled bool }{{false, false}, {haveSIMD, false}, {false, true}, {haveSIMD, true}} {
			one := evalPath(t, c, PathScaling, v.simd, 1, v.culled)
			three := evalPath(t, c, PathScaling, v.simd, 3, v.culled)
			if one.kernelSweeps == 0 {
				continue
			}
			if one.div != three.div || one.ot != three.ot {
				t.Errorf("%s %+v: values %+v, %v on one worker; %+v, %v on three", c.name, v, one.div, one.ot, three.div, three.ot)
			}
			for _, g := range [][2]*Grad{{one.gU, three.gU}, {one.gE, three.gE}, {one.gOT, three.gOT}} {
				if !sameGrad(g[0], g[1]) {
					t.Errorf("%s %+v: a gradient differs between one and three workers", c.name, v)
				}
			}
		}
	}
}

// TestScalingCulledEpoch checks the kernel of a culled absorption against
// every pair: for each row (x, in tree order), top[0][i] is the largest
// term k_ij + ref_j over all columns, and the row keeps exactly the
// entries within L of it (up to rounding), with the AVX2 and the pure-Go
// kernels, in 1-D and 2-D, on one and on three workers.
func TestScalingCulledEpoch(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	for _, c := range []struct{ n, m, d, workers int }{{301, 257, 2, 1}, {301, 257, 2, 3}, {203, 190, 1, 1}} {
		n, m, d := c.n, c.m, c.d
		x, y, eps, _ := sweepTestProblem(t, rng, n, m, d, 0.3, 0.8)
		for _, simd := range []bool{false, haveSIMD} {
			w := NewWorkspaceWorkers(n, m, d, c.workers)
			w.SetParallelThreshold(1)
			w.SetPath(PathScaling)
			w.e.forceCulled = true
			w.e.simd = simd
			if _, err := w.OT(x, y, uniformLogW(n), uniformLogW(m), Options{Eps: eps, Balanced: true, Iters: 4}, nil); err != nil {
				t.Fatal(err)
			}
			sc := w.e.sc
			if sc.absorbs == 0 || sc.epochs[0].k[0].ncol != m {
				t.Fatalf("%+v simd=%v: no epoch of the rows x was absorbed", c, simd)
			}
			ep := &sc.epochs[0]
			xt, yt := w.e.sp.tree(x, n, d).pts, w.e.sp.tree(y, m, d).pts
			L := ep.L
			km := &ep.k[0]
			entries := 0
			for i := range n {
				k := make([]float64, m)
				top := math.Inf(-1)
				for j := range m {
					k[j] = ep.off[0][i] + ep.off[1][j] - sqDist(xt[i*d:i*d+d], yt[j*d:j*d+d])/eps
					top = max(top, k[j]+ep.ref[1][j])
				}
				if got := ep.top[0][i]; !(math.Abs(got-top) <= 1e-9*(1+math.Abs(top))) {
					t.Errorf("%+v simd=%v: top[0][%d] = %.17g, want %.17g", c, simd, i, got, top)
				}
				cols, vals := km.row(i)
				kept := make(map[int32]bool)
				for p, j := range cols {
					kept[j] = true
					if want := math.Exp(k[j]); !(math.Abs(vals[p]-want) <= 1e-12*want) {
						t.Errorf("%+v simd=%v: entry (%d, %d) = %.17g, want %.17g", c, simd, i, j, vals[p], want)
					}
				}
				entries += len(cols)
				for j := range m {
					over := k[j] + ep.ref[1][j] - (top - L)
					tol := 1e-9 * (1 + math.Abs(k[j]))
					if over > tol && !kept[int32(j)] || over < -tol && kept[int32(j)] {
						t.Errorf("%+v simd=%v: entry (%d, %d), %.3g above its threshold: kept %v", c, simd, i, j, over, kept[int32(j)])
					}
				}
			}
			if entries >= n*m/2 {
				t.Errorf("%+v simd=%v: %d of %d entries kept: the case does not cull", c, simd, entries, n*m)
			}
			w.Close()
		}
	}
}

// TestReleaseHistory checks the memory policy of the culled absorption: a
// problem without an unrolled gradient on culled epochs hands back a
// history larger than scalingCulledMaxHistory that an earlier unrolled
// problem left, and keeps a smaller one; an unrolled problem keeps it.
func TestReleaseHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	const n, m, d = 120, 100, 2
	x, y, eps, _ := sweepTestProblem(t, rng, n, m, d, 0.3, 0.8)
	for _, c := range []struct {
		held          int
		grad, release bool
	}{
		{scalingCulledMaxHistory + 1, false, true},
		{scalingCulledMaxHistory / 2, false, false},
		{scalingCulledMaxHistory + 1, true, false},
	} {
		w := NewWorkspaceWorkers(n, m, d, 1)
		w.SetPath(PathScaling)
		w.e.forceCulled = true
		w.e.fHist = make([]float64, c.held) // as an unrolled problem leaves it
		var gr *Grad
		o := Options{Eps: eps, Balanced: true, Iters: 5}
		if c.grad {
			gr, o.Grad = &Grad{X: make([]float64, n*d)}, GradUnrolled
		}
		if _, err := w.OT(x, y, uniformLogW(n), uniformLogW(m), o, gr); err != nil {
			t.Fatal(err)
		}
		if released := w.e.fHist == nil; released != c.release {
			t.Errorf("%+v: released %v", c, released)
		}
		w.Close()
	}
}
