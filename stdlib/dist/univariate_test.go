package dist

import (
	"fmt"
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/stat/distuv"
)

// logisticRef takes the log of gonum's Logistic.Prob: gonum v0.17.0's
// Logistic.LogProb ignores Mu and S.
type logisticRef struct{ distuv.Logistic }

func (l logisticRef) LogProb(x float64) float64 { return math.Log(l.Prob(x)) }

type uniCase struct {
	fam string
	x   []float64 // outcome first; ints as float64
	ref refDist
}

func invLogitT(a float64) float64 { return 1 / (1 + math.Exp(-a)) }

func uniCases() []uniCase {
	cauchy := func(mu, s float64) closedForm {
		return closedForm{
			logProb: func(y float64) float64 { z := (y - mu) / s; return -math.Log(math.Pi * s * (1 + z*z)) },
			cdf:     func(y float64) float64 { return 0.5 + math.Atan((y-mu)/s)/math.Pi },
			mean:    math.NaN(), variance: math.NaN(),
		}
	}
	halfNormal := func(s float64) closedForm {
		n := distuv.Normal{Mu: 0, Sigma: s}
		return closedForm{
			logProb: func(y float64) float64 { return math.Log(2) + n.LogProb(y) },
			cdf:     func(y float64) float64 { return 2*n.CDF(y) - 1 },
			mean:    s * math.Sqrt(2/math.Pi), variance: s * s * (1 - 2/math.Pi),
		}
	}
	return []uniCase{
		{"normal", []float64{0.7, -0.2, 1.3}, distuv.Normal{Mu: -0.2, Sigma: 1.3}},
		{"normal", []float64{-9, 0.5, 1.1}, distuv.Normal{Mu: 0.5, Sigma: 1.1}},
		{"std_normal", []float64{0.4}, distuv.Normal{Mu: 0, Sigma: 1}},
		{"std_normal", []float64{-7.5}, distuv.Normal{Mu: 0, Sigma: 1}},
		{"student_t", []float64{0.8, 3.5, 0.3, 1.7}, distuv.StudentsT{Mu: 0.3, Sigma: 1.7, Nu: 3.5}},
		{"student_t", []float64{-2.5, 7, 0, 1}, distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 7}},
		{"student_t", []float64{1.2, 40, 0.5, 0.8}, distuv.StudentsT{Mu: 0.5, Sigma: 0.8, Nu: 40}},
		{"cauchy", []float64{1.2, -0.5, 2}, cauchy(-0.5, 2)},
		{"cauchy", []float64{-30, 0.5, 1.5}, cauchy(0.5, 1.5)},
		{"double_exponential", []float64{0.3, 1, 0.8}, distuv.Laplace{Mu: 1, Scale: 0.8}},
		{"double_exponential", []float64{2.5, 1, 0.8}, distuv.Laplace{Mu: 1, Scale: 0.8}},
		{"logistic", []float64{0.3, -0.4, 1.5}, logisticRef{distuv.Logistic{Mu: -0.4, S: 1.5}}},
		{"lognormal", []float64{1.7, 0.2, 0.6}, distuv.LogNormal{Mu: 0.2, Sigma: 0.6}},
		{"exponential", []float64{0.9, 1.6}, distuv.Exponential{Rate: 1.6}},
		{"gamma", []float64{1.3, 2.5, 1.7}, distuv.Gamma{Alpha: 2.5, Beta: 1.7}},
		{"gamma", []float64{0.4, 0.6, 2}, distuv.Gamma{Alpha: 0.6, Beta: 2}},
		{"gamma", []float64{9, 3, 0.9}, distuv.Gamma{Alpha: 3, Beta: 0.9}},
		{"gamma", []float64{40, 3, 0.9}, distuv.Gamma{Alpha: 3, Beta: 0.9}}, // upper tail: Q < 1e-8
		{"inv_gamma", []float64{0.05, 3, 2}, distuv.InverseGamma{Alpha: 3, Beta: 2}},
		{"chi_square", []float64{0.3, 12}, distuv.ChiSquared{K: 12}},
		{"inv_gamma", []float64{0.8, 3, 2}, distuv.InverseGamma{Alpha: 3, Beta: 2}},
		{"weibull", []float64{1.1, 1.8, 1.4}, distuv.Weibull{K: 1.8, Lambda: 1.4}},
		{"beta", []float64{0.35, 2.5, 1.5}, distuv.Beta{Alpha: 2.5, Beta: 1.5}},
		{"beta", []float64{0.8, 0.7, 3}, distuv.Beta{Alpha: 0.7, Beta: 3}},
		{"beta", []float64{0.45, 20, 25}, distuv.Beta{Alpha: 20, Beta: 25}},
		{"uniform", []float64{0.5, -0.3, 1.2}, distuv.Uniform{Min: -0.3, Max: 1.2}},
		{"chi_square", []float64{2.2, 3.5}, distuv.ChiSquared{K: 3.5}},
		{"half_normal", []float64{0.9, 1.3}, halfNormal(1.3)},
		{"bernoulli", []float64{1, 0.3}, distuv.Bernoulli{P: 0.3}},
		{"bernoulli", []float64{0, 0.3}, distuv.Bernoulli{P: 0.3}},
		{"bernoulli_logit", []float64{1, 0.4}, distuv.Bernoulli{P: invLogitT(0.4)}},
		{"bernoulli_logit", []float64{0, -1.3}, distuv.Bernoulli{P: invLogitT(-1.3)}},
		{"binomial", []float64{3, 10, 0.35}, distuv.Binomial{N: 10, P: 0.35}},
		{"binomial_logit", []float64{3, 10, -0.6}, distuv.Binomial{N: 10, P: invLogitT(-0.6)}},
		{"poisson", []float64{4, 3.2}, distuv.Poisson{Lambda: 3.2}},
		{"poisson", []float64{0, 0.5}, distuv.Poisson{Lambda: 0.5}},
		{"poisson", []float64{31, 20}, distuv.Poisson{Lambda: 20}},
		{"binomial", []float64{48, 50, 0.7}, distuv.Binomial{N: 50, P: 0.7}},
		{"neg_binomial_2", []float64{40, 12, 0.8}, negBin2(12, 0.8)},
		{"neg_binomial_2", []float64{1500, 1400, 30}, negBin2(1400, 30)}, // cdf from the incomplete beta
		{"neg_binomial_2", []float64{1300, 1400, 3.5}, negBin2(1400, 3.5)},
		{"poisson_log", []float64{4, math.Log(3.2)}, distuv.Poisson{Lambda: 3.2}},
		{"neg_binomial_2", []float64{5, 3.5, 2.2}, negBin2(3.5, 2.2)},
		{"neg_binomial_2_log", []float64{5, math.Log(3.5), 2.2}, negBin2(3.5, 2.2)},
	}
}

