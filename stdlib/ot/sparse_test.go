package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// sparseCase is a problem on which the sparse path must agree with the
// dense one.
type sparseCase struct {
	name           string
	x, y, la, lb   []float64
	d              int
	opt            Options
	mustCull       bool // the culling must drop terms (the case is local)
	skipDivergence bool // unequal masses in balanced mode: OT only
}

// resolutionOf is the median nearest-neighbour distance of pts (n×d).
func resolutionOf(t testing.TB, pts []float64, d int) float64 {
	h, err := Resolution(pts, len(pts)/d, d)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func uniformLogW(n int) []float64 {
	lw := make([]float64, n)
	for i := range lw {
		lw[i] = -math.Log(float64(n))
	}
	return lw
}

func gaussPts(rng *rand.Rand, n, d int, mean, sd float64) []float64 {
	p := make([]float64, n*d)
	for k := range p {
		p[k] = mean + sd*rng.NormFloat64()
	}
	return p
}

// sparseCases are the adversarial problems of the comparison: the paper's
// scales (eps = resolution²) in 1, 2, 3 and 10 dimensions, clustered points,
// duplicates, shifted measures (steep potentials), weights spread over many
// orders of magnitude, weights near zero and exactly zero, unbalanced with
// a small rho, and n ≠ m.
func sparseCases(t testing.TB) []sparseCase {
	rng := rand.New(rand.NewPCG(41, 42))
	var cs []sparseCase
	add := func(name string, x, y, la, lb []float64, d int, opt Options, cull bool) {
		cs = append(cs, sparseCase{name: name, x: x, y: y, la: la, lb: lb, d: d, opt: opt, mustCull: cull})
	}
	bal := func(eps float64, iters int) Options { return Options{Eps: eps, Balanced: true, Iters: iters} }
	unb := func(eps, rho float64, iters int) Options { return Options{Eps: eps, Rho: rho, Iters: iters} }

	// Experiment A's scale: N(2, 0.45) data against N(2.1, 0.5) draws.
	{
		n := 120
		y := gaussPts(rng, n, 1, 2, 0.45)
		x := gaussPts(rng, n, 1, 2.1, 0.5)
		h := resolutionOf(t, y, 1)
		add("1d/expA", x, y, uniformLogW(n), uniformLogW(n), 1, bal(h*h, 80), true)
		add("1d/expA-unbalanced-rho1e-2", x, y, uniformLogW(n), uniformLogW(n), 1, unb(h*h, 1e-2, 40), true)
	}
	// 1-D shifted: steep potentials.
	{
		n, m := 200, 150
		y := gaussPts(rng, m, 1, 0, 1)
		x := gaussPts(rng, n, 1, 3, 1)
		h := resolutionOf(t, y, 1)
		add("1d/shifted-n≠m", x, y, uniformLogW(n), uniformLogW(m), 1, bal(h*h, 60), true)
	}
	// 2-D spiral as in Experiment B.
	{
		n := 160
		spiral := func() []float64 {
			p := make([]float64, 2*n)
			for i := range n {
				phi := 2 * math.Pi * 3 * rng.Float64()
				c := 0.1 + 0.15*phi
				p[2*i] = c*math.Cos(phi) + 0.08*rng.NormFloat64()
				p[2*i+1] = c*math.Sin(phi) + 0.08*rng.NormFloat64()
			}
			return p
		}
		x, y := spiral(), spiral()
		h := resolutionOf(t, y, 2)
		add("2d/spiral", x, y, uniformLogW(n), uniformLogW(n), 2, bal(h*h, 80), true)
	}
	// 2-D pulse with timing jitter as in Experiment C: a curve, whose
	// problems take the wide margin on the scaling path (eps half the
	// heuristic's, so that the sparse sweeps' culling drops most terms).
	{
		own := rand.New(rand.NewPCG(51, 52)) // the other cases' draws unchanged
		x, y := pulsePts(own, 128, 0.5, 0.05, 0.02), pulsePts(own, 128, 0.45, 0.07, 0.05)
		h := resolutionOf(t, y, 2)
		add("2d/pulse", x, y, uniformLogW(128), uniformLogW(128), 2, bal(h*h/2, 80), true)
	}
	// Clusters: three tight clusters far apart, unequal weights.
	{
		n, m := 96, 80
		clus := func(k int) []float64 {
			p := make([]float64, 2*k)
			for i := range k {
				c := float64(i % 3)
				p[2*i] = 10*c + 0.01*rng.NormFloat64()
				p[2*i+1] = -5*c + 0.01*rng.NormFloat64()
			}
			return p
		}
		x, y := clus(n), clus(m)
		la, lb := make([]float64, n), make([]float64, m)
		for i := range la {
			la[i] = math.Log(0.1 + rng.Float64())
		}
		for j := range lb {
			lb[j] = math.Log(0.1 + rng.Float64())
		}
		normalize(la)
		normalize(lb)
		h := resolutionOf(t, y, 2)
		add("2d/clusters", x, y, la, lb, 2, bal(h*h, 50), true)
		add("2d/clusters-unbalanced-rho1e-3", x, y, la, lb, 2, unb(h*h, 1e-3, 50), true)
	}
	// Duplicates: every point four times, y a subset of x.
	{
		n := 128
		x := make([]float64, 2*n)
		for i := range n / 4 {
			a, b := rng.NormFloat64(), rng.NormFloat64()
			for r := range 4 {
				x[2*(4*i+r)], x[2*(4*i+r)+1] = a, b
			}
		}
		y := append([]float64(nil), x[:n]...)
		add("2d/duplicates", x, y, uniformLogW(n), uniformLogW(n/2), 2, bal(0.004, 40), true)
	}
	// Weights spread over 30 orders of magnitude, and weights near zero
	// and zero.
	{
		n := 100
		x := gaussPts(rng, n, 2, 0, 1)
		y := gaussPts(rng, n, 2, 0.3, 0.8)
		la, lb := make([]float64, n), make([]float64, n)
		for i := range la {
			la[i] = -70 * rng.Float64()
			lb[i] = -70 * rng.Float64()
		}
		normalize(la)
		normalize(lb)
		h := resolutionOf(t, y, 2)
		// At n = 100 in 2-D most terms are within e^-42 of their row's
		// maximum: these cases test agreement, not culling.
		add("2d/weights-1e-30", x, y, la, lb, 2, bal(h*h, 40), false)
		lz, lbz := append([]float64(nil), uniformLogW(n)...), append([]float64(nil), uniformLogW(n)...)
		for i := 0; i < n; i += 7 {
			lz[i] = math.Inf(-1)
			lbz[(i+3)%n] = -700
		}
		normalize(lz)
		normalize(lbz)
		add("2d/zero-and-tiny-weights", x, y, lz, lbz, 2, bal(h*h, 40), false)
		add("2d/zero-weights-unbalanced", x, y, lz, uniformLogW(n), 2, unb(h*h, 0.05, 40), false)
		add("2d/zero-weights-small-eps", x, y, lz, lbz, 2, bal(h*h/20, 40), true)
	}
	// 3-D and 10-D.
	{
		n := 150
		x := gaussPts(rng, n, 3, 0, 1)
		y := gaussPts(rng, n, 3, 0.2, 1)
		h := resolutionOf(t, y, 3)
		add("3d", x, y, uniformLogW(n), uniformLogW(n), 3, bal(h*h, 40), false)
		add("3d/small-eps", x, y, uniformLogW(n), uniformLogW(n), 3, bal(h*h/100, 40), true)
		n = 64
		x = gaussPts(rng, n, 10, 0, 1)
		y = gaussPts(rng, n, 10, 0.1, 1)
		h = resolutionOf(t, y, 10)
		add("10d", x, y, uniformLogW(n), uniformLogW(n), 10, bal(h*h, 30), false)
		// 64 points in 10-D: the tree splits 3 of the 10 coordinates,
		// its boxes drop nothing; the case tests agreement.
		add("10d/small-eps", x, y, uniformLogW(n), uniformLogW(n), 10, bal(h*h/100, 30), false)
	}
	// Every reference vector of shared/testdata/sinkhorn.
	for _, r := range loadRefs(t) {
		in := &r.Inputs
		x, y := flatten(in.X), flatten(in.Y)
		add("ref/"+r.Name, x, y, in.LogA, in.LogB, len(x)/len(in.LogA), refOptions(r, GradUnrolled), false)
	}
	// Large eps: nothing can be dropped; the paths must still agree.
	{
		n := 64
		x := gaussPts(rng, n, 2, 0, 1)
		y := gaussPts(rng, n, 2, 0, 1)
		add("2d/large-eps", x, y, uniformLogW(n), uniformLogW(n), 2, bal(5, 20), false)
	}
	return cs
}

// pulsePts returns n points (u_i + 0.05 z, exp(−((u_i − t0)/width)²/2) +
// sigma z') on the grid u_i = i/(n − 1): Experiment C's simulator.
func pulsePts(rng *rand.Rand, n int, t0, width, sigma float64) []float64 {
	p := make([]float64, 2*n)
	for i := range n {
		u := float64(i) / float64(n-1)
		p[2*i] = u + 0.05*rng.NormFloat64()
		p[2*i+1] = math.Exp(-0.5*math.Pow((u-t0)/width, 2)) + sigma*rng.NormFloat64()
	}
	return p
}

// closeRel reports whether got is within rtol of want relative to scale.
func closeRel(got, want, rtol, scale float64) bool {
	return math.Abs(got-want) <= rtol*scale || got == want
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

// compareGrads checks every gradient array within rtol of the array's
// largest entry.
func compareGrads(t *testing.T, what string, got, want *Grad, rtol float64) {
	t.Helper()
	for _, a := range []struct {
		name string
		g, w []float64
	}{{"X", got.X, want.X}, {"Y", got.Y, want.Y}, {"LogA", got.LogA, want.LogA}, {"LogB", got.LogB, want.LogB}} {
		scale := maxAbs(a.w)
		for k := range a.w {
			if !closeRel(a.g[k], a.w[k], rtol, scale) {
				t.Errorf("%s: grad %s[%d] = %.17g, dense %.17g (rel. to max %.3g: %.3g)", what, a.name, k, a.g[k], a.w[k], scale, math.Abs(a.g[k]-a.w[k])/scale)
				break
			}
		}
	}
}

func newGrad(n, m, d int) *Grad {
	return &Grad{X: make([]float64, n*d), Y: make([]float64, m*d), LogA: make([]float64, n), LogB: make([]float64, m)}
}

// evalPaths evaluates the divergence (or OT when skipDivergence) with both
// gradient modes on one path.
type pathResult struct {
	div      Result
	ot       float64
	gU, gE   *Grad
	gOT      *Grad
	density  float64
	anySweep bool
	reused   int // forward sweeps that reused a culling

	// The scaling path's counters.
	kernelSweeps, absorbs, failed, reabsorbs, mismatches int
	partial, chained                                     int
}

// evalPath evaluates the case on the path, with the kernels and workers
// given (and the scaling path's culled absorptions at any size with
// culled).
func evalPath(t *testing.T, c sparseCase, path Path, simd bool, workers int, culled ...bool) pathResult {
	t.Helper()
	n, m := len(c.la), len(c.lb)
	w := NewWorkspaceWorkers(n, m, c.d, workers)
	defer w.Close()
	w.e.simd = simd
	w.e.forceCulled = len(culled) > 0 && culled[0]
	w.SetPath(path)
	w.SetParallelThreshold(1)
	var r pathResult
	for _, mode := range []GradMode{GradUnrolled, GradEnvelope} {
		o := c.opt
		o.Grad = mode
		gr := newGrad(n, m, c.d)
		if !c.skipDivergence {
			res, err := w.Divergence(c.x, c.y, c.la, c.lb, o, nil, gr)
			if err != nil {
				t.Fatal(err)
			}
			r.div = res
		}
		if mode == GradUnrolled {
			r.gU = gr
		} else {
			r.gE = gr
		}
	}
	r.gOT = newGrad(n, m, c.d)
	v, err := w.OT(c.x, c.y, c.la, c.lb, c.opt, r.gOT)
	if err != nil {
		t.Fatal(err)
	}
	r.ot = v
	sp := w.e.sp
	if sc := w.e.sc; sc != nil {
		r.kernelSweeps, r.absorbs, r.failed = sc.kernelSweeps, sc.absorbs, sc.failed
		r.reabsorbs, r.mismatches = sc.reabsorbs, sc.mismatches
		r.partial = sc.partial
		r.chained = sc.chained
	}
	r.anySweep = sp.allTerms > 0
	r.reused = sp.reusedCulls
	if sp.allTerms > 0 {
		r.density = sp.candTerms / sp.allTerms
	}
	return r
}

// TestSparseMatchesDense compares the sparse path with the dense one, to
// 1e-12 relative: values, unrolled and envelope gradients (each array
// relative to its largest entry), on the adversarial cases, with the AVX2
// and the pure-Go kernels, on one and on three workers.
func TestSparseMatchesDense(t *testing.T) {
	const rtol = 1e-12
	for _, c := range sparseCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, simd := range []bool{false, haveSIMD} {
				workers := 1
				if simd {
					workers = 3
				}
				what := fmt.Sprintf("simd=%v", simd)
				dense := evalPath(t, c, PathDense, simd, 1)
				sparse := evalPath(t, c, PathSparse, simd, workers)
				if !sparse.anySweep {
					t.Fatalf("%s: no sparse sweep ran", what)
				}
				if c.mustCull && !(sparse.density < 0.5) {
					t.Errorf("%s: the culling kept %.1f%% of the terms; the case is local", what, 100*sparse.density)
				}
				if c.mustCull && sparse.reused == 0 {
					t.Errorf("%s: no forward sweep reused a culling", what)
				}
				t.Logf("%s: %.1f%% of the terms evaluated, %d sweeps on a reused culling", what, 100*sparse.density, sparse.reused)
				scale := math.Abs(dense.div.OTxy) + math.Abs(dense.div.OTxx) + math.Abs(dense.div.OTyy)
				for _, v := range []struct {
					name      string
					got, want float64
				}{
					{"divergence", sparse.div.Divergence, dense.div.Divergence},
					{"ot_xy", sparse.div.OTxy, dense.div.OTxy},
					{"ot_xx", sparse.div.OTxx, dense.div.OTxx},
					{"ot_yy", sparse.div.OTyy, dense.div.OTyy},
				} {
					if !closeRel(v.got, v.want, rtol, max(math.Abs(v.want), 1e-3*scale)) {
						t.Errorf("%s: %s = %.17g, dense %.17g", what, v.name, v.got, v.want)
					}
				}
				if !closeRel(sparse.ot, dense.ot, rtol, math.Abs(dense.ot)) {
					t.Errorf("%s: ot = %.17g, dense %.17g", what, sparse.ot, dense.ot)
				}
				compareGrads(t, what+" unrolled", sparse.gU, dense.gU, rtol)
				compareGrads(t, what+" envelope", sparse.gE, dense.gE, rtol)
				compareGrads(t, what+" OT unrolled", sparse.gOT, dense.gOT, rtol)
			}
		})
	}
}

