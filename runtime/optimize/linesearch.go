package optimize

import "math"

// Line-search constants, Stan's LSOptions.
const (
	lsC1          = 1e-4  // sufficient decrease (Armijo) constant
	lsC2          = 0.9   // curvature constant of the strong Wolfe conditions
	lsMinAlpha    = 1e-12 // lower end of the bracket and of the cubic guess
	lsMaxIts      = 20    // expansions of the step before giving up
	lsMaxRestarts = 10    // consecutive rejected points before giving up
	lsMinRange    = 1e-16 // smallest bracket width in zoom, relative to max(1, |alpha|)
)

// lineSearch looks for a step length a along the descent direction p from
// x0 (objective f0, gradient g0) satisfying the strong Wolfe conditions
//
//	f(x0 + a p) <= f0 + c1 a p'g0   and   |p'g(x0 + a p)| <= c2 |p'g0|,
//
// starting from alpha, as Stan's WolfeLineSearch: the step grows tenfold
// until the minimum is bracketed, and the bracket is then narrowed by cubic
// interpolation (bisection every fifth try). A rejected point halves the
// step towards the last good one. On success x1 and g1 hold the new point
// and its gradient, and ok is true.
//
// Unlike Stan, the sufficient-decrease test of the expansion phase uses the
// trial step rather than the initial one, as Nocedal and Wright's
// Algorithm 3.5, and the zoom's smallest bracket is relative to the step so
// that it ends for large steps too (an unbounded objective).
func (e *evaluator) lineSearch(alpha float64, x0 []float64, f0 float64, g0, p, x1, g1 []float64) (a, f1 float64, ok bool, err error) {
	dfp := dot(g0, p)
	c1dfp, c2dfp := lsC1*dfp, lsC2*dfp
	a0, a1 := lsMinAlpha, alpha
	prevF, prevDFp := f0, dfp
	its, restarts := 0, 0
	for {
		if its >= lsMaxIts {
			return 0, 0, false, nil
		}
		axpy(x1, x0, a1, p)
		f, rej, err := e.eval(x1, g1)
		if err != nil {
			return 0, 0, false, err
		}
		if rej != nil {
			if restarts >= lsMaxRestarts {
				return 0, 0, false, nil
			}
			a1 = 0.5 * (a0 + a1)
			restarts++
			continue
		}
		restarts = 0
		dfp1 := dot(g1, p)
		if f > f0+a1*c1dfp || (f >= prevF && its > 0) {
			return e.zoom(x0, f0, c1dfp, c2dfp, p, bracketEnd{a0, prevF, prevDFp}, bracketEnd{a1, f, dfp1}, x1, g1)
		}
		if math.Abs(dfp1) <= -c2dfp {
			return a1, f, true, nil
		}
		if dfp1 >= 0 {
			return e.zoom(x0, f0, c1dfp, c2dfp, p, bracketEnd{a1, f, dfp1}, bracketEnd{a0, prevF, prevDFp}, x1, g1)
		}
		a0, prevF, prevDFp = a1, f, dfp1
		a1 *= 10
		its++
	}
}

// bracketEnd is one end of a line-search bracket: the step, the objective
// and the directional derivative there.
type bracketEnd struct{ a, f, dfp float64 }

// zoom narrows the bracket [lo, hi] (lo the end with the lower objective)
// until a step satisfies the strong Wolfe conditions, as Stan's WolfLSZoom.
func (e *evaluator) zoom(x0 []float64, f0, c1dfp, c2dfp float64, p []float64, lo, hi bracketEnd, x1, g1 []float64) (float64, float64, bool, error) {
	for it := 1; ; it++ {
		width := math.Abs(lo.a - hi.a)
		if width < lsMinRange*math.Max(1, math.Max(math.Abs(lo.a), math.Abs(hi.a))) {
			return 0, 0, false, nil
		}
		var a float64
		if it%5 == 0 {
			a = 0.5 * (lo.a + hi.a)
		} else {
			// The minimizer of the cubic interpolating both ends.
			d1 := lo.dfp + hi.dfp - 3*(lo.f-hi.f)/(lo.a-hi.a)
			d2 := math.Sqrt(d1*d1 - lo.dfp*hi.dfp)
			if hi.a < lo.a {
				d2 = -d2
			}
			a = hi.a - (hi.a-lo.a)*(hi.dfp+d2-d1)/(hi.dfp-lo.dfp+2*d2)
			left, right := math.Min(lo.a, hi.a), math.Max(lo.a, hi.a)
			if math.IsNaN(a) || math.IsInf(a, 0) || a < left+0.01*width || a > right-0.01*width {
				a = 0.5 * (lo.a + hi.a)
			}
		}
		var f float64
		for {
			axpy(x1, x0, a, p)
			var rej, err error
			f, rej, err = e.eval(x1, g1)
			if err != nil {
				return 0, 0, false, err
			}
			if rej == nil {
				break
			}
			left := math.Min(lo.a, hi.a)
			a = 0.5 * (a + left)
			if math.Abs(left-a) < lsMinRange*math.Max(1, math.Abs(left)) {
				return 0, 0, false, nil
			}
		}
		dfp := dot(g1, p)
		if f > f0+a*c1dfp || f >= lo.f {
			hi = bracketEnd{a, f, dfp}
			continue
		}
		if math.Abs(dfp) <= -c2dfp {
			return a, f, true, nil
		}
		if dfp*(hi.a-lo.a) >= 0 {
			hi = lo
		}
		lo = bracketEnd{a, f, dfp}
	}
}

// cubicMin returns the minimizer over [lo, hi] of the cubic c(x) with
// c(0) = 0, c'(0) = df0, c(x1) = f1 and c'(x1) = df1, comparing the ends and
// the stationary points inside (Stan's CubicInterp).
func cubicMin(df0, x1, f1, df1, lo, hi float64) float64 {
	c3 := (-12*f1 + 6*x1*(df0+df1)) / (x1 * x1 * x1)
	c2 := -(4*df0+2*df1)/x1 + 6*f1/(x1*x1)
	c1 := df0
	c := func(x float64) float64 { return x * (x*(x*c3/3+c2)/2 + c1) }
	best, bestX := c(lo), lo
	if v := c(hi); v < best {
		best, bestX = v, hi
	}
	disc := math.Sqrt(c2*c2 - 2*c1*c3)
	for _, s := range [2]float64{-(c2 + disc) / c3, -(c2 - disc) / c3} {
		if lo < s && s < hi {
			if v := c(s); v < best {
				best, bestX = v, s
			}
		}
	}
	return bestX
}
