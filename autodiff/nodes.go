package autodiff

import "slices"

// Node is a primitive that brings its own backward pass, such as an
// unrolled Sinkhorn solver. The caller owns the node object and may reuse
// it across evaluations: registering it with Custom stores only the
// interface value (no allocation when the node is a pointer).
type Node interface {
	// Backward is called once during Gradient, after every node that uses
	// out has run. It reads t.Adj(out) and the values t.Val(ins[k]) and
	// adds ∂/∂ins[k] into t.Adj(ins[k]) for each input that is not
	// constant (adding into a constant's adjoint is harmless but wasted).
	// It must not record new operations or retain ins.
	//
	// A node object registered several times on one tape gets one
	// Backward call per registration, in reverse order; state saved by
	// its forward pass must then be kept per registration (for example
	// keyed by out) or in separate objects.
	Backward(t *Tape, out Value, ins []Value)
}

// Custom registers the node n with inputs ins and returns its output, a new
// value of shape s whose elements are zero. The caller writes the forward
// result into t.Val(out) before recording anything else. If every input is
// constant the output is a constant and n is not recorded. A primitive with
// several outputs returns them packed in one vector, which the caller
// splits with the free views Slice, Index and Reshape.
func (t *Tape) Custom(n Node, s Shape, ins ...Value) Value {
	if !s.valid() {
		t.fail("custom node: invalid output shape %v %d×%d", s.Kind, s.Rows, s.Cols)
		return t.nan(ScalarShape())
	}
	var c uint8 = flagConst
	for _, in := range ins {
		if !t.check(in, "custom node") {
			return t.nan(s)
		}
		c &= in.kf
	}
	out := t.newValue(s, c)
	clear(t.val[out.off:out.end()])
	if c == 0 {
		lo := len(t.args)
		t.args = append(t.args, out) // the output, then the inputs
		t.args = append(t.args, ins...)
		t.record(node{op: opCustom, n: int32(s.Len()), out: out.off, a: int32(lo), b: int32(len(t.args)), c: int32(len(t.custom))})
		t.custom = append(t.custom, n)
	}
	return out
}

// Partials is a node whose partial derivatives are computed by the caller
// during the forward pass, like Stan's operands_and_partials: the caller
// writes the output values into Out and ∂out/∂input into D(k); the
// backward pass only multiplies by the output's adjoint. It is how
// vectorized densities are written: O(N) forward, O(N) backward, one node.
//
// The slices returned by Out and D alias the tape's arena: fill them before
// recording any other operation.
type Partials struct {
	t    *Tape
	out  Value
	node int32 // index into t.nodes, or -1 when nothing is recorded
}

// ScalarPartials records a node with a scalar output that depends on every
// element of every input. D(k) has one slot per element of ins[k]:
// D(k)[j] = ∂out/∂ins[k][j].
func (t *Tape) ScalarPartials(ins ...Value) Partials {
	return t.partials(opPartials, ScalarShape(), ins)
}

// ElementwisePartials records a node with output of shape s whose element i
// depends only on element i of each input (or on its only element, for a
// scalar input, which is broadcast). D(k) has one slot per output element:
// D(k)[i] = ∂out[i]/∂ins[k][i] (or ∂out[i]/∂ins[k] for a scalar input).
func (t *Tape) ElementwisePartials(s Shape, ins ...Value) Partials {
	return t.partials(opPartialsElem, s, ins)
}

func (t *Tape) partials(o op, s Shape, ins []Value) Partials {
	if !s.valid() {
		t.fail("partials node: invalid output shape %v %d×%d", s.Kind, s.Rows, s.Cols)
		return Partials{t: t, out: t.nan(ScalarShape()), node: -1}
	}
	n := s.Len()
	var c uint8 = flagConst
	m := 0 // number of partial slots
	for _, in := range ins {
		if !t.check(in, "partials node") {
			return Partials{t: t, out: t.nan(s), node: -1}
		}
		if o == opPartialsElem && in.Len() != n && in.Kind() != Scalar {
			t.fail("partials node: input of shape %v does not match output %v", in.Shape(), s)
			return Partials{t: t, out: t.nan(s), node: -1}
		}
		c &= in.kf
		if !in.IsConst() {
			if o == opPartials {
				m += in.Len()
			} else {
				m += n
			}
		}
	}
	out := t.newValue(s, c)
	clear(t.val[out.off:out.end()])
	if c != 0 {
		return Partials{t: t, out: out, node: -1}
	}
	lo := len(t.args)
	t.args = append(t.args, ins...)
	p := len(t.part)
	t.part = slices.Grow(t.part, m)[:p+m]
	clear(t.part[p:])
	t.record(node{op: o, n: int32(n), out: out.off, a: int32(lo), b: int32(len(t.args)), c: int32(p)})
	return Partials{t: t, out: out, node: int32(len(t.nodes) - 1)}
}

// Value returns the node's output.
func (p Partials) Value() Value { return p.out }

// Out returns the output's values, to be filled by the caller.
func (p Partials) Out() []float64 { return p.t.Val(p.out) }

// D returns the partial-derivative slots of input k, zero-initialized, or
// nil when input k is constant (the caller may then skip computing them).
func (p Partials) D(k int) []float64 {
	if p.node < 0 {
		return nil
	}
	t := p.t
	nd := &t.nodes[p.node]
	ins := t.args[nd.a:nd.b]
	if k < 0 || k >= len(ins) {
		return nil
	}
	off := int(nd.c)
	for j, in := range ins {
		if in.IsConst() {
			if j == k {
				return nil
			}
			continue
		}
		l := int(nd.n)
		if nd.op == opPartials {
			l = in.Len()
		}
		if j == k {
			return t.part[off : off+l : off+l]
		}
		off += l
	}
	return nil
}
