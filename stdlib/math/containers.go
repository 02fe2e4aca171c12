package mathlib

import (
	"cmp"
	"math"
	"slices"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// length returns the number of elements of a one-dimensional container
// (vector, row_vector, array[] int, array[] real).
func length(v value) int {
	if isInt(v) {
		return len(v.Ints)
	}
	return v.AD.Len()
}

// pick returns the elements idx (0-based) of a one-dimensional container,
// as a container of the same type: one Gather node for reals.
func pick(t *autodiff.Tape, v value, idx []int) value {
	if isInt(v) {
		xs := make([]int, len(idx))
		for k, i := range idx {
			xs[k] = v.Ints[i]
		}
		return intArr(xs)
	}
	s := autodiff.VectorShape(len(idx))
	if v.AD.Kind() == autodiff.RowVector {
		s = autodiff.RowVectorShape(len(idx))
	}
	return reals(v.Type, gather(t, v.AD, idx, s), []int{len(idx)})
}

// slice returns elements [start, start+n) of a one-dimensional container
// (a free view for reals).
func slice(t *autodiff.Tape, v value, start, n int) value {
	if isInt(v) {
		return intArr(slices.Clone(v.Ints[start : start+n]))
	}
	return reals(v.Type, t.Slice(v.AD, start, n), []int{n})
}

func registerContainers(m stdlib.Impls) {
	rep := func(name string, shape func(args []value) autodiff.Shape) {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			if err := count(name, args[1].Int); err != nil {
				return value{}, err
			}
			return stdlib.ADValue(c.Tape.Fill(toAD(c.Tape, args[0]), shape(args))), nil
		})
	}
	rep("rep_vector", func(a []value) autodiff.Shape { return autodiff.VectorShape(a[1].Int) })
	rep("rep_row_vector", func(a []value) autodiff.Shape { return autodiff.RowVectorShape(a[1].Int) })
	m.Add("rep_matrix", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		sizes := []int{args[1].Int}
		if len(args) == 3 {
			sizes = append(sizes, args[2].Int)
		} else {
			sizes = append(sizes, args[0].AD.Len())
		}
		if err := count("rep_matrix", sizes...); err != nil {
			return value{}, err
		}
		if len(args) == 3 {
			return stdlib.ADValue(t.Fill(toAD(t, args[0]), autodiff.MatrixShape(args[1].Int, args[2].Int))), nil
		}
		x, k := args[0].AD, args[1].Int
		n := x.Len()
		var idx []int
		var s autodiff.Shape
		if x.Kind() == autodiff.Vector { // n×k, every column x
			s = autodiff.MatrixShape(n, k)
			for i := range n {
				for range k {
					idx = append(idx, i)
				}
			}
		} else { // k×n, every row x
			s = autodiff.MatrixShape(k, n)
			for range k {
				for j := range n {
					idx = append(idx, j)
				}
			}
		}
		return stdlib.ADValue(gather(t, x, idx, s)), nil
	})
	m.Add("rep_array", func(c *ctx, args, _ []value) (value, error) {
		return repArray(c.Tape, args[0], args[1:])
	})
	m.Add("to_vector", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(flatten(c.Tape, args[0], autodiff.Vector)), nil
	})
	m.Add("to_row_vector", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(flatten(c.Tape, args[0], autodiff.RowVector)), nil
	})
	m.Add("to_matrix", toMatrix)
	m.Add("to_array_1d", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		if isInt(v) && v.Type.Dims > 0 {
			return intArr(slices.Clone(v.Ints)), nil
		}
		x := flattenAll(c.Tape, v)
		return realArr(x, []int{x.Len()}), nil
	})
	m.Add("to_int", func(c *ctx, args, _ []value) (value, error) {
		x := scalarOf(c.Tape, args[0])
		if math.IsNaN(x) || math.Trunc(x) > math.MaxInt32 || math.Trunc(x) < math.MinInt32 {
			return value{}, errorf("to_int", "%v is out of the range of int (32-bit: %d to %d)", x, math.MinInt32, math.MaxInt32)
		}
		return stdlib.IntValue(int(x)), nil
	})
	m.Add("append_row", func(c *ctx, args, _ []value) (value, error) {
		return appendRow(c.Tape, toAD(c.Tape, args[0]), toAD(c.Tape, args[1]))
	})
	m.Add("append_col", func(c *ctx, args, _ []value) (value, error) {
		return appendCol(c.Tape, toAD(c.Tape, args[0]), toAD(c.Tape, args[1]))
	})
	m.Add("append_array", func(c *ctx, args, _ []value) (value, error) {
		return appendArray(c.Tape, args[0], args[1])
	})
	m.Add("head", func(c *ctx, args, _ []value) (value, error) {
		v, n := args[0], args[1].Int
		if n < 0 || n > length(v) {
			return value{}, errorf("head", "n = %d out of range for size %d", n, length(v))
		}
		return slice(c.Tape, v, 0, n), nil
	})
	m.Add("tail", func(c *ctx, args, _ []value) (value, error) {
		v, n := args[0], args[1].Int
		if n < 0 || n > length(v) {
			return value{}, errorf("tail", "n = %d out of range for size %d", n, length(v))
		}
		return slice(c.Tape, v, length(v)-n, n), nil
	})
	m.Add("segment", func(c *ctx, args, _ []value) (value, error) {
		v, i, n := args[0], args[1].Int, args[2].Int
		if i < 1 || n < 0 || i-1+n > length(v) {
			return value{}, errorf("segment", "start %d and length %d out of range for size %d", i, n, length(v))
		}
		return slice(c.Tape, v, i-1, n), nil
	})
	m.Add("reverse", func(c *ctx, args, _ []value) (value, error) {
		n := length(args[0])
		idx := make([]int, n)
		for i := range idx {
			idx[i] = n - 1 - i
		}
		return pick(c.Tape, args[0], idx), nil
	})
	for _, name := range []string{"sort_asc", "sort_desc", "sort_indices_asc", "sort_indices_desc"} {
		desc := name == "sort_desc" || name == "sort_indices_desc"
		indices := name == "sort_indices_asc" || name == "sort_indices_desc"
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			xs := floats(c.Tape, args[0])
			for _, x := range xs {
				if math.IsNaN(x) {
					return value{}, errorf(name, "argument contains NaN")
				}
			}
			idx := make([]int, len(xs))
			for i := range idx {
				idx[i] = i
			}
			// Ties keep their order (the index breaks them), as in Stan.
			slices.SortFunc(idx, func(a, b int) int {
				c := cmp.Compare(xs[a], xs[b])
				if desc {
					c = -c
				}
				if c == 0 {
					return cmp.Compare(a, b)
				}
				return c
			})
			if indices {
				for i := range idx {
					idx[i]++
				}
				return intArr(idx), nil
			}
			return pick(c.Tape, args[0], idx), nil
		})
	}
	m.Add("rank", func(c *ctx, args, _ []value) (value, error) {
		xs := floats(c.Tape, args[0])
		s := args[1].Int
		if s < 1 || s > len(xs) {
			return value{}, errorf("rank", "index %d out of range for size %d", s, len(xs))
		}
		r := 0
		for _, x := range xs {
			if x < xs[s-1] {
				r++
			}
		}
		return stdlib.IntValue(r), nil
	})
	m.Add("cumulative_sum", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		if isInt(v) {
			out := make([]int, len(v.Ints))
			s := 0
			for i, n := range v.Ints {
				s += n
				if !lang.IsInt32(s) {
					return intResult("cumulative_sum", s)
				}
				out[i] = s
			}
			return intArr(out), nil
		}
		return reals(v.Type, c.Tape.CumSum(v.AD), v.Dims), nil
	})
	for name, typ := range map[string]lang.Type{"linspaced_vector": vecType, "linspaced_row_vector": rowType, "linspaced_array": realArray} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			return linspaced(c.Tape, name, typ, args)
		})
	}
	m.Add("one_hot_vector", func(c *ctx, args, _ []value) (value, error) {
		n, k := args[0].Int, args[1].Int
		if n < 1 || k < 1 || k > n {
			return value{}, errorf("one_hot_vector", "index %d out of range for size %d", k, n)
		}
		xs := make([]float64, n)
		xs[k-1] = 1
		return stdlib.ADValue(c.Tape.ConstVec(xs)), nil
	})
	for name, x := range map[string]float64{"zeros_vector": 0, "ones_vector": 1} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			n := args[0].Int
			if err := count(name, n); err != nil {
				return value{}, err
			}
			return stdlib.ADValue(c.Tape.Fill(c.Tape.Const(x), autodiff.VectorShape(n))), nil
		})
	}
}

