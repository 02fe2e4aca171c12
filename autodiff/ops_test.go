package autodiff

import (
	"errors"
	"math"
	"testing"
)

// weights returns n fixed, distinct weights used to reduce a container
// output to a scalar so that every output element reaches the gradient.
func weights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 0.5 + 0.37*float64(i%7) - 0.11*float64(i%3)
	}
	return w
}

func wsum(t *Tape, v Value) Value {
	return t.Dot(t.Reshape(v, VectorShape(v.Len())), t.ConstVec(weights(v.Len())))
}

func wsumF(y []float64) float64 {
	w := weights(len(y))
	var s float64
	for i := range y {
		s += w[i] * y[i]
	}
	return s
}

// opCase is one row of the table of operations: f builds a scalar on the
// tape from the variable vector x, want computes the same scalar in plain
// Go, independently of the tape.
type opCase struct {
	name string
	x0   []float64
	f    func(t *Tape, x Value) Value
	want func(x []float64) float64
}

var x6 = []float64{0.3, -1.2, 0.8, 2.1, -0.4, 1.5}

// mat23 views x[0:6] as a 2×3 matrix.
func mat23(t *Tape, x Value) Value { return t.Reshape(x, MatrixShape(2, 3)) }

var opCases = []opCase{
	{"sum", x6, func(t *Tape, x Value) Value { return t.Sum(x) },
		func(x []float64) float64 { return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] }},
	{"sum/matrix", x6, func(t *Tape, x Value) Value { return t.Sum(mat23(t, x)) },
		func(x []float64) float64 { return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] }},
	{"dot", x6, func(t *Tape, x Value) Value { return t.Dot(t.Slice(x, 0, 3), t.Transpose(t.Slice(x, 3, 3))) },
		func(x []float64) float64 { return x[0]*x[3] + x[1]*x[4] + x[2]*x[5] }},
	{"dot/self-alias", x6, func(t *Tape, x Value) Value { return t.Dot(x, x) },
		func(x []float64) float64 { return dotF(x, x) }},
	{"dot/const", x6, func(t *Tape, x Value) Value { return t.Dot(t.ConstVec(x6), x) },
		func(x []float64) float64 { return dotF(x6, x) }},
	{"dot_self", x6, func(t *Tape, x Value) Value { return t.DotSelf(x) },
		func(x []float64) float64 { return dotF(x, x) }},
	{"log_sum_exp", x6, func(t *Tape, x Value) Value { return t.LogSumExp(x) },
		func(x []float64) float64 {
			var s float64
			for _, v := range x {
				s += math.Exp(v)
			}
			return math.Log(s)
		}},
	{"log_sum_exp/large", []float64{800, 801, 799.5}, func(t *Tape, x Value) Value { return t.LogSumExp(x) },
		func(x []float64) float64 {
			return 800 + math.Log(1+math.Exp(1)+math.Exp(-0.5))
		}},
	{"softmax", x6, func(t *Tape, x Value) Value { return wsum(t, t.Softmax(x)) },
		func(x []float64) float64 { return wsumF(softmaxF(x)) }},
	{"log_softmax", x6, func(t *Tape, x Value) Value { return wsum(t, t.LogSoftmax(t.Transpose(x))) },
		func(x []float64) float64 {
			y := softmaxF(x)
			for i := range y {
				y[i] = math.Log(y[i])
			}
			return wsumF(y)
		}},
	{"cumulative_sum", x6, func(t *Tape, x Value) Value { return wsum(t, t.CumSum(x)) },
		func(x []float64) float64 {
			y := make([]float64, len(x))
			s := 0.0
			for i := range x {
				s += x[i]
				y[i] = s
			}
			return wsumF(y)
		}},
	{"rep_matrix", x6, func(t *Tape, x Value) Value { return wsum(t, t.Fill(t.Index(x, 2), MatrixShape(3, 2))) },
		func(x []float64) float64 { return wsumF([]float64{x[2], x[2], x[2], x[2], x[2], x[2]}) }},
	{"matrix*vector", x6, func(t *Tape, x Value) Value {
		return wsum(t, t.MatMul(mat23(t, x), t.Slice(t.Exp(x), 1, 3)))
	}, func(x []float64) float64 {
		v := []float64{math.Exp(x[1]), math.Exp(x[2]), math.Exp(x[3])}
		return wsumF(matMulF(x, v, 2, 3, 1))
	}},
	{"row_vector*matrix", x6, func(t *Tape, x Value) Value {
		rv := t.Transpose(t.Slice(t.Square(x), 0, 2))
		return wsum(t, t.MatMul(rv, mat23(t, x)))
	}, func(x []float64) float64 {
		return wsumF(matMulF([]float64{x[0] * x[0], x[1] * x[1]}, x, 1, 2, 3))
	}},
	{"row_vector*vector", x6, func(t *Tape, x Value) Value {
		return t.MatMul(t.Transpose(t.Slice(x, 0, 3)), t.Slice(x, 3, 3))
	}, func(x []float64) float64 { return x[0]*x[3] + x[1]*x[4] + x[2]*x[5] }},
	{"vector*row_vector", x6, func(t *Tape, x Value) Value {
		return wsum(t, t.MatMul(t.Slice(x, 0, 2), t.Transpose(t.Slice(x, 2, 4))))
	}, func(x []float64) float64 { return wsumF(matMulF(x[:2], x[2:], 2, 1, 4)) }},
	{"matrix*matrix", x6, func(t *Tape, x Value) Value {
		b := t.Reshape(t.Unary(Log1p, t.Square(x)), MatrixShape(3, 2))
		return wsum(t, t.MatMul(mat23(t, x), b))
	}, func(x []float64) float64 {
		b := make([]float64, 6)
		for i := range b {
			b[i] = math.Log1p(x[i] * x[i])
		}
		return wsumF(matMulF(x, b, 2, 3, 2))
	}},
	{"const_matrix*vector", x6, func(t *Tape, x Value) Value {
		return wsum(t, t.MatMul(t.NewConst(MatrixShape(2, 3), x6), t.Slice(x, 0, 3)))
	}, func(x []float64) float64 { return wsumF(matMulF(x6, x[:3], 2, 3, 1)) }},
	{"scalar*matrix", x6, func(t *Tape, x Value) Value { return wsum(t, t.MatMul(t.Index(x, 4), mat23(t, x))) },
		func(x []float64) float64 {
			y := make([]float64, 6)
			for i := range y {
				y[i] = x[4] * x[i]
			}
			return wsumF(y)
		}},
	{"transpose", x6, func(t *Tape, x Value) Value { return wsum(t, t.Transpose(mat23(t, x))) },
		func(x []float64) float64 { return wsumF([]float64{x[0], x[3], x[1], x[4], x[2], x[5]}) }},
	{"index/at/row", x6, func(t *Tape, x Value) Value {
		m := mat23(t, x)
		return t.Add(t.Mul(t.At(m, 1, 2), t.Index(x, 1)), t.Sum(t.Row(m, 1)))
	}, func(x []float64) float64 { return x[5]*x[1] + x[3] + x[4] + x[5] }},
	{"multi-index", x6, func(t *Tape, x Value) Value { return wsum(t, t.Gather(t.Exp(x), []int{4, 0, 4, 5, 4})) },
		func(x []float64) float64 {
			return wsumF([]float64{math.Exp(x[4]), math.Exp(x[0]), math.Exp(x[4]), math.Exp(x[5]), math.Exp(x[4])})
		}},
	{"col", x6, func(t *Tape, x Value) Value { return wsum(t, t.Col(mat23(t, t.Square(x)), 1)) },
		func(x []float64) float64 { return wsumF([]float64{x[1] * x[1], x[4] * x[4]}) }},
	{"concat", x6, func(t *Tape, x Value) Value {
		v := t.Concat(VectorShape(6), t.Index(x, 5), t.Const(2), t.Slice(t.Exp(x), 1, 3), t.Index(x, 0))
		return wsum(t, t.Mul(v, v))
	}, func(x []float64) float64 {
		v := []float64{x[5], 2, math.Exp(x[1]), math.Exp(x[2]), math.Exp(x[3]), x[0]}
		for i := range v {
			v[i] *= v[i]
		}
		return wsumF(v)
	}},
	{"concat/matrix", x6, func(t *Tape, x Value) Value {
		return wsum(t, t.Concat(MatrixShape(3, 2), t.Slice(x, 0, 2), t.Transpose(t.Slice(x, 2, 4))))
	}, func(x []float64) float64 { return wsumF(x) }},
	{"reuse", x6, func(t *Tape, x Value) Value {
		// A value used by several nodes accumulates all their adjoints.
		e := t.Exp(x)
		return t.Add(t.Mul(t.Sum(e), t.DotSelf(e)), t.LogSumExp(e))
	}, func(x []float64) float64 {
		var s, q, l float64
		for _, v := range x {
			s += math.Exp(v)
			q += math.Exp(2 * v)
			l += math.Exp(math.Exp(v))
		}
		return s*q + math.Log(l)
	}},
	{"scalar chain", []float64{0.7, 1.9}, func(t *Tape, x Value) Value {
		a, b := t.Index(x, 0), t.Index(x, 1)
		y := t.Div(t.Pow(a, b), t.Sub(t.Neg(a), b))
		return t.Mul(y, t.Add(y, t.Const(1.5)))
	}, func(x []float64) float64 {
		y := math.Pow(x[0], x[1]) / (-x[0] - x[1])
		return y * (y + 1.5)
	}},
}

