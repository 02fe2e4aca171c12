package dist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/stat/distuv"
)

func registered() stdlib.Impls {
	m := stdlib.Impls{}
	Register(m)
	return m
}

func newContext(seed uint64) *stdlib.Context {
	return &stdlib.Context{Tape: autodiff.NewTape(), RNG: rand.New(rand.NewPCG(seed, 7))}
}

func realV(c *stdlib.Context, x float64) stdlib.Value { return stdlib.RealValue(c.Tape.Const(x)) }

func vecV(c *stdlib.Context, xs ...float64) stdlib.Value { return stdlib.ADValue(c.Tape.ConstVec(xs)) }

func intV(n int) stdlib.Value { return stdlib.IntValue(n) }

func intsV(ns ...int) stdlib.Value {
	return stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: ns, Dims: []int{len(ns)}}
}

func realArrV(c *stdlib.Context, xs ...float64) stdlib.Value {
	return stdlib.Value{Type: lang.ArrayOf(lang.RealType, 1), AD: c.Tape.ConstVec(xs), Dims: []int{len(xs)}}
}

func matV(c *stdlib.Context, k int, xs ...float64) stdlib.Value {
	return stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(len(xs)/k, k), xs))
}

// scalarOf returns the real result of a call.
func scalarOf(t *testing.T, c *stdlib.Context, v stdlib.Value) float64 {
	t.Helper()
	if v.Type != lang.RealType {
		t.Fatalf("result type %v, want real", v.Type)
	}
	return c.Tape.Scalar(v.AD)
}

// call evaluates name on args and returns the real result.
func call(t *testing.T, m stdlib.Impls, c *stdlib.Context, name string, args ...stdlib.Value) float64 {
	t.Helper()
	f := m[name]
	if f == nil {
		t.Fatalf("%s not registered", name)
	}
	v, err := f(c, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return scalarOf(t, c, v)
}

// close reports whether a and b agree to tol, relative for large values.
func close(a, b, tol float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

// refDist is an independent implementation of a univariate distribution.
type refDist interface {
	LogProb(x float64) float64
	CDF(x float64) float64
	Survival(x float64) float64
	Mean() float64
	Variance() float64
}

// closedForm is a reference written in the test from the textbook
// formulas.
type closedForm struct {
	logProb, cdf   func(x float64) float64
	mean, variance float64
}

func (d closedForm) LogProb(x float64) float64  { return d.logProb(x) }
func (d closedForm) CDF(x float64) float64      { return d.cdf(x) }
func (d closedForm) Survival(x float64) float64 { return 1 - d.cdf(x) }
func (d closedForm) Mean() float64              { return d.mean }
func (d closedForm) Variance() float64          { return d.variance }

func lgam(x float64) float64 { v, _ := math.Lgamma(x); return v }

// negBin2 is neg_binomial_2(mu, phi) written from its pmf, with the cdf
// from gonum's Binomial-free identity P(X ≤ n) = I_p(phi, n+1),
// p = phi/(mu+phi), computed by summing gonum-independent terms.
func negBin2(mu, phi float64) closedForm {
	lp := func(n float64) float64 {
		return lgam(n+phi) - lgam(n+1) - lgam(phi) + n*math.Log(mu/(mu+phi)) + phi*math.Log(phi/(mu+phi))
	}
	return closedForm{
		logProb: lp,
		cdf: func(x float64) float64 {
			// Σ of the pmf, by the recurrence p(k+1) = p(k) (k+φ)/(k+1) μ/(μ+φ).
			p := math.Exp(phi * math.Log(phi/(mu+phi)))
			s := 0.0
			for k := 0.0; k <= x; k++ {
				s += p
				p *= (k + phi) / (k + 1) * mu / (mu + phi)
			}
			return s
		},
		mean: mu, variance: mu + mu*mu/phi,
	}
}

var _ refDist = distuv.Normal{}