// scalarsOf returns the number of scalars of x (1 for an int or a real).
func scalarsOf(x value) int {
	switch {
	case hasElems(x):
		n := 0
		for _, e := range x.Elems {
			n += scalarsOf(e)
		}
		return n
	case isInt(x) && x.Type.Dims > 0:
		return len(x.Ints)
	case isInt(x):
		return 1
	}
	return x.AD.Len()
}

// repArray returns an array of the given sizes every element of which is
// x: ints are copied, reals are one Gather node (a Fill for a scalar),
// vectors and matrices are shared (values are immutable).
func repArray(t *autodiff.Tape, x value, sizes []value) (value, error) {
	dims := make([]int, 0, len(sizes)+len(x.Dims))
	k := 1
	for _, s := range sizes {
		dims = append(dims, s.Int)
	}
	// The result holds k copies of x's scalars (shared for vectors and
	// matrices, but k of them all the same).
	if err := count("rep_array", append(slices.Clone(dims), scalarsOf(x))...); err != nil {
		return value{}, err
	}
	for _, s := range sizes {
		k *= s.Int
	}
	dims = append(dims, x.Dims...)
	typ := lang.ArrayOf(x.Type, len(sizes))
	out := value{Type: typ, Dims: dims}
	switch {
	case hasElems(x):
		for range k {
			out.Elems = append(out.Elems, x.Elems...)
		}
	case x.Type.Base.IsLinalg():
		out.Elems = make([]value, k)
		for i := range out.Elems {
			out.Elems[i] = x
		}
	case isInt(x) && x.Type.Dims == 0:
		out.Ints = make([]int, k)
		for i := range out.Ints {
			out.Ints[i] = x.Int
		}
	case isInt(x):
		for range k {
			out.Ints = append(out.Ints, x.Ints...)
		}
	case x.Type.Dims == 0:
		out.AD = t.Fill(x.AD, autodiff.VectorShape(k))
	default:
		n := x.AD.Len()
		idx := make([]int, 0, k*n)
		for range k {
			for i := range n {
				idx = append(idx, i)
			}
		}
		out.AD = t.Gather(x.AD, idx)
	}
	return out, nil
}

