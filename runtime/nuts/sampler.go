package nuts

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shmlang/shm/internal/sysmem"
)

// Config holds the settings of one chain. The zero value is not useful; start
// from [DefaultConfig].
type Config struct {
	NumWarmup  int  // warmup iterations (Stan's num_warmup)
	NumSamples int  // iterations after warmup (num_samples)
	Thin       int  // keep every Thin-th iteration (>= 1)
	SaveWarmup bool // also deliver warmup draws to the callback

	NoAdapt bool // run warmup without adaptation (Stan's adapt engaged=0)
	// FixedMetric makes warmup adapt the step size only: the metric stays
	// InvMetric throughout (a warm start from an earlier run's adaptation,
	// whose metric is kept and whose step size is refined).
	FixedMetric bool

	MaxDepth   int     // maximum tree depth (10)
	MaxDeltaH  float64 // energy error beyond which a step is divergent (1000)
	StepSize   float64 // initial step size (1)
	Delta      float64 // target acceptance statistic (0.8)
	Gamma      float64 // dual averaging regularization scale (0.05)
	Kappa      float64 // dual averaging relaxation exponent (0.75)
	T0         float64 // dual averaging iteration offset (10)
	InitBuffer int     // fast adaptation before the first slow window (75)
	TermBuffer int     // fast adaptation after the last slow window (50)
	BaseWindow int     // first slow window (25)

	Metric MetricKind
	// InvMetric is an initial inverse metric: Dim entries for Diag, Dim*Dim
	// (row-major) for Dense. Nil means the identity.
	InvMetric []float64

	// Init is the initial point on the unconstrained scale. Nil means
	// uniform(-InitRadius, InitRadius) per coordinate, retried up to
	// MaxInitTries times while the density or its gradient is not finite.
	Init         []float64
	InitRadius   float64 // 2
	MaxInitTries int     // 100

	// Progress, when non-nil, is called after every iteration.
	Progress func(Progress)
	// Activity, when non-nil, is called when the chain starts and after
	// every leapfrog step of a trajectory, from the chain's goroutine:
	// what a slow iteration is doing. It must be cheap (a step may take
	// a microsecond).
	Activity func(Activity)
	// MaxMemory bounds the memory, in 8-byte words, one chain may hold
	// (MemoryWords): a target of too many dimensions for it, or for the
	// dense metric's d×d matrices, is refused before anything is
	// allocated. 0 means half of the memory the process may use
	// (sysmem.MaxElements; no bound when that is unknown).
	MaxMemory int64

	// Rejected, when non-nil, is called with the chain's id and the reason
	// each time a point of a trajectory is rejected for an error (Stan's
	// informational message): the target's rejection error (a domain
	// error, reject), or a NaN log density with, where the target gives
	// it (NonFiniteTerm), the term. A log density of −Inf (zero density)
	// is rejected silently.
	Rejected func(chain int, reason error)
}

// DefaultConfig returns Stan's defaults: 1000 warmup and 1000 sampling
// iterations, diagonal metric, delta 0.8, maximum depth 10.
func DefaultConfig() Config {
	return Config{
		NumWarmup: 1000, NumSamples: 1000, Thin: 1,
		MaxDepth: 10, MaxDeltaH: 1000, StepSize: 1,
		Delta: 0.8, Gamma: 0.05, Kappa: 0.75, T0: 10,
		InitBuffer: 75, TermBuffer: 50, BaseWindow: 25,
		Metric: Diag, InitRadius: 2, MaxInitTries: 100,
	}
}