func dotF(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func softmaxF(x []float64) []float64 {
	y := make([]float64, len(x))
	var s float64
	for i, v := range x {
		y[i] = math.Exp(v)
		s += y[i]
	}
	for i := range y {
		y[i] /= s
	}
	return y
}

// matMulF is the textbook triple loop: y = A (r×k) B (k×c).
func matMulF(A, B []float64, r, k, c int) []float64 {
	y := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			for l := 0; l < k; l++ {
				y[i*c+j] += A[i*k+l] * B[l*c+j]
			}
		}
	}
	return y
}

// TestOps checks the value of every operation against a direct formula,
// its gradient against finite differences, and that the same computation
// on constants gives the same value and records nothing.
func TestOps(t *testing.T) {
	for _, c := range opCases {
		t.Run(c.name, func(t *testing.T) {
			tp := NewTape()
			y := c.f(tp, tp.VarVec(c.x0))
			if err := tp.Err(); err != nil {
				t.Fatal(err)
			}
			got, want := tp.Scalar(y), c.want(c.x0)
			if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("value %.16g, want %.16g", got, want)
			}
			if err := CheckGradient(c.f, c.x0, 1e-7); err != nil {
				t.Error(err)
			}
			tp.Reset()
			yc := c.f(tp, tp.ConstVec(c.x0))
			if !yc.IsConst() || tp.NumNodes() != 0 {
				t.Errorf("on constants: IsConst %v, %d nodes recorded", yc.IsConst(), tp.NumNodes())
			}
			if gc := tp.Scalar(yc); gc != got {
				t.Errorf("on constants: value %.16g, on variables %.16g", gc, got)
			}
		})
	}
}

