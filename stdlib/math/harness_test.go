package mathlib

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// arg describes an argument or an expected result independently of any
// tape: its type, its values (row-major; ints as floats) and its shape.
type arg struct {
	typ   lang.Type
	x     []float64
	r, c  int   // vector, row_vector, matrix dimensions
	dims  []int // array dimensions
	elems []arg // array of vectors, row vectors or matrices
}

func I(n int) arg     { return arg{typ: intType, x: []float64{float64(n)}} }
func R(x float64) arg { return arg{typ: realType, x: []float64{x}, r: 1, c: 1} }
func V(xs ...float64) arg {
	return arg{typ: vecType, x: xs, r: len(xs), c: 1}
}
func RV(xs ...float64) arg {
	return arg{typ: rowType, x: xs, r: 1, c: len(xs)}
}
func M(r, c int, xs ...float64) arg {
	if len(xs) != r*c {
		panic(fmt.Sprintf("M: %d values for %d×%d", len(xs), r, c))
	}
	return arg{typ: matType, x: xs, r: r, c: c}
}

// Is is an array[] int.
func Is(ns ...int) arg {
	a := arg{typ: intArray, dims: []int{len(ns)}, x: []float64{}}
	for _, n := range ns {
		a.x = append(a.x, float64(n))
	}
	return a
}

// Is2 is an array[,] int.
func Is2(r, c int, ns ...int) arg {
	a := Is(ns...)
	a.typ, a.dims = lang.ArrayOf(intType, 2), []int{r, c}
	return a
}

// A is an array[] real.
func A(xs ...float64) arg {
	return arg{typ: realArray, x: xs, dims: []int{len(xs)}}
}

// A2 is an array[,] real.
func A2(r, c int, xs ...float64) arg {
	return arg{typ: lang.ArrayOf(realType, 2), x: xs, dims: []int{r, c}}
}

// AE is a one-dimensional array of vectors, row vectors or matrices.
func AE(es ...arg) arg {
	return arg{typ: lang.ArrayOf(es[0].typ, 1), dims: []int{len(es)}, elems: es}
}

// AE2 is a two-dimensional array of vectors, row vectors or matrices.
func AE2(r, c int, es ...arg) arg {
	return arg{typ: lang.ArrayOf(es[0].typ, 2), dims: []int{r, c}, elems: es}
}

func (a arg) isInt() bool { return a.typ.Base == lang.Int }

// reals returns the real values of a (none for ints), in the order build
// reads them from the variable vector.
func (a arg) reals() []float64 {
	if a.isInt() {
		return nil
	}
	if a.elems != nil {
		var xs []float64
		for _, e := range a.elems {
			xs = append(xs, e.reals()...)
		}
		return xs
	}
	return a.x
}

func (a arg) String() string {
	if a.elems != nil {
		parts := make([]string, len(a.elems))
		for i, e := range a.elems {
			parts[i] = e.String()
		}
		return fmt.Sprintf("%v%v{%s}", a.typ, a.dims, strings.Join(parts, ", "))
	}
	switch {
	case a.typ.Dims > 0:
		return fmt.Sprintf("%v%v%v", a.typ, a.dims, a.x)
	case a.typ.Base == lang.Int || a.typ.Base == lang.Real:
		return fmt.Sprintf("%v", a.x[0])
	}
	return fmt.Sprintf("%v[%d,%d]%v", a.typ, a.r, a.c, a.x)
}

// build puts a on the tape: reals are taken from the variable vector x
// starting at *off (or recorded as constants when x is invalid).
func build(t *autodiff.Tape, x autodiff.Value, a arg, off *int) stdlib.Value {
	if a.isInt() {
		ns := make([]int, len(a.x))
		for i, v := range a.x {
			ns[i] = int(v)
		}
		if a.typ.Dims == 0 {
			return stdlib.IntValue(ns[0])
		}
		return stdlib.Value{Type: a.typ, Ints: ns, Dims: slices.Clone(a.dims)}
	}
	if a.elems != nil {
		v := stdlib.Value{Type: a.typ, Dims: slices.Clone(a.dims)}
		for _, e := range a.elems {
			v.Elems = append(v.Elems, build(t, x, e, off))
		}
		return v
	}
	n := len(a.x)
	var v autodiff.Value
	if x.IsValid() {
		v = t.Slice(x, *off, n)
		*off += n
	} else {
		v = t.ConstVec(a.x)
	}
	switch {
	case a.typ.Dims > 0:
		return stdlib.Value{Type: a.typ, AD: v, Dims: slices.Clone(a.dims)}
	case a.typ == realType:
		return stdlib.RealValue(t.Index(v, 0))
	case a.typ == vecType:
		return stdlib.Value{Type: vecType, AD: v}
	case a.typ == rowType:
		return stdlib.Value{Type: rowType, AD: t.Reshape(v, autodiff.RowVectorShape(n))}
	}
	return stdlib.Value{Type: matType, AD: t.Reshape(v, autodiff.MatrixShape(a.r, a.c))}
}

