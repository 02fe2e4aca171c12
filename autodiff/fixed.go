package autodiff

// fixedDepth bounds how many concatenations and gathers FixedElements
// looks back through.
const fixedDepth = 4

// FixedElements sets fixed[i] for each element i of v that provably has a
// zero derivative with respect to every variable, and reports whether it
// set any: every element of a constant, and the elements that the
// concatenations and gathers which produced v (append_row, append_col,
// multiple indexing, containers of vectors) took from constants. The
// other entries of fixed are left as they are; fixed must hold v.Len()
// values. A primitive uses it to skip the derivatives that its caller
// would discard, such as those of the data columns of a matrix of points
// built by append_col.
func (t *Tape) FixedElements(v Value, fixed []bool) bool {
	n := v.Len()
	if len(fixed) < n || !v.IsValid() {
		return false
	}
	return t.fixedElements(v.off, n, v.IsConst(), fixed[:n], fixedDepth)
}

// fixedElements is FixedElements for the n elements at offset off of the
// arena (a constant when isConst), looking through depth more records.
func (t *Tape) fixedElements(off int32, n int, isConst bool, fixed []bool, depth int) bool {
	if isConst {
		for i := range fixed {
			fixed[i] = true
		}
		return n > 0
	}
	if depth == 0 {
		return false
	}
	nd, ok := t.producer(off, n)
	if !ok {
		return false
	}
	set := false
	switch nd.op {
	case opConcat:
		k := 0
		for _, p := range t.args[nd.a:nd.b] {
			l := min(p.Len(), n-k)
			if l > 0 && t.fixedElements(p.off, l, p.IsConst(), fixed[k:k+l], depth-1) {
				set = true
			}
			if k += p.Len(); k >= n {
				break
			}
		}
	case opGather:
		idx := t.ints[nd.c : int(nd.c)+n]
		m := 0 // the extent of the gathered value
		for _, i := range idx {
			m = max(m, int(i)+1)
		}
		src := t.fixed[depth-1]
		if cap(src) < m {
			src = make([]bool, m)
			t.fixed[depth-1] = src
		}
		src = src[:m]
		clear(src)
		if !t.fixedElements(nd.a, m, false, src, depth-1) {
			return false
		}
		for k, i := range idx {
			if src[i] {
				fixed[k] = true
				set = true
			}
		}
	}
	return set
}

// producer returns the record whose output starts at offset off and has
// at least n elements (none for variables, constants and views inside
// another value). Records are made in the order of their outputs'
// offsets, so the search stops at the first output before off.
func (t *Tape) producer(off int32, n int) (node, bool) {
	for k := len(t.nodes) - 1; k >= 0; k-- {
		switch nd := t.nodes[k]; {
		case nd.out == off:
			return nd, int(nd.n) >= n
		case nd.out < off:
			return node{}, false
		}
	}
	return node{}, false
}
