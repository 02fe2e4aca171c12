package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// launcher is a device as the engine sees it: memory of float64s addressed
// by ptr, copies, and asynchronous kernel launches in order on one stream.
// A download waits for every launch before it. The GPU implementation is in
// device.go (cuda build tag); the tests implement it with the kernels
// compiled as host C++.
type launcher interface {
	alloc(n int) (ptr, error)
	free(p ptr) error
	upload(dst ptr, src []float64) error
	download(dst []float64, src ptr) error
	// launch queues kernel k on a grid of gridX × gridY blocks of blockX
	// threads with shared bytes of dynamic shared memory per block.
	launch(k kernel, gridX, gridY, blockX, shared int, args []uint64) error
}

// executor runs f with a launcher on the thread that owns the device's
// context.
type executor interface {
	exec(f func(l launcher) error) error
}

// engine runs the Sinkhorn evaluations of one workspace on a device. Its
// methods mirror package ot's engine: the same sweeps, in the same order,
// with the same arguments, so the two can be compared term by term.
type engine struct {
	x        executor
	d        int
	minChunk int

	mem    ptr // one device allocation holding every buffer
	memLen int // its length in float64s
	lay    layout
	host   []float64 // staging buffer for the upload and the download

	// guard, when positive (tests only), leaves that many float64s after
	// every buffer and fills the whole allocation with the NaN guardBits
	// before each evaluation; after it, checkGuards reports a gap that was
	// written. A kernel that reads outside its buffer or reads memory that
	// was not written first then gets NaN.
	guard   int
	scratch []float64

	// fusedMax is the largest side of the evaluations that take the fused
	// path (0: none); fusedNT, when positive (tests), is the thread count
	// of every fused problem.
	fusedMax, fusedNT int
	// fusedPlain (tests) keeps the caller's order of the points and turns
	// the fused kernel's truncation off; fusedCull (tests) overrides the
	// choice of the problems whose sweeps cull blocks (cullPays).
	fusedPlain bool
	fusedCull  cullMode
	// fusedUnpaired (tests, benchmarks) gives every sweep of the fused
	// kernel's unrolled backward pass its own barrier (FD_PAIR off): the
	// same results, bit for bit on the host kernels (on the GPU, up to
	// the compiler's contraction into fused multiply-adds).
	fusedUnpaired bool
	// fusedNoPivot (tests, benchmarks) has the fused kernel's forward
	// sweeps find each row's maximum before they sum (FD_PIVOT off): the
	// same results up to rounding.
	fusedNoPivot bool
	// fusedNoPrefill (tests, benchmarks) has the fills of the fused
	// kernel's backward pass run in phases of their own (FD_PREFILL
	// off): the same results, bit for bit.
	fusedNoPrefill bool
	gridPts        []float64 // the points of gridOf
	gridOf         ot.Grid
	fl             fusedLayout
	permX, permY   []int    // the spatial orders of the fused path
	keys           []uint64 // their scratch space
	staged         int      // the inputs fusedStage wrote to host
	// comb, when not nil, batches the fused evaluations of the engines of
	// one device.
	comb *combiner
	// cohort is the cohort of the goroutine using the engine, nil for
	// none (see combiner).
	cohort *stdlib.Cohort

	// The multi-launch path's launches (graph.go): the sequence the last
	// evaluation recorded, and the graphs made of the latest sequences
	// (least recently used first). noGraph (tests, benchmarks, or after a
	// graph could not be made: graphErr) launches them one by one;
	// graphBuilds counts the graphs made (tests).
	seq         launchSeq
	graphs      []engineGraph
	checked     [2][]float64 // checkGraph's outputs
	noGraph     bool
	graphErr    error
	graphBuilds int
}

// guardBits is the NaN the allocation is filled with in guard mode.
const guardBits = 0x7ff4_dead_beef_0bad

func newEngine(x executor, d int) *engine {
	return &engine{x: x, d: max(d, 1), minChunk: defaultMinChunk, fusedMax: fusedMaxPoints}
}

