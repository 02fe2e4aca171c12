package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/shmlang/shm/stdlib/ot"
)

// Resolution is the data resolution h by the paper's three rules (after
// Medina et al. 2025); eps = (alpha·h)² for the rule that fits the data.
type Resolution struct {
	// Noise is the known measurement noise (NaN when not given).
	Noise float64
	// NearestNeighbour is the median distance from a point to its nearest
	// other point: the rule for point clouds with unknown noise.
	NearestNeighbour float64
	// Spacing is the smallest positive gap between distinct coordinates
	// along any axis: the rule for binned or gridded observations.
	Spacing float64
}

// Resolve computes the rules for the n points of x (row-major n×d) and a
// known noise (NaN for none).
func Resolve(x []float64, n, d int, noise float64) (Resolution, error) {
	if err := checkSpan(x, n, d); err != nil {
		return Resolution{}, err
	}
	nn, err := ot.Resolution(x, n, d)
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Noise: noise, NearestNeighbour: nn, Spacing: Spacing(x, n, d)}, nil
}

// checkSpan returns an error naming the first coordinate of the n points
// of x (row-major n×d) whose values differ by more than a float64 holds:
// their distances, hence every rule's h, would overflow (and points that
// differ would look equal).
func checkSpan(x []float64, n, d int) error {
	for j := 0; j < d; j++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := 0; i < n; i++ {
			lo, hi = min(lo, x[i*d+j]), max(hi, x[i*d+j])
		}
		if n > 0 && math.IsInf(hi-lo, 1) {
			coord := ""
			if d > 1 {
				coord = fmt.Sprintf("coordinate %d ", j+1)
			}
			return fmt.Errorf("the points' %svalues span %g to %g: their differences overflow, so no rule has a scale; rescale the data", coord, lo, hi)
		}
	}
	return nil
}

// Spacing returns the smallest positive difference between two distinct
// values of one coordinate of the n points of x (row-major n×d), +Inf when
// every coordinate takes a single value.
func Spacing(x []float64, n, d int) float64 {
	h := math.Inf(1)
	col := make([]float64, n)
	for j := 0; j < d; j++ {
		for i := range col {
			col[i] = x[i*d+j]
		}
		slices.Sort(col)
		for i := 1; i < n; i++ {
			if g := col[i] - col[i-1]; g > 0 && g < h {
				h = g
			}
		}
	}
	return h
}

// Eps returns (alpha·h)².
func Eps(alpha, h float64) float64 { return (alpha * h) * (alpha * h) }

// scale reports whether h is a data resolution: positive and finite (a
// median nearest-neighbour distance of 0, from repeated points, is not).
func scale(h float64) bool { return h > 0 && !math.IsInf(h, 1) }

// Check returns an error unless some rule gives a scale (a positive,
// finite h: points that are all equal have none) and every rule's eps is
// positive and finite at alpha (not overflowing to +Inf or underflowing
// to 0).
func (r Resolution) Check(alpha float64) error {
	rules := []struct {
		name string
		h    float64
	}{{"known noise", r.Noise}, {"median nearest neighbour", r.NearestNeighbour}, {"grid spacing", r.Spacing}}
	found := false
	for _, rule := range rules {
		if !scale(rule.h) {
			continue
		}
		found = true
		if eps := Eps(alpha, rule.h); !(eps > 0) || math.IsInf(eps, 1) {
			return fmt.Errorf("--alpha %g: eps = (alpha h)^2 is %g for the %s rule's h = %g: eps must be positive and finite", alpha, eps, rule.name, rule.h)
		}
	}
	if !found {
		return errors.New("the points are all equal: they have no scale (every rule's h is 0 or none), so there is no eps")
	}
	return nil
}

// Table renders the three rules with their h and eps.
func (r Resolution) Table(alpha float64) string {
	line := func(rule string, h float64, note string) string {
		if h == 0 {
			return fmt.Sprintf("  %-28s %12s %12s  %s\n", rule, "0", "-", note+" (h = 0: at least half the points repeat another, not a scale)")
		}
		if !scale(h) {
			return fmt.Sprintf("  %-28s %12s %12s  %s\n", rule, "-", "-", note)
		}
		return fmt.Sprintf("  %-28s %12.6g %12.6g  %s\n", rule, h, Eps(alpha, h), note)
	}
	s := fmt.Sprintf("  %-28s %12s %12s\n", "rule", "h", fmt.Sprintf("eps (alpha=%g)", alpha))
	s += line("1. known noise", r.Noise, "when the measurement noise is known (--noise)")
	s += line("2. median nearest neighbour", r.NearestNeighbour, "point clouds, unknown noise (the resolution() built-in)")
	s += line("3. grid spacing", r.Spacing, "binned or gridded observations")
	return s
}
