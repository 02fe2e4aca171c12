package stdlib

import (
	"sync"

	"github.com/shmlang/shm/lang"
)

// Builtins returns the table of every built-in function and distribution.
// The table is built once and shared; it must not be modified.
var Builtins = sync.OnceValue(newTable)

var (
	intT   = lang.IntType
	realT  = lang.RealType
	vecT   = lang.VectorType
	rowT   = lang.RowVectorType
	matT   = lang.MatrixType
	strT   = lang.StringType
	intArr = lang.ArrayOf(lang.IntType, 1)
	numP   = Param{Class: Numeric}
	contP  = Param{Class: Container}
	linP   = Param{Class: Linalg}
)

func ex(t lang.Type) Param { return Param{Class: Exact, Type: t} }

func dataP(p Param) Param { p.Data = true; return p }

func sig(result ResultFunc, params ...Param) Sig { return Sig{Params: params, Result: result} }

func newTable() *Table {
	t := &Table{funcs: map[string]*Func{}, families: map[string]*Family{}}
	fn := func(name string, sigs ...Sig) { t.add(&Func{Name: name, Kind: MathFunc, Sigs: sigs}) }

	// Elementwise unary math over any numeric type.
	for _, name := range []string{
		"sqrt", "square", "exp", "log", "log1p", "expm1", "log1m", "inv", "inv_sqrt",
		"inv_square", "inv_logit", "logit", "log_inv_logit", "log1m_inv_logit", "lgamma",
		"tgamma", "digamma", "floor", "ceil", "round", "trunc", "sin", "cos", "tan", "asin",
		"acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
		"Phi", "Phi_approx", "inv_Phi", "cbrt", "exp2", "log2", "log10", "log1m_exp",
		"log1p_exp", "fabs",
	} {
		fn(name, sig(like(0), numP))
	}
	fn("abs", sig(same(0), numP))
	// Binary elementwise functions: matching shapes or scalar with container.
	for _, name := range []string{"pow", "atan2", "fmin", "fmax", "fdim", "fmod", "hypot", "lbeta", "log_diff_exp", "lchoose", "binomial_coefficient_log"} {
		fn(name, Sig{Params: []Param{numP, numP}, Result: broadcast})
	}
	fn("log_sum_exp", sig(fixed(realT), ex(realT), ex(realT)), sig(fixed(realT), contP), sig(fixed(realT), ex(matT)))
	fn("log_mix", sig(fixed(realT), ex(realT), ex(realT), ex(realT)), sig(fixed(realT), ex(vecT), ex(vecT)))
	fn("log_softmax", sig(fixed(vecT), ex(vecT)))
	fn("softmax", sig(fixed(vecT), ex(vecT)))
	fn("is_inf", sig(fixed(intT), ex(realT)))
	fn("is_nan", sig(fixed(intT), ex(realT)))
	fn("step", sig(fixed(realT), ex(realT)))
	fn("int_step", sig(fixed(intT), ex(realT)))
	fn("logical_negation", sig(fixed(intT), ex(realT)))

	// Reductions.
	for _, name := range []string{"sum", "prod"} {
		fn(name, sig(fixed(intT), ex(intArr)), sig(fixed(realT), contP), sig(fixed(realT), ex(matT)))
	}
	for _, name := range []string{"mean", "variance", "sd"} {
		fn(name, sig(fixed(realT), contP), sig(fixed(realT), ex(matT)))
	}
	for _, name := range []string{"min", "max"} {
		fn(name, sig(fixed(intT), ex(intT), ex(intT)), sig(fixed(realT), ex(realT), ex(realT)),
			sig(fixed(intT), ex(intArr)), sig(fixed(realT), contP), sig(fixed(realT), ex(matT)))
	}
	fn("size", sig(fixed(intT), numP))
	fn("num_elements", sig(fixed(intT), numP))
	fn("rows", sig(fixed(intT), linP))
	fn("cols", sig(fixed(intT), linP))
	fn("dims", sig(fixed(intArr), numP))

	// Construction and reshaping.
	fn("rep_vector", sig(fixed(vecT), ex(realT), ex(intT)))
	fn("rep_row_vector", sig(fixed(rowT), ex(realT), ex(intT)))
	fn("rep_matrix", sig(fixed(matT), ex(realT), ex(intT), ex(intT)),
		sig(fixed(matT), ex(vecT), ex(intT)), sig(fixed(matT), ex(rowT), ex(intT)))
	fn("rep_array", sig(arrayOf(0, 1), numP, ex(intT)), sig(arrayOf(0, 2), numP, ex(intT), ex(intT)),
		sig(arrayOf(0, 3), numP, ex(intT), ex(intT), ex(intT)))
	fn("to_vector", sig(fixed(vecT), contP), sig(fixed(vecT), ex(matT)))
	fn("to_row_vector", sig(fixed(rowT), contP), sig(fixed(rowT), ex(matT)))
	fn("to_matrix", sig(fixed(matT), ex(matT)), sig(fixed(matT), linP, ex(intT), ex(intT)),
		sig(fixed(matT), ex(lang.ArrayOf(realT, 2))), sig(fixed(matT), ex(lang.ArrayOf(rowT, 1))))
	fn("to_array_1d", sig(fixed(intArr), ex(intArr)), sig(fixed(intArr), ex(lang.ArrayOf(intT, 2))),
		sig(fixed(lang.ArrayOf(realT, 1)), numP))
	fn("to_int", sig(fixed(intT), ex(realT)))
	fn("append_row", sig(fixed(vecT), ex(vecT), ex(vecT)), sig(fixed(vecT), ex(realT), ex(vecT)),
		sig(fixed(vecT), ex(vecT), ex(realT)), sig(fixed(matT), ex(matT), ex(matT)),
		sig(fixed(matT), ex(rowT), ex(rowT)), sig(fixed(matT), ex(matT), ex(rowT)), sig(fixed(matT), ex(rowT), ex(matT)))
	fn("append_col", sig(fixed(rowT), ex(rowT), ex(rowT)), sig(fixed(rowT), ex(realT), ex(rowT)),
		sig(fixed(rowT), ex(rowT), ex(realT)), sig(fixed(matT), ex(matT), ex(matT)),
		sig(fixed(matT), ex(vecT), ex(vecT)), sig(fixed(matT), ex(matT), ex(vecT)), sig(fixed(matT), ex(vecT), ex(matT)))
	fn("append_array", Sig{Params: []Param{numP, numP}, Result: func(a []lang.Type) (lang.Type, bool) {
		if a[0].Dims == 0 {
			return lang.BadType, false
		}
		if a[0] == a[1] {
			return a[0], true
		}
		if a[0].Promoted() == a[1].Promoted() {
			return a[0].Promoted(), true
		}
		return lang.BadType, false
	}})
	fn("head", sig(same(0), contP, ex(intT)))
	fn("tail", sig(same(0), contP, ex(intT)))
	fn("segment", sig(same(0), contP, ex(intT), ex(intT)))
	fn("reverse", sig(same(0), contP))
	fn("sort_asc", sig(same(0), contP))
	fn("sort_desc", sig(same(0), contP))
	fn("sort_indices_asc", sig(fixed(intArr), contP))
	fn("sort_indices_desc", sig(fixed(intArr), contP))
	fn("rank", sig(fixed(intT), contP, ex(intT)))
	fn("cumulative_sum", sig(same(0), contP))
	fn("linspaced_vector", sig(fixed(vecT), ex(intT), ex(realT), ex(realT)))
	fn("linspaced_row_vector", sig(fixed(rowT), ex(intT), ex(realT), ex(realT)))
	fn("linspaced_array", sig(fixed(lang.ArrayOf(realT, 1)), ex(intT), ex(realT), ex(realT)))
	fn("one_hot_vector", sig(fixed(vecT), ex(intT), ex(intT)))
	fn("zeros_vector", sig(fixed(vecT), ex(intT)))
	fn("ones_vector", sig(fixed(vecT), ex(intT)))

	// Linear algebra.
	fn("dot_product", sig(fixed(realT), contP, contP))
	fn("dot_self", sig(fixed(realT), contP))
	fn("squared_distance", sig(fixed(realT), contP, contP))
	fn("distance", sig(fixed(realT), contP, contP))
	fn("columns_dot_self", sig(fixed(rowT), ex(matT)))
	fn("rows_dot_self", sig(fixed(vecT), ex(matT)))
	fn("diag_matrix", sig(fixed(matT), ex(vecT)))
	fn("eigenvalues_sym", sig(fixed(vecT), ex(matT)))
	fn("eigenvectors_sym", sig(fixed(matT), ex(matT)))
	fn("quad_form_diag", sig(fixed(matT), ex(matT), ex(vecT)), sig(fixed(matT), ex(matT), ex(rowT)))
	fn("sub_col", sig(fixed(vecT), ex(matT), ex(intT), ex(intT), ex(intT)))
	fn("sub_row", sig(fixed(rowT), ex(matT), ex(intT), ex(intT), ex(intT)))
	fn("gp_exp_quad_cov",
		sig(fixed(matT), ex(lang.ArrayOf(realT, 1)), ex(realT), ex(realT)),
		sig(fixed(matT), ex(lang.ArrayOf(realT, 1)), ex(lang.ArrayOf(realT, 1)), ex(realT), ex(realT)),
		sig(fixed(matT), ex(lang.ArrayOf(vecT, 1)), ex(realT), ex(realT)),
		sig(fixed(matT), ex(lang.ArrayOf(vecT, 1)), ex(lang.ArrayOf(vecT, 1)), ex(realT), ex(realT)))
	fn("diagonal", sig(fixed(vecT), ex(matT)))
	fn("identity_matrix", sig(fixed(matT), ex(intT)))
	fn("transpose", sig(fixed(rowT), ex(vecT)), sig(fixed(vecT), ex(rowT)), sig(fixed(matT), ex(matT)))
	fn("inverse", sig(fixed(matT), ex(matT)))
	fn("determinant", sig(fixed(realT), ex(matT)))
	fn("log_determinant", sig(fixed(realT), ex(matT)))
	fn("cholesky_decompose", sig(fixed(matT), ex(matT)))
	fn("mdivide_left_tri_low", sig(fixed(vecT), ex(matT), ex(vecT)), sig(fixed(matT), ex(matT), ex(matT)))
	fn("mdivide_right_tri_low", sig(fixed(rowT), ex(rowT), ex(matT)), sig(fixed(matT), ex(matT), ex(matT)))
	fn("crossprod", sig(fixed(matT), ex(matT)))
	fn("tcrossprod", sig(fixed(matT), ex(matT)))
	fn("quad_form", sig(fixed(realT), ex(matT), ex(vecT)), sig(fixed(matT), ex(matT), ex(matT)))
	fn("quad_form_sym", sig(fixed(realT), ex(matT), ex(vecT)), sig(fixed(matT), ex(matT), ex(matT)))
	fn("inverse_spd", sig(fixed(matT), ex(matT)))
	fn("mdivide_left_spd", sig(fixed(vecT), ex(matT), ex(vecT)), sig(fixed(matT), ex(matT), ex(matT)))
	fn("mdivide_right_spd", sig(fixed(rowT), ex(rowT), ex(matT)), sig(fixed(matT), ex(matT), ex(matT)))
	fn("diag_pre_multiply", sig(fixed(matT), ex(vecT), ex(matT)))
	fn("diag_post_multiply", sig(fixed(matT), ex(matT), ex(vecT)))
	fn("multiply_lower_tri_self_transpose", sig(fixed(matT), ex(matT)))
	fn("block", sig(fixed(matT), ex(matT), ex(intT), ex(intT), ex(intT), ex(intT)))
	fn("col", sig(fixed(vecT), ex(matT), ex(intT)))
	fn("row", sig(fixed(rowT), ex(matT), ex(intT)))

	// Constants.
	for _, name := range []string{"pi", "e", "sqrt2", "log2", "log10", "not_a_number", "positive_infinity", "negative_infinity", "machine_precision"} {
		fn(name, sig(fixed(realT)))
	}
	t.add(&Func{Name: "target", Kind: MathFunc, ModelOnly: true, Sigs: []Sig{sig(fixed(realT))}})

	// Vectorized random draws (shm extensions): std_normal_rng(n), uniform_rng(n).
	for _, f := range families() {
		t.addFamily(f)
	}
	t.add(&Func{Name: "std_normal_rng", Kind: RNG, Family: t.families["std_normal"], Suffix: "_rng",
		Sigs: []Sig{sig(fixed(vecT), ex(intT))}})
	t.add(&Func{Name: "uniform_rng", Kind: RNG, Family: t.families["uniform"], Suffix: "_rng",
		Sigs: []Sig{sig(fixed(vecT), ex(intT))}})

	t.addPrimitives()
	return t
}

