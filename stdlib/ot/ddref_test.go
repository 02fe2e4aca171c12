package ot

import "math"

// A double-double reference of the fixed-iteration Sinkhorn OT value and
// its unrolled gradient, independent of the engine: potentials, arguments
// and log-sum-exps carry about 32 significant digits, so its rounding is
// far below that of any float64 path. The tests measure each path's error
// against it.

// dd is an unevaluated sum hi + lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func fastTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func (a dd) add(b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s.lo += t.hi
	s = fastTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return fastTwoSum(s.hi, s.lo)
}

func (a dd) neg() dd { return dd{-a.hi, -a.lo} }

func (a dd) mul(b dd) dd {
	p := a.hi * b.hi
	e := math.FMA(a.hi, b.hi, -p)
	e += a.hi*b.lo + a.lo*b.hi
	return fastTwoSum(p, e)
}

func (a dd) mulF(b float64) dd { return a.mul(dd{b, 0}) }

func (a dd) divF(b float64) dd {
	q1 := a.hi / b
	r := a.add(dd{q1, 0}.mulF(b).neg())
	q2 := r.hi / b
	r = r.add(dd{q2, 0}.mulF(b).neg())
	q3 := r.hi / b
	return fastTwoSum(q1, q2).add(dd{q3, 0})
}

func (a dd) less(b dd) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

// ddLSE returns LSE_k(a_k) over the finite a_k (hi = −Inf for none).
func ddLSE(a []dd, skip []bool) dd {
	m := dd{math.Inf(-1), 0}
	for k, v := range a {
		if !skip[k] && m.less(v) {
			m = v
		}
	}
	if math.IsInf(m.hi, -1) {
		return m
	}
	var s float64
	for k, v := range a {
		if !skip[k] {
			r := v.add(m.neg())
			s += math.Exp(r.hi + r.lo)
		}
	}
	return m.add(dd{math.Log(s), 0})
}

// refResult is the reference of one problem or divergence: its value and
// its unrolled and envelope gradients.
type refResult struct {
	v      float64
	gU, gE *Grad
}

// ddSoftmax sets w to the softmax of the arguments a (0 where skip), each
// weight exponentiated from its double-double distance to the LSE.
func ddSoftmax(a []dd, skip []bool, w []float64) {
	l := ddLSE(a, skip)
	for k := range w {
		w[k] = 0
		if !skip[k] {
			r := a[k].add(l.neg())
			w[k] = math.Exp(r.hi + r.lo)
		}
	}
}

