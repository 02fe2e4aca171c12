package mathlib

import (
	"fmt"
	"math"
	"slices"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// unaryNames are the elementwise functions of one argument whose name is
// that of an autodiff.UnaryFunc.
var unaryNames = []string{
	"sqrt", "square", "exp", "log", "log1p", "expm1", "log1m", "inv", "inv_sqrt",
	"inv_square", "inv_logit", "logit", "log_inv_logit", "log1m_inv_logit", "lgamma",
	"tgamma", "digamma", "floor", "ceil", "round", "trunc", "sin", "cos", "tan", "asin",
	"acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
	"Phi", "Phi_approx", "inv_Phi", "cbrt", "exp2", "log1m_exp", "log1p_exp",
}

// binaryNames maps the elementwise functions of two arguments to their
// autodiff.BinaryFunc; fmod is implemented separately.
var binaryNames = map[string]autodiff.BinaryFunc{
	"pow": autodiff.Pow, "atan2": autodiff.Atan2, "fmin": autodiff.Fmin, "fmax": autodiff.Fmax,
	"fdim": autodiff.Fdim, "hypot": autodiff.Hypot, "lbeta": autodiff.Lbeta,
	"log_diff_exp": autodiff.LogDiffExp, "lchoose": autodiff.Lchoose,
	"binomial_coefficient_log": autodiff.Lchoose,
}

func registerElementwise(m stdlib.Impls) {
	for _, name := range unaryNames {
		f, ok := autodiff.UnaryByName(name)
		if !ok {
			panic("mathlib: no autodiff function " + name)
		}
		if name == "inv_Phi" {
			continue
		}
		m.Add(name, unaryImpl(f))
	}
	m.Add("inv_Phi", func(c *ctx, args, named []value) (value, error) {
		// autodiff's inv_Phi panics outside [0, 1] (gonum's quantile).
		if err := checkProbabilities(c.Tape, "inv_Phi", args[0]); err != nil {
			return value{}, err
		}
		return mapUnary(c.Tape, autodiff.InvPhi, args[0]), nil
	})
	m.Add("fabs", unaryImpl(autodiff.Abs))
	for name, f := range map[string]autodiff.UnaryFunc{"log2": autodiff.Log2, "log10": autodiff.Log10} {
		fn := unaryImpl(f)
		k := math.Ln2
		if f == autodiff.Log10 {
			k = math.Ln10
		}
		m.Add(name, func(c *ctx, args, named []value) (value, error) {
			if len(args) == 0 {
				return stdlib.RealValue(c.Tape.Const(k)), nil
			}
			return fn(c, args, named)
		})
	}
	m.Add("abs", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		if isInt(v) {
			if v.Type.Dims == 0 {
				return intResult("abs", absInt(v.Int))
			}
			out := v
			out.Ints = make([]int, len(v.Ints))
			for i, n := range v.Ints {
				if out.Ints[i] = absInt(n); !lang.IsInt32(out.Ints[i]) {
					return intResult("abs", out.Ints[i])
				}
			}
			out.Dims = slices.Clone(v.Dims)
			return out, nil
		}
		return mapUnary(c.Tape, autodiff.Abs, v), nil
	})
	for name, f := range binaryNames {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			return mapBinary(c.Tape, name, args[0], args[1], func(a, b ad) ad { return c.Tape.Binary(f, a, b) })
		})
	}
	m.Add("fmod", func(c *ctx, args, _ []value) (value, error) {
		return mapBinary(c.Tape, "fmod", args[0], args[1], func(a, b ad) ad { return fmod(c.Tape, a, b) })
	})
	m.Add("log_sum_exp", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		if len(args) == 2 {
			return stdlib.RealValue(t.Binary(autodiff.LogSumExp2, toAD(t, args[0]), toAD(t, args[1]))), nil
		}
		return stdlib.RealValue(t.LogSumExp(toAD(t, args[0]))), nil
	})
	m.Add("log_mix", func(c *ctx, args, _ []value) (value, error) {
		// log(θ e^λ₁ + (1 − θ) e^λ₂), or log Σ_k θ_k e^{λ_k}.
		t := c.Tape
		theta := toAD(t, args[0])
		for i, x := range t.Val(theta) {
			if !(x >= 0 && x <= 1) {
				return value{}, errorf("log_mix", "mixing proportion theta%s = %g must be in [0, 1]", elemLabel(theta, i), x)
			}
		}
		if len(args) == 3 {
			a := t.Add(t.Log(theta), toAD(t, args[1]))
			b := t.Add(t.Unary(autodiff.Log1m, theta), toAD(t, args[2]))
			return stdlib.RealValue(t.Binary(autodiff.LogSumExp2, a, b)), nil
		}
		lambda := args[1].AD
		if lambda.Len() != theta.Len() {
			return value{}, errorf("log_mix", "theta has %d proportions but lambda %d densities", theta.Len(), lambda.Len())
		}
		return stdlib.RealValue(t.LogSumExp(t.Add(t.Log(theta), lambda))), nil
	})
	m.Add("softmax", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(c.Tape.Softmax(args[0].AD)), nil
	})
	m.Add("log_softmax", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(c.Tape.LogSoftmax(args[0].AD)), nil
	})
	m.Add("step", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.RealValue(c.Tape.Unary(autodiff.Step, toAD(c.Tape, args[0]))), nil
	})
	for name, pred := range map[string]func(float64) bool{
		"is_inf":           func(x float64) bool { return math.IsInf(x, 0) },
		"is_nan":           math.IsNaN,
		"int_step":         func(x float64) bool { return x > 0 },
		"logical_negation": func(x float64) bool { return x == 0 },
	} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			if pred(scalarOf(c.Tape, args[0])) {
				return stdlib.IntValue(1), nil
			}
			return stdlib.IntValue(0), nil
		})
	}
}