// layout places the buffers of one evaluation in the device allocation.
type layout struct {
	n, m, iters int
	hist        bool

	in, x, y, la, lb       ptr // inputs, uploaded at once: x | y | log_a | log_b
	out, scal              ptr // outputs, downloaded at once: scalars | gX | gY | gLogA | gLogB
	gx, gy, gla, glb       ptr
	fHist, gHist           ptr // f^t (t = 1..T) and g^t (t = 0..T), or the current f and g
	pmax, psum, pgrad      ptr // partials of the split reductions
	fbar, gbar, rsum, csum ptr
	vp1, vp2               ptr // partials of the dual value

	inLen, outLen, total int
	gaps                 []int // offsets of the guard gaps (guard mode)
}

// numScalars is the number of scalar slots: three per problem.
const numScalars = 9

// plan returns the layout for the sizes of one evaluation, at offsets from
// base (0 when only the total size is wanted).
func (e *engine) plan(base ptr, n, m, iters int, hist bool) layout {
	d := e.d
	k := max(n, m)
	l := layout{n: n, m: m, iters: iters, hist: hist}
	a := arena{base: base, guard: e.guard}
	take := a.take
	// The inputs and the outputs are each one block, copied at once.
	l.inLen = (n+m)*d + n + m
	l.in = take(l.inLen)
	l.x = l.in
	l.y = l.x.at(n * d)
	l.la = l.y.at(m * d)
	l.lb = l.la.at(n)
	l.outLen = numScalars + (n+m)*d + n + m
	l.out = take(l.outLen)
	l.scal = l.out
	l.gx = l.scal.at(numScalars)
	l.gy = l.gx.at(n * d)
	l.gla = l.gy.at(m * d)
	l.glb = l.gla.at(n)
	if hist {
		l.fHist = take(iters * k)
		l.gHist = take((iters + 1) * k)
	} else {
		l.fHist = take(k)
		l.gHist = take(k)
	}
	parts := 0
	for _, nout := range []int{n, m} {
		for _, nred := range []int{n, m} {
			nch, _ := split(nout, nred, e.minChunk)
			parts = max(parts, nch*nout)
		}
	}
	l.pmax = take(parts)
	l.psum = take(parts)
	l.pgrad = take(parts * d)
	l.fbar = take(k)
	l.gbar = take(k)
	l.rsum = take(k)
	l.csum = take(k)
	l.vp1 = take(ceilDiv(k, valueChunk))
	l.vp2 = take(ceilDiv(k, valueChunk))
	l.total, l.gaps = a.off, a.gaps
	return l
}

// arena lays buffers out one after the other from base; in guard mode
// each is followed by guard words, whose offsets gaps collects.
type arena struct {
	base  ptr
	off   int // in float64s from base
	guard int
	gaps  []int
}

// take reserves size float64s and returns their address.
func (a *arena) take(size int) ptr {
	p := a.base.at(a.off)
	a.off += size
	if a.guard > 0 {
		a.gaps = append(a.gaps, a.off)
		a.off += a.guard
	}
	return p
}

// reserve makes the device allocation large enough for the evaluation and
// lays the buffers out in it. It runs inside exec.
func (e *engine) reserve(l launcher, n, m, iters int, hist bool) error {
	if err := e.ensure(l, e.plan(0, n, m, iters, hist).total); err != nil {
		return err
	}
	e.lay = e.plan(e.mem, n, m, iters, hist)
	return nil
}

// ensure makes the device allocation hold at least need float64s. It runs
// inside exec.
func (e *engine) ensure(l launcher, need int) error {
	old := e.mem
	err := growAlloc(l, &e.mem, &e.memLen, need)
	if e.mem != old {
		// The graphs launch into the old allocation.
		if derr := e.dropGraphs(); err == nil {
			err = derr
		}
	}
	return err
}

// growAlloc makes the device allocation *p of *n float64s (none when *p
// is 0) hold at least need float64s, replacing it when it is too small.
// It runs inside exec.
func growAlloc(l launcher, p *ptr, n *int, need int) error {
	if need <= *n {
		return nil
	}
	if *p != 0 {
		if err := l.free(*p); err != nil {
			return err
		}
		*p, *n = 0, 0
	}
	q, err := l.alloc(need)
	if err != nil {
		return fmt.Errorf("cuda: allocating %d bytes of device memory: %w", 8*need, err)
	}
	*p, *n = q, need
	return nil
}

