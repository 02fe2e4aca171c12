package stdlib

import "github.com/shmlang/shm/lang"

// Result helpers.

// fixed returns t whatever the arguments.
func fixed(t lang.Type) ResultFunc {
	return func([]lang.Type) (lang.Type, bool) { return t, true }
}

// like returns the type of argument i with int promoted to real.
func like(i int) ResultFunc {
	return func(a []lang.Type) (lang.Type, bool) { return a[i].Promoted(), true }
}

// same returns the type of argument i unchanged.
func same(i int) ResultFunc {
	return func(a []lang.Type) (lang.Type, bool) { return a[i], true }
}

// broadcast is the result of a binary elementwise function: the two
// arguments have the same type (up to promotion) or one is a scalar; the
// result is the container type, promoted to real.
func broadcast(a []lang.Type) (lang.Type, bool) {
	x, y := a[0].Promoted(), a[1].Promoted()
	switch {
	case x == y:
		return x, true
	case x.IsScalar():
		return y, true
	case y.IsScalar():
		return x, true
	}
	return lang.BadType, false
}

// arrayOf returns an array of n dimensions of argument i's type.
func arrayOf(i, n int) ResultFunc {
	return func(a []lang.Type) (lang.Type, bool) { return lang.ArrayOf(a[i], n), true }
}

// rngResult is the result of a vectorized _rng: a scalar when every
// argument is a scalar, otherwise a vector of draws (continuous) or an
// array of ints (discrete).
func rngResult(discrete bool) ResultFunc {
	return func(a []lang.Type) (lang.Type, bool) {
		vec := false
		for _, t := range a {
			if !t.IsScalar() {
				vec = true
			}
		}
		switch {
		case !vec && discrete:
			return lang.IntType, true
		case !vec:
			return lang.RealType, true
		case discrete:
			return lang.ArrayOf(lang.IntType, 1), true
		}
		return lang.VectorType, true
	}
}
