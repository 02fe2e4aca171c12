package dist

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Register adds the implementation of every density, cdf and random
// number generator of the signature table's distribution families to m.
func Register(m stdlib.Impls) {
	table := stdlib.Builtins()
	add := func(name string, f stdlib.Impl) {
		if table.Lookup(name) != nil {
			m.Add(name, f)
		}
	}
	for _, f := range append(continuousFamilies(), discreteFamilies()...) {
		registerUnivariate(add, f)
	}
	registerMultivariate(add)
	registerExtensions(m)
}

// densityNames returns the lpdf and lupdf (or lpmf and lupmf) suffixes.
func densityNames(discrete bool) (lp, lup string) {
	if discrete {
		return "_lpmf", "_lupmf"
	}
	return "_lpdf", "_lupdf"
}

func registerUnivariate(add func(string, stdlib.Impl), f *univariate) {
	lp, lup := densityNames(f.discrete)
	density := func(suffix string, m mode, alwaysPropto bool) {
		name := f.name + suffix
		add(name, func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
			return f.density(c, name, args, m, alwaysPropto || c.Propto)
		})
	}
	density(lp, modeLP, false)
	density(lup, modeLP, true)
	if f.lcdf != nil {
		density("_cdf", modeCDF, false)
		density("_lcdf", modeLCDF, false)
		density("_lccdf", modeLCCDF, false)
	}
	name := f.name + "_rng"
	add(name, func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return f.draw(c, name, args)
	})
}

// multivariateDensity adapts a multivariate lpdf to both of its names.
func multivariateDensity(add func(string, stdlib.Impl), family string, discrete bool,
	f func(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error)) {
	lp, lup := densityNames(discrete)
	add(family+lp, func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return f(c, family+lp, args, c.Propto)
	})
	add(family+lup, func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return f(c, family+lup, args, true)
	})
}

func noRNG(c *stdlib.Context, fn string) error {
	if c.RNG == nil {
		return errorf(fn, "random draws are not allowed here")
	}
	return nil
}

