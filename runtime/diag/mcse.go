package diag

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quantile returns the type-7 quantile of x (R's default, also used by
// posterior): linear interpolation between order statistics at (n-1)·p.
func Quantile(x []float64, p float64) float64 {
	n := len(x)
	if n == 0 || math.IsNaN(p) || p < 0 || p > 1 {
		return math.NaN()
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return quantileSorted(s, p)
}

func quantileSorted(s []float64, p float64) float64 {
	n := len(s)
	h := float64(n-1) * p
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return s[n-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

// MCSEMean is the Monte Carlo standard error of the mean: sd/sqrt(ESSBasic).
func MCSEMean(chains [][]float64) float64 {
	all := pool(trim(chains))
	return math.Sqrt(variance(all) / ESSBasic(chains))
}

// MCSESD is the Monte Carlo standard error of the standard deviation by the
// delta method, with the effective sample size of the squared centered draws
// (posterior 1.x's mcse_sd).
func MCSESD(chains [][]float64) float64 {
	chains = trim(chains)
	all := pool(chains)
	m := mean(all)
	sq := make([][]float64, len(chains))
	for i, c := range chains {
		sq[i] = make([]float64, len(c))
		for j, v := range c {
			sq[i][j] = (v - m) * (v - m)
		}
	}
	ess := ESSBasic(sq)
	ev := mean(pool(sq))
	e4 := 0.0
	for _, v := range pool(sq) {
		e4 += v * v
	}
	e4 /= float64(len(all))
	varVar := (e4 - ev*ev) / ess
	return math.Sqrt(varVar / ev / 4)
}

// MCSEQuantile is the Monte Carlo standard error of the p-quantile: half the
// distance between the order statistics at the 15.9% and 84.1% quantiles of
// Beta(ESS·p+1, ESS·(1-p)+1), with ESS = ESSQuantile(chains, p).
func MCSEQuantile(chains [][]float64, p float64) float64 {
	ess := ESSQuantile(chains, p)
	if math.IsNaN(ess) {
		return math.NaN()
	}
	b := distuv.Beta{Alpha: ess*p + 1, Beta: ess*(1-p) + 1}
	a1 := b.Quantile(0.1586553)
	a2 := b.Quantile(0.8413447)
	s := pool(trim(chains))
	sort.Float64s(s)
	n := len(s)
	i1 := max(int(math.Floor(a1*float64(n))), 1)
	i2 := min(int(math.Ceil(a2*float64(n))), n)
	return (s[i2-1] - s[i1-1]) / 2
}

// EBFMI is the energy Bayesian fraction of missing information of one chain:
// Σ(E[i]-E[i-1])² / Σ(E[i]-mean E)².
func EBFMI(energy []float64) float64 {
	if len(energy) < 2 {
		return math.NaN()
	}
	m := mean(energy)
	num, den := 0.0, 0.0
	for i, e := range energy {
		if i > 0 {
			d := e - energy[i-1]
			num += d * d
		}
		den += (e - m) * (e - m)
	}
	return num / den
}
