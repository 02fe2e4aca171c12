package ot

import "math"

// expCore is e^x for x in [expLow, expHigh] with no range checks.
func expCore(x float64) float64 {
	t := x*log2e + roundC
	k := t - roundC
	r := x - k*ln2Hi - k*ln2Lo
	ki := int64(math.Float64bits(t) - math.Float64bits(roundC))
	return poly13(r) * math.Float64frombits(uint64(ki+1023)<<52)
}

// expNonPos is e^x for x ≤ 0, returning 0 below expLow.
func expNonPos(x float64) float64 {
	if x < expLow {
		return 0
	}
	return expCore(x)
}

// argsRow writes buf[j] = u[j] − C(p, q_j)·invEps + shift for every column
// point q_j (rows of q, d coordinates each) and returns the maximum of buf.
// For d ≤ 2 each product is rounded before it is added (the explicit
// conversions forbid fused multiply-adds, which GOAMD64=v3 would emit), so
// that the AVX2 kernels reproduce it bit for bit.
func argsRow(buf, p, q, u []float64, invEps, shift float64) float64 {
	d := len(p)
	nc := len(u)
	buf = buf[:nc]
	switch d {
	case 1:
		p0 := p[0]
		q = q[:nc]
		m0, m1 := math.Inf(-1), math.Inf(-1)
		j := 0
		for ; j+1 < nc; j += 2 {
			d0 := p0 - q[j]
			d1 := p0 - q[j+1]
			v0 := u[j] - float64(float64(d0*d0)*invEps) + shift
			v1 := u[j+1] - float64(float64(d1*d1)*invEps) + shift
			buf[j], buf[j+1] = v0, v1
			m0 = max(m0, v0)
			m1 = max(m1, v1)
		}
		for ; j < nc; j++ {
			d0 := p0 - q[j]
			v := u[j] - float64(float64(d0*d0)*invEps) + shift
			buf[j] = v
			m0 = max(m0, v)
		}
		return max(m0, m1)
	case 2:
		p0, p1 := p[0], p[1]
		q = q[:2*nc]
		m0, m1 := math.Inf(-1), math.Inf(-1)
		j := 0
		for ; j+1 < nc; j += 2 {
			a0 := p0 - q[2*j]
			a1 := p1 - q[2*j+1]
			b0 := p0 - q[2*j+2]
			b1 := p1 - q[2*j+3]
			v0 := u[j] - float64((float64(a0*a0)+float64(a1*a1))*invEps) + shift
			v1 := u[j+1] - float64((float64(b0*b0)+float64(b1*b1))*invEps) + shift
			buf[j], buf[j+1] = v0, v1
			m0 = max(m0, v0)
			m1 = max(m1, v1)
		}
		for ; j < nc; j++ {
			a0 := p0 - q[2*j]
			a1 := p1 - q[2*j+1]
			v := u[j] - float64((float64(a0*a0)+float64(a1*a1))*invEps) + shift
			buf[j] = v
			m0 = max(m0, v)
		}
		return max(m0, m1)
	default:
		q = q[:d*nc]
		mx := math.Inf(-1)
		for j := range nc {
			qj := q[j*d : j*d+d]
			c := 0.0
			for k, pk := range p {
				t := pk - qj[k]
				c += t * t
			}
			v := u[j] - c*invEps + shift
			buf[j] = v
			mx = max(mx, v)
		}
		return mx
	}
}

