package dist

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mathext"
)

// Argument specifications shared by the continuous families.
var (
	yAny     = argSpec{"y", "random variable", notNaN}
	yFinite  = argSpec{"y", "random variable", finite}
	yNonneg  = argSpec{"y", "random variable", nonnegative}
	muLoc    = argSpec{"mu", "location", finite}
	sigScale = argSpec{"sigma", "scale", positiveFinite}
)

// locScale turns the log cdf g of a standard variate z and its derivative
// into the log cdf of y = mu + sigma z with partials for (y, mu, sigma).
func locScale(g func(z float64) (float64, float64)) func(x vec) (float64, vec) {
	return func(x vec) (float64, vec) {
		s := x[2]
		z := (x[0] - x[1]) / s
		v, gz := g(z)
		return v, vec{gz / s, -gz / s, -gz * z / s}
	}
}

// mirror returns the log ccdf of a symmetric standard variate from its
// log cdf: log P(Z > z) = log P(Z ≤ -z).
func mirror(g func(z float64) (float64, float64)) func(z float64) (float64, float64) {
	return func(z float64) (float64, float64) {
		v, d := g(-z)
		return v, -d
	}
}

func stdNormalLcdf(z float64) (float64, float64) { return logPhi(z), logPhiDeriv(z) }

func cauchyLcdf(z float64) (float64, float64) {
	var f float64
	if z < -1 {
		f = math.Atan(-1/z) / math.Pi // accurate in the lower tail
	} else {
		f = 0.5 + math.Atan(z)/math.Pi
	}
	return math.Log(f), 1 / (math.Pi * (1 + z*z) * f)
}

func laplaceLcdf(z float64) (float64, float64) {
	if z < 0 {
		return z - ln2, 1
	}
	h := 0.5 * math.Exp(-z)
	return math.Log1p(-h), h / (1 - h)
}

func logisticLcdf(z float64) (float64, float64) { return -log1pExp(-z), 1 - invLogit(z) }

// studentTLcdf returns log F(t; nu) for the standard Student-t and its
// partials with respect to t and nu.
func studentTLcdf(t, nu float64) (v, dt, dnu float64) {
	t2 := t * t
	x := nu / (nu + t2)
	a, b := nu/2, 0.5
	half := 0.5 * regIncBeta(a, b, x) // P(T ≤ -|t|)
	var f float64
	if t < 0 {
		f = half
	} else {
		f = 1 - half
	}
	v = math.Log(f)
	lpdf := lgamma((nu+1)/2) - lgamma(nu/2) - 0.5*math.Log(nu) - 0.5*logPi - (nu+1)/2*math.Log1p(t2/nu)
	dt = math.Exp(lpdf - v)
	// d half/d nu = ½ (∂I/∂a · ½ + ∂I/∂x · dx/dnu)
	dIa, _ := incBetaDerivs(a, b, x)
	dIx := math.Exp((a-1)*math.Log(x) + (b-1)*math.Log1p(-x) - mathext.Lbeta(a, b))
	if t2 == 0 {
		dIx = 0
	}
	dhalf := 0.5 * (0.5*dIa + dIx*t2/((nu+t2)*(nu+t2)))
	if t < 0 {
		dnu = dhalf / f
	} else {
		dnu = -dhalf / f
	}
	return v, dt, dnu
}

// gammaLcdf returns log P(a, x) or log Q(a, x) (upper) with partials with
// respect to a and x.
func gammaLcdf(a, x float64, upper bool) (v, da, dx float64) {
	if x <= 0 {
		if upper {
			return 0, 0, 0
		}
		return math.Inf(-1), 0, 0
	}
	dPa := gammaPDerivA(a, x)
	dPx := math.Exp((a-1)*math.Log(x) - x - lgamma(a))
	if upper {
		q := gammaQ(a, x)
		return math.Log(q), -dPa / q, -dPx / q
	}
	p := gammaP(a, x)
	return math.Log(p), dPa / p, dPx / p
}