// TestShapeErrors checks that misuse gives a sticky error and NaN values
// instead of a panic, and that Gradient reports it.
func TestShapeErrors(t *testing.T) {
	cases := []struct {
		name string
		f    func(t *Tape, x Value) Value
	}{
		{"add vector[6] vector[3]", func(t *Tape, x Value) Value { return t.Add(x, t.Slice(x, 0, 3)) }},
		{"add vector row_vector", func(t *Tape, x Value) Value { return t.Add(x, t.Transpose(x)) }},
		{"dot lengths", func(t *Tape, x Value) Value { return t.Dot(x, t.Slice(x, 0, 3)) }},
		{"matmul dims", func(t *Tape, x Value) Value { return t.MatMul(mat23(t, x), x) }},
		{"index", func(t *Tape, x Value) Value { return t.Index(x, 6) }},
		{"negative index", func(t *Tape, x Value) Value { return t.Index(x, -1) }},
		{"at", func(t *Tape, x Value) Value { return t.At(mat23(t, x), 2, 0) }},
		{"slice", func(t *Tape, x Value) Value { return t.Slice(x, 4, 3) }},
		{"row", func(t *Tape, x Value) Value { return t.Row(x, 0) }},
		{"col", func(t *Tape, x Value) Value { return t.Col(mat23(t, x), 3) }},
		{"gather", func(t *Tape, x Value) Value { return t.Gather(x, []int{0, 7}) }},
		{"reshape", func(t *Tape, x Value) Value { return t.Reshape(x, MatrixShape(4, 2)) }},
		{"concat", func(t *Tape, x Value) Value { return t.Concat(VectorShape(5), x) }},
		{"fill", func(t *Tape, x Value) Value { return t.Fill(x, VectorShape(3)) }},
		{"softmax of matrix", func(t *Tape, x Value) Value { return t.Softmax(mat23(t, x)) }},
		{"zero value", func(t *Tape, x Value) Value { return t.Exp(Value{}) }},
		{"var data length", func(t *Tape, x Value) Value { return t.NewVar(VectorShape(2), []float64{1}) }},
		{"partials shape", func(t *Tape, x Value) Value {
			return t.ElementwisePartials(VectorShape(3), x).Value()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := NewTape()
			x := tp.VarVec(x6)
			y := c.f(tp, x)
			if tp.Err() == nil {
				t.Fatal("no error recorded")
			}
			for _, v := range tp.Val(y) {
				if !math.IsNaN(v) {
					t.Errorf("failed operation returned %v, want NaN", tp.Val(y))
					break
				}
			}
			s := tp.Sum(tp.Exp(x))
			if err := tp.Gradient(s); err == nil || err != tp.Err() {
				t.Errorf("Gradient returned %v, want the sticky error %v", err, tp.Err())
			}
			tp.Reset()
			if tp.Err() != nil {
				t.Errorf("error survived Reset: %v", tp.Err())
			}
		})
	}
}

