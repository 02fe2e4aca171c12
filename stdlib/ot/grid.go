package ot

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// Grid is a regular H×W grid of points with unit spacing in row-major order:
// point k = r·W + c sits at (r, c) (any common shift gives the same cost).
// Both measures of a grid problem live on the same grid, so the cost
// C_kk' = (r − r')² + (c − c')² separates and one half-iteration is two 1-D
// log-sum-exp passes:
//
//	A[r', c] = LSE_c'(u[r', c'] − (c − c')²/eps)      (H·W·W terms)
//	L[r, c]  = LSE_r'(A[r', c] − (r − r')²/eps)       (H·W·H terms)
//
// O(H·W·(H+W)) per half-iteration instead of O((H·W)²). Gradients are with
// respect to the log-weights only (the support is fixed).
type Grid struct {
	H, W int
}

// N returns the number of points H·W.
func (g Grid) N() int { return g.H * g.W }

// Points returns the grid's points as a row-major N×2 slice of (r, c).
func (g Grid) Points() []float64 {
	pts := make([]float64, 0, 2*g.N())
	for r := range g.H {
		for c := range g.W {
			pts = append(pts, float64(r), float64(c))
		}
	}
	return pts
}

// gridBufs are the buffers of the separable path.
type gridBufs struct {
	g        Grid
	k1       []float64 // δ²/eps at index L−1+δ, −L < δ < L, L = max(H, W)
	ek1      []float64 // e^(−δ²/eps), the same layout
	k1Eps    float64   // the eps k1 and ek1 were computed for (invEps)
	byKernel bool      // whether the passes may use ek1 (lseLineKernel)
	ebuf     []float64 // one line of exponentials
	at       []float64 // first-pass results, transposed: at[c·H + r']
	args     []float64 // one line of arguments
	mxs      []float64 // per output of a line batch: the maximum argument,
	sums     []float64 // the shifted sum of exponentials,
	lines    []float64 // and the log-sum-exp
	lp, ln   []float64 // log of positive and negative parts
	tp, tn   []float64 // their separable LSEs
	rowLSE   []float64
}

func (e *engine) gridReserve(g Grid) {
	gb := &e.grid
	gb.g = g
	n := g.N()
	l := max(g.H, g.W)
	gb.at = grow(gb.at, n)
	gb.args = grow(gb.args, l)
	gb.ebuf = grow(gb.ebuf, l)
	gb.mxs = grow(gb.mxs, l)
	gb.sums = grow(gb.sums, l)
	gb.lines = grow(gb.lines, l)
	gb.lp = grow(gb.lp, n)
	gb.ln = grow(gb.ln, n)
	gb.tp = grow(gb.tp, n)
	gb.tn = grow(gb.tn, n)
	gb.rowLSE = grow(gb.rowLSE, n)
	if len(gb.k1) != 2*l {
		gb.k1 = grow(gb.k1, 2*l)
		gb.ek1 = grow(gb.ek1, 2*l)
		gb.k1Eps = 0
	}
}

// kernelMaxArg bounds δ²/eps over a line for the passes by the kernel
// e^(−δ²/eps) (lseLineKernel): below it every kernel entry is a normal
// number and a line's sum, which has a term e^(−δ²/eps)·e^0, is at least
// e^(−600) ≈ 2.7e-261, far from underflow. Above it the passes take
// logarithms term by term (lseLine).
const kernelMaxArg = 600

func (e *engine) gridTable(invEps float64) {
	gb := &e.grid
	if gb.k1Eps == invEps {
		return
	}
	l := len(gb.k1) / 2
	for i := range gb.k1 {
		d := i - (l - 1)
		gb.k1[i] = float64(d*d) * invEps
		gb.ek1[i] = math.Exp(-gb.k1[i])
	}
	gb.k1Eps = invEps
	gb.byKernel = gb.k1[0] <= kernelMaxArg
}

