package autodiff

import (
	"math"
	"testing"
)

// TestRewind checks that operations recorded after a mark and rewound
// leave neither nodes nor gradient contributions behind.
func TestRewind(t *testing.T) {
	tp := NewTape()
	x := tp.Var(1.5)
	y := tp.Mul(x, x)
	nodes, size := tp.NumNodes(), tp.Size()
	m := tp.Mark()
	z := tp.Exp(tp.Mul(y, x)) // read, then dropped
	if v := tp.Scalar(z); math.Abs(v-math.Exp(1.5*1.5*1.5)) > 1e-12 {
		t.Fatalf("exp(x³) = %g", v)
	}
	tp.Custom(&linearNode{}, ScalarShape(), y)
	tp.Rewind(m)
	if tp.NumNodes() != nodes || tp.Size() != size {
		t.Fatalf("after Rewind: %d nodes and %d values, want %d and %d", tp.NumNodes(), tp.Size(), nodes, size)
	}
	w := tp.Mul(y, tp.Const(3))
	if err := tp.Gradient(w); err != nil {
		t.Fatal(err)
	}
	grad := make([]float64, 1)
	if err := tp.VarGrad(grad); err != nil {
		t.Fatal(err)
	}
	if grad[0] != 6*1.5 {
		t.Errorf("d(3x²)/dx = %g, want %g", grad[0], 6*1.5)
	}
}

// linearNode is a custom node that must never run its backward pass.
type linearNode struct{}

func (*linearNode) Backward(*Tape, Value, []Value) { panic("a rewound node ran its backward pass") }

// TestRewindLimits: a rewind to a mark taken before Keep's values, or
// after a gradient sweep, does nothing (the doc's promise).
func TestRewindLimits(t *testing.T) {
	tp := NewTape()
	early := tp.Mark()
	c := tp.Const(2)
	if err := tp.Keep(); err != nil {
		t.Fatal(err)
	}
	tp.Rewind(early) // below the kept values
	if tp.Size() != 1 || tp.Scalar(c) != 2 {
		t.Fatalf("a rewind below the kept values changed the tape: %d values", tp.Size())
	}
	x := tp.Var(3)
	m := tp.Mark()
	y := tp.Mul(x, x)
	if err := tp.Gradient(y); err != nil {
		t.Fatal(err)
	}
	n := tp.NumNodes()
	tp.Rewind(m) // after the sweep
	if tp.NumNodes() != n {
		t.Errorf("a rewind after the gradient dropped nodes: %d, want %d", tp.NumNodes(), n)
	}
	tp.Reset()
	if tp.Size() != 1 || tp.Scalar(c) != 2 {
		t.Errorf("after Reset: %d values, kept constant %g", tp.Size(), tp.Scalar(c))
	}
}
