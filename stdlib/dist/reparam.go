package dist

import (
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	mathlib "github.com/shmlang/shm/stdlib/math"
)

// Reparameterized draws. Inside crn(...) (stdlib.Context.Noise set) the
// _rng of a family marked reparameterizable in the signature table
// (stdlib.Family.Reparam) draws as a differentiable function of its
// parameters and of standard noise from the replicate's stream:
// normal(mu, sigma) is mu + sigma·z, uniform(a, b) is a + (b − a)·u, and
// so on, recorded on the tape, so that a simulator's loss has exact
// gradients with respect to the parameters.

// reparamFunc is a family's reparameterized draw: p are its parameters on
// the tape (scalars, or vectors of the draw's length), z its noise.
type reparamFunc func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error)

// noise is the standard noise of one draw: n values, a vector when the
// draw is vectorized.
type noise struct {
	t      *autodiff.Tape
	src    stdlib.Noise
	n      int
	vector bool
}

// constant makes a constant of the draw's shape.
func (z *noise) constant(xs []float64) autodiff.Value {
	if z.vector {
		return z.t.ConstVec(xs)
	}
	return z.t.Const(xs[0])
}

func (z *noise) normal() autodiff.Value  { return z.constant(z.src.Normal(z.n)) }
func (z *noise) uniform() autodiff.Value { return z.constant(z.src.Uniform(z.n)) }

// shifted is mu + sigma·x for the location-scale families (p = mu, sigma).
func shifted(t *autodiff.Tape, p []autodiff.Value, x autodiff.Value) autodiff.Value {
	return t.Add(p[0], t.Mul(p[1], x))
}

// reparams are the reparameterized draws, by family.
var reparams = map[string]reparamFunc{
	"normal": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return shifted(t, p, z.normal()), nil
	},
	"std_normal": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return z.normal(), nil
	},
	"lognormal": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return t.Exp(shifted(t, p, z.normal())), nil
	},
	"half_normal": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return t.Mul(p[0], t.Unary(autodiff.Abs, z.normal())), nil
	},
	"uniform": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return t.Add(p[0], t.Mul(t.Sub(p[1], p[0]), z.uniform())), nil
	},
	"exponential": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return t.Div(t.Neg(t.Log(z.uniform())), p[0]), nil
	},
	"cauchy": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		// mu + sigma·tan(π(u − ½))
		return shifted(t, p, t.Unary(autodiff.Tan, t.Mul(t.Const(math.Pi), t.Sub(z.uniform(), t.Const(0.5))))), nil
	},
	"logistic": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		return shifted(t, p, t.Unary(autodiff.Logit, z.uniform())), nil
	},
	"double_exponential": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		// mu − sigma·sign(u − ½)·log(1 − 2|u − ½|), the noise term
		// computed on plain numbers.
		u := z.src.Uniform(z.n)
		w := make([]float64, len(u))
		for i, x := range u {
			s := 1.0
			if x < 0.5 {
				s = -1
			}
			w[i] = -s * math.Log(1-2*math.Abs(x-0.5))
		}
		return shifted(t, p, z.constant(w)), nil
	},
	"weibull": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		// sigma·(−log u)^(1/alpha)
		return t.Mul(p[1], t.Pow(t.Neg(t.Log(z.uniform())), t.Div(t.Const(1), p[0]))), nil
	},
	"student_t": func(t *autodiff.Tape, p []autodiff.Value, z *noise) (autodiff.Value, error) {
		// mu + sigma·x/sqrt(V/nu) with V ~ chi-square(nu) held fixed: nu
		// must be data.
		if !p[0].IsConst() {
			return autodiff.Value{}, errorf("student_t_rng", "inside crn(...), nu must be data (it has no reparameterization)")
		}
		nu := t.Val(p[0])
		x := z.normal()
		v := make([]float64, z.n)
		for i := range v {
			df := nu[min(i, len(nu)-1)]
			v[i] = math.Sqrt(z.src.ChiSquare(df) / df)
		}
		return shifted(t, p[1:], t.Div(x, z.constant(v))), nil
	},
}

// reparamDraw is a family's _rng inside crn(...), its arguments read and
// checked (drawArgs): its reparameterized draw.
func reparamDraw(c *stdlib.Context, fn string, draw reparamFunc, as []arg, n int, vectorized bool) (stdlib.Value, error) {
	t := c.Tape
	p := make([]autodiff.Value, len(as))
	for k := range as {
		p[k] = tapeValue(t, &as[k])
	}
	out, err := draw(t, p, &noise{t: t, src: c.Noise, n: n, vector: vectorized})
	if err != nil {
		return stdlib.Value{}, err
	}
	if err := t.Err(); err != nil {
		return stdlib.Value{}, errorf(fn, "%v", err)
	}
	return stdlib.ADValue(out), nil
}

// tapeValue returns an argument as a tape value (ints as constants).
func tapeValue(t *autodiff.Tape, a *arg) autodiff.Value {
	switch {
	case a.isReal:
		return a.ad
	case a.ints != nil:
		xs := make([]float64, len(a.ints))
		for i, n := range a.ints {
			xs[i] = float64(n)
		}
		return t.ConstVec(xs)
	}
	return t.Const(a.c)
}

// countDraw is the reparameterized draw of the count forms
// std_normal_rng(n) and uniform_rng(n) (shm extensions): n standard
// normal or uniform values, constants on the tape.
func countDraw(c *stdlib.Context, name string, k int) stdlib.Value {
	xs := c.Noise.Uniform
	if name == "std_normal_rng" {
		xs = c.Noise.Normal
	}
	return stdlib.ADValue(c.Tape.ConstVec(xs(k)))
}

// multiNormalReparam is the reparameterized draw of multi_normal_rng and
// multi_normal_cholesky_rng: mu + L·z for each location, with L the
// Cholesky factor of Sigma on the tape (or L as given) and z standard
// normal noise of mu's length.
func multiNormalReparam(c *stdlib.Context, fn string, mus []autodiff.Value, single bool, m autodiff.Value, cholesky bool) (stdlib.Value, error) {
	t := c.Tape
	l := m
	if !cholesky {
		f, err := mathlib.Cholesky(t, m)
		if err != nil {
			return stdlib.Value{}, errorf(fn, "%v", err)
		}
		l = f.AD
	}
	draws := make([]stdlib.Value, len(mus))
	for i, mu := range mus {
		draws[i] = stdlib.ADValue(t.Add(mu, t.MatMul(l, t.ConstVec(c.Noise.Normal(mu.Len())))))
	}
	if err := t.Err(); err != nil {
		return stdlib.Value{}, errorf(fn, "%v", err)
	}
	if single {
		return draws[0], nil
	}
	return stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Elems: draws, Dims: []int{len(draws)}}, nil
}