// sparseBenchProblem is a problem at eps = resolution² with n = m points
// in d dimensions: y ~ N(0, I), x ~ N(0.1, 1.1² I) (a shift and a
// dilation: potentials with a slope and a curvature).
func sparseBenchProblem(b testing.TB, n, d int) (x, y, la, lb []float64, opt Options) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	y = gaussPts(rng, n, d, 0, 1)
	x = gaussPts(rng, n, d, 0.1, 1.1)
	h := resolutionOf(b, y, d)
	return x, y, uniformLogW(n), uniformLogW(n), Options{Eps: h * h, Balanced: true, Iters: 80}
}

// BenchmarkSparse times one divergence with its unrolled gradient (grad)
// and without (value) on the path PathAuto picks, the scaling path
// (absorbing from a scan of all pairs up to scalingMaxTerms, from the
// culling beyond), the scaling path
// absorbing from the culling at any size (scaling-culled), the sparse and
// the dense path, one worker, y–y term cached:
//
//	go test -run '^$' -bench Sparse ./stdlib/ot
//	OT_BENCH_LARGE=1 go test -run '^$' -bench 'Sparse/n=4096' -benchtime 1x ./stdlib/ot
func BenchmarkSparse(b *testing.B) {
	sizes := []int{120, 256, 512, 724, 1024}
	if largeBench() {
		sizes = append(sizes, 2048, 2896, 4096)
	}
	for _, n := range sizes {
		for _, d := range []int{1, 2} {
			x, y, la, lb, opt := sparseBenchProblem(b, n, d)
			for _, path := range []string{"auto", "scaling", "scaling-culled", "sparse", "dense"} {
				for _, grad := range []bool{true, false} {
					mode := "value"
					if grad {
						mode = "grad"
					}
					b.Run(fmt.Sprintf("n=%d/d=%d/%s/%s", n, d, path, mode), func(b *testing.B) {
						w := NewWorkspaceWorkers(n, n, d, 1)
						defer w.Close()
						p, err := ParsePath(strings.TrimSuffix(path, "-culled"))
						if err != nil {
							b.Fatal(err)
						}
						w.SetPath(p)
						w.e.forceCulled = path == "scaling-culled"
						yy, err := w.SelfTerm(y, lb, opt)
						if err != nil {
							b.Fatal(err)
						}
						var gr *Grad
						if grad {
							gr = &Grad{X: make([]float64, n*d)}
						}
						for b.Loop() {
							if _, err := w.Divergence(x, y, la, lb, opt, yy, gr); err != nil {
								b.Fatal(err)
							}
						}
						if sp := w.e.sp; sp.allTerms > 0 {
							b.ReportMetric(100*sp.candTerms/sp.allTerms, "%cand")
						}
						if sc := w.e.sc; sc != nil && sc.kernelSweeps > 0 {
							b.ReportMetric(float64(sc.absorbs+sc.reabsorbs)/float64(b.N), "absorbs/op")
						}
					})
				}
			}
		}
	}
}

