package dist

import (
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/mathext"
)

// a describes one argument of a test call.
type a struct {
	kind string // "int", "ints", "real", "vec", "mat" (square)
	vals []float64
	live bool // an independent variable rather than a constant
}

func rl(x float64) a         { return a{kind: "real", vals: []float64{x}} }
func rlLive(x float64) a     { return a{kind: "real", vals: []float64{x}, live: true} }
func vc(xs ...float64) a     { return a{kind: "vec", vals: xs} }
func vcLive(xs ...float64) a { return a{kind: "vec", vals: xs, live: true} }
func mt(xs ...float64) a     { return a{kind: "mat", vals: xs} }
func mtLive(xs ...float64) a { return a{kind: "mat", vals: xs, live: true} }
func in(n int) a             { return a{kind: "int", vals: []float64{float64(n)}} }
func ins(ns ...float64) a    { return a{kind: "ints", vals: ns} }

func (s a) value(tp *autodiff.Tape) stdlib.Value {
	switch s.kind {
	case "int":
		return intV(int(s.vals[0]))
	case "ints":
		ns := make([]int, len(s.vals))
		for i, x := range s.vals {
			ns[i] = int(x)
		}
		return intsV(ns...)
	case "real":
		if s.live {
			return stdlib.RealValue(tp.Var(s.vals[0]))
		}
		return stdlib.RealValue(tp.Const(s.vals[0]))
	case "vec":
		if s.live {
			return stdlib.ADValue(tp.VarVec(s.vals))
		}
		return stdlib.ADValue(tp.ConstVec(s.vals))
	}
	k := int(math.Round(math.Sqrt(float64(len(s.vals)))))
	if s.live {
		return stdlib.ADValue(tp.NewVar(autodiff.MatrixShape(k, k), s.vals))
	}
	return stdlib.ADValue(tp.NewConst(autodiff.MatrixShape(k, k), s.vals))
}

