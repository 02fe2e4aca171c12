package sinkhorn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// Register adds the Sinkhorn primitives to m.
func Register(m stdlib.Impls) {
	m.Add("sinkhorn", func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
		return call(c, "sinkhorn", args, named, divergence)
	})
	m.Add("sinkhorn_ot", func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
		return call(c, "sinkhorn_ot", args, named, rawOT)
	})
	m.Add("sinkhorn_plan", func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
		return call(c, "sinkhorn_plan", args, named, plan)
	})
	m.Add("resolution", resolution)
}

type kind int

const (
	divergence kind = iota
	rawOT
	plan
)

// The positions of the named arguments in the signature table (stdlib's
// addPrimitives): eps, iters, tol, rho, log_a, log_b, grad, backend.
const (
	argEps = iota
	argIters
	argTol
	argRho
	argLogA
	argLogB
	argGrad
	argBackend
)

// points returns the support points of a sinkhorn argument as one tape
// value holding an n×d row-major array: a vector is n points on the line,
// a matrix n points in R^d (one per row), an array of vectors n points.
func points(t *autodiff.Tape, v stdlib.Value) (pts autodiff.Value, n, d int, err error) {
	switch {
	case v.Type == lang.VectorType:
		return v.AD, v.AD.Len(), 1, nil
	case v.Type == lang.MatrixType:
		return v.AD, v.AD.Rows(), v.AD.Cols(), nil
	case v.Type.Dims == 1 && v.Type.Base == lang.Vector:
		if len(v.Elems) == 0 {
			return pts, 0, 0, errors.New("no points")
		}
		d = v.Elems[0].AD.Len()
		parts := make([]autodiff.Value, len(v.Elems))
		for i, el := range v.Elems {
			if el.AD.Len() != d {
				return pts, 0, 0, fmt.Errorf("point %d has dimension %d, point 1 has %d", i+1, el.AD.Len(), d)
			}
			parts[i] = el.AD
		}
		return t.Concat(autodiff.VectorShape(len(parts)*d), parts...), len(parts), d, nil
	}
	return pts, 0, 0, fmt.Errorf("points must be a vector, a matrix or an array of vectors, got %s", v.Type)
}

// logWeights returns the given log-weights, one tape value per channel
// (a vector is one channel, an array of vectors one per element; each of
// length n), or uniform ones, −log n each, as one channel.
func logWeights(t *autodiff.Tape, v stdlib.Value, n int, name, fn string) ([]autodiff.Value, error) {
	if v.Type.IsBad() {
		w := make([]float64, n)
		for i := range w {
			w[i] = -math.Log(float64(n))
		}
		return []autodiff.Value{t.ConstVec(w)}, nil
	}
	if v.Type.Dims == 0 {
		if v.AD.Len() != n {
			return nil, fmt.Errorf("%s: %s has %d entries but there are %d points", fn, name, v.AD.Len(), n)
		}
		return []autodiff.Value{v.AD}, nil
	}
	if len(v.Elems) == 0 {
		return nil, fmt.Errorf("%s: %s is an empty array: give at least one channel", fn, name)
	}
	out := make([]autodiff.Value, len(v.Elems))
	for c, el := range v.Elems {
		if el.AD.Len() != n {
			return nil, fmt.Errorf("%s: %s[%d] has %d entries but there are %d points", fn, name, c+1, el.AD.Len(), n)
		}
		out[c] = el.AD
	}
	return out, nil
}

// channels returns the number of problems of a call with na and nb
// channels of log-weights: one channel is shared by all.
func channels(na, nb int, fn string) (int, error) {
	if na != nb && na != 1 && nb != 1 {
		return 0, fmt.Errorf("%s: log_a has %d channels and log_b %d: give as many, or one for all", fn, na, nb)
	}
	return max(na, nb), nil
}

// DefaultIters is the number of iterations of a call without tol or
// iters, and DefaultTolCap the cap of a call with tol and without iters.
const (
	DefaultIters  = 100
	DefaultTolCap = 10000
)

