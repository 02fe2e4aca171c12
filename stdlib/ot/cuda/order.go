package cuda

import (
	"cmp"
	"math"
	"slices"
)

// spatialOrder sets perm (of length n) to an order of the n points of
// dimension d in pts (row-major) in which points close in space tend to be
// close in the order, as the fused kernel's truncation needs (see
// kernels/fused.cuh): by coordinate in 1-D, and in higher dimension by the
// Morton (Z-order) key of the points quantized on a grid over their
// bounding box. Ties are broken by index, so the order is a function of
// the points. keys is scratch space, returned grown.
func spatialOrder(perm []int, keys []uint64, pts []float64, d int) []uint64 {
	n := len(perm)
	for i := range perm {
		perm[i] = i
	}
	if d == 1 {
		slices.SortFunc(perm, func(a, b int) int {
			return cmp.Or(cmp.Compare(pts[a], pts[b]), cmp.Compare(a, b))
		})
		return keys
	}
	bits := 63 / d
	cells := float64(uint64(1)<<bits - 1)
	keys = slices.Grow(keys[:0], n)[:n]
	clear(keys)
	for k := range d {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range n {
			lo, hi = min(lo, pts[i*d+k]), max(hi, pts[i*d+k])
		}
		scale := 0.0
		if hi > lo {
			scale = cells / (hi - lo)
		}
		for i := range n {
			q := uint64(min((pts[i*d+k]-lo)*scale, cells))
			for b := range bits {
				keys[i] |= (q >> b & 1) << (b*d + k)
			}
		}
	}
	slices.SortFunc(perm, func(a, b int) int {
		return cmp.Or(cmp.Compare(keys[a], keys[b]), cmp.Compare(a, b))
	})
	return keys
}

// permuteRows appends to dst the rows of width w of src in the order perm.
func permuteRows(dst, src []float64, perm []int, w int) []float64 {
	for _, i := range perm {
		dst = append(dst, src[i*w:(i+1)*w]...)
	}
	return dst
}
