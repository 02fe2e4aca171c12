package dist

import (
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/stdlib"
)

// regression sets up the likelihood of a linear regression with n
// observations: y ~ normal(mu, sigma) with mu and sigma parameters.
func regression(n int) (y, mu []float64) {
	r := rand.New(rand.NewPCG(1, 2))
	y = make([]float64, n)
	mu = make([]float64, n)
	for i := range y {
		mu[i] = r.NormFloat64()
		y[i] = mu[i] + 0.5*r.NormFloat64()
	}
	return y, mu
}

// evalRegression records y ~ normal(mu, sigma) on a reset tape and runs
// the backward pass.
func evalRegression(c *stdlib.Context, f stdlib.Impl, yc autodiff.Value, mu []float64, args []stdlib.Value) error {
	tp := c.Tape
	tp.Reset()
	args[0] = stdlib.ADValue(yc)
	args[1] = stdlib.ADValue(tp.VarVec(mu))
	args[2] = stdlib.RealValue(tp.Var(0.7))
	v, err := f(c, args, nil)
	if err != nil {
		return err
	}
	return tp.Gradient(v.AD)
}

// TestNoAllocationSteadyState checks that evaluating a vectorized density
// and its gradient again on a reset tape allocates nothing.
func TestNoAllocationSteadyState(t *testing.T) {
	m := registered()
	y, mu := regression(200)
	tp := autodiff.NewTape()
	yc := tp.ConstVec(y)
	if err := tp.Keep(); err != nil {
		t.Fatal(err)
	}
	args := make([]stdlib.Value, 3)
	c := &stdlib.Context{Tape: tp, Propto: true}
	var f stdlib.Impl
	for _, name := range []string{"normal_lpdf", "normal_lcdf"} {
		f = m[name]
		if err := evalRegression(c, f, yc, mu, args); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() { _ = evalRegression(c, f, yc, mu, args) })
		if allocs != 0 {
			t.Errorf("%s: %v allocations per evaluation in steady state, want 0", name, allocs)
		}
	}
}

func BenchmarkNormalLpdfVectorized1000(b *testing.B) {
	m := registered()
	y, mu := regression(1000)
	tp := autodiff.NewTape()
	yc := tp.ConstVec(y)
	if err := tp.Keep(); err != nil {
		b.Fatal(err)
	}
	args := make([]stdlib.Value, 3)
	f := m["normal_lpdf"]
	c := &stdlib.Context{Tape: tp, Propto: true}
	b.ReportAllocs()
	for b.Loop() {
		if err := evalRegression(c, f, yc, mu, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalLpdfScalarLoop1000(b *testing.B) {
	m := registered()
	y, mu := regression(1000)
	tp := autodiff.NewTape()
	yc := tp.ConstVec(y)
	if err := tp.Keep(); err != nil {
		b.Fatal(err)
	}
	f := m["normal_lpdf"]
	args := make([]stdlib.Value, 3)
	c := &stdlib.Context{Tape: tp, Propto: true}
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		muv := tp.VarVec(mu)
		sigma := stdlib.RealValue(tp.Var(0.7))
		total := tp.Const(0)
		for i := range y {
			args[0] = stdlib.RealValue(tp.Index(yc, i))
			args[1] = stdlib.RealValue(tp.Index(muv, i))
			args[2] = sigma
			v, err := f(c, args, nil)
			if err != nil {
				b.Fatal(err)
			}
			total = tp.Add(total, v.AD)
		}
		if err := tp.Gradient(total); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGammaLcdf(b *testing.B) {
	m := registered()
	c := newContext(1)
	tp := c.Tape
	y, beta := tp.Const(1.3), tp.Const(1.7)
	if err := tp.Keep(); err != nil {
		b.Fatal(err)
	}
	args := []stdlib.Value{stdlib.RealValue(y), {}, stdlib.RealValue(beta)}
	f := m["gamma_lcdf"]
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		args[1] = stdlib.RealValue(tp.Var(2.5))
		v, err := f(c, args, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := tp.Gradient(v.AD); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBernoulliLogitVectorized1000 measures the generic element loop:
// n ~ bernoulli_logit(alpha) with a vector alpha parameter.
func BenchmarkBernoulliLogitVectorized1000(b *testing.B) {
	m := registered()
	_, alpha := regression(1000)
	ns := make([]int, len(alpha))
	for i := range ns {
		ns[i] = i % 2
	}
	tp := autodiff.NewTape()
	c := &stdlib.Context{Tape: tp, Propto: true}
	f := m["bernoulli_logit_lpmf"]
	args := []stdlib.Value{intsV(ns...), {}}
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		args[1] = stdlib.ADValue(tp.VarVec(alpha))
		v, err := f(c, args, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := tp.Gradient(v.AD); err != nil {
			b.Fatal(err)
		}
	}
}