// options reads the named settings, and the backend ("auto", "cpu" or
// "cuda"). With tol the gradient is the envelope one (the only one of a
// converged value: the number of iterations depends on the inputs), iters
// is the cap (DefaultTolCap when absent), and the problems run on the
// CPU (package ot; the GPU runs fixed iterations only).
func options(c *stdlib.Context, named []stdlib.Value, fn string) (ot.Options, string, error) {
	t := c.Tape
	opt := ot.Options{Iters: DefaultIters, Balanced: true}
	backend := "auto"
	scalar := func(v stdlib.Value) float64 {
		if v.Type == lang.IntType {
			return float64(v.Int)
		}
		return t.Scalar(v.AD)
	}
	if len(named) <= argBackend || named[argEps].Type.IsBad() {
		return opt, backend, fmt.Errorf("%s: eps = ... is required", fn)
	}
	opt.Eps = scalar(named[argEps])
	if !(opt.Eps > 0) || math.IsInf(opt.Eps, 1) {
		return opt, backend, fmt.Errorf("%s: eps must be positive and finite, got %g", fn, opt.Eps)
	}
	itersGiven := !named[argIters].Type.IsBad()
	if itersGiven {
		opt.Iters = named[argIters].Int
		if opt.Iters < 1 {
			return opt, backend, fmt.Errorf("%s: iters must be at least 1, got %d", fn, opt.Iters)
		}
	}
	if v := named[argTol]; !v.Type.IsBad() {
		opt.Tol = scalar(v)
		if !(opt.Tol > 0) || math.IsInf(opt.Tol, 1) {
			return opt, backend, fmt.Errorf("%s: tol must be positive and finite, got %g (omit tol for a fixed number of iterations)", fn, opt.Tol)
		}
		if !itersGiven {
			opt.Iters = DefaultTolCap
		}
	}
	if c.Iters > 0 {
		opt.Iters = c.Iters // with tol, the cap
	}
	if k, ok := c.Refine[c.Pos]; ok && k > 0 {
		opt.Iters *= k
		opt.Tol /= float64(k)
	}
	if v := named[argRho]; !v.Type.IsBad() {
		opt.Rho = scalar(v)
		opt.Balanced = false
		if !(opt.Rho > 0) || math.IsInf(opt.Rho, 1) {
			return opt, backend, fmt.Errorf("%s: rho must be positive and finite, got %g (omit rho for the balanced divergence)", fn, opt.Rho)
		}
	}
	if v := named[argGrad]; !v.Type.IsBad() && v.Str == "envelope" {
		opt.Grad = ot.GradEnvelope
	}
	if opt.Tol > 0 {
		if v := named[argGrad]; !v.Type.IsBad() && v.Str == "unrolled" {
			return opt, backend, fmt.Errorf(`%s: grad = "unrolled" cannot be used with tol: the number of iterations depends on the inputs, and the gradient of the converged value is the envelope gradient (omit grad, or give "envelope")`, fn)
		}
		opt.Grad = ot.GradEnvelope
	}
	if v := named[argBackend]; !v.Type.IsBad() {
		backend = v.Str
	}
	if backend == "cuda" && opt.Tol > 0 {
		return opt, backend, fmt.Errorf(`%s: tol runs on the CPU only (the GPU runs a fixed number of iterations): use backend = "auto" or "cpu"`, fn)
	}
	if backend == "cuda" && !cudaAvailable() {
		return opt, backend, fmt.Errorf(`%s: backend = "cuda" needs shm built with the cuda tag and a GPU; use "auto" or "cpu"`, fn)
	}
	return opt, backend, nil
}

// checkHistory refuses, before anything is solved, a call whose unrolled
// gradient (want, without tol) would keep an iteration history
// (ot.HistoryWords, per channel) of more than limit words: the memory one
// evaluation may hold (the tape's limit).
func checkHistory(fn string, opt ot.Options, want bool, n, m, d, channels int, limit int64) error {
	if !want || opt.Tol > 0 || opt.Grad != ot.GradUnrolled || limit <= 0 {
		return nil
	}
	words := float64(channels) * ot.HistoryWords(max(n, m), d, opt.Iters)
	if words <= float64(limit) {
		return nil
	}
	return stdlib.MemoryErrorf("%s: the history of %d iterations over %d and %d points kept for the exact gradient needs %s, more than the %s one evaluation may hold; give tol (the converged value, with its envelope gradient and no history), grad = \"envelope\", or fewer iterations",
		fn, opt.Iters, n, m, sysmem.Bytes(8*words), sysmem.Bytes(8*float64(limit)))
}

