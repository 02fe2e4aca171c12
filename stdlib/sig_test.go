package stdlib

import (
	"strings"
	"testing"

	"github.com/shmlang/shm/lang"
)

// The built-ins language.md lists as the minimum set.
const (
	mathNames = `abs sqrt square exp log log1p expm1 log1m inv inv_logit logit
  log_inv_logit lgamma tgamma pow fmin fmax floor ceil round sin cos tan
  tanh atan2 erf erfc Phi Phi_approx log_sum_exp log_softmax softmax`
	containerNames = `sum mean sd variance min max prod size
  num_elements rows cols dims rep_vector rep_row_vector rep_matrix rep_array
  to_vector to_row_vector to_matrix to_array_1d append_row append_col head
  tail segment reverse sort_asc sort_desc rank cumulative_sum linspaced_vector
  dot_product dot_self squared_distance distance diag_matrix diagonal
  transpose inverse determinant log_determinant cholesky_decompose
  mdivide_left_tri_low crossprod tcrossprod quad_form`
	familyNames = `normal std_normal student_t cauchy
  double_exponential logistic lognormal exponential gamma inv_gamma weibull
  beta uniform chi_square half_normal bernoulli
  bernoulli_logit binomial binomial_logit poisson poisson_log neg_binomial_2
  neg_binomial_2_log categorical multi_normal multi_normal_cholesky dirichlet
  lkj_corr_cholesky`
	primitiveNames = `sinkhorn sinkhorn_ot sinkhorn_plan resolution grid_points window_bilinear gaussian_blur crn`
)

func TestLanguageBuiltinsExist(t *testing.T) {
	tab := Builtins()
	for _, name := range strings.Fields(mathNames + " " + containerNames + " " + primitiveNames) {
		if tab.Lookup(name) == nil {
			t.Errorf("built-in %s is missing", name)
		}
	}
	for _, name := range strings.Fields(familyNames) {
		f := tab.Family(name)
		if f == nil {
			t.Errorf("distribution %s is missing", name)
			continue
		}
		for _, suffix := range []string{f.Suffix(), "_rng"} {
			if tab.Lookup(name+suffix) == nil {
				t.Errorf("%s%s is missing", name, suffix)
			}
		}
		if f.CDF {
			for _, suffix := range []string{"_cdf", "_lcdf", "_lccdf"} {
				if tab.Lookup(name+suffix) == nil {
					t.Errorf("%s%s is missing", name, suffix)
				}
			}
		}
	}
}

func TestParamAccepts(t *testing.T) {
	var (
		i, r, v, rv, m = lang.IntType, lang.RealType, lang.VectorType, lang.RowVectorType, lang.MatrixType
		ai, ar, av     = lang.ArrayOf(i, 1), lang.ArrayOf(r, 1), lang.ArrayOf(v, 1)
		ar2            = lang.ArrayOf(r, 2)
	)
	tests := []struct {
		p    Param
		t    lang.Type
		ok   bool
		cost int
	}{
		{Param{Class: Exact, Type: r}, i, true, 1},
		{Param{Class: Exact, Type: r}, r, true, 0},
		{Param{Class: Exact, Type: i}, r, false, 0},
		{Param{Class: Exact, Type: ar}, ai, true, 1},
		{Param{Class: Reals}, i, true, 0},
		{Param{Class: Reals}, rv, true, 0},
		{Param{Class: Reals}, ar, true, 0},
		{Param{Class: Reals}, m, false, 0},
		{Param{Class: Reals}, ar2, false, 0},
		{Param{Class: Reals}, av, false, 0},
		{Param{Class: Ints}, ai, true, 0},
		{Param{Class: Ints}, r, false, 0},
		{Param{Class: Vectors}, av, true, 0},
		{Param{Class: Vectors}, ar, false, 0},
		{Param{Class: Points}, v, true, 0},
		{Param{Class: Points}, m, true, 0},
		{Param{Class: Points}, av, true, 0},
		{Param{Class: Points}, rv, false, 0},
		{Param{Class: Container}, ai, true, 0},
		{Param{Class: Container}, m, false, 0},
		{Param{Class: Linalg}, m, true, 0},
		{Param{Class: Numeric}, lang.StringType, false, 0},
	}
	for _, tt := range tests {
		cost, ok := tt.p.Accepts(tt.t)
		if ok != tt.ok || (ok && cost != tt.cost) {
			t.Errorf("%s accepts %s: got (%d, %v), want (%d, %v)", tt.p.Describe(), tt.t, cost, ok, tt.cost, tt.ok)
		}
	}
}

func TestResultRules(t *testing.T) {
	tab := Builtins()
	rng := tab.Lookup("normal_rng").Sigs[0].Result
	if got, _ := rng([]lang.Type{lang.RealType, lang.IntType}); got != lang.RealType {
		t.Errorf("normal_rng(real, int) = %s", got)
	}
	if got, _ := rng([]lang.Type{lang.VectorType, lang.RealType}); got != lang.VectorType {
		t.Errorf("normal_rng(vector, real) = %s", got)
	}
	prng := tab.Lookup("poisson_rng").Sigs[0].Result
	if got, _ := prng([]lang.Type{lang.VectorType}); got != lang.ArrayOf(lang.IntType, 1) {
		t.Errorf("poisson_rng(vector) = %s", got)
	}
	if _, ok := broadcast([]lang.Type{lang.VectorType, lang.MatrixType}); ok {
		t.Error("pow(vector, matrix) accepted")
	}
	if got, _ := broadcast([]lang.Type{lang.IntType, lang.VectorType}); got != lang.VectorType {
		t.Errorf("pow(int, vector) = %s", got)
	}
	sk := tab.Lookup("sinkhorn")
	if p := sk.NamedParam("eps"); p == nil || !p.Required || !p.Data {
		t.Errorf("sinkhorn eps: %+v", p)
	}
	if got := sk.NamedList(); got != "eps, iters, tol, rho, log_a, log_b, grad, backend" {
		t.Errorf("sinkhorn named: %s", got)
	}
}