func evalWith(t *testing.T, m stdlib.Impls, name string, propto bool, args []a) float64 {
	t.Helper()
	tp := autodiff.NewTape()
	vs := make([]stdlib.Value, len(args))
	for i, s := range args {
		vs[i] = s.value(tp)
	}
	v, err := m[name](&stdlib.Context{Tape: tp, Propto: propto}, vs, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tp.Scalar(v.AD)
}

// TestPropto checks that _lupdf (and _lpdf under Context.Propto) differs
// from _lpdf by exactly the constant terms, computed here by hand.
func TestPropto(t *testing.T) {
	m := registered()
	lg := lgam
	half2pi := 0.5 * math.Log(2*math.Pi)
	lchooseT := func(n, k float64) float64 { return lg(n+1) - lg(k+1) - lg(n-k+1) }
	cases := []struct {
		fam     string
		args    []a
		dropped float64 // lpdf - lupdf; NaN: the whole lpdf (all constant)
	}{
		{"normal", []a{rlLive(0.7), rl(-0.2), rl(1.3)}, -math.Log(1.3) - half2pi},
		{"normal", []a{vcLive(0.7, 0.1, -1), rl(-0.2), rl(1.3)}, 3 * (-math.Log(1.3) - half2pi)},
		{"normal", []a{rl(0.7), rl(-0.2), rlLive(1.3)}, -half2pi},
		{"normal", []a{rl(0.7), rl(-0.2), rl(1.3)}, math.NaN()},
		{"normal", []a{rlLive(0.7), rlLive(-0.2), rlLive(1.3)}, -half2pi},
		{"std_normal", []a{vcLive(0.3, 0.4)}, -2 * half2pi},
		{"student_t", []a{rlLive(0.8), rl(3.5), rl(0.3), rl(1.7)}, lg(2.25) - lg(1.75) - 0.5*math.Log(3.5) - 0.5*math.Log(math.Pi) - math.Log(1.7)},
		{"student_t", []a{rlLive(0.8), rlLive(3.5), rl(0.3), rl(1.7)}, -0.5*math.Log(math.Pi) - math.Log(1.7)},
		{"cauchy", []a{rl(1.2), rlLive(-0.5), rl(2)}, -math.Log(math.Pi) - math.Log(2)},
		{"double_exponential", []a{rlLive(0.3), rl(1), rl(0.8)}, -math.Log(2) - math.Log(0.8)},
		{"logistic", []a{rlLive(0.3), rl(-0.4), rl(1.5)}, -math.Log(1.5)},
		{"lognormal", []a{rl(1.7), rlLive(0.2), rl(0.6)}, -half2pi - math.Log(0.6) - math.Log(1.7)},
		{"exponential", []a{rlLive(0.9), rl(1.6)}, math.Log(1.6)},
		{"gamma", []a{rlLive(1.3), rl(2.5), rl(1.7)}, -lg(2.5) + 2.5*math.Log(1.7)},
		{"gamma", []a{rl(1.3), rl(2.5), rlLive(1.7)}, -lg(2.5) + 1.5*math.Log(1.3)},
		{"inv_gamma", []a{rlLive(0.8), rl(3), rl(2)}, -lg(3) + 3*math.Log(2)},
		{"weibull", []a{rlLive(1.1), rl(1.8), rl(1.4)}, math.Log(1.8) - 1.8*math.Log(1.4)},
		{"beta", []a{rlLive(0.35), rl(2.5), rl(1.5)}, lg(4) - lg(2.5) - lg(1.5)},
		{"uniform", []a{rlLive(0.5), rl(-0.3), rl(1.2)}, -math.Log(1.5)},
		{"chi_square", []a{rlLive(2.2), rl(3.5)}, -(1.75*math.Log(2) + lg(1.75))},
		{"half_normal", []a{rlLive(0.9), rl(1.3)}, 0.5*math.Log(2/math.Pi) - math.Log(1.3)},
		{"bernoulli", []a{in(1), rl(0.3)}, math.NaN()},
		{"bernoulli", []a{in(1), rlLive(0.3)}, 0},
		{"bernoulli_logit", []a{ins(1, 0), rlLive(0.3)}, 0},
		{"binomial", []a{in(3), in(10), rlLive(0.35)}, lchooseT(10, 3)},
		{"binomial_logit", []a{ins(3, 4), ins(10, 10), rlLive(-0.6)}, lchooseT(10, 3) + lchooseT(10, 4)},
		{"poisson", []a{in(4), rlLive(3.2)}, -lg(5)},
		{"poisson_log", []a{in(4), rlLive(1.1)}, -lg(5)},
		{"neg_binomial_2", []a{in(5), rlLive(3.5), rl(2.2)}, lg(7.2) - lg(2.2) - lg(6)},
		{"neg_binomial_2", []a{in(5), rl(3.5), rlLive(2.2)}, -lg(6) + 5*math.Log(3.5)},
		{"neg_binomial_2_log", []a{in(5), rlLive(1.2), rl(2.2)}, lg(7.2) - lg(2.2) - lg(6)},
		{"categorical", []a{ins(1, 3), vc(0.2, 0.5, 0.3)}, math.NaN()},
		{"categorical", []a{ins(1, 3), vcLive(0.2, 0.5, 0.3)}, 0},
		{"multi_normal", []a{vcLive(0.3, -0.5), vc(0, 0.2), mt(2, 0.3, 0.3, 1)}, -0.5*math.Log(2*1-0.09) - 2*half2pi},
		{"multi_normal", []a{vcLive(0.3, -0.5), vc(0, 0.2), mtLive(2, 0.3, 0.3, 1)}, -2 * half2pi},
		{"multi_normal_cholesky", []a{vcLive(0.3, -0.5), vc(0, 0.2), mt(1.5, 0, 0.3, 0.8)}, -math.Log(1.5) - math.Log(0.8) - 2*half2pi},
		{"dirichlet", []a{vcLive(0.2, 0.5, 0.3), vc(1.5, 2, 0.7)}, lg(4.2) - lg(1.5) - lg(2) - lg(0.7)},
		{"lkj_corr_cholesky", []a{mtLive(1, 0, 0.6, 0.8), rl(2.5)}, -((2*2.5-1)*math.Log(2) + mathext.Lbeta(2.5, 2.5))},
	}
	for _, tc := range cases {
		fam := stdlib.Builtins().Family(tc.fam)
		lp, lup := densityNames(fam.Discrete)
		full := evalWith(t, m, tc.fam+lp, false, tc.args)
		reduced := evalWith(t, m, tc.fam+lup, false, tc.args)
		viaContext := evalWith(t, m, tc.fam+lp, true, tc.args)
		want := tc.dropped
		if math.IsNaN(want) {
			want = full
		}
		if got := full - reduced; !close(got, want, 1e-12) {
			t.Errorf("%s %v: %s - %s = %.15g, want %.15g", tc.fam, tc.args, lp, lup, got, want)
		}
		if viaContext != reduced {
			t.Errorf("%s: %s with Context.Propto = %.15g, %s = %.15g", tc.fam, lp, viaContext, lup, reduced)
		}
		if cdf := tc.fam + "_lcdf"; m[cdf] != nil && len(tc.args) > 0 {
			if a, b := evalWith(t, m, cdf, false, tc.args), evalWith(t, m, cdf, true, tc.args); a != b {
				t.Errorf("%s depends on Context.Propto: %g vs %g", cdf, a, b)
			}
		}
	}
}