// chainState is a chain's Sinkhorn working memory: one channelState per
// channel of its largest call, the scratch of fixedCoords, and the
// iteration counts of its calls.
type chainState struct {
	chans  []*channelState
	elems  []bool    // fixedCoords' flags per element
	fixed  [2][]bool // fixedCoords' results for x and y
	counts Counts
	byCall map[lang.Pos]*Counts // counts by the call's position (stdlib.Context.Pos)
}

// MemoryWords is the memory the chain's Sinkhorn state holds, in 8-byte
// words (stdlib.MemoryHolder): its workspaces and their plans.
func (s *chainState) MemoryWords() int64 {
	var n int64
	for _, cs := range s.chans {
		if cs.ws != nil {
			n += cs.ws.MemoryWords()
		}
		n += int64(cap(cs.plan))
	}
	return n
}

// call returns the counts of the call at pos, created on first use.
func (s *chainState) call(pos lang.Pos) *Counts {
	if s.byCall == nil {
		s.byCall = map[lang.Pos]*Counts{}
	}
	c := s.byCall[pos]
	if c == nil {
		c = &Counts{}
		s.byCall[pos] = c
	}
	return c
}

// failed and add count a call at pos in the chain's totals and the
// call's own.
func (s *chainState) failed(pos lang.Pos, err error) {
	s.counts.failed(err)
	s.call(pos).failed(err)
}

func (s *chainState) add(pos lang.Pos, it ot.Iterations) {
	s.counts.add(it)
	s.call(pos).add(it)
}

// Counts are the iteration counts of one chain's Sinkhorn calls (sinkhorn,
// sinkhorn_ot, sinkhorn_plan), kept for a report after sampling: with tol,
// how many iterations the problems took to converge.
type Counts struct {
	// Last holds the counts of the problems the chain's last successful
	// call solved (its last channel's): the x–y, x–x and y–y problems of
	// a divergence, the x–y problem of the others; 0 for a problem it
	// did not solve (a y–y term of data taken from the cache).
	Last ot.Iterations
	// Problems is the number of problems the successful calls solved
	// (each channel's count), Iters their iterations in total, and Max
	// the most iterations of one.
	Problems, Iters int64
	Max             int
	// NotConverged is the number of calls that failed because a problem
	// reached the cap before tol (ot.ErrNotConverged): proposals the
	// sampler rejected for it.
	NotConverged int64
}

// add counts the problems of it.
func (c *Counts) add(it ot.Iterations) {
	c.Last = it
	for _, n := range []int{it.XY, it.XX, it.YY} {
		if n > 0 {
			c.Problems++
			c.Iters += int64(n)
			c.Max = max(c.Max, n)
		}
	}
}

// failed counts a failed call whose error is err.
func (c *Counts) failed(err error) {
	if errors.Is(err, ot.ErrNotConverged) {
		c.NotConverged++
	}
}

// ChainCounts returns the iteration counts kept in a chain's State
// (stdlib.Context.State; the zero Counts when the chain has made no
// Sinkhorn call). It must not run concurrently with the chain's
// evaluations.
func ChainCounts(state map[string]any) Counts {
	if s, ok := state[stateKey].(*chainState); ok {
		return s.counts
	}
	return Counts{}
}

// CallCounts returns the counts of the call at pos kept in a chain's
// State (the zero Counts when it has made no such call), under the same
// condition as ChainCounts.
func CallCounts(state map[string]any, pos lang.Pos) Counts {
	if s, ok := state[stateKey].(*chainState); ok && s.byCall[pos] != nil {
		return *s.byCall[pos]
	}
	return Counts{}
}