func (c *Config) validate(d int) error {
	switch {
	case c.NumWarmup < 0:
		return fmt.Errorf("nuts: number of warmup iterations is %d, must be >= 0", c.NumWarmup)
	case c.NumSamples < 0:
		return fmt.Errorf("nuts: number of sampling iterations is %d, must be >= 0", c.NumSamples)
	case c.Thin < 1:
		return fmt.Errorf("nuts: thin is %d, must be >= 1", c.Thin)
	case c.MaxDepth < 1:
		return fmt.Errorf("nuts: maximum tree depth is %d, must be >= 1", c.MaxDepth)
	case !(c.StepSize > 0) || math.IsInf(c.StepSize, 0):
		return fmt.Errorf("nuts: step size is %g, must be positive and finite", c.StepSize)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("nuts: adapt delta is %g, must be in (0, 1)", c.Delta)
	case !(c.Gamma > 0), !(c.Kappa > 0), !(c.T0 > 0):
		return fmt.Errorf("nuts: dual averaging gamma, kappa and t0 must be positive (got %g, %g, %g)", c.Gamma, c.Kappa, c.T0)
	case c.InitBuffer < 0, c.TermBuffer < 0, c.BaseWindow < 0:
		return errors.New("nuts: adaptation buffers and window must be >= 0")
	case !(c.MaxDeltaH > 0):
		return fmt.Errorf("nuts: maximum energy error is %g, must be positive", c.MaxDeltaH)
	case c.Init != nil && len(c.Init) != d:
		return fmt.Errorf("nuts: initial point has %d values, the target has dimension %d", len(c.Init), d)
	case c.Init == nil && !(c.InitRadius >= 0):
		return fmt.Errorf("nuts: initial radius is %g, must be >= 0", c.InitRadius)
	case c.Init == nil && c.MaxInitTries < 1:
		return fmt.Errorf("nuts: maximum number of initialization attempts is %d, must be >= 1", c.MaxInitTries)
	}
	return c.CheckMemory(d, false)
}

// MemoryWords is the memory, in 8-byte words, that a chain of a target of
// dimension d holds with the configuration c: the vectors of its
// trajectory, of every tree level and of its state, the metric with its
// factor, the adaptation's estimator and the adapted metric's copy (each
// d×d with the dense metric), the target's gradient, and, with
// keepDraws (Sample), every draw kept.
func (c *Config) MemoryWords(d int, keepDraws bool) float64 {
	n := float64(d)
	vectors := 24 + 9*float64(max(c.MaxDepth, 0)+1) + 7 + 2 + 4 // trajectory, levels, state, estimator, target
	words := vectors * n
	if c.Metric == Dense {
		words += 4 * n * n // metric, factor, estimate, adapted copy
	} else {
		words += 4 * n
	}
	if keepDraws {
		kept := c.NumSamples
		if c.SaveWarmup {
			kept += c.NumWarmup
		}
		words += float64(kept/max(c.Thin, 1)+1) * (n + 8)
	}
	return words
}

// CheckMemory refuses a target of dimension d whose chain would hold more
// than c.MaxMemory (MemoryWords), saying how many parameters fit.
func (c *Config) CheckMemory(d int, keepDraws bool) error {
	limit, of := c.MaxMemory, "the memory a chain may hold"
	if limit <= 0 {
		limit, of = sysmem.MaxElements(), "half of "+sysmem.Source()
		if limit <= 0 {
			return nil
		}
	} else {
		of = "the " + sysmem.Bytes(8*float64(limit)) + " a chain may hold (its share of half of " + sysmem.Source() + ")"
	}
	words := c.MemoryWords(d, keepDraws)
	if words <= float64(limit) {
		return nil
	}
	// The most dimensions that fit: MemoryWords is increasing in d.
	lo, hi := 0, d
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if c.MemoryWords(mid, keepDraws) <= float64(limit) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if c.Metric == Dense {
		return fmt.Errorf("nuts: %d parameters with the dense metric need %s per chain (%d×%d matrices: the metric, its factor, its estimate and the adapted copy), more than %s: the dense metric allows at most %d parameters here; use the diagonal metric",
			d, sysmem.Bytes(8*words), d, d, of, lo)
	}
	what := "the trajectory's and the tree's vectors"
	if keepDraws {
		what += " and the draws kept"
	}
	return fmt.Errorf("nuts: %d parameters need %s per chain (%s), more than %s: at most %d parameters fit here",
		d, sysmem.Bytes(8*words), what, of, lo)
}