// sumExpShift returns Σ_j e^(buf[j] − mx), with buf[j] ≤ mx, using four
// independent accumulators and the exponential of fastExp written inline.
// Arguments below expLow are clamped to expLow: such a term is below
// 2^-1021 while the sum is at least 1 (the maximum term), so it cannot
// change the sum unless m > 2^968.
func sumExpShift(buf []float64, mx float64) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+3 < len(buf); j += 4 {
		x0 := max(buf[j+0]-mx, expLow)
		t0 := x0*log2e + roundC
		k0 := t0 - roundC
		r0 := x0 - k0*ln2Hi - k0*ln2Lo
		sc0 := math.Float64frombits(uint64(int64(math.Float64bits(t0)-math.Float64bits(roundC))+1023) << 52)
		r20 := r0 * r0
		r40 := r20 * r20
		q0 := ((c2 + c3*r0) + (c4+c5*r0)*r20) + ((c6+c7*r0)+(c8+c9*r0)*r20)*r40 + ((c10+c11*r0)+(c12+c13*r0)*r20)*(r40*r40)
		s0 += (1 + (r0 + r20*q0)) * sc0
		x1 := max(buf[j+1]-mx, expLow)
		t1 := x1*log2e + roundC
		k1 := t1 - roundC
		r1 := x1 - k1*ln2Hi - k1*ln2Lo
		sc1 := math.Float64frombits(uint64(int64(math.Float64bits(t1)-math.Float64bits(roundC))+1023) << 52)
		r21 := r1 * r1
		r41 := r21 * r21
		q1 := ((c2 + c3*r1) + (c4+c5*r1)*r21) + ((c6+c7*r1)+(c8+c9*r1)*r21)*r41 + ((c10+c11*r1)+(c12+c13*r1)*r21)*(r41*r41)
		s1 += (1 + (r1 + r21*q1)) * sc1
		x2 := max(buf[j+2]-mx, expLow)
		t2 := x2*log2e + roundC
		k2 := t2 - roundC
		r2 := x2 - k2*ln2Hi - k2*ln2Lo
		sc2 := math.Float64frombits(uint64(int64(math.Float64bits(t2)-math.Float64bits(roundC))+1023) << 52)
		r22 := r2 * r2
		r42 := r22 * r22
		q2 := ((c2 + c3*r2) + (c4+c5*r2)*r22) + ((c6+c7*r2)+(c8+c9*r2)*r22)*r42 + ((c10+c11*r2)+(c12+c13*r2)*r22)*(r42*r42)
		s2 += (1 + (r2 + r22*q2)) * sc2
		x3 := max(buf[j+3]-mx, expLow)
		t3 := x3*log2e + roundC
		k3 := t3 - roundC
		r3 := x3 - k3*ln2Hi - k3*ln2Lo
		sc3 := math.Float64frombits(uint64(int64(math.Float64bits(t3)-math.Float64bits(roundC))+1023) << 52)
		r23 := r3 * r3
		r43 := r23 * r23
		q3 := ((c2 + c3*r3) + (c4+c5*r3)*r23) + ((c6+c7*r3)+(c8+c9*r3)*r23)*r43 + ((c10+c11*r3)+(c12+c13*r3)*r23)*(r43*r43)
		s3 += (1 + (r3 + r23*q3)) * sc3
	}
	for ; j < len(buf); j++ {
		s0 += expCore(max(buf[j]-mx, expLow))
	}
	return (s0 + s1) + (s2 + s3)
}

// weightedRow accumulates, for the row point p with weights
// e_j = e^(u[j] − C(p, q_j)·invEps + s) held in buf (already exponentiated)
// and row factor r:
//
//	rowSum        = Σ_j e_j                     (returned)
//	rowGrad[k]   += Σ_j e_j (p_k − q_jk)        (if rowGrad != nil)
//	colSum[j]    += r·e_j                       (if colSum != nil)
//	colGrad[j,k] += r·e_j (p_k − q_jk)          (if colGrad != nil)
func weightedRow(buf, p, q []float64, r float64, rowGrad, colSum, colGrad []float64) float64 {
	d := len(p)
	nc := len(buf)
	if rowGrad == nil && colGrad == nil {
		var s0, s1 float64
		if colSum == nil {
			for j := 0; j < nc; j++ {
				s0 += buf[j]
			}
			return s0 + s1
		}
		colSum = colSum[:nc]
		for j, e := range buf {
			s0 += e
			colSum[j] += r * e
		}
		return s0
	}
	if d == 1 {
		p0 := p[0]
		q = q[:nc]
		var s, g0 float64
		for j, e := range buf {
			a0 := p0 - q[j]
			s += e
			g0 += e * a0
			if colSum != nil {
				colSum[j] += r * e
			}
			if colGrad != nil {
				colGrad[j] += r * e * a0
			}
		}
		if rowGrad != nil {
			rowGrad[0] += g0
		}
		return s
	}
	if d == 2 {
		p0, p1 := p[0], p[1]
		q = q[:2*nc]
		var s, g0, g1 float64
		for j, e := range buf {
			a0 := p0 - q[2*j]
			a1 := p1 - q[2*j+1]
			s += e
			g0 += e * a0
			g1 += e * a1
			if colSum != nil {
				colSum[j] += r * e
			}
			if colGrad != nil {
				re := r * e
				colGrad[2*j] += re * a0
				colGrad[2*j+1] += re * a1
			}
		}
		if rowGrad != nil {
			rowGrad[0] += g0
			rowGrad[1] += g1
		}
		return s
	}
	var s float64
	for j, e := range buf {
		qj := q[j*d : j*d+d]
		s += e
		re := r * e
		if colSum != nil {
			colSum[j] += re
		}
		for k, pk := range p {
			a := pk - qj[k]
			if rowGrad != nil {
				rowGrad[k] += e * a
			}
			if colGrad != nil {
				colGrad[j*d+k] += re * a
			}
		}
	}
	return s
}

