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

// TestGrowInterrupt: once the interrupt channel is closed, a growth of the
// tape's storage beyond one piece (a copy of gigabytes takes seconds)
// panics with ErrInterrupted between pieces, for the values and for the
// node records, and leaves the tape as it was; smaller growths and an open
// channel record as usual.
func TestGrowInterrupt(t *testing.T) {
	grows := func(tp *Tape, record func()) (err any) {
		defer func() { err = recover() }()
		for range 4 * copyPiece {
			record()
		}
		return nil
	}
	for _, c := range []struct {
		name   string
		record func(tp *Tape, x Value)
	}{
		{"values", func(tp *Tape, _ Value) { tp.Const(1) }},
		{"nodes", func(tp *Tape, x Value) { tp.Add(x, x) }},
	} {
		tp := NewTape()
		x := tp.Var(1)
		done := make(chan struct{})
		tp.SetInterrupt(done)
		for range copyPiece + 1 { // beyond one piece, with the channel open
			c.record(tp, x)
		}
		close(done)
		size, nodes := tp.Size(), tp.NumNodes()
		r := grows(tp, func() { c.record(tp, x) })
		if r != ErrInterrupted {
			t.Fatalf("%s: recording with a closed channel: %v, want a panic with ErrInterrupted", c.name, r)
		}
		if tp.Size() < size || tp.NumNodes() < nodes || tp.Size() >= size+4*copyPiece {
			t.Errorf("%s: after the panic: %d values, %d nodes (had %d, %d)", c.name, tp.Size(), tp.NumNodes(), size, nodes)
		}
		small := NewTape()
		small.SetInterrupt(done)
		y := small.Var(1)
		for range 1000 {
			c.record(small, y)
		}
	}
}
