package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// maxPoissonRate is the largest rate the Poisson generators accept, as in
// Stan (2^30).
const maxPoissonRate = 1 << 30

func poissonDraw(r *rand.Rand, what string, lambda float64) (float64, error) {
	if !(lambda < maxPoissonRate) {
		return 0, fmt.Errorf("%s = %s must be less than 2^30", what, fmtNum(lambda))
	}
	if lambda == 0 {
		return 0, nil
	}
	return distuv.Poisson{Lambda: lambda, Src: r}.Rand(), nil
}

// lchoose returns log C(n, k) for integers 0 ≤ k ≤ n.
func lchoose(n, k float64) float64 { return lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1) }

// binomialLogPMF returns log C(N, n) θ^n (1-θ)^(N-n).
func binomialLogPMF(n, bigN, theta float64) float64 {
	return lchoose(bigN, n) + multiplyLog(n, theta) + multiplyLog(bigN-n, 1-theta)
}

// nb2Log returns the log pmf of neg_binomial_2 at n and its partials with
// respect to mu and phi.
func nb2Log(n, mu, phi float64) (v, dmu, dphi float64) {
	lmp := math.Log(mu + phi)
	v = lgamma(n+phi) - lgamma(phi) - lgamma(n+1) + multiplyLog(n, mu) + phi*math.Log(phi) - (n+phi)*lmp
	dmu = n/mu - (n+phi)/(mu+phi)
	dphi = digamma(n+phi) - digamma(phi) + math.Log(phi) + 1 - lmp - (n+phi)/(mu+phi)
	return v, dmu, dphi
}

// nb2SumLimit is the largest outcome whose neg_binomial_2 cdf is summed
// term by term; above it the incomplete beta function is used.
const nb2SumLimit = 1000

// nb2Lcdf returns log P(X ≤ n) for neg_binomial_2 and its partials with
// respect to mu and phi: by summing the pmf for n ≤ nb2SumLimit, else from
// P(X ≤ n) = I_p(phi, n+1) with p = phi/(mu+phi).
func nb2Lcdf(n, mu, phi float64) (v, dmu, dphi float64) {
	if n > nb2SumLimit {
		p := phi / (mu + phi)
		f := regIncBeta(phi, n+1, p)
		da, _ := incBetaDerivs(phi, n+1, p)
		// ∂I/∂p, the beta(phi, n+1) density at p.
		dp := math.Exp((phi-1)*math.Log(p) + n*math.Log1p(-p) - lbeta(phi, n+1))
		s := (mu + phi) * (mu + phi)
		return math.Log(f), -dp * phi / s / f, (da + dp*mu/s) / f
	}
	// Accumulate in log space relative to the largest term seen.
	lmax := math.Inf(-1)
	var s, smu, sphi float64
	for k := 0.0; k <= n; k++ {
		l, gm, gp := nb2Log(k, mu, phi)
		if l > lmax {
			sc := math.Exp(lmax - l)
			s, smu, sphi = s*sc, smu*sc, sphi*sc
			lmax = l
		}
		w := math.Exp(l - lmax)
		s += w
		smu += w * gm
		sphi += w * gp
	}
	return lmax + math.Log(s), smu / s, sphi / s
}

