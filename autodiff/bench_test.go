package autodiff

import "testing"

// BenchmarkScalarChain1000 records 1000 scalar multiply-adds (2000 nodes)
// and sweeps them: the per-node cost of scalar code.
func BenchmarkScalarChain1000(b *testing.B) {
	tp := NewTape()
	c := tp.Const(0.999)
	if err := tp.Keep(); err != nil {
		b.Fatal(err)
	}
	eval := func() {
		tp.Reset()
		x := tp.Var(1)
		s := x
		for range 1000 {
			s = tp.Add(tp.Mul(s, c), x)
		}
		if err := tp.Gradient(s); err != nil {
			b.Fatal(err)
		}
	}
	eval() // warm up the arenas
	b.ReportAllocs()
	for b.Loop() {
		eval()
	}
}

// BenchmarkVectorExp1000 applies exp to a vector of 1000 (one node), sums
// it and sweeps: the per-element cost of a vectorized unary function.
func BenchmarkVectorExp1000(b *testing.B) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i) / 1000
	}
	tp := NewTape()
	eval := func() {
		tp.Reset()
		x := tp.VarVec(xs)
		if err := tp.Gradient(tp.Sum(tp.Exp(x))); err != nil {
			b.Fatal(err)
		}
	}
	eval() // warm up the arenas
	b.ReportAllocs()
	for b.Loop() {
		eval()
	}
}