// flatten returns a vector, row vector, 1-d array or matrix as a vector or
// row vector (kind); matrices are read in column-major order.
func flatten(t *autodiff.Tape, v value, kind autodiff.Kind) ad {
	x := toAD(t, v)
	s := autodiff.VectorShape(x.Len())
	if kind == autodiff.RowVector {
		s = autodiff.RowVectorShape(x.Len())
	}
	if x.Kind() == autodiff.Matrix {
		return gather(t, x, colMajor(x.Rows(), x.Cols()), s)
	}
	return t.Reshape(x, s)
}

// flattenAll returns every scalar of v as one vector: arrays in row-major
// order, matrices (also inside arrays) in column-major order.
func flattenAll(t *autodiff.Tape, v value) ad {
	if !hasElems(v) {
		return flatten(t, v, autodiff.Vector)
	}
	parts := make([]ad, len(v.Elems))
	n := 0
	for i, e := range v.Elems {
		parts[i] = flatten(t, e, autodiff.Vector)
		n += parts[i].Len()
	}
	return t.Concat(autodiff.VectorShape(n), parts...)
}

func toMatrix(c *ctx, args, _ []value) (value, error) {
	t := c.Tape
	v := args[0]
	switch {
	case len(args) == 3:
		x := toAD(t, v)
		r, k := args[1].Int, args[2].Int
		if r < 0 || k < 0 || r*k != x.Len() {
			return value{}, errorf("to_matrix", "cannot fill a %d×%d matrix with %d elements", r, k, x.Len())
		}
		// Element (i, j) of the result is element j·r+i of x in
		// column-major order.
		src := make([]int, x.Len()) // column-major position → row-major index of x
		if x.Kind() == autodiff.Matrix {
			src = colMajor(x.Rows(), x.Cols())
		} else {
			for i := range src {
				src[i] = i
			}
		}
		idx := make([]int, 0, r*k)
		for i := range r {
			for j := range k {
				idx = append(idx, src[j*r+i])
			}
		}
		return stdlib.ADValue(gather(t, x, idx, autodiff.MatrixShape(r, k))), nil
	case v.Type == matType:
		return v, nil
	case v.Type.Base == lang.RowVector: // array[] row_vector
		if len(v.Elems) == 0 {
			return stdlib.ADValue(t.NewConst(autodiff.MatrixShape(0, 0), nil)), nil
		}
		k := v.Elems[0].AD.Len()
		parts := make([]ad, len(v.Elems))
		for i, e := range v.Elems {
			if e.AD.Len() != k {
				return value{}, errorf("to_matrix", "row sizes differ: %d and %d", k, e.AD.Len())
			}
			parts[i] = e.AD
		}
		return stdlib.ADValue(t.Concat(autodiff.MatrixShape(len(parts), k), parts...)), nil
	}
	// array[,] real or array[,] int: row-major like a matrix.
	x := toAD(t, v)
	return stdlib.ADValue(t.Reshape(x, autodiff.MatrixShape(v.Dims[0], v.Dims[1]))), nil
}

