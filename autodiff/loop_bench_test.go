package autodiff

import (
	"math"
	"testing"
)

// BenchmarkTapeScalarLoop records and differentiates posteriordb's arK
// model (K = 5, T = 200) with direct tape calls: the floor under any
// evaluator of that model written with loops.
func BenchmarkTapeScalarLoop(b *testing.B) {
	const K, T = 5, 200
	y := make([]float64, T)
	for i := range y {
		y[i] = math.Sin(float64(i))
	}
	t := NewTape()
	b.ReportAllocs()
	for b.Loop() {
		t.Reset()
		alpha := t.Var(0.1)
		beta := t.VarVec([]float64{0.1, 0.1, 0.1, 0.1, 0.1})
		sigma := t.Var(0.5)
		lp := t.Const(0)
		for tt := K; tt < T; tt++ {
			m := alpha
			for k := 0; k < K; k++ {
				m = t.Add(m, t.Mul(t.Index(beta, k), t.Const(y[tt-k-1])))
			}
			s := t.Scalar(sigma)
			z := (y[tt] - t.Scalar(m)) / s
			p := t.ScalarPartials(m, sigma)
			p.D(0)[0] = z / s
			p.D(1)[0] = (z*z - 1) / s
			p.Out()[0] = -0.5*z*z - math.Log(s)
			lp = t.Add(lp, p.Value())
		}
		if err := t.Gradient(lp); err != nil {
			b.Fatal(err)
		}
	}
}
