package ot

import (
	"cmp"
	"math"
	"slices"
)

// kdTree is a spatial ordering of the points of one measure: a balanced
// binary tree whose nodes cover contiguous ranges of the points in tree
// order, each node with its bounding box. Points in 1-D are sorted; in
// higher dimension each node is split at the median of its widest
// coordinate. The sparse sweeps (sparse.go) use it twice: its row blocks
// (leafs) are the rows' side, and its nodes down to the leaves the
// hierarchy of column blocks that a row block's culling descends.
type kdTree struct {
	d, n  int
	perm  []int32   // perm[k] is the original index of the k-th point in tree order
	pts   []float64 // the points in tree order (n×d)
	nodes []kdNode  // preorder: every child comes after its parent
	box   []float64 // per node: d lower then d upper coordinates
	leafs []int32   // the row blocks, in tree order (kdRowSize)
	abs   float64   // the largest absolute coordinate

	src []float64 // a copy of the points as given (the cache key)

	keys []kdKey // scratch of selectMedian
}

// kdKey is a point's coordinate along a split and its original index: the
// order of a split, ties broken by the index.
type kdKey struct {
	v float64
	i int32
}

func (a kdKey) less(b kdKey) bool { return a.v < b.v || a.v == b.v && a.i < b.i }

// kdNode covers the points [lo, hi) in tree order. Leaves have no children
// (left < 0).
type kdNode struct {
	lo, hi      int32
	left, right int32
}

// kdLeafSize returns the largest number of points in a leaf in dimension
// d: the granularity of the row blocks and column blocks of the sparse
// sweeps. Measured (BenchmarkSparse): in 1-D, where a leaf's candidates are
// one contiguous range, 16 costs less than 8 (fewer leaves to cull, and
// the vector kernels run longer); in 2-D, 8 keeps far fewer candidates.
func kdLeafSize(d int) int {
	if d == 1 {
		return 16
	}
	return 8
}

// kdRowSize returns the largest number of points in a row block in
// dimension d: the rows that share one culling, one gathering of their
// candidates and one call of the leaf kernels. A row block is a node of at
// most kdRowSize(d) points whose parent has more; in 2-D and above it is
// usually the parent of two leaves, so that the culling and the gathering
// are paid once per 9–16 rows while the columns keep the granularity of
// the leaves. Measured at 10^5 points in 2-D (the value and unrolled
// gradient of bench/scale.sh, two workers): 10.0 s with the leaves as row
// blocks, 8.7 s with their parents.
func kdRowSize(d int) int {
	return max(16, kdLeafSize(d))
}

// lo and hi return the bounding box of node k.
func (t *kdTree) lo(k int32) []float64 { return t.box[int(k)*2*t.d : int(k)*2*t.d+t.d] }
func (t *kdTree) hi(k int32) []float64 { return t.box[int(k)*2*t.d+t.d : int(k)*2*t.d+2*t.d] }

// build makes t the tree of the n points pts (row-major n×d), reusing t's
// buffers. The result depends only on the points.
func (t *kdTree) build(pts []float64, n, d int) {
	t.d, t.n = d, n
	t.src = append(t.src[:0], pts[:n*d]...)
	if cap(t.perm) < n {
		t.perm = make([]int32, n)
	}
	t.perm = t.perm[:n]
	for i := range t.perm {
		t.perm[i] = int32(i)
	}
	if d == 1 {
		slices.SortFunc(t.perm, func(a, b int32) int {
			return cmp.Or(cmp.Compare(pts[a], pts[b]), cmp.Compare(a, b))
		})
	}
	t.nodes = t.nodes[:0]
	t.box = t.box[:0]
	t.leafs = t.leafs[:0]
	t.split(pts, 0, n, false)
	t.pts = grow(t.pts, n*d)
	for k, i := range t.perm {
		copy(t.pts[k*d:k*d+d], pts[int(i)*d:int(i)*d+d])
	}
	t.abs = 0
	for _, v := range t.box[:2*d] {
		t.abs = max(t.abs, math.Abs(v))
	}
}

