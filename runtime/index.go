package runtime

import (
	"fmt"
	"math"
	"strings"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// sel is one evaluated index: the 0-based positions it selects and whether
// it drops its dimension (a single index does).
type sel struct {
	pos  []int
	drop bool
	all  bool // every position of the dimension (resolved against its size)
}

// selection evaluates index items against x.
func (ev *evaluator) selection(items []*ir.IndexItem, x stdlib.Value) ([]sel, error) {
	dims := fullDims(ev.tape(), x)
	out := make([]sel, len(items))
	for k, it := range items {
		size := -1
		if k < len(dims) {
			size = dims[k]
		}
		switch it.Kind {
		case ir.IndexSingle:
			i, err := ev.intExpr(it.Lo)
			if err != nil {
				return nil, err
			}
			if i < 1 || i > size {
				return nil, ev.errorf(it.Pos, "index %d out of range: the size is %d", i, size)
			}
			out[k] = sel{pos: []int{i - 1}, drop: true}
		case ir.IndexMulti:
			v, err := ev.expr(it.Lo)
			if err != nil {
				return nil, err
			}
			pos := make([]int, len(v.Ints))
			for j, i := range v.Ints {
				if i < 1 || i > size {
					return nil, ev.errorf(it.Pos, "multi-index element %d is %d, out of range: the size is %d", j+1, i, size)
				}
				pos[j] = i - 1
			}
			out[k] = sel{pos: pos}
		case ir.IndexRange, ir.IndexAll:
			lo, hi := 1, size
			var err error
			if it.Lo != nil {
				if lo, err = ev.intExpr(it.Lo); err != nil {
					return nil, err
				}
			}
			if it.Hi != nil {
				if hi, err = ev.intExpr(it.Hi); err != nil {
					return nil, err
				}
			}
			if hi >= lo && (lo < 1 || hi > size) {
				return nil, ev.errorf(it.Pos, "range %d:%d out of range: the size is %d", lo, hi, size)
			}
			var pos []int
			for i := lo; i <= hi; i++ {
				pos = append(pos, i-1)
			}
			out[k] = sel{pos: pos, all: it.Kind == ir.IndexAll}
		}
	}
	return out, nil
}

// flatPositions expands selections over a value with the given dims into
// row-major flat positions, and returns the kept dimensions' sizes.
func flatPositions(dims []int, sels []sel) (flat []int, kept []int) {
	full := make([]sel, len(dims))
	for k := range dims {
		if k < len(sels) {
			full[k] = sels[k]
		} else {
			pos := make([]int, dims[k])
			for i := range pos {
				pos[i] = i
			}
			full[k] = sel{pos: pos}
		}
		if !full[k].drop {
			kept = append(kept, len(full[k].pos))
		}
	}
	strides := make([]int, len(dims))
	s := 1
	for k := len(dims) - 1; k >= 0; k-- {
		strides[k] = s
		s *= dims[k]
	}
	flat = []int{0}
	for k := range dims {
		next := make([]int, 0, len(flat)*len(full[k].pos))
		for _, f := range flat {
			for _, p := range full[k].pos {
				next = append(next, f+p*strides[k])
			}
		}
		flat = next
	}
	return flat, kept
}

// index returns x[sels] with the static result type want.
func (ev *evaluator) index(x stdlib.Value, sels []sel, want lang.Type) (stdlib.Value, error) {
	t := ev.tape()
	if x.Type.Dims > 0 && x.Type.Base.IsLinalg() {
		// Select elements over the array dimensions, then index each.
		nArr := x.Type.Dims
		arrSels := sels
		var rest []sel
		if len(sels) > nArr {
			arrSels, rest = sels[:nArr], sels[nArr:]
		}
		flat, kept := flatPositions(x.Dims, arrSels)
		elems := make([]stdlib.Value, len(flat))
		elemType := lang.Type{Base: x.Type.Base}
		if len(rest) > 0 {
			elemType, _ = restType(x.Type.Base, rest)
		}
		for i, f := range flat {
			el := x.Elems[f]
			if len(rest) > 0 {
				var err error
				if el, err = ev.index(el, rest, elemType); err != nil {
					return el, err
				}
			}
			elems[i] = el
		}
		if len(kept) == 0 {
			return elems[0], nil
		}
		return ev.makeArrayDims(lang.ArrayOf(elemType, len(kept)), kept, elems), nil
	}
	dims := fullDims(t, x)
	flat, kept := flatPositions(dims, sels)
	if x.Type.Base == lang.Int {
		if len(kept) == 0 {
			return stdlib.IntValue(x.Ints[flat[0]]), nil
		}
		ints := make([]int, len(flat))
		for i, f := range flat {
			ints[i] = x.Ints[f]
		}
		return stdlib.Value{Type: want, Ints: ints, Dims: kept}, nil
	}
	if len(kept) == 0 {
		return stdlib.RealValue(t.Index(x.AD, flat[0])), nil
	}
	g := t.Gather(x.AD, flat)
	switch {
	case want.Dims > 0:
		return stdlib.Value{Type: want, AD: g, Dims: kept[:want.Dims]}, nil
	case want.Base == lang.RowVector:
		return stdlib.ADValue(t.Reshape(g, autodiff.RowVectorShape(len(flat)))), nil
	case want.Base == lang.Matrix:
		return stdlib.ADValue(t.Reshape(g, autodiff.MatrixShape(kept[0], kept[1]))), nil
	}
	return stdlib.ADValue(g), nil
}

// restType is the type of a vector, row vector or matrix indexed by sels.
func restType(b lang.Base, sels []sel) (lang.Type, bool) {
	switch b {
	case lang.Vector, lang.RowVector:
		if sels[0].drop {
			return lang.RealType, true
		}
		return lang.Type{Base: b}, true
	case lang.Matrix:
		rowDrop := sels[0].drop
		colDrop := len(sels) > 1 && sels[1].drop
		switch {
		case rowDrop && colDrop:
			return lang.RealType, true
		case rowDrop:
			return lang.RowVectorType, true
		case colDrop:
			return lang.VectorType, true
		}
		return lang.MatrixType, true
	}
	return lang.BadType, false
}

// makeArrayDims builds an array of type at with sizes dims from its
// elements in row-major order.
func (ev *evaluator) makeArrayDims(at lang.Type, dims []int, elems []stdlib.Value) stdlib.Value {
	v := ev.makeArray(at, nil, elems)
	v.Dims = dims
	return v
}

// outerLen returns the number of elements a foreach loop visits.
func (ev *evaluator) outerLen(v stdlib.Value) int {
	if v.Type.Dims > 0 {
		return v.Dims[0]
	}
	return v.Len()
}

// outerElem returns element i of the outermost dimension (for a vector or
// matrix: element i in the order Stan's foreach visits, row-major here).
func (ev *evaluator) outerElem(v stdlib.Value, i int) (stdlib.Value, error) {
	if v.Type.Dims == 0 {
		return stdlib.RealValue(ev.tape().Index(v.AD, i)), nil
	}
	return ev.index(v, []sel{{pos: []int{i}, drop: true}}, v.Type.Elem())
}

// read returns the current value of a variable.
func (ev *evaluator) read(v *ir.Var, p lang.Pos) (stdlib.Value, error) {
	s := &ev.frame[v.Slot]
	if !s.set {
		return stdlib.Value{}, ev.errorf(p, "%s is used before it has a value", v.Name)
	}
	ev.pack(s)
	return s.v, nil
}

// pack makes the whole value of a container assigned element by element
// (dirty) current: its cells joined into one tape value.
func (ev *evaluator) pack(s *slot) {
	if s.dirty {
		s.v.AD = ev.tape().Concat(s.packedShape(), s.cells...)
		s.dirty = false
	}
}

// packedShape is the shape of the whole value of a container assigned
// element by element.
func (s *slot) packedShape() autodiff.Shape {
	if s.v.Type.Dims == 0 {
		return s.v.AD.Shape()
	}
	return autodiff.VectorShape(len(s.cells)) // a real array's flat storage
}

// declare creates a variable with its declared sizes and initial value
// (NaN for reals, the smallest int for ints, as Stan does).
func (ev *evaluator) declare(d *ir.Decl) error {
	if d.SizesFromValue {
		v, err := ev.expr(d.Init)
		if err != nil {
			return err
		}
		v = ev.convert(v, d.Var.Type)
		ev.frame[d.Var.Slot] = slot{dims: fullDims(ev.tape(), v), set: true}
		return ev.store(d.Var, d.Init.Position(), v)
	}
	dims, err := ev.declDims(d)
	if err != nil {
		return err
	}
	s := slot{dims: dims, set: true}
	s.v = ev.defaultValue(d.Var.Type, dims)
	ev.frame[d.Var.Slot] = s
	if d.Init == nil {
		return nil
	}
	v, err := ev.expr(d.Init)
	if err != nil {
		return err
	}
	return ev.store(d.Var, d.Init.Position(), v)
}

// declDims evaluates the sizes of a declaration.
func (ev *evaluator) declDims(d *ir.Decl) ([]int, error) {
	var dims []int
	for _, e := range append(append([]ir.Expr{}, d.ArraySizes...), d.Sizes...) {
		n, err := ev.intExpr(e)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, ev.errorf(e.Position(), "size of %s is negative: %d", d.Var.Name, n)
		}
		dims = append(dims, n)
	}
	return dims, ev.checkSize(d, dims)
}