func TestGradientErrors(t *testing.T) {
	tp := NewTape()
	x := tp.VarVec(x6)
	if err := tp.Gradient(tp.Exp(x)); err == nil {
		t.Error("Gradient of a vector: no error")
	}
	if err := tp.VarGrad(make([]float64, 6)); err == nil {
		t.Error("VarGrad before Gradient: no error")
	}
	if err := tp.Gradient(tp.Sum(x)); err != nil {
		t.Fatal(err)
	}
	if err := tp.VarGrad(make([]float64, 5)); err == nil {
		t.Error("VarGrad with a short destination: no error")
	}
	tp.Reset()
	tp.VarVec(x6)
	if err := tp.VarGrad(make([]float64, 6)); err == nil {
		t.Error("VarGrad after Reset without Gradient: no error")
	}
}

// TestGradientTwice checks that Gradient can be repeated (adjoints are
// cleared) and that VarGrad orders several independent variables.
func TestGradientTwice(t *testing.T) {
	tp := NewTape()
	a := tp.Var(2)
	v := tp.VarVec([]float64{1, 3})
	b := tp.NewVar(MatrixShape(1, 1), []float64{5})
	y := tp.Add(tp.Mul(a, tp.DotSelf(v)), tp.Square(tp.Index(b, 0)))
	want := []float64{10, 2 * 2 * 1, 2 * 2 * 3, 10}
	got := make([]float64, tp.NumVars())
	for range 2 {
		if err := tp.Gradient(y); err != nil {
			t.Fatal(err)
		}
		if err := tp.VarGrad(got); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("gradient %v, want %v", got, want)
			}
		}
	}
	// Adjoint of an intermediate: ∂y/∂(a·|v|²) = 1.
	if err := tp.Gradient(y); err != nil {
		t.Fatal(err)
	}
	if g := tp.Adj(v); g[0] != 4 || g[1] != 12 {
		t.Errorf("Adj(v) = %v, want [4 12]", g)
	}
}

// TestKeep checks that kept data survive Reset unchanged and that only
// constants can be kept.
func TestKeep(t *testing.T) {
	tp := NewTape()
	data := tp.ConstVec([]float64{1, 2, 3})
	if err := tp.Keep(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		tp.Reset()
		x := tp.Var(float64(i))
		y := tp.Dot(data, tp.Fill(x, VectorShape(3)))
		if err := tp.Gradient(y); err != nil {
			t.Fatal(err)
		}
		if got := tp.Scalar(y); got != 6*float64(i) {
			t.Errorf("evaluation %d: value %v, want %v", i, got, 6*float64(i))
		}
		if got := tp.Adj(x)[0]; got != 6 {
			t.Errorf("evaluation %d: gradient %v, want 6", i, got)
		}
	}
	if err := tp.Keep(); err == nil {
		t.Error("Keep with variables on the tape: no error")
	}
	tp.ResetAll()
	if tp.Val(data) != nil || tp.Err() == nil {
		t.Error("a kept value is still readable after ResetAll")
	}
}

// wrongNode is a custom node with a deliberately wrong backward pass
// (y = x², backward claims 3x): the checker must catch it.
type wrongNode struct{}

