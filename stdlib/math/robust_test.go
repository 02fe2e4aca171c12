package mathlib

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// candidateTypes are the argument types tried for every parameter.
var candidateTypes = []lang.Type{
	intType, realType, vecType, rowType, matType,
	intArray, realArray, lang.ArrayOf(intType, 2), lang.ArrayOf(realType, 2),
	lang.ArrayOf(vecType, 1), lang.ArrayOf(rowType, 1), lang.ArrayOf(matType, 1),
}

// randomArg returns an argument of type typ with small random sizes
// (empty included) and values that include 0, negatives, NaN and ±Inf.
func randomArg(r *rand.Rand, typ lang.Type) arg {
	pool := []float64{0, 1, -1, 0.5, 2.5, -3, 1e10, math.NaN(), math.Inf(1), math.Inf(-1)}
	ints := []int{-1, 0, 1, 2, 3, 5}
	size := func() int { return r.IntN(4) }
	vals := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = pool[r.IntN(len(pool))]
		}
		return xs
	}
	ivals := func(n int) []int {
		xs := make([]int, n)
		for i := range xs {
			xs[i] = ints[r.IntN(len(ints))]
		}
		return xs
	}
	switch typ {
	case intType:
		return I(ints[r.IntN(len(ints))])
	case realType:
		return R(vals(1)[0])
	case vecType:
		return V(vals(size())...)
	case rowType:
		return RV(vals(size())...)
	case matType:
		m, n := size(), size()
		if r.IntN(2) == 0 {
			n = m
		}
		return M(m, n, vals(m*n)...)
	case intArray:
		return Is(ivals(size())...)
	case realArray:
		return A(vals(size())...)
	case lang.ArrayOf(intType, 2):
		m, n := size(), size()
		return Is2(m, n, ivals(m*n)...)
	case lang.ArrayOf(realType, 2):
		m, n := size(), size()
		return A2(m, n, vals(m*n)...)
	}
	// Arrays of vectors, row vectors or matrices, usually of equal sizes.
	k := size() + 1
	e := randomArg(r, typ.Elem())
	es := make([]arg, k)
	for i := range es {
		es[i] = e
		if r.IntN(4) == 0 {
			es[i] = randomArg(r, typ.Elem())
		}
	}
	return AE(es...)
}

// TestNoPanics calls every math function with random arguments of every
// type its signatures accept, with random (often mismatched or empty)
// sizes and non-finite values: an implementation must return a value or
// an error, never panic, and never leave an error on the tape (which
// would mean a size problem it did not catch).
func TestNoPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var calls, errs int
	defer func() { t.Logf("%d calls, %d returned errors", calls, errs) }()
	tab := stdlib.Builtins()
	for _, name := range tab.Names() {
		fn := tab.Lookup(name)
		if fn.Kind != stdlib.MathFunc || name == "target" {
			continue
		}
		for _, s := range fn.Sigs {
			tuples := [][]lang.Type{{}}
			for _, p := range s.Params {
				var next [][]lang.Type
				for _, tu := range tuples {
					for _, ct := range candidateTypes {
						if _, ok := p.Accepts(ct); ok {
							next = append(next, append(append([]lang.Type(nil), tu...), ct))
						}
					}
				}
				tuples = next
			}
			for _, types := range tuples {
				if _, ok := s.Result(types); !ok {
					continue
				}
				for range 8 {
					args := make([]arg, len(types))
					for i, ty := range types {
						args[i] = randomArg(r, ty)
					}
					for _, constant := range []bool{true, false} {
						if err := callSafely(tcase{fn: name, args: args}, constant, &calls, &errs); err != nil {
							t.Errorf("%v", err)
						}
					}
				}
			}
		}
	}
}

// callSafely calls c, counting the calls and the errors returned.
func callSafely(c tcase, constant bool, calls, errs *int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s (constant %v): panic: %v", c.name(), constant, p)
		}
	}()
	tape := autodiff.NewTape()
	x := autodiff.Value{}
	if !constant {
		var x0 []float64
		for _, a := range c.args {
			x0 = append(x0, a.reals()...)
		}
		x = tape.VarVec(x0)
	}
	v, callErr := c.call(tape, x)
	*calls++
	if callErr != nil {
		*errs++
		return nil
	}
	if err := tape.Err(); err != nil {
		return fmt.Errorf("%s (constant %v): no error returned, but the tape has %v", c.name(), constant, err)
	}
	if s, ok := scalarize(tape, v); ok && !constant {
		if err := tape.Gradient(s); err != nil {
			return fmt.Errorf("%s: gradient: %v", c.name(), err)
		}
	}
	return nil
}
