package autodiff

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// at returns element i of xs, broadcasting a length-1 slice.
func at(xs []float64, i int) float64 {
	if len(xs) == 1 {
		return xs[0]
	}
	return xs[i]
}

// stride is 0 for a broadcast (length-1) argument, 1 otherwise.
func stride(xs []float64) int {
	if len(xs) == 1 {
		return 0
	}
	return 1
}

// normalLpdf is written the way a vectorized density in stdlib will be:
// one ScalarPartials node, O(N) forward and backward. Each argument is a
// scalar or a vector of length n; the density keeps its constant term.
func normalLpdf(t *Tape, y, mu, sigma Value) Value {
	n := max(y.Len(), mu.Len(), sigma.Len())
	p := t.ScalarPartials(y, mu, sigma)
	ys, ms, ss := t.Val(y), t.Val(mu), t.Val(sigma)
	sy, sm, sd := stride(ys), stride(ms), stride(ss)
	dy, dmu, dsigma := p.D(0), p.D(1), p.D(2)
	// log sigma once for a scalar sigma, as a real density would.
	logSigma := math.Log(ss[0])
	var lp float64
	for i := 0; i < n; i++ {
		s := ss[i*sd]
		if sd != 0 {
			logSigma = math.Log(s)
		}
		z := (ys[i*sy] - ms[i*sm]) / s
		lp += -0.5*z*z - logSigma
		if dy != nil {
			dy[i*sy] -= z / s
		}
		if dmu != nil {
			dmu[i*sm] += z / s
		}
		if dsigma != nil {
			dsigma[i*sd] += (z*z - 1) / s
		}
	}
	p.Out()[0] = lp - float64(n)*0.5*math.Log(2*math.Pi)
	return p.Value()
}

// normalLpdfPointwise returns the vector of pointwise log densities, one
// ElementwisePartials node.
func normalLpdfPointwise(t *Tape, y, mu, sigma Value) Value {
	n := max(y.Len(), mu.Len(), sigma.Len())
	p := t.ElementwisePartials(VectorShape(n), y, mu, sigma)
	ys, ms, ss := t.Val(y), t.Val(mu), t.Val(sigma)
	out, dy, dmu, dsigma := p.Out(), p.D(0), p.D(1), p.D(2)
	for i := range out {
		s := at(ss, i)
		z := (at(ys, i) - at(ms, i)) / s
		out[i] = -0.5*z*z - math.Log(s) - 0.5*math.Log(2*math.Pi)
		if dy != nil {
			dy[i] = -z / s
		}
		if dmu != nil {
			dmu[i] = z / s
		}
		if dsigma != nil {
			dsigma[i] = (z*z - 1) / s
		}
	}
	return p.Value()
}

