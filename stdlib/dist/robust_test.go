package dist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// TestNoPanics calls every univariate density, cdf and RNG with random
// arguments, awkward values (NaN, ±Inf, 0, huge) and random container
// lengths (empty and mismatched included): errors are fine, panics are not.
func TestNoPanics(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	r := rand.New(rand.NewPCG(3, 4))
	awkward := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, 1, 0.5, 1e300, -1e300, 1e-300, 3, 40}
	value := func() float64 {
		if r.IntN(2) == 0 {
			return awkward[r.IntN(len(awkward))]
		}
		return r.NormFloat64() * 3
	}
	for _, f := range append(continuousFamilies(), discreteFamilies()...) {
		fam := table.Family(f.name)
		_, lup := densityNames(fam.Discrete)
		for _, suffix := range append(suffixes(fam), lup, "_rng") {
			name := f.name + suffix
			for trial := 0; trial < 60; trial++ {
				c := newContext(uint64(trial))
				c.Propto = trial%2 == 0
				var args []stdlib.Value
				for k := range f.args {
					if suffix == "_rng" && k == 0 {
						continue
					}
					n := -1 // scalar
					if r.IntN(3) == 0 {
						n = r.IntN(4)
					}
					if isIntArg(fam, k) {
						if n < 0 {
							args = append(args, intV(r.IntN(7)-1))
						} else {
							ns := make([]int, n)
							for i := range ns {
								ns[i] = r.IntN(7) - 1
							}
							args = append(args, intsV(ns...))
						}
						continue
					}
					if n < 0 {
						args = append(args, stdlib.RealValue(c.Tape.Var(value())))
						continue
					}
					xs := make([]float64, n)
					for i := range xs {
						xs[i] = value()
					}
					args = append(args, stdlib.ADValue(c.Tape.VarVec(xs)))
				}
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s panicked: %v", name, p)
						}
					}()
					v, err := m[name](c, args, nil)
					if err == nil && v.Type == lang.RealType && !v.AD.IsConst() {
						_ = c.Tape.Gradient(v.AD)
					}
				}()
			}
		}
	}
}

// TestNoPanicsMultivariate calls the multivariate densities and RNGs with
// random shapes (empty ones included) and awkward values.
func TestNoPanicsMultivariate(t *testing.T) {
	m := registered()
	r := rand.New(rand.NewPCG(5, 6))
	awkward := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, 1, 0.5, 1e300}
	value := func() float64 {
		if r.IntN(3) == 0 {
			return awkward[r.IntN(len(awkward))]
		}
		return r.NormFloat64()
	}
	vec := func(c *stdlib.Context, n int) autodiff.Value {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = value()
		}
		if r.IntN(2) == 0 {
			return c.Tape.VarVec(xs)
		}
		return c.Tape.ConstVec(xs)
	}
	matrix := func(c *stdlib.Context, rows, cols int) stdlib.Value {
		xs := make([]float64, rows*cols)
		for i := range xs {
			xs[i] = value()
		}
		if r.IntN(2) == 0 && rows == cols { // often a valid covariance or factor
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					xs[i*cols+j] = 0
				}
				xs[i*cols+i] = 1
			}
		}
		return stdlib.ADValue(c.Tape.NewVar(autodiff.MatrixShape(rows, cols), xs))
	}
	vectorsArg := func(c *stdlib.Context, k int) stdlib.Value {
		if r.IntN(2) == 0 {
			return stdlib.ADValue(vec(c, k+r.IntN(2)*r.IntN(3)))
		}
		n := r.IntN(3)
		el := make([]autodiff.Value, n)
		for i := range el {
			el[i] = vec(c, k)
		}
		return vecArr(c.Tape, el...)
	}
	for trial := 0; trial < 400; trial++ {
		c := newContext(uint64(trial))
		k := r.IntN(4)
		cols := k
		if r.IntN(5) == 0 {
			cols = r.IntN(4)
		}
		calls := []struct {
			name string
			args []stdlib.Value
		}{
			{"multi_normal_lpdf", []stdlib.Value{vectorsArg(c, k), vectorsArg(c, k), matrix(c, k, cols)}},
			{"multi_normal_cholesky_lupdf", []stdlib.Value{vectorsArg(c, k), vectorsArg(c, k), matrix(c, k, cols)}},
			{"multi_normal_rng", []stdlib.Value{vectorsArg(c, k), matrix(c, k, cols)}},
			{"multi_normal_cholesky_rng", []stdlib.Value{vectorsArg(c, k), matrix(c, k, cols)}},
			{"dirichlet_lpdf", []stdlib.Value{stdlib.ADValue(vec(c, k)), stdlib.ADValue(vec(c, cols))}},
			{"dirichlet_rng", []stdlib.Value{stdlib.ADValue(vec(c, k))}},
			{"categorical_lpmf", []stdlib.Value{intsV(r.IntN(4), r.IntN(4)), stdlib.ADValue(vec(c, k))}},
			{"categorical_rng", []stdlib.Value{stdlib.ADValue(vec(c, k))}},
			{"lkj_corr_cholesky_lpdf", []stdlib.Value{matrix(c, k, cols), stdlib.RealValue(c.Tape.Var(value()))}},
			{"lkj_corr_cholesky_rng", []stdlib.Value{intV(k), realV(c, value())}},
		}
		for _, call := range calls {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s (K = %d, %d columns) panicked: %v", call.name, k, cols, p)
					}
				}()
				v, err := m[call.name](c, call.args, nil)
				if err == nil && v.Type == lang.RealType && !v.AD.IsConst() {
					_ = c.Tape.Gradient(v.AD)
				}
			}()
		}
	}
}

// TestCheckAll checks the fast loops of check.all against violation, one
// element at a time and in a slice with a failing element last.
func TestCheckAll(t *testing.T) {
	values := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5, 2, math.MaxFloat64, -math.MaxFloat64, 5e-324}
	for c := notNaN; c <= notPlusInf; c++ {
		for _, x := range values {
			want := c.violation(x) == ""
			if got := c.all([]float64{x}); got != want {
				t.Errorf("check %d, %g: all = %v, violation says %v", c, x, got, want)
			}
			if got := c.all([]float64{0.5, 1, x}); got != (want && c.violation(0.5) == "" && c.violation(1) == "") {
				t.Errorf("check %d, [0.5 1 %g]: all = %v", c, x, got)
			}
		}
	}
}