// fillGuards fills the whole allocation with the NaN guardBits in guard
// mode. It runs inside exec.
func (e *engine) fillGuards(l launcher) error {
	if e.guard <= 0 {
		return nil
	}
	e.scratch = grow(e.scratch, e.memLen)
	for i := range e.scratch {
		e.scratch[i] = math.Float64frombits(guardBits)
	}
	return l.upload(e.mem, e.scratch)
}

// release frees the device allocation and destroys the graphs made of
// launches into it. It runs inside exec.
func (e *engine) release(l launcher) error {
	err := e.dropGraphs()
	if e.mem == 0 {
		return err
	}
	if ferr := l.free(e.mem); err == nil {
		err = ferr
	}
	e.mem, e.memLen = 0, 0
	return err
}

// side is one measure on the device.
type side struct {
	pts, logw ptr
	n         int
}

// grads are the device arrays receiving gradients (0: not wanted); for the
// symmetric problems both sides point at the same arrays.
type grads struct {
	p, q, logp, logq ptr
}

// consts are the derived constants of one evaluation, as in package ot.
type consts struct {
	eps, invEps, tau, rho float64
	balanced              bool
	iters                 int
}

func newConsts(o ot.Options) consts {
	tau := 1.0
	if !o.Balanced {
		tau = o.Rho / (o.Rho + o.Eps)
	}
	return consts{eps: o.Eps, invEps: 1 / o.Eps, tau: tau, rho: o.Rho, balanced: o.Balanced, iters: o.Iters}
}

// run is one evaluation in progress inside exec on the multi-launch path:
// its launches are recorded (recorder) and replayed when all are known
// (engine.replay). The first error stops the later launches and is
// returned by the evaluation.
type run struct {
	l   launcher
	e   *engine
	L   *layout
	err error
}

func (r *run) launch(k kernel, gridX, gridY int, args ...uint64) {
	if r.err != nil {
		return
	}
	if len(args) != k.arity() {
		r.err = fmt.Errorf("cuda: internal error: kernel %s takes %d arguments, got %d", k.name(), k.arity(), len(args))
		return
	}
	if err := r.l.launch(k, gridX, gridY, blockSize, 0, args); err != nil {
		r.err = fmt.Errorf("cuda: launching %s: %w", k.name(), err)
	}
}

func (r *run) fill(p ptr, n int, v float64) {
	r.launch(kFill, blocks(n), 1, intArg(n), p.arg(), floatArg(v))
}

// lse sets out[i] = scale·LSE_j(cpot_j·invEps + log w_j − C_ij·invEps) for
// the rows of rows against the columns of cols.
func (r *run) lse(rows, cols side, cpot ptr, c consts, scale float64, out ptr) {
	L := r.L
	nch, chunk := split(rows.n, cols.n, r.e.minChunk)
	r.launch(kLSEPart, blocks(rows.n), nch, rows.pts.arg(), cols.pts.arg(), intArg(rows.n), intArg(cols.n), intArg(r.e.d),
		cpot.arg(), cols.logw.arg(), floatArg(c.invEps), intArg(chunk), L.pmax.arg(), L.psum.arg())
	r.launch(kLSEFin, blocks(rows.n), 1, intArg(rows.n), intArg(nch), L.pmax.arg(), L.psum.arg(), floatArg(scale), out.arg())
}

// solve runs the iterations of the problem (p, q). With keep, f^t
// (t = 1..T) and g^t (t = 0..T) stay in the history buffers; it returns the
// final f and g.
func (r *run) solve(p, q side, c consts, keep bool) (f, g ptr) {
	L := r.L
	fcur, gcur := L.fHist, L.gHist
	r.fill(gcur, q.n, 0)
	scale := -c.tau * c.eps
	for t := 1; t <= c.iters; t++ {
		if keep {
			fcur = L.fHist.at((t - 1) * p.n)
		}
		r.lse(p, q, gcur, c, scale, fcur)
		if keep {
			gcur = L.gHist.at(t * q.n)
		}
		r.lse(q, p, fcur, c, scale, gcur)
	}
	return fcur, gcur
}