// Progress reports the iteration just finished.
type Progress struct {
	Chain     int
	Iteration int // 1-based, counting warmup then sampling iterations
	Total     int // NumWarmup + NumSamples
	Warmup    bool
	TreeDepth int     // of the iteration's trajectory
	NLeapfrog int     // leapfrog steps of the iteration
	StepSize  float64 // the step size the iteration used
}

// Activity reports the state of the iteration in progress, after one of
// its leapfrog steps.
type Activity struct {
	Chain     int
	Iteration int // 1-based, as in Progress; 0 while the chain initializes (initial point, step size)
	Total     int
	Warmup    bool
	TreeDepth int // the depth of the tree being built (1: the first doubling)
	NLeapfrog int // leapfrog steps of this iteration so far
	StepSize  float64
}

// Draw is one iteration's output: the position (on the unconstrained scale)
// and Stan's sampler columns.
type Draw struct {
	Theta      []float64
	LP         float64 // lp__: the log density at Theta
	AcceptStat float64 // accept_stat__
	StepSize   float64 // stepsize__
	TreeDepth  int     // treedepth__
	NLeapfrog  int     // n_leapfrog__
	Divergent  bool    // divergent__
	Energy     float64 // energy__: the Hamiltonian at the selected state
	Warmup     bool    // drawn during warmup
}

// Adaptation is the outcome of warmup: the final step size and inverse metric.
type Adaptation struct {
	StepSize  float64
	Metric    MetricKind
	Dim       int
	InvMetric []float64 // Dim entries (Diag) or Dim*Dim row-major (Dense)
	// ReducedWindows is set when the warmup was too short for the configured
	// buffers and the windows were reduced to 15%/75%/10%.
	ReducedWindows bool
}

// Callbacks receive a chain's output while it runs. Any of them may be nil.
type Callbacks struct {
	// Draw receives each kept draw, warmup draws included when
	// Config.SaveWarmup is set. d.Theta is only valid during the call.
	// A non-nil error stops the chain and is returned by Run.
	Draw func(d *Draw) error
	// Adapted is called once, after warmup and before the first sampling
	// iteration (also when adaptation is off: then it reports the fixed
	// step size and metric).
	Adapted func(a Adaptation) error
}

// Timing holds the wall time spent in each phase.
type Timing struct {
	Warmup, Sampling time.Duration
}

// point is a state of phase space.
type point struct {
	q, p, g []float64 // position, momentum, gradient of log density
	v       float64   // potential energy -log p(q); +Inf when not finite
}

func newPoint(d int) point {
	return point{q: make([]float64, d), p: make([]float64, d), g: make([]float64, d)}
}

func (z *point) copyFrom(o *point) {
	copy(z.q, o.q)
	copy(z.p, o.p)
	copy(z.g, o.g)
	z.v = o.v
}

// level holds the scratch vectors of one recursion depth of buildTree.
type level struct {
	pSharpInitEnd, pInitEnd, rhoInit    []float64
	pSharpFinalBeg, pFinalBeg, rhoFinal []float64
	proposeFinal                        point
}

// Chain is one Markov chain. It is not safe for concurrent use; run chains in
// parallel by giving each its own Chain.
type Chain struct {
	target Target
	cfg    Config
	id     int
	d      int
	rng    *rand.Rand
	metric *metric
	eps    float64

	z       point // current state
	saved   point // the state kept by the step size heuristic
	levels  []level
	scratch []float64

	// per-transition state
	divergent bool
	h0        float64
	nLeapfrog int
	sumMetro  float64
	depth     int // of the tree being built, for Activity
	iteration int // 1-based; 0 before the first iteration
	warmup    bool

	adaptation Adaptation
	timing     Timing
	// fatal is the first error of the target that is not a rejection: it
	// ends the transition and stops the chain.
	fatal error
}

