package runtime

import (
	"math"
	"math/rand/v2"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/stdlib"
)

// crnState is an evaluator's state for crn(...): the call and replicate
// being evaluated, the replicates' sub-evaluators, and what the run asked
// to record.
type crnState struct {
	// depth is the nesting depth of crn(...) being evaluated; runSeed
	// derives the streams of crn calls without a seed argument.
	depth   int
	runSeed uint64
	// log, when non-nil, records the noise drawn inside each crn call:
	// log[call ID][replicate] holds the draws in order.
	log [][][]float64
	// values, when non-nil, records each replicate's value of every
	// scalar crn call: values[call ID][replicate].
	values [][]float64
	call   int // ID of the crn call being evaluated
	rep    int // replicate being evaluated
	// workers is the number of replicates of a crn call evaluated at
	// once (0 or 1: one after the other); the result does not depend on
	// it.
	workers int
	// needGrad is set when the evaluation's gradient will be computed;
	// when it is not, replicates skip their backward sweep.
	needGrad bool
	// replica marks the sub-evaluator of a crn replicate. The checker
	// rejects nested crn calls; should one reach a replicate, it runs
	// inline on the replicate's tape.
	replica bool
	// forceInline evaluates every crn call inline on the chain's tape,
	// as before replicates had their own tapes (for tests).
	forceInline bool
	// k, when positive, replaces the K of every crn call
	// (Options.CRNReplicates).
	k int

	sites  []*crnSite   // crn call sites by ID
	reps   []*replicate // replicate sub-evaluators by replicate index
	inputs crnInputs    // scratch of crnReplicates
}

// crnStream is the random stream of replicate k of the crn call with the
// given seed: the same at every evaluation and in every chain, so the
// averaged loss is a deterministic function of the parameters.
func crnStream(seed uint64, k int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0xc0ffee+uint64(k)))
}

// crnSeed returns the seed of a crn call: its seed argument, or one
// derived from the run's seed and the call's index in the program.
func (ev *evaluator) crnSeed(e *ir.CRN) (uint64, error) {
	if e.Seed != nil {
		s, err := ev.intExpr(e.Seed)
		return uint64(s), err
	}
	return ev.crn.runSeed ^ (0x9e3779b97f4a7c15 * uint64(e.ID+1)), nil
}

// evalCRN evaluates crn(K, body): the average of body over K replicates, each
// drawing its random numbers from its own rewound stream.
//
// A scalar body is evaluated replicate by replicate on sub-evaluators with
// their own tapes (crnReplicates), which may run concurrently; other
// bodies (vectors, matrices, and bodies that read target()) are evaluated
// in turn on the chain's tape (crnInline).
func (ev *evaluator) evalCRN(e *ir.CRN) (stdlib.Value, error) {
	k, err := ev.intExpr(e.K)
	if ev.crn.k > 0 {
		k = ev.crn.k // Options.CRNReplicates
	}
	if err != nil {
		return stdlib.Value{}, err
	}
	if k < 1 {
		return stdlib.Value{}, ev.errorf(e.K.Position(), "the K of crn must be at least 1, got %d", k)
	}
	if k > maxCRNReplicates {
		return stdlib.Value{}, ev.errorf(e.K.Position(), "the K of crn is %d, more than %d replicates", k, maxCRNReplicates)
	}
	seed, err := ev.crnSeed(e)
	if err != nil {
		return stdlib.Value{}, err
	}
	if ev.crn.log != nil {
		ev.crn.log[e.ID] = growReps(ev.crn.log[e.ID], k)
	}
	if site := ev.crnSite(e); !site.inline && !ev.crn.replica && !ev.crn.forceInline {
		return ev.crnReplicates(site, k, seed)
	}
	return ev.crnInline(e, k, seed)
}

// maxCRNReplicates bounds the K of crn(K, ...): each replicate keeps its
// own evaluator and tape, and the paper's K are tens.
const maxCRNReplicates = 1 << 20

// growReps returns reps with at least k replicate entries.
func growReps(reps [][]float64, k int) [][]float64 {
	if len(reps) < k {
		reps = append(reps, make([][]float64, k-len(reps))...)
	}
	return reps
}