// betaLcdf returns log I_y(a, b) (or log(1 - I_y(a, b)) when upper) with
// partials with respect to y, a and b.
func betaLcdf(y, a, b float64, upper bool) (float64, vec) {
	switch {
	case y <= 0 && upper, y >= 1 && !upper:
		return 0, vec{}
	case y <= 0, y >= 1:
		return math.Inf(-1), vec{}
	}
	var f float64
	if upper {
		f = regIncBeta(b, a, 1-y)
	} else {
		f = regIncBeta(a, b, y)
	}
	pdf := math.Exp((a-1)*math.Log(y) + (b-1)*math.Log1p(-y) - mathext.Lbeta(a, b))
	da, db := incBetaDerivs(a, b, y)
	if upper {
		pdf, da, db = -pdf, -da, -db
	}
	return math.Log(f), vec{pdf / f, da / f, db / f}
}

// stdGamma draws from Gamma(a, 1) by Marsaglia and Tsang's method, with
// the boost U^(1/a) for a < 1.
func stdGamma(r *rand.Rand, a float64) float64 {
	if a < 1 {
		u := r.Float64()
		return stdGamma(r, a+1) * math.Pow(u, 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		var x, v float64
		for {
			x = r.NormFloat64()
			v = 1 + c*x
			if v > 0 {
				break
			}
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// openUnit draws from the open interval (0, 1).
func openUnit(r *rand.Rand) float64 {
	for {
		if u := r.Float64(); u > 0 {
			return u
		}
	}
}

func continuousFamilies() []*univariate {
	nu := argSpec{"nu", "degrees of freedom", positiveFinite}
	shapeA := argSpec{"alpha", "shape", positiveFinite}
	rateB := argSpec{"beta", "inverse scale", positiveFinite}
	inf := math.Inf(-1)
	return []*univariate{
		{
			name: "normal", args: []argSpec{yAny, muLoc, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, mu, s := x[0], x[1], x[2]
				z := (y - mu) / s
				lp := 0.0
				if k.has(a0 | a1 | a2) {
					lp -= 0.5 * z * z
				}
				if k.has(a2) {
					lp -= math.Log(s)
				}
				if k.has(0) {
					lp -= logSqrt2Pi
				}
				return lp, vec{-z / s, z / s, (z*z - 1) / s}
			},
			fastNormal: true,
			lcdf:       locScale(stdNormalLcdf),
			lccdf:      locScale(mirror(stdNormalLcdf)),
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return p[0] + p[1]*r.NormFloat64(), nil
			},
		},
		{
			name: "std_normal", args: []argSpec{yAny},
			lp: func(x vec, k keep) (float64, vec) {
				lp := 0.0
				if k.has(a0) {
					lp -= 0.5 * x[0] * x[0]
				}
				if k.has(0) {
					lp -= logSqrt2Pi
				}
				return lp, vec{-x[0]}
			},
			lcdf: func(x vec) (float64, vec) {
				v, d := stdNormalLcdf(x[0])
				return v, vec{d}
			},
			lccdf: func(x vec) (float64, vec) {
				v, d := stdNormalLcdf(-x[0])
				return v, vec{-d}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return r.NormFloat64(), nil },
		},
		{
			name: "student_t", args: []argSpec{yAny, nu, muLoc, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, nu, mu, s := x[0], x[1], x[2], x[3]
				z := (y - mu) / s
				q := nu + z*z
				lp := 0.0
				if k.has(a1) {
					lp += lgamma((nu+1)/2) - lgamma(nu/2) - 0.5*math.Log(nu)
				}
				if k.has(0) {
					lp -= 0.5 * logPi
				}
				if k.has(a3) {
					lp -= math.Log(s)
				}
				if k.has(a0 | a1 | a2 | a3) {
					lp -= (nu + 1) / 2 * math.Log1p(z*z/nu)
				}
				dy := -(nu + 1) * z / (s * q)
				dnu := 0.5*digamma((nu+1)/2) - 0.5*digamma(nu/2) - 0.5/nu -
					0.5*math.Log1p(z*z/nu) + (nu+1)*z*z/(2*nu*q)
				ds := -1/s + (nu+1)*z*z/(s*q)
				return lp, vec{dy, dnu, -dy, ds}
			},
			lcdf: func(x vec) (float64, vec) {
				s := x[3]
				z := (x[0] - x[2]) / s
				v, dt, dnu := studentTLcdf(z, x[1])
				return v, vec{dt / s, dnu, -dt / s, -dt * z / s}
			},
			lccdf: func(x vec) (float64, vec) {
				s := x[3]
				z := (x[0] - x[2]) / s
				v, dt, dnu := studentTLcdf(-z, x[1])
				return v, vec{-dt / s, dnu, dt / s, dt * z / s}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				chi2 := 2 * stdGamma(r, p[0]/2)
				return p[1] + p[2]*r.NormFloat64()/math.Sqrt(chi2/p[0]), nil
			},
		},
		{
			name: "cauchy", args: []argSpec{yAny, muLoc, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, mu, s := x[0], x[1], x[2]
				z := (y - mu) / s
				lp := 0.0
				if k.has(0) {
					lp -= logPi
				}
				if k.has(a2) {
					lp -= math.Log(s)
				}
				if k.has(a0 | a1 | a2) {
					lp -= math.Log1p(z * z)
				}
				g := 2 * z / (s * (1 + z*z))
				return lp, vec{-g, g, -1/s + g*z}
			},
			lcdf:  locScale(cauchyLcdf),
			lccdf: locScale(mirror(cauchyLcdf)),
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return p[0] + p[1]*math.Tan(math.Pi*(openUnit(r)-0.5)), nil
			},
		},
		{
			name: "double_exponential", args: []argSpec{yFinite, muLoc, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, mu, s := x[0], x[1], x[2]
				lp := 0.0
				if k.has(0) {
					lp -= ln2
				}
				if k.has(a2) {
					lp -= math.Log(s)
				}
				if k.has(a0 | a1 | a2) {
					lp -= math.Abs(y-mu) / s
				}
				sign := 0.0
				if y > mu {
					sign = 1
				} else if y < mu {
					sign = -1
				}
				return lp, vec{-sign / s, sign / s, -1/s + math.Abs(y-mu)/(s*s)}
			},
			lcdf:  locScale(laplaceLcdf),
			lccdf: locScale(mirror(laplaceLcdf)),
			rng: func(r *rand.Rand, p vec) (float64, error) {
				u := openUnit(r) - 0.5
				if u < 0 {
					return p[0] + p[1]*math.Log1p(2*u), nil
				}
				return p[0] - p[1]*math.Log1p(-2*u), nil
			},
		},
		{
			name: "logistic", args: []argSpec{yFinite, muLoc, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, mu, s := x[0], x[1], x[2]
				z := (y - mu) / s
				lp := 0.0
				if k.has(a0 | a1 | a2) {
					lp += -z - 2*log1pExp(-z)
				}
				if k.has(a2) {
					lp -= math.Log(s)
				}
				g := (1 - 2*invLogit(z)) / s // d/dy
				return lp, vec{g, -g, -1/s - g*z}
			},
			lcdf:  locScale(logisticLcdf),
			lccdf: locScale(mirror(logisticLcdf)),
			rng: func(r *rand.Rand, p vec) (float64, error) {
				u := openUnit(r)
				return p[0] + p[1]*math.Log(u/(1-u)), nil
			},
		},
		{
			name: "lognormal", args: []argSpec{yNonneg, muLoc, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, mu, s := x[0], x[1], x[2]
				if y == 0 {
					return inf, vec{}
				}
				ly := math.Log(y)
				z := (ly - mu) / s
				lp := 0.0
				if k.has(0) {
					lp -= logSqrt2Pi
				}
				if k.has(a2) {
					lp -= math.Log(s)
				}
				if k.has(a0) {
					lp -= ly
				}
				if k.has(a0 | a1 | a2) {
					lp -= 0.5 * z * z
				}
				return lp, vec{-(1 + z/s) / y, z / s, (z*z - 1) / s}
			},
			lcdf: func(x vec) (float64, vec) {
				if x[0] == 0 {
					return inf, vec{}
				}
				s := x[2]
				z := (math.Log(x[0]) - x[1]) / s
				g := logPhiDeriv(z)
				return logPhi(z), vec{g / (s * x[0]), -g / s, -g * z / s}
			},
			lccdf: func(x vec) (float64, vec) {
				if x[0] == 0 {
					return 0, vec{}
				}
				s := x[2]
				z := (math.Log(x[0]) - x[1]) / s
				g := -logPhiDeriv(-z)
				return logPhi(-z), vec{g / (s * x[0]), -g / s, -g * z / s}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return math.Exp(p[0] + p[1]*r.NormFloat64()), nil
			},
		},
		{
			name: "exponential", args: []argSpec{yNonneg, rateB},
			lp: func(x vec, k keep) (float64, vec) {
				y, b := x[0], x[1]
				lp := 0.0
				if k.has(a1) {
					lp += math.Log(b)
				}
				if k.has(a0 | a1) {
					lp -= b * y
				}
				return lp, vec{-b, 1/b - y}
			},
			lcdf: func(x vec) (float64, vec) {
				y, b := x[0], x[1]
				if y == 0 {
					return inf, vec{}
				}
				e := math.Expm1(b * y)
				return log1mExp(-b * y), vec{b / e, y / e}
			},
			lccdf: func(x vec) (float64, vec) {
				return -x[1] * x[0], vec{-x[1], -x[0]}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return r.ExpFloat64() / p[0], nil },
		},
		{
			name: "gamma", args: []argSpec{yAny, shapeA, rateB},
			lp: func(x vec, k keep) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				if y < 0 {
					return inf, vec{}
				}
				ly := math.Log(y)
				lp := 0.0
				if k.has(a1) {
					lp -= lgamma(a)
				}
				if k.has(a1 | a2) {
					lp += a * math.Log(b)
				}
				if k.has(a0 | a1) {
					lp += multiplyLog(a-1, y)
				}
				if k.has(a0 | a2) {
					lp -= b * y
				}
				return lp, vec{safeDiv(a-1, y) - b, -digamma(a) + math.Log(b) + ly, a/b - y}
			},
			lcdf: func(x vec) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				v, da, dx := gammaLcdf(a, b*y, false)
				return v, vec{dx * b, da, dx * y}
			},
			lccdf: func(x vec) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				v, da, dx := gammaLcdf(a, b*y, true)
				return v, vec{dx * b, da, dx * y}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return stdGamma(r, p[0]) / p[1], nil },
		},
		{
			name: "inv_gamma", args: []argSpec{yAny, shapeA, argSpec{"beta", "scale", positiveFinite}},
			lp: func(x vec, k keep) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				if y <= 0 {
					return inf, vec{}
				}
				ly := math.Log(y)
				lp := 0.0
				if k.has(a1) {
					lp -= lgamma(a)
				}
				if k.has(a1 | a2) {
					lp += a * math.Log(b)
				}
				if k.has(a0 | a1) {
					lp -= (a + 1) * ly
				}
				if k.has(a0 | a2) {
					lp -= b / y
				}
				return lp, vec{-(a+1)/y + b/(y*y), -digamma(a) + math.Log(b) - ly, a/b - 1/y}
			},
			// F(y) = Q(alpha, beta/y).
			lcdf: func(x vec) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				if y <= 0 {
					return inf, vec{}
				}
				v, da, dx := gammaLcdf(a, b/y, true)
				return v, vec{-dx * b / (y * y), da, dx / y}
			},
			lccdf: func(x vec) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				if y <= 0 {
					return 0, vec{}
				}
				v, da, dx := gammaLcdf(a, b/y, false)
				return v, vec{-dx * b / (y * y), da, dx / y}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return p[1] / stdGamma(r, p[0]), nil },
		},
		{
			name: "weibull", args: []argSpec{yFinite, shapeA, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, a, s := x[0], x[1], x[2]
				if y < 0 {
					return inf, vec{}
				}
				lys := math.Log(y / s)
				u := math.Pow(y/s, a)
				lp := 0.0
				if k.has(a1) {
					lp += math.Log(a)
				}
				if k.has(a0 | a1) {
					lp += multiplyLog(a-1, y)
				}
				if k.has(a1 | a2) {
					lp -= a * math.Log(s)
				}
				if k.has(a0 | a1 | a2) {
					lp -= u
				}
				return lp, vec{safeDiv(a-1, y) - safeDiv(a*u, y), 1/a + lys - u*lys, -a/s + a*u/s}
			},
			lcdf: func(x vec) (float64, vec) {
				y, a, s := x[0], x[1], x[2]
				if y <= 0 {
					return inf, vec{}
				}
				u := math.Pow(y/s, a)
				g := 1 / math.Expm1(u) // d log F / du
				return log1mExp(-u), vec{g * a * u / y, g * u * math.Log(y/s), -g * a * u / s}
			},
			lccdf: func(x vec) (float64, vec) {
				y, a, s := x[0], x[1], x[2]
				if y <= 0 {
					return 0, vec{}
				}
				u := math.Pow(y/s, a)
				return -u, vec{-a * u / y, -u * math.Log(y/s), a * u / s}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return p[1] * math.Pow(-math.Log(openUnit(r)), 1/p[0]), nil
			},
		},
		{
			name: "beta", args: []argSpec{{"y", "random variable", unitInterval}, {"alpha", "shape", positiveFinite}, {"beta", "shape", positiveFinite}},
			lp: func(x vec, k keep) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				lp := 0.0
				if k.has(a1 | a2) {
					lp += lgamma(a + b)
				}
				if k.has(a1) {
					lp -= lgamma(a)
				}
				if k.has(a2) {
					lp -= lgamma(b)
				}
				if k.has(a0 | a1) {
					lp += multiplyLog(a-1, y)
				}
				if k.has(a0 | a2) {
					lp += multiplyLog(b-1, 1-y)
				}
				pab := digamma(a + b)
				return lp, vec{safeDiv(a-1, y) - safeDiv(b-1, 1-y), pab - digamma(a) + math.Log(y), pab - digamma(b) + math.Log1p(-y)}
			},
			lcdf:  func(x vec) (float64, vec) { return betaLcdf(x[0], x[1], x[2], false) },
			lccdf: func(x vec) (float64, vec) { return betaLcdf(x[0], x[1], x[2], true) },
			rng: func(r *rand.Rand, p vec) (float64, error) {
				g1, g2 := stdGamma(r, p[0]), stdGamma(r, p[1])
				return g1 / (g1 + g2), nil
			},
		},
		{
			name: "uniform", args: []argSpec{yAny, {"alpha", "lower bound", finite}, {"beta", "upper bound", finite}},
			cross: func(x vec) (int, int, string) {
				if !(x[2] > x[1]) {
					return 2, 1, "must be greater than"
				}
				return 0, 0, ""
			},
			lp: func(x vec, k keep) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				if y < a || y > b {
					return inf, vec{}
				}
				lp := 0.0
				if k.has(a1 | a2) {
					lp -= math.Log(b - a)
				}
				w := 1 / (b - a)
				return lp, vec{0, w, -w}
			},
			lcdf: func(x vec) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				switch {
				case y <= a:
					return inf, vec{}
				case y >= b:
					return 0, vec{}
				}
				w := 1 / (b - a)
				return math.Log((y - a) * w), vec{1 / (y - a), -1/(y-a) + w, -w}
			},
			lccdf: func(x vec) (float64, vec) {
				y, a, b := x[0], x[1], x[2]
				switch {
				case y <= a:
					return 0, vec{}
				case y >= b:
					return inf, vec{}
				}
				w := 1 / (b - a)
				return math.Log((b - y) * w), vec{-1 / (b - y), w, 1/(b-y) - w}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return p[0] + (p[1]-p[0])*r.Float64(), nil
			},
		},
		{
			name: "chi_square", args: []argSpec{yNonneg, nu},
			lp: func(x vec, k keep) (float64, vec) {
				y, nu := x[0], x[1]
				lp := 0.0
				if k.has(a1) {
					lp -= nu/2*ln2 + lgamma(nu/2)
				}
				if k.has(a0 | a1) {
					lp += multiplyLog(nu/2-1, y)
				}
				if k.has(a0) {
					lp -= y / 2
				}
				return lp, vec{safeDiv(nu/2-1, y) - 0.5, -0.5*ln2 - 0.5*digamma(nu/2) + 0.5*math.Log(y)}
			},
			lcdf: func(x vec) (float64, vec) {
				v, da, dx := gammaLcdf(x[1]/2, x[0]/2, false)
				return v, vec{dx / 2, da / 2}
			},
			lccdf: func(x vec) (float64, vec) {
				v, da, dx := gammaLcdf(x[1]/2, x[0]/2, true)
				return v, vec{dx / 2, da / 2}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return 2 * stdGamma(r, p[0]/2), nil },
		},
		{
			name: "half_normal", args: []argSpec{yAny, sigScale},
			lp: func(x vec, k keep) (float64, vec) {
				y, s := x[0], x[1]
				if y < 0 {
					return inf, vec{}
				}
				z := y / s
				lp := 0.0
				if k.has(0) {
					lp += 0.5*ln2 - 0.5*logPi // ½ log(2/π)
				}
				if k.has(a1) {
					lp -= math.Log(s)
				}
				if k.has(a0 | a1) {
					lp -= 0.5 * z * z
				}
				return lp, vec{-z / s, (z*z - 1) / s}
			},
			// F(y) = 2Φ(y/σ) - 1 = erf(y/(σ√2)).
			lcdf: func(x vec) (float64, vec) {
				y, s := x[0], x[1]
				if y <= 0 {
					return inf, vec{}
				}
				z := y / s
				f := math.Erf(z / math.Sqrt2)
				g := 2 * math.Exp(-0.5*z*z-logSqrt2Pi) / f // d log F / dz
				return math.Log(f), vec{g / s, -g * z / s}
			},
			lccdf: func(x vec) (float64, vec) {
				y, s := x[0], x[1]
				if y <= 0 {
					return 0, vec{}
				}
				z := y / s
				g := -logPhiDeriv(-z)
				return ln2 + logPhi(-z), vec{g / s, -g * z / s}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return p[0] * math.Abs(r.NormFloat64()), nil },
		},
	}
}

