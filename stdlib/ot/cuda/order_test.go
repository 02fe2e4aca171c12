package cuda

import (
	"cmp"
	"fmt"
	"math"
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

// TestSpatialOrderMatchesComparison checks the key sort of spatialOrder
// against a comparison sort: in 1-D by cmp.Compare of the coordinates
// (NaN first, −0 equal to +0), ties by index, with infinities, signed
// zeros, NaNs, subnormals and many ties; and sortByKey on integer keys
// with many ties or few.
func TestSpatialOrderMatchesComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	special := []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0, math.Copysign(0, -1), 5e-324, -5e-324, 1, -1, 1e300, -1e300}
	var keys []uint64
	for _, n := range []int{0, 1, 2, 3, 31, 120, 257, 1000} {
		for round := range 4 {
			pts := make([]float64, n)
			for i := range pts {
				switch round {
				case 0:
					pts[i] = rng.NormFloat64()
				case 1:
					pts[i] = float64(rng.IntN(5)) - 2
				case 2:
					pts[i] = special[rng.IntN(len(special))]
				default:
					pts[i] = 1 + float64(rng.IntN(1<<10))*0x1p-52 // differ in the low bytes only
				}
			}
			perm := make([]int, n)
			keys = spatialOrder(perm, keys, pts, 1)
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			slices.SortFunc(want, func(a, b int) int {
				return cmp.Or(cmp.Compare(pts[a], pts[b]), cmp.Compare(a, b))
			})
			if !slices.Equal(perm, want) {
				t.Fatalf("n = %d, round %d: order %v, want %v", n, round, perm, want)
			}
			// Integer keys: 16 to 65536 values (from many ties to few),
			// at various bit positions.
			ks := make([]uint64, 3*n)
			for i := range n {
				ks[i] = uint64(rng.IntN(16<<(4*round))) << (12 * round)
			}
			got := make([]int, n)
			sortByKey(got, slices.Clone(ks))
			slices.SortFunc(want, func(a, b int) int { return cmp.Or(cmp.Compare(ks[a], ks[b]), cmp.Compare(a, b)) })
			if !slices.Equal(got, want) {
				t.Fatalf("n = %d, round %d: integer order %v, want %v", n, round, got, want)
			}
		}
	}
}

// BenchmarkSpatialOrder measures the order of Experiment A's 120 points
// (1-D) and of 256 points in 2-D, as each fused evaluation computes it
// for both measures.
func BenchmarkSpatialOrder(b *testing.B) {
	for _, c := range []struct{ n, d int }{{120, 1}, {256, 2}} {
		b.Run(fmt.Sprintf("n=%d/d=%d", c.n, c.d), func(b *testing.B) {
			pts := normalPoints(rand.New(rand.NewPCG(1, 2)), c.n*c.d, 0, 1)
			perm := make([]int, c.n)
			var keys []uint64
			for b.Loop() {
				keys = spatialOrder(perm, keys, pts, c.d)
			}
		})
	}
}

// TestInterleave checks the masked bit spreading of two and three
// dimensions against the bit-by-bit loop.
func TestInterleave(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for _, d := range []int{2, 3} {
		bits := 63 / d
		for range 10000 {
			q := rng.Uint64() & (1<<bits - 1)
			var want uint64
			for b := range bits {
				want |= (q >> b & 1) << (b * d)
			}
			if got := interleave(q, bits, d); got != want {
				t.Fatalf("d = %d: interleave(%#x) = %#x, want %#x", d, q, got, want)
			}
		}
	}
}