// value sums the dual-value terms of one side into the scalar slots s1 and,
// when s2 ≥ 0, s2 (see value_part).
func (r *run) value(s side, pot ptr, c consts, s1, s2 int) {
	L := r.L
	nch := ceilDiv(s.n, valueChunk)
	vp2 := ptr(0)
	if s2 >= 0 {
		vp2 = L.vp2
	}
	r.launch(kValuePart, blocks(nch), 1, intArg(s.n), s.logw.arg(), pot.arg(), floatArg(c.rho), boolArg(c.balanced),
		intArg(valueChunk), intArg(nch), L.vp1.arg(), vp2.arg())
	r.launch(kSumFin, 1, 1, intArg(nch), L.vp1.arg(), L.scal.at(s1).arg())
	if s2 >= 0 {
		r.launch(kSumFin, 1, 1, intArg(nch), L.vp2.arg(), L.scal.at(s2).arg())
	}
}

// weighted describes the plan-weighted sweep over rows × cols with
// e_ij = exp((cpot_j·invEps + log w_j) − C_ij·invEps + s_i) and
// s_i = rpot_i·sScale (+ rlogw_i when rlogw is not 0).
type weighted struct {
	rows, cols  side
	cpot        ptr
	rpot, rlogw ptr
	sScale      float64
}

// rowPass computes the row sums (and with grad the row gradient sums) of
// the sweep into the partial buffers and returns their number of chunks.
func (r *run) rowPass(w weighted, c consts, grad bool) int {
	L := r.L
	nch, chunk := split(w.rows.n, w.cols.n, r.e.minChunk)
	pg := ptr(0)
	if grad {
		pg = L.pgrad
	}
	r.launch(kWRowPart, blocks(w.rows.n), nch, w.rows.pts.arg(), w.cols.pts.arg(), intArg(w.rows.n), intArg(w.cols.n),
		intArg(r.e.d), w.cpot.arg(), w.cols.logw.arg(), floatArg(c.invEps), w.rpot.arg(), w.rlogw.arg(),
		floatArg(w.sScale), intArg(chunk), L.psum.arg(), pg.arg())
	return nch
}

// colPass computes the column sums Σ_i r_i·e_ij (and with grad the column
// gradient sums) into the partial buffers and returns their number of
// chunks; r = 0 means r_i = 1.
func (r *run) colPass(w weighted, rfac ptr, c consts, grad bool) int {
	L := r.L
	nch, chunk := split(w.cols.n, w.rows.n, r.e.minChunk)
	pg := ptr(0)
	if grad {
		pg = L.pgrad
	}
	r.launch(kWColPart, blocks(w.cols.n), nch, w.rows.pts.arg(), w.cols.pts.arg(), intArg(w.rows.n), intArg(w.cols.n),
		intArg(r.e.d), w.cpot.arg(), w.cols.logw.arg(), floatArg(c.invEps), w.rpot.arg(), w.rlogw.arg(),
		floatArg(w.sScale), rfac.arg(), intArg(chunk), L.psum.arg(), pg.arg())
	return nch
}

// rowFin: sumOut = row sums; gradOut += gradScale·r_i·(row gradient sums).
func (r *run) rowFin(n, nch int, rfac, sumOut, gradOut ptr, gradScale float64) {
	L := r.L
	r.launch(kRowFin, blocks(n), 1, intArg(n), intArg(nch), intArg(r.e.d), L.psum.arg(), L.pgrad.arg(), rfac.arg(),
		sumOut.arg(), gradOut.arg(), floatArg(gradScale))
}

// colFin: a = aScale·S (assign) or a + aScale·S; b += bScale·S;
// g += gScale·G, with S and G the column sums and gradient sums.
func (r *run) colFin(n, nch int, a ptr, aScale float64, assign bool, b ptr, bScale float64, g ptr, gScale float64) {
	L := r.L
	r.launch(kColFin, blocks(n), 1, intArg(n), intArg(nch), intArg(r.e.d), L.psum.arg(), L.pgrad.arg(), a.arg(),
		floatArg(aScale), boolArg(assign), b.arg(), floatArg(bScale), g.arg(), floatArg(gScale))
}

