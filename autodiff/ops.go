package autodiff

import "math"

// Unary applies the elementwise function f to every element of x and
// returns a value of x's shape: one node whatever x's length.
func (t *Tape) Unary(f UnaryFunc, x Value) Value {
	if x.Kind() == Scalar && f < numUnary && x.off >= 0 && int(x.off) < len(t.val) {
		return t.UnaryScalar(f, x)
	}
	if f >= numUnary {
		t.fail("Unary: unknown function code %d", f)
		return t.nan(x.Shape())
	}
	if !t.check(x, unaryTable[f].name) {
		return t.nan(ScalarShape())
	}
	fn := unaryTable[f].f
	out := t.like(x, x.kf&flagConst)
	xs := t.val[x.off:x.end()]
	ys := t.val[out.off:out.end()]
	for i, xi := range xs {
		ys[i] = fn(xi)
	}
	if !x.IsConst() {
		nd := t.newNode()
		nd.op, nd.fn, nd.flags = opUnary, uint8(f), 0
		nd.n, nd.out, nd.a, nd.b, nd.c = int32(len(ys)), out.off, x.off, 0, 0
	}
	return out
}

// UnaryScalar is Unary for a scalar, the common case of compiled scalar
// code: f's operation without the shape dispatch, the common functions
// computed inline and the others through the table, bitwise as Unary's
// loop (it is Unary for other shapes).
func (t *Tape) UnaryScalar(f UnaryFunc, x Value) Value {
	if x.Kind() != Scalar || f >= numUnary || uint(x.off) >= uint(len(t.val)) {
		return t.Unary(f, x)
	}
	xv := t.val[x.off]
	var y float64
	switch f {
	case Neg:
		y = -xv
	case Square:
		y = xv * xv
	case Sqrt:
		y = math.Sqrt(xv)
	default:
		y = unaryTable[f].f(xv)
	}
	if len(t.val) == cap(t.val) { // alloc(1) without a call (it does not inline)
		t.grow(1)
	}
	off := int32(len(t.val))
	t.val = append(t.val, y)
	c := x.kf & flagConst
	if c == 0 {
		nd := t.newNode()
		nd.op, nd.fn, nd.flags = opUnary, uint8(f), 0
		nd.n, nd.out, nd.a, nd.b, nd.c = 1, off, x.off, 0, 0
	}
	return Value{off: off, rows: 1, cols: 1, kf: uint8(Scalar) | c}
}

// Exp returns the elementwise exponential of x: Unary(Exp, x), as Log, Neg
// and Square are Unary with that function.
func (t *Tape) Exp(x Value) Value { return t.Unary(Exp, x) }

// Log returns the elementwise natural logarithm of x.
func (t *Tape) Log(x Value) Value { return t.Unary(Log, x) }

// Neg returns -x.
func (t *Tape) Neg(x Value) Value { return t.Unary(Neg, x) }

// Square returns the elementwise square of x.
func (t *Tape) Square(x Value) Value { return t.Unary(Square, x) }

// Add returns a + b (see Binary for the shapes allowed).
func (t *Tape) Add(a, b Value) Value {
	if a.Kind() == Scalar && b.Kind() == Scalar {
		return t.BinaryScalar(Add, a, b)
	}
	return t.Binary(Add, a, b)
}

// Sub returns a - b.
func (t *Tape) Sub(a, b Value) Value {
	if a.Kind() == Scalar && b.Kind() == Scalar {
		return t.BinaryScalar(Sub, a, b)
	}
	return t.Binary(Sub, a, b)
}

// Mul returns the elementwise product a .* b (a scalar multiplies every
// element); for the matrix product see MatMul.
func (t *Tape) Mul(a, b Value) Value {
	if a.Kind() == Scalar && b.Kind() == Scalar {
		return t.BinaryScalar(Mul, a, b)
	}
	return t.Binary(Mul, a, b)
}