// checkSize refuses a declaration whose sizes need more than half of the
// machine's memory, or more than one evaluation may hold, before anything
// is allocated for it.
func (ev *evaluator) checkSize(d *ir.Decl, dims []int) error {
	if d.Var.Type == lang.IntType {
		return nil
	}
	n, over := stdlib.ExceedsFootprint(d.Var.Type, dims)
	if over {
		return ev.errorf(d.Pos, "%s %s needs %s, %s", d.TypeText, d.Var.Name, stdlib.FootprintText(d.Var.Type, dims, n), sysmem.Beyond())
	}
	// A declaration is executed at every evaluation, and the memory of
	// the last ones is not yet collected: it must fit in what one
	// evaluation may hold, as the tape's values do (an array's element
	// headers and an int array's values are not on the tape).
	if ev.maxValues > 0 && n > float64(ev.maxValues) {
		return ev.errorf(d.Pos, "%s %s needs %s, more than the %s one evaluation may hold (%s)",
			d.TypeText, d.Var.Name, stdlib.FootprintText(d.Var.Type, dims, n), sysmem.Bytes(8*float64(ev.maxValues)), ev.evaluationBound())
	}
	return nil
}

// defaultValue returns an unassigned value of type typ and sizes dims.
func (ev *evaluator) defaultValue(typ lang.Type, dims []int) stdlib.Value {
	t := ev.tape()
	arr := dims[:typ.Dims]
	n := product(arr)
	switch {
	case typ == lang.IntType:
		return stdlib.IntValue(minInt)
	case typ.Base == lang.Int:
		ints := make([]int, n)
		for i := range ints {
			ints[i] = minInt
		}
		return stdlib.Value{Type: typ, Ints: ints, Dims: append([]int(nil), arr...)}
	case typ.Dims > 0 && typ.Base.IsLinalg():
		elems := make([]stdlib.Value, n)
		for i := range elems {
			elems[i] = ev.defaultValue(lang.Type{Base: typ.Base}, dims[typ.Dims:])
		}
		return stdlib.Value{Type: typ, Elems: elems, Dims: append([]int(nil), arr...)}
	}
	shape := adShape(typ, dims[typ.Dims:])
	if typ.Dims > 0 {
		shape = autodiff.VectorShape(n)
	}
	// NaN is the value of an unassigned real, as in Stan.
	v := stdlib.Value{Type: typ, AD: t.Fill(t.Const(math.NaN()), shape)}
	if typ.Dims > 0 {
		v.Dims = append([]int(nil), arr...)
	}
	return v
}

