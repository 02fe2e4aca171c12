package ot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
)

// GradMode selects how gradients are computed.
type GradMode int

const (
	// GradUnrolled is the exact derivative of the value computed after
	// exactly Options.Iters iterations, through every iteration. It is
	// not available with Options.Tol.
	GradUnrolled GradMode = iota
	// GradEnvelope is the gradient of the dual objective at the final
	// potentials held fixed (README "Envelope gradient"), the gradient
	// of the converged value with Options.Tol.
	GradEnvelope
)

func (m GradMode) String() string {
	switch m {
	case GradUnrolled:
		return "unrolled"
	case GradEnvelope:
		return "envelope"
	}
	return fmt.Sprintf("GradMode(%d)", int(m))
}

// Options are the settings of one Sinkhorn evaluation.
//
// With Tol = 0 exactly Iters iterations are run. With Tol > 0 (the
// converged mode) the iterations run from zero potentials, annealing eps
// down to Eps first in an x–y problem whose Eps is small beside the
// points' spread, until the potentials' change over one iteration, in
// units of eps (its spread in balanced mode), is at most Tol (package
// documentation, "The converged mode"), Iters being the cap of all of
// them: an evaluation that reaches it first returns an error wrapping
// ErrNotConverged. The converged mode needs Grad = GradEnvelope.
type Options struct {
	Eps      float64  // entropic regularization, > 0
	Rho      float64  // marginal penalty, > 0 and finite; ignored when Balanced
	Balanced bool     // balanced problem: requires equal masses, tau = 1
	Iters    int      // number of iterations T ≥ 1, each an f then a g update (with Tol: the cap)
	Tol      float64  // the converged mode's tolerance, ≥ 0 and finite; 0 for Iters iterations
	Grad     GradMode // how gradients are computed when they are requested
}

// tau returns the damping factor of the updates.
func (o Options) tau() float64 {
	if o.Balanced {
		return 1
	}
	return o.Rho / (o.Rho + o.Eps)
}

func (o Options) validate() error {
	if !(o.Eps > 0) || math.IsInf(o.Eps, 0) {
		return fmt.Errorf("ot: eps must be finite and > 0, got %g", o.Eps)
	}
	if o.Iters < 1 {
		return fmt.Errorf("ot: iters must be ≥ 1, got %d", o.Iters)
	}
	if !o.Balanced && (!(o.Rho > 0) || math.IsInf(o.Rho, 0)) {
		return fmt.Errorf("ot: unbalanced mode needs rho finite and > 0, got %g (use balanced mode for rho = ∞)", o.Rho)
	}
	if o.Grad != GradUnrolled && o.Grad != GradEnvelope {
		return fmt.Errorf("ot: unknown gradient mode %v", o.Grad)
	}
	if !(o.Tol >= 0) || math.IsInf(o.Tol, 0) {
		return fmt.Errorf("ot: tol must be finite and ≥ 0 (0 for a fixed number of iterations), got %g", o.Tol)
	}
	if o.Tol > 0 && o.Grad == GradUnrolled {
		return fmt.Errorf("ot: tol = %g needs the envelope gradient (Grad = GradEnvelope): the unrolled gradient would differentiate through a number of iterations that depends on the inputs", o.Tol)
	}
	return nil
}

// ErrNotConverged is wrapped by the error of an evaluation in the
// converged mode (Options.Tol) whose iterations reached the cap
// Options.Iters before the tolerance.
var ErrNotConverged = errors.New("not converged")

// Iterations are the numbers of iterations of the problems of one
// evaluation: Options.Iters, or with Options.Tol the number that met the
// tolerance, the annealing's included. A problem that was not solved
// counts 0 (XX and YY of OT and Plan, XX and XY of SelfTerm); YY of a
// Divergence given a SelfTerm is that term's.
type Iterations struct {
	XY, XX, YY int
}

// Grad receives gradients. Each non-nil slice must have the length of the
// corresponding input (n·d, m·d, n, m) and is overwritten with the partial
// derivative of the returned value; nil slices are not computed.
//
// FixedX and FixedY, when not nil, hold d flags: coordinate k of the
// points of x (of y) is fixed when FixedX[k] (FixedY[k]) is set, and its
// derivatives are not wanted: their entries of X (Y) are set to zero.
// The other entries are the same, bit for bit, as without the flags; the
// scaling path then forms its gradient sums for the wanted coordinates
// only (for points whose coordinates are partly data, such as a design
// variable beside a simulated response).
type Grad struct {
	X, Y, LogA, LogB []float64
	FixedX, FixedY   []bool
}

// clearFixed zeroes the entries of X and Y at fixed coordinates.
func (g *Grad) clearFixed(d int) {
	for _, s := range [2]struct {
		grad  []float64
		fixed []bool
	}{{g.X, g.FixedX}, {g.Y, g.FixedY}} {
		if s.grad == nil {
			continue
		}
		for k, f := range s.fixed {
			if !f {
				continue
			}
			for i := k; i < len(s.grad); i += d {
				s.grad[i] = 0
			}
		}
	}
}

func (g *Grad) wanted() bool {
	return g != nil && (g.X != nil || g.Y != nil || g.LogA != nil || g.LogB != nil)
}

// Result holds the debiased divergence and its parts, with the README's
// conventions: in unbalanced mode each OT value includes its constant
// eps·m·m' (these constants cancel in Divergence, which is computed without
// them).
type Result struct {
	Divergence       float64
	OTxy, OTxx, OTyy float64
	MassA, MassB     float64
	YYFromCache      bool       // OTyy came from a SelfTerm
	Iters            Iterations // the problems' iteration counts
}

// SelfTerm is the y–y problem of the divergence, computed once per data set
// when y and log_b are constants (Workspace.SelfTerm). Passing it to
// Divergence skips the y–y problem and its gradient; the caller guarantees
// that it was computed from the same y and log_b.
type SelfTerm struct {
	value0 float64 // OT_yy without its eps·m_b² constant
	mass   float64
	m      int
	opt    Options
	grid   Grid
	iters  int // the iterations it took
}

// Value returns OT_yy with the README's convention.
func (s *SelfTerm) Value() float64 {
	if s.opt.Balanced {
		return s.value0
	}
	return s.value0 + s.opt.Eps*s.mass*s.mass
}

// Mass returns m_b.
func (s *SelfTerm) Mass() float64 { return s.mass }

// Iters returns the number of iterations the term's problem took.
func (s *SelfTerm) Iters() int { return s.iters }

func (s *SelfTerm) check(m int, opt Options, g Grid) error {
	if s.m != m || s.opt.Eps != opt.Eps || s.opt.Balanced != opt.Balanced ||
		s.opt.Iters != opt.Iters || s.opt.Tol != opt.Tol || (!opt.Balanced && s.opt.Rho != opt.Rho) || s.grid != g {
		return errors.New("ot: the cached y–y term was computed for other sizes or options")
	}
	return nil
}

// Workspace holds every buffer of the Sinkhorn evaluations of one goroutine.
// It is not safe for concurrent use; give each goroutine (chain) its own.
// Buffers grow to the largest sizes seen; repeated evaluations at the same
// sizes allocate nothing.
type Workspace struct {
	e *engine
}

