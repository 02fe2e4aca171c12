package ot

import "math"

// Chained kernel sweeps.
//
// A kernel sweep of orientation o computes its row sums σ_r and, from them,
// its potentials out_r = −τε(−A_r + H + log σ_r); the next sweep (of the
// other orientation, on the same epoch) forms its column factors from those
// potentials, e^(h_c − H') with h_c = out_c/ε + log w_c − A_c. With τ = 1
// (balanced problems) the offsets cancel, h_c = log w_c − log σ_c − H, so
// the factors are (w_c/σ_c)/max_k(w_k/σ_k) and need neither the
// potentials nor a logarithm or exponential per point. The exactness test
// of the sweep, log σ_r ≥ top_r + lim, is likewise σ_r·e^(T − top_r) ≥
// e^(lim + T) (T the epoch's least top), and the drift D of the next sweep
// is log max_c(ρ_c/σ_c) − H with ρ_c = e^(log w_c − ref_c) (per epoch).
//
// Within solve the potentials of such a sweep are therefore formed only
// when something reads them (materialize): the input of a sweep that does
// not chain (a kernel sweep on the exponentials' path, a dense or sparse
// sweep, an absorption) and the last sweep of each orientation. Their bits
// are those the sweep would have written. The backward pass reads the
// potentials of the sweeps it does not take from an epoch only, and those
// are formed: such a sweep's input when it ran, its output by itself.

// pendingSweep is a chained kernel sweep whose potentials are not yet
// formed.
type pendingSweep struct {
	ok  bool
	out []float64 // where its potentials go
	sig []float64 // its row sums (the history's, or the orientation's scratch)
	H   float64
	k   int // its epoch
	rec int // its record (−1 for none): where the next sweep keeps 1/σ
}

// chainFactors holds an epoch's constants of the chained sweeps, per side
// (as rows for et and t0, as columns for rho).
type chainFactors struct {
	rho   [2][]float64 // e^(log w_c − ref_c), 0 for zero weights
	et    [2][]float64 // e^(t0 − top_r)
	t0    [2]float64   // the least top_r
	base  [2]float64   // e^(lim + t0) of a chained sweep with D = H
	ok    [2]bool      // et holds normal numbers: the test may run on σ
	rhoOK [2]bool      // rho is finite: the side's columns may chain
}

// prepareChain sets ep's chained-sweep constants (rows and cols are the
// sides of orientation o, whose epoch ep has just been absorbed).
func (e *engine) prepareChain(ep *scalingEpoch, o int, rows, cols side) {
	kr := kern{simd: e.simd}
	ch := &ep.chain
	sides := [2]side{rows, cols}
	if o == 1 {
		sides = [2]side{cols, rows}
	}
	for s, sd := range sides {
		n := sd.n
		e.sc.h = grow(e.sc.h, n)
		arg := e.sc.h[:n] // exponents (kern.exp must not work in place)
		ch.rho[s] = grow(ch.rho[s], n)
		rho, ref := ch.rho[s], ep.ref[s][:n]
		for c, lw := range sd.logw[:n] {
			arg[c] = lw - ref[c]
		}
		kr.exp(rho, arg)
		ch.rhoOK[s] = true
		for c, r := range ref {
			switch {
			case r == math.Inf(-1):
				rho[c] = 0 // not a drift: colFactors skips it too
			case !(rho[c] <= math.MaxFloat64):
				ch.rhoOK[s] = false // a drift past any bound: these columns do not chain
			}
		}
		top := ep.top[s][:n]
		t0 := math.Inf(1)
		for _, t := range top {
			t0 = min(t0, t)
		}
		ch.t0[s] = t0
		for r, t := range top {
			arg[r] = t0 - t
		}
		ch.et[s] = grow(ch.et[s], n)
		et := ch.et[s]
		kr.exp(et, arg)
		ch.ok[s] = isFinite(t0) && kr.inRange(et, 0x1p-1022, 1)
		// The sweeps whose rows are side s have the other side's columns.
		ch.base[s] = math.Exp(e.sc.sweepLimit(ep, sides[1-s].n, 0, 0) + t0)
	}
}

// setWeights sets sc.w to the weights e^(log w) of the problem's sides p
// and q (those of its chained sweeps' column factors).
func (sc *scalingState) setWeights(kr kern, p, q side) {
	for s, sd := range [2]side{p, q} {
		sc.w[s] = grow(sc.w[s], sd.n)
		kr.exp(sc.w[s], sd.logw[:sd.n])
	}
}

// chainable reports whether the kernel sweep of orientation o may form its
// column factors from the pending sweep of the other orientation.
func (sc *scalingState) chainable(o int, c consts) bool {
	p := &sc.pend[1-o]
	return sc.lazy && p.ok && c.tau == 1 && sc.cur[o] == p.k && sc.epochs[p.k].chain.rhoOK[1-o]
}

