package autodiff

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

var (
	anyReal  = []float64{-1.3, -0.4, 0.3, 0.9, 2.2}
	positive = []float64{0.3, 0.9, 2.2, 5.5}
	unitOpen = []float64{0.1, 0.45, 0.8}
	signed1  = []float64{-0.7, 0.2, 0.6}
	gammaArg = []float64{-1.4, -0.6, 0.4, 1.7, 3.2, 12.5}
	nonInt   = []float64{-1.3, 0.4, 2.7}
)

// unaryDomain gives points inside each function's domain, away from kinks.
var unaryDomain = map[UnaryFunc][]float64{
	Neg: anyReal, Exp: anyReal, Exp2: anyReal, Expm1: anyReal,
	Log: positive, Log2: positive, Log10: positive, Log1p: {-0.5, 0.3, 2.2},
	Log1m: {-2, 0.2, 0.7}, Log1pExp: {-40, -1.3, 0.4, 2.2, 40}, Log1mExp: {-3, -0.5, -0.05},
	Sqrt: positive, Cbrt: {-2.2, -0.3, 0.4, 5.5}, Square: anyReal, Inv: {-1.3, 0.3, 2.2},
	InvSqrt: positive, InvSquare: {-1.3, 0.3, 2.2}, Logit: unitOpen,
	InvLogit: {-30, -1.3, 0.4, 2.2, 30}, LogInvLogit: {-30, -1.3, 0.4, 2.2, 30}, Log1mInvLogit: {-30, -1.3, 0.4, 2.2, 30},
	Lgamma: gammaArg, Digamma: gammaArg, Trigamma: gammaArg, Tgamma: {-1.4, -0.6, 0.4, 1.7, 3.2, 8.5},
	Sin: anyReal, Cos: anyReal, Tan: {-1.0, 0.3, 1.2}, Asin: signed1, Acos: signed1, Atan: anyReal,
	Sinh: anyReal, Cosh: anyReal, Tanh: anyReal, Asinh: anyReal, Acosh: {1.3, 2.5}, Atanh: signed1,
	Erf: anyReal, Erfc: anyReal, Phi: {-3.1, -0.4, 0.3, 2.2}, InvPhi: {0.01, 0.3, 0.5, 0.93},
	PhiApprox: anyReal, Abs: {-1.3, 0.4, 2.2},
	Floor: nonInt, Ceil: nonInt, Round: nonInt, Trunc: nonInt, Step: nonInt,
}

// TestUnaryGradients checks the derivative of every unary function against
// finite differences, through one vectorized node per function.
func TestUnaryGradients(t *testing.T) {
	for f := UnaryFunc(0); f < numUnary; f++ {
		xs, ok := unaryDomain[f]
		if !ok {
			t.Errorf("%v: no test domain", f)
			continue
		}
		t.Run(f.String(), func(t *testing.T) {
			// A weighted sum so that each coordinate's gradient is w_i f'(x_i).
			w := make([]float64, len(xs))
			for i := range w {
				w[i] = 1 + 0.25*float64(i)
			}
			err := CheckGradient(func(tp *Tape, x Value) Value {
				return tp.Dot(tp.Unary(f, x), tp.ConstVec(w))
			}, xs, 1e-7)
			if err != nil {
				t.Error(err)
			}
			// Scalar path and the Deriv method agree with the vector node.
			for _, x := range xs {
				tp := NewTape()
				v := tp.Var(x)
				y := tp.Unary(f, v)
				if err := tp.Gradient(y); err != nil {
					t.Fatal(err)
				}
				if got, want := tp.Adj(v)[0], f.Deriv(x); got != want {
					t.Errorf("%v'(%v): scalar node %v, Deriv %v", f, x, got, want)
				}
				if got, want := tp.Scalar(y), f.Eval(x); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Errorf("%v(%v): node %v, Eval %v", f, x, got, want)
				}
			}
		})
	}
}