// NewWorkspace returns a workspace for points of dimension d, with buffers
// sized for n x-points and m y-points, that splits large problems across
// runtime.GOMAXPROCS(0) goroutines.
func NewWorkspace(n, m, d int) *Workspace {
	return NewWorkspaceWorkers(n, m, d, 0)
}

// NewWorkspaceWorkers is NewWorkspace with an explicit number of goroutines
// (workers ≤ 0 means runtime.GOMAXPROCS(0)). Results do not depend on it.
func NewWorkspaceWorkers(n, m, d, workers int) *Workspace {
	if d < 1 {
		d = 1
	}
	e := &engine{d: d, pool: newPool(workers), parallelMin: defaultParallelMin, simd: haveSIMD, sp: new(sparseState)}
	e.pool.run = e.worker
	e.bufs = make([][]float64, e.pool.workers)
	e.reserve(max(n, m, 1))
	w := &Workspace{e: e}
	runtime.AddCleanup(w, func(p *pool) { p.close() }, e.pool)
	return w
}

// Close stops the workspace's goroutines. It is optional (they are stopped
// when the workspace is garbage collected); the workspace stays usable.
func (w *Workspace) Close() { w.e.pool.close() }

// SetContext makes later evaluations stop early once ctx is done: the
// iterations check it once per Sinkhorn iteration (forward and backward),
// and the evaluation returns an error wrapping ctx.Err() (no result; the
// gradients and Potentials then hold partial values). A nil ctx (the
// default) is never done.
func (w *Workspace) SetContext(ctx context.Context) {
	w.e.ctx, w.e.done = ctx, nil
	if ctx != nil {
		w.e.done = ctx.Done()
	}
}

// halt reports whether the evaluation must stop (its context is done),
// remembering it for interrupted.
func (e *engine) halt() bool {
	if !e.halted && e.done != nil {
		select {
		case <-e.done:
			e.halted = true
		default:
		}
	}
	return e.halted
}

// stopping reports whether the context is done, without recording it:
// safe for the goroutines of a sweep, whose caller then calls halt.
func (e *engine) stopping() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// interrupted returns the error of an evaluation that halted, nil
// otherwise, and resets the state for the next one.
func (e *engine) interrupted() error {
	if !e.halted {
		return nil
	}
	e.halted = false
	return fmt.Errorf("ot: interrupted: %w", e.ctx.Err())
}

// Dim returns the dimension of the points.
func (w *Workspace) Dim() int { return w.e.d }

// SetParallelThreshold sets the number of kernel terms (rows × columns of
// one sweep) from which a sweep is split across goroutines.
func (w *Workspace) SetParallelThreshold(terms int) { w.e.parallelMin = terms }

// Potentials returns the final potentials f (n) and g (m) of the x–y problem
// of the last Divergence or OT call. The slices are reused by later calls.
func (w *Workspace) Potentials() (f, g []float64) { return w.e.fxy, w.e.gxy }

// Iterations returns the iteration counts of the last evaluation
// (Divergence, OT, Plan, SelfTerm or their grid versions; see
// Iterations). After an error they are those of the problems run before
// it, and for the problem that did not converge the iterations it ran
// (the cap, unless its potentials became NaN).
func (w *Workspace) Iterations() Iterations { return w.e.counts }

// defaultParallelMin is the size (kernel terms per sweep) from which rows are
// split across goroutines. Measured on the 2-core development machine while
// other jobs ran (BENCHMARKS-ot.md, BenchmarkHalfStep): two workers lost at
// 128² and 256² terms and won at 1024²; on idle cores the crossover is
// lower, and callers that run one workspace per core (parallel chains)
// should use NewWorkspaceWorkers(..., 1).
const defaultParallelMin = 512 * 512

// side is one measure of a problem: points (n×d) and log-weights (n).
type side struct {
	pts, logw []float64
	n         int
	tree      *kdTree // the points' tree when they are in its order (sparse path)
}

// engine holds the buffers and the worker pool.
type engine struct {
	d int
	// usedSparse is set when a problem of the current evaluation ran on
	// the sparse or scaling path.
	usedSparse  bool
	pool        *pool
	parallelMin int
	simd        bool // use the AVX2 + FMA kernels
	job         sweepJob

	bufs             [][]float64 // per worker row buffers
	blkSum, blkGrad  []float64
	colSum, colGrad  []float64
	fHist, gHist     []float64
	f, g             []float64 // final potentials when history is not kept
	u, s, out        []float64
	fbar, gbar, gnew []float64
	rowGrad          []float64
	fxy, gxy         []float64
	coordBuf         []int         // a problem's gradient coordinates (grads.coords)
	packed           [2]packedGrad // backward's packed gradients
	grid             gridBufs
	onGrid           bool // sweeps use the separable grid path (e.grid.g)

	path      Path          // dense, sparse, scaling or chosen per sweep
	sc        *scalingState // the scaling path's epochs (scaling.go)
	scalingOn bool          // the problem being solved is on the scaling path
	// scalingCulled: its epochs are absorbed from the sparse sweeps'
	// culling (scaling_cull.go); forceCulled makes PathScaling absorb so at
	// any size (tests).
	scalingCulled, forceCulled bool
	absorbing                  absorbTask   // a culled absorption's blocks
	backKernel                 backTask     // a culled backward sweep's blocks
	sp                         *sparseState // the sparse path's buffers
	sparseOn                   bool         // the problem being solved is in tree order
	symmetric                  bool         // and is symmetric (x–x, y–y; sparseProblem)
	gather                     gatherTask   // the scaling path's products split across workers
	phase                      sparsePhase  // the part of a sparse sweep the workers run
	sparseNB                   int          // the number of blocks of the sparse sweep
	colTask                    colTask      // the column reduction in progress (sumColumns)

	ctx    context.Context // SetContext's context, nil for none
	done   <-chan struct{} // its Done channel
	halted bool            // the current evaluation was interrupted

	// The converged mode (consts.tol): the previous iteration's
	// potentials; the iteration count and the last value of the criterion
	// of solve's last problem, and whether it met the tolerance; the
	// error of the problem that did not (runProblem), and the counts of
	// the current evaluation.
	fPrev, gPrev []float64
	tbuf         []float64 // translation's
	iters        int
	crit         float64
	converged    bool
	notConv      error
	counts       Iterations
	// When the converged mode anneals (anneal.go), and the annealing's
	// iterations in solve's last problem and in the last x–y problem.
	annealing            annealMode
	annealed, annealedXY int
}

// MemoryWords is the memory the workspace holds, in 8-byte words: its
// per-point buffers, the iteration history, the scaling path's records,
// and its workers' goroutine stacks (about 8 KiB each).
func (w *Workspace) MemoryWords() int64 {
	e := w.e
	n := 0
	for _, b := range e.bufs {
		n += cap(b)
	}
	for _, b := range [][]float64{e.blkSum, e.blkGrad, e.colSum, e.colGrad, e.fHist, e.gHist, e.f, e.g,
		e.u, e.s, e.out, e.fbar, e.gbar, e.gnew, e.rowGrad, e.fxy, e.gxy, e.fPrev, e.gPrev, e.tbuf} {
		n += cap(b)
	}
	if sc := e.sc; sc != nil {
		for _, b := range [][]float64{sc.sigHist, sc.invHist, sc.cfHist, sc.rgHist} {
			n += cap(b)
		}
	}
	return int64(n) + int64(e.pool.workers)*1024
}

