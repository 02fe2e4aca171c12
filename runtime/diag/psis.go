package diag

import (
	"fmt"
	"math"
	"slices"
)

// PSISResult is the outcome of Pareto-smoothed importance sampling of one
// vector of importance log ratios.
type PSISResult struct {
	// LogWeights are the smoothed and truncated log weights, one per draw in
	// the order of the input, normalized so that their exps sum to 1.
	LogWeights []float64

	// K is the estimated shape k-hat of the generalized Pareto distribution
	// fitted to the largest weights. It is NaN when the tail is too short to
	// fit (TailLength < 5) and +Inf when the tail cannot be fitted: all tail
	// log ratios equal (within √ε), fewer than TailLength nonzero weights,
	// or a failed fit, as loo reports +Inf. Smoothing was applied exactly
	// when K is finite.
	K float64

	// ESS is the effective sample size of the smoothed weights,
	// rEff / Σ w_i² for the normalized weights w (loo's psis_n_eff).
	ESS float64

	// TailLength is M = ceil(min(S/5, 3·√(S/rEff))), capped at S-1: the
	// number of largest draws whose weights are fitted and smoothed when K
	// is finite.
	TailLength int
}

// psisMinTail is the shortest tail that PSIS fits (loo's
// enough_tail_samples).
const psisMinTail = 5

// PSIS smooths the importance log ratios logRatios (one per draw; any
// additive constant) by Pareto-smoothed importance sampling (Vehtari,
// Simpson, Gelman, Yao and Gabry 2024, "Pareto smoothed importance
// sampling", JMLR 25(72)), as the R package loo 2.x does it: the M largest
// weights are replaced, in their order, by the quantiles at (i-1/2)/M of a
// generalized Pareto distribution fitted to their excesses over the next
// largest weight by the Zhang and Stephens (2009) empirical-Bayes
// estimator with a weakly informative prior on the shape, and every weight
// is then truncated at the largest raw ratio. rEff is the relative
// efficiency of the draws (an MCMC sample's ESS divided by its size; 1 for
// independent draws): it lengthens the tail and scales the reported ESS.
// Values above 1 (antithetic chains) are used as given.
//
// A log ratio of -Inf (a weight of zero) is allowed and keeps weight zero.
// It is an error to pass fewer than 2 log ratios, a NaN or +Inf log ratio,
// only -Inf log ratios, or an rEff that is not positive and finite.
//
// K is the diagnostic: below 0.7 the smoothed weights are reliable
// (Vehtari et al. 2024 give the sample-size dependent threshold
// 1 - 1/log10(S)); see PSISResult for its NaN and +Inf values.
func PSIS(logRatios []float64, rEff float64) (*PSISResult, error) {
	s := len(logRatios)
	if s < 2 {
		return nil, fmt.Errorf("diag: PSIS needs at least 2 log ratios, got %d", s)
	}
	if !(rEff > 0) || math.IsInf(rEff, 1) {
		return nil, fmt.Errorf("diag: PSIS relative efficiency %v is not positive and finite", rEff)
	}
	maxRatio := math.Inf(-1)
	for i, v := range logRatios {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("diag: PSIS log ratio %d is %v", i+1, v)
		}
		maxRatio = max(maxRatio, v)
	}
	if math.IsInf(maxRatio, -1) {
		return nil, fmt.Errorf("diag: PSIS log ratios are all -Inf")
	}

	// Shift so that the largest log ratio is 0: exps cannot overflow, and the
	// truncation point is 0.
	lw := make([]float64, s)
	for i, v := range logRatios {
		lw[i] = v - maxRatio
	}
	m := psisTailLength(s, rEff)
	k := math.NaN()
	if m >= psisMinTail {
		k = psisSmoothTail(lw, m)
	}
	for i, v := range lw {
		if v > 0 {
			lw[i] = 0
		}
	}

	norm := psisLogSumExp(lw)
	sumSq := 0.0
	for i := range lw {
		lw[i] -= norm
		w := math.Exp(lw[i])
		sumSq += w * w
	}
	return &PSISResult{LogWeights: lw, K: k, ESS: rEff / sumSq, TailLength: m}, nil
}

// psisTailLength is loo's n_pareto, ceil(min(0.2·S, 3·√(S/rEff))), capped
// at S-1 so that there is a draw below the tail to serve as the cutoff.
func psisTailLength(s int, rEff float64) int {
	fs := float64(s)
	m := int(math.Ceil(math.Min(0.2*fs, 3*math.Sqrt(fs/rEff))))
	return min(m, s-1)
}

// psisSmoothTail replaces the m largest of the log weights lw (whose
// maximum is 0) in place by the logs of the fitted generalized Pareto
// distribution's quantiles at (i-0.5)/m plus the cutoff weight, as loo's
// do_psis_i and psis_smooth_tail, and returns the shape estimate. When the
// tail cannot be fitted it leaves lw as it is and returns +Inf (loo's
// value).
func psisSmoothTail(lw []float64, m int) float64 {
	top := psisLargest(lw, m+1)
	tail := top[1:]
	cutoff := top[0].lw
	lo, hi := tail[0].lw, tail[m-1].lw
	if hi-lo < math.Sqrt(0x1p-52) {
		// All tail values are the same: loo warns and does not smooth.
		return math.Inf(1)
	}
	if math.IsInf(lo, -1) {
		// Fewer than m draws have a nonzero weight: the exceedances would
		// include zeros, and smoothing would give zero-weight draws a
		// positive weight (loo's fit then fails or does just that).
		return math.Inf(1)
	}

	// Exceedances exp(t) - exp(cutoff) = exp(t)·(1 - exp(cutoff - t)),
	// without cancellation; the cutoff may be -Inf (threshold 0). They are
	// in ascending order, as gpdFit requires.
	x := make([]float64, m)
	for i, d := range tail {
		x[i] = math.Exp(d.lw) * -math.Expm1(cutoff-d.lw)
	}
	k, sigma := gpdFit(x, true, 30)
	if math.IsNaN(k) {
		return math.Inf(1)
	}
	if math.IsInf(k, 0) {
		return k
	}
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		// loo's qgpd would return NaN weights here.
		return math.Inf(1)
	}
	expCutoff := math.Exp(cutoff)
	for i, d := range tail {
		p := (float64(i) + 0.5) / float64(m)
		lw[d.i] = math.Log(gpdQuantile(p, k, sigma) + expCutoff)
	}
	return k
}

