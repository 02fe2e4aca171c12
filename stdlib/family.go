package stdlib

import "github.com/shmlang/shm/lang"

// Family is a distribution family such as normal or poisson.
type Family struct {
	Name string
	// Variate is the class of the outcome (the left of ~).
	Variate Param
	// Params are the family's parameters, after the variate.
	Params []Param
	// Discrete families have _lpmf; continuous ones _lpdf.
	Discrete bool
	// CDF is true when _cdf, _lcdf and _lccdf exist (and so truncation).
	CDF bool
	// RNG is false for families without a random number generator.
	RNG bool
	// RNGParams overrides Params for the _rng signature when set (for
	// example lkj_corr_cholesky_rng(K, eta)).
	RNGParams []Param
	// RNGResult overrides the vectorized result of _rng when set.
	RNGResult ResultFunc
	// Reparam is true when inside crn(...) a draw can be written as a
	// differentiable function of its parameters and fixed noise (normal:
	// mu + sigma*z), so that its arguments may depend on parameters.
	// Package dist implements the draw (its reparam.go); a test there
	// checks that the two agree family by family.
	Reparam bool
	// Extension marks families that are not in Stan (half_normal).
	Extension bool
}

// Suffix returns the density suffix of the family: "_lpmf" or "_lpdf".
func (f *Family) Suffix() string {
	if f.Discrete {
		return "_lpmf"
	}
	return "_lpdf"
}

var (
	realsP   = Param{Class: Reals}
	intsP    = Param{Class: Ints}
	vectorsP = Param{Class: Vectors}
)

func named(name string, p Param) Param { p.Name = name; return p }

func exactP(name string, t lang.Type) Param { return Param{Name: name, Class: Exact, Type: t} }