// crnInline evaluates the K replicates of crn(K, body) one after the other
// on the evaluator's own tape.
func (ev *evaluator) crnInline(e *ir.CRN, k int, seed uint64) (stdlib.Value, error) {
	t := ev.tape()
	saved, savedCall, savedRep := ev.ctx.RNG, ev.crn.call, ev.crn.rep
	ev.crn.depth++
	defer func() { ev.ctx.RNG, ev.crn.call, ev.crn.rep = saved, savedCall, savedRep; ev.crn.depth-- }()
	var sum autodiff.Value
	var first stdlib.Value
	for r := 0; r < k; r++ {
		ev.crn.call, ev.crn.rep = e.ID, r
		ev.ctx.RNG = crnStream(seed, r)
		v, err := ev.expr(e.Body)
		if err != nil {
			return v, err
		}
		ad := ev.toAD(v)
		if ev.crn.values != nil && ad.Len() == 1 {
			ev.crn.values[e.ID] = append(ev.crn.values[e.ID], t.Scalar(ad))
		}
		if r == 0 {
			first, sum = v, ad
			continue
		}
		sum = t.Add(sum, ad)
	}
	avg := t.Div(sum, t.Const(float64(k)))
	out := stdlib.ADValue(avg)
	if first.Type.Dims > 0 {
		out.Type, out.Dims = e.Type(), first.Dims
	}
	return out, nil
}

// reparamDraw draws from a distribution inside crn as a differentiable
// function of its parameters and standard noise from the replicate's
// stream: normal(mu, sigma) is mu + sigma·z, uniform(a, b) is
// a + (b − a)·u, and so on.
func (ev *evaluator) reparamDraw(e *ir.Call, args []stdlib.Value) (stdlib.Value, error) {
	fam := e.Func.Family.Name
	if fam == "multi_normal" || fam == "multi_normal_cholesky" {
		return ev.multiNormalDraw(e, args)
	}
	t := ev.tape()
	rng := ev.ctx.RNG
	n := 1
	vector := false
	for _, a := range args {
		if !a.Type.IsScalar() {
			vector = true
			if l := a.Len(); l != n && n != 1 {
				return stdlib.Value{}, ev.errorf(e.Position(), "%s: arguments have different sizes: %d and %d", e.Func.Name, n, l)
			} else {
				n = l
			}
		}
	}
	// The vectorized extensions std_normal_rng(n) and uniform_rng(n) take
	// a count, not a parameter.
	if (fam == "std_normal" || fam == "uniform") && len(args) == 1 {
		n, vector = args[0].Int, true
		if n < 0 {
			return stdlib.Value{}, ev.errorf(e.Position(), "%s: negative size %d", e.Func.Name, n)
		}
		args = []stdlib.Value{stdlib.IntValue(0), stdlib.IntValue(1)}[:map[string]int{"std_normal": 0, "uniform": 2}[fam]]
	}
	ad := make([]autodiff.Value, len(args))
	for i, a := range args {
		ad[i] = ev.toAD(a)
	}
	noise := func(draw func() float64) autodiff.Value {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = draw()
		}
		if ev.crn.log != nil {
			rep := &ev.crn.log[ev.crn.call][ev.crn.rep]
			*rep = append(*rep, xs...)
		}
		if vector {
			return t.ConstVec(xs)
		}
		return t.Const(xs[0])
	}
	normal := func() autodiff.Value { return noise(rng.NormFloat64) }
	uniform := func() autodiff.Value { return noise(openUniform(rng)) }
	var out autodiff.Value
	switch fam {
	case "normal":
		out = t.Add(ad[0], t.Mul(ad[1], normal()))
	case "std_normal":
		out = normal()
	case "lognormal":
		out = t.Exp(t.Add(ad[0], t.Mul(ad[1], normal())))
	case "half_normal":
		out = t.Mul(ad[0], t.Unary(autodiff.Abs, normal()))
	case "uniform":
		out = t.Add(ad[0], t.Mul(t.Sub(ad[1], ad[0]), uniform()))
	case "exponential":
		out = t.Div(t.Neg(t.Log(uniform())), ad[0])
	case "cauchy":
		u := uniform()
		out = t.Add(ad[0], t.Mul(ad[1], t.Unary(autodiff.Tan, t.Mul(t.Const(math.Pi), t.Sub(u, t.Const(0.5))))))
	case "logistic":
		u := uniform()
		out = t.Add(ad[0], t.Mul(ad[1], t.Unary(autodiff.Logit, u)))
	case "double_exponential":
		// mu − sigma·sign(u − ½)·log(1 − 2|u − ½|), with the noise term
		// computed on constants.
		u := noise(openUniform(rng))
		vals := t.Val(u)
		w := make([]float64, len(vals))
		for i, x := range vals {
			s := 1.0
			if x < 0.5 {
				s = -1
			}
			w[i] = -s * math.Log(1-2*math.Abs(x-0.5))
		}
		out = t.Add(ad[0], t.Mul(ad[1], ev.constLike(w, vector)))
	case "weibull":
		// sigma·(−log u)^(1/alpha)
		u := uniform()
		out = t.Mul(ad[1], t.Pow(t.Neg(t.Log(u)), t.Div(t.Const(1), ad[0])))
	case "student_t":
		// mu + sigma·z/sqrt(V/nu) with V ~ chi-square(nu) held fixed; nu
		// must be data (the checker enforces it for non-reparameterized
		// parts by requiring data arguments).
		if !ad[0].IsConst() {
			return stdlib.Value{}, ev.errorf(e.Position(), "student_t_rng inside crn: nu must be data")
		}
		nu := t.Val(ad[0])
		z := normal()
		v := make([]float64, n)
		for i := range v {
			df := nu[min(i, len(nu)-1)]
			v[i] = math.Sqrt(chiSquare(rng, df) / df)
		}
		out = t.Add(ad[1], t.Mul(ad[2], t.Div(z, ev.constLike(v, vector))))
	default:
		return stdlib.Value{}, ev.errorf(e.Position(), "%s has no reparameterization inside crn(...)", e.Func.Name)
	}
	if err := t.Err(); err != nil {
		return stdlib.Value{}, ev.errorf(e.Position(), "%s: %v", e.Func.Name, err)
	}
	v := stdlib.ADValue(out)
	if want := e.Type(); want.Dims > 0 {
		v.Type, v.Dims = want, []int{n}
	}
	return v, nil
}

