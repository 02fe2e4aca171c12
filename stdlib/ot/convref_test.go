package ot

import (
	"math"
	"slices"
)

// An independent float64 reference of the converged problems: the naive
// log-domain iterations (math.Exp and math.Log, the cost matrix stored)
// from zero potentials (or, for problems too slow from there, from an
// annealing schedule of its own), run until the potentials stop changing
// to rounding, and the envelope gradients at the potentials reached
// (balanced: shifted as the package shifts them, balanceShift), from the
// stored plan. In unbalanced mode each iteration ends with the exact
// maximization of the dual along the translation (f + λ, g − λ),
// λ = (ρ/2)·log(Σ a e^(−f/ρ) / Σ b e^(−g/ρ)) (Séjourné et al., 2022): a
// block ascent step like the Sinkhorn updates, so the fixed point (the
// unique maximizer) is the same, but it removes the mode that the plain
// iterations contract by τ² only per iteration, slow for rho ≫ eps.

// convRefProblem is the reference of one problem (p, q): its potentials,
// its value without the unbalanced constant eps·m_p·m_q (value's
// convention), the parts of its envelope gradient without the gradient
// of that constant, and how the iterations ended.
type convRefProblem struct {
	f, g     []float64
	v0       float64
	gp, gq   []float64 // Σ_j P_ij·2(p_i − q_j), Σ_i P_ij·2(q_j − p_i)
	glp, glq []float64 // ψ(log p_i, f_i) − eps·Σ_j P_ij, and for q
	// The sums of the magnitudes of their terms, the scales of their
	// errors when the plan's entries are off by a small factor:
	// Σ_j P_ij·2|p_ik − q_jk| (and for q), eps·(p_i + Σ_j P_ij) (and for q).
	gpAbs, gqAbs   []float64
	glpAbs, glqAbs []float64
	mp, mq         float64 // masses
	mass           float64 // the plan's, Σ_ij P_ij
	iters          int
	crit, bestCrit float64 // the criterion at the end, and its least value
	// Balanced x–y problems: the blocks of its plan, points (p's, then
	// q's) linked by entries of at least convRefLink times its mass, as
	// a label per point (see convRefLink), and their number.
	block   []int
	nblocks int
}

// convRefLink is the weight, relative to the plan's mass, below which an
// entry of the plan does not link its points' blocks: below 2^-53 it
// changes none of the plan's sums to rounding, so that a balanced
// problem's blocks that only such entries join may shift against each
// other, (f + c, g − c) on one block, without a change that float64 sees
// (pc2d_small_eps_balanced_T80 at eps = 0.001: two blocks, joined by
// entries between 1e-30 and 1e-20 of the mass).
const convRefLink = 0x1p-53

// convRefMaxIters caps the reference's iterations. It stops earlier when
// its criterion (that of Options.Tol) has not improved over convRefStall
// iterations once it is below convRefConverged (rounding: the potentials
// have stopped changing), or over convRefStallLong iterations above it.
const (
	convRefMaxIters  = 1000000
	convRefConverged = 1e-12
	convRefStall     = 200
	convRefStallLong = 20000
)

// convRefAnnealFactor and convRefAnnealIters are the schedule of the
// reference's annealed start.
const (
	convRefAnnealFactor = 0.7
	convRefAnnealIters  = 50
)