func registerMultivariate(add func(string, stdlib.Impl)) {
	multivariateDensity(add, "multi_normal", false, func(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
		return multiNormal(c, fn, args, propto, false)
	})
	multivariateDensity(add, "multi_normal_cholesky", false, func(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
		return multiNormal(c, fn, args, propto, true)
	})
	multivariateDensity(add, "dirichlet", false, dirichletLpdf)
	multivariateDensity(add, "lkj_corr_cholesky", false, lkjCorrCholeskyLpdf)
	multivariateDensity(add, "lkj_corr", false, lkjCorrLpdf)
	add("lkj_corr_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		k, eta, err := lkjRNGArgs(c, "lkj_corr_rng", args)
		if err != nil {
			return stdlib.Value{}, err
		}
		l := lkjCorrCholeskyRng(c.RNG, k, eta)
		om := make([]float64, k*k)
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				s := 0.0
				for m := 0; m <= min(i, j); m++ {
					s += l[i*k+m] * l[j*k+m]
				}
				om[i*k+j] = s
			}
			om[i*k+i] = 1 // exactly, as the rows of L have unit norm
		}
		return stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(k, k), om)), nil
	})
	multivariateDensity(add, "categorical", true, categoricalLpmf)
	multivariateDensity(add, "categorical_logit", true, categoricalLogitLpmf)
	uni := map[string]*univariate{}
	for _, f := range append(continuousFamilies(), discreteFamilies()...) {
		uni[f.name] = f
	}
	for glm, base := range map[string]string{"bernoulli_logit_glm": "bernoulli_logit", "poisson_log_glm": "poisson_log", "normal_id_glm": "normal"} {
		f := uni[base]
		multivariateDensity(add, glm, f.discrete, glmDensity(f))
		add(glm+"_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
			fn := glm + "_rng"
			eta, err := glmPredictor(c.Tape, fn, nil, args)
			if err != nil {
				return stdlib.Value{}, err
			}
			out, err := f.draw(c, fn, append([]stdlib.Value{stdlib.ADValue(eta)}, args[3:]...))
			if err != nil || out.Type.Dims > 0 || out.Type == lang.VectorType {
				return out, err
			}
			// One row: still an array (or vector) of one draw.
			if f.discrete {
				return stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: []int{out.Int}, Dims: []int{1}}, nil
			}
			return stdlib.ADValue(c.Tape.Reshape(out.AD, autodiff.VectorShape(1))), nil
		})
	}
	add("categorical_logit_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		const fn = "categorical_logit_rng"
		if err := noRNG(c, fn); err != nil {
			return stdlib.Value{}, err
		}
		beta := c.Tape.Val(args[0].AD)
		if err := finiteVector(fn, "beta", beta); err != nil {
			return stdlib.Value{}, err
		}
		return stdlib.IntValue(categoricalRng(c.RNG, softmaxOf(beta))), nil
	})

	add("multi_normal_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return multiNormalRng(c, "multi_normal_rng", args, false)
	})
	add("multi_normal_cholesky_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		return multiNormalRng(c, "multi_normal_cholesky_rng", args, true)
	})
	add("categorical_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		const fn = "categorical_rng"
		if err := noRNG(c, fn); err != nil {
			return stdlib.Value{}, err
		}
		th := c.Tape.Val(args[0].AD)
		if err := simplexError(fn, "theta", th); err != nil {
			return stdlib.Value{}, err
		}
		return stdlib.IntValue(categoricalRng(c.RNG, th)), nil
	})
	add("dirichlet_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		const fn = "dirichlet_rng"
		if err := noRNG(c, fn); err != nil {
			return stdlib.Value{}, err
		}
		al := c.Tape.Val(args[0].AD)
		for i, a := range al {
			if why := positiveFinite.violation(a); why != "" {
				return stdlib.Value{}, errorf(fn, "prior sample size alpha[%d] = %s %s", i+1, fmtNum(a), why)
			}
		}
		return stdlib.ADValue(c.Tape.ConstVec(dirichletRng(c.RNG, al))), nil
	})
	add("lkj_corr_cholesky_rng", func(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
		k, eta, err := lkjRNGArgs(c, "lkj_corr_cholesky_rng", args)
		if err != nil {
			return stdlib.Value{}, err
		}
		return stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(k, k), lkjCorrCholeskyRng(c.RNG, k, eta))), nil
	})
}

// registerExtensions adds the vectorized draws std_normal_rng(n) and
// uniform_rng(n) (shm extensions) beside the family generators of the same
// names, dispatching on the number of arguments.
func registerExtensions(m stdlib.Impls) {
	wrap := func(name string, n func(c *stdlib.Context) float64) {
		family := m[name]
		m[name] = func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
			if len(args) != 1 || args[0].Type != lang.IntType {
				return family(c, args, named)
			}
			if err := noRNG(c, name); err != nil {
				return stdlib.Value{}, err
			}
			k := args[0].Int
			if err := stdlib.CheckSize(k); err != nil {
				return stdlib.Value{}, errorf(name, "%w", err)
			}
			if c.Noise != nil {
				return countDraw(c, name, k), nil
			}
			out := make([]float64, k)
			for i := range out {
				out[i] = n(c)
			}
			return stdlib.ADValue(c.Tape.ConstVec(out)), nil
		}
	}
	wrap("std_normal_rng", func(c *stdlib.Context) float64 { return c.RNG.NormFloat64() })
	wrap("uniform_rng", func(c *stdlib.Context) float64 { return c.RNG.Float64() })
}

// lkjRNGArgs reads and checks the arguments (K, eta) of the LKJ draws.
func lkjRNGArgs(c *stdlib.Context, fn string, args []stdlib.Value) (k int, eta float64, err error) {
	if err := noRNG(c, fn); err != nil {
		return 0, 0, err
	}
	k = args[0].Int
	if k < 1 {
		return 0, 0, errorf(fn, "dimension K = %d must be positive", k)
	}
	eta = c.Tape.Scalar(args[1].RealAD(c.Tape))
	if why := positiveFinite.violation(eta); why != "" {
		return 0, 0, errorf(fn, "shape eta = %s %s", fmtNum(eta), why)
	}
	return k, eta, nil
}
