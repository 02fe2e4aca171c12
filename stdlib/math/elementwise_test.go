package mathlib

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// unaryRef holds an independent reference for each elementwise function of
// one argument and three points of its domain away from kinks.
var unaryRef = map[string]struct {
	f  func(float64) float64
	xs [3]float64
}{
	"sqrt":            {math.Sqrt, [3]float64{0.3, 2.5, 7}},
	"square":          {func(x float64) float64 { return x * x }, [3]float64{-1.3, 0.4, 2}},
	"exp":             {math.Exp, [3]float64{-1.3, 0.4, 2}},
	"log":             {math.Log, [3]float64{0.3, 2.5, 7}},
	"log1p":           {func(x float64) float64 { return math.Log(1 + x) }, [3]float64{-0.5, 0.4, 3}},
	"expm1":           {func(x float64) float64 { return math.Exp(x) - 1 }, [3]float64{-1.3, 0.4, 2}},
	"log1m":           {func(x float64) float64 { return math.Log(1 - x) }, [3]float64{-1.5, 0.4, 0.9}},
	"inv":             {func(x float64) float64 { return 1 / x }, [3]float64{-1.3, 0.4, 2}},
	"inv_sqrt":        {func(x float64) float64 { return 1 / math.Sqrt(x) }, [3]float64{0.3, 2.5, 7}},
	"inv_square":      {func(x float64) float64 { return 1 / (x * x) }, [3]float64{-1.3, 0.4, 2}},
	"inv_logit":       {func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, [3]float64{-1.3, 0.4, 2}},
	"logit":           {func(x float64) float64 { return math.Log(x / (1 - x)) }, [3]float64{0.1, 0.45, 0.8}},
	"log_inv_logit":   {func(x float64) float64 { return math.Log(1 / (1 + math.Exp(-x))) }, [3]float64{-1.3, 0.4, 2}},
	"log1m_inv_logit": {func(x float64) float64 { return math.Log(1 - 1/(1+math.Exp(-x))) }, [3]float64{-1.3, 0.4, 2}},
	"lgamma":          {func(x float64) float64 { v, _ := math.Lgamma(x); return v }, [3]float64{0.3, 2.5, 7}},
	"tgamma":          {math.Gamma, [3]float64{0.3, 2.5, 4.2}},
	"digamma":         {mathext.Digamma, [3]float64{0.3, 2.5, 7}},
	"floor":           {math.Floor, [3]float64{-1.3, 0.4, 2.2}},
	"ceil":            {math.Ceil, [3]float64{-1.3, 0.4, 2.2}},
	"round":           {func(x float64) float64 { return math.Copysign(math.Floor(math.Abs(x)+0.5), x) }, [3]float64{-1.3, 0.6, 2.2}},
	"trunc":           {math.Trunc, [3]float64{-1.3, 0.4, 2.2}},
	"sin":             {math.Sin, [3]float64{-1.3, 0.4, 2}},
	"cos":             {math.Cos, [3]float64{-1.3, 0.4, 2}},
	"tan":             {math.Tan, [3]float64{-1.3, 0.4, 1}},
	"asin":            {math.Asin, [3]float64{-0.7, 0.2, 0.5}},
	"acos":            {math.Acos, [3]float64{-0.7, 0.2, 0.5}},
	"atan":            {math.Atan, [3]float64{-1.3, 0.4, 2}},
	"sinh":            {math.Sinh, [3]float64{-1.3, 0.4, 2}},
	"cosh":            {math.Cosh, [3]float64{-1.3, 0.4, 2}},
	"tanh":            {math.Tanh, [3]float64{-1.3, 0.4, 2}},
	"asinh":           {func(x float64) float64 { return math.Log(x + math.Sqrt(x*x+1)) }, [3]float64{-1.3, 0.4, 2}},
	"acosh":           {func(x float64) float64 { return math.Log(x + math.Sqrt(x*x-1)) }, [3]float64{1.3, 2.5, 7}},
	"atanh":           {func(x float64) float64 { return 0.5 * math.Log((1+x)/(1-x)) }, [3]float64{-0.7, 0.2, 0.5}},
	"erf":             {math.Erf, [3]float64{-1.3, 0.4, 2}},
	"erfc":            {math.Erfc, [3]float64{-1.3, 0.4, 2}},
	"Phi":             {distuv.UnitNormal.CDF, [3]float64{-1.3, 0.4, 2}},
	"Phi_approx":      {func(x float64) float64 { return 1 / (1 + math.Exp(-(0.07056*x*x*x + 1.5976*x))) }, [3]float64{-1.3, 0.4, 2}},
	"inv_Phi":         {invPhiRef, [3]float64{0.1, 0.45, 0.8}},
	"cbrt":            {func(x float64) float64 { return math.Copysign(math.Pow(math.Abs(x), 1.0/3), x) }, [3]float64{-1.3, 0.4, 2}},
	"exp2":            {func(x float64) float64 { return math.Pow(2, x) }, [3]float64{-1.3, 0.4, 2}},
	"log2":            {func(x float64) float64 { return math.Log(x) / math.Ln2 }, [3]float64{0.3, 2.5, 7}},
	"log10":           {func(x float64) float64 { return math.Log(x) / math.Ln10 }, [3]float64{0.3, 2.5, 7}},
	"log1m_exp":       {func(x float64) float64 { return math.Log(1 - math.Exp(x)) }, [3]float64{-2.5, -0.4, -0.1}},
	"log1p_exp":       {func(x float64) float64 { return math.Log(1 + math.Exp(x)) }, [3]float64{-1.3, 0.4, 2}},
	"fabs":            {math.Abs, [3]float64{-1.3, 0.4, 2}},
	"abs":             {math.Abs, [3]float64{-1.3, 0.4, 2}},
}