const minInt = -2147483648

// store assigns a whole value to a variable, checking its sizes.
func (ev *evaluator) store(v *ir.Var, p lang.Pos, val stdlib.Value) error {
	s := &ev.frame[v.Slot]
	val = ev.convert(val, v.Type)
	if got := fullDims(ev.tape(), val); !sameDims(got, s.dims) && !(val.Type.Dims > 0 && len(val.Elems) == 0 && len(got) > 0 && got[0] == 0) {
		return ev.errorf(p, "size mismatch assigning to %s: declared %s, value has %s", v.Name, dimsText(s.dims), dimsText(got))
	}
	if val.Type.Base == lang.Int && val.Type.Dims > 0 {
		val.Ints = append([]int(nil), val.Ints...) // values must not alias
	}
	if val.Type.Dims > 0 && val.Type.Base.IsLinalg() {
		val.Elems = append([]stdlib.Value(nil), val.Elems...)
	}
	s.v, s.cells, s.dirty = val, nil, false
	return nil
}

func sameDims(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func dimsText(d []int) string {
	if len(d) == 0 {
		return "a scalar"
	}
	parts := make([]string, len(d))
	for i, n := range d {
		parts[i] = fmt.Sprint(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// assign executes lhs op= rhs.
func (ev *evaluator) assign(a *ir.Assign) error {
	rhs, err := ev.expr(a.RHS)
	if err != nil {
		return err
	}
	if a.Op != "=" {
		cur, err := ev.readIndexed(a)
		if err != nil {
			return err
		}
		rhs, err = ev.compound(a, cur, rhs)
		if err != nil {
			return err
		}
	}
	if len(a.Indices) == 0 {
		return ev.store(a.Var, a.Pos, rhs)
	}
	if done, err := ev.assignElement(a, rhs); done || err != nil {
		return err
	}
	cur, err := ev.peek(a.Var, a.Pos)
	if err != nil {
		return err
	}
	sels, err := ev.selection(a.Indices, cur)
	if err != nil {
		return err
	}
	return ev.storeIndexed(a, cur, sels, ev.convert(rhs, a.LHSType))
}

// assignElement is the allocation-free path of an indexed assignment for
// the common case of one element of a real container (vector, row vector,
// matrix or real array) selected by int indices, x[i] = v or M[i, j] = v,
// with a real or int scalar v: it writes the element's cell. It reports
// false when the general path must be taken.
func (ev *evaluator) assignElement(a *ir.Assign, rhs stdlib.Value) (bool, error) {
	s := &ev.frame[a.Var.Slot]
	if !s.set || !rhs.Type.IsScalar() || len(a.Indices) != len(s.dims) || len(s.dims) == 0 ||
		s.v.Type.Base == lang.Int || (s.v.Type.Dims > 0 && s.v.Type.Base != lang.Real) {
		return false, nil
	}
	for _, it := range a.Indices {
		if it.Kind != ir.IndexSingle {
			return false, nil
		}
	}
	flat := 0
	for k, it := range a.Indices {
		i, err := ev.intExpr(it.Lo)
		if err != nil {
			return true, err
		}
		if i < 1 || i > s.dims[k] {
			return true, ev.errorf(it.Pos, "index %d out of range: the size is %d", i, s.dims[k])
		}
		flat = flat*s.dims[k] + i - 1
	}
	t := ev.tape()
	ev.unpack(s, s.v.AD)
	s.cells[flat] = scalarOf(t, ev.toAD(ev.convert(rhs, lang.RealType)))
	s.dirty = true
	return true, nil
}

// peek returns a variable's value without packing its unpacked cells: its
// shape and, for a container whose cells are newer (dirty), an out-of-date
// tape value. An indexed assignment needs no more (storeIndexed writes the
// cells), so a loop assigning v[t] stays O(1) per step instead of copying
// the whole container each time.
func (ev *evaluator) peek(v *ir.Var, p lang.Pos) (stdlib.Value, error) {
	s := &ev.frame[v.Slot]
	if !s.set {
		return stdlib.Value{}, ev.errorf(p, "%s is used before it has a value", v.Name)
	}
	return s.v, nil
}

func (ev *evaluator) readIndexed(a *ir.Assign) (stdlib.Value, error) {
	if len(a.Indices) == 0 {
		return ev.read(a.Var, a.Pos)
	}
	cur, err := ev.peek(a.Var, a.Pos)
	if err != nil {
		return cur, err
	}
	sels, err := ev.selection(a.Indices, cur)
	if err != nil {
		return cur, err
	}
	if s := &ev.frame[a.Var.Slot]; s.dirty {
		// One element of unpacked cells (x[i] += ...): read the cell.
		if flat, kept := flatPositions(s.dims, sels); len(kept) == 0 {
			return stdlib.RealValue(s.cells[flat[0]]), nil
		}
		if cur, err = ev.read(a.Var, a.Pos); err != nil {
			return cur, err
		}
	}
	return ev.index(cur, sels, a.LHSType)
}

// compound computes cur op rhs for x op= rhs.
func (ev *evaluator) compound(a *ir.Assign, cur, rhs stdlib.Value) (stdlib.Value, error) {
	return ev.arith(a.Pos, a.Op[:len(a.Op)-1], cur, rhs)
}

// storeIndexed assigns rhs to cur[sels] of variable a.Var.
func (ev *evaluator) storeIndexed(a *ir.Assign, cur stdlib.Value, sels []sel, rhs stdlib.Value) error {
	t := ev.tape()
	s := &ev.frame[a.Var.Slot]
	if cur.Type.Dims > 0 && cur.Type.Base.IsLinalg() {
		nArr := cur.Type.Dims
		arrSels, rest := sels, []sel(nil)
		if len(sels) > nArr {
			arrSels, rest = sels[:nArr], sels[nArr:]
		}
		flat, _ := flatPositions(cur.Dims, arrSels)
		elems := append([]stdlib.Value(nil), cur.Elems...)
		for i, f := range flat {
			part := rhs
			if len(flat) > 1 || rhs.Type.Dims > 0 && len(rest) == 0 && len(rhs.Elems) == len(flat) {
				if rhs.Type.Dims > 0 && rhs.Type.Base.IsLinalg() {
					part = rhs.Elems[i]
				} else if len(rest) > 0 {
					part = ev.elementOf(rhs, i, len(flat))
				}
			}
			if len(rest) == 0 {
				if got, want := fullDims(t, part), fullDims(t, elems[f]); !sameDims(got, want) {
					return ev.errorf(a.Pos, "size mismatch assigning to an element of %s: %s and %s", a.Var.Name, dimsText(want), dimsText(got))
				}
				elems[f] = part
				continue
			}
			upd, err := ev.updateAD(elems[f], rest, part)
			if err != nil {
				return ev.errorf(a.Pos, "assigning to %s: %v", a.Var.Name, err)
			}
			elems[f] = upd
		}
		s.v.Elems = elems
		return nil
	}
	dims := s.dims
	flat, _ := flatPositions(dims, sels)
	if cur.Type.Base == lang.Int {
		// The slot owns its ints (store copies, declare allocates; the
		// frames of data and of crn replicates, which share theirs, are
		// never assigned), so they are updated in place: a loop filling
		// an int array stays O(1) per element.
		ints := cur.Ints
		if rhs.Type == lang.IntType {
			for _, f := range flat {
				ints[f] = rhs.Int
			}
		} else {
			if len(rhs.Ints) != len(flat) {
				return ev.errorf(a.Pos, "size mismatch assigning to %s: %d positions, %d values", a.Var.Name, len(flat), len(rhs.Ints))
			}
			for i, f := range flat {
				ints[f] = rhs.Ints[i]
			}
		}
		s.v.Ints = ints
		return nil
	}
	// A real container: update its element cells.
	ev.unpack(s, cur.AD)
	src := ev.toAD(rhs)
	if src.Len() != 1 && src.Len() != len(flat) {
		return ev.errorf(a.Pos, "size mismatch assigning to %s: %d positions, %d values", a.Var.Name, len(flat), src.Len())
	}
	for i, f := range flat {
		if src.Len() == 1 && len(flat) == 1 || src.Len() == 1 && rhs.Type.IsScalar() {
			s.cells[f] = scalarOf(t, src)
		} else {
			s.cells[f] = t.Index(src, i)
		}
	}
	s.dirty = true
	return nil
}

func scalarOf(t *autodiff.Tape, v autodiff.Value) autodiff.Value {
	if v.Kind() == autodiff.Scalar {
		return v
	}
	return t.Index(v, 0)
}

// elementOf returns element i of n of a value being spread over selected
// array elements.
func (ev *evaluator) elementOf(v stdlib.Value, i, n int) stdlib.Value {
	if v.Type.Dims > 0 && v.Type.Base.IsLinalg() {
		return v.Elems[i]
	}
	if v.Type.IsScalar() || n == 1 {
		return v
	}
	if v.Type.Base == lang.Int {
		return stdlib.IntValue(v.Ints[i])
	}
	return stdlib.RealValue(ev.tape().Index(v.AD, i))
}

// updateAD returns a copy of the vector or matrix x with x[sels] = rhs.
func (ev *evaluator) updateAD(x stdlib.Value, sels []sel, rhs stdlib.Value) (stdlib.Value, error) {
	t := ev.tape()
	dims := fullDims(t, x)
	flat, _ := flatPositions(dims, sels)
	n := x.AD.Len()
	cells := make([]autodiff.Value, n)
	for i := range cells {
		cells[i] = t.Index(x.AD, i)
	}
	src := ev.toAD(rhs)
	if src.Len() != 1 && src.Len() != len(flat) {
		return x, fmt.Errorf("%d positions, %d values", len(flat), src.Len())
	}
	for i, f := range flat {
		if src.Len() == 1 {
			cells[f] = scalarOf(t, src)
		} else {
			cells[f] = t.Index(src, i)
		}
	}
	return withAD(x, t.Concat(x.AD.Shape(), cells...)), nil
}