// isIntArg reports whether argument k of family fam is an int (an int
// outcome or a number of trials).
func isIntArg(fam *stdlib.Family, k int) bool {
	p := fam.Variate
	if k > 0 {
		p = fam.Params[k-1]
	}
	return p.Class == stdlib.Ints
}

func TestUnivariateValues(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	for _, tc := range uniCases() {
		fam := table.Family(tc.fam)
		t.Run(fmt.Sprint(tc.fam, tc.x), func(t *testing.T) {
			c := newContext(1)
			args := make([]stdlib.Value, len(tc.x))
			for k, x := range tc.x {
				if isIntArg(fam, k) {
					args[k] = intV(int(x))
				} else {
					args[k] = realV(c, x)
				}
			}
			y := tc.x[0]
			lp := call(t, m, c, tc.fam+fam.Suffix(), args...)
			if want := tc.ref.LogProb(y); !close(lp, want, 1e-10) {
				t.Errorf("%s%s = %.15g, want %.15g", tc.fam, fam.Suffix(), lp, want)
			}
			if !fam.CDF {
				return
			}
			for _, s := range []struct {
				suffix string
				want   float64
			}{
				{"_cdf", tc.ref.CDF(y)},
				{"_lcdf", math.Log(tc.ref.CDF(y))},
				{"_lccdf", math.Log(tc.ref.Survival(y))},
			} {
				if got := call(t, m, c, tc.fam+s.suffix, args...); !close(got, s.want, 1e-9) {
					t.Errorf("%s%s = %.15g, want %.15g", tc.fam, s.suffix, got, s.want)
				}
			}
		})
	}
}

// layouts of the arguments for vectorized tests: which are containers.
const (
	layoutScalar    = iota // every argument a scalar
	layoutAll              // every argument a container of 3
	layoutOutcome          // the outcome a container, parameters broadcast
	layoutParameter        // the outcome a scalar, the first parameter a container
)

var perturb = [3]float64{1, 1.05, 0.95}

// elemValue is the value of argument k at element i of a layout.
func elemValue(fam *stdlib.Family, x []float64, k, i int) float64 {
	if isIntArg(fam, k) {
		return x[k]
	}
	return x[k] * perturb[i]
}

func isContainer(layout, k int) bool {
	switch layout {
	case layoutAll:
		return true
	case layoutOutcome:
		return k == 0
	case layoutParameter:
		return k == 1
	}
	return false
}