// expInto writes e^src[j] into dst[j]: 0 below expLow, math.Exp above
// expHigh (overflow) or for NaN, the inline fastExp in between; the results
// are fastExp's.
func expInto(dst, src []float64) {
	dst = dst[:len(src)]
	for j, v := range src {
		if v > expHigh || v != v {
			dst[j] = math.Exp(v)
			continue
		}
		x := max(v, expLow)
		t := x*log2e + roundC
		k := t - roundC
		r := x - k*ln2Hi - k*ln2Lo
		sc := math.Float64frombits(uint64(int64(math.Float64bits(t)-math.Float64bits(roundC))+1023) << 52)
		r2 := r * r
		r4 := r2 * r2
		q := ((c2 + c3*r) + (c4+c5*r)*r2) + ((c6+c7*r)+(c8+c9*r)*r2)*r4 + ((c10+c11*r)+(c12+c13*r)*r2)*(r4*r4)
		e := (1 + (r + r2*q)) * sc
		var keep uint64
		if v >= expLow {
			keep = ^uint64(0)
		}
		dst[j] = math.Float64frombits(math.Float64bits(e) & keep)
	}
}

// Coefficients of the logarithm's polynomial (fdlibm's, as Go's math.Log).
const (
	logL1 = 6.666666666666735130e-01
	logL2 = 3.999999999940941908e-01
	logL3 = 2.857142874366239149e-01
	logL4 = 2.222219843214978396e-01
	logL5 = 1.818357216161805012e-01
	logL6 = 1.531383769920937332e-01
	logL7 = 1.479819860511658591e-01
)