// backward adds sigma·∂V/∂(inputs) to gr by differentiating through the T
// iterations kept in the history (package ot's engine.backward).
func (r *run) backward(p, q side, c consts, sigma float64, gr grads) {
	L := r.L
	T := c.iters
	fT := L.fHist.at((T - 1) * p.n)
	gT := L.gHist.at(T * q.n)
	r.launch(kBarInit, blocks(p.n), 1, intArg(p.n), p.logw.arg(), fT.arg(), floatArg(sigma), floatArg(c.eps),
		floatArg(c.rho), boolArg(c.balanced), boolArg(false), L.fbar.arg(), gr.logp.arg())
	r.launch(kBarInit, blocks(q.n), 1, intArg(q.n), q.logw.arg(), gT.arg(), floatArg(sigma), floatArg(c.eps),
		floatArg(c.rho), boolArg(c.balanced), boolArg(true), L.gbar.arg(), gr.logq.arg())
	invTauEps := 1 / (c.tau * c.eps)
	for t := T; t >= 1; t-- {
		ft := L.fHist.at((t - 1) * p.n)
		gt := L.gHist.at(t * q.n)
		gprev := L.gHist.at((t - 1) * q.n)
		// g^t_j = −τε·LSE_i(f^t_i/ε − C_ij/ε + log p_i): rows are q.
		w := weighted{rows: q, cols: p, cpot: ft, rpot: gt, sScale: invTauEps}
		if gr.q != 0 {
			nch := r.rowPass(w, c, true)
			r.rowFin(q.n, nch, L.gbar, 0, gr.q, 2*c.tau)
		}
		nch := r.colPass(w, L.gbar, c, gr.p != 0)
		r.colFin(p.n, nch, L.fbar, -c.tau, false, gr.logp, -(c.tau * c.eps), gr.p, -(2 * c.tau))
		// f^t_i = −τε·LSE_j(g^{t−1}_j/ε − C_ij/ε + log q_j): rows are p.
		w = weighted{rows: p, cols: q, cpot: gprev, rpot: ft, sScale: invTauEps}
		if gr.p != 0 {
			nch := r.rowPass(w, c, true)
			r.rowFin(p.n, nch, L.fbar, 0, gr.p, 2*c.tau)
		}
		needColSum := t > 1 || gr.logq != 0
		if needColSum || gr.q != 0 {
			nch := r.colPass(w, L.fbar, c, gr.q != 0)
			a := ptr(0)
			if needColSum {
				a = L.gbar
			}
			r.colFin(q.n, nch, a, -c.tau, true, gr.logq, -(c.tau * c.eps), gr.q, -(2 * c.tau))
		}
		r.fill(L.fbar, p.n, 0)
	}
}

// envelope adds sigma·∂D/∂(inputs) at the final potentials (f, g) held
// fixed (package ot's engine.envelope).
func (r *run) envelope(p, q side, f, g ptr, c consts, sigma float64, gr grads) {
	L := r.L
	w := weighted{rows: p, cols: q, cpot: g, rpot: f, rlogw: p.logw, sScale: c.invEps}
	if gr.p != 0 || gr.logp != 0 {
		nch := r.rowPass(w, c, gr.p != 0)
		r.rowFin(p.n, nch, 0, L.rsum, gr.p, sigma*2)
	}
	if gr.q != 0 || gr.logq != 0 {
		nch := r.colPass(w, 0, c, gr.q != 0)
		r.colFin(q.n, nch, L.csum, 1, true, 0, 0, gr.q, -(sigma * 2))
	}
	if gr.logp != 0 {
		r.launch(kEnvLogw, blocks(p.n), 1, intArg(p.n), p.logw.arg(), f.arg(), L.rsum.arg(), floatArg(sigma),
			floatArg(c.eps), floatArg(c.rho), boolArg(c.balanced), gr.logp.arg())
	}
	if gr.logq != 0 {
		r.launch(kEnvLogw, blocks(q.n), 1, intArg(q.n), q.logw.arg(), g.arg(), L.csum.arg(), floatArg(sigma),
			floatArg(c.eps), floatArg(c.rho), boolArg(c.balanced), gr.logq.arg())
	}
}

// problem solves one problem, sums its dual value into the scalar slots
// slot..slot+2 and adds sigma times its gradient to gr.
func (r *run) problem(p, q side, c consts, mode ot.GradMode, sigma float64, gr grads, want bool, slot int) {
	keep := want && mode == ot.GradUnrolled
	f, g := r.solve(p, q, c, keep)
	s2 := -1
	if !c.balanced {
		s2 = slot + 2
	}
	r.value(p, f, c, slot, -1)
	r.value(q, g, c, slot+1, s2)
	if want {
		if mode == ot.GradUnrolled {
			r.backward(p, q, c, sigma, gr)
		} else {
			r.envelope(p, q, f, g, c, sigma, gr)
		}
	}
}