// channelState is the working memory of one channel's problem: its
// workspaces (CPU, and GPU when the problem goes there), its cached y–y
// terms, and its gradient (when a call has several channels).
type channelState struct {
	gpuChannel
	ws    *ot.Workspace
	cache selfCache[*ot.SelfTerm]
	plan  []float64
	grad  ot.Grad
	buf   [4][]float64
}

// fixedCoords returns, for the n points pts of dimension d (side 0: x,
// 1: y), the flags of ot.Grad.FixedX: the coordinates whose every entry
// has a zero derivative on the tape (the columns of data beside
// simulated ones that append_col puts together), or nil when there is
// none.
func (s *chainState) fixedCoords(t *autodiff.Tape, pts autodiff.Value, n, d, side int) []bool {
	if pts.IsConst() {
		return nil
	}
	s.elems = slices.Grow(s.elems[:0], n*d)[:n*d]
	clear(s.elems)
	if !t.FixedElements(pts, s.elems) {
		return nil
	}
	f := slices.Grow(s.fixed[side][:0], d)[:d]
	s.fixed[side] = f
	some := false
	for k := range f {
		f[k] = true
		for i := range n {
			if !s.elems[i*d+k] {
				f[k] = false
				break
			}
		}
		some = some || f[k]
	}
	if !some {
		return nil
	}
	return f
}

// selfCache keeps the last y–y terms a chain computed (of type T: the
// CPU's or the GPU's), with the inputs they were computed from.
type selfCache[T any] struct {
	entries []selfEntry[T]
}

// selfEntry is a cached y–y term with the inputs it was computed from.
type selfEntry[T any] struct {
	y, logB []float64
	opt     ot.Options
	grid    bool // computed by the separable grid path
	term    T
}

// get returns the cached term of y, log_b, the options and the path
// (grid), computing it with compute on first use; it keeps the last 8.
func (c *selfCache[T]) get(y, logB []float64, opt ot.Options, grid bool, compute func() (T, error)) (T, error) {
	for _, e := range c.entries {
		if e.opt == opt && e.grid == grid && slices.Equal(e.y, y) && slices.Equal(e.logB, logB) {
			return e.term, nil
		}
	}
	term, err := compute()
	if err != nil {
		return term, err
	}
	if len(c.entries) >= 8 {
		c.entries = c.entries[1:]
	}
	c.entries = append(c.entries, selfEntry[T]{y: slices.Clone(y), logB: slices.Clone(logB), opt: opt, grid: grid, term: term})
	return term, nil
}

const stateKey = "sinkhorn"

// state returns the chain's Sinkhorn state with channel states for k
// channels of problems of n and m points in dimension d.
func state(c *stdlib.Context, k, n, m, d int) (*chainState, error) {
	s, _ := c.State[stateKey].(*chainState)
	if s == nil {
		s = &chainState{}
		c.State[stateKey] = s
	}
	for len(s.chans) < k {
		s.chans = append(s.chans, &channelState{})
	}
	for _, cs := range s.chans[:k] {
		if cs.ws == nil || cs.ws.Dim() != d {
			path, err := envPath()
			if err != nil {
				return nil, err
			}
			cs.ws = ot.NewWorkspace(n, m, d)
			cs.ws.SetPath(path)
			cs.cache = selfCache[*ot.SelfTerm]{}
		}
	}
	return s, nil
}

// gpuReplicates is the number of crn replicates a process with a GPU
// evaluates at once per chain at least: their Sinkhorn problems wait for
// the GPU, not for a core, and the device batches the concurrent ones into
// one launch, so a replicate left waiting for a worker costs a launch.
const gpuReplicates = 16

// ReplicateWorkers returns the number of crn replicates to evaluate at once
// in a chain given cores, the cores the chain may use: cores itself, or at
// least gpuReplicates when a GPU is usable (the values do not depend on it).
func ReplicateWorkers(cores int) int {
	if cudaAvailable() {
		return max(cores, gpuReplicates)
	}
	return max(cores, 1)
}