// checkProbabilities returns an error if an element of v is outside
// [0, 1].
func checkProbabilities(t *autodiff.Tape, name string, v value) error {
	if hasElems(v) {
		for _, e := range v.Elems {
			if err := checkProbabilities(t, name, e); err != nil {
				return err
			}
		}
		return nil
	}
	for i, x := range floats(t, v) {
		if x < 0 || x > 1 {
			if v.IsScalar() {
				return errorf(name, "argument %v is outside [0, 1]", x)
			}
			return errorf(name, "element %d is %v, outside [0, 1]", i+1, x)
		}
	}
	return nil
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// ScalarUnary returns the tape operation that the elementwise function
// name records for a real scalar argument, when its implementation is that
// operation alone (unaryImpl): compiled code may record it directly,
// bitwise as the call would.
func ScalarUnary(name string) (autodiff.UnaryFunc, bool) {
	switch {
	case name == "fabs":
		return autodiff.Abs, true
	case name == "inv_Phi" || !slices.Contains(unaryNames, name):
		return 0, false
	}
	return autodiff.UnaryByName(name)
}

func unaryImpl(f autodiff.UnaryFunc) stdlib.Impl {
	return func(c *ctx, args, _ []value) (value, error) {
		return mapUnary(c.Tape, f, args[0]), nil
	}
}

// mapUnary applies f to every element of v (one node per vector, row
// vector or matrix; one node for a whole array of reals).
func mapUnary(t *autodiff.Tape, f autodiff.UnaryFunc, v value) value {
	if hasElems(v) {
		out := value{Type: v.Type, Dims: slices.Clone(v.Dims), Elems: make([]value, len(v.Elems))}
		for i, e := range v.Elems {
			out.Elems[i] = mapUnary(t, f, e)
		}
		return out
	}
	return reals(v.Type.Promoted(), t.Unary(f, toAD(t, v)), v.Dims)
}

// sameShape checks that two non-scalar values have the same dimensions.
func sameShape(name string, a, b value) error {
	if !slices.Equal(a.Dims, b.Dims) {
		return errorf(name, "array sizes differ: %v and %v", a.Dims, b.Dims)
	}
	if hasElems(a) || a.Type.Dims > 0 {
		return nil
	}
	if a.Type.Base == lang.Matrix && (a.AD.Rows() != b.AD.Rows() || a.AD.Cols() != b.AD.Cols()) {
		return errorf(name, "sizes differ: %d×%d and %d×%d", a.AD.Rows(), a.AD.Cols(), b.AD.Rows(), b.AD.Cols())
	}
	if a.Len() != b.Len() {
		return errorf(name, "sizes differ: %d and %d", a.Len(), b.Len())
	}
	return nil
}

// mapBinary applies an elementwise binary operation, broadcasting a scalar
// over a container.
func mapBinary(t *autodiff.Tape, name string, a, b value, op func(a, b ad) ad) (value, error) {
	switch {
	case a.IsScalar() && b.IsScalar():
		return stdlib.RealValue(op(toAD(t, a), toAD(t, b))), nil
	case hasElems(a) || hasElems(b):
		shape := a
		if a.IsScalar() {
			shape = b
		} else if !b.IsScalar() {
			if err := sameShape(name, a, b); err != nil {
				return value{}, err
			}
		}
		out := value{Type: shape.Type.Promoted(), Dims: slices.Clone(shape.Dims), Elems: make([]value, len(shape.Elems))}
		for i := range out.Elems {
			x, y := a, b
			if !a.IsScalar() {
				x = a.Elems[i]
			}
			if !b.IsScalar() {
				y = b.Elems[i]
			}
			e, err := mapBinary(t, name, x, y, op)
			if err != nil {
				return value{}, err
			}
			out.Elems[i] = e
		}
		return out, nil
	}
	shape := a
	if a.IsScalar() {
		shape = b
	} else if !b.IsScalar() {
		if err := sameShape(name, a, b); err != nil {
			return value{}, err
		}
	}
	return reals(shape.Type.Promoted(), op(toAD(t, a), toAD(t, b)), shape.Dims), nil
}

// fmod returns the elementwise remainder a - trunc(a/b)·b (one partials
// node): ∂/∂a = 1, ∂/∂b = -trunc(a/b).
func fmod(t *autodiff.Tape, a, b ad) ad {
	s := a.Shape()
	if a.Kind() == autodiff.Scalar {
		s = b.Shape()
	}
	p := t.ElementwisePartials(s, a, b)
	// Read the inputs after recording: the arena may have moved.
	av, bv := t.Val(a), t.Val(b)
	out, da, db := p.Out(), p.D(0), p.D(1)
	for i := range out {
		x, y := av[min(i, len(av)-1)], bv[min(i, len(bv)-1)]
		out[i] = math.Mod(x, y)
		if da != nil {
			da[i] = 1
		}
		if db != nil {
			db[i] = -math.Trunc(x / y)
		}
	}
	return p.Value()
}

// elemLabel renders element i of a value for messages: "[3]" for a
// container, "" for a scalar.
func elemLabel(v ad, i int) string {
	if v.Kind() == autodiff.Scalar {
		return ""
	}
	return fmt.Sprintf("[%d]", i+1)
}