// convergedRef solves the problem (p, q) (points n×d and m×d, log-weights)
// with the options' eps, rho and balance to convergence. With anneal, an
// x–y problem starts from the potentials of an annealing schedule of its
// own (for problems whose iterations from zero do not converge within
// convRefMaxIters), which does not change the fixed point it converges to.
func convergedRef(p, q, lp, lq []float64, d int, o Options, anneal bool) convRefProblem {
	n, m := len(lp), len(lq)
	C := make([]float64, n*m)
	for i := range n {
		for j := range m {
			var s float64
			for k := range d {
				t := p[i*d+k] - q[j*d+k]
				s += t * t
			}
			C[i*m+j] = s
		}
	}
	eps := o.Eps
	tau := 1.0
	if !o.Balanced {
		tau = o.Rho / (o.Rho + eps)
	}
	a, b := make([]float64, n), make([]float64, m)
	for i, l := range lp {
		a[i] = math.Exp(l)
	}
	for j, l := range lq {
		b[j] = math.Exp(l)
	}
	lse := func(v []float64) float64 {
		mx := math.Inf(-1)
		for _, t := range v {
			mx = math.Max(mx, t)
		}
		if math.IsInf(mx, -1) {
			return mx
		}
		var s float64
		for _, t := range v {
			s += math.Exp(t - mx)
		}
		return mx + math.Log(s)
	}
	r := convRefProblem{f: make([]float64, n), g: make([]float64, m), bestCrit: math.Inf(1)}
	f, g := r.f, r.g
	fOld, gOld := make([]float64, n), make([]float64, m)
	row, col := make([]float64, m), make([]float64, n)
	sym := &p[0] == &q[0] && &lp[0] == &lq[0]
	// iterate runs one iteration at eps e (damping tk): f from g, then g
	// from f.
	iterate := func(e, tk float64) {
		for i := range n {
			for j := range m {
				row[j] = (g[j]-C[i*m+j])/e + lq[j]
			}
			f[i] = -tk * e * lse(row)
		}
		for j := range m {
			for i := range n {
				col[i] = (f[i]-C[i*m+j])/e + lp[i]
			}
			g[j] = -tk * e * lse(col)
		}
	}
	// restart sets the next iteration's start: the symmetric average, or
	// the translation.
	restart := func() {
		switch {
		case sym:
			for i := range f {
				f[i] = 0.5 * (f[i] + g[i])
				g[i] = f[i]
			}
		case !o.Balanced:
			var sa, sb float64
			for i := range n {
				sa += a[i] * math.Exp(-f[i]/o.Rho)
			}
			for j := range m {
				sb += b[j] * math.Exp(-g[j]/o.Rho)
			}
			lam := 0.5 * o.Rho * math.Log(sa/sb)
			for i := range f {
				f[i] += lam
			}
			for j := range g {
				g[j] -= lam
			}
		}
	}
	if anneal && !sym {
		// Its own schedule, not the package's: from the squared diameter
		// of both point sets, eps times convRefAnnealFactor per stage,
		// convRefAnnealIters iterations each.
		var diam2 float64
		for k := range d {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, pts := range [][]float64{p, q} {
				for i := k; i < len(pts); i += d {
					lo, hi = math.Min(lo, pts[i]), math.Max(hi, pts[i])
				}
			}
			diam2 += (hi - lo) * (hi - lo)
		}
		for e := diam2; e > eps; e *= convRefAnnealFactor {
			tk := 1.0
			if !o.Balanced {
				tk = o.Rho / (o.Rho + e)
			}
			for range convRefAnnealIters {
				iterate(e, tk)
				restart()
			}
		}
	}
	stall := 0
	for t := 1; t <= convRefMaxIters; t++ {
		if t > 1 {
			restart()
		}
		copy(fOld, f)
		copy(gOld, g)
		iterate(eps, tau)
		var c float64
		for i := range f {
			c = max(c, math.Abs(f[i]-fOld[i]))
		}
		for j := range g {
			c = max(c, math.Abs(g[j]-gOld[j]))
		}
		c /= eps
		r.iters, r.crit = t, c
		if c < r.bestCrit {
			r.bestCrit, stall = c, 0
		} else if stall++; stall > convRefStall && r.bestCrit <= convRefConverged || stall > convRefStallLong {
			break
		}
		if c == 0 {
			break
		}
	}
	if o.Balanced {
		// The converged mode's point on the fixed line (f + c, g − c):
		// Σ a f = Σ b g (balanceShift).
		var af, bg, ma, mb float64
		for i := range n {
			af += a[i] * f[i]
			ma += a[i]
		}
		for j := range m {
			bg += b[j] * g[j]
			mb += b[j]
		}
		c := (bg - af) / (ma + mb)
		for i := range f {
			f[i] += c
		}
		for j := range g {
			g[j] -= c
		}
	}
	r.gp, r.gq = make([]float64, n*d), make([]float64, m*d)
	r.glp, r.glq = make([]float64, n), make([]float64, m)
	r.gpAbs, r.gqAbs = make([]float64, n*d), make([]float64, m*d)
	r.glpAbs, r.glqAbs = make([]float64, n), make([]float64, m)
	rowSum, colSum := make([]float64, n), make([]float64, m)
	var total float64
	for i := range n {
		for j := range m {
			pij := math.Exp(lp[i] + lq[j] + (f[i]+g[j]-C[i*m+j])/eps)
			rowSum[i] += pij
			colSum[j] += pij
			total += pij
			for k := range d {
				dk := 2 * (p[i*d+k] - q[j*d+k])
				r.gp[i*d+k] += pij * dk
				r.gq[j*d+k] -= pij * dk
				r.gpAbs[i*d+k] += pij * math.Abs(dk)
				r.gqAbs[j*d+k] += pij * math.Abs(dk)
			}
		}
	}
	ref := func(w, pot float64) float64 { // ψ: ∂Ψ/∂log w
		if o.Balanced {
			return w * pot
		}
		return -o.Rho * w * math.Expm1(-pot/o.Rho)
	}
	for i := range n {
		r.glp[i] = ref(a[i], f[i]) - eps*rowSum[i]
		r.glpAbs[i] = eps * (a[i] + rowSum[i])
		r.mp += a[i]
	}
	for j := range m {
		r.glq[j] = ref(b[j], g[j]) - eps*colSum[j]
		r.glqAbs[j] = eps * (b[j] + colSum[j])
		r.mq += b[j]
	}
	r.mass = total
	if o.Balanced && !sym {
		r.block, r.nblocks = planBlocks(n, m, total*convRefLink, func(i, j int) float64 {
			return math.Exp(lp[i] + lq[j] + (f[i]+g[j]-C[i*m+j])/eps)
		})
	}
	if o.Balanced {
		for i := range n {
			r.v0 += a[i] * f[i]
		}
		for j := range m {
			r.v0 += b[j] * g[j]
		}
	} else {
		for i := range n {
			r.v0 -= o.Rho * a[i] * math.Expm1(-f[i]/o.Rho)
		}
		for j := range m {
			r.v0 -= o.Rho * b[j] * math.Expm1(-g[j]/o.Rho)
		}
		r.v0 -= eps * total
	}
	return r
}