// multiNormalDraw is the reparameterized draw of multi_normal_rng(mu,
// Sigma) and multi_normal_cholesky_rng(mu, L) inside crn: mu + L·z with z
// standard normal noise of mu's length and L the Cholesky factor of Sigma
// (cholesky_decompose on the tape). An array of locations gives an array
// of draws, one noise vector each.
func (ev *evaluator) multiNormalDraw(e *ir.Call, args []stdlib.Value) (stdlib.Value, error) {
	t := ev.tape()
	l := args[1]
	if e.Func.Family.Name == "multi_normal" {
		var err error
		if l, err = ev.callImpl(e.Position(), "cholesky_decompose", args[1:2], nil, false); err != nil {
			return l, err
		}
	}
	draw := func(mu autodiff.Value) (autodiff.Value, error) {
		k := mu.Len()
		if l.AD.Rows() != k || l.AD.Cols() != k {
			return mu, ev.errorf(e.Position(), "%s: mu has %d elements but the matrix is %d×%d", e.Func.Name, k, l.AD.Rows(), l.AD.Cols())
		}
		xs := make([]float64, k)
		for i := range xs {
			xs[i] = ev.ctx.RNG.NormFloat64()
		}
		if ev.crn.log != nil {
			rep := &ev.crn.log[ev.crn.call][ev.crn.rep]
			*rep = append(*rep, xs...)
		}
		out := t.Add(mu, t.MatMul(l.AD, t.ConstVec(xs)))
		if err := t.Err(); err != nil {
			return out, ev.errorf(e.Position(), "%s: %v", e.Func.Name, err)
		}
		return out, nil
	}
	mu := args[0]
	if mu.Type.Dims == 0 {
		v, err := draw(ev.toAD(mu))
		return stdlib.ADValue(v), err
	}
	elems := make([]stdlib.Value, len(mu.Elems))
	for i, m := range mu.Elems {
		v, err := draw(m.AD)
		if err != nil {
			return stdlib.Value{}, err
		}
		elems[i] = stdlib.ADValue(v)
	}
	return stdlib.Value{Type: e.Type(), Elems: elems, Dims: []int{len(elems)}}, nil
}

// constLike makes a constant scalar or vector of xs.
func (ev *evaluator) constLike(xs []float64, vector bool) autodiff.Value {
	if vector {
		return ev.tape().ConstVec(xs)
	}
	return ev.tape().Const(xs[0])
}

// openUniform returns a generator of uniform draws on (0, 1).
func openUniform(rng *rand.Rand) func() float64 {
	return func() float64 {
		for {
			if u := rng.Float64(); u > 0 {
				return u
			}
		}
	}
}

// chiSquare draws from a chi-square distribution with df degrees of
// freedom: twice a Gamma(df/2) draw (Marsaglia and Tsang).
func chiSquare(rng *rand.Rand, df float64) float64 {
	return 2 * gammaDraw(rng, df/2)
}

func gammaDraw(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := openUniform(rng)()
		return gammaDraw(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := openUniform(rng)()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// isReparamCall reports whether a call is drawn by reparameterization: an
// _rng of a reparameterizable family inside crn. All such draws take this
// path, whether or not their arguments depend on parameters, so that the
// value of crn(...) is the same with and without gradients.
func (ev *evaluator) isReparamCall(e *ir.Call) bool {
	return ev.crn.depth > 0 && e.Func.Family != nil && e.Func.Suffix == "_rng" && e.Func.Family.Reparam
}