// families lists the distributions of language.md.
func families() []*Family {
	r := func(names ...string) []Param {
		ps := make([]Param, len(names))
		for i, n := range names {
			ps[i] = named(n, realsP)
		}
		return ps
	}
	cont := func(name string, reparam bool, params ...string) *Family {
		return &Family{Name: name, Variate: named("y", realsP), Params: r(params...), CDF: true, RNG: true, Reparam: reparam}
	}
	disc := func(name string, cdf bool, variate Param, params ...Param) *Family {
		return &Family{Name: name, Variate: variate, Params: params, Discrete: true, CDF: cdf, RNG: true}
	}
	matrixT := lang.MatrixType
	half := cont("half_normal", true, "sigma")
	half.Extension = true
	return []*Family{
		cont("normal", true, "mu", "sigma"),
		cont("std_normal", true),
		cont("student_t", true, "nu", "mu", "sigma"),
		cont("cauchy", true, "mu", "sigma"),
		cont("double_exponential", true, "mu", "sigma"),
		cont("logistic", true, "mu", "sigma"),
		cont("lognormal", true, "mu", "sigma"),
		cont("exponential", true, "beta"),
		cont("gamma", false, "alpha", "beta"),
		cont("inv_gamma", false, "alpha", "beta"),
		cont("weibull", true, "alpha", "sigma"),
		cont("beta", false, "alpha", "beta"),
		cont("uniform", true, "alpha", "beta"),
		cont("chi_square", false, "nu"),
		half,
		disc("bernoulli", true, named("n", intsP), named("theta", realsP)),
		disc("bernoulli_logit", false, named("n", intsP), named("alpha", realsP)),
		disc("binomial", true, named("n", intsP), named("N", intsP), named("theta", realsP)),
		disc("binomial_logit", false, named("n", intsP), named("N", intsP), named("alpha", realsP)),
		disc("poisson", true, named("n", intsP), named("lambda", realsP)),
		disc("poisson_log", false, named("n", intsP), named("alpha", realsP)),
		disc("neg_binomial_2", true, named("n", intsP), named("mu", realsP), named("phi", realsP)),
		disc("neg_binomial_2_log", false, named("n", intsP), named("eta", realsP), named("phi", realsP)),
		{
			Name: "categorical", Variate: named("y", intsP), Discrete: true, RNG: true,
			Params:    []Param{exactP("theta", lang.VectorType)},
			RNGResult: fixed(lang.IntType),
		},
		{
			Name: "categorical_logit", Variate: named("y", intsP), Discrete: true, RNG: true,
			Params:    []Param{exactP("beta", lang.VectorType)},
			RNGResult: fixed(lang.IntType),
		},
		// Generalized linear models: the family of the name's prefix with
		// the linear predictor alpha + x·beta (x an n×k matrix).
		{
			Name: "bernoulli_logit_glm", Variate: named("y", intsP), Discrete: true, RNG: true,
			Params:    []Param{exactP("x", matrixT), named("alpha", realsP), exactP("beta", lang.VectorType)},
			RNGResult: fixed(lang.ArrayOf(lang.IntType, 1)),
		},
		{
			Name: "poisson_log_glm", Variate: named("y", intsP), Discrete: true, RNG: true,
			Params:    []Param{exactP("x", matrixT), named("alpha", realsP), exactP("beta", lang.VectorType)},
			RNGResult: fixed(lang.ArrayOf(lang.IntType, 1)),
		},
		{
			Name: "normal_id_glm", Variate: named("y", realsP), RNG: true,
			Params:    []Param{exactP("x", matrixT), named("alpha", realsP), exactP("beta", lang.VectorType), named("sigma", realsP)},
			RNGResult: fixed(lang.VectorType),
		},
		{
			Name: "multi_normal", Variate: named("y", vectorsP), RNG: true, Reparam: true,
			Params:    []Param{named("mu", vectorsP), exactP("Sigma", matrixT)},
			RNGResult: multiRNG,
		},
		{
			Name: "multi_normal_cholesky", Variate: named("y", vectorsP), RNG: true, Reparam: true,
			Params:    []Param{named("mu", vectorsP), exactP("L", matrixT)},
			RNGResult: multiRNG,
		},
		{
			Name: "dirichlet", Variate: exactP("theta", lang.VectorType), RNG: true,
			Params:    []Param{exactP("alpha", lang.VectorType)},
			RNGResult: fixed(lang.VectorType),
		},
		{
			Name: "lkj_corr", Variate: exactP("y", matrixT), RNG: true,
			Params:    []Param{exactP("eta", lang.RealType)},
			RNGParams: []Param{exactP("K", lang.IntType), exactP("eta", lang.RealType)},
			RNGResult: fixed(matrixT),
		},
		{
			Name: "lkj_corr_cholesky", Variate: exactP("L", matrixT), RNG: true,
			Params:    []Param{exactP("eta", lang.RealType)},
			RNGParams: []Param{exactP("K", lang.IntType), exactP("eta", lang.RealType)},
			RNGResult: fixed(matrixT),
		},
	}
}

// multiRNG: multi_normal_rng(vector mu, ...) gives a vector; an array of
// locations gives an array of vectors.
func multiRNG(a []lang.Type) (lang.Type, bool) {
	if a[0].Dims == 1 {
		return lang.ArrayOf(lang.VectorType, 1), true
	}
	return lang.VectorType, true
}

// addFamily registers the densities and the RNG of a family.
func (t *Table) addFamily(f *Family) {
	t.families[f.Name] = f
	all := append([]Param{f.Variate}, f.Params...)
	density := func(suffix string) {
		t.add(&Func{Name: f.Name + suffix, Kind: Density, Family: f, Suffix: suffix,
			Sigs: []Sig{{Params: all, Result: fixed(lang.RealType), ResultDoc: "real"}}})
	}
	if f.Discrete {
		density("_lpmf")
		density("_lupmf")
	} else {
		density("_lpdf")
		density("_lupdf")
	}
	if f.CDF {
		density("_cdf")
		density("_lcdf")
		density("_lccdf")
	}
	if !f.RNG {
		return
	}
	params, result := f.Params, f.RNGResult
	if f.RNGParams != nil {
		params = f.RNGParams
	}
	if result == nil {
		result = rngResult(f.Discrete)
	}
	t.add(&Func{Name: f.Name + "_rng", Kind: RNG, Family: f, Suffix: "_rng",
		Sigs: []Sig{{Params: params, Result: result}}})
}
