package dist

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// vec holds the values (or partial derivatives) of up to four arguments
// of a univariate distribution at one element: the outcome first, then
// the parameters. It is passed by value so that nothing escapes.
type vec = [4]float64

// check is a domain requirement on every element of an argument.
type check uint8

const (
	notNaN         check = iota // any real but NaN
	finite                      // not NaN, not ±Inf
	positive                    // > 0 (may be +Inf)
	positiveFinite              // > 0 and finite
	nonnegative                 // ≥ 0 (may be +Inf)
	nonnegFinite                // ≥ 0 and finite
	unitInterval                // in [0, 1]
	binary                      // 0 or 1
	notPlusInf                  // not NaN, not +Inf (-Inf allowed)
)

// argSpec describes one argument of a univariate family.
type argSpec struct {
	name  string // as in the signature table: "sigma"
	role  string // for messages: "scale"
	check check
}

// violation returns why x fails c, or "" when it satisfies it.
func (c check) violation(x float64) string {
	switch {
	case math.IsNaN(x):
		return "must not be NaN"
	case c == finite && math.IsInf(x, 0):
		return "must be finite"
	case (c == positive || c == positiveFinite) && !(x > 0):
		return "must be positive"
	case (c == nonnegative || c == nonnegFinite) && x < 0:
		return "must be nonnegative"
	case (c == positiveFinite || c == nonnegFinite) && math.IsInf(x, 1):
		return "must be finite"
	case c == unitInterval && (x < 0 || x > 1):
		return "must be in [0, 1]"
	case c == binary && x != 0 && x != 1:
		return "must be 0 or 1"
	case c == notPlusInf && math.IsInf(x, 1):
		return "must not be +Inf"
	}
	return ""
}

// all reports whether every element of xs satisfies c: violation's rules
// in one loop per requirement, for the common case where every element
// passes (violation then says which does not, and why).
func (c check) all(xs []float64) bool {
	ok := true
	switch c {
	case notNaN:
		for _, x := range xs {
			ok = ok && x == x
		}
	case finite:
		for _, x := range xs {
			ok = ok && x-x == 0
		}
	case positive:
		for _, x := range xs {
			ok = ok && x > 0
		}
	case positiveFinite:
		for _, x := range xs {
			ok = ok && x > 0 && x <= math.MaxFloat64
		}
	default:
		for _, x := range xs {
			if c.violation(x) != "" {
				return false
			}
		}
	}
	return ok
}

// arg is one argument of a vectorized call: a scalar (broadcast) or a
// container of n elements.
type arg struct {
	spec   argSpec
	n      int  // number of elements
	scalar bool // an int or a real: broadcast over the other arguments
	stride int  // 0 for a scalar, 1 for a container
	ints   []int
	c      float64        // the value of an int scalar
	ad     autodiff.Value // for reals
	isReal bool
	f      []float64 // values of a real argument, once fetched
}

// at returns the argument's value at element i of the broadcast.
func (a *arg) at(i int) float64 {
	j := i * a.stride
	switch {
	case a.f != nil:
		return a.f[j]
	case a.ints != nil:
		return float64(a.ints[j])
	}
	return a.c
}

// label renders the argument with a 1-based index when it is a container:
// "sigma[3]" or "sigma".
func (a *arg) label(i int) string {
	if a.scalar {
		return a.spec.name
	}
	return fmt.Sprintf("%s[%d]", a.spec.name, i+1)
}

// makeArg wraps v. Reals (scalars, vectors, row vectors, real arrays)
// are on the tape; ints are read directly.
func makeArg(spec argSpec, v stdlib.Value) arg {
	a := arg{spec: spec}
	switch {
	case v.Type == lang.IntType:
		a.scalar, a.n, a.c = true, 1, float64(v.Int)
	case v.Type.Base == lang.Int:
		a.n, a.stride, a.ints = len(v.Ints), 1, v.Ints
	default:
		a.isReal, a.ad = true, v.AD
		a.n = v.AD.Len()
		a.scalar = v.Type.IsScalar()
		if !a.scalar {
			a.stride = 1
		}
	}
	return a
}

// fmtNum renders a number in messages.
func fmtNum(x float64) string { return fmt.Sprintf("%g", x) }

// errorf returns an error prefixed by the function name.
func errorf(fn, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{fn}, args...)...)
}

// domainError reports element i of a violating its check.
func domainError(fn string, a *arg, i int, x float64, why string) error {
	return errorf(fn, "%s %s = %s %s", a.spec.role, a.label(i), fmtNum(x), why)
}

// broadcastLen returns the common length of the container arguments (1
// when all are scalars) and whether any is a container, or an error naming
// the two arguments whose lengths differ.
func broadcastLen(fn string, as []arg) (n int, vectorized bool, err error) {
	n = 1
	first := -1
	for k := range as {
		if as[k].scalar {
			continue
		}
		if first < 0 {
			first, n, vectorized = k, as[k].n, true
			continue
		}
		if as[k].n != n {
			return 0, true, errorf(fn, "size mismatch: %s has %d elements but %s has %d",
				as[first].spec.name, n, as[k].spec.name, as[k].n)
		}
	}
	return n, vectorized, nil
}

// checkArgs checks every element of every argument against its spec. The
// real arguments' values must have been fetched.
func checkArgs(fn string, as []arg) error {
	for k := range as {
		a := &as[k]
		if a.f != nil && a.spec.check.all(a.f[:a.n]) {
			continue
		}
		for i := 0; i < a.n; i++ {
			x := a.at(i)
			if why := a.spec.check.violation(x); why != "" {
				return domainError(fn, a, i, x, why)
			}
		}
	}
	return nil
}
