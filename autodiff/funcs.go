package autodiff

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// UnaryFunc names an elementwise function of one real argument with a known
// derivative. Every UnaryFunc is applied by the same vectorized node (Unary):
// one node per call, whatever the length of its argument.
type UnaryFunc uint8

// The elementwise unary functions. Names follow Stan.
const (
	Neg           UnaryFunc = iota // -x
	Exp                            // e^x
	Exp2                           // 2^x
	Expm1                          // e^x - 1
	Log                            // ln x
	Log2                           // log₂ x
	Log10                          // log₁₀ x
	Log1p                          // ln(1+x)
	Log1m                          // ln(1-x)
	Log1pExp                       // ln(1+e^x) (softplus)
	Log1mExp                       // ln(1-e^x), x < 0
	Sqrt                           // √x
	Cbrt                           // ∛x
	Square                         // x²
	Inv                            // 1/x
	InvSqrt                        // 1/√x
	InvSquare                      // 1/x²
	Logit                          // ln(x/(1-x))
	InvLogit                       // 1/(1+e^-x)
	LogInvLogit                    // ln inv_logit(x)
	Log1mInvLogit                  // ln(1 - inv_logit(x))
	Lgamma                         // ln |Γ(x)|
	Digamma                        // ψ(x)
	Trigamma                       // ψ₁(x)
	Tgamma                         // Γ(x)
	Sin                            // sin x
	Cos                            // cos x
	Tan                            // tan x
	Asin                           // arcsin x
	Acos                           // arccos x
	Atan                           // arctan x
	Sinh                           // sinh x
	Cosh                           // cosh x
	Tanh                           // tanh x
	Asinh                          // arsinh x
	Acosh                          // arcosh x
	Atanh                          // artanh x
	Erf                            // erf x
	Erfc                           // erfc x
	Phi                            // standard normal cdf Φ(x)
	InvPhi                         // Φ⁻¹(p)
	PhiApprox                      // inv_logit(0.07056 x³ + 1.5976 x)
	Abs                            // |x| (derivative 0 at 0)
	Floor                          // ⌊x⌋ (derivative 0)
	Ceil                           // ⌈x⌉ (derivative 0)
	Round                          // round half away from zero (derivative 0)
	Trunc                          // integer part (derivative 0)
	Step                           // 0 if x < 0 else 1 (derivative 0)
	numUnary
)

// unaryDef is an entry of the unary function table: f and its derivative,
// which receives both x and y = f(x) so that, for example, exp' reuses y.
type unaryDef struct {
	name string
	f    func(x float64) float64
	df   func(x, y float64) float64
}

const (
	ln2        = math.Ln2
	ln10       = math.Ln10
	sqrt2      = math.Sqrt2
	invSqrt2   = 1 / math.Sqrt2
	invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	twoSqrtPi  = 1.1283791670955126 // 2/√π
)

func zero(x, y float64) float64 { return 0 }