// psisDraw is a log weight and the index of its draw.
type psisDraw struct {
	lw float64
	i  int
}

// psisBefore orders draws by log weight and ties by index, the order in
// which R's stable sort.int(index.return = TRUE) leaves them, so that tied
// draws receive the smoothed values in input order.
func psisBefore(a, b psisDraw) bool {
	return a.lw < b.lw || a.lw == b.lw && a.i < b.i
}

// psisLargest returns the n largest of the log weights lw (n <= len(lw)) in
// ascending psisBefore order: the last n of the sorted draws. It keeps a
// min-heap of the n largest seen, which costs O(len(lw)) comparisons for
// draws in random order rather than a full sort's O(len(lw)·log len(lw)).
func psisLargest(lw []float64, n int) []psisDraw {
	h := make([]psisDraw, 0, n)
	down := func(j int) {
		for {
			c := 2*j + 1
			if c >= n {
				return
			}
			if c+1 < n && psisBefore(h[c+1], h[c]) {
				c++
			}
			if !psisBefore(h[c], h[j]) {
				return
			}
			h[j], h[c] = h[c], h[j]
			j = c
		}
	}
	for i, v := range lw {
		d := psisDraw{v, i}
		if len(h) < n {
			h = append(h, d)
			if len(h) == n {
				for j := n/2 - 1; j >= 0; j-- {
					down(j)
				}
			}
			continue
		}
		if psisBefore(h[0], d) {
			h[0] = d
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b psisDraw) int {
		if psisBefore(a, b) {
			return -1
		}
		return 1
	})
	return h
}

// gpdFit estimates the shape k and scale sigma of a generalized Pareto
// distribution with location 0 from the sample x, sorted in ascending
// order, by the empirical-Bayes estimator of Zhang and Stephens (2009,
// section 4) as loo's gpdfit: a posterior mean of θ = -k/σ over a grid of
// minGridPts + ⌊√n⌋ points, then k = mean(log1p(-θ·x)) and σ = -k/θ. With
// wip, k is shrunk toward 0.5 by a weakly informative prior worth 10
// observations, k·n/(n+10) + 5/(n+10); sigma is not adjusted. Here k is
// the negative of Zhang and Stephens's k. A fit that yields NaN gives
// k = +Inf, as in loo.
func gpdFit(x []float64, wip bool, minGridPts int) (k, sigma float64) {
	n := len(x)
	const prior = 3.0
	grid := minGridPts + int(math.Floor(math.Sqrt(float64(n))))
	xstar := x[int(math.Floor(float64(n)/4+0.5))-1] // first quartile
	theta := make([]float64, grid)
	logLik := make([]float64, grid)
	for j := range theta {
		theta[j] = 1/x[n-1] + (1-math.Sqrt(float64(grid)/(float64(j+1)-0.5)))/prior/xstar
		logLik[j] = float64(n) * gpdProfileLogLik(theta[j], x)
	}
	norm := psisLogSumExp(logLik)
	thetaHat := 0.0
	for j, th := range theta {
		thetaHat += th * math.Exp(logLik[j]-norm)
	}
	terms := make([]float64, n)
	for i, v := range x {
		terms[i] = math.Log1p(-thetaHat * v)
	}
	k = psisMean(terms)
	sigma = -k / thetaHat
	if wip {
		const a = 10.0
		nPlusA := float64(n) + a
		k = k*float64(n)/nPlusA + a*0.5/nPlusA
	}
	if math.IsNaN(k) {
		k = math.Inf(1)
	}
	return k, sigma
}

// gpdProfileLogLik is loo's lx: the profile log likelihood per observation
// of the generalized Pareto distribution at θ, log(-θ/k) - k - 1 with
// k = mean(log1p(-θ·x)).
func gpdProfileLogLik(theta float64, x []float64) float64 {
	a := -theta
	s := 0.0
	for _, v := range x {
		s += math.Log1p(a * v)
	}
	k := s / float64(len(x))
	return math.Log(a/k) - k - 1
}

// gpdQuantile is the quantile function of the generalized Pareto
// distribution with location 0, shape k and scale sigma:
// sigma·((1-p)^-k - 1)/k, and its limit -sigma·log1p(-p) at k = 0.
func gpdQuantile(p, k, sigma float64) float64 {
	if k == 0 {
		return -sigma * math.Log1p(-p)
	}
	return sigma * math.Expm1(-k*math.Log1p(-p)) / k
}

// psisLogSumExp returns log Σ exp(x_i), computed as max + log Σ exp(x_i -
// max); NaN if any x_i is NaN, and the maximum itself when it is infinite.
func psisLogSumExp(x []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		if math.IsNaN(v) {
			return math.NaN()
		}
		mx = max(mx, v)
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

// psisMean is the mean with R's refinement: the sum over n, corrected by
// the mean of the residuals.
func psisMean(x []float64) float64 {
	n := float64(len(x))
	s := 0.0
	for _, v := range x {
		s += v
	}
	m := s / n
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m
	}
	r := 0.0
	for _, v := range x {
		r += v - m
	}
	return m + r/n
}