// PathEnv is the environment variable that selects the CPU kernels of the
// Sinkhorn problems on scattered points: "auto" (the default: the scaling
// path up to 2^23 point pairs, 2^19 in 1-D, the sparse sweeps beyond,
// dense sweeps where too few terms can be dropped), "dense" (every term:
// the reference), "sparse" or "scaling". The paths agree to rounding; the
// variable is for benchmarks and tests.
const PathEnv = "SHM_SINKHORN_PATH"

func envPath() (ot.Path, error) {
	v := os.Getenv(PathEnv)
	if v == "" {
		return ot.PathAuto, nil
	}
	p, err := ot.ParsePath(v)
	if err != nil {
		return p, fmt.Errorf("%s=%s: want auto, dense, sparse or scaling", PathEnv, v)
	}
	return p, nil
}

// selfTerm returns the cached y–y term for constant y and log_b, computing
// it on first use (with the separable path when g is a grid), and whether
// it computed it.
func (cs *channelState) selfTerm(y, logB []float64, opt ot.Options, g ot.Grid) (st *ot.SelfTerm, solved bool, err error) {
	onGrid := g.N() > 0
	st, err = cs.cache.get(y, logB, opt, onGrid, func() (*ot.SelfTerm, error) {
		solved = true
		if onGrid {
			return cs.ws.GridSelfTerm(g, logB, opt)
		}
		return cs.ws.SelfTerm(y, logB, opt)
	})
	return st, solved, err
}

// problem is one channel's Sinkhorn problem: what to compute (k, backend,
// grid, options), the values of its inputs, whether its y–y term is data
// (constYY), where its gradient goes (nil: nowhere), and, once solved, its
// value and the iteration counts of the problems it solved (Counts.Last).
type problem struct {
	k              kind
	backend        string
	d              int
	g              ot.Grid
	x, y, la, lb   []float64
	opt            ot.Options
	constYY        bool
	grad           *ot.Grad
	fixedX, fixedY []bool // the CPU kernels skip these coordinates' derivatives
	value          float64
	iters          ot.Iterations
}

// solve computes pr on the channel's workspaces, on the GPU when its
// backend sends it there (onGPU, which reports it in gpu), as a member of
// cohort (nil for none).
func (cs *channelState) solve(pr *problem, run context.Context, cohort *stdlib.Cohort) (gpu bool, err error) {
	cs.ws.SetContext(run)
	if gpu, err = cs.onGPU(cohort, pr); gpu || err != nil {
		return gpu, err
	}
	return false, cs.solveCPU(pr)
}

// solveCPU computes pr with package ot.
func (cs *channelState) solveCPU(pr *problem) error {
	var err error
	if pr.grad != nil {
		pr.grad.FixedX, pr.grad.FixedY = pr.fixedX, pr.fixedY
	}
	var yy *ot.SelfTerm
	var yySolved bool
	if pr.constYY {
		if yy, yySolved, err = cs.selfTerm(pr.y, pr.lb, pr.opt, pr.g); err != nil {
			return err
		}
	}
	var res ot.Result
	switch {
	case pr.g.N() > 0 && pr.k == divergence:
		res, err = cs.ws.GridDivergence(pr.g, pr.la, pr.lb, pr.opt, yy, pr.grad)
		pr.value = res.Divergence
	case pr.g.N() > 0:
		pr.value, err = cs.ws.GridOT(pr.g, pr.la, pr.lb, pr.opt, pr.grad)
	case pr.k == divergence:
		res, err = cs.ws.Divergence(pr.x, pr.y, pr.la, pr.lb, pr.opt, yy, pr.grad)
		pr.value = res.Divergence
	default:
		pr.value, err = cs.ws.OT(pr.x, pr.y, pr.la, pr.lb, pr.opt, pr.grad)
	}
	pr.iters = cs.ws.Iterations()
	if yy != nil && !yySolved {
		pr.iters.YY = 0 // solved by an earlier call
	}
	return err
}

