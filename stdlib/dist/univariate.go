package dist

import (
	"math"
	"math/rand/v2"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// keep says which additive terms of a log density to compute. A term
// that depends on the arguments of mask m (bit k for argument k, the
// outcome being argument 0) is kept unless the call is propto and none of
// those arguments is a parameter, as Stan's include_summand.
type keep struct {
	propto bool
	live   uint8 // bit k: argument k is not constant
}

// has reports whether a term depending on the arguments in m is kept. A
// pure constant (m = 0) is kept only when not propto.
func (k keep) has(m uint8) bool { return !k.propto || k.live&m != 0 }

// Argument masks for the terms of a log density.
const (
	a0 uint8 = 1 << iota // the outcome
	a1                   // first parameter
	a2                   // second parameter
	a3                   // third parameter
)

// univariate is a scalar distribution family, vectorized by the caller.
// Its functions work on one element: x holds the outcome and then the
// parameters (ints converted to float64) and the returned vec holds the
// partial derivatives of the result with respect to each of them (those
// of int arguments are ignored).
type univariate struct {
	name     string
	args     []argSpec // the outcome first
	discrete bool
	// lp is the log density (lpdf or lpmf) with the terms selected by k;
	// its partials are those of the full density. Outcomes outside the
	// support give -Inf.
	lp func(x vec, k keep) (float64, vec)
	// fastNormal selects normalFast, a specialized loop for lp (a direct
	// call, so that the arguments stay on the stack).
	fastNormal bool
	// lcdf and lccdf are log P(Y ≤ y) and log P(Y > y).
	lcdf, lccdf func(x vec) (float64, vec)
	// cross checks a relation between two arguments at one element (n ≤ N,
	// alpha < beta): when it fails it returns the indices of the two
	// arguments and the relation, as "must be at most".
	cross func(x vec) (ka, kb int, relation string)
	// rng draws one value with parameters p (p[0] is the first parameter).
	rng func(r *rand.Rand, p vec) (float64, error)
}

// Density evaluation modes.
type mode uint8

const (
	modeLP mode = iota
	modeLCDF
	modeLCCDF
	modeCDF
)

// density evaluates the family's lpdf/lpmf, lcdf, lccdf or cdf over the
// broadcast of args as one tape node.
func (f *univariate) density(c *stdlib.Context, fn string, vals []stdlib.Value, m mode, propto bool) (stdlib.Value, error) {
	t := c.Tape
	if m == modeLP {
		if v, ok := f.scalarLP(t, vals, propto); ok {
			return v, nil
		}
	}
	var store [4]arg
	as := store[:len(vals)]
	for k := range vals {
		as[k] = makeArg(f.args[k], vals[k])
	}
	n, _, err := broadcastLen(fn, as)
	if err != nil {
		return stdlib.Value{}, err
	}
	for k := range as {
		if as[k].isReal {
			as[k].f = t.Val(as[k].ad)
		}
	}
	if err := checkArgs(fn, as); err != nil {
		return stdlib.Value{}, err
	}
	if f.cross != nil {
		for i := 0; i < n; i++ {
			var x vec
			for k := range as {
				x[k] = as[k].at(i)
			}
			if ka, kb, rel := f.cross(x); rel != "" {
				return stdlib.Value{}, crossError(fn, &as[ka], &as[kb], i, x[ka], x[kb], rel)
			}
		}
	}
	// The node's inputs: the non-constant real arguments.
	var insStore [4]autodiff.Value
	var slot [4]int // input index of argument k, or -1
	ins := insStore[:0]
	var live uint8
	for k := range as {
		slot[k] = -1
		if as[k].isReal && !as[k].ad.IsConst() {
			slot[k] = len(ins)
			ins = append(ins, as[k].ad)
			live |= 1 << k
		}
	}
	kp := keep{propto: propto && m == modeLP, live: live}
	if kp.propto && live == 0 {
		return stdlib.RealValue(t.Const(0)), nil
	}
	p := t.ScalarPartials(ins...)
	// Fetch again: recording the node may have moved the arena.
	for k := range as {
		if as[k].isReal {
			as[k].f = t.Val(as[k].ad)
		}
	}
	var ds [4][]float64
	for k := range as {
		if slot[k] >= 0 {
			ds[k] = p.D(slot[k])
		}
	}
	total := 0.0
	empty := false
	for k := range as {
		if as[k].n == 0 {
			empty = true
		}
	}
	fast := false
	if !empty && m == modeLP && f.fastNormal {
		total, fast = normalFast(as, n, kp, &ds)
	}
	if !empty && !fast {
		for i := 0; i < n; i++ {
			var x vec
			for k := range as {
				x[k] = as[k].at(i)
			}
			var v float64
			var d vec
			switch m {
			case modeLP:
				v, d = f.lp(x, kp)
			case modeLCCDF:
				v, d = f.lccdf(x)
			default:
				v, d = f.lcdf(x)
			}
			if math.IsInf(v, -1) {
				// Outside the support (or a zero probability): the
				// result is -Inf (log) or 0 (cdf) with zero partials.
				for k := range ds {
					clear(ds[k])
				}
				total = v
				break
			}
			total += v
			for k := range as {
				if ds[k] != nil {
					ds[k][i*as[k].stride] += d[k]
				}
			}
		}
	}
	out := p.Out()
	if m == modeCDF {
		cdf := math.Exp(total)
		out[0] = cdf
		for k := range ds {
			for j := range ds[k] {
				ds[k][j] *= cdf
			}
		}
		return stdlib.RealValue(p.Value()), nil
	}
	out[0] = total
	return stdlib.RealValue(p.Value()), nil
}

// scalarLP is density's log density for scalar arguments, the common case
// of a ~ statement in a loop, without the bookkeeping of broadcasting: the
// same terms and partials, computed by the family's lp. ok is false when
// an argument is not a scalar or fails a check; density then takes its
// general path, which reports the failure.
func (f *univariate) scalarLP(t *autodiff.Tape, vals []stdlib.Value, propto bool) (v stdlib.Value, ok bool) {
	var x vec
	var insStore [4]autodiff.Value
	var slot [4]int
	ins := insStore[:0]
	var live uint8
	for k := range vals {
		val := &vals[k]
		slot[k] = -1
		switch val.Type {
		case lang.IntType:
			x[k] = float64(val.Int)
		case lang.RealType:
			x[k] = t.Scalar(val.AD)
			if !val.AD.IsConst() {
				slot[k] = len(ins)
				ins = append(ins, val.AD)
				live |= 1 << k
			}
		default:
			return stdlib.Value{}, false
		}
		if f.args[k].check.violation(x[k]) != "" {
			return stdlib.Value{}, false
		}
	}
	if f.cross != nil {
		if _, _, rel := f.cross(x); rel != "" {
			return stdlib.Value{}, false
		}
	}
	kp := keep{propto: propto, live: live}
	if propto && live == 0 {
		return stdlib.RealValue(t.Const(0)), true
	}
	lp, d := f.lp(x, kp)
	p := t.ScalarPartials(ins...)
	if math.IsInf(lp, -1) {
		// Outside the support: -Inf with zero partials.
		d = vec{}
	}
	for k := range vals {
		if slot[k] >= 0 {
			p.D(slot[k])[0] = d[k]
		}
	}
	p.Out()[0] = lp
	return stdlib.RealValue(p.Value()), true
}

// draw evaluates the family's _rng over the broadcast of its parameters:
// a scalar when all are scalars, otherwise a vector (continuous) or an
// array of ints (discrete) of draws.
func (f *univariate) draw(c *stdlib.Context, fn string, vals []stdlib.Value) (stdlib.Value, error) {
	if c.RNG == nil {
		return stdlib.Value{}, errorf(fn, "random draws are not allowed here")
	}
	var store [4]arg
	as, n, vectorized, err := f.drawArgs(c.Tape, fn, vals, &store)
	if err != nil {
		return stdlib.Value{}, err
	}
	if r := reparams[f.name]; c.Noise != nil && r != nil {
		return reparamDraw(c, fn, r, as, n, vectorized)
	}
	out := make([]float64, n)
	for i := range out {
		var p vec
		for k := range as {
			p[k] = as[k].at(i)
		}
		if out[i], err = f.rng(c.RNG, p); err != nil {
			return stdlib.Value{}, errorf(fn, "%v", err)
		}
	}
	return drawsValue(c.Tape, out, vectorized, f.discrete), nil
}

// drawArgs reads and checks the parameters of a draw: their values, the
// broadcast length n (0 when one is empty) and the relations between them
// at every element.
func (f *univariate) drawArgs(t *autodiff.Tape, fn string, vals []stdlib.Value, store *[4]arg) (as []arg, n int, vectorized bool, err error) {
	as = store[:len(vals)]
	for k := range vals {
		as[k] = makeArg(f.args[k+1], vals[k])
		if as[k].isReal {
			as[k].f = t.Val(as[k].ad)
		}
	}
	if n, vectorized, err = broadcastLen(fn, as); err != nil {
		return nil, 0, false, err
	}
	if err := checkArgs(fn, as); err != nil {
		return nil, 0, false, err
	}
	for k := range as {
		if as[k].n == 0 {
			n = 0
		}
	}
	if f.cross != nil {
		for i := 0; i < n; i++ {
			var x vec
			for k := range as {
				x[k+1] = as[k].at(i)
			}
			if ka, kb, rel := f.cross(x); rel != "" {
				return nil, 0, false, crossError(fn, &as[ka-1], &as[kb-1], i, x[ka], x[kb], rel)
			}
		}
	}
	return as, n, vectorized, nil
}

// drawsValue packs draws as the _rng result: a scalar unless vectorized,
// a vector for continuous families, an array of ints for discrete ones.
func drawsValue(t *autodiff.Tape, out []float64, vectorized, discrete bool) stdlib.Value {
	switch {
	case !vectorized && discrete:
		return stdlib.IntValue(int(out[0]))
	case !vectorized:
		return stdlib.RealValue(t.Const(out[0]))
	case discrete:
		ints := make([]int, len(out))
		for i, x := range out {
			ints[i] = int(x)
		}
		return stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: ints, Dims: []int{len(ints)}}
	}
	return stdlib.ADValue(t.ConstVec(out))
}

// crossError reports a failed relation between two arguments at element i.
func crossError(fn string, a, b *arg, i int, x, y float64, rel string) error {
	return errorf(fn, "%s %s = %s %s %s %s = %s", a.spec.role, a.label(i), fmtNum(x), rel,
		b.spec.role, b.label(i), fmtNum(y))
}