// unaryTable is read-only after initialization.
var unaryTable = [numUnary]unaryDef{
	Neg:           {"minus", func(x float64) float64 { return -x }, func(x, y float64) float64 { return -1 }},
	Exp:           {"exp", math.Exp, func(x, y float64) float64 { return y }},
	Exp2:          {"exp2", math.Exp2, func(x, y float64) float64 { return y * ln2 }},
	Expm1:         {"expm1", math.Expm1, func(x, y float64) float64 { return y + 1 }},
	Log:           {"log", math.Log, func(x, y float64) float64 { return 1 / x }},
	Log2:          {"log2", math.Log2, func(x, y float64) float64 { return 1 / (x * ln2) }},
	Log10:         {"log10", math.Log10, func(x, y float64) float64 { return 1 / (x * ln10) }},
	Log1p:         {"log1p", math.Log1p, func(x, y float64) float64 { return 1 / (1 + x) }},
	Log1m:         {"log1m", log1m, func(x, y float64) float64 { return -1 / (1 - x) }},
	Log1pExp:      {"log1p_exp", log1pExp, func(x, y float64) float64 { return invLogit(x) }},
	Log1mExp:      {"log1m_exp", log1mExp, func(x, y float64) float64 { return -1 / math.Expm1(-x) }},
	Sqrt:          {"sqrt", math.Sqrt, func(x, y float64) float64 { return 0.5 / y }},
	Cbrt:          {"cbrt", math.Cbrt, func(x, y float64) float64 { return 1 / (3 * y * y) }},
	Square:        {"square", func(x float64) float64 { return x * x }, func(x, y float64) float64 { return 2 * x }},
	Inv:           {"inv", func(x float64) float64 { return 1 / x }, func(x, y float64) float64 { return -y * y }},
	InvSqrt:       {"inv_sqrt", func(x float64) float64 { return 1 / math.Sqrt(x) }, func(x, y float64) float64 { return -0.5 * y / x }},
	InvSquare:     {"inv_square", func(x float64) float64 { return 1 / (x * x) }, func(x, y float64) float64 { return -2 * y / x }},
	Logit:         {"logit", logit, func(x, y float64) float64 { return 1 / (x * (1 - x)) }},
	InvLogit:      {"inv_logit", invLogit, func(x, y float64) float64 { return y * (1 - y) }},
	LogInvLogit:   {"log_inv_logit", func(x float64) float64 { return -log1pExp(-x) }, func(x, y float64) float64 { return invLogit(-x) }},
	Log1mInvLogit: {"log1m_inv_logit", func(x float64) float64 { return -log1pExp(x) }, func(x, y float64) float64 { return -invLogit(x) }},
	Lgamma:        {"lgamma", lgamma, func(x, y float64) float64 { return mathext.Digamma(x) }},
	Digamma:       {"digamma", mathext.Digamma, func(x, y float64) float64 { return trigamma(x) }},
	Trigamma:      {"trigamma", trigamma, func(x, y float64) float64 { return tetragamma(x) }},
	Tgamma:        {"tgamma", math.Gamma, func(x, y float64) float64 { return y * mathext.Digamma(x) }},
	Sin:           {"sin", math.Sin, func(x, y float64) float64 { return math.Cos(x) }},
	Cos:           {"cos", math.Cos, func(x, y float64) float64 { return -math.Sin(x) }},
	Tan:           {"tan", math.Tan, func(x, y float64) float64 { return 1 + y*y }},
	Asin:          {"asin", math.Asin, func(x, y float64) float64 { return 1 / math.Sqrt(1-x*x) }},
	Acos:          {"acos", math.Acos, func(x, y float64) float64 { return -1 / math.Sqrt(1-x*x) }},
	Atan:          {"atan", math.Atan, func(x, y float64) float64 { return 1 / (1 + x*x) }},
	Sinh:          {"sinh", math.Sinh, func(x, y float64) float64 { return math.Cosh(x) }},
	Cosh:          {"cosh", math.Cosh, func(x, y float64) float64 { return math.Sinh(x) }},
	Tanh:          {"tanh", math.Tanh, func(x, y float64) float64 { return 1 - y*y }},
	Asinh:         {"asinh", math.Asinh, func(x, y float64) float64 { return 1 / math.Sqrt(x*x+1) }},
	Acosh:         {"acosh", math.Acosh, func(x, y float64) float64 { return 1 / math.Sqrt(x*x-1) }},
	Atanh:         {"atanh", math.Atanh, func(x, y float64) float64 { return 1 / (1 - x*x) }},
	Erf:           {"erf", math.Erf, func(x, y float64) float64 { return twoSqrtPi * math.Exp(-x*x) }},
	Erfc:          {"erfc", math.Erfc, func(x, y float64) float64 { return -twoSqrtPi * math.Exp(-x*x) }},
	Phi:           {"Phi", stdNormalCDF, func(x, y float64) float64 { return invSqrt2Pi * math.Exp(-0.5*x*x) }},
	InvPhi:        {"inv_Phi", mathext.NormalQuantile, func(x, y float64) float64 { return 1 / (invSqrt2Pi * math.Exp(-0.5*y*y)) }},
	PhiApprox:     {"Phi_approx", phiApprox, func(x, y float64) float64 { return y * (1 - y) * (3*0.07056*x*x + 1.5976) }},
	Abs:           {"abs", math.Abs, func(x, y float64) float64 { return sign(x) }},
	Floor:         {"floor", math.Floor, zero},
	Ceil:          {"ceil", math.Ceil, zero},
	Round:         {"round", math.Round, zero},
	Trunc:         {"trunc", math.Trunc, zero},
	Step:          {"step", step, zero},
}

// String returns the Stan name of f.
func (f UnaryFunc) String() string {
	if f < numUnary {
		return unaryTable[f].name
	}
	return "UnaryFunc(?)"
}

// Eval returns f(x) on plain floats.
func (f UnaryFunc) Eval(x float64) float64 { return unaryTable[f].f(x) }