// convRef is the reference of an OT value or a divergence: the value,
// the envelope gradient, the scales of the gradient's errors (the sums of
// its terms' magnitudes, per array: X, Y, LogA, LogB), and the problems.
type convRef struct {
	v     float64
	grad  *Grad
	scale [4]float64
	probs []convRefProblem
}

// convRefOT is the reference of OT (value with its unbalanced constant,
// envelope gradient of the dual with its constant, as OT's).
func convRefOT(x, y, la, lb []float64, d int, o Options, anneal bool) convRef {
	r := convergedRef(x, y, la, lb, d, o, anneal)
	gr := &Grad{X: r.gp, Y: r.gq, LogA: make([]float64, len(la)), LogB: make([]float64, len(lb))}
	for i, l := range la {
		gr.LogA[i] = r.glp[i] + o.Eps*math.Exp(l)*r.mq
	}
	for j, l := range lb {
		gr.LogB[j] = r.glq[j] + o.Eps*math.Exp(l)*r.mp
	}
	v := r.v0
	if !o.Balanced {
		v += o.Eps * r.mp * r.mq
	}
	// The constant's gradient, eps·a_i·m_b, is exact.
	scale := [4]float64{maxAbs(r.gpAbs), maxAbs(r.gqAbs), maxAbs(r.glpAbs), maxAbs(r.glqAbs)}
	return convRef{v: v, grad: gr, scale: scale, probs: []convRefProblem{r}}
}