// TestSparseSweepErrorBound checks the error bounds of one sparse sweep
// against the dense sweep, with thresholds small enough that terms are
// dropped (thr = 3 and 8; the sweeps use ln m + 54·ln 2). The bounds,
// from "every dropped term is below e^−thr times its row's largest term
// (forward) or its row's total weight 1 (backward, normalized)":
//
//	forward:  |Δ LSE_i|          ≤ m·e^−thr
//	backward: |Δ Σ_j e_ij|        ≤ m·e^−thr
//	          |Δ rowGrad_ik|      ≤ |r_i|·e^−thr·Σ_j |x_ik − y_jk|
//	          |Δ colSum_j|        ≤ e^−thr·Σ_i |r_i|
//	          |Δ colGrad_jk|      ≤ e^−thr·Σ_i |r_i|·|x_ik − y_jk|
//
// (each plus 1e-12 of the quantity's scale for rounding). It also checks
// that the small thresholds did drop something.
func TestSparseSweepErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	const n, m, d = 90, 70, 2
	x, y, eps, _ := sweepTestProblem(t, rng, n, m, d, 0.2, 0.9)
	for _, thr := range []float64{3, 8} {
		w := NewWorkspaceWorkers(n, m, d, 1)
		e := w.e
		e.reserve(max(n, m))
		e.sp.thrTest = thr
		w.SetPath(PathSparse)
		// Rows x, columns y, in tree order.
		rt := new(kdTree)
		rt.build(x, n, d)
		ct := new(kdTree)
		ct.build(y, m, d)
		u := make([]float64, m)
		for j := range u {
			u[j] = 3*rng.NormFloat64() + float64(j%5) // rough potentials
		}
		// The exact row LSEs and the weights' normalization.
		lse := make([]float64, n)
		for i := range n {
			mx := math.Inf(-1)
			for j := range m {
				mx = max(mx, u[j]-sqDist(rt.pts[i*d:i*d+d], ct.pts[j*d:j*d+d])/eps)
			}
			var s float64
			for j := range m {
				s += math.Exp(u[j] - sqDist(rt.pts[i*d:i*d+d], ct.pts[j*d:j*d+d])/eps - mx)
			}
			lse[i] = mx + math.Log(s)
		}
		sNeg := make([]float64, n)
		r := make([]float64, n)
		for i := range n {
			sNeg[i] = -lse[i]
			r[i] = rng.NormFloat64()
		}
		hint := make([]int32, n)
		for i := range hint {
			hint[i] = -1
		}
		type out struct{ lse, rowSum, rowGrad, colSum, colGrad []float64 }
		run := func(sparse bool) out {
			var o out
			o.lse = make([]float64, n)
			fwd := sweepJob{rows: rt.pts, cols: ct.pts, nr: n, nc: m, u: u, invEps: 1 / eps, outScale: 1, out: o.lse}
			bwd := sweepJob{weighted: true, normalized: true, rows: rt.pts, cols: ct.pts, nr: n, nc: m, u: u, s: sNeg, r: r,
				invEps: 1 / eps, out: make([]float64, n), rowGrad: make([]float64, n*d), wantColSum: true, wantColGrad: true}
			if sparse {
				fwd.rowTree, fwd.colTree, fwd.hint, fwd.rec = rt, ct, hint, -1
				bwd.rowTree, bwd.colTree, bwd.rec = rt, ct, -1
			}
			e.sweep(fwd)
			e.sweep(bwd)
			o.rowSum, o.rowGrad = bwd.out, bwd.rowGrad
			o.colSum = append([]float64(nil), e.colSum[:m]...)
			o.colGrad = append([]float64(nil), e.colGrad[:m*d]...)
			return o
		}
		dense, sparse := run(false), run(true)
		drop := math.Exp(-thr)
		var dropped bool
		check := func(what string, k int, got, want, bound, scale float64) {
			t.Helper()
			diff := math.Abs(got - want)
			if diff > 1e-12*scale {
				dropped = true
			}
			if !(diff <= bound+1e-12*scale) {
				t.Errorf("thr %g: %s[%d] = %.17g, dense %.17g: |Δ| = %.3g > bound %.3g", thr, what, k, got, want, diff, bound)
			}
		}
		for i := range n {
			check("LSE", i, sparse.lse[i], dense.lse[i], float64(m)*drop, math.Abs(dense.lse[i]))
			check("rowSum", i, sparse.rowSum[i], dense.rowSum[i], float64(m)*drop, 1)
			for k := range d {
				var l1 float64
				for j := range m {
					l1 += math.Abs(rt.pts[i*d+k] - ct.pts[j*d+k])
				}
				check("rowGrad", i*d+k, sparse.rowGrad[i*d+k], dense.rowGrad[i*d+k], math.Abs(r[i])*drop*l1, math.Abs(r[i])*l1)
			}
		}
		for j := range m {
			var sr float64
			for i := range n {
				sr += math.Abs(r[i])
			}
			check("colSum", j, sparse.colSum[j], dense.colSum[j], drop*sr, sr)
			for k := range d {
				var l1 float64
				for i := range n {
					l1 += math.Abs(r[i]) * math.Abs(rt.pts[i*d+k]-ct.pts[j*d+k])
				}
				check("colGrad", j*d+k, sparse.colGrad[j*d+k], dense.colGrad[j*d+k], drop*l1, l1)
			}
		}
		if !dropped {
			t.Errorf("thr %g: the sparse sweep agrees with the dense one to rounding: nothing was dropped", thr)
		}
		w.Close()
	}
}