// dualValue is the value of a problem (without the unbalanced constant
// eps·m_p·m_q) from its three scalar slots.
func dualValue(s []float64, c consts) float64 {
	if c.balanced {
		return s[0] + s[1]
	}
	return -c.rho*s[0] - c.rho*s[1] - c.eps*s[2]
}

// evaluation describes what one call computes.
type evaluation struct {
	x, y, logA, logB []float64
	opt              ot.Options
	grad             *ot.Grad
	xy, xx, yy       bool // which problems
	// grid, when not empty, says that x and y are both its points (in
	// its order): the fused kernel then takes the separable grid path.
	grid ot.Grid
}

// evaluate uploads the inputs, runs the problems and downloads the
// outputs into e.host[:outLen]; it returns the values of the problems
// (without constants) in the order xy, xx, yy.
func (e *engine) evaluate(ev evaluation) (vals [3]float64, err error) {
	n, m := len(ev.logA), len(ev.logB)
	if ev.grid.N() > 0 {
		if !e.fusedGridOK(ev.grid) {
			return vals, fmt.Errorf("%w: %d×%d", ErrGridTooLarge, ev.grid.H, ev.grid.W)
		}
		return e.evaluateFused(ev)
	}
	if e.fusedOK(n, m) {
		return e.evaluateFused(ev)
	}
	want := wanted(ev.grad)
	keep := want && ev.opt.Grad == ot.GradUnrolled
	c := newConsts(ev.opt)
	err = e.x.exec(func(l launcher) error {
		if err := e.reserve(l, n, m, c.iters, keep); err != nil {
			return err
		}
		L := &e.lay
		if err := e.fillGuards(l); err != nil {
			return err
		}
		e.host = grow(e.host, max(L.inLen, L.outLen))
		in := e.host[:0]
		in = append(in, ev.x...)
		in = append(in, ev.y...)
		in = append(in, ev.logA...)
		in = append(in, ev.logB...)
		if err := l.upload(L.in, in); err != nil {
			return fmt.Errorf("cuda: upload: %w", err)
		}
		e.seq.reset()
		r := &run{l: recorder{l, &e.seq}, e: e, L: L}
		r.fill(L.out, L.outLen, 0)
		ps := side{pts: L.x, logw: L.la, n: n}
		qs := side{pts: L.y, logw: L.lb, n: m}
		var gx, gy, gla, glb ptr
		if want {
			gx, gy = pick(ev.grad.X, L.gx), pick(ev.grad.Y, L.gy)
			gla, glb = pick(ev.grad.LogA, L.gla), pick(ev.grad.LogB, L.glb)
		}
		if ev.xy {
			r.problem(ps, qs, c, ev.opt.Grad, 1, grads{gx, gy, gla, glb}, want, 0)
		}
		if ev.xx {
			r.problem(ps, ps, c, ev.opt.Grad, -0.5, grads{gx, gx, gla, gla}, gx != 0 || gla != 0, 3)
		}
		if ev.yy {
			r.problem(qs, qs, c, ev.opt.Grad, -0.5, grads{gy, gy, glb, glb}, gy != 0 || glb != 0, 6)
		}
		if r.err != nil {
			return r.err
		}
		if err := e.replay(l, L.out, L.outLen); err != nil {
			return err
		}
		if err := l.download(e.host[:L.outLen], L.out); err != nil {
			return fmt.Errorf("cuda: download: %w", err)
		}
		if e.guard > 0 {
			return e.checkGuards(l, L.gaps)
		}
		return nil
	})
	if err != nil {
		return vals, err
	}
	s := e.host[:numScalars]
	for k := range vals {
		vals[k] = dualValue(s[3*k:3*k+3], c)
	}
	if want {
		L := &e.lay
		d := e.d
		out := func(dst []float64, p ptr, n int) {
			if dst != nil {
				off := int(p-L.out) / 8
				copy(dst, e.host[off:off+n])
			}
		}
		out(ev.grad.X, L.gx, n*d)
		out(ev.grad.Y, L.gy, m*d)
		out(ev.grad.LogA, L.gla, n)
		out(ev.grad.LogB, L.glb, m)
	}
	return vals, nil
}