// invPhiRef is gonum's normal quantile, extended to the closed interval
// and NaN outside it.
func invPhiRef(p float64) float64 {
	switch {
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p < 0 || p > 1:
		return math.NaN()
	}
	return distuv.UnitNormal.Quantile(p)
}

func mapf(f func(float64) float64, xs ...float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func TestUnary(t *testing.T) {
	for name, ref := range unaryRef {
		t.Run(name, func(t *testing.T) {
			a, b, c := ref.xs[0], ref.xs[1], ref.xs[2]
			f := ref.f
			ys := mapf(f, a, b, c)
			n1, n2 := 1, 2 // int arguments
			if name == "inv_Phi" {
				n1, n2 = 0, 1
			}
			cases := []tcase{
				{fn: name, args: []arg{R(b)}, want: R(ys[1])},
				{fn: name, args: []arg{V(a, b, c)}, want: V(ys...)},
				{fn: name, args: []arg{RV(c, a)}, want: RV(ys[2], ys[0])},
				{fn: name, args: []arg{M(1, 3, a, b, c)}, want: M(1, 3, ys...)},
				{fn: name, args: []arg{A(a, b, c)}, want: A(ys...)},
				{fn: name, args: []arg{A2(1, 2, a, c)}, want: A2(1, 2, ys[0], ys[2])},
				{fn: name, args: []arg{AE(V(a, b), V(c, a))}, want: AE(V(ys[0], ys[1]), V(ys[2], ys[0]))},
				{fn: name, args: []arg{I(n2)}, want: R(f(float64(n2)))},
				{fn: name, args: []arg{Is(n1, n2)}, want: A(f(float64(n1)), f(float64(n2)))},
			}
			if name == "abs" { // abs keeps ints
				cases[7].want = I(2)
				cases = append(cases[:8], tcase{fn: name, args: []arg{Is(-1, 2)}, want: Is(1, 2)},
					tcase{fn: name, args: []arg{I(-3)}, want: I(3)})
			}
			for _, c := range cases {
				c.tol = 1e-9
				c.run(t, covered)
			}
		})
	}
}

// binaryRef holds independent references for the binary elementwise
// functions and points of their domain (a[i] > b[i] where needed).
var binaryRef = map[string]struct {
	f    func(a, b float64) float64
	a, b [3]float64
}{
	"pow":                      {math.Pow, [3]float64{0.7, 2.5, 1.3}, [3]float64{-0.5, 1.2, 3}},
	"atan2":                    {math.Atan2, [3]float64{0.7, -2.5, 1.3}, [3]float64{-0.5, 1.2, 3}},
	"fmin":                     {math.Min, [3]float64{0.7, 2.5, 1.3}, [3]float64{-0.5, 1.2, 3}},
	"fmax":                     {math.Max, [3]float64{0.7, 2.5, 1.3}, [3]float64{-0.5, 1.2, 3}},
	"fdim":                     {func(a, b float64) float64 { return math.Max(a-b, 0) }, [3]float64{0.7, 2.5, 1.3}, [3]float64{-0.5, 1.2, 3}},
	"fmod":                     {math.Mod, [3]float64{5.3, -7.5, 1.3}, [3]float64{2.1, 2.2, 3}},
	"hypot":                    {func(a, b float64) float64 { return math.Sqrt(a*a + b*b) }, [3]float64{0.7, -2.5, 1.3}, [3]float64{-0.5, 1.2, 3}},
	"lbeta":                    {func(a, b float64) float64 { return lg(a) + lg(b) - lg(a+b) }, [3]float64{0.7, 2.5, 1.3}, [3]float64{0.5, 1.2, 3}},
	"log_diff_exp":             {func(a, b float64) float64 { return math.Log(math.Exp(a) - math.Exp(b)) }, [3]float64{0.7, 2.5, 3.3}, [3]float64{-0.5, 1.2, 3}},
	"lchoose":                  {lchooseRef, [3]float64{4.7, 2.5, 6.3}, [3]float64{0.5, 1.2, 3}},
	"binomial_coefficient_log": {lchooseRef, [3]float64{4.7, 2.5, 6.3}, [3]float64{0.5, 1.2, 3}},
}

func lg(x float64) float64 { v, _ := math.Lgamma(x); return v }

func lchooseRef(n, k float64) float64 { return lg(n+1) - lg(k+1) - lg(n-k+1) }

func TestBinary(t *testing.T) {
	for name, ref := range binaryRef {
		t.Run(name, func(t *testing.T) {
			a, b, f := ref.a, ref.b, ref.f
			ys := []float64{f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2])}
			cases := []tcase{
				{fn: name, args: []arg{R(a[0]), R(b[0])}, want: R(ys[0])},
				{fn: name, args: []arg{V(a[:]...), V(b[:]...)}, want: V(ys...)},
				{fn: name, args: []arg{RV(a[:]...), RV(b[:]...)}, want: RV(ys...)},
				{fn: name, args: []arg{M(3, 1, a[:]...), M(3, 1, b[:]...)}, want: M(3, 1, ys...)},
				{fn: name, args: []arg{A(a[:]...), A(b[:]...)}, want: A(ys...)},
				{fn: name, args: []arg{V(a[:]...), R(b[0])}, want: V(f(a[0], b[0]), f(a[1], b[0]), f(a[2], b[0]))},
				{fn: name, args: []arg{R(a[2]), RV(b[:]...)}, want: RV(f(a[2], b[0]), f(a[2], b[1]), f(a[2], b[2]))},
				{fn: name, args: []arg{AE(V(a[0], a[1]), V(a[2], a[0])), AE(V(b[0], b[1]), V(b[2], b[0]))},
					want: AE(V(ys[0], ys[1]), V(ys[2], ys[0]))},
				{fn: name, args: []arg{AE(RV(a[0], a[1])), R(b[0])}, want: AE(RV(ys[0], f(a[1], b[0])))},
				{fn: name, args: []arg{I(7), R(b[1])}, want: R(f(7, b[1]))},
				{fn: name, args: []arg{Is(7, 5), A(b[0], b[1])}, want: A(f(7, b[0]), f(5, b[1]))},
				{fn: name, args: []arg{I(7), I(3)}, want: R(f(7, 3))},
			}
			for _, c := range cases {
				c.tol = 1e-9
				c.run(t, covered)
			}
		})
	}
}

