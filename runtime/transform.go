package runtime

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// bounds are the evaluated constraint of a declaration; absent parts are
// invalid Values. Infinite scalar bounds count as absent, as in Stan.
type bounds struct {
	lo, hi         autodiff.Value
	offset, mult   autodiff.Value
	hasLo, hasHi   bool
	hasOff, hasMul bool
}

// evalBounds evaluates the constraint expressions of d.
func (ev *evaluator) evalBounds(d *ir.Decl) (bounds, error) {
	var b bounds
	t := ev.tape()
	get := func(e ir.Expr, inf float64) (autodiff.Value, bool, error) {
		if e == nil {
			return autodiff.Value{}, false, nil
		}
		v, err := ev.expr(e)
		if err != nil {
			return autodiff.Value{}, false, err
		}
		ad := ev.toAD(v)
		if ad.Len() == 1 && t.Scalar(ad) == inf {
			return autodiff.Value{}, false, nil
		}
		return ad, true, nil
	}
	var err error
	if b.lo, b.hasLo, err = get(d.Lower, math.Inf(-1)); err != nil {
		return b, err
	}
	if b.hi, b.hasHi, err = get(d.Upper, math.Inf(1)); err != nil {
		return b, err
	}
	if b.hasLo && b.hasHi {
		// Bounds in the wrong order (they may depend on parameters: a
		// domain error, as in Stan).
		lo, hi := t.Val(b.lo), t.Val(b.hi)
		for i := range max(len(lo), len(hi)) {
			l, h := lo[min(i, len(lo)-1)], hi[min(i, len(hi)-1)]
			if !(l < h) {
				where := d.Var.Name
				if len(lo) > 1 || len(hi) > 1 {
					where = fmt.Sprintf("%s[%d]", d.Var.Name, i+1)
				}
				return b, ev.domainf(d.Pos, "the lower bound of %s (%g) must be below its upper bound (%g)", where, l, h)
			}
		}
	}
	if b.offset, b.hasOff, err = get(d.Offset, math.NaN()); err != nil {
		return b, err
	}
	if b.mult, b.hasMul, err = get(d.Multiplier, math.NaN()); err != nil {
		return b, err
	}
	return b, nil
}

// constrain maps the unconstrained tape value u to the constrained scale
// of bounds b and returns the log absolute Jacobian determinant as a
// scalar (a constant 0 when there is no constraint).
func constrain(t *autodiff.Tape, u autodiff.Value, b bounds) (x, logJ autodiff.Value) {
	switch {
	case b.hasLo && b.hasHi:
		// x = lo + (hi − lo)·inv_logit(u);
		// log J = log(hi − lo) + log_inv_logit(u) + log1m_inv_logit(u).
		width := t.Sub(b.hi, b.lo)
		x = t.Add(b.lo, t.Mul(width, t.Unary(autodiff.InvLogit, u)))
		terms := t.Add(t.Unary(autodiff.LogInvLogit, u), t.Unary(autodiff.Log1mInvLogit, u))
		logJ = t.Add(t.Sum(terms), sumBroadcast(t, t.Log(width), u.Len()))
	case b.hasLo:
		x = t.Add(b.lo, t.Exp(u))
		logJ = t.Sum(u)
	case b.hasHi:
		x = t.Sub(b.hi, t.Exp(u))
		logJ = t.Sum(u)
	case b.hasOff || b.hasMul:
		x = u
		logJ = t.Const(0)
		if b.hasMul {
			x = t.Mul(b.mult, x)
			logJ = sumBroadcast(t, t.Log(b.mult), u.Len())
		}
		if b.hasOff {
			x = t.Add(b.offset, x)
		}
	default:
		return u, t.Const(0)
	}
	return x, logJ
}

// sumBroadcast sums v as if it were broadcast to n elements.
func sumBroadcast(t *autodiff.Tape, v autodiff.Value, n int) autodiff.Value {
	if v.Len() == 1 {
		return t.Mul(t.Const(float64(n)), scalarOf(t, v))
	}
	return t.Sum(v)
}