// Deriv returns f'(x) on plain floats.
func (f UnaryFunc) Deriv(x float64) float64 {
	d := &unaryTable[f]
	return d.df(x, d.f(x))
}

// UnaryByName returns the unary function with the given Stan name ("exp",
// "inv_logit", "Phi", ...); ok is false if there is none.
func UnaryByName(name string) (f UnaryFunc, ok bool) {
	for i := range unaryTable {
		if unaryTable[i].name == name {
			return UnaryFunc(i), true
		}
	}
	return 0, false
}

// BinaryFunc names an elementwise function of two real arguments with known
// partial derivatives, applied by one broadcasting node (Binary).
type BinaryFunc uint8

// The elementwise binary functions. Names follow Stan.
const (
	Add        BinaryFunc = iota // a + b
	Sub                          // a - b
	Mul                          // a · b
	Div                          // a / b
	Pow                          // a^b
	Fmin                         // min(a, b)
	Fmax                         // max(a, b)
	Fdim                         // max(a - b, 0)
	Hypot                        // √(a² + b²)
	Atan2                        // atan2(a, b)
	LogSumExp2                   // ln(e^a + e^b)
	LogDiffExp                   // ln(e^a - e^b), a > b
	LMultiply                    // a ln b (0 when a = b = 0)
	Lbeta                        // ln B(a, b)
	Lchoose                      // ln C(a, b) for reals
	numBinary
)

// binaryDef is an entry of the binary function table: f and its partial
// derivatives, which receive y = f(a, b).
type binaryDef struct {
	name string
	f    func(a, b float64) float64
	d    func(a, b, y float64) (da, db float64)
}

var binaryTable = [numBinary]binaryDef{
	Add: {"add", func(a, b float64) float64 { return a + b }, func(a, b, y float64) (float64, float64) { return 1, 1 }},
	Sub: {"subtract", func(a, b float64) float64 { return a - b }, func(a, b, y float64) (float64, float64) { return 1, -1 }},
	Mul: {"multiply", func(a, b float64) float64 { return a * b }, func(a, b, y float64) (float64, float64) { return b, a }},
	Div: {"divide", func(a, b float64) float64 { return a / b }, func(a, b, y float64) (float64, float64) { return 1 / b, -y / b }},
	Pow: {"pow", math.Pow, powPartials},
	Fmin: {"fmin", math.Min, func(a, b, y float64) (float64, float64) {
		if a <= b {
			return 1, 0
		}
		return 0, 1
	}},
	Fmax: {"fmax", math.Max, func(a, b, y float64) (float64, float64) {
		if a >= b {
			return 1, 0
		}
		return 0, 1
	}},
	Fdim: {"fdim", math.Dim, func(a, b, y float64) (float64, float64) {
		if a > b {
			return 1, -1
		}
		return 0, 0
	}},
	Hypot: {"hypot", math.Hypot, func(a, b, y float64) (float64, float64) { return a / y, b / y }},
	Atan2: {"atan2", math.Atan2, func(a, b, y float64) (float64, float64) {
		r := a*a + b*b
		return b / r, -a / r
	}},
	LogSumExp2: {"log_sum_exp", logSumExp2, func(a, b, y float64) (float64, float64) {
		return math.Exp(a - y), math.Exp(b - y)
	}},
	LogDiffExp: {"log_diff_exp", logDiffExp, func(a, b, y float64) (float64, float64) {
		// y = a + log1m(exp(b-a)); ∂a = 1/(1-e^{b-a}), ∂b = -1/(e^{a-b}-1).
		return -1 / math.Expm1(b-a), -1 / math.Expm1(a-b)
	}},
	LMultiply: {"lmultiply", lmultiply, func(a, b, y float64) (float64, float64) {
		if a == 0 && b == 0 {
			return math.Inf(-1), 0
		}
		return math.Log(b), a / b
	}},
	Lbeta: {"lbeta", mathext.Lbeta, func(a, b, y float64) (float64, float64) {
		ab := mathext.Digamma(a + b)
		return mathext.Digamma(a) - ab, mathext.Digamma(b) - ab
	}},
	Lchoose: {"lchoose", lchoose, func(a, b, y float64) (float64, float64) {
		pa := mathext.Digamma(a + 1)
		pab := mathext.Digamma(a - b + 1)
		return pa - pab, pab - mathext.Digamma(b+1)
	}},
}

// String returns the Stan name of f.
func (f BinaryFunc) String() string {
	if f < numBinary {
		return binaryTable[f].name
	}
	return "BinaryFunc(?)"
}

