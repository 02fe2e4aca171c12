package mathlib

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Register adds the implementation of every math, container and
// linear-algebra built-in to m.
func Register(m stdlib.Impls) {
	registerElementwise(m)
	registerReductions(m)
	registerContainers(m)
	registerLinalg(m)
	registerConstants(m)
}

type (
	value = stdlib.Value
	ctx   = stdlib.Context
	ad    = autodiff.Value
)

var (
	intType   = lang.IntType
	realType  = lang.RealType
	vecType   = lang.VectorType
	rowType   = lang.RowVectorType
	matType   = lang.MatrixType
	intArray  = lang.ArrayOf(lang.IntType, 1)
	realArray = lang.ArrayOf(lang.RealType, 1)
)

// errorf returns an error prefixed with the function's name.
func errorf(name, format string, a ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{name}, a...)...)
}

// intResult returns n as the int result of the function name, or the
// error of a result outside the range of Stan's 32-bit ints.
func intResult(name string, n int) (value, error) {
	if !lang.IsInt32(n) {
		return value{}, fmt.Errorf("%s: %w", name, lang.IntRangeError("the result", float64(n)))
	}
	return stdlib.IntValue(n), nil
}

// isInt reports whether v is an int or an array of ints.
func isInt(v value) bool { return v.Type.Base == lang.Int }

// hasElems reports whether v is an array of vectors, row vectors or
// matrices (held in Elems).
func hasElems(v value) bool { return v.Type.Dims > 0 && v.Type.Base.IsLinalg() }

// toAD returns v on the tape: ints and int arrays become constants, arrays
// of reals are their flat vector. v must not hold Elems.
func toAD(t *autodiff.Tape, v value) ad {
	if v.Type.Base == lang.Int {
		if v.Type.Dims == 0 {
			return t.Const(float64(v.Int))
		}
		xs := make([]float64, len(v.Ints))
		for i, n := range v.Ints {
			xs[i] = float64(n)
		}
		return t.ConstVec(xs)
	}
	return v.AD
}

// scalarOf returns the float value of an int or real scalar.
func scalarOf(t *autodiff.Tape, v value) float64 {
	if v.Type.Base == lang.Int {
		return float64(v.Int)
	}
	return t.Scalar(v.AD)
}

// floats returns the values of a value without Elems, as a fresh slice.
func floats(t *autodiff.Tape, v value) []float64 {
	if v.Type.Base == lang.Int {
		if v.Type.Dims == 0 {
			return []float64{float64(v.Int)}
		}
		xs := make([]float64, len(v.Ints))
		for i, n := range v.Ints {
			xs[i] = float64(n)
		}
		return xs
	}
	return append([]float64(nil), t.Val(v.AD)...)
}

// realArr returns an array of reals with the given dimensions held by the
// flat vector x.
func realArr(x ad, dims []int) value {
	return value{Type: lang.ArrayOf(realType, len(dims)), AD: x, Dims: dims}
}

// intArr returns an array of ints of one dimension.
func intArr(xs []int) value {
	return value{Type: intArray, Ints: xs, Dims: []int{len(xs)}}
}

// reals returns a value of type typ (real, vector, row_vector, matrix or
// an array of reals with dims) held by x.
func reals(typ lang.Type, x ad, dims []int) value {
	if typ.Dims > 0 {
		return value{Type: typ, AD: x, Dims: append([]int(nil), dims...)}
	}
	return value{Type: typ, AD: x}
}

// asVector views a vector, row vector, matrix or flat array as a vector.
func asVector(t *autodiff.Tape, x ad) ad {
	if x.Kind() == autodiff.Vector {
		return x
	}
	return t.Reshape(x, autodiff.VectorShape(x.Len()))
}

// count checks a size argument.
// count checks the sizes of a result before it is allocated
// (stdlib.CheckSize), naming the function.
func count(name string, dims ...int) error {
	if err := stdlib.CheckSize(dims...); err != nil {
		return errorf(name, "%w", err)
	}
	return nil
}

// gather returns the elements idx of x (0-based, row-major) in shape s:
// one Gather node, viewed with shape s.
func gather(t *autodiff.Tape, x ad, idx []int, s autodiff.Shape) ad {
	return t.Reshape(t.Gather(x, idx), s)
}

// colMajor returns the row-major indices of an r×c matrix in column-major
// order.
func colMajor(r, c int) []int {
	idx := make([]int, 0, r*c)
	for j := range c {
		for i := range r {
			idx = append(idx, i*c+j)
		}
	}
	return idx
}

func registerConstants(m stdlib.Impls) {
	for name, x := range map[string]float64{
		"pi":                math.Pi,
		"e":                 math.E,
		"sqrt2":             math.Sqrt2,
		"not_a_number":      math.NaN(),
		"positive_infinity": math.Inf(1),
		"negative_infinity": math.Inf(-1),
		"machine_precision": 0x1p-52,
	} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			return stdlib.RealValue(c.Tape.Const(x)), nil
		})
	}
	// log2 and log10 are constants with no argument and elementwise
	// functions with one: see registerElementwise.
}