// NewChain prepares chain id of a run with the given seed. The chain's random
// stream is PCG seeded with (seed, id).
func NewChain(target Target, cfg Config, seed uint64, id int) (*Chain, error) {
	if target == nil {
		return nil, errors.New("nuts: nil target")
	}
	d := target.Dim()
	if d < 0 {
		return nil, fmt.Errorf("nuts: target dimension is %d", d)
	}
	if err := cfg.validate(d); err != nil {
		return nil, err
	}
	m, err := newMetric(cfg.Metric, d, cfg.InvMetric)
	if err != nil {
		return nil, err
	}
	c := &Chain{
		target: target, cfg: cfg, id: id, d: d,
		rng:     rand.New(rand.NewPCG(seed, uint64(id))),
		metric:  m,
		eps:     cfg.StepSize,
		z:       newPoint(d),
		saved:   newPoint(d),
		scratch: make([]float64, d),
	}
	c.levels = make([]level, cfg.MaxDepth+1)
	for i := range c.levels {
		c.levels[i] = level{
			pSharpInitEnd: make([]float64, d), pInitEnd: make([]float64, d), rhoInit: make([]float64, d),
			pSharpFinalBeg: make([]float64, d), pFinalBeg: make([]float64, d), rhoFinal: make([]float64, d),
			proposeFinal: newPoint(d),
		}
	}
	return c, nil
}

// Adaptation returns the step size and inverse metric in use (after Run: the
// result of warmup).
func (c *Chain) Adaptation() Adaptation {
	a := c.adaptation
	a.StepSize = c.eps
	a.Metric = c.metric.kind
	a.Dim = c.d
	a.InvMetric = append([]float64(nil), c.metric.inv...)
	return a
}

// Timing returns the wall time of warmup and sampling of the last Run.
func (c *Chain) Timing() Timing { return c.timing }

// activity reports the chain's state to Config.Activity.
func (c *Chain) activity() {
	if c.cfg.Activity != nil {
		c.cfg.Activity(Activity{Chain: c.id, Iteration: c.iteration, Total: c.cfg.NumWarmup + c.cfg.NumSamples, Warmup: c.warmup,
			TreeDepth: c.depth, NLeapfrog: c.nLeapfrog, StepSize: c.eps})
	}
}

// evaluate sets z.v and z.g at z.q. A point where the target fails has
// zero density (an infinite potential, so the trajectory diverges there);
// an error that is not a rejection is also kept in c.fatal.
func (c *Chain) evaluate(z *point) {
	lp, err := c.target.LogDensityGrad(z.q, z.g)
	if err != nil && !isRejection(err) && c.fatal == nil {
		c.fatal = err
	}
	if err != nil || math.IsNaN(lp) || math.IsInf(lp, 0) {
		z.v = math.Inf(1)
		if c.cfg.Rejected != nil {
			// As Stan: a message for a rejection (a domain error,
			// reject) and for a NaN density; none for a density of zero.
			switch {
			case err != nil && isRejection(err):
				c.cfg.Rejected(c.id, err)
			case err == nil && math.IsNaN(lp):
				c.cfg.Rejected(c.id, fmt.Errorf("the log density is NaN%s", c.whyNonFinite()))
			}
		}
		return
	}
	z.v = -lp
}

func (c *Chain) hamiltonian(z *point) float64 {
	h := z.v + c.metric.tau(z.p)
	if math.IsNaN(h) {
		return math.Inf(1)
	}
	return h
}

// leapfrog advances z by one step of size eps (negative: backward).
func (c *Chain) leapfrog(z *point, eps float64) {
	half := 0.5 * eps
	for i, g := range z.g {
		z.p[i] += half * g
	}
	c.metric.dtauDp(z.p, c.scratch)
	for i, v := range c.scratch {
		z.q[i] += eps * v
	}
	c.evaluate(z)
	for i, g := range z.g {
		z.p[i] += half * g
	}
}