// Div returns the elementwise quotient a ./ b.
func (t *Tape) Div(a, b Value) Value {
	if a.Kind() == Scalar && b.Kind() == Scalar {
		return t.BinaryScalar(Div, a, b)
	}
	return t.Binary(Div, a, b)
}

// Pow returns the elementwise power a .^ b.
func (t *Tape) Pow(a, b Value) Value {
	if a.Kind() == Scalar && b.Kind() == Scalar {
		return t.BinaryScalar(Pow, a, b)
	}
	return t.Binary(Pow, a, b)
}

// Binary applies f elementwise. Either operand may be a scalar, which is
// broadcast over the other; otherwise both must have the same kind and
// dimensions. The result has the shape of the non-scalar operand. It is one
// node whatever the length, with an O(n) adjoint.
func (t *Tape) Binary(f BinaryFunc, a, b Value) Value {
	if f >= numBinary {
		t.fail("Binary: unknown function code %d", f)
		return t.nan(a.Shape())
	}
	if a.Kind() == Scalar && b.Kind() == Scalar {
		return t.BinaryScalar(f, a, b)
	}
	name := binaryTable[f].name
	if !t.check(a, name) || !t.check(b, name) {
		return t.nan(ScalarShape())
	}
	var flags uint8
	var out Value
	switch {
	case a.Kind() == Scalar:
		flags = nodeAScalar
		out = t.like(b, a.kf&b.kf&flagConst)
	case b.Kind() == Scalar:
		flags = nodeBScalar
		out = t.like(a, a.kf&b.kf&flagConst)
	case a.Kind() != b.Kind() || a.rows != b.rows || a.cols != b.cols:
		t.fail("%s: operands have shapes %v and %v", name, a.Shape(), b.Shape())
		return t.nan(a.Shape())
	default:
		out = t.like(a, a.kf&b.kf&flagConst)
	}
	n := out.Len()
	sa, sb := 1, 1
	if flags&nodeAScalar != 0 {
		sa = 0
	}
	if flags&nodeBScalar != 0 {
		sb = 0
	}
	av := t.val[a.off : int(a.off)+(n-1)*sa+1]
	bv := t.val[b.off : int(b.off)+(n-1)*sb+1]
	y := t.val[out.off:out.end()]
	if n > 0 {
		binaryForward(f, y, av, bv, sa, sb)
	}
	if !out.IsConst() {
		if a.IsConst() {
			flags |= nodeAConst
		}
		if b.IsConst() {
			flags |= nodeBConst
		}
		t.record(node{op: opBinary, fn: uint8(f), flags: flags, n: int32(n), out: out.off, a: a.off, b: b.off})
	}
	return out
}

// binaryForward sets y[i] = f(av[i*sa], bv[i*sb]), with the arithmetic
// operators and each stride pattern written as a plain loop.
func binaryForward(f BinaryFunc, y, av, bv []float64, sa, sb int) {
	n := len(y)
	switch {
	case f > Div:
		fn := binaryTable[f].f
		for i := range y {
			y[i] = fn(av[i*sa], bv[i*sb])
		}
	case sa == 1 && sb == 1:
		av, bv = av[:n], bv[:n]
		switch f {
		case Add:
			for i := range y {
				y[i] = av[i] + bv[i]
			}
		case Sub:
			for i := range y {
				y[i] = av[i] - bv[i]
			}
		case Mul:
			for i := range y {
				y[i] = av[i] * bv[i]
			}
		case Div:
			for i := range y {
				y[i] = av[i] / bv[i]
			}
		}
	case sa == 0 && sb == 1:
		x, bv := av[0], bv[:n]
		switch f {
		case Add:
			for i := range y {
				y[i] = x + bv[i]
			}
		case Sub:
			for i := range y {
				y[i] = x - bv[i]
			}
		case Mul:
			for i := range y {
				y[i] = x * bv[i]
			}
		case Div:
			for i := range y {
				y[i] = x / bv[i]
			}
		}
	case sa == 1 && sb == 0:
		av, z := av[:n], bv[0]
		switch f {
		case Add:
			for i := range y {
				y[i] = av[i] + z
			}
		case Sub:
			for i := range y {
				y[i] = av[i] - z
			}
		case Mul:
			for i := range y {
				y[i] = av[i] * z
			}
		case Div:
			// Division, not multiplication by 1/z, so that results match
			// the scalar path bit for bit.
			for i := range y {
				y[i] = av[i] / z
			}
		}
	default:
		fn := binaryTable[f].f
		for i := range y {
			y[i] = fn(av[i*sa], bv[i*sb])
		}
	}
}