// convRefDivergence is the reference of Divergence (value and envelope
// gradient) and its three problems.
func convRefDivergence(x, y, la, lb []float64, d int, o Options, anneal bool) convRef {
	xy := convergedRef(x, y, la, lb, d, o, anneal)
	xx := convergedRef(x, x, la, la, d, o, anneal)
	yy := convergedRef(y, y, lb, lb, d, o, anneal)
	s := xy.v0 - 0.5*xx.v0 - 0.5*yy.v0
	if o.Balanced {
		dm := xy.mp - xy.mq
		s += 0.5 * o.Eps * dm * dm
	}
	gr := &Grad{X: make([]float64, len(x)), Y: make([]float64, len(y)), LogA: make([]float64, len(la)), LogB: make([]float64, len(lb))}
	for k := range gr.X {
		gr.X[k] = xy.gp[k] - 0.5*(xx.gp[k]+xx.gq[k])
	}
	for k := range gr.Y {
		gr.Y[k] = xy.gq[k] - 0.5*(yy.gp[k]+yy.gq[k])
	}
	for i := range gr.LogA {
		gr.LogA[i] = xy.glp[i] - 0.5*(xx.glp[i]+xx.glq[i])
	}
	for j := range gr.LogB {
		gr.LogB[j] = xy.glq[j] - 0.5*(yy.glp[j]+yy.glq[j])
	}
	var scale [4]float64
	for k := range gr.X {
		scale[0] = max(scale[0], xy.gpAbs[k]+0.5*(xx.gpAbs[k]+xx.gqAbs[k]))
	}
	for k := range gr.Y {
		scale[1] = max(scale[1], xy.gqAbs[k]+0.5*(yy.gpAbs[k]+yy.gqAbs[k]))
	}
	for i := range gr.LogA {
		scale[2] = max(scale[2], xy.glpAbs[i]+0.5*(xx.glpAbs[i]+xx.glqAbs[i]))
	}
	for j := range gr.LogB {
		scale[3] = max(scale[3], xy.glqAbs[j]+0.5*(yy.glpAbs[j]+yy.glqAbs[j]))
	}
	return convRef{v: s, grad: gr, scale: scale, probs: []convRefProblem{xy, xx, yy}}
}

// planBlocks returns the connected components of the bipartite graph of
// n + m points (p's, then q's) whose edges are the entries of the plan
// P(i, j) above link, as a label per point, and their number.
func planBlocks(n, m int, link float64, P func(i, j int) float64) ([]int, int) {
	label := make([]int, n+m)
	for k := range label {
		label[k] = k
	}
	root := func(k int) int {
		for label[k] != k {
			k = label[k]
		}
		return k
	}
	for i := range n {
		for j := range m {
			if P(i, j) > link {
				label[root(i)] = root(n + j)
			}
		}
	}
	count := 0
	for k := range label {
		if root(k) == k {
			count++
		}
	}
	for k := range label {
		label[k] = root(k)
	}
	return label, count
}

// unshiftBlocks returns the log-weight gradients gla and glb less, on each
// block of the balanced x–y problem xy (convRefLink), the shift
// (c·a_i, −c·b_j) whose c best fits their differences from the
// reference's (least squares): the part of the gradients that the
// problem's fixed point does not determine to rounding.
func unshiftBlocks(gla, glb, wantA, wantB, la, lb []float64, xy convRefProblem) ([]float64, []float64) {
	n := len(la)
	num, den := map[int]float64{}, map[int]float64{}
	for i, l := range la {
		a := math.Exp(l)
		num[xy.block[i]] += a * (gla[i] - wantA[i])
		den[xy.block[i]] += a * a
	}
	for j, l := range lb {
		b := math.Exp(l)
		num[xy.block[n+j]] -= b * (glb[j] - wantB[j])
		den[xy.block[n+j]] += b * b
	}
	outA, outB := slices.Clone(gla), slices.Clone(glb)
	for i, l := range la {
		outA[i] -= num[xy.block[i]] / den[xy.block[i]] * math.Exp(l)
	}
	for j, l := range lb {
		outB[j] += num[xy.block[n+j]] / den[xy.block[n+j]] * math.Exp(l)
	}
	return outA, outB
}