// read converts a result back into an arg.
func read(t *autodiff.Tape, v stdlib.Value) arg {
	a := arg{typ: v.Type, dims: slices.Clone(v.Dims)}
	switch {
	case v.Type.Base == lang.Int && v.Type.Dims == 0:
		a.x = []float64{float64(v.Int)}
	case v.Type.Base == lang.Int:
		a.x = []float64{}
		for _, n := range v.Ints {
			a.x = append(a.x, float64(n))
		}
	case v.Type.Dims > 0 && v.Type.Base.IsLinalg():
		for _, e := range v.Elems {
			a.elems = append(a.elems, read(t, e))
		}
	default:
		a.x = slices.Clone(t.Val(v.AD))
		if v.Type.Dims == 0 {
			a.r, a.c = v.AD.Rows(), v.AD.Cols()
		}
	}
	return a
}

// close reports whether got matches want within a relative tolerance;
// NaNs match NaNs and infinities match equal infinities.
func close(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// same compares a result with its expected value: type, shape, values.
func same(got, want arg, tol float64) error {
	if got.typ != want.typ {
		return fmt.Errorf("type %v, want %v", got.typ, want.typ)
	}
	if !slices.Equal(got.dims, want.dims) && !(len(got.dims) == 0 && len(want.dims) == 0) {
		return fmt.Errorf("dims %v, want %v", got.dims, want.dims)
	}
	if want.elems != nil || got.elems != nil {
		if len(got.elems) != len(want.elems) {
			return fmt.Errorf("%d elements, want %d", len(got.elems), len(want.elems))
		}
		for i := range want.elems {
			if err := same(got.elems[i], want.elems[i], tol); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
		return nil
	}
	if want.typ.Dims == 0 && want.typ.Base.IsLinalg() && (got.r != want.r || got.c != want.c) {
		return fmt.Errorf("shape %d×%d, want %d×%d", got.r, got.c, want.r, want.c)
	}
	if len(got.x) != len(want.x) {
		return fmt.Errorf("%d values, want %d", len(got.x), len(want.x))
	}
	for i := range want.x {
		if !close(got.x[i], want.x[i], tol) {
			return fmt.Errorf("value %d is %.15g, want %.15g", i, got.x[i], want.x[i])
		}
	}
	return nil
}

// tcase is one call of a built-in with its expected result.
type tcase struct {
	fn   string
	args []arg
	want arg
	// symmetric lists matrix arguments that are replaced by (A + Aᵀ)/2 on
	// the tape, so that finite differences keep them symmetric.
	symmetric []int
	tol       float64 // value tolerance; 1e-10 when zero
	gradTol   float64 // gradient tolerance; 1e-6 when zero
}

func (c tcase) name() string {
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = a.String()
	}
	return c.fn + "(" + strings.Join(parts, ", ") + ")"
}

// resolve returns the index of the signature of fn that the argument
// types select (the cheapest match, as the checker does) and its result
// type.
func resolve(fn *stdlib.Func, types []lang.Type) (int, lang.Type, bool) {
	best, bestCost := -1, 0
	var res lang.Type
	for i, s := range fn.Sigs {
		if len(s.Params) != len(types) {
			continue
		}
		cost, ok := 0, true
		for k, p := range s.Params {
			c, accepts := p.Accepts(types[k])
			ok = ok && accepts
			cost += c
		}
		if !ok {
			continue
		}
		r, ok := s.Result(types)
		if !ok {
			continue
		}
		if best < 0 || cost < bestCost {
			best, bestCost, res = i, cost, r
		}
	}
	return best, res, best >= 0
}

var impls = func() stdlib.Impls {
	m := stdlib.Impls{}
	Register(m)
	return m
}()

// call evaluates the case with its real arguments as constants (x
// invalid) or as slices of the variable vector x.
func (c tcase) call(t *autodiff.Tape, x autodiff.Value) (stdlib.Value, error) {
	off := 0
	args := make([]stdlib.Value, len(c.args))
	for i, a := range c.args {
		args[i] = build(t, x, a, &off)
		if slices.Contains(c.symmetric, i) {
			m := args[i].AD
			args[i].AD = t.Mul(t.Add(m, t.Transpose(m)), t.Const(0.5))
		}
	}
	return impls[c.fn](&stdlib.Context{Tape: t}, args, nil)
}

// weights returns fixed weights that make a scalar of a result.
func weights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 + 0.37*float64(i%7) - 0.11*float64(i)
	}
	return w
}