func TestElementwiseOthers(t *testing.T) {
	lse := func(xs ...float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += math.Exp(x)
		}
		return math.Log(s)
	}
	sm := []float64{math.Exp(0.5) / (math.Exp(0.5) + math.Exp(-1) + math.Exp(2)), math.Exp(-1) / (math.Exp(0.5) + math.Exp(-1) + math.Exp(2)), math.Exp(2) / (math.Exp(0.5) + math.Exp(-1) + math.Exp(2))}
	for _, c := range []tcase{
		{fn: "log_sum_exp", args: []arg{R(0.3), R(-1.2)}, want: R(lse(0.3, -1.2))},
		{fn: "log_sum_exp", args: []arg{I(1), R(-1.2)}, want: R(lse(1, -1.2))},
		{fn: "log_sum_exp", args: []arg{V(0.3, -1.2, 2)}, want: R(lse(0.3, -1.2, 2))},
		{fn: "log_sum_exp", args: []arg{RV(0.3, -1.2, 2)}, want: R(lse(0.3, -1.2, 2))},
		{fn: "log_sum_exp", args: []arg{A(0.3, -1.2)}, want: R(lse(0.3, -1.2))},
		{fn: "log_sum_exp", args: []arg{Is(1, 2)}, want: R(lse(1, 2))},
		{fn: "log_sum_exp", args: []arg{M(2, 2, 0.3, -1.2, 2, 0.1)}, want: R(lse(0.3, -1.2, 2, 0.1))},
		{fn: "log_mix", args: []arg{R(0.3), R(-1.2), R(0.5)}, want: R(math.Log(0.3*math.Exp(-1.2) + 0.7*math.Exp(0.5)))},
		{fn: "log_mix", args: []arg{V(0.2, 0.5, 0.3), V(-1, 0.5, 2)}, want: R(math.Log(0.2*math.Exp(-1) + 0.5*math.Exp(0.5) + 0.3*math.Exp(2)))},
		{fn: "softmax", args: []arg{V(0.5, -1, 2)}, want: V(sm...)},
		{fn: "log_softmax", args: []arg{V(0.5, -1, 2)}, want: V(math.Log(sm[0]), math.Log(sm[1]), math.Log(sm[2]))},
		{fn: "is_inf", args: []arg{R(math.Inf(-1))}, want: I(1)},
		{fn: "is_inf", args: []arg{R(2)}, want: I(0)},
		{fn: "is_nan", args: []arg{R(math.NaN())}, want: I(1)},
		{fn: "is_nan", args: []arg{I(3)}, want: I(0)},
		{fn: "step", args: []arg{R(-0.5)}, want: R(0)},
		{fn: "step", args: []arg{R(0.5)}, want: R(1)},
		{fn: "step", args: []arg{I(0)}, want: R(1)},
		{fn: "int_step", args: []arg{R(0.5)}, want: I(1)},
		{fn: "int_step", args: []arg{I(0)}, want: I(0)},
		{fn: "logical_negation", args: []arg{R(0)}, want: I(1)},
		{fn: "logical_negation", args: []arg{R(-2)}, want: I(0)},
	} {
		c.tol = 1e-12
		c.run(t, covered) // int results (is_inf, ...) have no gradient to check
	}
}