// TestSparseNoAllocations checks that the sparse path allocates nothing in
// steady state, also when x changes at every evaluation (its tree is
// rebuilt), in 1-D and 2-D.
func TestSparseNoAllocations(t *testing.T) {
	checkNoAllocations(t, PathSparse, "sparse sweep", func(w *Workspace) bool { return w.e.sp.allTerms > 0 })
}

// checkNoAllocations checks that the path allocates nothing per evaluation
// in steady state — divergences with the unrolled and the envelope
// gradient, x changing at every evaluation, d = 1 and 2, on one worker and
// on two with every sweep split — and that ran reports the path's sweeps as
// run (what names them).
func checkNoAllocations(t *testing.T, path Path, what string, ran func(*Workspace) bool, culled ...bool) {
	t.Helper()
	for _, c := range []struct{ d, workers int }{{1, 1}, {2, 1}, {1, 2}, {2, 2}} {
		d := c.d
		x, y, la, lb, opt := sparseBenchProblem(t, 150, d)
		w := NewWorkspaceWorkers(150, 150, d, c.workers)
		w.e.forceCulled = len(culled) > 0 && culled[0]
		if c.workers > 1 {
			w.SetParallelThreshold(1)
		}
		w.SetPath(path)
		yy, err := w.SelfTerm(y, lb, opt)
		if err != nil {
			t.Fatal(err)
		}
		xs := [2][]float64{x, append([]float64(nil), x...)}
		for k := range xs[1] {
			xs[1][k] *= 1.01
		}
		gr := &Grad{X: make([]float64, len(x)), LogA: make([]float64, 150)}
		k := 0
		run := func() {
			k++
			for _, o := range []Options{opt, {Eps: opt.Eps, Balanced: true, Iters: 80, Grad: GradEnvelope}} {
				if _, err := w.Divergence(xs[k%2], y, la, lb, o, yy, gr); err != nil {
					t.Fatal(err)
				}
			}
		}
		run()
		run()
		if a := testing.AllocsPerRun(4, run); a != 0 {
			t.Errorf("d=%d, %d workers: %v allocations per evaluation, want 0", d, c.workers, a)
		}
		if !ran(w) {
			t.Errorf("d=%d, %d workers: no %s ran", d, c.workers, what)
		}
		w.Close()
	}
}