// reserve makes every per-point buffer hold at least k points.
func (e *engine) reserve(k int) {
	for w := range e.bufs {
		if len(e.bufs[w]) < 2*k {
			e.bufs[w] = make([]float64, 2*k)
		}
	}
	e.u = grow(e.u, k)
	e.s = grow(e.s, k)
	e.out = grow(e.out, k)
	e.fbar = grow(e.fbar, k)
	e.gbar = grow(e.gbar, k)
	e.gnew = grow(e.gnew, k)
	e.f = grow(e.f, k)
	e.g = grow(e.g, k)
	e.rowGrad = grow(e.rowGrad, k*e.d)
}

// HistoryWords is the memory, in 8-byte words, of the iteration history
// that an unrolled gradient (GradUnrolled without Tol) keeps for its exact
// reverse pass over iters iterations of problems of up to n points a side
// in dimension d: the potentials of every iteration and, on the scaling
// path, every sweep's row sums, their inverses, correction factors and
// gradient sums, and its record. It grows with iters × n, unlike the rest
// of a workspace; a caller checks it before solving.
func HistoryWords(n, d, iters int) float64 {
	t, rows := float64(iters), float64(n)
	return 2*t*rows + rows + 2*t*rows*(3+float64(d)) + 2*t*5
}

// consts are the derived constants of one evaluation; with tol > 0,
// iters is the cap.
type consts struct {
	eps, invEps, tau, rho, tol float64
	balanced                   bool
	iters                      int
}

func newConsts(o Options) consts {
	return consts{eps: o.Eps, invEps: 1 / o.Eps, tau: o.tau(), rho: o.Rho, tol: o.Tol, balanced: o.Balanced, iters: o.Iters}
}

// solve runs the iterations of the problem (p, q). With keep, f^t (t = 1..T)
// and g^t (t = 0..T) are stored in the history, and gradRows[s] says
// whether the backward pass will want the gradient of side s's points (of
// the coordinates coords, nil for all); with chain, the scaling path may
// chain its kernel sweeps (scaling_chain.go). It returns the final f, g,
// and sets e.iters to the number of iterations run and, with c.tol > 0,
// e.crit and e.converged (converged).
func (e *engine) solve(p, q side, c consts, keep, chain bool, gradRows [2]bool, coords []int) (f, g []float64) {
	np, nq, T := p.n, q.n, c.iters
	e.iters, e.crit, e.converged = T, math.NaN(), c.tol == 0
	var fcur, gcur []float64
	if keep {
		e.fHist = grow(e.fHist, T*np)
		e.gHist = grow(e.gHist, (T+1)*nq)
		gcur = e.gHist[:nq]
	} else {
		fcur = e.f[:np]
		gcur = e.g[:nq]
	}
	clear(gcur)
	if c.tol > 0 { // f^0 = g^0 = 0
		e.fPrev = zeroed(e.fPrev, np)
		e.gPrev = zeroed(e.gPrev, nq)
	}
	u := e.u
	if e.sparseOn {
		for k := range e.sp.cands { // a new problem
			e.sp.cands[k].ok = false
		}
		if keep {
			e.sp.rec.reset(T)
		}
	}
	if e.scalingOn {
		if e.sc == nil {
			e.sc = newScalingState()
		}
		e.sc.begin(keep, gradRows, coords, np*nq, 2*T, max(np, nq), e.d, e.scalingCulled)
		// The converged mode reads the potentials of every iteration:
		// nothing is left pending.
		e.sc.lazy = chain && !e.scalingCulled && c.tol == 0
		if e.sc.lazy {
			e.sc.setWeights(kern{simd: e.simd}, p, q)
		}
	}
	sides := [2]side{p, q}
	t0 := 0
	if c.tol > 0 {
		t0 = e.anneal(p, q, fcur, gcur, c)
	}
	for t := t0 + 1; t <= T; t++ {
		recF, recG := -1, -1 // the sweeps' records for the backward pass
		if keep {
			fcur = e.fHist[(t-1)*np : t*np]
			recF, recG = 2*(t-1), 2*(t-1)+1
		}
		e.forwardSweep(0, sides, u[:nq], gcur, fcur, c, recF)
		if keep {
			gcur = e.gHist[t*nq : (t+1)*nq]
		}
		e.forwardSweep(1, sides, u[:np], fcur, gcur, c, recG)
		if e.halt() {
			break
		}
		if c.tol > 0 && e.checkConverged(p, q, fcur, gcur, c, t) {
			break
		}
	}
	if e.scalingOn {
		e.flushPotentials(c)
	}
	if c.tol > 0 && c.balanced {
		balanceShift(p, q, fcur, gcur)
	}
	return fcur, gcur
}

// balanceShift moves the potentials (f, g) of a balanced problem along
// the shift (f + c, g − c) that leaves the problem unchanged, to the c
// with Σ_i a_i f_i = Σ_j b_j g_j. The converged mode returns its
// potentials so: the point of the fixed line that its iterations reach
// depends on where they start (zero, or the annealing's potentials), and
// the log-weights' envelope gradients, a_i·f_i − eps·(P1)_i, depend on it
// (by c·a_i and −c·b_j: nothing along changes of the weights that keep
// the masses equal).
func balanceShift(p, q side, f, g []float64) {
	var af, bg, ma, mb float64
	for i, lw := range p.logw[:p.n] {
		a := math.Exp(lw)
		af += a * f[i]
		ma += a
	}
	for j, lw := range q.logw[:q.n] {
		b := math.Exp(lw)
		bg += b * g[j]
		mb += b
	}
	c := (bg - af) / (ma + mb)
	if !isFinite(c) {
		return
	}
	for i := range f[:p.n] {
		f[i] += c
	}
	for j := range g[:q.n] {
		g[j] -= c
	}
}

// checkConverged evaluates the converged mode's criterion after iteration
// t of the problem (p, q), whose sweeps computed f from g_in and then g
// from f, with (f_in, g_in) the potentials the iteration started from
// (zero for the first), Δf = f − f_in and Δg = g − g_in:
//
//	balanced:   r_t = max(osc Δf, osc Δg) / eps,  osc v = max_i v_i − min_i v_i
//	unbalanced: r_t = max(max_i |Δf_i|, max_j |Δg_j|) / eps.
//
// The balanced criterion ignores the shift (f + c, g − c), which leaves
// the problem unchanged: potentials whose masses differ (by up to 1e-8,
// as balanced mode allows) have no fixed point and drift along it by
// eps·ln(m_a/m_b) per iteration. It records r_t and reports whether the
// iterations stop: r_t ≤ tol (e.converged; f and g are returned as they
// are, g the exact update of f), or r_t is NaN (a NaN potential, which no
// later iteration repairs). Otherwise it sets the next iteration's start
// (f_in, g_in) in f and g: in a symmetric problem (x–x, y–y: p and q the
// same measure) both become h = (f + g)/2; in an unbalanced one (f, g) is
// translated to (f + λ, g − λ), λ maximizing the dual along that line
// (translation); a balanced one continues from (f, g). Neither step
// changes the fixed point, and both remove modes that the plain
// iterations contract slowly (package documentation, "The converged
// mode"). It costs O(n + m), against a sweep's O(n·m) or its kernel's
// entries.
func (e *engine) checkConverged(p, q side, f, g []float64, c consts, t int) bool {
	r := e.criterion(f, g, c)
	e.crit, e.iters = r, t
	if r <= c.tol {
		e.converged = true
		return true
	}
	if math.IsNaN(r) {
		return true
	}
	e.restart(p, q, f, g, c)
	return false
}