// BinaryScalar is Binary for two scalars, the common case of compiled
// scalar code: f's operation without the shape dispatch (it is Binary for
// other shapes).
func (t *Tape) BinaryScalar(f BinaryFunc, a, b Value) Value {
	if a.Kind() != Scalar || b.Kind() != Scalar {
		return t.Binary(f, a, b)
	}
	if n := uint(len(t.val)); uint(a.off) >= n || uint(b.off) >= n || f >= numBinary {
		t.check(a, f.String())
		t.check(b, f.String())
		if f >= numBinary {
			t.fail("Binary: unknown function code %d", f)
		}
		return t.nan(ScalarShape())
	}
	x, y := t.val[a.off], t.val[b.off]
	var z float64
	switch f {
	case Add:
		z = x + y
	case Sub:
		z = x - y
	case Mul:
		z = x * y
	case Div:
		z = x / y
	default:
		z = binaryTable[f].f(x, y)
	}
	if len(t.val) == cap(t.val) { // alloc(1) without a call (it does not inline)
		t.grow(1)
	}
	off := int32(len(t.val))
	t.val = append(t.val, z)
	c := a.kf & b.kf & flagConst
	if c == 0 {
		var flags uint8 = nodeAScalar | nodeBScalar
		if a.IsConst() {
			flags |= nodeAConst
		}
		if b.IsConst() {
			flags |= nodeBConst
		}
		nd := t.newNode()
		nd.op, nd.fn, nd.flags = opBinary, uint8(f), flags
		nd.n, nd.out, nd.a, nd.b, nd.c = 1, off, a.off, b.off, 0
	}
	return Value{off: off, rows: 1, cols: 1, kf: uint8(Scalar) | c}
}

// reduce records a scalar-output reduction over x.
func (t *Tape) reduce(o op, x Value, y float64) Value {
	off := t.alloc(1)
	t.val[off] = y
	if !x.IsConst() {
		t.record(node{op: o, n: 1, out: off, a: x.off, c: int32(x.Len())})
	}
	return Value{off: off, rows: 1, cols: 1, kf: uint8(Scalar) | x.kf&flagConst}
}

// Sum returns the sum of the elements of x.
func (t *Tape) Sum(x Value) Value {
	if !t.check(x, "sum") {
		return t.nan(ScalarShape())
	}
	var s float64
	for _, v := range t.val[x.off:x.end()] {
		s += v
	}
	return t.reduce(opSum, x, s)
}

// DotSelf returns the sum of the squares of the elements of x.
func (t *Tape) DotSelf(x Value) Value {
	if !t.check(x, "dot_self") {
		return t.nan(ScalarShape())
	}
	var s float64
	for _, v := range t.val[x.off:x.end()] {
		s += v * v
	}
	return t.reduce(opDotSelf, x, s)
}

// LogSumExp returns log Σ exp(x_i) over the elements of x, computed
// stably; it is -Inf for an empty x.
func (t *Tape) LogSumExp(x Value) Value {
	if !t.check(x, "log_sum_exp") {
		return t.nan(ScalarShape())
	}
	return t.reduce(opLogSumExp, x, logSumExp(t.val[x.off:x.end()]))
}