// lseLineKernel is lseLine by products with the kernel: with m = max_j v[j],
//
//	lse[i] = m + log Σ_j e^(v[j] − m)·ektab[L−1−i+j],
//
// ektab holding e^(−δ²/eps) at index L−1+δ. That is len(v) exponentials
// and len(lse) logarithms per line instead of len(v)·len(lse)
// exponentials. The caller ensures δ²/eps ≤ kernelMaxArg, so the term of
// the maximum keeps each sum above e^(−kernelMaxArg) ≈ 2.7e-261: no sum
// underflows, and a term lost to underflow (the exponential returns 0
// below e^(−708) ≈ 3.3e-308) is under 1e-30 of the sum's last bit. Each sum has positive terms only, so its relative error is a
// few ulps, as that of the max-shifted sum of lseLine. A line of zero
// weights (m = −∞) gives −∞. It reports false, having written nothing,
// when m is +∞ or NaN: lseLine handles those.
func (e *engine) lseLineKernel(k kern, v, ektab []float64, lse []float64) bool {
	gb := &e.grid
	m := math.Inf(-1)
	for _, x := range v {
		if x > m {
			m = x
		} else if x != x {
			return false
		}
	}
	if math.IsInf(m, 1) {
		return false
	}
	if math.IsInf(m, -1) {
		for i := range lse {
			lse[i] = m
		}
		return true
	}
	L := len(ektab) / 2
	args, ev := gb.args[:len(v)], gb.ebuf[:len(v)]
	for j, x := range v {
		args[j] = x - m
	}
	k.exp(ev, args)
	sums := gb.sums[:len(lse)]
	k.kernelSums(sums, ev, ektab[L-len(v):])
	k.log(lse, sums)
	for i := range lse {
		lse[i] += m
	}
	return true
}

// lseLine sets lse[i] = LSE_j(v[j] − tab[L−1−i+j]) for every i < len(lse),
// with tab the symmetric table that holds δ²/eps at index L−1+δ: one 1-D
// pass of the separable log-sum-exp. The logarithms of the shifted sums are
// taken together, in one vectorized call (they are a third of the pass's
// time when taken one by one).
func (e *engine) lseLine(k kern, v, tab []float64, lse []float64) {
	gb := &e.grid
	L := len(tab) / 2
	args := gb.args[:len(v)]
	mxs, sums := gb.mxs[:len(lse)], gb.sums[:len(lse)]
	for i := range lse {
		mx := k.subMax(args, v, tab[L-1-i:])
		mxs[i] = mx
		if math.IsInf(mx, 0) || math.IsNaN(mx) {
			sums[i] = 1
			continue
		}
		sums[i] = k.sumExp(args, mx)
	}
	k.log(lse, sums)
	for i, mx := range mxs {
		if math.IsInf(mx, 0) || math.IsNaN(mx) {
			lse[i] = mx
		} else {
			lse[i] += mx
		}
	}
}

// gridLSE writes out[k] = scale·LSE_k'(u[k'] − C_kk'·invEps) for all points.
func (e *engine) gridLSE(u []float64, invEps, scale float64, out []float64) {
	gb := &e.grid
	H, W := gb.g.H, gb.g.W
	e.gridTable(invEps)
	at := gb.at
	k := kern{simd: e.simd}
	pass := func(v, line []float64) {
		if !gb.byKernel || !e.lseLineKernel(k, v, gb.ek1, line) {
			e.lseLine(k, v, gb.k1, line)
		}
	}
	for r := range H {
		line := gb.lines[:W]
		pass(u[r*W:(r+1)*W], line)
		for c, l := range line {
			at[c*H+r] = l
		}
	}
	for c := range W {
		line := gb.lines[:H]
		pass(at[c*H:(c+1)*H], line)
		for r, l := range line {
			out[r*W+c] = scale * l
		}
	}
}

// gridSweep is sweep on the grid (rowGrad and colGrad are not supported).
func (e *engine) gridSweep(job sweepJob) {
	n := e.grid.g.N()
	if !job.weighted {
		e.gridLSE(job.u, job.invEps, job.outScale, job.out)
		return
	}
	gb := &e.grid
	k := kern{simd: e.simd}
	if job.out != nil {
		// Σ_j e^(u_j + s_i − C_ij/eps) = exp(s_i + LSE_j(u_j − C_ij/eps)).
		e.gridLSE(job.u, job.invEps, 1, gb.rowLSE)
		if job.s != nil {
			for i, s := range job.s[:n] {
				gb.rowLSE[i] += s
			}
		}
		k.exp(job.out[:n], gb.rowLSE[:n])
	}
	if job.wantColSum {
		// Σ_i r_i e^(u_j + s_i − C_ij/eps) = e^(u_j)·(Σ⁺ − Σ⁻), each part a
		// log-sum-exp of log|r_i| + s_i over the rows of its sign.
		abs, logAbs := gb.tp[:n], gb.tn[:n]
		for i := range abs {
			abs[i] = 1
			if job.r != nil {
				abs[i] = math.Abs(job.r[i])
			}
		}
		k.log(logAbs, abs)
		for i, l := range logAbs {
			r := 1.0
			if job.r != nil {
				r = job.r[i]
			}
			if job.s != nil {
				l += job.s[i]
			}
			gb.lp[i], gb.ln[i] = math.Inf(-1), math.Inf(-1)
			if r > 0 {
				gb.lp[i] = l
			} else if r < 0 {
				gb.ln[i] = l
			}
		}
		e.gridLSE(gb.lp, job.invEps, 1, gb.tp)
		e.gridLSE(gb.ln, job.invEps, 1, gb.tn)
		for j, u := range job.u[:n] {
			gb.lp[j] = u + gb.tp[j]
			gb.ln[j] = u + gb.tn[j]
		}
		k.exp(gb.tp[:n], gb.lp[:n])
		k.exp(gb.tn[:n], gb.ln[:n])
		cs := e.colSum[:n]
		for j := range cs {
			cs[j] = gb.tp[j] - gb.tn[j]
		}
	}
}

