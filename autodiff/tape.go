package autodiff

import (
	"errors"
	"fmt"
	"math"
)

// Kind is the shape class of a Value.
type Kind uint8

// The kinds of values. The zero Kind is Invalid, so that the zero Value is
// recognizably not a value of any tape.
const (
	Invalid   Kind = iota
	Scalar         // a single real
	Vector         // a column vector of n reals (n×1)
	RowVector      // a row vector of n reals (1×n)
	Matrix         // an r×c matrix stored row-major
)

var kindNames = [...]string{"invalid", "real", "vector", "row_vector", "matrix"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Shape is the kind and the dimensions of a value. A Scalar is 1×1, a
// Vector of length n is n×1 and a RowVector of length n is 1×n.
type Shape struct {
	Kind       Kind
	Rows, Cols int
}

// ScalarShape() returns the shape of a real.
func ScalarShape() Shape { return Shape{Kind: Scalar, Rows: 1, Cols: 1} }

// VectorShape returns the shape of a column vector of length n.
func VectorShape(n int) Shape { return Shape{Kind: Vector, Rows: n, Cols: 1} }

// RowVectorShape returns the shape of a row vector of length n.
func RowVectorShape(n int) Shape { return Shape{Kind: RowVector, Rows: 1, Cols: n} }

// MatrixShape returns the shape of an r×c matrix.
func MatrixShape(r, c int) Shape { return Shape{Kind: Matrix, Rows: r, Cols: c} }

// Len returns the number of elements of the shape.
func (s Shape) Len() int { return s.Rows * s.Cols }

func (s Shape) valid() bool {
	switch s.Kind {
	case Scalar:
		return s.Rows == 1 && s.Cols == 1
	case Vector:
		return s.Rows >= 0 && s.Cols == 1
	case RowVector:
		return s.Rows == 1 && s.Cols >= 0
	case Matrix:
		return s.Rows >= 0 && s.Cols >= 0
	}
	return false
}

func (s Shape) String() string {
	switch s.Kind {
	case Scalar:
		return "real"
	case Vector, RowVector:
		return fmt.Sprintf("%v[%d]", s.Kind, s.Len())
	case Matrix:
		return fmt.Sprintf("matrix[%d,%d]", s.Rows, s.Cols)
	}
	return s.Kind.String()
}

// Value is a handle to a scalar, vector, row vector or matrix stored on a
// Tape. It is a small value type (16 bytes) meant to be copied; it is only
// meaningful for the tape that created it and only until that tape's next
// Reset (values kept by Keep survive Reset).
type Value struct {
	off  int32 // offset of the first element in the tape's arena
	rows int32
	cols int32
	kf   uint8 // Kind in the low bits, flagConst
}

// Four fields keep a Value in four registers under Go's register ABI, so
// that a binary operation's arguments are passed without spilling.
const (
	kindMask  = 7
	flagConst = 8
)

// Kind returns the value's kind.
func (v Value) Kind() Kind { return Kind(v.kf & kindMask) }

// Len returns the number of elements.
func (v Value) Len() int { return int(v.rows) * int(v.cols) }

// Rows returns the number of rows (1 for scalars and row vectors).
func (v Value) Rows() int { return int(v.rows) }

// Cols returns the number of columns (1 for scalars and vectors).
func (v Value) Cols() int { return int(v.cols) }

// Shape returns the value's shape.
func (v Value) Shape() Shape { return Shape{Kind: v.Kind(), Rows: int(v.rows), Cols: int(v.cols)} }

// IsConst reports whether the value is a constant: it depends on no
// independent variable, so nothing is recorded for it and it has no adjoint.
func (v Value) IsConst() bool { return v.kf&flagConst != 0 }

// IsValid reports whether v was produced by a tape (the zero Value is not).
func (v Value) IsValid() bool { return v.Kind() != Invalid }

func (v Value) end() int { return int(v.off) + v.Len() }

// op is the operation code of a node record.
type op uint8

const (
	opUnary        op = iota // out[i] = f(a[i])
	opBinary                 // out[i] = f(a[i*sa], b[i*sb]); fn, flags carry f and the strides
	opSum                    // out = Σ a[0:c]
	opDot                    // out = Σ a[i] b[i], i < c
	opDotSelf                // out = Σ a[i]², i < c
	opLogSumExp              // out = log Σ exp(a[i]), i < c
	opSoftmax                // out[i] = exp(a[i]) / Σ exp(a)
	opLogSoftmax             // out[i] = a[i] - log Σ exp(a)
	opCumSum                 // out[i] = Σ_{j≤i} a[j]
	opFill                   // out[i] = a[0]
	opMatMul                 // out (r×cc) = A (r×k) B (k×cc); k, cc = ints[c], ints[c+1]
	opTranspose              // out (c×r) = Aᵀ, A is r×c; c = cols of A
	opGather                 // out[k] = a[idx[k]], idx = ints[c : c+n]
	opConcat                 // out = concatenation of args[a:b]
	opPartials               // out = scalar, adj(args[k])[j] += g·part[...]
	opPartialsElem           // out[i], adj(args[k])[i or 0] += g[i]·part[...]
	opCustom                 // custom node customs[c] with inputs args[a:b]
)

// Node flag bits.
const (
	nodeAConst  = 1 << iota // operand a is constant: skip its adjoint
	nodeBConst              // operand b is constant
	nodeAScalar             // operand a is broadcast (stride 0)
	nodeBScalar             // operand b is broadcast (stride 0)
)

// node is one record of the tape. All fields are offsets into the tape's
// arenas or small codes, so that recording a node never allocates.
type node struct {
	op    op
	fn    uint8 // unary or binary function code
	flags uint8
	n     int32 // output length
	out   int32 // output offset
	a, b  int32 // operand offsets, or a range of t.args
	c     int32 // op-specific: a length, or an offset into t.ints, t.part or t.custom
}

// Tape records operations for reverse-mode automatic differentiation.
//
// All values, adjoints, node records and partials live in slices owned by
// the Tape; Reset truncates them without freeing, so that evaluating the
// same computation again allocates nothing once the slices have grown to
// their working size.
//
// A Tape is not safe for concurrent use: run one tape per goroutine (one per
// sampler chain).
type Tape struct {
	val    []float64 // values of every Value, in creation order
	adj    []float64 // adjoints, parallel to val (sized and cleared by Gradient)
	nodes  []node
	args   []Value   // operand lists of variadic nodes
	ints   []int32   // index lists of gather nodes
	part   []float64 // partials of precomputed-partials nodes
	custom []Node    // custom nodes, referenced from node.c
	vars   []Value   // independent variables, in creation order

	scratch scratchArena
	fixed   [fixedDepth][]bool // FixedElements' flags of gathered values, per depth

	kept  int  // length of val kept across Reset (see Keep)
	swept bool // Gradient has run since the last Reset
	err   error
	limit int             // most values the arena may hold (SetLimit); 0: 2^31 − 1
	done  <-chan struct{} // SetInterrupt
}

// ErrInterrupted is Gradient's error when the channel given to
// SetInterrupt closed during the backward sweep, and the value recording
// an operation panics with when it closed while the tape's storage grew
// (copying gigabytes); evaluators recover it at their boundary, as
// ArenaFull.
var ErrInterrupted = errors.New("autodiff: gradient interrupted")

// SetInterrupt makes Gradient stop its backward sweep, with
// ErrInterrupted, once done is closed (a run's Ctrl-C): a sweep over a
// tape of hundreds of millions of values takes seconds. A nil done never
// interrupts.
func (t *Tape) SetInterrupt(done <-chan struct{}) { t.done = done }

// ArenaFull is the value a Tape panics with when recording a value would
// make its arena hold more than its limit (SetLimit, and 2^31 − 1 elements
// at most): evaluators of untrusted programs recover it at their boundary
// and report it as an error (package runtime does).
type ArenaFull struct {
	Need, Limit int // values the arena would hold, and its limit
}

func (e ArenaFull) Error() string {
	return fmt.Sprintf("autodiff: the tape would hold %d values, more than its limit of %d", e.Need, e.Limit)
}

// SetLimit bounds the values the tape may hold (kept ones included): a
// recording beyond it panics with ArenaFull before allocating. n ≤ 0 or
// beyond 2^31 − 1 sets the limit 2^31 − 1, the most an arena can index.
func (t *Tape) SetLimit(n int64) {
	t.limit = math.MaxInt32
	if n > 0 && n < math.MaxInt32 {
		t.limit = int(n)
	}
}

// Limit returns the most values the tape may hold (SetLimit): the bound
// of one evaluation's memory, in float64 values, that the built-ins'
// working memory is checked against too.
func (t *Tape) Limit() int64 { return int64(t.maxLen()) }

// MemoryWords is the memory the tape holds, in 8-byte words: the
// capacities of its values, adjoints, node records, operand lists and
// partials (kept across Reset).
func (t *Tape) MemoryWords() int64 {
	const nodeWords, valueWords = 3, 2 // a node is 24 bytes, a Value 16
	return int64(cap(t.val) + cap(t.adj) + nodeWords*cap(t.nodes) + valueWords*cap(t.args) +
		(cap(t.ints)+1)/2 + cap(t.part) + 2*cap(t.custom) + valueWords*cap(t.vars))
}

// maxLen returns the arena's limit.
func (t *Tape) maxLen() int {
	if t.limit <= 0 {
		return math.MaxInt32
	}
	return t.limit
}

// NewTape returns an empty tape.
func NewTape() *Tape { return &Tape{} }

// Reset forgets every node and every value except those kept by Keep, while
// keeping the memory for reuse. Values created before Reset (other than kept
// ones) must not be used afterwards.
func (t *Tape) Reset() {
	t.val = t.val[:t.kept]
	t.nodes = t.nodes[:0]
	t.args = t.args[:0]
	t.ints = t.ints[:0]
	t.part = t.part[:0]
	clear(t.custom) // drop references to caller-owned nodes
	t.custom = t.custom[:0]
	t.vars = t.vars[:0]
	t.scratch.reset()
	t.swept = false
	t.err = nil
}

// Keep makes every value currently on the tape survive later calls to
// Reset. It is meant for data and transformed data: bind them as constants
// once, call Keep, and every evaluation after Reset reuses them without
// copying. Keep fails if the tape holds anything but constants.
func (t *Tape) Keep() error {
	if len(t.nodes) > 0 || len(t.vars) > 0 {
		return errors.New("autodiff: Keep: tape holds variables or recorded operations; only constants can be kept")
	}
	if t.err != nil {
		return t.err
	}
	t.kept = len(t.val)
	return nil
}

// Rewindable reports whether Rewind(m) would rewind: m is a mark of the
// values recorded since the last Reset (or Gradient) and above the kept
// values.
func (t *Tape) Rewindable(m Mark) bool {
	return !t.swept && m.val >= t.kept && m.val <= len(t.val) && m.nodes <= len(t.nodes) && m.custom <= len(t.custom)
}

// Mark is a position on a tape, for Rewind.
type Mark struct{ val, nodes, args, ints, part, custom, vars int }

// Mark returns the tape's current position.
func (t *Tape) Mark() Mark {
	return Mark{len(t.val), len(t.nodes), len(t.args), len(t.ints), len(t.part), len(t.custom), len(t.vars)}
}

// Rewind forgets every value, node and variable recorded since m, which
// must not be used afterwards: a caller that recorded operations only to
// read their values (a rejected step of an adaptive solver, the columns
// of a finite-difference Jacobian) drops them, so that they cost neither
// memory nor backward work. A rewind across a Reset or a Gradient, or to
// a mark below the kept values, does nothing. Errors recorded since m
// stay.
func (t *Tape) Rewind(m Mark) {
	if !t.Rewindable(m) {
		return
	}
	t.val = t.val[:m.val]
	t.nodes = t.nodes[:m.nodes]
	t.args = t.args[:m.args]
	t.ints = t.ints[:m.ints]
	t.part = t.part[:m.part]
	clear(t.custom[m.custom:])
	t.custom = t.custom[:m.custom]
	t.vars = t.vars[:m.vars]
}

// ResetAll is Reset that also discards the values kept by Keep.
func (t *Tape) ResetAll() {
	t.kept = 0
	t.Reset()
}

// Err returns the first error met while recording (a shape mismatch, an
// index out of range, an invalid Value), or nil. Operations that fail
// return a value of a plausible shape filled with NaN, so that a caller
// can check Err once at the end of an evaluation.
func (t *Tape) Err() error { return t.err }

func (t *Tape) fail(format string, args ...any) {
	if t.err == nil {
		t.err = fmt.Errorf("autodiff: "+format, args...)
	}
}

// Size returns the number of values (float64 elements) the tape holds.
func (t *Tape) Size() int { return len(t.val) }

// NumNodes returns the number of operations recorded since the last Reset.
func (t *Tape) NumNodes() int { return len(t.nodes) }

// alloc reserves n elements of the arena and returns their offset. The
// elements hold stale data; callers overwrite them.
func (t *Tape) alloc(n int) int32 {
	off := len(t.val)
	if off+n > cap(t.val) {
		t.grow(n) // the capacity never exceeds the limit
	}
	t.val = t.val[:off+n]
	return int32(off)
}

// grow makes room for n more values, or panics with ArenaFull.
func (t *Tape) grow(n int) {
	limit := t.maxLen()
	if n < 0 || len(t.val)+n > limit {
		panic(ArenaFull{Need: len(t.val) + n, Limit: limit})
	}
	c := min(2*cap(t.val)+n, limit)
	if c < 1024 {
		c = min(1024, limit)
	}
	t.val = growCopy(t, t.val, c)
	// Most values have a node: the records grow with them, here, so
	// that newNode need not (and stays inlined).
	if len(t.nodes) > cap(t.nodes)/2 && cap(t.nodes) < c {
		t.nodes = growCopy(t, t.nodes, min(c, max(2*cap(t.nodes), 1024)))
	}
}

// copyPiece is how many elements growCopy and Gradient's clearing handle
// between checks of the interrupt channel: tens of milliseconds.
const copyPiece = 1 << 22

// growCopy returns a slice of s's length and capacity c holding s's
// elements, copied a piece at a time: a tape of gigabytes takes seconds to
// copy, so between pieces it panics with ErrInterrupted once the channel
// given to SetInterrupt is closed (the evaluator recovers it at its
// boundary, as ArenaFull). s is unchanged then.
func growCopy[T any](t *Tape, s []T, c int) []T {
	v := make([]T, len(s), c)
	for lo := 0; lo < len(s); lo += copyPiece {
		if lo > 0 && t.interrupted() {
			panic(ErrInterrupted)
		}
		copy(v[lo:], s[lo:min(lo+copyPiece, len(s))])
	}
	return v
}

// interrupted reports whether the channel given to SetInterrupt is closed.
func (t *Tape) interrupted() bool {
	if t.done == nil {
		return false
	}
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *Tape) newValue(s Shape, flags uint8) Value {
	off := t.alloc(s.Len())
	return Value{off: off, rows: int32(s.Rows), cols: int32(s.Cols), kf: uint8(s.Kind) | flags}
}

// like returns a new value with the shape of v.
func (t *Tape) like(v Value, flags uint8) Value {
	off := t.alloc(v.Len())
	return Value{off: off, rows: v.rows, cols: v.cols, kf: uint8(v.Kind()) | flags}
}

// nan returns a constant NaN-filled value of shape s, the result of failed
// operations.
func (t *Tape) nan(s Shape) Value {
	if !s.valid() {
		s = ScalarShape()
	}
	v := t.newValue(s, flagConst)
	x := t.val[v.off:v.end()]
	for i := range x {
		x[i] = math.NaN()
	}
	return v
}

func (t *Tape) check(v Value, opName string) bool {
	if v.Kind() == Invalid || v.Kind() > Matrix || v.end() > len(t.val) {
		t.fail("%s: invalid Value (zero Value, or from another tape or before Reset)", opName)
		return false
	}
	return true
}

func (t *Tape) record(n node) {
	if len(t.nodes) == cap(t.nodes) {
		t.growNodes()
	}
	t.nodes = append(t.nodes, n)
}

// growNodes doubles the capacity of the node records, with growCopy.
func (t *Tape) growNodes() { t.nodes = growCopy(t, t.nodes, max(2*cap(t.nodes), 1024)) }

// newNode appends a node record and returns it to be filled in place, field
// by field, on the hot scalar paths: appending a composite literal
// assembles it on the stack and copies it. (Measured under heavy load: the
// scalar benchmarks were 0–30% faster, within the noise in some runs.)
//
// It stays small enough to inline: the records grow with the values
// (grow), a piece at a time, and append grows them here only when they
// fill up first.
func (t *Tape) newNode() *node {
	k := len(t.nodes)
	if k == cap(t.nodes) {
		t.nodes = append(t.nodes, node{})
	} else {
		t.nodes = t.nodes[:k+1]
	}
	return &t.nodes[k]
}

// Const records a scalar constant.
func (t *Tape) Const(x float64) Value {
	off := t.alloc(1)
	t.val[off] = x
	return Value{off: off, rows: 1, cols: 1, kf: uint8(Scalar) | flagConst}
}

// ConstVec records a constant vector with a copy of xs.
func (t *Tape) ConstVec(xs []float64) Value { return t.NewConst(VectorShape(len(xs)), xs) }

// NewConst records a constant of shape s holding a copy of data (row-major
// for matrices). len(data) must be s.Len().
func (t *Tape) NewConst(s Shape, data []float64) Value {
	return t.newLeaf(s, data, flagConst, "NewConst")
}

// Var records an independent scalar variable.
func (t *Tape) Var(x float64) Value {
	off := t.alloc(1)
	t.val[off] = x
	v := Value{off: off, rows: 1, cols: 1, kf: uint8(Scalar)}
	t.vars = append(t.vars, v)
	return v
}

// VarVec records a vector of independent variables with a copy of xs. A
// model's whole unconstrained parameter vector is typically one VarVec,
// whose elements and segments (Index, Slice, Reshape) are then free views.
func (t *Tape) VarVec(xs []float64) Value { return t.NewVar(VectorShape(len(xs)), xs) }

// NewVar records independent variables of shape s holding a copy of data.
func (t *Tape) NewVar(s Shape, data []float64) Value {
	v := t.newLeaf(s, data, 0, "NewVar")
	if v.kf&flagConst == 0 {
		t.vars = append(t.vars, v)
	}
	return v
}

func (t *Tape) newLeaf(s Shape, data []float64, flags uint8, name string) Value {
	if !s.valid() {
		t.fail("%s: invalid shape %v with dimensions %d×%d", name, s.Kind, s.Rows, s.Cols)
		return t.nan(ScalarShape())
	}
	if len(data) != s.Len() {
		t.fail("%s: %v needs %d elements, got %d", name, s, s.Len(), len(data))
		return t.nan(s)
	}
	v := t.newValue(s, flags)
	copy(t.val[v.off:v.end()], data)
	return v
}

// NumVars returns the total number of independent variable elements.
func (t *Tape) NumVars() int {
	n := 0
	for _, v := range t.vars {
		n += v.Len()
	}
	return n
}

// VarGrad copies the adjoints of all independent variables, in the order
// they were created, into dst after a call to Gradient. len(dst) must be
// NumVars().
func (t *Tape) VarGrad(dst []float64) error {
	if n := t.NumVars(); len(dst) != n {
		return fmt.Errorf("autodiff: VarGrad: destination has length %d, tape has %d variables", len(dst), n)
	}
	if !t.swept || len(t.adj) < len(t.val) {
		return errors.New("autodiff: VarGrad: no gradient computed since the last Reset")
	}
	k := 0
	for _, v := range t.vars {
		k += copy(dst[k:], t.adj[v.off:v.end()])
	}
	return nil
}

// Val returns the values of v, row-major for matrices. The slice aliases
// the tape's arena: it may be written only to fill the output of a Custom
// or Partials node, and it is valid only until the next operation that
// creates a value (which may move the arena).
func (t *Tape) Val(v Value) []float64 {
	if !t.check(v, "Val") {
		return nil
	}
	return t.val[v.off:v.end():v.end()]
}

// Scalar returns the first (for scalars, the only) element of v.
func (t *Tape) Scalar(v Value) float64 {
	if !t.check(v, "Scalar") || v.Len() == 0 {
		return math.NaN()
	}
	return t.val[v.off]
}

// Adj returns the adjoints of v, ∂out/∂v for the out of the last Gradient
// call. Custom nodes read their output's adjoint and add into their
// inputs' adjoints through it. Adjoints of constants are meaningless.
func (t *Tape) Adj(v Value) []float64 {
	if !t.check(v, "Adj") || v.end() > len(t.adj) {
		return nil
	}
	return t.adj[v.off:v.end():v.end()]
}

// Gradient runs the backward sweep from the scalar out: afterwards Adj(v)
// holds ∂out/∂v for every value v recorded since the last Reset, and
// VarGrad the gradient with respect to the independent variables. It can
// be called again (adjoints are cleared first). It returns the tape's
// sticky error, if any.
func (t *Tape) Gradient(out Value) error {
	if t.err != nil {
		return t.err
	}
	if !t.check(out, "Gradient") {
		return t.err
	}
	if out.Len() != 1 {
		return fmt.Errorf("autodiff: Gradient: output must be a scalar, got %v", out.Shape())
	}
	if cap(t.adj) < len(t.val) {
		t.adj = make([]float64, len(t.val), cap(t.val))
	} else {
		t.adj = t.adj[:len(t.val)]
		// Kept values are constants: their adjoints are never read, so
		// only the values of this evaluation need clearing (a piece at a
		// time: gigabytes take seconds).
		for lo := t.kept; lo < len(t.adj); lo += copyPiece {
			if lo > t.kept && t.interrupted() {
				return ErrInterrupted
			}
			clear(t.adj[lo:min(lo+copyPiece, len(t.adj))])
		}
	}
	t.adj[out.off] = 1
	if !t.backward() {
		return ErrInterrupted
	}
	t.swept = true
	return nil
}
