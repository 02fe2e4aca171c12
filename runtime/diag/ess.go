package diag

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/stat/distuv"
)

// Autocovariance returns the biased autocovariance estimates
// acov[k] = (1/n)·Σ_{t<n-k} (x[t]-m)(x[t+k]-m), k = 0..n-1, computed with a
// zero-padded FFT.
func Autocovariance(x []float64) []float64 {
	if len(x) == 0 {
		return nil
	}
	return newAutocov(len(x)).compute(x)
}

// autocov computes autocovariances of series of one length, reusing the
// FFT's tables.
type autocov struct {
	n, size int
	fft     *fourier.FFT
	buf     []float64
}

func newAutocov(n int) *autocov {
	size := goodSize(2 * n)
	return &autocov{n: n, size: size, fft: fourier.NewFFT(size), buf: make([]float64, size)}
}

func (a *autocov) compute(x []float64) []float64 {
	n, size, buf, fft := a.n, a.size, a.buf, a.fft
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(n)
	clear(buf)
	for i, v := range x {
		buf[i] = v - m
	}
	coef := fft.Coefficients(nil, buf)
	for i, c := range coef {
		coef[i] = complex(real(c)*real(c)+imag(c)*imag(c), 0)
	}
	ac := fft.Sequence(nil, coef) // unnormalized: size·Σ products
	out := make([]float64, n)
	scale := 1 / (float64(size) * float64(n))
	for k := range out {
		out[k] = ac[k] * scale
	}
	return out
}

// goodSize returns the least number >= n of the form 2^a·3^b·5^c.
func goodSize(n int) int {
	for m := n; ; m++ {
		r := m
		for _, p := range []int{2, 3, 5} {
			for r%p == 0 {
				r /= p
			}
		}
		if r == 1 {
			return m
		}
	}
}

// trim cuts all chains to the shortest length.
func trim(chains [][]float64) [][]float64 {
	if len(chains) == 0 {
		return nil
	}
	n := len(chains[0])
	for _, c := range chains {
		n = min(n, len(c))
	}
	out := make([][]float64, len(chains))
	for i, c := range chains {
		out[i] = c[:n]
	}
	return out
}

// Split halves every chain (dropping the middle draw of an odd-length
// chain), doubling the number of chains, as posterior's split_chains.
func Split(chains [][]float64) [][]float64 {
	chains = trim(chains)
	if len(chains) == 0 || len(chains[0]) < 2 {
		return chains
	}
	n := len(chains[0])
	h := n / 2
	out := make([][]float64, 0, 2*len(chains))
	for _, c := range chains {
		out = append(out, c[:h])
	}
	for _, c := range chains {
		out = append(out, c[n-h:])
	}
	return out
}

// unusable reports whether the draws contain a non-finite value or are all
// equal (posterior's should_return_NA).
func unusable(chains [][]float64) bool {
	first := math.NaN()
	constant := true
	for _, c := range chains {
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return true
			}
			if math.IsNaN(first) {
				first = v
			} else if v != first {
				constant = false
			}
		}
	}
	return constant
}

// eachConstant reports whether every chain is constant (as the step size
// after adaptation is): the within-chain variance is zero and R-hat has no
// meaning.
func eachConstant(chains [][]float64) bool {
	for _, c := range chains {
		if len(c) == 0 {
			continue
		}
		for _, v := range c[1:] {
			if v != c[0] {
				return false
			}
		}
	}
	return true
}

// essRaw is posterior's .ess: the effective sample size of the given chains
// (not split here) with Geyer's initial positive and initial monotone
// sequence estimators.
func essRaw(chains [][]float64) float64 {
	chains = trim(chains)
	m := len(chains)
	if m == 0 {
		return math.NaN()
	}
	n := len(chains[0])
	if n < 3 || unusable(chains) {
		return math.NaN()
	}
	acov := make([][]float64, m)
	means := make([]float64, m)
	ac := newAutocov(n)
	for i, c := range chains {
		acov[i] = ac.compute(c)
		means[i] = mean(c)
	}
	meanAcov := func(t int) float64 {
		s := 0.0
		for _, a := range acov {
			s += a[t]
		}
		return s / float64(m)
	}
	nf := float64(n)
	meanVar := meanAcov(0) * nf / (nf - 1)
	varPlus := meanVar * (nf - 1) / nf
	if m > 1 {
		varPlus += variance(means)
	}
	rho := make([]float64, n)
	t := 0
	rhoEven := 1.0
	rho[0] = rhoEven
	rhoOdd := 1 - (meanVar-meanAcov(1))/varPlus
	rho[1] = rhoOdd
	for t < n-5 && !math.IsNaN(rhoEven+rhoOdd) && rhoEven+rhoOdd > 0 {
		t += 2
		rhoEven = 1 - (meanVar-meanAcov(t))/varPlus
		rhoOdd = 1 - (meanVar-meanAcov(t+1))/varPlus
		if rhoEven+rhoOdd >= 0 {
			rho[t] = rhoEven
			rho[t+1] = rhoOdd
		}
	}
	maxT := t
	if rhoEven > 0 {
		rho[maxT] = rhoEven
	}
	// Initial monotone sequence.
	for t = 0; t <= maxT-4; {
		t += 2
		if rho[t]+rho[t+1] > rho[t-2]+rho[t-1] {
			rho[t] = (rho[t-2] + rho[t-1]) / 2
			rho[t+1] = rho[t]
		}
	}
	total := float64(m) * nf
	sum := rho[0] // posterior sums rho[1:max_t] in R, which is rho[1] when max_t = 0
	for t := 1; t < maxT; t++ {
		sum += rho[t]
	}
	tau := -1 + 2*sum + rho[maxT]
	tau = math.Max(tau, 1/math.Log10(total))
	return total / tau
}