// TestSparseCandidateReuse checks the reuse of a culling (candCache) by
// forward and backward sweeps against every pair: a sweep whose column
// terms drifted from the culling's by a spread up to sparseCullSlack
// reuses its candidates, and they still hold every term within thr of its
// row's maximum (forward) or log-sum-exp (backward; the culling's
// guarantee), at thr = 8 so that the culling is tight. The drift
// lifts every column but the rows' largest terms' by the spread: the
// terms the culling dropped come closest to their rows' cut. A larger
// spread, or a column of weight zero that gains weight, culls anew.
func TestSparseCandidateReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	const n, m, d, thr = 1500, 1200, 2, 8.0
	x, y, eps, _ := sweepTestProblem(t, rng, n, m, d, 0.2, 0.9)
	w := NewWorkspaceWorkers(n, m, d, 1)
	defer w.Close()
	e := w.e
	e.reserve(max(n, m))
	e.sp.thrTest = thr
	w.SetPath(PathSparse)
	rt, ct := new(kdTree), new(kdTree)
	rt.build(x, n, d)
	ct.build(y, m, d)
	term := func(u []float64, i, j int) float64 {
		return u[j] - sqDist(rt.pts[i*d:i*d+d], ct.pts[j*d:j*d+d])/eps
	}
	u0 := make([]float64, m)
	for j := range u0 {
		u0[j] = 3*rng.NormFloat64() + float64(j%5)
	}
	u0[3] = math.Inf(-1)      // a column of weight zero
	top := make(map[int]bool) // the columns of the rows' largest terms
	for i := range n {
		best := 0
		for j := range m {
			if term(u0, i, j) > term(u0, i, best) {
				best = j
			}
		}
		top[best] = true
	}
	drifted := func(shift, spread float64) []float64 {
		u := append([]float64(nil), u0...)
		for j := range u {
			u[j] += shift
			if !top[j] {
				u[j] += spread
			}
		}
		return u
	}
	hint := make([]int32, n)
	for i := range hint {
		hint[i] = -1
	}
	// ref returns each row's reference: its largest term (forward) or its
	// log-sum-exp (backward).
	ref := func(u []float64, backward bool) []float64 {
		r := make([]float64, n)
		for i := range n {
			mx := math.Inf(-1)
			for j := range m {
				mx = max(mx, term(u, i, j))
			}
			r[i] = mx
			if backward {
				var s float64
				for j := range m {
					s += math.Exp(term(u, i, j) - mx)
				}
				r[i] += math.Log(s)
			}
		}
		return r
	}
	for _, backward := range []bool{false, true} {
		sweep := func(u []float64) {
			job := sweepJob{rows: rt.pts, cols: ct.pts, nr: n, nc: m, u: u, invEps: 1 / eps, outScale: 1, out: make([]float64, n),
				rowTree: rt, colTree: ct, hint: hint, rec: -1, orient: 0}
			if backward {
				s, r := ref(u, true), make([]float64, n)
				for i := range s {
					s[i], r[i] = -s[i], 1
				}
				job = sweepJob{weighted: true, normalized: true, rows: rt.pts, cols: ct.pts, nr: n, nc: m, u: u, s: s, r: r,
					invEps: 1 / eps, out: make([]float64, n), rowTree: rt, colTree: ct, rec: -1, orient: 0}
			}
			e.sweep(job)
		}
		sweep(u0) // the culling
		for _, c := range []struct {
			name  string
			u     []float64
			reuse bool
		}{
			{"same terms", u0, true},
			{"spread 15.9", drifted(-4, 15.9), true},
			{"spread 16.1", drifted(2, 16.1), false},
			{"zero weight gains weight", func() []float64 { u := drifted(1, 0); u[3] = u0[4]; return u }(), false},
		} {
			before := e.sp.reusedCulls
			sweep(c.u)
			if reused := e.sp.reusedCulls > before; reused != c.reuse {
				t.Errorf("backward=%v %s: reused %v, want %v", backward, c.name, reused, c.reuse)
			}
			// Every term within thr of its row's reference is a candidate.
			refs := ref(c.u, backward)
			missed := 0
			for _, blk := range e.sp.blocks[:sparseBlocks(n, len(rt.leafs))] {
				for li := blk.leafLo; li < blk.leafHi; li++ {
					nd := rt.nodes[rt.leafs[li]]
					cand := make([]bool, m)
					rg := blk.ranges[blk.off[li-blk.leafLo]:blk.off[li-blk.leafLo+1]]
					for k := 0; k < len(rg); k += 2 {
						for j := rg[k]; j < rg[k+1]; j++ {
							cand[j] = true
						}
					}
					for i := int(nd.lo); i < int(nd.hi); i++ {
						for j := range m {
							if term(c.u, i, j) >= refs[i]-thr && !cand[j] {
								missed++
							}
						}
					}
				}
			}
			if missed > 0 {
				t.Errorf("backward=%v %s: %d terms within thr of their row's reference are not candidates", backward, c.name, missed)
			}
			sweep(u0) // cull again from u0 when the case did
		}
	}
}

