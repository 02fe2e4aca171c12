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

// crnDraw calls a built-in _rng inside crn with the replicate's noise
// (reset however the call ends: an arena overflow panics through it).
func (ev *evaluator) crnDraw(e *ir.Call, args, named []stdlib.Value) (stdlib.Value, error) {
	ev.ctx.Noise = crnNoise{ev}
	defer func() { ev.ctx.Noise = nil }()
	return ev.callImpl(e.Position(), e.Func.Name, args, named, false)
}

// crnNoise is the standard noise of reparameterized draws inside crn
// (stdlib.Context.Noise; package dist draws with it): values from the
// replicate's stream, recorded in the run's log when it asked for one.
type crnNoise struct{ ev *evaluator }

func (z crnNoise) Normal(n int) []float64 { return z.draw(n, z.ev.ctx.RNG.NormFloat64) }

func (z crnNoise) Uniform(n int) []float64 { return z.draw(n, openUniform(z.ev.ctx.RNG)) }

func (z crnNoise) ChiSquare(df float64) float64 { return chiSquare(z.ev.ctx.RNG, df) }

func (z crnNoise) draw(n int, next func() float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = next()
	}
	if c := &z.ev.crn; c.log != nil {
		rep := &c.log[c.call][c.rep]
		*rep = append(*rep, xs...)
	}
	return xs
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