// initialize sets the starting point.
func (c *Chain) initialize() error {
	z := &c.z
	if c.cfg.Init != nil {
		copy(z.q, c.cfg.Init)
		lp, err := c.target.LogDensityGrad(z.q, z.g)
		if err != nil {
			return fmt.Errorf("nuts: chain %d: log density at the initial point: %w", c.id, err)
		}
		if math.IsNaN(lp) || math.IsInf(lp, 0) {
			return fmt.Errorf("nuts: chain %d: log density at the initial point is %g%s", c.id, lp, c.whyNonFinite())
		}
		if i := firstNonFinite(z.g); i >= 0 {
			return fmt.Errorf("nuts: chain %d: gradient element %d at the initial point is %g", c.id, i+1, z.g[i])
		}
		z.v = -lp
		return nil
	}
	r := c.cfg.InitRadius
	var last error
	for try := 0; try < c.cfg.MaxInitTries; try++ {
		for i := range z.q {
			z.q[i] = r * (2*c.rng.Float64() - 1)
		}
		lp, err := c.target.LogDensityGrad(z.q, z.g)
		switch {
		case err != nil && !isRejection(err):
			return fmt.Errorf("nuts: chain %d: log density at a random initial point: %w", c.id, err)
		case err != nil:
			last = err
		case math.IsNaN(lp) || math.IsInf(lp, 0):
			last = fmt.Errorf("log density is %g%s", lp, c.whyNonFinite())
		case firstNonFinite(z.g) >= 0:
			i := firstNonFinite(z.g)
			last = fmt.Errorf("gradient element %d is %g", i+1, z.g[i])
		default:
			z.v = -lp
			return nil
		}
	}
	return fmt.Errorf("nuts: chain %d: no finite initial point in %d attempts on (-%g, %g): last: %w", c.id, c.cfg.MaxInitTries, r, r, last)
}

// whyNonFinite is ": " and the target's explanation of its last
// non-finite log density (the term and its position), when it gives one
// through a method NonFiniteTerm() error; "" otherwise.
func (c *Chain) whyNonFinite() string {
	if t, ok := c.target.(interface{ NonFiniteTerm() error }); ok {
		if err := t.NonFiniteTerm(); err != nil {
			return ": " + err.Error()
		}
	}
	return ""
}

func firstNonFinite(x []float64) int {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i
		}
	}
	return -1
}

// maxStepSize is the step size beyond which the heuristic declares the
// posterior improper: only a density flat in some direction accepts every
// proposal that far (a posterior at any finite scale stops much earlier;
// scales of 1e7 and more are legitimate).
const maxStepSize = 1e300

// initStepSize is Stan's init_stepsize heuristic: double or halve the step
// size until the acceptance probability of one leapfrog step crosses 0.8.
func (c *Chain) initStepSize() error {
	if c.eps == 0 || c.eps > maxStepSize || math.IsNaN(c.eps) {
		return nil
	}
	init := &c.saved
	init.copyFrom(&c.z)
	z := &c.z
	logAccept := math.Log(0.8)
	trial := func() float64 {
		z.copyFrom(init)
		c.metric.sampleP(c.rng, z.p)
		h0 := c.hamiltonian(z)
		c.leapfrog(z, c.eps)
		return h0 - c.hamiltonian(z)
	}
	direction := 1
	if !(trial() > logAccept) {
		direction = -1
	}
	for {
		dh := trial()
		if c.fatal != nil {
			z.copyFrom(init)
			return c.fatal
		}
		if direction == 1 && !(dh > logAccept) {
			break
		}
		if direction == -1 && !(dh < logAccept) {
			break
		}
		if direction == 1 {
			c.eps *= 2
		} else {
			c.eps *= 0.5
		}
		if c.eps > maxStepSize {
			z.copyFrom(init)
			return errors.New("posterior is improper: the step size heuristic doubled the step size past 1e300 with every proposal accepted; check the model (a parameter without a proper prior?)")
		}
		if c.eps == 0 {
			z.copyFrom(init)
			return errors.New("no acceptably small step size could be found; the model may be misspecified")
		}
	}
	z.copyFrom(init)
	return nil
}

func criterion(pSharpMinus, pSharpPlus, rho []float64) bool {
	return dot(pSharpPlus, rho) > 0 && dot(pSharpMinus, rho) > 0
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func logSumExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a > b {
		return a + math.Log1p(math.Exp(b-a))
	}
	return b + math.Log1p(math.Exp(a-b))
}