// refOT returns the OT value (README conventions, as Workspace.OT) and its
// unrolled and envelope gradients.
func refOT(x, y, la, lb []float64, d int, o Options) refResult {
	n, m := len(la), len(lb)
	eps, T := o.Eps, o.Iters
	tau := o.tau()
	ceps := make([]dd, n*m) // C_ij/eps
	for i := range n {
		for j := range m {
			var c dd
			for k := range d {
				df := twoSum(x[i*d+k], -y[j*d+k])
				c = c.add(df.mul(df))
			}
			ceps[i*m+j] = c.divF(eps)
		}
	}
	zeroA := make([]bool, n)
	zeroB := make([]bool, m)
	for i, v := range la {
		zeroA[i] = math.IsInf(v, -1)
	}
	for j, v := range lb {
		zeroB[j] = math.IsInf(v, -1)
	}
	scale := func(l dd) dd { return l.mulF(tau).mulF(-eps) }
	fH := make([][]dd, T+1)
	gH := make([][]dd, T+1)
	gH[0] = make([]dd, m)
	rowArgs := func(i int, g []dd, dst []dd) {
		for j := range m {
			if zeroB[j] {
				continue
			}
			dst[j] = g[j].divF(eps).add(dd{lb[j], 0}).add(ceps[i*m+j].neg())
		}
	}
	colArgs := func(j int, f []dd, dst []dd) {
		for i := range n {
			if zeroA[i] {
				continue
			}
			dst[i] = f[i].divF(eps).add(dd{la[i], 0}).add(ceps[i*m+j].neg())
		}
	}
	ra, ca := make([]dd, m), make([]dd, n)
	for t := 1; t <= T; t++ {
		fH[t] = make([]dd, n)
		for i := range n {
			rowArgs(i, gH[t-1], ra)
			fH[t][i] = scale(ddLSE(ra, zeroB))
		}
		gH[t] = make([]dd, m)
		for j := range m {
			colArgs(j, fH[t], ca)
			gH[t][j] = scale(ddLSE(ca, zeroA))
		}
	}
	fT, gT := fH[T], gH[T]
	a := make([]float64, n)
	b := make([]float64, m)
	var ma, mb float64
	for i, v := range la {
		a[i] = math.Exp(v)
		ma += a[i]
	}
	for j, v := range lb {
		b[j] = math.Exp(v)
		mb += b[j]
	}
	gr := newDDGrad(n, m, d)
	fbar := make([]float64, n)
	gbar := make([]float64, m)
	var val dd
	rho := o.Rho
	for i := range n {
		f := fT[i].hi + fT[i].lo
		if o.Balanced {
			val = val.add(fT[i].mulF(a[i]))
			fbar[i] = a[i]
			gr.logA[i] = dd{a[i] * f, 0}
		} else {
			val = val.add(dd{-rho * a[i] * math.Expm1(-f/rho), 0})
			fbar[i] = a[i] * math.Exp(-f/rho)
			gr.logA[i] = dd{-rho * a[i] * math.Expm1(-f/rho), 0}.add(dd{eps * a[i] * mb, 0})
		}
	}
	for j := range m {
		g := gT[j].hi + gT[j].lo
		if o.Balanced {
			val = val.add(gT[j].mulF(b[j]))
			gbar[j] = b[j]
			gr.logB[j] = dd{b[j] * g, 0}
		} else {
			eg := math.Exp(-g / rho)
			val = val.add(dd{-rho*b[j]*math.Expm1(-g/rho) - eps*b[j]*eg, 0})
			gbar[j] = (1 + eps/rho) * b[j] * eg
			gr.logB[j] = dd{-rho * b[j] * math.Expm1(-g/rho), 0}.add(dd{-eps * b[j] * eg, 0}).add(dd{eps * b[j] * ma, 0})
		}
	}
	if !o.Balanced {
		val = val.add(dd{eps * ma * mb, 0})
	}
	gE := newGrad(n, m, d)
	refEnvelope(x, y, la, lb, d, o, a, b, ma, mb, ceps, fT, gT, gE)
	w := make([]float64, max(n, m))
	newF, newG := make([]float64, n), make([]float64, m)
	// addPair adds the gradient of C_ij's share pw of an adjoint.
	addPair := func(i, j int, pw float64) {
		for k := range d {
			df := x[i*d+k] - y[j*d+k]
			gr.x[i*d+k] = gr.x[i*d+k].add(dd{2 * tau * pw * df, 0})
			gr.y[j*d+k] = gr.y[j*d+k].add(dd{-2 * tau * pw * df, 0})
		}
	}
	for t := T; t >= 1; t-- {
		// g^t_j = −τε LSE_i(f^t_i/ε + log a_i − C_ij/ε).
		clear(newF)
		for j := range m {
			colArgs(j, fH[t], ca)
			ddSoftmax(ca, zeroA, w[:n])
			for i := range n {
				pw := gbar[j] * w[i]
				newF[i] -= tau * pw
				gr.logA[i] = gr.logA[i].add(dd{-tau * eps * pw, 0})
				addPair(i, j, pw)
			}
		}
		for i := range n {
			fbar[i] += newF[i]
		}
		// f^t_i = −τε LSE_j(g^{t−1}_j/ε + log b_j − C_ij/ε).
		clear(newG)
		for i := range n {
			rowArgs(i, gH[t-1], ra)
			ddSoftmax(ra, zeroB, w[:m])
			for j := range m {
				pw := fbar[i] * w[j]
				newG[j] -= tau * pw
				gr.logB[j] = gr.logB[j].add(dd{-tau * eps * pw, 0})
				addPair(i, j, pw)
			}
		}
		copy(gbar, newG)
		clear(fbar)
	}
	return refResult{val.hi + val.lo, gr.round(), gE}
}