// checkGuards reports the first of the guard gaps a kernel wrote into.
func (e *engine) checkGuards(l launcher, gaps []int) error {
	if err := l.download(e.scratch[:e.memLen], e.mem); err != nil {
		return err
	}
	return checkGuardWords(e.scratch, gaps, e.guard)
}

// checkGuardWords reports the first of the guard gaps of guard words at
// the offsets gaps of the downloaded allocation mem that was written.
func checkGuardWords(mem []float64, gaps []int, guard int) error {
	for _, g := range gaps {
		for k := g; k < g+guard; k++ {
			if b := math.Float64bits(mem[k]); b != guardBits {
				return fmt.Errorf("cuda: guard word %d after the buffer ending at offset %d was overwritten (%#x)", k-g, g, b)
			}
		}
	}
	return nil
}

// pick returns p when the gradient slice is wanted, else 0.
func pick(g []float64, p ptr) ptr {
	if g == nil {
		return 0
	}
	return p
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// selfTerm is a cached y–y problem (package ot's SelfTerm).
type selfTerm struct {
	value0 float64 // OT_yy without its eps·m_b² constant
	mass   float64
	m      int
	opt    ot.Options
}

func (s *selfTerm) value() float64 {
	if s.opt.Balanced {
		return s.value0
	}
	return s.value0 + s.opt.Eps*s.mass*s.mass
}

func (s *selfTerm) check(m int, opt ot.Options) error {
	if s.m != m || s.opt.Eps != opt.Eps || s.opt.Balanced != opt.Balanced ||
		s.opt.Iters != opt.Iters || (!opt.Balanced && s.opt.Rho != opt.Rho) {
		return fmt.Errorf("cuda: the cached y–y term was computed for other sizes or options")
	}
	return nil
}

// divergence is Workspace.Divergence.
func (e *engine) divergence(x, y, logA, logB []float64, opt ot.Options, yy *selfTerm, grad *ot.Grad) (ot.Result, error) {
	return e.divergenceOn(ot.Grid{}, x, y, logA, logB, opt, yy, grad)
}

// gridDivergence is Workspace.GridDivergence.
func (e *engine) gridDivergence(g ot.Grid, logA, logB []float64, opt ot.Options, grad *ot.Grad) (ot.Result, error) {
	pts, err := e.gridPoints(g, grad)
	if err != nil {
		return ot.Result{}, err
	}
	return e.divergenceOn(g, pts, pts, logA, logB, opt, nil, grad)
}

// gridOT is Workspace.GridOT.
func (e *engine) gridOT(g ot.Grid, logA, logB []float64, opt ot.Options, grad *ot.Grad) (float64, error) {
	pts, err := e.gridPoints(g, grad)
	if err != nil {
		return 0, err
	}
	return e.otOn(g, pts, pts, logA, logB, opt, grad)
}

// gridPoints checks a grid problem's grid and gradient request (the
// support is fixed) and returns the grid's points.
func (e *engine) gridPoints(g ot.Grid, grad *ot.Grad) ([]float64, error) {
	if e.d != 2 {
		return nil, fmt.Errorf("cuda: a grid problem needs a workspace of dimension 2, not %d", e.d)
	}
	if g.H < 1 || g.W < 1 {
		return nil, fmt.Errorf("cuda: grid must be at least 1×1, got %d×%d", g.H, g.W)
	}
	if grad != nil && (grad.X != nil || grad.Y != nil) {
		return nil, errors.New("cuda: the grid path has a fixed support; request gradients with respect to the log-weights only")
	}
	if e.gridPts == nil || e.gridOf != g {
		e.gridPts, e.gridOf = g.Points(), g
	}
	return e.gridPts, nil
}

// divergenceOn is divergence on the points x and y, which are the points
// of g when g is not empty.
func (e *engine) divergenceOn(g ot.Grid, x, y, logA, logB []float64, opt ot.Options, yy *selfTerm, grad *ot.Grad) (ot.Result, error) {
	if err := validateOptions(opt); err != nil {
		return ot.Result{}, err
	}
	n, err := checkSide("a", x, logA, e.d)
	if err != nil {
		return ot.Result{}, err
	}
	m, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return ot.Result{}, err
	}
	if err := ot.CheckScale(opt.Eps, e.d, x, y); err != nil {
		return ot.Result{}, err
	}
	if err := checkGrads(grad, n, m, e.d); err != nil {
		return ot.Result{}, err
	}
	if yy != nil {
		if err := yy.check(m, opt); err != nil {
			return ot.Result{}, err
		}
	}
	ma, mb := mass(logA), mass(logB)
	if err := checkMasses(opt, ma, mb); err != nil {
		return ot.Result{}, err
	}
	vals, err := e.evaluate(evaluation{x: x, y: y, logA: logA, logB: logB, opt: opt, grad: grad, xy: true, xx: true, yy: yy == nil, grid: g})
	if err != nil {
		return ot.Result{}, err
	}
	vyy := vals[2]
	if yy != nil {
		vyy = yy.value0
	}
	// Every problem runs opt.Iters iterations (no converged mode here);
	// the y–y term's too.
	its := ot.Iterations{XY: opt.Iters, XX: opt.Iters, YY: opt.Iters}
	res := ot.Result{MassA: ma, MassB: mb, OTxy: vals[0], OTxx: vals[1], OTyy: vyy, YYFromCache: yy != nil, Iters: its}
	res.Divergence = vals[0] - 0.5*vals[1] - 0.5*vyy
	if opt.Balanced {
		dm := ma - mb
		res.Divergence += 0.5 * opt.Eps * dm * dm
		if wanted(grad) && opt.Grad == ot.GradUnrolled {
			k := opt.Eps * dm
			for i, v := range grad.LogA {
				grad.LogA[i] = v + k*math.Exp(logA[i])
			}
			for j, v := range grad.LogB {
				grad.LogB[j] = v - k*math.Exp(logB[j])
			}
		}
	} else {
		res.OTxy += opt.Eps * ma * mb
		res.OTxx += opt.Eps * ma * ma
		res.OTyy += opt.Eps * mb * mb
	}
	return res, nil
}