func (wrongNode) Backward(t *Tape, out Value, ins []Value) {
	g, x, ax := t.Adj(out), t.Val(ins[0]), t.Adj(ins[0])
	for i := range g {
		ax[i] += g[i] * 3 * x[i]
	}
}

func TestCheckGradientCatchesErrors(t *testing.T) {
	f := func(tp *Tape, x Value) Value {
		y := tp.Custom(wrongNode{}, x.Shape(), x)
		out, xs := tp.Val(y), tp.Val(x)
		for i := range out {
			out[i] = xs[i] * xs[i]
		}
		return tp.Dot(y, tp.ConstVec([]float64{0, 1, 0}))
	}
	err := CheckGradient(f, []float64{1, 2, 3}, 1e-6)
	var ge *GradientError
	if !errors.As(err, &ge) {
		t.Fatalf("CheckGradient returned %v, want a *GradientError", err)
	}
	if ge.Coord != 1 || ge.Analytic != 6 || math.Abs(ge.Numeric-4) > 1e-8 {
		t.Errorf("GradientError %+v, want coordinate 1, analytic 6, numeric 4", *ge)
	}
	if err := CheckGradient(func(tp *Tape, x Value) Value { return x }, []float64{1, 2}, 1e-6); err == nil {
		t.Error("CheckGradient of a vector-valued f: no error")
	}
}

func TestNumericGradient(t *testing.T) {
	x := []float64{0.3, -1.7, 25}
	g := make([]float64, 3)
	NumericGradient(func(x []float64) float64 {
		return math.Sin(x[0])*math.Exp(x[1]) + math.Log(x[2])*x[2]
	}, x, g)
	want := []float64{math.Cos(0.3) * math.Exp(-1.7), math.Sin(0.3) * math.Exp(-1.7), math.Log(25) + 1}
	for i := range want {
		if math.Abs(g[i]-want[i]) > 1e-10*math.Max(1, math.Abs(want[i])) {
			t.Errorf("coordinate %d: %.16g, want %.16g", i, g[i], want[i])
		}
	}
	if x[0] != 0.3 || x[1] != -1.7 || x[2] != 25 {
		t.Errorf("x modified: %v", x)
	}
}

// TestArenaGrowth checks that values, kept data and adjoints survive the
// arena being reallocated in the middle of an evaluation, and that a tape
// can go from small to large evaluations and back.
func TestArenaGrowth(t *testing.T) {
	tp := NewTape()
	data := tp.ConstVec([]float64{1, 2, 3})
	if err := tp.Keep(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 10, 100000, 10, 300000} {
		tp.Reset()
		x := tp.Var(0.5)
		first := tp.Mul(x, tp.Sum(data)) // recorded before the arena grows
		big := tp.Fill(x, VectorShape(n))
		y := tp.Add(first, tp.DotSelf(big)) // 3x + n x²
		if err := tp.Gradient(y); err != nil {
			t.Fatal(err)
		}
		if got, want := tp.Scalar(y), 3+0.25*float64(n); got != want {
			t.Errorf("n=%d: value %v, want %v", n, got, want)
		}
		if got, want := tp.Adj(x)[0], 6+float64(n); got != want {
			t.Errorf("n=%d: gradient %v, want %v", n, got, want)
		}
		if d := tp.Val(data); d[0] != 1 || d[1] != 2 || d[2] != 3 {
			t.Errorf("n=%d: kept data changed to %v", n, d)
		}
	}
}

