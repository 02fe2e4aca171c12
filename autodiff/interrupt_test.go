package autodiff

import (
	"errors"
	"testing"
)

// TestGradientInterrupt: a backward sweep stops with ErrInterrupted once
// the channel given to SetInterrupt is closed (a sweep over a huge tape
// takes seconds), and the same tape sweeps completely without one.
func TestGradientInterrupt(t *testing.T) {
	tp := NewTape()
	x := tp.Var(1)
	y := x
	for range 3 * interruptEvery {
		y = tp.Add(y, tp.Mul(x, tp.Const(0.5)))
	}
	done := make(chan struct{})
	tp.SetInterrupt(done)
	if err := tp.Gradient(y); err != nil {
		t.Fatalf("before the close: %v", err)
	}
	want := 1 + 0.5*3*interruptEvery
	if g := tp.Adj(x)[0]; g != want {
		t.Fatalf("gradient %g, want %g", g, want)
	}
	close(done)
	if err := tp.Gradient(y); !errors.Is(err, ErrInterrupted) {
		t.Errorf("after the close: %v, want ErrInterrupted", err)
	}
	tp.SetInterrupt(nil)
	if err := tp.Gradient(y); err != nil || tp.Adj(x)[0] != want {
		t.Errorf("without a channel: %v, gradient %g", err, tp.Adj(x)[0])
	}
}