// criterion returns checkConverged's r for the potentials (f, g) an
// iteration ended with, against those it started from (e.fPrev, e.gPrev),
// in units of c.eps.
func (e *engine) criterion(f, g []float64, c consts) float64 {
	flo, fhi := diffRange(f, e.fPrev)
	glo, ghi := diffRange(g, e.gPrev)
	if c.balanced {
		return max(fhi-flo, ghi-glo) * c.invEps
	}
	return max(-flo, fhi, -glo, ghi) * c.invEps
}

// restart sets the start of the next iteration from the potentials (f, g)
// the last one ended with, in place, and records it in (e.fPrev, e.gPrev):
// in a symmetric problem both potentials become h = (f + g)/2, in an
// unbalanced one (f, g) is translated to (f + λ, g − λ) (translation),
// a balanced one continues from (f, g).
func (e *engine) restart(p, q side, f, g []float64, c consts) {
	switch {
	case symmetric(p, q):
		for i := range f {
			h := 0.5 * (f[i] + g[i])
			f[i], g[i] = h, h
		}
	case !c.balanced:
		if lam := e.translation(p, q, f, g, c); isFinite(lam) {
			for i := range f {
				f[i] += lam
			}
			for j := range g {
				g[j] -= lam
			}
		}
	}
	copy(e.fPrev, f)
	copy(e.gPrev, g)
}

// symmetric reports whether the problem (p, q) is one of the symmetric
// problems of a divergence (x–x, y–y): p and q the same measure.
func symmetric(p, q side) bool {
	return p.n == q.n && sameSlice(p.logw, q.logw) && sameSlice(p.pts, q.pts)
}

// diffRange returns the least and the largest a_i − b_i (NaN for both
// when one is NaN).
func diffRange(a, b []float64) (lo, hi float64) {
	b = b[:len(a)]
	lo, hi = math.Inf(1), math.Inf(-1)
	for i, v := range a {
		d := v - b[i]
		lo, hi = min(lo, d), max(hi, d)
	}
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return math.NaN(), math.NaN()
	}
	return lo, hi
}

// translation returns the λ that maximizes the unbalanced dual along
// (f + λ, g − λ), which leaves the plan's term unchanged:
//
//	λ = (ρ/2)·log(Σ_i a_i e^(−f_i/ρ) / Σ_j b_j e^(−g_j/ρ))
//
// (Séjourné et al., "Faster unbalanced optimal transport: translation
// invariant Sinkhorn and 1-D Frank-Wolfe", 2022). It is 0 at the fixed
// point, where both sums are the plan's mass.
func (e *engine) translation(p, q side, f, g []float64, c consts) float64 {
	return 0.5 * c.rho * (e.lseAffine(f, -1/c.rho, p.logw[:p.n]) - e.lseAffine(g, -1/c.rho, q.logw[:q.n]))
}

// lseAffine returns LSE_i(x_i·a + b_i).
func (e *engine) lseAffine(x []float64, a float64, b []float64) float64 {
	e.tbuf = grow(e.tbuf, len(x))
	buf := e.tbuf[:len(x)]
	k := kern{simd: e.simd}
	k.mulAdd(buf, x, a, b)
	mx := math.Inf(-1)
	for _, v := range buf {
		mx = max(mx, v)
	}
	if math.IsInf(mx, 0) || math.IsNaN(mx) {
		return mx
	}
	return mx + math.Log(k.sumExp(buf, mx))
}

// slotNames name the problems of a divergence in errors.
var slotNames = [numSlots]string{slotXY: "x–y", slotXX: "x–x", slotYY: "y–y"}

// endProblem records the iteration count of the problem just solved in
// slot and, when it ran in the converged mode without meeting the
// tolerance (and was not interrupted), the error that says so.
func (e *engine) endProblem(slot int, c consts) {
	switch slot {
	case slotXY:
		e.counts.XY = e.iters
		e.annealedXY = e.annealed
	case slotXX:
		e.counts.XX = e.iters
	case slotYY:
		e.counts.YY = e.iters
	}
	if e.converged || e.halted || e.notConv != nil {
		return
	}
	if math.IsNaN(e.crit) {
		e.notConv = fmt.Errorf("ot: the %s problem: %w: its potentials are NaN after %d iterations (tol = %g)",
			slotNames[slot], ErrNotConverged, e.iters, c.tol)
		return
	}
	crit := "max(|Δf|, |Δg|)/eps"
	if c.balanced {
		crit = "max(osc Δf, osc Δg)/eps"
	}
	annealed := ""
	if e.annealed > 0 {
		annealed = fmt.Sprintf(", %d of them annealing eps", e.annealed)
	}
	e.notConv = fmt.Errorf("ot: the %s problem: %w: after iters = %d iterations (the cap%s) its criterion %s is %.3g, above tol = %g; raise iters or tol",
		slotNames[slot], ErrNotConverged, c.iters, annealed, crit, e.crit, c.tol)
}

// failed returns the error of an evaluation that was interrupted or whose
// problem did not converge, nil otherwise, and resets both for the next
// one.
func (e *engine) failed() error {
	err := e.interrupted()
	if err == nil {
		err = e.notConv
	}
	e.notConv = nil
	return err
}

// forwardSweep computes the sweep of orientation o (rows: side o, 0 for p)
// of the solve loop, out_r = −τε·LSE_c(u_c − C_rc/eps), with colPot the
// column side's potential and u = colPot/eps + log w (set here), on the
// scaling path (scalingStep) or as one log-domain sweep, recorded as rec
// (−1 for none).
func (e *engine) forwardSweep(o int, sides [2]side, u, colPot, out []float64, c consts, rec int) {
	if e.scalingOn {
		e.scalingStep(o, sides, u, colPot, out, c, rec)
		return
	}
	cols := sides[1-o]
	kern{simd: e.simd}.mulAdd(u[:cols.n], colPot[:cols.n], c.invEps, cols.logw)
	e.logSweep(o, sides, u, out, c, rec)
}

// logSweep is forwardSweep's dense or sparse (in tree order) sweep.
func (e *engine) logSweep(o int, sides [2]side, u, out []float64, c consts, rec int) {
	rows, cols := sides[o], sides[1-o]
	e.sweep(e.sparseJob(forwardJob(rows, cols, u, out, c), rows, cols, o, rec))
}

