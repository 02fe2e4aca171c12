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