// TestUnaryValues checks the functions not taken directly from the math
// package against independent formulas.
func TestUnaryValues(t *testing.T) {
	normal := distuv.UnitNormal
	ref := map[UnaryFunc]func(x float64) float64{
		InvLogit:      func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
		LogInvLogit:   func(x float64) float64 { return math.Log(1 / (1 + math.Exp(-x))) },
		Log1mInvLogit: func(x float64) float64 { return math.Log(1 - 1/(1+math.Exp(-x))) },
		Log1pExp:      func(x float64) float64 { return math.Log(1 + math.Exp(x)) },
		Log1mExp:      func(x float64) float64 { return math.Log(1 - math.Exp(x)) },
		Logit:         func(x float64) float64 { return math.Log(x) - math.Log(1-x) },
		Log1m:         func(x float64) float64 { return math.Log(1 - x) },
		Phi:           normal.CDF,
		InvPhi:        normal.Quantile,
		Lgamma:        func(x float64) float64 { return math.Log(math.Abs(math.Gamma(x))) },
		Trigamma: func(x float64) float64 {
			if x > 0 {
				return mathext.Zeta(2, x)
			}
			// Reflection, with ψ₁(1-x) from the Hurwitz zeta function.
			s := math.Sin(math.Pi * x)
			return math.Pi*math.Pi/(s*s) - mathext.Zeta(2, 1-x)
		},
		InvSqrt:   func(x float64) float64 { return math.Pow(x, -0.5) },
		InvSquare: func(x float64) float64 { return math.Pow(x, -2) },
		Step:      func(x float64) float64 { return math.Max(0, math.Copysign(1, x)) },
	}
	for f, r := range ref {
		for _, x := range unaryDomain[f] {
			if math.Abs(x) > 20 && (f == Log1mInvLogit || f == LogInvLogit || f == Log1pExp) {
				continue // the naive reference formula loses all precision there
			}
			got, want := f.Eval(x), r(x)
			if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("%v(%v) = %.16g, want %.16g", f, x, got, want)
			}
		}
	}
	// Stable forms in the tails, against their asymptotic values.
	tails := []struct {
		f    UnaryFunc
		x    float64
		want float64
	}{
		{Log1pExp, 40, 40 + math.Exp(-40)},
		{Log1pExp, -40, math.Exp(-40)},
		{LogInvLogit, -40, -40 - math.Exp(-40)},
		{Log1mInvLogit, 40, -40 - math.Exp(-40)},
		{InvLogit, -800, 0},
		{Log1mExp, -1e-10, math.Log(1e-10) - 5e-11},
	}
	for _, c := range tails {
		if got := c.f.Eval(c.x); math.Abs(got-c.want) > 1e-12*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%v(%v) = %.16g, want %.16g", c.f, c.x, got, c.want)
		}
	}
	// Phi_approx is within 2e-4 of Phi (Bowling et al. 2009 report 1.4e-4).
	for x := -4.0; x <= 4; x += 0.25 {
		if d := math.Abs(PhiApprox.Eval(x) - normal.CDF(x)); d > 2e-4 {
			t.Errorf("Phi_approx(%v) off Phi by %v", x, d)
		}
	}
	// ψ₁ at known points.
	for _, c := range []struct{ x, want float64 }{
		{1, math.Pi * math.Pi / 6},
		{0.5, math.Pi * math.Pi / 2},
	} {
		if got := trigamma(c.x); math.Abs(got-c.want) > 1e-13 {
			t.Errorf("trigamma(%v) = %.16g, want %.16g", c.x, got, c.want)
		}
	}
	// ψ₂(1) = -2ζ(3).
	if got, want := tetragamma(1), -2*1.2020569031595942; math.Abs(got-want) > 1e-13 {
		t.Errorf("tetragamma(1) = %.16g, want %.16g", got, want)
	}
}

func TestUnaryByName(t *testing.T) {
	for f := UnaryFunc(0); f < numUnary; f++ {
		g, ok := UnaryByName(f.String())
		if !ok || g != f {
			t.Errorf("UnaryByName(%q) = %v, %v", f.String(), g, ok)
		}
	}
	for f := BinaryFunc(0); f < numBinary; f++ {
		g, ok := BinaryByName(f.String())
		if !ok || g != f {
			t.Errorf("BinaryByName(%q) = %v, %v", f.String(), g, ok)
		}
	}
	if _, ok := UnaryByName("no_such_function"); ok {
		t.Error("UnaryByName found a function that does not exist")
	}
}