// forwardJob is the dense job of a forward sweep: out_r =
// −τε·LSE_c(u_c − C_rc/eps) over the rows' side.
func forwardJob(rows, cols side, u, out []float64, c consts) sweepJob {
	return sweepJob{rows: rows.pts, cols: cols.pts, nr: rows.n, nc: cols.n, u: u, invEps: c.invEps, outScale: -c.tau * c.eps, out: out[:rows.n]}
}

// value returns the OT value at (f, g) without the unbalanced constant
// eps·m_p·m_q.
func value(p, q side, f, g []float64, c consts) float64 {
	var s float64
	if c.balanced {
		for i, lw := range p.logw[:p.n] {
			s += math.Exp(lw) * f[i]
		}
		for j, lw := range q.logw[:q.n] {
			s += math.Exp(lw) * g[j]
		}
		return s
	}
	var sa, sb, sm float64
	for i, lw := range p.logw[:p.n] {
		sa += math.Exp(lw) * math.Expm1(-f[i]/c.rho)
	}
	for j, lw := range q.logw[:q.n] {
		b := math.Exp(lw)
		sb += b * math.Expm1(-g[j]/c.rho)
		sm += b * math.Exp(-g[j]/c.rho)
	}
	return -c.rho*sa - c.rho*sb - c.eps*sm
}

// grads are the gradient outputs of one problem (any may be nil), and the
// fixed coordinates of each side (Grad.FixedX); for the symmetric problems
// both sides point at the same slices.
type grads struct {
	p, q, logp, logq []float64
	fixp, fixq       []bool
}

// coords returns the coordinates whose point derivatives the problem
// forms, those not fixed on a side whose gradient is wanted, in buf (of
// capacity d at least), or nil when that is each of the d coordinates.
func (gr grads) coords(d int, buf []int) []int {
	if gr.fixp == nil && gr.fixq == nil {
		return nil
	}
	wanted := func(g []float64, fixed []bool, k int) bool {
		return g != nil && (fixed == nil || !fixed[k])
	}
	buf = buf[:0]
	for k := range d {
		if wanted(gr.p, gr.fixp, k) || wanted(gr.q, gr.fixq, k) {
			buf = append(buf, k)
		}
	}
	if len(buf) == d {
		return nil
	}
	return buf
}

// packedGrad is the working copy of the wanted coordinates of a points'
// gradient (full, d values per point) in the packed layout of the scaling
// path's kernel sweeps (len(coords) values per point), when some
// coordinates are fixed. It is loaded from full before the first packed
// addition and stored back before an addition in the full layout and at
// the end, so every entry gets the same additions in the same order.
type packedGrad struct {
	full, buf []float64
	coords    []int
	d         int
	loaded    bool
}

// add adds k·v to the gradient, v in the packed layout when packed.
func (g *packedGrad) add(kr kern, v []float64, k float64, packed bool) {
	if g.full == nil {
		return
	}
	if !packed {
		g.store()
		kr.addScaled(g.full, v[:len(g.full)], k)
		return
	}
	ng, n := len(g.coords), len(g.full)/g.d
	if !g.loaded {
		g.buf = grow(g.buf, n*ng)
		for i := range n {
			for p, c := range g.coords {
				g.buf[i*ng+p] = g.full[i*g.d+c]
			}
		}
		g.loaded = true
	}
	kr.addScaled(g.buf[:n*ng], v[:n*ng], k)
}

// store writes the packed values back into full.
func (g *packedGrad) store() {
	if !g.loaded {
		return
	}
	ng, n := len(g.coords), len(g.full)/g.d
	for i := range n {
		for p, c := range g.coords {
			g.full[i*g.d+c] = g.buf[i*ng+p]
		}
	}
	g.loaded = false
}

// backward adds sigma·∂V/∂(inputs) to gr by differentiating through the T
// stored iterations, with V the value without the unbalanced constant.
func (e *engine) backward(p, q side, c consts, sigma float64, gr grads) {
	np, nq, T, d := p.n, q.n, c.iters, e.d
	fT := e.fHist[(T-1)*np : T*np]
	gT := e.gHist[T*nq : (T+1)*nq]
	fbar := e.fbar[:np]
	gbar := e.gbar[:nq]
	// Partial derivatives of the value at the final potentials.
	if c.balanced {
		for i, lw := range p.logw[:np] {
			a := math.Exp(lw)
			fbar[i] = sigma * a
			if gr.logp != nil {
				gr.logp[i] += sigma * a * fT[i]
			}
		}
		for j, lw := range q.logw[:nq] {
			b := math.Exp(lw)
			gbar[j] = sigma * b
			if gr.logq != nil {
				gr.logq[j] += sigma * b * gT[j]
			}
		}
	} else {
		for i, lw := range p.logw[:np] {
			a := math.Exp(lw)
			fbar[i] = sigma * a * math.Exp(-fT[i]/c.rho)
			if gr.logp != nil {
				gr.logp[i] += sigma * (-c.rho * a * math.Expm1(-fT[i]/c.rho))
			}
		}
		k := 1 + c.eps/c.rho
		for j, lw := range q.logw[:nq] {
			b := math.Exp(lw)
			eg := math.Exp(-gT[j] / c.rho)
			gbar[j] = sigma * k * b * eg
			if gr.logq != nil {
				gr.logq[j] += sigma * (-c.rho*b*math.Expm1(-gT[j]/c.rho) - c.eps*b*eg)
			}
		}
	}
	invTauEps := 1 / (c.tau * c.eps)
	u, s := e.u, e.s
	sides := [2]side{p, q}
	tau2 := 2 * c.tau // the cost's derivative 2(x − y) times τ
	kr := kern{simd: e.simd}
	addScaled := kr.addScaled
	// The points' gradients, packed where the kernel sweeps form only the
	// wanted coordinates (sc.coords); for the symmetric problems both
	// sides share one.
	gp := &e.packed[0]
	*gp = packedGrad{full: gr.p, buf: gp.buf, d: d}
	if e.scalingOn && e.sc.coords != nil {
		gp.coords = e.sc.coords
	}
	gq := gp
	if !sameSlice(gr.p, gr.q) {
		gq = &e.packed[1]
		*gq = packedGrad{full: gr.q, buf: gq.buf, coords: gp.coords, d: d}
	}
	for t := T; t >= 1 && !e.halt(); t-- {
		ft := e.fHist[(t-1)*np : t*np]
		gt := e.gHist[t*nq : (t+1)*nq]
		gprev := e.gHist[(t-1)*nq : t*nq]
		// g^t_j = −τε·LSE_i(f^t_i/ε − C_ij/ε + log p_i): rows are q.
		var rg []float64
		if gr.q != nil {
			rg = e.rowGrad[:nq*d]
		}
		packed := e.backSweep(sweepJob{weighted: true, normalized: true, rows: q.pts, cols: p.pts, nr: nq, nc: np, u: u[:np], s: s[:nq], r: gbar,
			invEps: c.invEps, rowGrad: rg, wantColSum: true, wantColGrad: gr.p != nil}, sides, 1, 2*t-1, c,
			backInputs{colPot: ft, colLogw: p.logw[:np], rowPot: gt, invTauEps: invTauEps})
		gq.add(kr, rg, tau2, packed)
		gp.add(kr, e.colGrad, -tau2, packed)
		addScaled(fbar, e.colSum[:np], -c.tau)
		if gr.logp != nil {
			addScaled(gr.logp, e.colSum[:np], -c.tau*c.eps)
		}
		// f^t_i = −τε·LSE_j(g^{t−1}_j/ε − C_ij/ε + log q_j): rows are p.
		rg = nil
		if gr.p != nil {
			rg = e.rowGrad[:np*d]
		}
		needColSum := t > 1 || gr.logq != nil
		packed = e.backSweep(sweepJob{weighted: true, normalized: true, rows: p.pts, cols: q.pts, nr: np, nc: nq, u: u[:nq], s: s[:np], r: fbar,
			invEps: c.invEps, rowGrad: rg, wantColSum: needColSum, wantColGrad: gr.q != nil}, sides, 0, 2*t-2, c,
			backInputs{colPot: gprev, colLogw: q.logw[:nq], rowPot: ft, invTauEps: invTauEps})
		gp.add(kr, rg, tau2, packed)
		gq.add(kr, e.colGrad, -tau2, packed)
		if needColSum {
			for j, v := range e.colSum[:nq] {
				gbar[j] = -c.tau * v
			}
			if gr.logq != nil {
				addScaled(gr.logq, e.colSum[:nq], -c.tau*c.eps)
			}
		}
		clear(fbar)
	}
	gp.store()
	gq.store()
}