// split appends the node of the points perm[lo:hi] and its subtree, and
// returns its index; inRow says that an ancestor is a row block.
func (t *kdTree) split(pts []float64, lo, hi int, inRow bool) int32 {
	d := t.d
	k := int32(len(t.nodes))
	t.nodes = append(t.nodes, kdNode{lo: int32(lo), hi: int32(hi), left: -1, right: -1})
	base := len(t.box)
	for range 2 * d {
		t.box = append(t.box, 0)
	}
	blo, bhi := t.box[base:base+d], t.box[base+d:base+2*d]
	copy(blo, pts[int(t.perm[lo])*d:int(t.perm[lo])*d+d])
	copy(bhi, blo)
	for _, i := range t.perm[lo+1 : hi] {
		for c, v := range pts[int(i)*d : int(i)*d+d] {
			blo[c] = min(blo[c], v)
			bhi[c] = max(bhi[c], v)
		}
	}
	if !inRow && hi-lo <= kdRowSize(d) {
		t.leafs = append(t.leafs, k)
		inRow = true
	}
	if hi-lo <= kdLeafSize(d) {
		return k
	}
	if d > 1 {
		// Split at the median of the widest coordinate.
		dim := 0
		for c := 1; c < d; c++ {
			if bhi[c]-blo[c] > bhi[dim]-blo[dim] {
				dim = c
			}
		}
		t.selectMedian(pts, lo, hi, dim)
	}
	mid := (lo + hi) / 2
	l := t.split(pts, lo, mid, inRow)
	r := t.split(pts, mid, hi, inRow)
	t.nodes[k].left, t.nodes[k].right = l, r
	return k
}

// selectMedian reorders perm[lo:hi] so that its middle element, mid =
// (lo + hi)/2, is the one a sort by coordinate dim (ties by index) would
// put there, with the elements before it ordered below it and those after
// above: the split of a node without sorting it (quickselect with the
// median of three as pivot, deterministic).
func (t *kdTree) selectMedian(pts []float64, lo, hi, dim int) {
	d := t.d
	keys := t.keys[:0]
	for _, i := range t.perm[lo:hi] {
		keys = append(keys, kdKey{pts[int(i)*d+dim], i})
	}
	t.keys = keys
	k := len(keys) / 2
	a, b := 0, len(keys)
	for b-a > 8 {
		// The median of three as pivot, moved to a.
		m := a + (b-a)/2
		if keys[m].less(keys[a]) {
			keys[a], keys[m] = keys[m], keys[a]
		}
		if keys[b-1].less(keys[a]) {
			keys[a], keys[b-1] = keys[b-1], keys[a]
		}
		if keys[b-1].less(keys[m]) {
			keys[m], keys[b-1] = keys[b-1], keys[m]
		}
		keys[a], keys[m] = keys[m], keys[a]
		p := keys[a]
		// Hoare partition of keys[a+1:b] around p (keys are distinct).
		i, j := a+1, b-1
		for {
			for i <= j && keys[i].less(p) {
				i++
			}
			for i <= j && p.less(keys[j]) {
				j--
			}
			if i >= j {
				break
			}
			keys[i], keys[j] = keys[j], keys[i]
			i++
			j--
		}
		keys[a], keys[j] = keys[j], keys[a] // p at j: below it keys[a:j], above keys[j+1:b]
		switch {
		case k < j:
			b = j
		case k > j:
			a = j + 1
		default:
			a, b = j, j
		}
	}
	if b-a > 1 {
		sub := keys[a:b]
		slices.SortFunc(sub, func(x, y kdKey) int {
			if x.less(y) {
				return -1
			}
			return 1
		})
	}
	for k, key := range keys {
		t.perm[lo+k] = key.i
	}
}

// matches reports whether t was built from the points pts.
func (t *kdTree) matches(pts []float64, n, d int) bool {
	return t.n == n && t.d == d && len(t.src) == n*d && slices.Equal(t.src, pts[:n*d])
}