func discreteFamilies() []*univariate {
	nNonneg := argSpec{"n", "outcome", nonnegative}
	theta := argSpec{"theta", "probability", unitInterval}
	bigN := argSpec{"N", "number of trials", nonnegative}
	phi := argSpec{"phi", "precision", positiveFinite}
	inf := math.Inf(-1)
	binomialCross := func(x vec) (int, int, string) {
		if x[0] > x[1] {
			return 0, 1, "must be at most"
		}
		return 0, 0, ""
	}
	return []*univariate{
		{
			name: "bernoulli", discrete: true, args: []argSpec{{"n", "outcome", binary}, theta},
			lp: func(x vec, k keep) (float64, vec) {
				n, th := x[0], x[1]
				if !k.has(a1) {
					return 0, vec{}
				}
				if n == 1 {
					return math.Log(th), vec{0, 1 / th}
				}
				return math.Log1p(-th), vec{0, -1 / (1 - th)}
			},
			lcdf: func(x vec) (float64, vec) {
				if x[0] == 1 {
					return 0, vec{}
				}
				return math.Log1p(-x[1]), vec{0, -1 / (1 - x[1])}
			},
			lccdf: func(x vec) (float64, vec) {
				if x[0] == 1 {
					return inf, vec{}
				}
				return math.Log(x[1]), vec{0, 1 / x[1]}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				if r.Float64() < p[0] {
					return 1, nil
				}
				return 0, nil
			},
		},
		{
			name: "bernoulli_logit", discrete: true, args: []argSpec{{"n", "outcome", binary}, {"alpha", "logit-scaled probability", notNaN}},
			lp: func(x vec, k keep) (float64, vec) {
				n, a := x[0], x[1]
				// One exponential: e = exp(-|a|) gives log(1 + e^±a) and
				// inv_logit(a).
				e := math.Exp(-math.Abs(a))
				l := math.Log1p(e)
				p := 1 / (1 + e)
				if a < 0 {
					p = e / (1 + e)
				}
				lp := 0.0
				if k.has(a1) {
					// log inv_logit(a) if n = 1, log(1 - inv_logit(a)) if 0.
					if (n == 1) == (a >= 0) {
						lp = -l
					} else {
						lp = -l - math.Abs(a)
					}
				}
				return lp, vec{0, n - p}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				if r.Float64() < invLogit(p[0]) {
					return 1, nil
				}
				return 0, nil
			},
		},
		{
			name: "binomial", discrete: true, args: []argSpec{nNonneg, bigN, theta}, cross: binomialCross,
			lp: func(x vec, k keep) (float64, vec) {
				n, bn, th := x[0], x[1], x[2]
				lp := 0.0
				if k.has(0) {
					lp += lchoose(bn, n)
				}
				if k.has(a2) {
					lp += multiplyLog(n, th) + multiplyLog(bn-n, 1-th)
				}
				if math.IsInf(lp, -1) {
					return inf, vec{}
				}
				var d float64
				if n > 0 {
					d += n / th
				}
				if bn > n {
					d -= (bn - n) / (1 - th)
				}
				return lp, vec{0, 0, d}
			},
			// P(X ≤ n) = I_(1-θ)(N-n, n+1); dP/dθ = -N pmf(n; N-1, θ).
			lcdf: func(x vec) (float64, vec) {
				n, bn, th := x[0], x[1], x[2]
				if n >= bn {
					return 0, vec{}
				}
				f := regIncBeta(bn-n, n+1, 1-th)
				lf := math.Log(f)
				return lf, vec{0, 0, -bn * math.Exp(binomialLogPMF(n, bn-1, th)-lf)}
			},
			lccdf: func(x vec) (float64, vec) {
				n, bn, th := x[0], x[1], x[2]
				if n >= bn {
					return inf, vec{}
				}
				f := regIncBeta(n+1, bn-n, th)
				lf := math.Log(f)
				return lf, vec{0, 0, bn * math.Exp(binomialLogPMF(n, bn-1, th)-lf)}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return distuv.Binomial{N: p[0], P: p[1], Src: r}.Rand(), nil
			},
		},
		{
			name: "binomial_logit", discrete: true, args: []argSpec{nNonneg, bigN, {"alpha", "logit-scaled probability", finite}}, cross: binomialCross,
			lp: func(x vec, k keep) (float64, vec) {
				n, bn, a := x[0], x[1], x[2]
				lp := 0.0
				if k.has(0) {
					lp += lchoose(bn, n)
				}
				if k.has(a2) {
					lp += -n*log1pExp(-a) - (bn-n)*log1pExp(a)
				}
				return lp, vec{0, 0, n - bn*invLogit(a)}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return distuv.Binomial{N: p[0], P: invLogit(p[1]), Src: r}.Rand(), nil
			},
		},
		{
			name: "poisson", discrete: true, args: []argSpec{nNonneg, {"lambda", "rate", nonnegFinite}},
			lp: func(x vec, k keep) (float64, vec) {
				n, l := x[0], x[1]
				if l == 0 && n > 0 {
					return inf, vec{}
				}
				lp := 0.0
				if k.has(a1) {
					lp += multiplyLog(n, l) - l
				}
				if k.has(0) {
					lp -= lgamma(n + 1)
				}
				d := -1.0
				if n > 0 {
					d += n / l
				}
				return lp, vec{0, d}
			},
			// P(X ≤ n) = Q(n+1, λ); dP/dλ = -pmf(n; λ).
			lcdf: func(x vec) (float64, vec) {
				n, l := x[0], x[1]
				f := gammaQ(n+1, l)
				lf := math.Log(f)
				return lf, vec{0, -math.Exp(multiplyLog(n, l) - l - lgamma(n+1) - lf)}
			},
			lccdf: func(x vec) (float64, vec) {
				n, l := x[0], x[1]
				if l == 0 {
					return inf, vec{}
				}
				f := gammaP(n+1, l)
				lf := math.Log(f)
				return lf, vec{0, math.Exp(multiplyLog(n, l) - l - lgamma(n+1) - lf)}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) { return poissonDraw(r, "rate lambda", p[0]) },
		},
		{
			name: "poisson_log", discrete: true, args: []argSpec{nNonneg, {"alpha", "log rate", notPlusInf}},
			lp: func(x vec, k keep) (float64, vec) {
				n, a := x[0], x[1]
				if math.IsInf(a, -1) {
					if n > 0 {
						return inf, vec{}
					}
					return 0, vec{}
				}
				e := math.Exp(a)
				lp := 0.0
				if k.has(a1) {
					lp += n*a - e
				}
				if k.has(0) {
					lp -= lgamma(n + 1)
				}
				return lp, vec{0, n - e}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return poissonDraw(r, "rate exp(alpha)", math.Exp(p[0]))
			},
		},
		{
			name: "neg_binomial_2", discrete: true, args: []argSpec{nNonneg, {"mu", "location", positiveFinite}, phi},
			lp: func(x vec, k keep) (float64, vec) {
				n, mu, ph := x[0], x[1], x[2]
				lmp := math.Log(mu + ph)
				lp := 0.0
				if k.has(a2) {
					lp += lgamma(n+ph) - lgamma(ph)
				}
				if k.has(0) {
					lp -= lgamma(n + 1)
				}
				if k.has(a1) {
					lp += multiplyLog(n, mu)
				}
				if k.has(a1 | a2) {
					lp += ph*math.Log(ph) - (n+ph)*lmp
				}
				_, dmu, dphi := nb2Log(n, mu, ph)
				return lp, vec{0, dmu, dphi}
			},
			lcdf: func(x vec) (float64, vec) {
				v, dmu, dphi := nb2Lcdf(x[0], x[1], x[2])
				return v, vec{0, dmu, dphi}
			},
			// P(X > n) = I_(μ/(μ+φ))(n+1, φ); its gradient is minus that of
			// the cdf.
			lccdf: func(x vec) (float64, vec) {
				n, mu, ph := x[0], x[1], x[2]
				lf, dmu, dphi := nb2Lcdf(n, mu, ph)
				q := regIncBeta(n+1, ph, mu/(mu+ph))
				f := math.Exp(lf)
				return math.Log(q), vec{0, -f * dmu / q, -f * dphi / q}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				return poissonDraw(r, "gamma-Poisson rate", p[0]/p[1]*stdGamma(r, p[1]))
			},
		},
		{
			name: "neg_binomial_2_log", discrete: true, args: []argSpec{nNonneg, {"eta", "log location", finite}, phi},
			lp: func(x vec, k keep) (float64, vec) {
				n, eta, ph := x[0], x[1], x[2]
				lph := math.Log(ph)
				lse := math.Max(eta, lph) + log1pExp(-math.Abs(eta-lph)) // log(e^η + φ)
				lp := 0.0
				if k.has(a2) {
					lp += lgamma(n+ph) - lgamma(ph)
				}
				if k.has(0) {
					lp -= lgamma(n + 1)
				}
				if k.has(a1) {
					lp += n * eta
				}
				if k.has(a1 | a2) {
					lp += ph*lph - (n+ph)*lse
				}
				w := invLogit(eta - lph) // e^η / (e^η + φ)
				deta := n - (n+ph)*w
				dphi := digamma(n+ph) - digamma(ph) + lph + 1 - lse - (n+ph)*(1-w)/ph
				return lp, vec{0, deta, dphi}
			},
			rng: func(r *rand.Rand, p vec) (float64, error) {
				mu := math.Exp(p[0])
				if math.IsInf(mu, 1) {
					return 0, errors.New("log location eta is too large")
				}
				return poissonDraw(r, "gamma-Poisson rate", mu/p[1]*stdGamma(r, p[1]))
			},
		},
	}
}