// envelope adds sigma·∂D/∂(inputs) at the final potentials (f, g) held
// fixed, with D = Ψ_p(f) + Ψ_q(g) − eps·Σ_ij P_ij (the dual without its
// constant eps·m_p·m_q).
func (e *engine) envelope(p, q side, f, g []float64, c consts, sigma float64, gr grads) {
	np, nq, d := p.n, q.n, e.d
	u, s := e.u, e.s
	for j := range nq {
		u[j] = q.logw[j] + g[j]*c.invEps
	}
	for i := range np {
		s[i] = p.logw[i] + f[i]*c.invEps
	}
	var rg []float64
	if gr.p != nil {
		rg = e.rowGrad[:np*d]
	}
	rowSum := e.out[:np]
	e.sweep(e.sparseJob(sweepJob{weighted: true, rows: p.pts, cols: q.pts, nr: np, nc: nq, u: u, s: s, invEps: c.invEps,
		out: rowSum, rowGrad: rg, wantColSum: gr.logq != nil, wantColGrad: gr.q != nil}, p, q, 0, -1))
	if gr.p != nil {
		for k, v := range rg {
			gr.p[k] += sigma * 2 * v
		}
	}
	if gr.q != nil {
		for k, v := range e.colGrad[:nq*d] {
			gr.q[k] -= sigma * 2 * v
		}
	}
	if gr.logp != nil {
		for i, lw := range p.logw[:np] {
			gr.logp[i] += sigma * (psi(lw, f[i], c) - c.eps*rowSum[i])
		}
	}
	if gr.logq != nil {
		for j, lw := range q.logw[:nq] {
			gr.logq[j] += sigma * (psi(lw, g[j], c) - c.eps*e.colSum[j])
		}
	}
}

// psi is ∂Ψ/∂log w for one point: w·f (balanced) or −rho·w·expm1(−f/rho).
func psi(logw, f float64, c consts) float64 {
	w := math.Exp(logw)
	if c.balanced {
		return w * f
	}
	return -c.rho * w * math.Expm1(-f/c.rho)
}

// mass returns Σ exp(logw).
func mass(logw []float64) float64 {
	var s float64
	for _, v := range logw {
		s += math.Exp(v)
	}
	return s
}

// checkSide validates the points and log-weights of one measure.
// maxEpsRatio is the largest eps, relative to the largest squared distance
// between the points, that an evaluation accepts: beyond it every
// C_ij/eps is below 2^-26 and the value would keep fewer than about 8
// significant digits (its rounding error is about u·eps).
const maxEpsRatio = 0x1p26

// CheckScale refuses eps and point sets (row-major, dimension d) for which
// the computation cannot be accurate (scaleError), from the bounding box
// of the points: squared distances or C/eps that overflow float64, or an
// eps more than 2^26 times the largest squared distance. Every entry point
// of the package checks it; other backends (package cuda) call it to
// apply the same rule.
func CheckScale(eps float64, d int, sets ...[]float64) error {
	var d2, widest float64
	dim := 0
	for k := range d {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pts := range sets {
			for i := k; i < len(pts); i += d {
				lo, hi = min(lo, pts[i]), max(hi, pts[i])
			}
		}
		r := hi - lo
		if r*r > widest {
			widest, dim = r*r, k
		}
		d2 += r * r
	}
	return scaleError(eps, widest, d2, dim)
}

// scaleError returns the error of an evaluation whose squared distances
// are at least widest (the widest coordinate's range squared, coordinate
// dim) and at most d2 (the bounding box's squared diagonal): squared
// distances or C/eps that overflow float64, or an eps so large that every
// C_ij/eps is below 2^-26 and the result would be quantized (maxEpsRatio).
func scaleError(eps, widest, d2 float64, dim int) error {
	switch {
	case math.IsInf(widest, 1):
		return fmt.Errorf("ot: the points' coordinate %d spans more than %g: their squared distances overflow float64; rescale the points", dim+1, math.Sqrt(math.MaxFloat64))
	case widest/eps > math.MaxFloat64:
		return fmt.Errorf("ot: eps = %g is too small for squared distances up to %g: C/eps overflows float64; rescale the points or raise eps", eps, widest)
	case d2 > 0 && eps > maxEpsRatio*d2:
		return fmt.Errorf("ot: eps = %g is more than 2^26 times the largest squared distance (%g): the result would keep fewer than 8 significant digits; lower eps or rescale the points", eps, d2)
	}
	return nil
}

func checkSide(name string, pts, logw []float64, d int) (side, error) {
	n := len(logw)
	if n == 0 {
		return side{}, fmt.Errorf("ot: measure %s has no points", name)
	}
	if len(pts) != n*d {
		return side{}, fmt.Errorf("ot: measure %s has %d log-weights but %d coordinates (%d points of dimension %d expected)", name, n, len(pts), n, d)
	}
	if err := checkLogWeights(name, logw); err != nil {
		return side{}, err
	}
	for k, v := range pts {
		if !isFinite(v) {
			return side{}, fmt.Errorf("ot: measure %s: coordinate %d of point %d is %g", name, k%d+1, k/d+1, v)
		}
	}
	return side{pts: pts, logw: logw, n: n}, nil
}

// checkLogWeights accepts finite values and −Inf (zero weight), with at
// least one finite value.
func checkLogWeights(name string, logw []float64) error {
	finite := false
	for i, v := range logw {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return fmt.Errorf("ot: measure %s: log-weight %d is %g", name, i+1, v)
		}
		finite = finite || !math.IsInf(v, -1)
	}
	if !finite {
		return fmt.Errorf("ot: measure %s has no positive weight", name)
	}
	return nil
}

