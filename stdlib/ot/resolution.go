package ot

import (
	"fmt"
	"math"
	"slices"
)

// Resolution returns the median, over the n points of x (row-major n×d), of
// the Euclidean distance to the nearest other point. Duplicated points count
// as distance 0; for an even n the two middle values are averaged. It is the
// h of eps = (alpha·h)². It needs at least two points.
func Resolution(x []float64, n, d int) (float64, error) {
	if n < 2 {
		return 0, fmt.Errorf("ot: resolution needs at least 2 points, got %d", n)
	}
	if d < 1 || len(x) != n*d {
		return 0, fmt.Errorf("ot: resolution: %d coordinates for %d points of dimension %d", len(x), n, d)
	}
	nn := make([]float64, n)
	for i := range nn {
		nn[i] = math.Inf(1)
	}
	for i := 0; i < n; i++ {
		xi := x[i*d : i*d+d]
		for j := i + 1; j < n; j++ {
			xj := x[j*d : j*d+d]
			var s float64
			for k, v := range xi {
				t := v - xj[k]
				s += t * t
			}
			nn[i] = min(nn[i], s)
			nn[j] = min(nn[j], s)
		}
	}
	slices.Sort(nn)
	var med float64
	if n%2 == 1 {
		med = math.Sqrt(nn[n/2])
	} else {
		med = 0.5 * (math.Sqrt(nn[n/2-1]) + math.Sqrt(nn[n/2]))
	}
	return med, nil
}