// buildArgs makes the arguments of a layout; real arguments are views of
// the variable vector x when x is valid, constants otherwise. It returns
// the initial values of the variables.
func buildArgs(tp *autodiff.Tape, fam *stdlib.Family, vals []float64, layout int, x autodiff.Value) ([]stdlib.Value, []float64) {
	var x0 []float64
	args := make([]stdlib.Value, len(vals))
	off := 0
	for k := range vals {
		cont := isContainer(layout, k)
		n := 1
		if cont {
			n = 3
		}
		if isIntArg(fam, k) {
			if cont {
				args[k] = intsV(int(vals[k]), int(vals[k]), int(vals[k]))
			} else {
				args[k] = intV(int(vals[k]))
			}
			continue
		}
		for i := 0; i < n; i++ {
			x0 = append(x0, elemValue(fam, vals, k, i))
		}
		var v autodiff.Value
		if x.IsValid() {
			v = tp.Slice(x, off, n)
		} else {
			v = tp.ConstVec(x0[off : off+n])
		}
		off += n
		switch {
		case !cont:
			args[k] = stdlib.RealValue(tp.Index(v, 0))
		case k%3 == 0:
			args[k] = stdlib.ADValue(v)
		case k%3 == 1:
			args[k] = stdlib.Value{Type: lang.ArrayOf(lang.RealType, 1), AD: v, Dims: []int{n}}
		default:
			args[k] = stdlib.ADValue(tp.Transpose(v))
		}
	}
	return args, x0
}

func suffixes(fam *stdlib.Family) []string {
	s := []string{fam.Suffix()}
	if fam.CDF {
		s = append(s, "_cdf", "_lcdf", "_lccdf")
	}
	return s
}

// TestUnivariateVectorized checks that a vectorized call is the sum (or
// for _cdf the product) of the scalar calls at each element.
func TestUnivariateVectorized(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	for _, tc := range uniCases() {
		fam := table.Family(tc.fam)
		for _, suffix := range suffixes(fam) {
			for _, layout := range []int{layoutAll, layoutOutcome, layoutParameter} {
				if layout == layoutParameter && len(tc.x) < 2 {
					continue
				}
				c := newContext(1)
				args, _ := buildArgs(c.Tape, fam, tc.x, layout, autodiff.Value{})
				got := call(t, m, c, tc.fam+suffix, args...)
				want := 0.0
				if suffix == "_cdf" {
					want = 1
				}
				for i := 0; i < 3; i++ {
					sargs := make([]stdlib.Value, len(tc.x))
					for k := range tc.x {
						v := tc.x[k]
						if isContainer(layout, k) {
							v = elemValue(fam, tc.x, k, i)
						}
						if isIntArg(fam, k) {
							sargs[k] = intV(int(v))
						} else {
							sargs[k] = realV(c, v)
						}
					}
					e := call(t, m, c, tc.fam+suffix, sargs...)
					if suffix == "_cdf" {
						want *= e
					} else {
						want += e
					}
				}
				if !close(got, want, 1e-12) {
					t.Errorf("%s%s %v layout %d: vectorized %.15g, sum of elements %.15g", tc.fam, suffix, tc.x, layout, got, want)
				}
			}
		}
	}
}

// TestUnivariateGradients checks every partial derivative against finite
// differences, for every density and cdf, scalar and vectorized.
func TestUnivariateGradients(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	for _, tc := range uniCases() {
		fam := table.Family(tc.fam)
		for _, suffix := range suffixes(fam) {
			for _, layout := range []int{layoutScalar, layoutAll, layoutOutcome, layoutParameter} {
				if layout == layoutParameter && len(tc.x) < 2 {
					continue
				}
				name := tc.fam + suffix
				_, x0 := buildArgs(autodiff.NewTape(), fam, tc.x, layout, autodiff.Value{})
				if len(x0) == 0 {
					continue
				}
				c := newContext(1)
				vargs, _ := buildArgs(c.Tape, fam, tc.x, layout, autodiff.Value{})
				if v := call(t, m, c, name, vargs...); math.IsInf(v, 0) {
					continue // no gradient at a boundary of the support; values are tested above
				}
				var callErr error
				f := func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
					args, _ := buildArgs(tp, fam, tc.x, layout, x)
					v, err := m[name](&stdlib.Context{Tape: tp}, args, nil)
					if err != nil {
						callErr = err
						return tp.Const(math.NaN())
					}
					return v.AD
				}
				if err := autodiff.CheckGradient(f, x0, 1e-6); err != nil {
					t.Errorf("%s %v layout %d: %v (call error: %v)", name, tc.x, layout, err, callErr)
				}
			}
		}
	}
}

