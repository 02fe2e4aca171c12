package dist

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/stdlib"
)

// violations returns values that break check c, with the reason given.
func violations(c check) []struct {
	x   float64
	why string
} {
	type v = struct {
		x   float64
		why string
	}
	nan := v{math.NaN(), "must not be NaN"}
	switch c {
	case notNaN:
		return []v{nan}
	case finite:
		return []v{nan, {math.Inf(1), "must be finite"}, {math.Inf(-1), "must be finite"}}
	case positive:
		return []v{nan, {0, "must be positive"}, {-1, "must be positive"}}
	case positiveFinite:
		return []v{nan, {0, "must be positive"}, {-1, "must be positive"}, {math.Inf(1), "must be finite"}}
	case nonnegative:
		return []v{{-1, "must be nonnegative"}}
	case nonnegFinite:
		return []v{nan, {-1, "must be nonnegative"}, {math.Inf(1), "must be finite"}}
	case unitInterval:
		return []v{nan, {1.5, "must be in [0, 1]"}, {-0.5, "must be in [0, 1]"}}
	case binary:
		return []v{{2, "must be 0 or 1"}, {-1, "must be 0 or 1"}}
	case notPlusInf:
		return []v{nan, {math.Inf(1), "must not be +Inf"}}
	}
	return nil
}

// TestDomainErrors breaks every checked argument of every univariate
// family, as a scalar and as element 3 of a container, in every density,
// cdf and RNG, and checks the message.
func TestDomainErrors(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	seen := map[string]bool{}
	count := 0
	for _, f := range append(continuousFamilies(), discreteFamilies()...) {
		fam := table.Family(f.name)
		var base []float64
		for _, tc := range uniCases() {
			if tc.fam == f.name {
				base = tc.x
				break
			}
		}
		seen[f.name] = true
		names := suffixes(fam)
		_, lup := densityNames(fam.Discrete)
		names = append(names, lup, "_rng")
		for k, spec := range f.args {
			for _, bad := range violations(spec.check) {
				if isIntArg(fam, k) && (math.IsNaN(bad.x) || math.IsInf(bad.x, 0)) {
					continue // ints cannot be NaN
				}
				for _, vectorized := range []bool{false, true} {
					for _, suffix := range names {
						if suffix == "_rng" && k == 0 {
							continue
						}
						name := f.name + suffix
						c := newContext(1)
						var args []stdlib.Value
						for j, x := range base {
							if suffix == "_rng" && j == 0 {
								continue
							}
							if j == k {
								x = bad.x
							}
							switch {
							case j == k && vectorized && isIntArg(fam, j):
								args = append(args, intsV(int(base[j]), int(base[j]), int(x)))
							case j == k && vectorized:
								args = append(args, vecV(c, base[j], base[j], x))
							case isIntArg(fam, j):
								args = append(args, intV(int(x)))
							default:
								args = append(args, realV(c, x))
							}
						}
						label := spec.name
						if vectorized {
							label += "[3]"
						}
						want := fmt.Sprintf("%s: %s %s = %s %s", name, spec.role, label, fmtNum(bad.x), bad.why)
						_, err := m[name](c, args, nil)
						if err == nil || err.Error() != want {
							t.Errorf("%s with %s = %g: error %v, want %q", name, label, bad.x, err, want)
						}
						count++
					}
				}
			}
		}
	}
	if len(seen) != 23 || count < 300 {
		t.Errorf("checked %d domain errors over %d families", count, len(seen))
	}
}