// ESSBasic is the effective sample size of split chains without rank
// normalization (posterior's ess_basic / ess_mean).
func ESSBasic(chains [][]float64) float64 { return essRaw(Split(chains)) }

// ESSBulk is the effective sample size of the rank-normalized split chains.
func ESSBulk(chains [][]float64) float64 {
	if unusable(chains) {
		return math.NaN()
	}
	return essRaw(zScale(Split(chains)))
}

// ESSQuantile is the effective sample size of the split indicator
// I(x <= q_p) with q_p the type-7 quantile of all draws.
func ESSQuantile(chains [][]float64, p float64) float64 {
	chains = trim(chains)
	if unusable(chains) {
		return math.NaN()
	}
	all := pool(chains)
	if p == 1 {
		// As posterior: the indicator would be constant.
		p = (float64(len(all)) - 0.5) / float64(len(all))
	}
	q := Quantile(all, p)
	ind := make([][]float64, len(chains))
	for i, c := range chains {
		ind[i] = make([]float64, len(c))
		for j, v := range c {
			if v <= q {
				ind[i][j] = 1
			}
		}
	}
	return essRaw(Split(ind))
}

// ESSTail is the minimum of the effective sample sizes of the 5% and 95%
// quantiles.
func ESSTail(chains [][]float64) float64 {
	return math.Min(ESSQuantile(chains, 0.05), ESSQuantile(chains, 0.95))
}

// RhatBasic is the classic split R-hat (Gelman et al., BDA3), without rank
// normalization.
func RhatBasic(chains [][]float64) float64 {
	if unusable(chains) {
		return math.NaN()
	}
	return rhatRaw(Split(chains))
}

func rhatRaw(chains [][]float64) float64 {
	chains = trim(chains)
	m := len(chains)
	if m == 0 || len(chains[0]) < 2 {
		return math.NaN()
	}
	n := float64(len(chains[0]))
	means := make([]float64, m)
	vars := make([]float64, m)
	for i, c := range chains {
		means[i] = mean(c)
		vars[i] = variance(c)
	}
	between := n * variance(means)
	if m == 1 {
		between = 0
	}
	within := mean(vars)
	return math.Sqrt((between/within + n - 1) / n)
}

// Rhat is the rank-normalized split R-hat: the maximum of the bulk R-hat
// (of the rank-normalized draws) and the tail R-hat (of the rank-normalized
// draws folded around the median).
func Rhat(chains [][]float64) float64 {
	chains = trim(chains)
	if unusable(chains) || eachConstant(chains) {
		return math.NaN()
	}
	bulk := rhatRaw(zScale(Split(chains)))
	med := Quantile(pool(chains), 0.5)
	folded := make([][]float64, len(chains))
	for i, c := range chains {
		folded[i] = make([]float64, len(c))
		for j, v := range c {
			folded[i][j] = math.Abs(v - med)
		}
	}
	tail := rhatRaw(zScale(Split(folded)))
	return math.Max(bulk, tail)
}

// zScale replaces every draw by the normal quantile of its fractional
// rank (r - 3/8)/(S + 1/4) over all S draws, ties getting their average rank.
func zScale(chains [][]float64) [][]float64 {
	all := pool(chains)
	s := len(all)
	type entry struct {
		v float64
		i int
	}
	order := make([]entry, s)
	for i, v := range all {
		order[i] = entry{v, i}
	}
	slices.SortFunc(order, func(a, b entry) int { return cmp.Compare(a.v, b.v) })
	ranks := make([]float64, s)
	for i := 0; i < s; {
		j := i
		for j+1 < s && order[j+1].v == order[i].v {
			j++
		}
		r := float64(i+j)/2 + 1 // average of 1-based ranks i+1..j+1
		for k := i; k <= j; k++ {
			ranks[order[k].i] = r
		}
		i = j + 1
	}
	out := make([][]float64, len(chains))
	k := 0
	for i, c := range chains {
		out[i] = make([]float64, len(c))
		for j := range c {
			u := (ranks[k] - 3.0/8) / (float64(s) - 2*3.0/8 + 1)
			out[i][j] = distuv.UnitNormal.Quantile(u)
			k++
		}
	}
	return out
}

func pool(chains [][]float64) []float64 {
	var all []float64
	for _, c := range chains {
		all = append(all, c...)
	}
	return all
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// variance is the sample variance with divisor n-1.
func variance(x []float64) float64 {
	m := mean(x)
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x)-1)
}
