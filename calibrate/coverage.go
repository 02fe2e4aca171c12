package calibrate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// HPDThreshold returns the lower (1 − level) quantile of the draws' log
// densities: the highest-posterior-density region of credibility level
// holds the points whose log density is at least this threshold (the
// paper's q_b(lambda)): the lowest of the ⌈level·S⌉ highest of the S
// draws, so that at least level·S of the draws lie in the region.
func HPDThreshold(logDensities []float64, level float64) (float64, error) {
	return WeightedHPDThreshold(logDensities, nil, level)
}

// WeightedHPDThreshold is HPDThreshold for weighted draws (weights nil:
// equal weights): the lowest log density of the highest draws whose
// weights sum to at least level of the total.
func WeightedHPDThreshold(logDensities, weights []float64, level float64) (float64, error) {
	if len(logDensities) == 0 {
		return 0, errors.New("no draws")
	}
	if !(level > 0 && level < 1) {
		return 0, errors.New("level must be in (0, 1)")
	}
	for _, x := range logDensities {
		if math.IsNaN(x) {
			return 0, errors.New("a draw's log density is NaN")
		}
	}
	if weights == nil {
		s := slices.Clone(logDensities)
		slices.Sort(s)
		// The region keeps the ⌈level·S⌉ highest draws (a relative 1e-12
		// off level·S so that 0.9·10 keeps 9 despite rounding).
		inside := int(math.Ceil(level * float64(len(s)) * (1 - 1e-12)))
		return s[len(s)-max(inside, 1)], nil
	}
	if len(weights) != len(logDensities) {
		return 0, fmt.Errorf("%d weights for %d draws", len(weights), len(logDensities))
	}
	order := make([]int, len(logDensities))
	total := 0.0
	for i, w := range weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			return 0, fmt.Errorf("weight %d is %g", i+1, w)
		}
		order[i] = i
		total += w
	}
	if !(total > 0) {
		return 0, errors.New("the weights sum to 0")
	}
	// Highest first; equal log densities in draw order, so that the
	// result does not depend on the sort's stability.
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(logDensities[b], logDensities[a]); c != 0 {
			return c
		}
		return a - b
	})
	need := level * total * (1 - 1e-12)
	sum := 0.0
	for _, i := range order {
		sum += weights[i]
		if sum >= need {
			return logDensities[i], nil
		}
	}
	return logDensities[order[len(order)-1]], nil
}

// EllipseDistance returns the squared Mahalanobis distance of point from
// the draws' mean under their sample covariance (draws[s] is one draw),
// and the radius² of the Gaussian credible ellipse of credibility level:
// the chi-square quantile with len(point) degrees of freedom. The point is
// covered when the distance is at most the radius.
func EllipseDistance(point []float64, draws [][]float64, level float64) (dist2, radius2 float64, err error) {
	return WeightedEllipseDistance(point, draws, nil, level)
}

// WeightedEllipseDistance is EllipseDistance for weighted draws (weights
// nil: equal weights), with the weighted mean and the unbiased weighted
// covariance Σ w (x − m)(x − m)ᵀ / (1 − Σ w²) of normalized weights w.
func WeightedEllipseDistance(point []float64, draws [][]float64, weights []float64, level float64) (dist2, radius2 float64, err error) {
	p := len(point)
	if len(draws) <= p {
		return 0, 0, errors.New("fewer draws than parameters + 1")
	}
	if weights != nil && len(weights) != len(draws) {
		return 0, 0, fmt.Errorf("%d weights for %d draws", len(weights), len(draws))
	}
	mean := make([]float64, p)
	cov := mat.NewSymDense(p, nil)
	if weights == nil {
		for _, d := range draws {
			for j := range mean {
				mean[j] += d[j]
			}
		}
		for j := range mean {
			mean[j] /= float64(len(draws))
		}
		for _, d := range draws {
			for i := 0; i < p; i++ {
				for j := i; j < p; j++ {
					cov.SetSym(i, j, cov.At(i, j)+(d[i]-mean[i])*(d[j]-mean[j]))
				}
			}
		}
		cov.ScaleSym(1/float64(len(draws)-1), cov)
	} else {
		total, sq := 0.0, 0.0
		for _, w := range weights {
			total += w
		}
		if !(total > 0) || math.IsInf(total, 0) {
			return 0, 0, errors.New("the weights do not sum to a positive number")
		}
		for s, d := range draws {
			w := weights[s] / total
			sq += w * w
			for j := range mean {
				mean[j] += w * d[j]
			}
		}
		for s, d := range draws {
			w := weights[s] / total
			for i := 0; i < p; i++ {
				for j := i; j < p; j++ {
					cov.SetSym(i, j, cov.At(i, j)+w*(d[i]-mean[i])*(d[j]-mean[j]))
				}
			}
		}
		if !(sq < 1) {
			return 0, 0, errors.New("one draw holds all the weight")
		}
		cov.ScaleSym(1/(1-sq), cov)
	}
	var chol mat.Cholesky
	if !chol.Factorize(cov) {
		return 0, 0, errors.New("the draws' covariance is singular")
	}
	diff := mat.NewVecDense(p, nil)
	for j := range point {
		diff.SetVec(j, point[j]-mean[j])
	}
	var x mat.VecDense
	if err := chol.SolveVecTo(&x, diff); err != nil {
		return 0, 0, err
	}
	dist2 = mat.Dot(diff, &x)
	radius2 = distuv.ChiSquared{K: float64(p)}.Quantile(level)
	return dist2, radius2, nil
}

// Coverage is the fraction of covered datasets at one lambda and its Monte
// Carlo standard error, sqrt(c(1 − c)/n).
type Coverage struct {
	Covered, Runs int
}

// Rate returns the coverage, NaN for no runs.
func (c Coverage) Rate() float64 {
	if c.Runs == 0 {
		return math.NaN()
	}
	return float64(c.Covered) / float64(c.Runs)
}

// SE returns the binomial standard error of Rate.
func (c Coverage) SE() float64 {
	r := c.Rate()
	return math.Sqrt(r * (1 - r) / float64(c.Runs))
}