func TestPartials(t *testing.T) {
	yd := []float64{0.3, -1.1, 2.4, 0.9}
	// x = (mu[4], sigma[4], mu0, sigma0)
	x0 := []float64{0.1, -0.5, 1.7, 1.2, 0.8, 1.3, 2.1, 0.6, 0.4, 1.1}
	type args struct{ y, mu, sigma Value }
	shapes := []struct {
		name string
		args func(t *Tape, x Value) args
		ref  func(x []float64) (mu, sigma []float64)
	}{
		{"y const, mu vector, sigma scalar", func(t *Tape, x Value) args {
			return args{t.ConstVec(yd), t.Slice(x, 0, 4), t.Index(x, 9)}
		}, func(x []float64) ([]float64, []float64) { return x[0:4], x[9:10] }},
		{"y const, mu scalar, sigma vector", func(t *Tape, x Value) args {
			return args{t.ConstVec(yd), t.Index(x, 8), t.Slice(x, 4, 4)}
		}, func(x []float64) ([]float64, []float64) { return x[8:9], x[4:8] }},
		{"all vectors", func(t *Tape, x Value) args {
			return args{t.ConstVec(yd), t.Slice(x, 0, 4), t.Slice(x, 4, 4)}
		}, func(x []float64) ([]float64, []float64) { return x[0:4], x[4:8] }},
		{"y variable", func(t *Tape, x Value) args {
			return args{t.Slice(x, 0, 4), t.Const(0.5), t.Index(x, 9)}
		}, func(x []float64) ([]float64, []float64) { return []float64{0.5}, x[9:10] }},
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			scalar := func(tp *Tape, x Value) Value {
				a := s.args(tp, x)
				return normalLpdf(tp, a.y, a.mu, a.sigma)
			}
			pointwise := func(tp *Tape, x Value) Value {
				a := s.args(tp, x)
				return wsum(tp, normalLpdfPointwise(tp, a.y, a.mu, a.sigma))
			}
			if err := CheckGradient(scalar, x0, 1e-7); err != nil {
				t.Errorf("ScalarPartials: %v", err)
			}
			if err := CheckGradient(pointwise, x0, 1e-7); err != nil {
				t.Errorf("ElementwisePartials: %v", err)
			}
			// Values against gonum's normal density.
			mu, sigma := s.ref(x0)
			ys := yd
			if s.name == "y variable" {
				ys = x0[0:4]
			}
			var want float64
			lps := make([]float64, 4)
			for i := range 4 {
				lps[i] = distuv.Normal{Mu: at(mu, i), Sigma: at(sigma, i)}.LogProb(ys[i])
				want += lps[i]
			}
			tp := NewTape()
			if got := tp.Scalar(scalar(tp, tp.VarVec(x0))); math.Abs(got-want) > 1e-12*math.Abs(want) {
				t.Errorf("ScalarPartials value %.16g, want %.16g", got, want)
			}
			if got, want := tp.Scalar(pointwise(tp, tp.VarVec(x0))), wsumF(lps); math.Abs(got-want) > 1e-12*math.Abs(want) {
				t.Errorf("ElementwisePartials value %.16g, want %.16g", got, want)
			}
		})
	}
	// With every input constant nothing is recorded and D is nil.
	tp := NewTape()
	p := tp.ScalarPartials(tp.Const(1), tp.ConstVec(yd))
	if p.D(0) != nil || p.D(1) != nil || !p.Value().IsConst() || tp.NumNodes() != 0 {
		t.Error("constant partials node: recorded a node or returned partial slots")
	}
}

// expScale is a custom node y = x · exp(-s) (x a vector, s a scalar) with
// its own backward pass and a scratch field reused across evaluations, as
// a Sinkhorn node keeps its iteration potentials.
type expScale struct {
	scale     float64 // exp(-s), saved by the forward pass for the backward pass
	backwards int
}

func (n *expScale) forward(t *Tape, x, s Value) Value {
	out := t.Custom(n, x.Shape(), x, s)
	n.scale = math.Exp(-t.Scalar(s))
	y, xs := t.Val(out), t.Val(x)
	for i := range y {
		y[i] = xs[i] * n.scale
	}
	return out
}

func (n *expScale) Backward(t *Tape, out Value, ins []Value) {
	n.backwards++
	g, y := t.Adj(out), t.Val(out)
	if !ins[0].IsConst() {
		ax := t.Adj(ins[0])
		for i, gi := range g {
			ax[i] += gi * n.scale
		}
	}
	if !ins[1].IsConst() {
		var s float64
		for i, gi := range g {
			s -= gi * y[i]
		}
		t.Adj(ins[1])[0] += s
	}
}

func TestCustomNode(t *testing.T) {
	node := &expScale{}
	f := func(tp *Tape, x Value) Value {
		y := node.forward(tp, tp.Slice(x, 0, 4), tp.Index(x, 4))
		if y.Shape() != VectorShape(4) {
			t.Fatalf("custom output shape %v", y.Shape())
		}
		return tp.Mul(tp.LogSumExp(y), tp.Sum(y))
	}
	x0 := []float64{0.3, -1.1, 2.4, 0.9, 0.7}
	if err := CheckGradient(f, x0, 1e-7); err != nil {
		t.Error(err)
	}
	if node.backwards != 1 {
		t.Errorf("Backward ran %d times, want 1", node.backwards)
	}
	// Value against the direct formula.
	tp := NewTape()
	y := f(tp, tp.VarVec(x0))
	var l, s float64
	for _, v := range x0[:4] {
		e := v * math.Exp(-x0[4])
		l += math.Exp(e)
		s += e
	}
	if got, want := tp.Scalar(y), math.Log(l)*s; math.Abs(got-want) > 1e-13 {
		t.Errorf("value %.16g, want %.16g", got, want)
	}
	// Constant inputs: the node is not recorded, its output is constant.
	tp.Reset()
	c := node.forward(tp, tp.ConstVec(x0[:4]), tp.Const(1))
	if !c.IsConst() || tp.NumNodes() != 0 {
		t.Error("custom node on constants was recorded")
	}
}