// logPos is the natural logarithm of a finite positive normal x by the
// algorithm of Go's pure-Go math.Log (fdlibm: x = 2^k·(1+f) with 1+f in
// [√2/2, √2), s = f/(2+f), a degree-14 polynomial in s), with every
// product rounded before it is added (the explicit conversions forbid
// fused multiply-adds), so that logAVX2 reproduces it bit for bit. Its
// error is below one ulp.
func logPos(x float64) float64 {
	b := math.Float64bits(x)
	e := int64(b >> 52)
	f1 := math.Float64frombits(b&(1<<52-1) | 0x3fe<<52)
	if f1 < math.Sqrt2/2 {
		f1 += f1
		e--
	}
	k := float64(e - 1022)
	f := f1 - 1
	s := f / (2 + f)
	s2 := s * s
	s4 := s2 * s2
	t1 := float64(s2 * (logL1 + float64(s4*(logL3+float64(s4*(logL5+float64(s4*logL7)))))))
	t2 := float64(s4 * (logL2 + float64(s4*(logL4+float64(s4*logL6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}

// logInto writes log(src[j]) into dst[j]: logPos for finite positive
// normal numbers, math.Log for the others (zero, subnormals, negative
// numbers, infinities and NaN).
func logInto(dst, src []float64) {
	dst = dst[:len(src)]
	for j, x := range src {
		if x >= 0x1p-1022 && x <= math.MaxFloat64 {
			dst[j] = logPos(x)
		} else {
			dst[j] = math.Log(x)
		}
	}
}

// kernelSums sets sums[i] = Σ_j ev[j]·ekb[m−1−j+i], m = len(ev), adding
// the terms in the order of j, each product rounded before it is added (so
// that kernelSumsAVX2 reproduces it bit for bit). With ekb = tab[L−m:] for
// a table holding a symmetric kernel at index L−1+δ, that is the product of
// the kernel's Toeplitz matrix with ev. len(ekb) must be at least
// m + len(sums) − 1.
func kernelSums(sums, ev, ekb []float64) {
	m := len(ev)
	for i := range sums {
		row := ekb[i : i+m]
		s := 0.0
		for j, e := range ev {
			s += float64(e * row[m-1-j])
		}
		sums[i] = s
	}
}

// kern selects the kernels: the AVX2 + FMA assembly (simd) or pure Go. The
// pure-Go kernels are the reference the assembly is tested against.
type kern struct {
	simd    bool
	noPrune bool // disable pruning (for measurements and tests)
}

// Pruning of the forward sum (SIMD path). A group of four terms is skipped
// when every x_j = buf[j] − mx is below pruneBelow. The sum has a term equal
// to 1 (the maximum), so it is ≥ 1 and half its last bit is ≥ 2^-53. The
// skipped terms add up to less than m·e^pruneBelow = m·1.9e-22, below 2^-53
// as long as m ≤ pruneMaxLen = 2^19: the pruned sum differs from the full
// one by less than half an ulp (one more rounding). Longer rows are not
// pruned. Only the forward log-sum-exp is pruned: a column sum of the
// backward pass may consist of tiny terms only, so there no such bound holds.
const (
	pruneBelow  = -50.0
	pruneMaxLen = 1 << 19
)

// sumExp is sumExpShift, vectorized (and pruned) when k.simd.
func (k kern) sumExp(buf []float64, mx float64) float64 {
	thr := math.Inf(-1)
	if !k.noPrune && len(buf) <= pruneMaxLen {
		thr = pruneBelow
	}
	return k.sumExpThr(buf, mx, thr)
}

// sumExpThr is sumExpShift, vectorized when k.simd, skipping the groups of
// four terms whose buf[j] − mx are all below thr (≤ 0).
func (k kern) sumExpThr(buf []float64, mx, thr float64) float64 {
	if !k.simd || len(buf) < 4 {
		return sumExpShift(buf, mx)
	}
	n4 := len(buf) &^ 3
	s := sumExpAVX2(buf[:n4], mx, thr)
	if n4 < len(buf) {
		s += sumExpShift(buf[n4:], mx)
	}
	return s
}

// args is argsRow, vectorized for d = 2 when k.simd (bitwise equal).
func (k kern) args(buf, p, q, u []float64, invEps, shift float64) float64 {
	d := len(p)
	if !k.simd || d > 2 || len(u) < 4 {
		return argsRow(buf, p, q, u, invEps, shift)
	}
	n := len(u)
	n4 := n &^ 3
	var mx float64
	if d == 2 {
		mx = argsMax2AVX2(buf[:n4], q[:2*n4], u[:n4], p[0], p[1], invEps, shift)
	} else {
		mx = argsMax1AVX2(buf[:n4], q[:n4], u[:n4], p[0], invEps, shift)
	}
	if n4 < n {
		mx = max(mx, argsRow(buf[n4:n], p, q[d*n4:d*n], u[n4:], invEps, shift))
	}
	return mx
}

// subMax writes buf[j] = v[j] − kt[j] and returns the maximum (NaN if an
// element is NaN).
func (k kern) subMax(buf, v, kt []float64) float64 {
	n := len(v)
	buf, kt = buf[:n], kt[:n]
	n4 := 0
	mx := math.Inf(-1)
	if k.simd && n >= 4 {
		n4 = n &^ 3
		mx = subMaxAVX2(buf[:n4], v[:n4], kt[:n4])
	}
	for j := n4; j < n; j++ {
		a := v[j] - kt[j]
		buf[j] = a
		mx = max(mx, a)
	}
	return mx
}

// exp is expInto, vectorized when k.simd.
func (k kern) exp(dst, src []float64) {
	if !k.simd || len(src) < 4 {
		expInto(dst, src)
		return
	}
	n4 := len(src) &^ 3
	if expAVX2(dst[:n4], src[:n4]) {
		for j, v := range src[:n4] {
			if !(v <= expHigh) {
				dst[j] = math.Exp(v)
			}
		}
	}
	if n4 < len(src) {
		expInto(dst[n4:], src[n4:])
	}
}

// expShift writes e^(src[j] − shift) into dst[j] as exp does e^x of the
// differences (rounded first), vectorized when k.simd; dst must not
// overlap src.
func (k kern) expShift(dst, src []float64, shift float64) {
	n4 := 0
	if k.simd {
		n4 = len(src) &^ 3
		if expShiftAVX2(dst[:n4], src[:n4], shift) {
			for j, v := range src[:n4] {
				if x := v - shift; !(x <= expHigh) {
					dst[j] = math.Exp(x)
				}
			}
		}
	}
	tail := dst[n4:len(src)]
	for j, v := range src[n4:] {
		tail[j] = v - shift
	}
	expInto(tail, tail)
}

// mulAdd writes x[j]·a + b[j] into dst[j], vectorized when k.simd
// (bitwise equal).
func (k kern) mulAdd(dst, x []float64, a float64, b []float64) {
	n := len(x)
	dst, b = dst[:n], b[:n]
	n4 := 0
	if k.simd {
		n4 = n &^ 3
		mulAddAVX2(dst[:n4], x[:n4], a, b[:n4])
	}
	for j := n4; j < n; j++ {
		dst[j] = x[j]*a + b[j]
	}
}

// addScaled adds a·src[j] to dst[j] (each product rounded, then the sum),
// vectorized when k.simd (bitwise equal).
func (k kern) addScaled(dst, src []float64, a float64) {
	dst = dst[:len(src)]
	n4 := 0
	if k.simd {
		n4 = len(src) &^ 3
		addScaledAVX2(dst[:n4], src[:n4], a)
	}
	for j, v := range src[n4:] {
		dst[n4+j] += a * v
	}
}

// div writes a[j] / b[j] into dst[j], vectorized when k.simd.
func (k kern) div(dst, a, b []float64) {
	k.binary(dst, a, b, divAVX2, func(x, y float64) float64 { return x / y })
}

// mul writes a[j]·b[j] into dst[j], vectorized when k.simd (bitwise
// equal).
func (k kern) mul(dst, a, b []float64) {
	k.binary(dst, a, b, mulAVX2, func(x, y float64) float64 { return x * y })
}

// binary writes op(a[j], b[j]) into dst[j], the first len(a) &^ 3 by the
// AVX2 kernel asm when k.simd (which must compute op's bits).
func (k kern) binary(dst, a, b []float64, asm func(dst, a, b []float64), op func(x, y float64) float64) {
	n := len(a)
	dst, b = dst[:n], b[:n]
	n4 := 0
	if k.simd {
		n4 = n &^ 3
		asm(dst[:n4], a[:n4], b[:n4])
	}
	for j := n4; j < n; j++ {
		dst[j] = op(a[j], b[j])
	}
}

// inRange reports whether lo ≤ s[j] ≤ hi for every j (false where one is
// NaN), vectorized when k.simd.
func (k kern) inRange(s []float64, lo, hi float64) bool {
	n4 := 0
	if k.simd {
		n4 = len(s) &^ 3
		if !inRangeAVX2(s[:n4], lo, hi) {
			return false
		}
	}
	for _, v := range s[n4:] {
		if !(v >= lo && v <= hi) {
			return false
		}
	}
	return true
}

// potentials is a kernel sweep's exactness test and outputs: it reports
// false, leaving out unchanged, when some lg[i] < top[i] + lim, and
// otherwise sets out[i] = −scale·off[i] + scale·(H + lg[i]) with the first
// product formed exactly (its fused residual), so that out rounds once at
// the potential's magnitude; vectorized when k.simd (bitwise equal).
func (k kern) potentials(out, lg, off, top []float64, scale, H, lim float64) bool {
	n := len(lg)
	out, off, top = out[:n], off[:n], top[:n]
	n4 := 0
	if k.simd {
		n4 = n &^ 3
	}
	for i := n4; i < n; i++ {
		if lg[i] < top[i]+lim {
			return false
		}
	}
	if n4 > 0 && !potentialsAVX2(out[:n4], lg[:n4], off[:n4], top[:n4], -scale, scale, H, lim) {
		return false
	}
	for i := n4; i < n; i++ {
		out[i] = potential(scale, off[i], H, lg[i])
	}
	return true
}

// potential is a kernel sweep's output −scale·off + scale·(H + lg), the
// first product formed exactly (its fused residual) so that the result
// rounds once at the potential's magnitude (potentialsAVX2's bits).
func potential(scale, off, H, lg float64) float64 {
	p := -scale * off
	r := math.FMA(-scale, off, -p)
	return p + (r + scale*(H+lg))
}

// kernelSums is kernelSums, vectorized when k.simd (bitwise equal).
func (k kern) kernelSums(sums, ev, ekb []float64) {
	n4 := len(sums) &^ 3
	if !k.simd || n4 == 0 || len(ev) == 0 {
		kernelSums(sums, ev, ekb)
		return
	}
	_ = ekb[len(ev)+len(sums)-2] // the kernel reads up to here
	kernelSumsAVX2(sums[:n4], ev, ekb)
	if n4 < len(sums) {
		kernelSums(sums[n4:], ev, ekb[n4:])
	}
}

// log is logInto, vectorized when k.simd (bitwise equal).
func (k kern) log(dst, src []float64) {
	if !k.simd || len(src) < 4 {
		logInto(dst, src)
		return
	}
	n4 := len(src) &^ 3
	if logAVX2(dst[:n4], src[:n4]) {
		logInto(dst[:n4], src[:n4])
	}
	if n4 < len(src) {
		logInto(dst[n4:], src[n4:])
	}
}

// lseRow returns LSE_j(u[j] − C(p, q_j)·invEps), max-shifted.
func (k kern) lseRow(buf, p, q, u []float64, invEps float64) float64 {
	mx := k.args(buf, p, q, u, invEps, 0)
	if math.IsInf(mx, 0) || math.IsNaN(mx) {
		return mx
	}
	return mx + math.Log(k.sumExp(buf[:len(u)], mx))
}

// weighted is weightedRow, vectorized for d = 2 when k.simd.
func (k kern) weighted(buf, p, q []float64, r float64, rowGrad, colSum, colGrad []float64) float64 {
	nc := len(buf)
	if !k.simd || len(p) != 2 || nc < 4 {
		return weightedRow(buf, p, q, r, rowGrad, colSum, colGrad)
	}
	n4 := nc &^ 3
	mode, cs, cg := vecAccumulators(n4, 2, colSum, colGrad)
	var sums [3]float64
	weighted2AVX2(buf[:n4], q[:2*n4], cs, cg, p[0], p[1], r, mode, &sums)
	addRow(rowGrad, sums[1:])
	return sums[0] + weightedTail(buf, p, q, r, rowGrad, colSum, colGrad, n4)
}

// expWeighted is k.exp followed by k.weighted, fused into one pass over the
// arguments in args when k.simd, d ≤ 2 and mx = max(args) ≤ expHigh (so no
// argument needs math.Exp). ebuf is scratch for the other cases.
func (k kern) expWeighted(args, ebuf []float64, mx float64, p, q []float64, r float64, rowGrad, colSum, colGrad []float64) float64 {
	nc := len(args)
	d := len(p)
	if !k.simd || d > 2 || nc < 4 || !(mx <= expHigh) {
		k.exp(ebuf[:nc], args)
		return k.weighted(ebuf[:nc], p, q, r, rowGrad, colSum, colGrad)
	}
	n4 := nc &^ 3
	mode, cs, cg := vecAccumulators(n4, d, colSum, colGrad)
	var sums [3]float64
	if d == 1 {
		var s1 [2]float64
		expWeighted1AVX2(args[:n4], q[:n4], cs, cg, p[0], r, mode, &s1)
		sums[0], sums[1] = s1[0], s1[1]
	} else {
		expWeighted2AVX2(args[:n4], q[:2*n4], cs, cg, p[0], p[1], r, mode, &sums)
	}
	addRow(rowGrad, sums[1:1+d])
	if n4 == nc {
		return sums[0]
	}
	e := ebuf[n4:nc]
	expInto(e, args[n4:])
	return sums[0] + weightedTail(ebuf[:nc], p, q, r, rowGrad, colSum, colGrad, n4)
}

// vecAccumulators returns the mode of the weighted vector kernels (bit 0:
// column sums, bit 1: column gradients) and the accumulators of the first
// n4 points of dimension d (nil when not wanted).
func vecAccumulators(n4, d int, colSum, colGrad []float64) (mode int, cs, cg []float64) {
	if colSum != nil {
		mode |= 1
		cs = colSum[:n4]
	}
	if colGrad != nil {
		mode |= 2
		cg = colGrad[:d*n4]
	}
	return mode, cs, cg
}

// weightedTail is weightedRow on the weights e[n4:] of a row whose first n4
// columns a vector kernel did.
func weightedTail(e, p, q []float64, r float64, rowGrad, colSum, colGrad []float64, n4 int) float64 {
	nc, d := len(e), len(p)
	if n4 == nc {
		return 0
	}
	var csT, cgT []float64
	if colSum != nil {
		csT = colSum[n4:nc]
	}
	if colGrad != nil {
		cgT = colGrad[d*n4 : d*nc]
	}
	return weightedRow(e[n4:], p, q[d*n4:d*nc], r, rowGrad, csT, cgT)
}

// addRow adds v to dst element by element; nothing when dst is nil.
func addRow(dst, v []float64) {
	for c := range dst {
		dst[c] += v[c]
	}
}
