package cuda

import (
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
	keys = slices.Grow(keys[:0], 3*n)[:3*n]
	key := keys[:n]
	if d == 1 {
		for i, x := range pts[:n] {
			key[i] = floatKey(x)
		}
		sortByKey(perm, keys)
		return keys
	}
	bits := 63 / d
	cells := float64(uint64(1)<<bits - 1)
	clear(key)
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
			key[i] |= interleave(q, bits, d) << k
		}
	}
	sortByKey(perm, keys)
	return keys
}

// interleave spreads the low bits bits of q so that bit b lands at bit
// b·d: by masks in two and three dimensions (q below 2^32 and 2^21), bit
// by bit otherwise.
func interleave(q uint64, bits, d int) uint64 {
	switch d {
	case 2:
		q &= 1<<32 - 1
		q = (q | q<<16) & 0x0000ffff0000ffff
		q = (q | q<<8) & 0x00ff00ff00ff00ff
		q = (q | q<<4) & 0x0f0f0f0f0f0f0f0f
		q = (q | q<<2) & 0x3333333333333333
		return (q | q<<1) & 0x5555555555555555
	case 3:
		q &= 1<<21 - 1
		q = (q | q<<32) & 0x001f00000000ffff
		q = (q | q<<16) & 0x001f0000ff0000ff
		q = (q | q<<8) & 0x100f00f00f00f00f
		q = (q | q<<4) & 0x10c30c30c30c30c3
		return (q | q<<2) & 0x1249249249249249
	}
	var r uint64
	for b := range bits {
		r |= (q >> b & 1) << (b * d)
	}
	return r
}

// floatKey maps x to an integer key in the order of cmp.Compare: NaN
// first, −0 equal to +0.
func floatKey(x float64) uint64 {
	switch {
	case x != x:
		return 0
	case x == 0:
		x = 0
	}
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// sortByKey sets perm to the indices 0..n−1 ordered by the keys in
// keys[:n], ties by index (n = len(perm)); keys[n:3n] is scratch. It
// sorts a copy of the keys (an ordered sort, without a comparison
// function) and places each index at the first position of its key
// in the sorted copy, after the earlier indices of the same key.
func sortByKey(perm []int, keys []uint64) {
	n := len(perm)
	key, sorted, seen := keys[:n], keys[n:2*n], keys[2*n:3*n]
	copy(sorted, key)
	slices.Sort(sorted)
	clear(seen)
	for i, k := range key {
		at, _ := slices.BinarySearch(sorted, k)
		perm[at+int(seen[at])] = i
		seen[at]++
	}
}

// permuteRows appends to dst the rows of width w of src in the order perm.
func permuteRows(dst, src []float64, perm []int, w int) []float64 {
	for _, i := range perm {
		dst = append(dst, src[i*w:(i+1)*w]...)
	}
	return dst
}
