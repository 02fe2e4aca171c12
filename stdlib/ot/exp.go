package ot

import "math"

// Constants of the exponential: Cody–Waite split of ln 2 (the high part has
// enough trailing zero bits that k·ln2Hi is exact for |k| < 2^20), and the
// Taylor coefficients 1/k! of degree 13. On the reduced range |r| ≤ ln2/2 the
// truncation error of the degree-13 polynomial is r^14/14! < 4.4e-18, below
// 2^-57 relative; the measured error of fastExp is 2 ulps (exp_test.go).
const (
	ln2Hi  = 6.93147180369123816490e-01
	ln2Lo  = 1.90821492927058770002e-10
	log2e  = 1.44269504088896338700e+00
	roundC = 0x1.8p52 // adding it rounds a float64 of magnitude < 2^51 to an integer

	// expLow is the smallest argument handled by the polynomial path; below
	// it the result is taken as 0. exp(-708) < 2^-1021: in a log-sum-exp with
	// the maximum term equal to 1, m such terms change the sum by less than
	// m·2^-1021, far below its last bit.
	expLow = -708.0
	// expHigh is the largest argument handled by the polynomial path; above
	// it math.Exp is called (the result overflows near 709.78).
	expHigh = 709.0

	c2  = 1.0 / 2
	c3  = 1.0 / 6
	c4  = 1.0 / 24
	c5  = 1.0 / 120
	c6  = 1.0 / 720
	c7  = 1.0 / 5040
	c8  = 1.0 / 40320
	c9  = 1.0 / 362880
	c10 = 1.0 / 3628800
	c11 = 1.0 / 39916800
	c12 = 1.0 / 479001600
	c13 = 1.0 / 6227020800
)

// fastExp returns e^x. It agrees with math.Exp to a few ulps on
// [expLow, expHigh], returns 0 below expLow (including −Inf), calls math.Exp
// above expHigh, and returns NaN for NaN.
func fastExp(x float64) float64 {
	if x < expLow {
		return 0
	}
	if x > expHigh {
		return math.Exp(x)
	}
	t := x*log2e + roundC
	k := t - roundC
	r := x - k*ln2Hi - k*ln2Lo
	p := poly13(r)
	ki := int64(math.Float64bits(t) - math.Float64bits(roundC))
	return p * math.Float64frombits(uint64(ki+1023)<<52)
}

// poly13 is the degree-13 Taylor polynomial of e^r, written as
// 1 + (r + r²·q(r)) so that the leading terms are added last and exactly
// rounded, with q evaluated by Estrin's scheme (short dependency chains).
func poly13(r float64) float64 {
	r2 := r * r
	r4 := r2 * r2
	r8 := r4 * r4
	p23 := c2 + c3*r
	p45 := c4 + c5*r
	p67 := c6 + c7*r
	p89 := c8 + c9*r
	p1011 := c10 + c11*r
	p1213 := c12 + c13*r
	q0 := p23 + p45*r2
	q1 := p67 + p89*r2
	q2 := p1011 + p1213*r2
	q := (q0 + q1*r4) + q2*r8
	return 1 + (r + r2*q)
}