func add(dst, a, b []float64) {
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// buildTree extends c.z by 2^depth leapfrog steps in direction sign, as
// Stan's base_nuts::build_tree. It returns false when the subtree is
// divergent or makes a U-turn. rho accumulates the momenta; pBeg/pEnd and
// their sharp versions receive the momenta at the subtree's ends.
func (c *Chain) buildTree(depth int, propose *point, pSharpBeg, pSharpEnd, rho, pBeg, pEnd []float64,
	sign float64, logSumWeight *float64) bool {
	z := &c.z
	if depth == 0 {
		c.leapfrog(z, sign*c.eps)
		c.nLeapfrog++
		c.activity()
		h := c.hamiltonian(z)
		if h-c.h0 > c.cfg.MaxDeltaH {
			c.divergent = true
		}
		*logSumWeight = logSumExp(*logSumWeight, c.h0-h)
		if c.h0-h > 0 {
			c.sumMetro++
		} else {
			c.sumMetro += math.Exp(c.h0 - h)
		}
		propose.copyFrom(z)
		c.metric.dtauDp(z.p, pSharpBeg)
		copy(pSharpEnd, pSharpBeg)
		for i, v := range z.p {
			rho[i] += v
		}
		copy(pBeg, z.p)
		copy(pEnd, z.p)
		return !c.divergent
	}
	lv := &c.levels[depth]

	// The initial subtree.
	lswInit := math.Inf(-1)
	clear(lv.rhoInit)
	if !c.buildTree(depth-1, propose, pSharpBeg, lv.pSharpInitEnd, lv.rhoInit, pBeg, lv.pInitEnd, sign, &lswInit) {
		return false
	}
	// The final subtree.
	final := &lv.proposeFinal
	final.copyFrom(z)
	lswFinal := math.Inf(-1)
	clear(lv.rhoFinal)
	if !c.buildTree(depth-1, final, lv.pSharpFinalBeg, pSharpEnd, lv.rhoFinal, lv.pFinalBeg, pEnd, sign, &lswFinal) {
		return false
	}

	// Multinomial sample from the final subtree, uniform within the merged
	// subtree.
	lswSubtree := logSumExp(lswInit, lswFinal)
	*logSumWeight = logSumExp(*logSumWeight, lswSubtree)
	if lswFinal > lswSubtree {
		propose.copyFrom(final)
	} else if c.rng.Float64() < math.Exp(lswFinal-lswSubtree) {
		propose.copyFrom(final)
	}

	// rhoSubtree = rhoInit + rhoFinal, kept in scratch of this level:
	// reuse rhoInit after the extended checks below need it, so compute
	// the extended checks first.
	ext := c.scratch
	add(ext, lv.rhoInit, lv.pFinalBeg)
	persist := criterion(pSharpBeg, lv.pSharpFinalBeg, ext)
	add(ext, lv.rhoFinal, lv.pInitEnd)
	persist = persist && criterion(lv.pSharpInitEnd, pSharpEnd, ext)
	add(ext, lv.rhoInit, lv.rhoFinal)
	for i, v := range ext {
		rho[i] += v
	}
	persist = criterion(pSharpBeg, pSharpEnd, ext) && persist
	return persist
}

// trajectory holds the state of the outer loop of a transition.
type trajectory struct {
	fwd, bck, sample, propose                    point
	pFwdFwd, pSharpFwdFwd, pFwdBck, pSharpFwdBck []float64
	pBckFwd, pSharpBckFwd, pBckBck, pSharpBckBck []float64
	rho, rhoFwd, rhoBck, ext                     []float64
}

func newTrajectory(d int) *trajectory {
	v := func() []float64 { return make([]float64, d) }
	return &trajectory{
		fwd: newPoint(d), bck: newPoint(d), sample: newPoint(d), propose: newPoint(d),
		pFwdFwd: v(), pSharpFwdFwd: v(), pFwdBck: v(), pSharpFwdBck: v(),
		pBckFwd: v(), pSharpBckFwd: v(), pBckBck: v(), pSharpBckBck: v(),
		rho: v(), rhoFwd: v(), rhoBck: v(), ext: v(),
	}
}

// transition runs one NUTS transition from c.z and leaves the selected state
// in c.z. It fills the sampler fields of out (not Theta).
func (c *Chain) transition(t *trajectory, out *Draw) {
	z := &c.z
	c.metric.sampleP(c.rng, z.p)
	t.fwd.copyFrom(z)
	t.bck.copyFrom(z)
	t.sample.copyFrom(z)
	t.propose.copyFrom(z)
	c.metric.dtauDp(z.p, t.pSharpFwdFwd)
	copy(t.pSharpFwdBck, t.pSharpFwdFwd)
	copy(t.pSharpBckFwd, t.pSharpFwdFwd)
	copy(t.pSharpBckBck, t.pSharpFwdFwd)
	copy(t.pFwdFwd, z.p)
	copy(t.pFwdBck, z.p)
	copy(t.pBckFwd, z.p)
	copy(t.pBckBck, z.p)
	copy(t.rho, z.p)

	logSumWeight := 0.0
	c.h0 = c.hamiltonian(z)
	c.nLeapfrog = 0
	c.sumMetro = 0
	c.divergent = false
	depth := 0

	for depth < c.cfg.MaxDepth {
		c.depth = depth + 1
		clear(t.rhoFwd)
		clear(t.rhoBck)
		lswSubtree := math.Inf(-1)
		var valid bool
		if c.rng.Float64() > 0.5 {
			// Extend forward: the old trajectory becomes the backward part.
			z.copyFrom(&t.fwd)
			copy(t.rhoBck, t.rho)
			copy(t.pBckFwd, t.pFwdFwd)
			copy(t.pSharpBckFwd, t.pSharpFwdFwd)
			valid = c.buildTree(depth, &t.propose, t.pSharpFwdBck, t.pSharpFwdFwd, t.rhoFwd, t.pFwdBck, t.pFwdFwd, 1, &lswSubtree)
			t.fwd.copyFrom(z)
		} else {
			// Extend backward: the old trajectory becomes the forward part.
			z.copyFrom(&t.bck)
			copy(t.rhoFwd, t.rho)
			copy(t.pFwdBck, t.pBckBck)
			copy(t.pSharpFwdBck, t.pSharpBckBck)
			valid = c.buildTree(depth, &t.propose, t.pSharpBckFwd, t.pSharpBckBck, t.rhoBck, t.pBckFwd, t.pBckBck, -1, &lswSubtree)
			t.bck.copyFrom(z)
		}
		if !valid {
			break
		}
		depth++

		if lswSubtree > logSumWeight {
			t.sample.copyFrom(&t.propose)
		} else if c.rng.Float64() < math.Exp(lswSubtree-logSumWeight) {
			t.sample.copyFrom(&t.propose)
		}
		logSumWeight = logSumExp(logSumWeight, lswSubtree)

		add(t.rho, t.rhoBck, t.rhoFwd)
		persist := criterion(t.pSharpBckBck, t.pSharpFwdFwd, t.rho)
		add(t.ext, t.rhoBck, t.pFwdBck)
		persist = persist && criterion(t.pSharpBckBck, t.pSharpFwdBck, t.ext)
		add(t.ext, t.rhoFwd, t.pBckFwd)
		persist = persist && criterion(t.pSharpBckFwd, t.pSharpFwdFwd, t.ext)
		if !persist {
			break
		}
	}

	z.copyFrom(&t.sample)
	out.LP = -z.v
	out.AcceptStat = c.sumMetro / float64(c.nLeapfrog)
	out.StepSize = c.eps
	out.TreeDepth = depth
	out.NLeapfrog = c.nLeapfrog
	out.Divergent = c.divergent
	out.Energy = c.hamiltonian(z)
}

// AppendSamplerValues appends the values of Stan's sampler columns lp__,
// accept_stat__, stepsize__, treedepth__, n_leapfrog__, divergent__ and
// energy__, in that order.
func (d *Draw) AppendSamplerValues(dst []float64) []float64 {
	div := 0.0
	if d.Divergent {
		div = 1
	}
	return append(dst, d.LP, d.AcceptStat, d.StepSize, float64(d.TreeDepth), float64(d.NLeapfrog), div, d.Energy)
}