// chainedFactors sets the column factors cf of the kernel sweep of
// orientation o on epoch ep from the pending sweep p of the other
// orientation and returns qmax = max_c w_c/σ_c and dmax = max_c ρ_c/σ_c
// (then H = log qmax − p.H and D = log dmax − p.H, as colFactors's), or
// false when they are not finite and positive.
func (e *engine) chainedFactors(ep *scalingEpoch, o int, cf []float64) (qmax, dmax float64, ok bool) {
	p := &e.sc.pend[1-o]
	nc := len(p.sig)
	cf = cf[:nc]
	sc := e.sc
	var inv []float64 // the reciprocals, for the backward pass of p's sweep
	if p.rec >= 0 {
		inv = sc.invHist[p.rec*sc.stride : p.rec*sc.stride+nc]
		sc.invOK[p.rec] = true
	} else {
		sc.inv = grow(sc.inv, nc)
		inv = sc.inv[:nc]
	}
	kr := kern{simd: e.simd}
	qmax, dmax = kr.chainFactors(cf, inv, p.sig, sc.w[1-o][:nc], ep.chain.rho[1-o][:nc])
	if !(qmax > 0 && qmax <= math.MaxFloat64 && dmax > 0 && dmax <= math.MaxFloat64) {
		return 0, 0, false
	}
	kr.scale(cf, 1/qmax)
	return qmax, dmax, true
}

// chainFactors sets inv[c] = v = 1/sig[c] and cf[c] = w[c]·v and returns
// the maxima, from 0, of cf[c] and rho[c]·v, on the AVX2 kernel when
// k.simd (the same bits). Every input must be finite and sig positive.
func (k kern) chainFactors(cf, inv, sig, w, rho []float64) (qmax, dmax float64) {
	n := len(sig)
	cf, inv, w, rho = cf[:n], inv[:n], w[:n], rho[:n]
	n4 := 0
	if k.simd {
		n4 = n &^ 3
		qmax, dmax = chainFactorsAVX2(cf[:n4], inv[:n4], sig[:n4], w[:n4], rho[:n4])
	}
	for c := n4; c < n; c++ {
		v := 1 / sig[c]
		inv[c] = v
		q := w[c] * v
		cf[c] = q
		qmax = max(qmax, q)
		dmax = max(dmax, rho[c]*v)
	}
	return qmax, dmax
}

// scale multiplies dst by a, vectorized when k.simd (bitwise equal).
func (k kern) scale(dst []float64, a float64) {
	n4 := 0
	if k.simd {
		n4 = len(dst) &^ 3
		scaleAVX2(dst[:n4], a)
	}
	for j := n4; j < len(dst); j++ {
		dst[j] *= a
	}
}

// minProd returns the least a[j]·b[j] (+Inf for none), vectorized when
// k.simd (bitwise equal); no product may be NaN.
func (k kern) minProd(a, b []float64) float64 {
	b = b[:len(a)]
	m := math.Inf(1)
	n4 := 0
	if k.simd {
		n4 = len(a) &^ 3
		m = minProdAVX2(a[:n4], b[:n4])
	}
	for j := n4; j < len(a); j++ {
		m = min(m, a[j]*b[j])
	}
	return m
}

// chainedTest reports whether every row sum of the kernel sweep of
// orientation o on ep passes the exactness test log σ_r ≥ top_r + lim, on
// the sums themselves, given thr = e^(lim + t0); false also when it cannot
// tell without logarithms. A slack of 2^-40 covers the rounding of the
// products.
func chainedTest(kr kern, ep *scalingEpoch, o int, sig []float64, thr float64) bool {
	ch := &ep.chain
	if !ch.ok[o] {
		return false
	}
	thr *= 1 + 0x1p-40
	if !(thr >= 0x1p-1022 && thr <= math.MaxFloat64) {
		return false
	}
	return kr.minProd(sig, ch.et[o]) >= thr
}

// materialize forms the potentials of the pending sweep of orientation o,
// if any.
func (e *engine) materialize(o int, c consts) {
	sc := e.sc
	p := &sc.pend[o]
	if !p.ok {
		return
	}
	p.ok = false
	ep := &sc.epochs[p.k]
	nr := len(p.sig)
	sc.plg = grow(sc.plg, nr) // not sc.lg: the failed sweep's, for finishRows
	lg := sc.plg[:nr]
	kr := kern{simd: e.simd}
	kr.log(lg, p.sig)
	kr.potentials(p.out[:nr], lg, ep.off[o][:nr], ep.top[o][:nr], -c.tau*c.eps, p.H, math.Inf(-1))
}

// flushPotentials forms the potentials of both pending sweeps and ends the
// chaining of solve.
func (e *engine) flushPotentials(c consts) {
	if e.sc == nil {
		return
	}
	e.materialize(0, c)
	e.materialize(1, c)
	e.sc.lazy = false
}