// binaryDomain gives pairs (a, b) inside each function's domain.
var binaryDomain = map[BinaryFunc][2][]float64{
	Add:        {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Sub:        {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Mul:        {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Div:        {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Pow:        {{0.3, 1.7, 2.2}, {0.7, -2.1, 3}},
	Fmin:       {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Fmax:       {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Fdim:       {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Hypot:      {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	Atan2:      {{-1.3, 0.4, 2.2}, {0.7, -2.1, 0.3}},
	LogSumExp2: {{-1.3, 0.4, 30}, {0.7, -2.1, 0.3}},
	LogDiffExp: {{0.8, 0.9, 30}, {0.7, -2.1, 0.3}},
	LMultiply:  {{-1.3, 0.4, 2.2}, {0.7, 2.1, 0.3}},
	Lbeta:      {{0.3, 1.7, 12.2}, {0.7, 2.1, 0.3}},
	Lchoose:    {{5.3, 1.7, 12.2}, {0.7, 1.1, 3.3}},
}

// TestBinaryGradients checks both partials of every binary function, for
// vector⊕vector, scalar⊕vector, vector⊕scalar and scalar⊕scalar, with
// either operand constant.
func TestBinaryGradients(t *testing.T) {
	for f := BinaryFunc(0); f < numBinary; f++ {
		dom, ok := binaryDomain[f]
		if !ok {
			t.Errorf("%v: no test domain", f)
			continue
		}
		a, b := dom[0], dom[1]
		n := len(a)
		x0 := append(append([]float64(nil), a...), b...)
		w := []float64{1, -0.5, 0.75}
		cases := []struct {
			name string
			f    func(tp *Tape, x Value) Value
		}{
			{"vv", func(tp *Tape, x Value) Value {
				return tp.Dot(tp.Binary(f, tp.Slice(x, 0, n), tp.Slice(x, n, n)), tp.ConstVec(w))
			}},
			{"sv", func(tp *Tape, x Value) Value {
				return tp.Dot(tp.Binary(f, tp.Index(x, 1), tp.Slice(x, n, n)), tp.ConstVec(w))
			}},
			{"vs", func(tp *Tape, x Value) Value {
				return tp.Dot(tp.Binary(f, tp.Slice(x, 0, n), tp.Index(x, n+2)), tp.ConstVec(w))
			}},
			{"ss", func(tp *Tape, x Value) Value {
				return tp.Binary(f, tp.Index(x, 2), tp.Index(x, n+1))
			}},
			{"cv", func(tp *Tape, x Value) Value {
				return tp.Dot(tp.Binary(f, tp.ConstVec(a), tp.Slice(x, n, n)), tp.ConstVec(w))
			}},
			{"vc", func(tp *Tape, x Value) Value {
				return tp.Dot(tp.Binary(f, tp.Slice(x, 0, n), tp.ConstVec(b)), tp.ConstVec(w))
			}},
			{"cs", func(tp *Tape, x Value) Value {
				return tp.Binary(f, tp.Const(a[0]), tp.Index(x, n))
			}},
			{"sc", func(tp *Tape, x Value) Value {
				return tp.Binary(f, tp.Index(x, 0), tp.Const(b[0]))
			}},
		}
		for _, c := range cases {
			t.Run(f.String()+"/"+c.name, func(t *testing.T) {
				if err := CheckGradient(c.f, x0, 1e-7); err != nil {
					t.Error(err)
				}
			})
		}
		// Values against Eval, element by element.
		tp := NewTape()
		y := tp.Val(tp.Binary(f, tp.ConstVec(a), tp.ConstVec(b)))
		for i := range a {
			if want := f.Eval(a[i], b[i]); y[i] != want {
				t.Errorf("%v(%v, %v) = %v, Eval %v", f, a[i], b[i], y[i], want)
			}
		}
	}
}

// TestBinaryValues checks the non-arithmetic binary functions against
// direct formulas.
func TestBinaryValues(t *testing.T) {
	ref := map[BinaryFunc]func(a, b float64) float64{
		LogSumExp2: func(a, b float64) float64 { return math.Log(math.Exp(a) + math.Exp(b)) },
		LogDiffExp: func(a, b float64) float64 { return math.Log(math.Exp(a) - math.Exp(b)) },
		LMultiply:  func(a, b float64) float64 { return a * math.Log(b) },
		Lbeta: func(a, b float64) float64 {
			return math.Log(math.Gamma(a) * math.Gamma(b) / math.Gamma(a+b))
		},
		Lchoose: func(a, b float64) float64 {
			return math.Log(math.Gamma(a+1) / (math.Gamma(b+1) * math.Gamma(a-b+1)))
		},
		Fdim: func(a, b float64) float64 { return math.Max(a-b, 0) },
	}
	for f, r := range ref {
		dom := binaryDomain[f]
		for i := range dom[0] {
			a, b := dom[0][i], dom[1][i]
			got, want := f.Eval(a, b), r(a, b)
			if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("%v(%v, %v) = %.16g, want %.16g", f, a, b, got, want)
			}
		}
	}
	if got := LMultiply.Eval(0, 0); got != 0 {
		t.Errorf("lmultiply(0, 0) = %v, want 0", got)
	}
	if got := LogSumExp2.Eval(math.Inf(-1), 2); got != 2 {
		t.Errorf("log_sum_exp(-inf, 2) = %v, want 2", got)
	}
	if got := Lchoose.Eval(10, 3); math.Abs(got-math.Log(120)) > 1e-12 {
		t.Errorf("lchoose(10, 3) = %v, want log 120", got)
	}
}

// TestBinaryPartialsMethod checks BinaryFunc.Partials against central
// differences of Eval, and pow's special cases.
func TestBinaryPartialsMethod(t *testing.T) {
	for f := BinaryFunc(0); f < numBinary; f++ {
		dom := binaryDomain[f]
		for i := range dom[0] {
			x := []float64{dom[0][i], dom[1][i]}
			want := make([]float64, 2)
			NumericGradient(func(x []float64) float64 { return f.Eval(x[0], x[1]) }, x, want)
			da, db := f.Partials(x[0], x[1])
			if math.Abs(da-want[0]) > 1e-7*math.Max(1, math.Abs(want[0])) ||
				math.Abs(db-want[1]) > 1e-7*math.Max(1, math.Abs(want[1])) {
				t.Errorf("%v.Partials(%v, %v) = (%v, %v), numeric (%v, %v)", f, x[0], x[1], da, db, want[0], want[1])
			}
		}
	}
	pow := []struct {
		a, b, da, db float64
	}{
		{0, 2, 0, 0},            // 2·0¹; 0² is flat in b at a = 0
		{3, 0, 0, math.Log(3)},  // a⁰ is flat in a
		{-2, 3, 12, math.NaN()}, // no real derivative in b for a negative base
		{2, 0.5, 0.5 / math.Sqrt2, math.Sqrt2 * math.Ln2},
	}
	for _, c := range pow {
		da, db := Pow.Partials(c.a, c.b)
		if da != c.da || !(db == c.db || math.IsNaN(db) && math.IsNaN(c.db)) {
			if math.Abs(da-c.da) > 1e-15 || math.Abs(db-c.db) > 1e-15 {
				t.Errorf("pow partials at (%v, %v) = (%v, %v), want (%v, %v)", c.a, c.b, da, db, c.da, c.db)
			}
		}
	}
	e := &GradientError{Coord: 3, Analytic: 1, Numeric: 2, Err: 0.5, Tol: 1e-6}
	if got := e.Error(); got != "autodiff: gradient mismatch at coordinate 3: analytic 1, numeric 2, error 0.5 > tolerance 1e-06" {
		t.Errorf("GradientError.Error() = %q", got)
	}
}