// Eval returns f(a, b) on plain floats.
func (f BinaryFunc) Eval(a, b float64) float64 { return binaryTable[f].f(a, b) }

// Partials returns ∂f/∂a and ∂f/∂b at (a, b) on plain floats.
func (f BinaryFunc) Partials(a, b float64) (da, db float64) {
	d := &binaryTable[f]
	return d.d(a, b, d.f(a, b))
}

// BinaryByName returns the binary function with the given Stan name ("pow",
// "fmax", "log_sum_exp", ...); ok is false if there is none.
func BinaryByName(name string) (f BinaryFunc, ok bool) {
	for i := range binaryTable {
		if binaryTable[i].name == name {
			return BinaryFunc(i), true
		}
	}
	return 0, false
}

func powPartials(a, b, y float64) (float64, float64) {
	var da, db float64
	if b == 0 {
		da = 0
	} else {
		da = b * math.Pow(a, b-1)
	}
	if y != 0 && a > 0 {
		db = y * math.Log(a)
	} else if a == 0 && b > 0 {
		db = 0
	} else if y != 0 {
		db = math.NaN() // negative base: a^b is not differentiable in b
	}
	return da, db
}

func log1m(x float64) float64 { return math.Log1p(-x) }

func log1pExp(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

func log1mExp(x float64) float64 {
	if x > -ln2 {
		return math.Log(-math.Expm1(x))
	}
	return math.Log1p(-math.Exp(x))
}

func logit(x float64) float64 { return math.Log(x / (1 - x)) }

func invLogit(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func lgamma(x float64) float64 {
	y, _ := math.Lgamma(x)
	return y
}

func stdNormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x*invSqrt2) }

func phiApprox(x float64) float64 { return invLogit(0.07056*x*x*x + 1.5976*x) }

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func step(x float64) float64 {
	if x < 0 {
		return 0
	}
	return 1
}

func logSumExp2(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a > b {
		return a + math.Log1p(math.Exp(b-a))
	}
	return b + math.Log1p(math.Exp(a-b))
}

func logDiffExp(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	return a + log1mExp(b-a)
}

func lmultiply(a, b float64) float64 {
	if a == 0 && b == 0 {
		return 0
	}
	return a * math.Log(b)
}

func lchoose(a, b float64) float64 {
	return lgamma(a+1) - lgamma(b+1) - lgamma(a-b+1)
}

// trigamma returns ψ₁(x), the derivative of the digamma function, by the
// reflection formula for x ≤ 0, the recurrence ψ₁(x) = ψ₁(x+1) + 1/x² up
// to x ≥ 10 and the asymptotic series there.
func trigamma(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, -1) {
		return math.NaN()
	}
	if x <= 0 {
		if x == math.Floor(x) {
			return math.Inf(1)
		}
		s := math.Sin(math.Pi * x)
		return -trigamma(1-x) + math.Pi*math.Pi/(s*s)
	}
	var acc float64
	for x < 10 {
		acc += 1 / (x * x)
		x++
	}
	z := 1 / (x * x)
	// 1/x + 1/(2x²) + Σ B_{2k}/x^{2k+1}
	series := 1/x + z/2 + z/x*(1.0/6+z*(-1.0/30+z*(1.0/42+z*(-1.0/30+z*(5.0/66+z*(-691.0/2730+z*(7.0/6)))))))
	return acc + series
}

// tetragamma returns ψ₂(x), the derivative of trigamma, by the recurrence
// ψ₂(x) = ψ₂(x+1) - 2/x³ and the asymptotic series; for x ≤ 0 by reflection.
func tetragamma(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, -1) {
		return math.NaN()
	}
	if x <= 0 {
		if x == math.Floor(x) {
			return math.NaN()
		}
		// ψ₁(1-x) + ψ₁(x) = π²/sin²(πx); differentiate: -ψ₂(1-x) + ψ₂(x) = -2π³ cos(πx)/sin³(πx).
		s, c := math.Sincos(math.Pi * x)
		return tetragamma(1-x) - 2*math.Pi*math.Pi*math.Pi*c/(s*s*s)
	}
	var acc float64
	for x < 10 {
		acc -= 2 / (x * x * x)
		x++
	}
	z := 1 / (x * x)
	// -1/x² - 1/x³ - Σ (2k+1) B_{2k}/x^{2k+2}
	series := -z - z/x - z*z*(0.5+z*(-1.0/6+z*(1.0/6+z*(-3.0/10+z*(5.0/6+z*(-691.0/210+z*(35.0/2)))))))
	return acc + series
}
