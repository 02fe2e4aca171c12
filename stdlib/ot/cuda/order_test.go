package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSpatialOrder checks that spatialOrder returns a permutation, sorted
// by coordinate in 1-D with ties by index, and in 2-D and 3-D the Z-order:
// on a regular grid each aligned 2×2 (2×2×2) cell of points is contiguous.
func TestSpatialOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	var keys []uint64
	for _, d := range []int{1, 2, 3} {
		for _, n := range []int{1, 2, 17, 100} {
			pts := make([]float64, n*d)
			for i := range pts {
				pts[i] = float64(rng.IntN(7)) // many ties
			}
			perm := make([]int, n)
			keys = spatialOrder(perm, keys, pts, d)
			seen := slices.Clone(perm)
			slices.Sort(seen)
			for i, v := range seen {
				if v != i {
					t.Fatalf("d = %d, n = %d: %v is not a permutation", d, n, perm)
				}
			}
			again := make([]int, n)
			spatialOrder(again, keys, pts, d)
			if !slices.Equal(perm, again) {
				t.Fatalf("d = %d, n = %d: two orders of the same points differ", d, n)
			}
			if d == 1 {
				for k := 1; k < n; k++ {
					a, b := perm[k-1], perm[k]
					if pts[a] > pts[b] || (pts[a] == pts[b] && a > b) {
						t.Fatalf("n = %d: %v not sorted at %d", n, perm, k)
					}
				}
			}
		}
	}
	// A 4×4 grid (4×4×4 in 3-D): the cells of side 2 come out whole.
	for _, d := range []int{2, 3} {
		side := 4
		n := 1
		for range d {
			n *= side
		}
		pts := make([]float64, 0, n*d)
		for i := range n {
			for k, r := 0, i; k < d; k, r = k+1, r/side {
				pts = append(pts, float64(r%side))
			}
		}
		perm := make([]int, n)
		spatialOrder(perm, nil, pts, d)
		cell := func(i int) int {
			c := 0
			for k := d - 1; k >= 0; k-- {
				c = c*2 + int(pts[i*d+k])/2
			}
			return c
		}
		per := 1 << d
		for start := 0; start < n; start += per {
			for k := start; k < start+per; k++ {
				if cell(perm[k]) != cell(perm[start]) {
					t.Fatalf("d = %d: the points %d..%d of the order are not one cell", d, start, start+per-1)
				}
			}
		}
	}
}
