package ot

import (
	"fmt"
	"math"
	"slices"
)

// Resolution returns the median, over the n points of x (row-major n×d), of
// the Euclidean distance to the nearest other point. Duplicated points count
// as distance 0; for an even n the two middle values are averaged. It is the
// h of eps = (alpha·h)². It needs at least two points, all finite.
//
// The nearest neighbours are found in a k-d tree (O(n log n) for spread
// points); the distances are those of the brute-force search, bit for bit.
func Resolution(x []float64, n, d int) (float64, error) {
	if n < 2 {
		return 0, fmt.Errorf("ot: resolution needs at least 2 points, got %d", n)
	}
	if d < 1 || len(x) != n*d {
		return 0, fmt.Errorf("ot: resolution: %d coordinates for %d points of dimension %d", len(x), n, d)
	}
	for k, v := range x {
		if !isFinite(v) {
			return 0, fmt.Errorf("ot: resolution: coordinate %d of point %d is %g", k%d+1, k/d+1, v)
		}
	}
	nn := nearestSq(x, n, d)
	slices.Sort(nn)
	var med float64
	if n%2 == 1 {
		med = math.Sqrt(nn[n/2])
	} else {
		med = 0.5 * (math.Sqrt(nn[n/2-1]) + math.Sqrt(nn[n/2]))
	}
	return med, nil
}

// nearestSq returns, for each of the n points of x, the squared Euclidean
// distance to its nearest other point, summed coordinate by coordinate in
// order (as a brute-force search would). The search descends a k-d tree
// and skips a node when the squared distance to its box is at least the
// best distance found: the box distance, computed in floating point, is at
// most the computed distance of any point inside (subtraction, squaring
// and addition are monotone), so nothing closer is skipped. A point with
// a duplicate (best 0) skips every other node: repeated values, even all
// equal, cost O(n log n), not O(n²).
func nearestSq(x []float64, n, d int) []float64 {
	var t kdTree
	t.build(x, n, d)
	nn := make([]float64, n)
	stack := make([]int32, 0, 64)
	for k := range n {
		p := t.pts[k*d : k*d+d]
		best := math.Inf(1)
		stack = append(stack[:0], 0)
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if boxSq(p, t.lo(c), t.hi(c)) >= best {
				continue
			}
			nd := t.nodes[c]
			if nd.left >= 0 {
				// The nearer child last, so that it is searched first.
				l, r := nd.left, nd.right
				if boxSq(p, t.lo(l), t.hi(l)) < boxSq(p, t.lo(r), t.hi(r)) {
					l, r = r, l
				}
				stack = append(stack, l, r)
				continue
			}
			for j := nd.lo; j < nd.hi; j++ {
				if int(j) != k {
					best = min(best, sqDist(p, t.pts[int(j)*d:int(j)*d+d]))
				}
			}
		}
		nn[t.perm[k]] = best
	}
	return nn
}

// boxSq is the squared distance from p to the box [lo, hi].
func boxSq(p, lo, hi []float64) float64 {
	var s float64
	for c, v := range p {
		t := max(lo[c]-v, v-hi[c], 0)
		s += t * t
	}
	return s
}