// scalarize reduces a result to Σ w_i out_i on the tape.
func scalarize(t *autodiff.Tape, v stdlib.Value) (autodiff.Value, bool) {
	if v.Type.Base == lang.Int {
		return autodiff.Value{}, false
	}
	var parts []autodiff.Value
	if v.Elems != nil {
		for _, e := range v.Elems {
			parts = append(parts, e.AD)
		}
	} else {
		parts = append(parts, v.AD)
	}
	sum := t.Const(0)
	for _, p := range parts {
		if p.Len() == 0 {
			continue
		}
		sum = t.Add(sum, t.Dot(asVector(t, p), t.ConstVec(weights(p.Len()))))
	}
	return sum, true
}

// run checks a case: its signature, its value (with constant arguments,
// which must record nothing, and with variables) and its gradient with
// respect to every real argument against finite differences.
func (c tcase) run(t *testing.T, covered map[string]bool) {
	t.Helper()
	fn := stdlib.Builtins().Lookup(c.fn)
	if fn == nil {
		t.Fatalf("%s: no such built-in", c.name())
	}
	types := make([]lang.Type, len(c.args))
	for i, a := range c.args {
		types[i] = a.typ
	}
	k, resType, ok := resolve(fn, types)
	if !ok {
		t.Fatalf("%s: no signature accepts %v", c.name(), types)
	}
	if covered != nil {
		covered[fmt.Sprintf("%s/%d", c.fn, k)] = true
	}
	if resType != c.want.typ {
		t.Errorf("%s: the signature's result is %v, the test expects %v", c.name(), resType, c.want.typ)
	}
	tol := c.tol
	if tol == 0 {
		tol = 1e-10
	}
	tape := autodiff.NewTape()
	got, err := c.call(tape, autodiff.Value{})
	if err != nil {
		t.Fatalf("%s: %v", c.name(), err)
	}
	if n := tape.NumNodes(); n != 0 {
		t.Errorf("%s: constant arguments recorded %d nodes", c.name(), n)
	}
	if err := same(read(tape, got), c.want, tol); err != nil {
		t.Errorf("%s (constant arguments): %v", c.name(), err)
	}
	var x0 []float64
	for _, a := range c.args {
		x0 = append(x0, a.reals()...)
	}
	if len(x0) == 0 {
		return
	}
	tape.Reset()
	got, err = c.call(tape, tape.VarVec(x0))
	if err != nil {
		t.Fatalf("%s: %v", c.name(), err)
	}
	if err := same(read(tape, got), c.want, tol); err != nil {
		t.Errorf("%s (variable arguments): %v", c.name(), err)
	}
	if _, ok := scalarize(tape, got); !ok {
		return
	}
	gradTol := c.gradTol
	if gradTol == 0 {
		gradTol = 1e-6
	}
	var callErr error
	err = autodiff.CheckGradient(func(tape *autodiff.Tape, x autodiff.Value) autodiff.Value {
		v, err := c.call(tape, x)
		if err != nil {
			callErr = err
			return tape.Const(math.NaN())
		}
		s, _ := scalarize(tape, v)
		return s
	}, x0, gradTol)
	if callErr != nil {
		t.Errorf("%s: gradient check: %v", c.name(), callErr)
	} else if err != nil {
		t.Errorf("%s: gradient: %v", c.name(), err)
	}
}