// rowsCols returns the dimensions of x as a matrix: a scalar is 1×1, a
// vector n×1, a row vector 1×n.
func rowsCols(x ad) (int, int) { return x.Rows(), x.Cols() }

// appendRow stacks a on top of b.
func appendRow(t *autodiff.Tape, a, b ad) (value, error) {
	ra, ca := rowsCols(a)
	rb, cb := rowsCols(b)
	if ca != cb {
		return value{}, errorf("append_row", "columns differ: %d and %d", ca, cb)
	}
	s := autodiff.MatrixShape(ra+rb, ca)
	if a.Kind() != autodiff.Matrix && a.Kind() != autodiff.RowVector &&
		b.Kind() != autodiff.Matrix && b.Kind() != autodiff.RowVector {
		s = autodiff.VectorShape(ra + rb)
	}
	return stdlib.ADValue(t.Concat(s, a, b)), nil
}

// appendCol puts b to the right of a: a Concat of both, then a Gather
// into the result's row-major order.
func appendCol(t *autodiff.Tape, a, b ad) (value, error) {
	ra, ca := rowsCols(a)
	rb, cb := rowsCols(b)
	if ra != rb {
		return value{}, errorf("append_col", "rows differ: %d and %d", ra, rb)
	}
	if a.Kind() != autodiff.Matrix && a.Kind() != autodiff.Vector &&
		b.Kind() != autodiff.Matrix && b.Kind() != autodiff.Vector {
		return stdlib.ADValue(t.Concat(autodiff.RowVectorShape(ca+cb), a, b)), nil
	}
	both := t.Concat(autodiff.VectorShape(a.Len()+b.Len()), a, b)
	idx := make([]int, 0, ra*(ca+cb))
	for i := range ra {
		for j := range ca {
			idx = append(idx, i*ca+j)
		}
		for j := range cb {
			idx = append(idx, a.Len()+i*cb+j)
		}
	}
	return stdlib.ADValue(gather(t, both, idx, autodiff.MatrixShape(ra, ca+cb))), nil
}

// appendArray concatenates two arrays along their first dimension.
func appendArray(t *autodiff.Tape, a, b value) (value, error) {
	if !slices.Equal(a.Dims[1:], b.Dims[1:]) {
		return value{}, errorf("append_array", "element sizes differ: %v and %v", a.Dims[1:], b.Dims[1:])
	}
	dims := append([]int{a.Dims[0] + b.Dims[0]}, a.Dims[1:]...)
	switch {
	case isInt(a) && isInt(b):
		return value{Type: a.Type, Ints: slices.Concat(a.Ints, b.Ints), Dims: dims}, nil
	case hasElems(a):
		if len(a.Elems) > 0 && len(b.Elems) > 0 {
			x, y := a.Elems[0].AD, b.Elems[0].AD
			if x.Rows() != y.Rows() || x.Cols() != y.Cols() {
				return value{}, errorf("append_array", "element sizes differ: %d×%d and %d×%d", x.Rows(), x.Cols(), y.Rows(), y.Cols())
			}
		}
		return value{Type: a.Type, Elems: slices.Concat(a.Elems, b.Elems), Dims: dims}, nil
	}
	x, y := toAD(t, a), toAD(t, b)
	return reals(a.Type.Promoted(), t.Concat(autodiff.VectorShape(x.Len()+y.Len()), x, y), dims), nil
}

// linspaced returns n equally spaced values from lo to hi (one partials
// node): element i is lo + (hi-lo)·i/(n-1), and hi alone when n = 1.
func linspaced(t *autodiff.Tape, name string, typ lang.Type, args []value) (value, error) {
	n := args[0].Int
	if err := count(name, n); err != nil {
		return value{}, err
	}
	lo, hi := toAD(t, args[1]), toAD(t, args[2])
	l, h := t.Scalar(lo), t.Scalar(hi)
	if !(l <= h) {
		return value{}, errorf(name, "low %v is greater than high %v", l, h)
	}
	s := autodiff.VectorShape(n)
	if typ == rowType {
		s = autodiff.RowVectorShape(n)
	}
	p := t.ElementwisePartials(s, lo, hi)
	out, dl, dh := p.Out(), p.D(0), p.D(1)
	for i := range out {
		w := 1.0
		if n > 1 {
			w = float64(i) / float64(n-1)
		}
		out[i] = l + (h-l)*w
		if n > 1 && i == n-1 {
			out[i] = h
		}
		if dl != nil {
			dl[i] = 1 - w
		}
		if dh != nil {
			dh[i] = w
		}
	}
	return reals(typ, p.Value(), []int{n}), nil
}
