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
			v0 := u[j] - d0*d0*invEps + shift
			v1 := u[j+1] - d1*d1*invEps + shift
			buf[j], buf[j+1] = v0, v1
			m0 = max(m0, v0)
			m1 = max(m1, v1)
		}
		for ; j < nc; j++ {
			d0 := p0 - q[j]
			v := u[j] - d0*d0*invEps + shift
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
			v0 := u[j] - (a0*a0+a1*a1)*invEps + shift
			v1 := u[j+1] - (b0*b0+b1*b1)*invEps + shift
			buf[j], buf[j+1] = v0, v1
			m0 = max(m0, v0)
			m1 = max(m1, v1)
		}
		for ; j < nc; j++ {
			a0 := p0 - q[2*j]
			a1 := p1 - q[2*j+1]
			v := u[j] - (a0*a0+a1*a1)*invEps + shift
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
// independent accumulators.
func sumExpShift(buf []float64, mx float64) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+3 < len(buf); j += 4 {
		s0 += expNonPos(buf[j] - mx)
		s1 += expNonPos(buf[j+1] - mx)
		s2 += expNonPos(buf[j+2] - mx)
		s3 += expNonPos(buf[j+3] - mx)
	}
	for ; j < len(buf); j++ {
		s0 += expNonPos(buf[j] - mx)
	}
	return (s0 + s1) + (s2 + s3)
}

// expInPlace replaces buf[j] by e^buf[j] (arguments above expHigh go through
// math.Exp, arguments below expLow give 0).
func expInPlace(buf []float64) {
	for j, v := range buf {
		if v < expLow {
			buf[j] = 0
		} else if v > expHigh {
			buf[j] = math.Exp(v)
		} else {
			buf[j] = expCore(v)
		}
	}
}

// lseRow returns LSE_j(u[j] − C(p, q_j)·invEps), max-shifted.
func lseRow(buf, p, q, u []float64, invEps float64) float64 {
	mx := argsRow(buf, p, q, u, invEps, 0)
	if math.IsInf(mx, 0) || math.IsNaN(mx) {
		return mx
	}
	return mx + math.Log(sumExpShift(buf[:len(u)], mx))
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