func checkGrad(name string, g []float64, want int) error {
	if g != nil && len(g) != want {
		return fmt.Errorf("ot: gradient slice %s has length %d, want %d", name, len(g), want)
	}
	return nil
}

func checkGrads(gr *Grad, n, m, d int) error {
	if gr == nil {
		return nil
	}
	return errors.Join(checkGrad("X", gr.X, n*d), checkGrad("Y", gr.Y, m*d),
		checkGrad("LogA", gr.LogA, n), checkGrad("LogB", gr.LogB, m),
		checkFixed("FixedX", gr.FixedX, d), checkFixed("FixedY", gr.FixedY, d))
}

func checkFixed(name string, f []bool, d int) error {
	if f != nil && len(f) != d {
		return fmt.Errorf("ot: %s has %d flags, want one per coordinate (%d)", name, len(f), d)
	}
	return nil
}

func checkMasses(o Options, ma, mb float64) error {
	if o.Balanced && !(math.Abs(ma-mb) <= 1e-8*max(ma, mb)) {
		return fmt.Errorf("ot: balanced Sinkhorn needs equal masses, but mass(a) = %.17g and mass(b) = %.17g (normalize the weights or use unbalanced mode)", ma, mb)
	}
	return nil
}

func (g *Grad) zero() {
	if g == nil {
		return
	}
	clear(g.X)
	clear(g.Y)
	clear(g.LogA)
	clear(g.LogB)
}

// problem computes the value (without constant) of one problem and adds
// sigma times its gradient to gr, in the requested mode. It returns the
// final potentials (valid until the next solve).
func (e *engine) problem(p, q side, c consts, mode GradMode, sigma float64, gr grads, want bool) (float64, []float64, []float64) {
	keep := want && mode == GradUnrolled
	if cap(e.coordBuf) < e.d {
		e.coordBuf = make([]int, 0, e.d)
	}
	coords := gr.coords(e.d, e.coordBuf)
	if coords != nil && len(coords) == 0 { // every coordinate fixed
		gr.p, gr.q, coords = nil, nil, nil
	}
	// An envelope gradient is taken from potentials formed sweep by sweep,
	// not chained (scaling_chain.go): their rounding errors lie along the
	// balanced problem's invariant shift (f + c, g − c), which the envelope
	// ignores; the chained potentials are closer to the exact ones but not
	// along it (measured on the steep case of TestScalingAccuracy: envelope
	// error 1.75e-11 chained, 7.5e-12 not).
	chain := !want || mode != GradEnvelope
	f, g := e.solve(p, q, c, keep, chain, [2]bool{gr.p != nil, gr.q != nil}, coords)
	v := value(p, q, f, g, c)
	if want && e.converged { // otherwise an error (endProblem), no gradient
		if mode == GradUnrolled {
			e.backward(p, q, c, sigma, gr)
		} else {
			e.envelope(p, q, f, g, c, sigma, gr)
		}
	}
	return v, f, g
}

// runProblem is problem on the scaling or sparse path where one applies
// (sparseProblem, in tree order), on the dense or grid path otherwise.
// It records the problem's iteration count and convergence (endProblem).
func (e *engine) runProblem(slot int, p, q side, c consts, mode GradMode, sigma float64, gr grads, want bool) (v float64, f, g []float64) {
	if on, _ := e.useScaling(p, q); !e.onGrid && (on || e.useSparse(p, q)) {
		e.usedSparse = true
		v, f, g = e.sparseProblem(slot, p, q, c, mode, sigma, gr, want)
	} else {
		v, f, g = e.problem(p, q, c, mode, sigma, gr, want)
	}
	e.endProblem(slot, c)
	return v, f, g
}

func (e *engine) saveXY(f, g []float64) {
	e.fxy = append(e.fxy[:0], f...)
	e.gxy = append(e.gxy[:0], g...)
}

// Divergence returns the debiased Sinkhorn divergence between the measure
// (x, log_a) of n points and (y, log_b) of m points, and writes its gradient
// into grad (nil for none). If yy is non-nil the y–y problem is taken from
// it and y and log_b receive the gradient of the x–y problem only.
func (w *Workspace) Divergence(x, y, logA, logB []float64, opt Options, yy *SelfTerm, grad *Grad) (Result, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	e := w.e
	if err := opt.validate(); err != nil {
		return Result{}, err
	}
	ps, err := checkSide("a", x, logA, e.d)
	if err != nil {
		return Result{}, err
	}
	qs, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return Result{}, err
	}
	if err := CheckScale(opt.Eps, e.d, x, y); err != nil {
		return Result{}, err
	}
	if err := checkGrads(grad, ps.n, qs.n, e.d); err != nil {
		return Result{}, err
	}
	return e.divergence(ps, qs, opt, yy, grad, Grid{})
}

// denseRedoMaxTerms bounds the problems (n·m point pairs) that divergence
// solves again on the dense path when the sparse or scaling path gave a
// non-finite gradient.
const denseRedoMaxTerms = 1 << 22

// divergence is Divergence after the checks of the points (dense or grid).
//
// The sparse and scaling kernels normalize the backward pass with their
// stored potentials, which for measures far apart for their eps (points
// 1e12 apart at eps 1e3: potentials of 1e24, whose rounding exceeds eps)
// gives NaN, where the dense backward renormalizes exactly: such an
// evaluation, with finite inputs, is solved again on the dense path, the
// reference, up to denseRedoMaxTerms pairs.
func (e *engine) divergence(ps, qs side, opt Options, yy *SelfTerm, grad *Grad, g Grid) (Result, error) {
	e.usedSparse = false
	res, err := e.divergenceOnce(ps, qs, opt, yy, grad, g)
	if err != nil || !e.usedSparse || !grad.wanted() || grad.finite() || float64(ps.n)*float64(qs.n) > denseRedoMaxTerms {
		return res, err
	}
	saved := e.path
	e.path = PathDense
	defer func() { e.path = saved }()
	return e.divergenceOnce(ps, qs, opt, yy, grad, g)
}

// finite reports whether every gradient entry is finite.
func (g *Grad) finite() bool {
	for _, xs := range [][]float64{g.X, g.Y, g.LogA, g.LogB} {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
	}
	return true
}