func call(c *stdlib.Context, fn string, args, named []stdlib.Value, k kind) (stdlib.Value, error) {
	t := c.Tape
	x, n, d, err := points(t, args[0])
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s: x: %v", fn, err)
	}
	y, m, dy, err := points(t, args[1])
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s: y: %v", fn, err)
	}
	if d != dy {
		return stdlib.Value{}, fmt.Errorf("%s: x has points of dimension %d, y of dimension %d", fn, d, dy)
	}
	opt, backend, err := options(c, named, fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	las, err := logWeights(t, named[argLogA], n, "log_a", fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	lbs, err := logWeights(t, named[argLogB], m, "log_b", fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	nch, err := channels(len(las), len(lbs), fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	s, err := state(c, nch, n, m, d)
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
	}
	if k == plan {
		// One channel: sinkhorn_plan's signature takes no arrays.
		cs := s.chans[0]
		cs.ws.SetContext(c.Run)
		p, err := cs.ws.Plan(t.Val(x), t.Val(y), t.Val(las[0]), t.Val(lbs[0]), opt, cs.plan)
		if err != nil {
			s.failed(c.Pos, err)
			return stdlib.Value{}, fmt.Errorf("%s: %w", fn, err)
		}
		s.add(c.Pos, cs.ws.Iterations())
		cs.plan = p
		return stdlib.ADValue(t.NewConst(autodiff.MatrixShape(n, m), p)), nil
	}
	// Both supports fixed and the same regular grid: the cost separates
	// and the separable path (O(H·W·(H+W)) per half-iteration instead of
	// O((H·W)²)) gives the same result, on the CPU or the GPU.
	var g ot.Grid
	if d == 2 && n == m && x.IsConst() && y.IsConst() {
		if xv := t.Val(x); slices.Equal(xv, t.Val(y)) {
			g, _ = unitGrid(xv)
		}
	}
	// One node for all channels: its inputs are x, y, then the channels'
	// log-weights.
	ins := append(append([]autodiff.Value{x, y}, las...), lbs...)
	node := t.ScalarPartials(ins...)
	dA, dB := func(c int) []float64 { return node.D(2 + min(c, len(las)-1)) },
		func(c int) []float64 { return node.D(2 + len(las) + min(c, len(lbs)-1)) }
	want := !c.NoGrad && slices.ContainsFunc(ins, func(v autodiff.Value) bool { return !v.IsConst() })
	if err := checkHistory(fn, opt, want, n, m, d, nch, t.Limit()); err != nil {
		return stdlib.Value{}, err
	}
	var fixedX, fixedY []bool
	if want && node.D(0) != nil {
		fixedX = s.fixedCoords(t, x, n, d, 0)
	}
	if want && node.D(1) != nil {
		fixedY = s.fixedCoords(t, y, m, d, 1)
	}
	probs := make([]problem, nch)
	for ch := range probs {
		la, lb := las[min(ch, len(las)-1)], lbs[min(ch, len(lbs)-1)]
		pr := &probs[ch]
		*pr = problem{k: k, backend: backend, d: d, g: g, x: t.Val(x), y: t.Val(y), la: t.Val(la), lb: t.Val(lb), opt: opt,
			constYY: k == divergence && y.IsConst() && lb.IsConst(), fixedX: fixedX, fixedY: fixedY}
		if !want {
			continue
		}
		if nch == 1 {
			// The node's partials are the gradient.
			pr.grad = &ot.Grad{X: node.D(0), Y: node.D(1), LogA: dA(0), LogB: dB(0)}
			continue
		}
		pr.grad = s.chans[ch].gradFor([4][]float64{node.D(0), node.D(1), dA(ch), dB(ch)})
	}
	if err := solveChannels(fn, s.chans[:nch], probs, c.Run, c.Cohort); err != nil {
		s.failed(c.Pos, err)
		return stdlib.Value{}, err
	}
	for _, pr := range probs {
		s.add(c.Pos, pr.iters)
	}
	// The values and gradients, summed over the channels in order.
	value := probs[0].value
	for _, pr := range probs[1:] {
		value += pr.value
	}
	if want && nch > 1 {
		for i := range ins {
			if d := node.D(i); d != nil {
				clear(d)
			}
		}
		for ch, pr := range probs {
			add(node.D(0), pr.grad.X)
			add(node.D(1), pr.grad.Y)
			add(dA(ch), pr.grad.LogA)
			add(dB(ch), pr.grad.LogB)
		}
	}
	node.Out()[0] = value
	return stdlib.RealValue(node.Value()), nil
}

// gradFor returns the channel's gradient buffers for a call whose node
// wants the partials dst (∂/∂x, ∂/∂y, ∂/∂log_a, ∂/∂log_b; nil: not
// wanted), sized like them (a solve overwrites them: ot.Grad).
func (cs *channelState) gradFor(dst [4][]float64) *ot.Grad {
	var g [4][]float64
	for i, d := range dst {
		if d != nil {
			cs.buf[i] = slices.Grow(cs.buf[i][:0], len(d))[:len(d)]
			g[i] = cs.buf[i]
		}
	}
	cs.grad = ot.Grad{X: g[0], Y: g[1], LogA: g[2], LogB: g[3]}
	return &cs.grad
}

// add adds src to dst elementwise (nothing when either is nil).
func add(dst, src []float64) {
	if dst == nil || src == nil {
		return
	}
	for i, v := range src {
		dst[i] += v
	}
}

// solveChannels solves the problems of a call of fn, problem c on channel
// state chans[c]: one alone on the calling goroutine; several at once,
// each on its own goroutine, which join the caller's cohort (or form one
// with it), so that on the GPU they share a launch. It returns the first
// error, naming fn and, with several, the channel.
func solveChannels(fn string, chans []*channelState, probs []problem, run context.Context, cohort *stdlib.Cohort) error {
	fail := func(ch int, gpu bool, err error) error {
		where := fn
		if len(probs) > 1 {
			where += fmt.Sprintf(": channel %d", ch+1)
		}
		if gpu {
			where += " (cuda)"
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	if len(probs) == 1 {
		if gpu, err := chans[0].solve(&probs[0], run, cohort); err != nil {
			return fail(0, gpu, err)
		}
		return nil
	}
	if cohort == nil {
		// The caller and the channels' goroutines: one cohort, which the
		// caller leaves when it has solved its channel.
		cohort = stdlib.NewCohort(1)
		defer cohort.Done()
	}
	cohort.Join(len(probs) - 1)
	gpus := make([]bool, len(probs))
	errs := make([]error, len(probs))
	var wg sync.WaitGroup
	for ch := 1; ch < len(probs); ch++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cohort.Done()
			gpus[ch], errs[ch] = chans[ch].solve(&probs[ch], run, cohort)
		}()
	}
	gpus[0], errs[0] = chans[0].solve(&probs[0], run, cohort)
	// Waiting for the other channels, the caller computes nothing that a
	// batch could wait for.
	cohort.Wait()
	wg.Wait()
	cohort.Resume()
	for ch, err := range errs {
		if err != nil {
			return fail(ch, gpus[ch], err)
		}
	}
	return nil
}

// unitGrid reports whether the n×2 row-major points pts are a regular
// H×W grid with unit spacing in row-major order, (r0 + i, c0 + j) for
// point i·W + j (as grid_points makes them, any common shift), and
// returns its shape. A grid of one row or one column is not reported (the
// dense path is as fast).
func unitGrid(pts []float64) (ot.Grid, bool) {
	n := len(pts) / 2
	if n < 4 {
		return ot.Grid{}, false
	}
	r0, c0 := pts[0], pts[1]
	w := 1
	for w < n && pts[2*w] == r0 {
		w++
	}
	if w < 2 || n%w != 0 || n/w < 2 {
		return ot.Grid{}, false
	}
	for k := range n {
		if pts[2*k] != r0+float64(k/w) || pts[2*k+1] != c0+float64(k%w) {
			return ot.Grid{}, false
		}
	}
	return ot.Grid{H: n / w, W: w}, true
}

// resolution is the median distance from each point to its nearest other
// point. It is a data summary used to set eps; it is treated as a constant
// (no gradient flows through it).
func resolution(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
	t := c.Tape
	x, n, d, err := points(t, args[0])
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("resolution: %v", err)
	}
	h, err := ot.Resolution(t.Val(x), n, d)
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("resolution: %v", err)
	}
	return stdlib.RealValue(t.Const(h)), nil
}