// refEnvelope sets gr to the envelope gradient: that of the dual
// Ψ_a(f) + Ψ_b(g) − eps·Σ_ij P_ij + eps·m_a·m_b at the final potentials
// held fixed, P_ij = a_i b_j e^((f_i + g_j − C_ij)/eps).
func refEnvelope(x, y, la, lb []float64, d int, o Options, a, b []float64, ma, mb float64, ceps, fT, gT []dd, gr *Grad) {
	n, m, eps, rho := len(la), len(lb), o.Eps, o.Rho
	psi := func(w float64, f dd) float64 {
		if o.Balanced {
			return w * (f.hi + f.lo)
		}
		return -rho * w * math.Expm1(-(f.hi+f.lo)/rho)
	}
	clear(gr.X)
	clear(gr.Y)
	rowSum := make([]float64, n)
	colSum := make([]float64, m)
	for i := range n {
		for j := range m {
			if math.IsInf(la[i], -1) || math.IsInf(lb[j], -1) {
				continue
			}
			r := fT[i].add(gT[j]).divF(eps).add(ceps[i*m+j].neg()).add(dd{la[i], 0}).add(dd{lb[j], 0})
			p := math.Exp(r.hi + r.lo)
			rowSum[i] += p
			colSum[j] += p
			for k := range d {
				df := x[i*d+k] - y[j*d+k]
				gr.X[i*d+k] += 2 * p * df
				gr.Y[j*d+k] -= 2 * p * df
			}
		}
	}
	for i := range n {
		gr.LogA[i] = psi(a[i], fT[i]) - eps*rowSum[i] + eps*a[i]*mb
	}
	for j := range m {
		gr.LogB[j] = psi(b[j], gT[j]) - eps*colSum[j] + eps*b[j]*ma
	}
}

// refDivergence returns the debiased divergence
// S = OT_xy − ½·OT_xx − ½·OT_yy + (eps/2)·(m_a − m_b)² with its gradients,
// and the reference of the x–y problem alone.
func refDivergence(x, y, la, lb []float64, d int, o Options) (div, xy refResult) {
	xy = refOT(x, y, la, lb, d, o)
	xx := refOT(x, x, la, la, d, o)
	yy := refOT(y, y, lb, lb, d, o)
	var ma, mb float64
	for _, v := range la {
		ma += math.Exp(v)
	}
	for _, v := range lb {
		mb += math.Exp(v)
	}
	combine := func(gxy, gxx, gyy *Grad) *Grad {
		g := newGrad(len(la), len(lb), d)
		for k := range g.X {
			g.X[k] = gxy.X[k] - 0.5*(gxx.X[k]+gxx.Y[k])
		}
		for k := range g.Y {
			g.Y[k] = gxy.Y[k] - 0.5*(gyy.X[k]+gyy.Y[k])
		}
		for i, v := range la {
			g.LogA[i] = gxy.LogA[i] - 0.5*(gxx.LogA[i]+gxx.LogB[i]) + o.Eps*(ma-mb)*math.Exp(v)
		}
		for j, v := range lb {
			g.LogB[j] = gxy.LogB[j] - 0.5*(gyy.LogA[j]+gyy.LogB[j]) - o.Eps*(ma-mb)*math.Exp(v)
		}
		return g
	}
	div = refResult{
		v:  xy.v - 0.5*xx.v - 0.5*yy.v + 0.5*o.Eps*(ma-mb)*(ma-mb),
		gU: combine(xy.gU, xx.gU, yy.gU),
		gE: combine(xy.gE, xx.gE, yy.gE),
	}
	return div, xy
}

// ddGrad accumulates a gradient in double-double.
type ddGrad struct{ x, y, logA, logB []dd }

func newDDGrad(n, m, d int) *ddGrad {
	return &ddGrad{make([]dd, n*d), make([]dd, m*d), make([]dd, n), make([]dd, m)}
}

func (g *ddGrad) round() *Grad {
	r := func(a []dd) []float64 {
		out := make([]float64, len(a))
		for k, v := range a {
			out[k] = v.hi + v.lo
		}
		return out
	}
	return &Grad{X: r(g.x), Y: r(g.y), LogA: r(g.logA), LogB: r(g.logB)}
}