func logSumExp(xs []float64) float64 {
	m := math.Inf(-1)
	for _, v := range xs {
		if v > m {
			m = v
		}
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, v := range xs {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// Dot returns Σ a_i b_i over two values of equal length (vectors or row
// vectors, in any combination).
func (t *Tape) Dot(a, b Value) Value {
	if !t.check(a, "dot_product") || !t.check(b, "dot_product") {
		return t.nan(ScalarShape())
	}
	if a.Len() != b.Len() || a.Kind() == Matrix || b.Kind() == Matrix {
		t.fail("dot_product: operands have shapes %v and %v", a.Shape(), b.Shape())
		return t.nan(ScalarShape())
	}
	av, bv := t.val[a.off:a.end()], t.val[b.off:b.end()]
	var s float64
	for i, x := range av {
		s += x * bv[i]
	}
	off := t.alloc(1)
	t.val[off] = s
	c := a.kf & b.kf & flagConst
	if c == 0 {
		var flags uint8
		if a.IsConst() {
			flags |= nodeAConst
		}
		if b.IsConst() {
			flags |= nodeBConst
		}
		t.record(node{op: opDot, flags: flags, n: 1, out: off, a: a.off, b: b.off, c: int32(a.Len())})
	}
	return Value{off: off, rows: 1, cols: 1, kf: uint8(Scalar) | c}
}

// vectorOp records a shape-preserving whole-vector operation.
func (t *Tape) vectorOp(o op, name string, x Value, f func(x, y []float64)) Value {
	if !t.check(x, name) {
		return t.nan(ScalarShape())
	}
	if x.Kind() != Vector && x.Kind() != RowVector {
		t.fail("%s: argument must be a vector or row vector, got %v", name, x.Shape())
		return t.nan(x.Shape())
	}
	out := t.like(x, x.kf&flagConst)
	f(t.val[x.off:x.end()], t.val[out.off:out.end()])
	if !x.IsConst() {
		t.record(node{op: o, n: int32(x.Len()), out: out.off, a: x.off})
	}
	return out
}

// Softmax returns exp(x) / Σ exp(x) for a vector x.
func (t *Tape) Softmax(x Value) Value {
	return t.vectorOp(opSoftmax, "softmax", x, func(x, y []float64) {
		lse := logSumExp(x)
		for i, v := range x {
			y[i] = math.Exp(v - lse)
		}
	})
}

// LogSoftmax returns x - log_sum_exp(x) for a vector x.
func (t *Tape) LogSoftmax(x Value) Value {
	return t.vectorOp(opLogSoftmax, "log_softmax", x, func(x, y []float64) {
		lse := logSumExp(x)
		for i, v := range x {
			y[i] = v - lse
		}
	})
}

// CumSum returns the cumulative sums of a vector x.
func (t *Tape) CumSum(x Value) Value {
	return t.vectorOp(opCumSum, "cumulative_sum", x, func(x, y []float64) {
		var s float64
		for i, v := range x {
			s += v
			y[i] = s
		}
	})
}

// Fill returns a value of shape s every element of which is the scalar x
// (Stan's rep_vector, rep_row_vector, rep_matrix).
func (t *Tape) Fill(x Value, s Shape) Value {
	if !t.check(x, "rep") {
		return t.nan(s)
	}
	if x.Kind() != Scalar || !s.valid() {
		t.fail("rep: cannot fill %v with %v", s, x.Shape())
		return t.nan(s)
	}
	out := t.newValue(s, x.kf&flagConst)
	v := t.val[x.off]
	y := t.val[out.off:out.end()]
	for i := range y {
		y[i] = v
	}
	if !x.IsConst() {
		t.record(node{op: opFill, n: int32(len(y)), out: out.off, a: x.off})
	}
	return out
}

// dims returns the matrix dimensions of v for MatMul: a vector is n×1, a
// row vector 1×n.
func dims(v Value) (r, c int) { return int(v.rows), int(v.cols) }

// MatMul returns the matrix product a·b, where a vector of length n is an
// n×1 matrix and a row vector a 1×n matrix: matrix×vector gives a vector,
// row vector×matrix a row vector, row vector×vector a scalar, vector×row
// vector a matrix. If either operand is a scalar MatMul is Mul.
func (t *Tape) MatMul(a, b Value) Value {
	if !t.check(a, "multiply") || !t.check(b, "multiply") {
		return t.nan(ScalarShape())
	}
	if a.Kind() == Scalar || b.Kind() == Scalar {
		return t.Mul(a, b)
	}
	r, k := dims(a)
	k2, c := dims(b)
	var s Shape
	switch {
	case k != k2:
		t.fail("multiply: operands have shapes %v and %v", a.Shape(), b.Shape())
		return t.nan(ScalarShape())
	case a.Kind() == RowVector && b.Kind() == Vector:
		s = ScalarShape()
	case b.Kind() == Vector:
		s = VectorShape(r)
	case a.Kind() == RowVector:
		s = RowVectorShape(c)
	default:
		s = MatrixShape(r, c)
	}
	out := t.newValue(s, a.kf&b.kf&flagConst)
	matMul(t.val[out.off:out.end()], t.val[a.off:a.end()], t.val[b.off:b.end()], r, k, c)
	if !out.IsConst() {
		var flags uint8
		if a.IsConst() {
			flags |= nodeAConst
		}
		if b.IsConst() {
			flags |= nodeBConst
		}
		lo := len(t.ints)
		t.ints = append(t.ints, int32(k), int32(c))
		t.record(node{op: opMatMul, flags: flags, n: int32(r * c), out: out.off, a: a.off, b: b.off, c: int32(lo)})
	}
	return out
}

// matMul sets y (r×c) = A (r×k) · B (k×c), all row-major.
func matMul(y, A, B []float64, r, k, c int) {
	if c == 1 {
		for i := 0; i < r; i++ {
			row := A[i*k : i*k+k]
			var s float64
			for j, x := range row {
				s += x * B[j]
			}
			y[i] = s
		}
		return
	}
	clear(y)
	for i := 0; i < r; i++ {
		yi := y[i*c : i*c+c]
		for j, x := range A[i*k : i*k+k] {
			if x == 0 {
				continue
			}
			for l, bv := range B[j*c : j*c+c] {
				yi[l] += x * bv
			}
		}
	}
}

// Transpose returns the transpose of x: a matrix is copied (one node), a
// vector becomes a row vector and back (a free view), a scalar is itself.
func (t *Tape) Transpose(x Value) Value {
	if !t.check(x, "transpose") {
		return t.nan(ScalarShape())
	}
	switch x.Kind() {
	case Scalar:
		return x
	case Vector:
		x.kf, x.rows, x.cols = uint8(RowVector)|x.kf&flagConst, 1, x.rows
		return x
	case RowVector:
		x.kf, x.rows, x.cols = uint8(Vector)|x.kf&flagConst, x.cols, 1
		return x
	}
	r, c := int(x.rows), int(x.cols)
	out := t.newValue(MatrixShape(c, r), x.kf&flagConst)
	xs, ys := t.val[x.off:x.end()], t.val[out.off:out.end()]
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			ys[j*r+i] = xs[i*c+j]
		}
	}
	if !x.IsConst() {
		t.record(node{op: opTranspose, n: int32(r * c), out: out.off, a: x.off, c: int32(c)})
	}
	return out
}

// Index returns element i (0-based, row-major for matrices) of x as a
// scalar. It is a view: no node is recorded and no value copied.
func (t *Tape) Index(x Value, i int) Value {
	if uint(i) >= uint(x.Len()) || x.end() > len(t.val) || x.kf&kindMask == 0 {
		return t.indexError(x, i, -1)
	}
	return Value{off: x.off + int32(i), rows: 1, cols: 1, kf: uint8(Scalar) | x.kf&flagConst}
}

// Elements fills dst with the scalar views of x's first len(dst) elements
// (Index(x, i) for each i), which must exist.
func (t *Tape) Elements(x Value, dst []Value) {
	if len(dst) > x.Len() || x.end() > len(t.val) || x.kf&kindMask == 0 {
		for i := range dst {
			dst[i] = t.Index(x, i) // records the error
		}
		return
	}
	kf := uint8(Scalar) | x.kf&flagConst
	for i := range dst {
		dst[i] = Value{off: x.off + int32(i), rows: 1, cols: 1, kf: kf}
	}
}

// At returns element (i, j) (0-based) of a matrix as a scalar view.
func (t *Tape) At(m Value, i, j int) Value {
	if uint(i) >= uint(m.rows) || uint(j) >= uint(m.cols) || m.end() > len(t.val) || m.kf&kindMask == 0 {
		return t.indexError(m, i, j)
	}
	return Value{off: m.off + int32(i)*m.cols + int32(j), rows: 1, cols: 1, kf: uint8(Scalar) | m.kf&flagConst}
}

// indexError records why Index (j < 0) or At failed, away from their
// inlined fast paths.
func (t *Tape) indexError(x Value, i, j int) Value {
	switch {
	case !t.check(x, "index"):
	case j < 0:
		t.fail("index %d out of range for %v (0-based)", i, x.Shape())
	default:
		t.fail("index (%d, %d) out of range for %v (0-based)", i, j, x.Shape())
	}
	return t.nan(ScalarShape())
}

// Slice returns elements [start, start+n) of a vector or row vector as a
// value of the same kind. It is a view (no node, no copy): gradients flow
// straight into x's adjoint.
func (t *Tape) Slice(x Value, start, n int) Value {
	if !t.check(x, "segment") {
		return t.nan(VectorShape(max(n, 0)))
	}
	if x.Kind() != Vector && x.Kind() != RowVector {
		t.fail("segment: argument must be a vector or row vector, got %v", x.Shape())
		return t.nan(VectorShape(max(n, 0)))
	}
	if start < 0 || n < 0 || start+n > x.Len() {
		t.fail("segment [%d, %d) out of range for %v (0-based)", start, start+n, x.Shape())
		if x.Kind() == RowVector {
			return t.nan(RowVectorShape(max(n, 0)))
		}
		return t.nan(VectorShape(max(n, 0)))
	}
	v := Value{off: x.off + int32(start), kf: uint8(x.Kind()) | x.kf&flagConst}
	if x.Kind() == Vector {
		v.rows, v.cols = int32(n), 1
	} else {
		v.rows, v.cols = 1, int32(n)
	}
	return v
}

// Row returns row i (0-based) of a matrix as a row vector view.
func (t *Tape) Row(m Value, i int) Value {
	if !t.check(m, "row") {
		return t.nan(ScalarShape())
	}
	if m.Kind() != Matrix || i < 0 || i >= int(m.rows) {
		t.fail("row %d out of range for %v (0-based)", i, m.Shape())
		return t.nan(RowVectorShape(int(m.cols)))
	}
	return Value{off: m.off + int32(i)*m.cols, rows: 1, cols: m.cols, kf: uint8(RowVector) | m.kf&flagConst}
}

// Reshape returns x viewed with shape s, which must have x's number of
// elements (row-major order is kept). It is a view: no node, no copy.
func (t *Tape) Reshape(x Value, s Shape) Value {
	if !t.check(x, "reshape") {
		return t.nan(s)
	}
	if !s.valid() || s.Len() != x.Len() {
		t.fail("reshape: cannot view %v as %v", x.Shape(), s)
		return t.nan(s)
	}
	return Value{off: x.off, rows: int32(s.Rows), cols: int32(s.Cols), kf: uint8(s.Kind) | x.kf&flagConst}
}

// Gather returns the vector (x[idx[0]], x[idx[1]], ...) of elements of x
// (0-based, row-major for matrices); indices may repeat. Its adjoint
// scatters back into x. Gather covers multiple indexing (mu[group]) and
// matrix columns.
func (t *Tape) Gather(x Value, idx []int) Value {
	if !t.check(x, "multi-index") {
		return t.nan(VectorShape(len(idx)))
	}
	n := x.Len()
	for _, i := range idx {
		if i < 0 || i >= n {
			t.fail("multi-index: index %d out of range for %v (0-based)", i, x.Shape())
			return t.nan(VectorShape(len(idx)))
		}
	}
	out := t.newValue(VectorShape(len(idx)), x.kf&flagConst)
	xs, ys := t.val[x.off:x.end()], t.val[out.off:out.end()]
	for k, i := range idx {
		ys[k] = xs[i]
	}
	if !x.IsConst() {
		lo := len(t.ints)
		for _, i := range idx {
			t.ints = append(t.ints, int32(i))
		}
		t.record(node{op: opGather, n: int32(len(idx)), out: out.off, a: x.off, c: int32(lo)})
	}
	return out
}

// Col returns column j (0-based) of a matrix as a vector (a Gather node).
func (t *Tape) Col(m Value, j int) Value {
	if !t.check(m, "col") {
		return t.nan(ScalarShape())
	}
	r, c := int(m.rows), int(m.cols)
	if m.Kind() != Matrix || j < 0 || j >= c {
		t.fail("col %d out of range for %v (0-based)", j, m.Shape())
		return t.nan(VectorShape(r))
	}
	out := t.newValue(VectorShape(r), m.kf&flagConst)
	xs, ys := t.val[m.off:m.end()], t.val[out.off:out.end()]
	for i := range ys {
		ys[i] = xs[i*c+j]
	}
	if !m.IsConst() {
		lo := len(t.ints)
		for i := 0; i < r; i++ {
			t.ints = append(t.ints, int32(i*c+j))
		}
		t.record(node{op: opGather, n: int32(r), out: out.off, a: m.off, c: int32(lo)})
	}
	return out
}

// Concat returns a value of shape s whose elements are those of parts, in
// order (row-major for matrices): it builds vectors from scalars, appends
// vectors (append_row of vectors) and stacks matrices by rows. The parts'
// lengths must add up to s.Len().
func (t *Tape) Concat(s Shape, parts ...Value) Value {
	if !s.valid() {
		t.fail("concat: invalid shape %v %d×%d", s.Kind, s.Rows, s.Cols)
		return t.nan(ScalarShape())
	}
	if len(parts) == s.Len() {
		if out, ok := t.concatScalars(s, parts); ok {
			return out
		}
	}
	n := 0
	var c uint8 = flagConst
	for _, p := range parts {
		if !t.check(p, "concat") {
			return t.nan(s)
		}
		n += p.Len()
		c &= p.kf
	}
	if n != s.Len() {
		t.fail("concat: parts have %d elements in all, %v needs %d", n, s, s.Len())
		return t.nan(s)
	}
	out := t.newValue(s, c)
	y := t.val[out.off:out.end()]
	k := 0
	for _, p := range parts {
		if p.rows == 1 && p.cols == 1 {
			y[k] = t.val[p.off] // the common case: a scalar, without a copy call
			k++
			continue
		}
		k += copy(y[k:], t.val[p.off:p.end()])
	}
	if c == 0 {
		lo := len(t.args)
		t.args = append(t.args, parts...)
		t.record(node{op: opConcat, n: int32(n), out: out.off, a: int32(lo), b: int32(len(t.args))})
	}
	return out
}

// concatScalars is Concat of parts that are all valid scalars (a vector
// read from a container filled element by element), in two tight passes;
// ok is false, with nothing recorded, when some part is not.
func (t *Tape) concatScalars(s Shape, parts []Value) (out Value, ok bool) {
	var c uint8 = flagConst
	for _, p := range parts {
		if p.rows != 1 || p.cols != 1 || p.kf&kindMask != uint8(Scalar) || uint(p.off) >= uint(len(t.val)) {
			return Value{}, false
		}
		c &= p.kf
	}
	out = t.newValue(s, c)
	y := t.val[out.off:out.end()]
	for k, p := range parts {
		y[k] = t.val[p.off]
	}
	if c == 0 {
		lo := len(t.args)
		t.args = append(t.args, parts...)
		t.record(node{op: opConcat, n: int32(len(parts)), out: out.off, a: int32(lo), b: int32(len(t.args))})
	}
	return out, true
}