// values returns the values of a real or int-scalar argument as a slice
// with its stride (0 for a scalar), using buf for an int scalar; ok is
// false for an int array.
func (a *arg) values(buf *[1]float64) (v []float64, stride int, ok bool) {
	switch {
	case a.f != nil:
		return a.f, a.stride, true
	case a.ints != nil:
		return nil, 0, false
	}
	buf[0] = a.c
	return buf[:], 0, true
}

// normalFast is normal_lpdf's loop: the same terms and partials as its
// element function, with log σ and 1/σ computed once for a scalar σ. It
// reports false for int-array arguments, left to the generic loop.
func normalFast(as []arg, n int, k keep, ds *[4][]float64) (float64, bool) {
	var by, bm, bs [1]float64
	y, sy, ok1 := as[0].values(&by)
	mu, sm, ok2 := as[1].values(&bm)
	sig, ss, ok3 := as[2].values(&bs)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	dy, dm, dsg := ds[0], ds[1], ds[2]
	var quad, logS float64
	if ss == 0 {
		inv := 1 / sig[0]
		for i := 0; i < n; i++ {
			z := (y[i*sy] - mu[i*sm]) * inv
			quad += z * z
			g := z * inv
			if dy != nil {
				dy[i*sy] -= g
			}
			if dm != nil {
				dm[i*sm] += g
			}
			if dsg != nil {
				dsg[0] += (z*z - 1) * inv
			}
		}
		logS = float64(n) * math.Log(sig[0])
	} else {
		for i := 0; i < n; i++ {
			s := sig[i]
			inv := 1 / s
			z := (y[i*sy] - mu[i*sm]) * inv
			quad += z * z
			logS += math.Log(s)
			g := z * inv
			if dy != nil {
				dy[i*sy] -= g
			}
			if dm != nil {
				dm[i*sm] += g
			}
			if dsg != nil {
				dsg[i] += (z*z - 1) * inv
			}
		}
	}
	lp := 0.0
	if k.has(a0 | a1 | a2) {
		lp -= 0.5 * quad
	}
	if k.has(a2) {
		lp -= logS
	}
	if k.has(0) {
		lp -= float64(n) * logSqrt2Pi
	}
	return lp, true
}