// unconstrain maps constrained numbers x (with bound values lo, hi,
// offset, mult: each of length 1 or len(x), nil when absent) back to the
// unconstrained scale, for user-given initial values.
func unconstrain(x, lo, hi, off, mult []float64) ([]float64, error) {
	// A bound has one value, one per element, or one per element of an
	// array's vector (repeating over the array in row-major order).
	at := func(v []float64, i int) float64 { return v[i%len(v)] }
	u := make([]float64, len(x))
	for i, xi := range x {
		switch {
		case lo != nil && hi != nil:
			l, h := at(lo, i), at(hi, i)
			if xi <= l || xi >= h {
				return nil, fmt.Errorf("element %d = %g is not strictly inside (%g, %g)", i+1, xi, l, h)
			}
			p := (xi - l) / (h - l)
			u[i] = math.Log(p) - math.Log1p(-p)
		case lo != nil:
			l := at(lo, i)
			if xi <= l {
				return nil, fmt.Errorf("element %d = %g is not above the lower bound %g", i+1, xi, l)
			}
			u[i] = math.Log(xi - l)
		case hi != nil:
			h := at(hi, i)
			if xi >= h {
				return nil, fmt.Errorf("element %d = %g is not below the upper bound %g", i+1, xi, h)
			}
			u[i] = math.Log(h - xi)
		default:
			v := xi
			if off != nil {
				v -= at(off, i)
			}
			if mult != nil {
				v /= at(mult, i)
			}
			u[i] = v
		}
	}
	return u, nil
}

// checkBounds verifies that every element of v satisfies the declared
// constraint of d (lower and upper only), returning an error that names
// the variable, the 1-based index and the bound.
func (ev *evaluator) checkBounds(d *ir.Decl, v stdlib.Value) error {
	if d.Special != lang.NoSpecial {
		return checkSpecial(d, fullDims(ev.tape(), v), ev.flatValues(v))
	}
	if d.Lower == nil && d.Upper == nil {
		return nil
	}
	b, err := ev.evalBounds(d)
	if err != nil {
		return err
	}
	t := ev.tape()
	vals := ev.flatValues(v)
	var lo, hi []float64
	if b.hasLo {
		lo = t.Val(b.lo)
	}
	if b.hasHi {
		hi = t.Val(b.hi)
	}
	dims := fullDims(t, v)
	for i, x := range vals {
		if lo != nil {
			if l := lo[min(i, len(lo)-1)]; !(x >= l) {
				return fmt.Errorf("%s%s = %g violates lower=%g", d.Var.Name, indexText(dims, i), x, l)
			}
		}
		if hi != nil {
			if h := hi[min(i, len(hi)-1)]; !(x <= h) {
				return fmt.Errorf("%s%s = %g violates upper=%g", d.Var.Name, indexText(dims, i), x, h)
			}
		}
	}
	return nil
}

// flatValues returns the numbers of a value in row-major order.
func (ev *evaluator) flatValues(v stdlib.Value) []float64 {
	t := ev.tape()
	switch {
	case v.Type == lang.IntType:
		return []float64{float64(v.Int)}
	case v.Type.Base == lang.Int:
		out := make([]float64, len(v.Ints))
		for i, n := range v.Ints {
			out[i] = float64(n)
		}
		return out
	case v.Type.Dims > 0 && v.Type.Base.IsLinalg():
		var out []float64
		for _, el := range v.Elems {
			out = append(out, t.Val(el.AD)...)
		}
		return out
	}
	return append([]float64(nil), t.Val(v.AD)...)
}

// indexText renders the 1-based index of row-major element k of a value
// with the given dims, as "[2, 3]" ("" for a scalar).
func indexText(dims []int, k int) string {
	if len(dims) == 0 {
		return ""
	}
	idx := make([]int, len(dims))
	for j := len(dims) - 1; j >= 0; j-- {
		if dims[j] > 0 {
			idx[j] = k%dims[j] + 1
			k /= dims[j]
		}
	}
	s := "["
	for j, i := range idx {
		if j > 0 {
			s += ", "
		}
		s += fmt.Sprint(i)
	}
	return s + "]"
}