func TestOtherErrors(t *testing.T) {
	m := registered()
	c := newContext(1)
	tp := c.Tape
	id2 := matV(c, 2, 1, 0, 0, 1)
	v2 := vecV(c, 0.1, 0.2)
	v3 := vecV(c, 0.1, 0.2, 0.3)
	lower3 := lkjCorrCholeskyRng(c.RNG, 3, 1)
	cases := []struct {
		name string
		args []stdlib.Value
		want string
	}{
		{"normal_lpdf", []stdlib.Value{v3, v2, realV(c, 1)}, "normal_lpdf: size mismatch: y has 3 elements but mu has 2"},
		{"normal_rng", []stdlib.Value{v3, realArrV(c, 1, 2)}, "normal_rng: size mismatch: mu has 3 elements but sigma has 2"},
		{"poisson_lpmf", []stdlib.Value{intsV(1, 2), v3}, "poisson_lpmf: size mismatch: n has 2 elements but lambda has 3"},
		{"uniform_lpdf", []stdlib.Value{realV(c, 0.5), realV(c, 1), realV(c, 0.5)},
			"uniform_lpdf: upper bound beta = 0.5 must be greater than lower bound alpha = 1"},
		{"uniform_rng", []stdlib.Value{realV(c, 1), vecV(c, 2, 1)},
			"uniform_rng: upper bound beta[2] = 1 must be greater than lower bound alpha = 1"},
		{"binomial_lpmf", []stdlib.Value{intV(5), intV(3), realV(c, 0.5)},
			"binomial_lpmf: outcome n = 5 must be at most number of trials N = 3"},
		{"binomial_logit_lpmf", []stdlib.Value{intsV(1, 5), intV(3), realV(c, 0.5)},
			"binomial_logit_lpmf: outcome n[2] = 5 must be at most number of trials N = 3"},
		{"poisson_rng", []stdlib.Value{realV(c, 1<<31)}, "poisson_rng: rate lambda = 2.147483648e+09 must be less than 2^30"},
		{"poisson_log_rng", []stdlib.Value{realV(c, 25)}, "poisson_log_rng: rate exp(alpha) = 7.200489933738588e+10 must be less than 2^30"},
		{"neg_binomial_2_log_rng", []stdlib.Value{realV(c, 800), realV(c, 1)}, "neg_binomial_2_log_rng: log location eta is too large"},
		{"std_normal_rng", []stdlib.Value{intV(-1)}, "std_normal_rng: size must be non-negative, got -1"},
		{"uniform_rng", []stdlib.Value{intV(-2)}, "uniform_rng: size must be non-negative, got -2"},

		{"multi_normal_lpdf", []stdlib.Value{v2, v2, matV(c, 2, 1, 0.5, 0.4, 1)},
			"multi_normal_lpdf: covariance matrix Sigma is not symmetric: Sigma[1,2] = 0.5 but Sigma[2,1] = 0.4"},
		{"multi_normal_lpdf", []stdlib.Value{v2, v2, matV(c, 2, 1, 2, 2, 1)},
			"multi_normal_lpdf: covariance matrix Sigma is not positive definite"},
		{"multi_normal_lpdf", []stdlib.Value{v2, v2, matV(c, 2, 1, math.NaN(), math.NaN(), 1)},
			"multi_normal_lpdf: covariance matrix Sigma[1,2] = NaN must be finite"},
		{"multi_normal_lpdf", []stdlib.Value{v3, v2, id2}, "multi_normal_lpdf: size mismatch: y has 3 elements but Sigma is 2×2"},
		{"multi_normal_lpdf", []stdlib.Value{v2, vecArr(tp, tp.ConstVec([]float64{1, 2}), tp.ConstVec([]float64{1})), id2},
			"multi_normal_lpdf: size mismatch: mu[2] has 1 elements but Sigma is 2×2"},
		{"multi_normal_lpdf", []stdlib.Value{vecArr(tp, tp.ConstVec([]float64{1, 2})), vecArr(tp, tp.ConstVec([]float64{1, 2}), tp.ConstVec([]float64{1, 2})), id2},
			"multi_normal_lpdf: size mismatch: y has 1 vectors but mu has 2"},
		{"multi_normal_lpdf", []stdlib.Value{v2, v2, matV(c, 3, 1, 0, 0, 0, 1, 0)}, "multi_normal_lpdf: Sigma must be square, got 2×3"},
		{"multi_normal_lpdf", []stdlib.Value{vecV(c, 1, math.NaN()), v2, id2}, "multi_normal_lpdf: random variable y[2] = NaN must be finite"},
		{"multi_normal_lpdf", []stdlib.Value{v2, vecArr(tp, tp.ConstVec([]float64{math.Inf(1), 2})), id2},
			"multi_normal_lpdf: location mu[1][1] = +Inf must be finite"},
		{"multi_normal_cholesky_lpdf", []stdlib.Value{v2, v2, matV(c, 2, 1, 0, 0.5, -1)},
			"multi_normal_cholesky_lpdf: Cholesky factor L[2,2] = -1 must be positive"},
		{"multi_normal_cholesky_lpdf", []stdlib.Value{v2, v2, matV(c, 2, 1, 0, math.Inf(1), 1)},
			"multi_normal_cholesky_lpdf: Cholesky factor L[2,1] = +Inf must be finite"},
		{"multi_normal_rng", []stdlib.Value{v2, matV(c, 2, 1, 2, 2, 1)}, "multi_normal_rng: covariance matrix Sigma is not positive definite"},
		{"multi_normal_rng", []stdlib.Value{v2, matV(c, 2, 1, 0.5, 0.4, 1)},
			"multi_normal_rng: covariance matrix Sigma is not symmetric: Sigma[1,2] = 0.5 but Sigma[2,1] = 0.4"},
		{"multi_normal_rng", []stdlib.Value{v2, matV(c, 2, 1, math.NaN(), math.NaN(), 1)}, "multi_normal_rng: covariance matrix Sigma[1,2] = NaN must be finite"},
		{"multi_normal_cholesky_rng", []stdlib.Value{v2, matV(c, 2, 1, 0, 0, math.Inf(-1))}, "multi_normal_cholesky_rng: L[2,2] = -Inf must be finite"},
		{"multi_normal_cholesky_rng", []stdlib.Value{v3, id2}, "multi_normal_cholesky_rng: size mismatch: mu has 3 elements but L is 2×2"},

		{"dirichlet_lpdf", []stdlib.Value{vecV(c, 0.5, 0.6), v2}, "dirichlet_lpdf: theta is not a valid simplex: its elements sum to 1.1"},
		{"dirichlet_lpdf", []stdlib.Value{vecV(c, 1.5, -0.5), v2}, "dirichlet_lpdf: simplex theta[1] = 1.5 must be in [0, 1]"},
		{"dirichlet_lpdf", []stdlib.Value{vecV(c, 0.5, 0.5), vecV(c, 1, 0)}, "dirichlet_lpdf: prior sample size alpha[2] = 0 must be positive"},
		{"dirichlet_lpdf", []stdlib.Value{vecV(c, 0.5, 0.5), v3}, "dirichlet_lpdf: size mismatch: theta has 2 elements but alpha has 3"},
		{"dirichlet_rng", []stdlib.Value{vecV(c, 1, math.Inf(1))}, "dirichlet_rng: prior sample size alpha[2] = +Inf must be finite"},
		{"categorical_lpmf", []stdlib.Value{intV(3), vecV(c, 0.5, 0.5)}, "categorical_lpmf: outcome y = 3 must be in 1:2"},
		{"categorical_lpmf", []stdlib.Value{intsV(1, 0), vecV(c, 0.5, 0.5)}, "categorical_lpmf: outcome y[2] = 0 must be in 1:2"},
		{"categorical_lpmf", []stdlib.Value{intV(1), vecV(c, 0.5, 0.6)}, "categorical_lpmf: theta is not a valid simplex: its elements sum to 1.1"},
		{"categorical_rng", []stdlib.Value{vecV(c, 0.5, 0.4)}, "categorical_rng: theta is not a valid simplex: its elements sum to 0.9"},

		{"lkj_corr_cholesky_lpdf", []stdlib.Value{matV(c, 2, 1, 0.1, 0, 1), realV(c, 1)}, "lkj_corr_cholesky_lpdf: L is not lower triangular: L[1,2] = 0.1"},
		{"lkj_corr_cholesky_lpdf", []stdlib.Value{matV(c, 2, 1, 0, 0.6, -0.8), realV(c, 1)}, "lkj_corr_cholesky_lpdf: L[2,2] = -0.8 must be positive"},
		{"lkj_corr_cholesky_lpdf", []stdlib.Value{matV(c, 2, 1, 0, 0.6, 0.9), realV(c, 1)},
			"lkj_corr_cholesky_lpdf: L is not the Cholesky factor of a correlation matrix: row 2 has squared norm 1.17"},
		{"lkj_corr_cholesky_lpdf", []stdlib.Value{matV(c, 3, lower3...), realV(c, 0)}, "lkj_corr_cholesky_lpdf: shape eta = 0 must be positive"},
		{"lkj_corr_cholesky_lpdf", []stdlib.Value{matV(c, 3, 1, 0, 0, 0, 1, 0), realV(c, 1)}, "lkj_corr_cholesky_lpdf: L must be square, got 2×3"},
		{"lkj_corr_cholesky_rng", []stdlib.Value{intV(0), realV(c, 1)}, "lkj_corr_cholesky_rng: dimension K = 0 must be positive"},
		{"lkj_corr_cholesky_rng", []stdlib.Value{intV(3), realV(c, math.NaN())}, "lkj_corr_cholesky_rng: shape eta = NaN must not be NaN"},
	}
	for _, tc := range cases {
		_, err := m[tc.name](c, tc.args, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}

	// Draws where draws are not allowed.
	noRNG := &stdlib.Context{Tape: autodiff.NewTape()}
	for _, name := range []string{"normal_rng", "std_normal_rng", "categorical_rng", "dirichlet_rng", "lkj_corr_cholesky_rng", "multi_normal_rng", "uniform_rng"} {
		var args []stdlib.Value
		switch name {
		case "normal_rng":
			args = []stdlib.Value{realV(c, 0), realV(c, 1)}
		case "std_normal_rng":
			args = []stdlib.Value{intV(3)}
		case "uniform_rng":
			args = []stdlib.Value{intV(3)}
		case "categorical_rng", "dirichlet_rng":
			args = []stdlib.Value{vecV(c, 0.5, 0.5)}
		case "lkj_corr_cholesky_rng":
			args = []stdlib.Value{intV(2), realV(c, 1)}
		case "multi_normal_rng":
			args = []stdlib.Value{v2, id2}
		}
		noRNG.Tape = c.Tape
		_, err := m[name](noRNG, args, nil)
		if want := name + ": random draws are not allowed here"; err == nil || err.Error() != want {
			t.Errorf("%s without an RNG: error %v, want %q", name, err, want)
		}
	}
}

// TestVectorDrawSizeLimit checks that std_normal_rng(n) and uniform_rng(n)
// refuse an n beyond half of the machine's memory before drawing.
func TestVectorDrawSizeLimit(t *testing.T) {
	limit := sysmem.MaxElements()
	if limit <= 0 {
		t.Skip("the machine's memory is unknown")
	}
	m := registered()
	for _, name := range []string{"std_normal_rng", "uniform_rng"} {
		_, err := m[name](newContext(1), []stdlib.Value{intV(int(limit) + 1)}, nil)
		if err == nil || !strings.Contains(err.Error(), name+": a result of") || !strings.Contains(err.Error(), "more than half of this machine's memory") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}