// checkGrid validates a grid problem's sizes and gradient request.
func checkGrid(g Grid, logA, logB []float64, grad *Grad) error {
	if g.H < 1 || g.W < 1 {
		return fmt.Errorf("ot: grid must be at least 1×1, got %d×%d", g.H, g.W)
	}
	if len(logA) != g.N() {
		return fmt.Errorf("ot: measure a has %d log-weights, the %d×%d grid has %d points", len(logA), g.H, g.W, g.N())
	}
	if len(logB) != g.N() {
		return fmt.Errorf("ot: measure b has %d log-weights, the %d×%d grid has %d points", len(logB), g.H, g.W, g.N())
	}
	if err := errors.Join(checkLogWeights("a", logA), checkLogWeights("b", logB)); err != nil {
		return err
	}
	if grad != nil && (grad.X != nil || grad.Y != nil) {
		return errors.New("ot: the grid path has a fixed support; request gradients with respect to the log-weights only")
	}
	return checkGrads(grad, g.N(), g.N(), 0)
}

// checkGridScale is CheckScale for the unit grid g.
func checkGridScale(eps float64, g Grid) error {
	h, w := float64(g.H-1), float64(g.W-1)
	return scaleError(eps, max(h*h, w*w), h*h+w*w, 0)
}

// gridOn switches the engine to the grid path until the returned function
// is called.
func (e *engine) gridOn(g Grid) {
	e.reserve(g.N())
	e.gridReserve(g)
	e.colSum = grow(e.colSum, g.N())
	e.onGrid = true
}

// GridDivergence is Divergence for two measures on the grid g (n = m = H·W
// points), computed with the separable path. grad.X and grad.Y must be nil.
func (w *Workspace) GridDivergence(g Grid, logA, logB []float64, opt Options, yy *SelfTerm, grad *Grad) (Result, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	if err := opt.validate(); err != nil {
		return Result{}, err
	}
	if err := checkGrid(g, logA, logB, grad); err != nil {
		return Result{}, err
	}
	if err := checkGridScale(opt.Eps, g); err != nil {
		return Result{}, err
	}
	e := w.e
	e.gridOn(g)
	defer func() { e.onGrid = false }()
	return e.divergence(side{logw: logA, n: g.N()}, side{logw: logB, n: g.N()}, opt, yy, grad, g)
}

// GridSelfTerm is SelfTerm for a measure on the grid g.
func (w *Workspace) GridSelfTerm(g Grid, logB []float64, opt Options) (*SelfTerm, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if err := checkGrid(g, logB, logB, nil); err != nil {
		return nil, err
	}
	if err := checkGridScale(opt.Eps, g); err != nil {
		return nil, err
	}
	e := w.e
	e.gridOn(g)
	defer func() { e.onGrid = false }()
	return e.selfTerm(side{logw: logB, n: g.N()}, opt, g)
}

// GridOT is OT for two measures on the grid g, computed with the separable
// path. grad.X and grad.Y must be nil.
func (w *Workspace) GridOT(g Grid, logA, logB []float64, opt Options, grad *Grad) (float64, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	if err := opt.validate(); err != nil {
		return 0, err
	}
	if err := checkGrid(g, logA, logB, grad); err != nil {
		return 0, err
	}
	if err := checkGridScale(opt.Eps, g); err != nil {
		return 0, err
	}
	e := w.e
	e.gridOn(g)
	defer func() { e.onGrid = false }()
	return e.ot(side{logw: logA, n: g.N()}, side{logw: logB, n: g.N()}, opt, grad)
}