// addPrimitives registers the paper's primitives and crn.
func (t *Table) addPrimitives() {
	// otNamed are the named parameters of sinkhorn and its companions;
	// with channels, the log-weights may also be arrays of vectors (one
	// problem per channel on the same points, the values summed).
	otNamed := func(channels bool) []NamedParam {
		var also []lang.Type
		if channels {
			also = []lang.Type{lang.ArrayOf(vecT, 1)}
		}
		return []NamedParam{
			{Name: "eps", Type: realT, Data: true, Required: true},
			{Name: "iters", Type: intT, Data: true, Default: "100; with tol, the cap: 10000"},
			{Name: "tol", Type: realT, Data: true, Default: "absent (iters iterations); present: iterate to convergence"},
			{Name: "rho", Type: realT, Data: true, Default: "absent (balanced)"},
			{Name: "log_a", Type: vecT, Also: also, Default: "uniform, -log n"},
			{Name: "log_b", Type: vecT, Also: also, Default: "uniform, -log m"},
			{Name: "grad", Type: strT, Choices: []string{"unrolled", "envelope"}, Default: "unrolled; with tol, envelope (the only one)"},
			{Name: "backend", Type: strT, Choices: []string{"auto", "cpu", "cuda"}, Default: "auto"},
		}
	}
	pts := Param{Name: "x", Class: Points}
	ptsY := Param{Name: "y", Class: Points}
	for _, p := range []struct {
		name     string
		result   lang.Type
		channels bool
	}{{"sinkhorn", realT, true}, {"sinkhorn_ot", realT, true}, {"sinkhorn_plan", matT, false}} {
		t.add(&Func{Name: p.name, Kind: Primitive, Named: otNamed(p.channels),
			Sigs: []Sig{{Params: []Param{pts, ptsY}, Result: fixed(p.result)}}})
	}
	t.add(&Func{Name: "resolution", Kind: Primitive, Sigs: []Sig{sig(fixed(realT), pts)}})
	t.add(&Func{Name: "grid_points", Kind: Primitive, Sigs: []Sig{
		sig(fixed(matT), dataP(exactP("h", intT)), dataP(exactP("w", intT)))}})
	t.add(&Func{Name: "window_bilinear", Kind: Primitive, Sigs: []Sig{
		sig(fixed(matT), exactP("img", matT), exactP("r", realT), exactP("c", realT),
			dataP(exactP("h", intT)), dataP(exactP("w", intT)))}})
	t.add(&Func{Name: "gaussian_blur", Kind: Primitive, Sigs: []Sig{
		sig(fixed(matT), exactP("img", matT), dataP(exactP("size", intT)), dataP(exactP("sigma", realT)))}})
	t.add(&Func{Name: "crn", Kind: CRN,
		Named: []NamedParam{{Name: "seed", Type: intT, Data: true, Default: "derived from --seed"}},
		Sigs:  []Sig{sig(like(1), dataP(exactP("K", intT)), Param{Name: "expr", Class: Numeric})}})
}
