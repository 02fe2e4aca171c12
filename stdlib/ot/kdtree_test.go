package ot

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectMedian checks the split of a k-d tree node against a sort by
// coordinate then index: the middle element is the sort's, the ones before
// it sort below it and the ones after above, and the range is a
// permutation of the original one. Values with many ties, in 2-D and 3-D.
func TestSelectMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{2, 3} {
		for _, n := range []int{1, 2, 3, 8, 9, 17, 100, 1001} {
			for _, levels := range []int{2, 5, 1000} {
				pts := make([]float64, n*d)
				for k := range pts {
					pts[k] = float64(rng.IntN(levels))
				}
				tr := kdTree{d: d, perm: make([]int32, n+4)}
				for k := range tr.perm {
					tr.perm[k] = int32((k * 7) % (n + 4))
				}
				lo, hi := 2, n+2
				var orig []int32
				for k := range tr.perm {
					if k >= lo && k < hi {
						tr.perm[k] = int32(k - lo)
						orig = append(orig, int32(k-lo))
					}
				}
				rng.Shuffle(len(orig), func(i, j int) { orig[i], orig[j] = orig[j], orig[i] })
				copy(tr.perm[lo:hi], orig)
				dim := rng.IntN(d)
				tr.selectMedian(pts, lo, hi, dim)
				key := func(i int32) kdKey { return kdKey{pts[int(i)*d+dim], i} }
				sorted := slices.Clone(orig)
				slices.SortFunc(sorted, func(a, b int32) int {
					if key(a).less(key(b)) {
						return -1
					}
					return 1
				})
				got := tr.perm[lo:hi]
				mid := len(got) / 2
				if got[mid] != sorted[mid] {
					t.Fatalf("d=%d n=%d levels=%d: middle %d, want %d", d, n, levels, got[mid], sorted[mid])
				}
				for k, i := range got {
					if k < mid && !key(i).less(key(got[mid])) || k > mid && !key(got[mid]).less(key(i)) {
						t.Fatalf("d=%d n=%d levels=%d: element %d on the wrong side", d, n, levels, k)
					}
				}
				if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(orig))) {
					t.Fatalf("d=%d n=%d levels=%d: not a permutation", d, n, levels)
				}
				for k := range tr.perm {
					if (k < lo || k >= hi) && tr.perm[k] != int32((k*7)%(n+4)) {
						t.Fatalf("d=%d n=%d: element %d outside the range changed", d, n, k)
					}
				}
			}
		}
	}
}