// TestSumColumnsChunks checks the column reduction of the sparse sweeps
// split across workers (several chunks of columns) against the sums in
// block order, bitwise, with blocks touching overlapping column spans.
func TestSumColumnsChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	const nb, nc, d = 5, 3*8192 + 77, 2
	spans := [][2]int{{0, 9000}, {4000, 20000}, {0, 0}, {15000, nc}, {100, nc - 100}}
	for _, workers := range []int{1, 3} {
		w := NewWorkspaceWorkers(16, 16, d, workers)
		e := w.e
		e.blkSum, e.blkGrad = make([]float64, nb*nc), make([]float64, nb*nc*d)
		e.colSum, e.colGrad = make([]float64, nc), make([]float64, nc*d)
		for k := range e.blkSum {
			e.blkSum[k] = rng.NormFloat64()
		}
		for k := range e.blkGrad {
			e.blkGrad[k] = rng.NormFloat64()
		}
		e.sumColumns(nb, nc, func(b int) (int, int) { return spans[b][0], spans[b][1] }, true, true)
		for j := range nc {
			var s float64
			g := make([]float64, d)
			for b := range nb {
				if j < spans[b][0] || j >= spans[b][1] {
					continue
				}
				s += e.blkSum[b*nc+j]
				for c := range d {
					g[c] += e.blkGrad[(b*nc+j)*d+c]
				}
			}
			if e.colSum[j] != s || e.colGrad[j*d] != g[0] || e.colGrad[j*d+1] != g[1] {
				t.Fatalf("workers %d, column %d: %v %v, want %v %v", workers, j, e.colSum[j], e.colGrad[j*d:j*d+d], s, g)
			}
		}
		w.Close()
	}
}