// ot is Workspace.OT.
func (e *engine) ot(x, y, logA, logB []float64, opt ot.Options, grad *ot.Grad) (float64, error) {
	return e.otOn(ot.Grid{}, x, y, logA, logB, opt, grad)
}

// otOn is ot on the points x and y, which are the points of g when g is not
// empty.
func (e *engine) otOn(g ot.Grid, x, y, logA, logB []float64, opt ot.Options, grad *ot.Grad) (float64, error) {
	if err := validateOptions(opt); err != nil {
		return 0, err
	}
	n, err := checkSide("a", x, logA, e.d)
	if err != nil {
		return 0, err
	}
	m, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return 0, err
	}
	if err := ot.CheckScale(opt.Eps, e.d, x, y); err != nil {
		return 0, err
	}
	if err := checkGrads(grad, n, m, e.d); err != nil {
		return 0, err
	}
	ma, mb := mass(logA), mass(logB)
	if err := checkMasses(opt, ma, mb); err != nil {
		return 0, err
	}
	vals, err := e.evaluate(evaluation{x: x, y: y, logA: logA, logB: logB, opt: opt, grad: grad, xy: true, grid: g})
	if err != nil {
		return 0, err
	}
	v := vals[0]
	if wanted(grad) && (!opt.Balanced || opt.Grad == ot.GradEnvelope) {
		// Gradient of the constant eps·m_a·m_b (part of the unbalanced value,
		// and of the dual D in the envelope gradient).
		for i, gv := range grad.LogA {
			grad.LogA[i] = gv + opt.Eps*math.Exp(logA[i])*mb
		}
		for j, gv := range grad.LogB {
			grad.LogB[j] = gv + opt.Eps*math.Exp(logB[j])*ma
		}
	}
	if !opt.Balanced {
		v += opt.Eps * ma * mb
	}
	return v, nil
}

// selfTerm computes the y–y problem once.
func (e *engine) selfTerm(y, logB []float64, opt ot.Options) (*selfTerm, error) {
	if err := validateOptions(opt); err != nil {
		return nil, err
	}
	m, err := checkSide("b", y, logB, e.d)
	if err != nil {
		return nil, err
	}
	if err := ot.CheckScale(opt.Eps, e.d, y); err != nil {
		return nil, err
	}
	vals, err := e.evaluate(evaluation{x: y, y: y, logA: logB, logB: logB, opt: opt, xy: true})
	if err != nil {
		return nil, err
	}
	return &selfTerm{value0: vals[0], mass: mass(logB), m: m, opt: opt}, nil
}