// divergenceOnce computes the divergence on the engine's path.
func (e *engine) divergenceOnce(ps, qs side, opt Options, yy *SelfTerm, grad *Grad, g Grid) (Result, error) {
	if yy != nil {
		if err := yy.check(qs.n, opt, g); err != nil {
			return Result{}, err
		}
	}
	ma, mb := mass(ps.logw), mass(qs.logw)
	if err := checkMasses(opt, ma, mb); err != nil {
		return Result{}, err
	}
	e.reserve(max(ps.n, qs.n))
	c := newConsts(opt)
	want := grad.wanted()
	grad.zero()
	var gxy, gxx, gyy grads
	if want {
		gxy = grads{grad.X, grad.Y, grad.LogA, grad.LogB, grad.FixedX, grad.FixedY}
		gxx = grads{grad.X, grad.X, grad.LogA, grad.LogA, grad.FixedX, grad.FixedX}
		gyy = grads{grad.Y, grad.Y, grad.LogB, grad.LogB, grad.FixedY, grad.FixedY}
	}
	e.counts = Iterations{}
	vxy, f, gp := e.runProblem(slotXY, ps, qs, c, opt.Grad, 1, gxy, want)
	e.saveXY(f, gp)
	var vxx, vyy float64
	if e.notConv == nil { // a problem that did not converge ends the evaluation
		vxx, _, _ = e.runProblem(slotXX, ps, ps, c, opt.Grad, -0.5, gxx, want && (grad.X != nil || grad.LogA != nil))
	}
	if yy != nil {
		vyy = yy.value0
		e.counts.YY = yy.iters
	} else if e.notConv == nil {
		vyy, _, _ = e.runProblem(slotYY, qs, qs, c, opt.Grad, -0.5, gyy, want && (grad.Y != nil || grad.LogB != nil))
	}
	if err := e.failed(); err != nil {
		return Result{}, err
	}
	if want {
		grad.clearFixed(e.d)
	}
	res := Result{MassA: ma, MassB: mb, OTxy: vxy, OTxx: vxx, OTyy: vyy, YYFromCache: yy != nil, Iters: e.counts}
	res.Divergence = vxy - 0.5*vxx - 0.5*vyy
	if opt.Balanced {
		dm := ma - mb
		res.Divergence += 0.5 * opt.Eps * dm * dm
		if want && opt.Grad == GradUnrolled {
			addMassGrad(grad, ps.logw, qs.logw, opt.Eps*dm)
		}
	} else {
		res.OTxy += opt.Eps * ma * mb
		res.OTxx += opt.Eps * ma * ma
		res.OTyy += opt.Eps * mb * mb
	}
	return res, nil
}

// addMassGrad adds k·a to grad.LogA and −k·b to grad.LogB.
func addMassGrad(grad *Grad, logA, logB []float64, k float64) {
	for i, v := range grad.LogA {
		grad.LogA[i] = v + k*math.Exp(logA[i])
	}
	for j, v := range grad.LogB {
		grad.LogB[j] = v - k*math.Exp(logB[j])
	}
}

// SelfTerm computes the y–y problem of the divergence once, for use with
// Divergence when y and log_b do not change between evaluations.
func (w *Workspace) SelfTerm(y, logB []float64, opt Options) (*SelfTerm, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	e := w.e
	if err := opt.validate(); err != nil {
		return nil, err
	}
	qs, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return nil, err
	}
	if err := CheckScale(opt.Eps, e.d, y); err != nil {
		return nil, err
	}
	return e.selfTerm(qs, opt, Grid{})
}

func (e *engine) selfTerm(qs side, opt Options, g Grid) (*SelfTerm, error) {
	e.reserve(qs.n)
	e.counts = Iterations{}
	v, _, _ := e.runProblem(slotYY, qs, qs, newConsts(opt), opt.Grad, -0.5, grads{}, false)
	if err := e.failed(); err != nil {
		return nil, err
	}
	return &SelfTerm{value0: v, mass: mass(qs.logw), m: qs.n, opt: opt, grid: g, iters: e.counts.YY}, nil
}

// OT returns the entropic OT value of (x, log_a) and (y, log_b) after
// opt.Iters iterations (README SINKHORN_OT_VALUE, with the unbalanced
// constant eps·m_a·m_b included) and writes its gradient into grad. The
// envelope gradient is that of the dual D(f, g) including its constant.
func (w *Workspace) OT(x, y, logA, logB []float64, opt Options, grad *Grad) (float64, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	e := w.e
	if err := opt.validate(); err != nil {
		return 0, err
	}
	ps, err := checkSide("a", x, logA, e.d)
	if err != nil {
		return 0, err
	}
	qs, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return 0, err
	}
	if err := CheckScale(opt.Eps, e.d, x, y); err != nil {
		return 0, err
	}
	if err := checkGrads(grad, ps.n, qs.n, e.d); err != nil {
		return 0, err
	}
	return e.ot(ps, qs, opt, grad)
}

func (e *engine) ot(ps, qs side, opt Options, grad *Grad) (float64, error) {
	ma, mb := mass(ps.logw), mass(qs.logw)
	if err := checkMasses(opt, ma, mb); err != nil {
		return 0, err
	}
	e.reserve(max(ps.n, qs.n))
	c := newConsts(opt)
	want := grad.wanted()
	grad.zero()
	var gr grads
	if want {
		gr = grads{grad.X, grad.Y, grad.LogA, grad.LogB, grad.FixedX, grad.FixedY}
	}
	e.counts = Iterations{}
	v, f, g := e.runProblem(slotXY, ps, qs, c, opt.Grad, 1, gr, want)
	if err := e.failed(); err != nil {
		return 0, err
	}
	e.saveXY(f, g)
	if want {
		grad.clearFixed(e.d)
	}
	if want && (!opt.Balanced || opt.Grad == GradEnvelope) {
		// Gradient of the constant eps·m_a·m_b (part of the unbalanced value,
		// and of the dual D in the envelope gradient).
		for i, gv := range grad.LogA {
			grad.LogA[i] = gv + opt.Eps*math.Exp(ps.logw[i])*mb
		}
		for j, gv := range grad.LogB {
			grad.LogB[j] = gv + opt.Eps*math.Exp(qs.logw[j])*ma
		}
	}
	if !opt.Balanced {
		v += opt.Eps * ma * mb
	}
	return v, nil
}

// Plan writes the transport plan P_ij = a_i b_j exp((f_i + g_j − C_ij)/eps)
// at the final potentials into dst (n×m row-major, reallocated if short)
// and returns it.
func (w *Workspace) Plan(x, y, logA, logB []float64, opt Options, dst []float64) ([]float64, error) {
	defer runtime.KeepAlive(w) // w's cleanup stops the pool the call uses
	e := w.e
	if err := opt.validate(); err != nil {
		return nil, err
	}
	ps, err := checkSide("a", x, logA, e.d)
	if err != nil {
		return nil, err
	}
	qs, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return nil, err
	}
	if err := CheckScale(opt.Eps, e.d, x, y); err != nil {
		return nil, err
	}
	if err := checkMasses(opt, mass(logA), mass(logB)); err != nil {
		return nil, err
	}
	e.reserve(max(ps.n, qs.n))
	c := newConsts(opt)
	e.counts = Iterations{}
	f, g := e.solve(ps, qs, c, false, true, [2]bool{}, nil)
	e.endProblem(slotXY, c)
	if err := e.failed(); err != nil {
		return nil, err
	}
	e.saveXY(f, g)
	n, m, d := ps.n, qs.n, e.d
	dst = grow(dst, n*m)
	u := e.u[:m]
	for j := range m {
		u[j] = logB[j] + e.gxy[j]*c.invEps
	}
	k := kern{simd: e.simd}
	buf := e.bufs[0][:m]
	for i := range n {
		k.args(buf, x[i*d:i*d+d], y, u, c.invEps, logA[i]+e.fxy[i]*c.invEps)
		k.exp(dst[i*m:(i+1)*m], buf)
	}
	return dst, nil
}