// TestOneNode checks that a vectorized density records a single node.
func TestOneNode(t *testing.T) {
	m := registered()
	tp := autodiff.NewTape()
	y := tp.VarVec(make([]float64, 1000))
	mu := tp.Var(0.1)
	sigma := tp.Var(1.5)
	before := tp.NumNodes()
	if _, err := m["normal_lpdf"](&stdlib.Context{Tape: tp}, []stdlib.Value{stdlib.ADValue(y), stdlib.RealValue(mu), stdlib.RealValue(sigma)}, nil); err != nil {
		t.Fatal(err)
	}
	if n := tp.NumNodes() - before; n != 1 {
		t.Errorf("normal_lpdf over 1000 elements recorded %d nodes, want 1", n)
	}
}

// TestIntOutcomes checks int and array[] int arguments of continuous
// families (promoted to real), which take the generic loop.
func TestIntOutcomes(t *testing.T) {
	m := registered()
	for _, fam := range []string{"normal", "cauchy", "logistic"} {
		for _, suffix := range []string{"_lpdf", "_lupdf", "_lcdf"} {
			c := newContext(1)
			name := fam + suffix
			mu := stdlib.RealValue(c.Tape.Var(0.5))
			got := call(t, m, c, name, intsV(1, 2, -3), mu, intV(2))
			want := call(t, m, c, name, vecV(c, 1, 2, -3), mu, realV(c, 2))
			if !close(got, want, 1e-14) {
				t.Errorf("%s with int arguments = %.15g, with reals %.15g", name, got, want)
			}
		}
	}
}

// TestBoundaryOutcomes checks densities at the edge of their support where
// the term (a-1) log y vanishes: finite values and partials.
func TestBoundaryOutcomes(t *testing.T) {
	m := registered()
	for _, tc := range []struct {
		name string
		x    []float64
		want float64
	}{
		{"gamma_lpdf", []float64{0, 1, 2}, math.Log(2)},        // exponential(2) at 0
		{"chi_square_lpdf", []float64{0, 2}, -math.Log(2)},     // exponential(1/2) at 0
		{"beta_lpdf", []float64{0, 1, 3}, math.Log(3)},         // 3(1-y)^2 at 0
		{"beta_lpdf", []float64{1, 2, 1}, math.Log(2)},         // 2y at 1
		{"weibull_lpdf", []float64{0, 1, 0.5}, math.Log(2)},    // exponential(2) at 0
		{"gamma_lpdf", []float64{-1, 1, 2}, math.Inf(-1)},      // outside the support
		{"uniform_lpdf", []float64{2, 0, 1}, math.Inf(-1)},     // outside the support
		{"half_normal_lpdf", []float64{-0.1, 1}, math.Inf(-1)}, // outside the support
		{"inv_gamma_lpdf", []float64{0, 1, 1}, math.Inf(-1)},   // y ≤ 0
		{"lognormal_lpdf", []float64{0, 0, 1}, math.Inf(-1)},   // y = 0
		{"poisson_lpmf", []float64{2, 0}, math.Inf(-1)},        // zero rate
		{"binomial_lpmf", []float64{3, 5, 0}, math.Inf(-1)},    // θ = 0
		{"binomial_lpmf", []float64{0, 5, 0}, 0},               // θ = 0, n = 0
	} {
		tp := autodiff.NewTape()
		fam := stdlib.Builtins().Lookup(tc.name).Family
		args := make([]stdlib.Value, len(tc.x))
		for k, x := range tc.x {
			if isIntArg(fam, k) {
				args[k] = intV(int(x))
			} else {
				args[k] = stdlib.RealValue(tp.Var(x))
			}
		}
		v, err := m[tc.name](&stdlib.Context{Tape: tp}, args, nil)
		if err != nil {
			t.Errorf("%s%v: %v", tc.name, tc.x, err)
			continue
		}
		got := tp.Scalar(v.AD)
		if !close(got, tc.want, 1e-12) {
			t.Errorf("%s%v = %g, want %g", tc.name, tc.x, got, tc.want)
		}
		if err := tp.Gradient(v.AD); err != nil {
			t.Fatal(err)
		}
		g := make([]float64, tp.NumVars())
		if err := tp.VarGrad(g); err != nil {
			t.Fatal(err)
		}
		for i, d := range g[:1] {
			if math.IsNaN(d) || math.IsInf(d, 0) && !math.IsInf(tc.want, -1) {
				t.Errorf("%s%v: partial %d = %g", tc.name, tc.x, i, d)
			}
		}
	}
}