func TestScratch(t *testing.T) {
	tp := NewTape()
	sizes := []int{10, 5000, 3, 4096, 1}
	run := func() {
		tp.Reset()
		var got [][]float64
		for k, n := range sizes {
			s := tp.Scratch(n)
			if len(s) != n {
				t.Fatalf("Scratch(%d) has length %d", n, len(s))
			}
			for i := range s {
				if s[i] != 0 {
					t.Fatalf("Scratch(%d) not zeroed", n)
				}
				s[i] = float64(k + 1)
			}
			tp.Fill(tp.Var(1), VectorShape(1000)) // grow the value arena meanwhile
			got = append(got, s)
		}
		for k, s := range got { // earlier slices still valid and distinct
			for _, v := range s {
				if v != float64(k+1) {
					t.Fatalf("scratch slice %d overwritten: %v", k, v)
				}
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(5, func() {
		tp.Reset()
		for _, n := range sizes {
			tp.Scratch(n)
		}
	}); n != 0 {
		t.Errorf("steady-state Scratch allocates %v times", n)
	}
	run()
}

// TestShapes checks the shapes produced by views and shape-changing ops.
func TestShapes(t *testing.T) {
	tp := NewTape()
	x := tp.VarVec(x6)
	m := tp.Reshape(x, MatrixShape(2, 3))
	cases := []struct {
		name string
		v    Value
		want Shape
	}{
		{"var vector", x, VectorShape(6)},
		{"reshape", m, MatrixShape(2, 3)},
		{"transpose vector", tp.Transpose(x), RowVectorShape(6)},
		{"transpose row vector", tp.Transpose(tp.Transpose(x)), VectorShape(6)},
		{"transpose matrix", tp.Transpose(m), MatrixShape(3, 2)},
		{"slice row vector", tp.Slice(tp.Transpose(x), 1, 2), RowVectorShape(2)},
		{"row", tp.Row(m, 1), RowVectorShape(3)},
		{"col", tp.Col(m, 2), VectorShape(2)},
		{"at", tp.At(m, 1, 1), ScalarShape()},
		{"matrix*vector", tp.MatMul(m, tp.Slice(x, 0, 3)), VectorShape(2)},
		{"row_vector*matrix", tp.MatMul(tp.Transpose(tp.Slice(x, 0, 2)), m), RowVectorShape(3)},
		{"row_vector*vector", tp.MatMul(tp.Transpose(x), x), ScalarShape()},
		{"vector*row_vector", tp.MatMul(x, tp.Transpose(x)), MatrixShape(6, 6)},
		{"scalar+matrix", tp.Add(tp.Index(x, 0), m), MatrixShape(2, 3)},
		{"unary matrix", tp.Exp(m), MatrixShape(2, 3)},
		{"gather", tp.Gather(m, []int{5, 0}), VectorShape(2)},
		{"fill", tp.Fill(tp.Index(x, 0), RowVectorShape(4)), RowVectorShape(4)},
	}
	for _, c := range cases {
		if got := c.v.Shape(); got != c.want {
			t.Errorf("%s: shape %v, want %v", c.name, got, c.want)
		}
		if c.v.Rows() != c.want.Rows || c.v.Cols() != c.want.Cols || c.v.Len() != c.want.Len() || c.v.Kind() != c.want.Kind {
			t.Errorf("%s: accessors disagree with shape %v", c.name, c.want)
		}
		if c.v.IsConst() || !c.v.IsValid() {
			t.Errorf("%s: IsConst %v, IsValid %v", c.name, c.v.IsConst(), c.v.IsValid())
		}
	}
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if (Value{}).IsValid() {
		t.Error("the zero Value is valid")
	}
	for _, c := range []struct {
		s    Shape
		want string
	}{
		{ScalarShape(), "real"}, {VectorShape(3), "vector[3]"},
		{RowVectorShape(2), "row_vector[2]"}, {MatrixShape(2, 3), "matrix[2,3]"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("Shape.String() = %q, want %q", got, c.want)
		}
	}
}

// TestUnaryScalarPath checks that the scalar fast paths of Unary and of
// its backward give bitwise what the elementwise loop gives, for every
// function, including a zero adjoint at a point where the derivative is
// infinite.
func TestUnaryScalarPath(t *testing.T) {
	for f := UnaryFunc(0); f < numUnary; f++ {
		for _, x := range []float64{0, 0.3, -0.7, 2.5, 1e-300} {
			if f == InvPhi && (x < 0 || x > 1) {
				continue // its callers check the domain (gonum panics outside it)
			}
			for _, w := range []float64{1.7, 0} {
				// Scalar: one node of length 1.
				ts := NewTape()
				xs := ts.Var(x)
				ys := ts.Unary(f, xs)
				if err := ts.Gradient(ts.Mul(ys, ts.Const(w))); err != nil {
					t.Fatal(err)
				}
				// The same element inside a vector of two.
				tv := NewTape()
				xv := tv.VarVec([]float64{x, 0.5})
				yv := tv.Unary(f, xv)
				if err := tv.Gradient(tv.Dot(yv, tv.ConstVec([]float64{w, 0}))); err != nil {
					t.Fatal(err)
				}
				y0, yv0 := ts.Scalar(ys), tv.Val(yv)[0]
				g0, gv0 := ts.Adj(xs)[0], tv.Adj(xv)[0]
				if !sameBits(y0, yv0) || !sameBits(g0, gv0) {
					t.Errorf("%v(%g), weight %g: scalar %v, %v; vector %v, %v", f, x, w, y0, g0, yv0, gv0)
				}
			}
		}
	}
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestBinaryScalar checks BinaryScalar against Binary: bitwise for two
// scalars (values and gradients), and Binary itself for other shapes.
func TestBinaryScalar(t *testing.T) {
	for f := BinaryFunc(0); f < numBinary; f++ {
		for _, v := range [][2]float64{{0.7, -1.3}, {2, 0.5}, {-0.25, 3}} {
			var res [2][3]float64
			for k, fast := range []bool{true, false} {
				tp := NewTape()
				a, b := tp.Var(v[0]), tp.Var(v[1])
				var y Value
				if fast {
					y = tp.BinaryScalar(f, a, b)
				} else {
					y = tp.Binary(f, a, b)
				}
				if err := tp.Gradient(tp.Mul(y, tp.Const(1.5))); err != nil {
					t.Fatal(err)
				}
				res[k] = [3]float64{tp.Scalar(y), tp.Adj(a)[0], tp.Adj(b)[0]}
			}
			for i := range res[0] {
				if !sameBits(res[0][i], res[1][i]) {
					t.Errorf("%v%v: BinaryScalar %v, Binary %v", f, v, res[0], res[1])
					break
				}
			}
		}
	}
	tp := NewTape()
	x := tp.VarVec([]float64{1, 2, 3})
	y := tp.BinaryScalar(Mul, x, tp.Const(2))
	if got := tp.Val(y); len(got) != 3 || got[2] != 6 {
		t.Errorf("BinaryScalar on a vector: %v, want [2 4 6]", got)
	}
	tp.BinaryScalar(Add, Value{}, tp.Const(1))
	if tp.Err() == nil {
		t.Error("BinaryScalar of an invalid value: no error")
	}
}

// TestUnaryScalar checks UnaryScalar against Unary: bitwise on scalars
// (value and derivative), Unary itself on a vector, and Unary's error on
// an invalid value.
func TestUnaryScalar(t *testing.T) {
	for f := UnaryFunc(0); f < numUnary; f++ {
		var res [2][2]float64
		for k, fast := range []bool{true, false} {
			tp := NewTape()
			x := tp.Var(0.3)
			var y Value
			if fast {
				y = tp.UnaryScalar(f, x)
			} else {
				y = tp.Unary(f, x)
			}
			if err := tp.Gradient(y); err != nil {
				t.Fatal(err)
			}
			res[k] = [2]float64{tp.Scalar(y), tp.Adj(x)[0]}
		}
		if !sameBits(res[0][0], res[1][0]) || !sameBits(res[0][1], res[1][1]) {
			t.Errorf("%v: UnaryScalar %v, Unary %v", f, res[0], res[1])
		}
	}
	tp := NewTape()
	x := tp.VarVec([]float64{1, 4, 9})
	if got := tp.Val(tp.UnaryScalar(Sqrt, x)); len(got) != 3 || got[2] != 3 {
		t.Errorf("UnaryScalar on a vector: %v, want [1 2 3]", got)
	}
	tp.UnaryScalar(Exp, Value{})
	if tp.Err() == nil {
		t.Error("UnaryScalar of an invalid value: no error")
	}
}

// TestElements checks Elements against Index, for variables and
// constants, and that a request beyond the value records Index's error.
func TestElements(t *testing.T) {
	tp := NewTape()
	for _, x := range []Value{tp.VarVec([]float64{1, 2, 3}), tp.NewConst(MatrixShape(2, 2), []float64{4, 5, 6, 7})} {
		dst := make([]Value, x.Len())
		tp.Elements(x, dst)
		for i, v := range dst {
			if w := tp.Index(x, i); v != w {
				t.Errorf("element %d of %v: %+v, Index gives %+v", i, x.Shape(), v, w)
			}
		}
	}
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
	tp.Elements(tp.VarVec([]float64{1}), make([]Value, 2))
	if tp.Err() == nil {
		t.Error("Elements beyond the value recorded no error")
	}
}
