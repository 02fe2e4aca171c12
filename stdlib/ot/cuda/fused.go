package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// The fused path (issue 15) solves every problem of an evaluation (x–y,
// x–x and y–y) in one launch of the kernel fused of kernels/fused.cuh: one
// thread block per problem runs all the iterations, the dual value and the
// gradient, with the potentials of the current iteration on chip. An
// evaluation then costs one upload, one launch and one download, where the
// multi-launch path launches about a thousand kernels (three thousand with
// the unrolled gradient), whose overhead dominates at the sizes of the
// paper's experiments. One block per problem leaves most of a large GPU
// idle for a single small evaluation; concurrent evaluations of the
// workspaces of one Device are therefore batched into one launch (see
// combiner).

// The words of a problem's descriptor (the enum FD_* of kernels/fused.cuh;
// the host kernels print FD_WORDS, which the tests compare with fdWords).
const (
	fdP = iota
	fdQ
	fdLP
	fdLQ
	fdN
	fdM
	fdD
	fdIters
	fdEps
	fdRho
	fdBalanced
	fdMode
	fdSigma
	fdF
	fdG
	fdScal
	fdGP
	fdGQ
	fdGLP
	fdGLQ
	fdThreads
	fdTrunc
	fdGridH
	fdGridW
	fdStage
	fdPair
	fdPivot
	fdPrefill
	fdWords
)

// The truncation flags of a descriptor (FT_* in kernels/fused.cuh).
const (
	ftTerms  = 1
	ftBlocks = 2
)

// The gradient modes of a descriptor (FM_* in kernels/fused.cuh).
const (
	fmNone     = 0
	fmUnrolled = 1
	fmEnvelope = 2
)

const (
	// fusedMaxPoints is the default largest number of points of a side
	// for which an evaluation takes the fused path. A block per problem
	// is compute-bound on one multiprocessor: measured on an H100
	// (BENCHMARKS.md, "Fewer instructions per sweep"), one evaluation with
	// the unrolled gradient alone takes, fused against multi-launch, 2.9
	// against 13.0 ms at n = m = 120 in 1-D and 5.0 against 14.4 ms at 256
	// (2-D: 4.6 against 13.7 and 13.2 against 16.1 ms); from 512
	// points a problem's arrays no longer fit the shared memory of a block
	// (fusedOK), and an earlier kernel lost there (34.8 against 15.7 ms in
	// 1-D); batched evaluations cost the fused path almost nothing more.
	fusedMaxPoints = 256
	// fusedMaxDim is the largest dimension the fused kernel is compiled
	// for.
	fusedMaxDim = 3
	// fusedMinThreads and fusedMaxThreads bound a problem's thread count.
	fusedMinThreads = 64
	fusedMaxThreads = 512
	// fusedMaxShared is the dynamic shared memory a block may use without
	// the opt-in attribute, in doubles (48 KiB).
	fusedMaxShared = 48 << 10 / 8
	// fusedCullBlock and fusedScratch are FUSED_CB and FUSED_SCR of
	// kernels/fused.cuh.
	fusedCullBlock = 32
	fusedScratch   = 4
)

// fusedThreads is the number of threads of a problem whose larger side
// has k points: four per point (so that up to four threads reduce each
// row), rounded up to a power of two, within [fusedMinThreads,
// fusedMaxThreads].
func fusedThreads(k int) int {
	t := 4 << bits.Len(uint(max(k, 1)-1))
	return min(max(t, fusedMinThreads), fusedMaxThreads)
}

// fusedShared is the number of doubles of dynamic shared memory of a
// problem with n and m points in dimension d and nt threads (the layout of
// fusedBody): the points of both sides, the current potentials, the
// column of each row's maximum, three sweep arrays of max(n, m), three
// arrays of block maxima, the culling blocks' boxes, the adjoints of
// the potentials (except on a grid), the staged history (stage: one f
// and two g), the second set of a weighted sweep's arrays (prefill) and
// the threads' scratch.
func fusedShared(n, m, d, nt int, grid, stage, prefill bool) int {
	k := max(n, m)
	s := (n+m)*(d+2) + 3*k + 3*cullBlocks(k) + 2*d*(cullBlocks(n)+cullBlocks(m)) + fusedScratch*nt
	if !grid {
		// On a grid the adjoints take the place of the columns of the
		// rows' maxima.
		s += n + m
	}
	if stage {
		s += n + 2*m
	}
	if prefill {
		// The column terms, row shifts and row factors, and two arrays
		// of block maxima (FD_PREFILL).
		s += 3*k + 2*cullBlocks(k)
	}
	if grid {
		// fusedGridWeighted's and fusedGridPass's arrays, and the kernel
		// table (at most n entries).
		s += 8 * n
	}
	return s
}

// ErrGridTooLarge is returned by the grid evaluations (GridDivergence,
// GridOT) for a grid whose problem does not fit one thread block's shared
// memory: the separable grid path exists only in the fused kernel, and the
// caller should use package ot's.
var ErrGridTooLarge = errors.New("cuda: grid too large for the GPU's grid path")

// fusedGridOK reports whether a problem on the grid g (in a workspace of
// dimension 2: gridPoints checks it) fits the fused kernel.
func (e *engine) fusedGridOK(g ot.Grid) bool {
	n := g.N()
	return fusedShared(n, n, 2, e.gridThreads(n), true, false, false) <= fusedMaxShared
}

// gridThreads is the thread count of a grid problem of n points: one per
// point (each pass of fusedGridLSE computes n line sums), a power of two
// within [fusedMinThreads, fusedMaxThreads].
func (e *engine) gridThreads(n int) int {
	if e.fusedNT > 0 {
		return e.fusedNT
	}
	t := 1 << bits.Len(uint(max(n, 1)-1))
	return min(max(t, fusedMinThreads), fusedMaxThreads)
}

// cullBlocks is the number of culling blocks of n points (FUSED_CB in
// kernels/fused.cuh).
func cullBlocks(n int) int { return (n + fusedCullBlock - 1) / fusedCullBlock }

// fusedOK reports whether an evaluation of n and m points takes the fused
// path.
func (e *engine) fusedOK(n, m int) bool {
	k := max(n, m)
	if e.fusedMax <= 0 || e.d > fusedMaxDim || k > e.fusedMax {
		return false
	}
	return fusedShared(n, m, e.d, e.threadsFor(k), false, false, false) <= fusedMaxShared
}

func (e *engine) threadsFor(k int) int {
	if e.fusedNT > 0 {
		return e.fusedNT
	}
	return fusedThreads(k)
}

// cullMode says which problems' sweeps cull blocks (FT_BLOCKS).
type cullMode int

const (
	cullAuto   cullMode = iota // where it pays (cullPays)
	cullAlways                 // every problem (tests, benchmarks)
	cullNever                  // none (tests, benchmarks)
)

// cullPays reports whether the fused kernel's sweeps of a problem of n and
// m points in dimension d should cull blocks. Culling changes no result;
// it skips the blocks of terms that cannot change a sum at the cost of a
// bound per block and row. Measured on an H100 (BENCHMARKS.md, "Fewer
// instructions per sweep"): in 1-D it pays from three blocks of points on
// (120 points: 2.85 against 3.13 ms per evaluation with the unrolled
// gradient; 64: 2.08 against 1.90), and in 2-D it never does up to the
// fused path's 256 points (256: 14.5 against 13.6 ms), where fewer blocks
// lie beyond a row's reach.
func cullPays(d, n, m int) bool { return d == 1 && max(n, m) > 2*fusedCullBlock }

// prefills reports whether the fused kernel runs the fills of the
// unrolled backward pass (mode) of a problem with np and nq points and nt
// threads beside its sweeps (FD_PREFILL): the problem must fit shared
// memory with a second set of a weighted sweep's arrays, and the pass must
// pair its sweeps (FD_PAIR). A grid problem's sweeps take the grid path.
func (e *engine) prefills(np, nq, nt, mode int, grid bool) bool {
	return mode == fmUnrolled && !grid && !e.fusedNoPrefill && !e.fusedUnpaired &&
		fusedShared(np, nq, e.d, nt, grid, false, true) <= fusedMaxShared
}

// fusedProblem is one problem of a fused evaluation.
type fusedProblem struct {
	kind    int // 0: x–y, 1: x–x, 2: y–y
	p, q    side
	sym     bool // q is p: the q-side gradients are the p-side ones
	sigma   float64
	mode    int
	nt      int
	stage   bool // the unrolled backward pass stages the history in shared memory
	prefill bool // the unrolled backward pass runs its fills beside its sweeps (FD_PREFILL)
	// The gradients it contributes to: destination slices (nil when not
	// wanted) and their device arrays in the problem's output.
	dst  [4][]float64 // ∂/∂P, ∂/∂Q, ∂/∂LP, ∂/∂LQ
	grad [4]ptr
	// Device buffers.
	f, g, scal ptr
}

// fusedLayout is the device memory of a fused evaluation: the inputs and
// the descriptors (uploaded at once), the problems' work buffers, and
// their outputs (downloaded at once).
type fusedLayout struct {
	probs        []fusedProblem
	in, desc     ptr
	inLen        int
	out          ptr
	outLen       int
	threads      int // the launch's block size: the largest nt
	shared       int // the launch's shared memory in doubles
	total        int
	gaps         []int
	descWords    []uint64
	x, y, la, lb ptr
}

// fusedPlan lays out the fused evaluation ev: its inputs (with its
// descriptors after them when desc is set) from the arena in, the
// problems' work buffers from work, and their outputs, contiguous (guard
// gaps aside), from out. An evaluation alone takes all three from one
// arena in its engine's allocation; in a batch, its inputs and outputs lie
// in the combiner's. Arenas based at 0 give the sizes only.
func (e *engine) fusedPlan(in, work, out *arena, ev *evaluation, L *fusedLayout, desc bool) {
	n, m, d := len(ev.logA), len(ev.logB), e.d
	want := wanted(ev.grad)
	T := ev.opt.Iters
	*L = fusedLayout{probs: L.probs[:0], descWords: L.descWords[:0], gaps: L.gaps[:0]}
	var gx, gy, gla, glb []float64
	if want {
		gx, gy, gla, glb = ev.grad.X, ev.grad.Y, ev.grad.LogA, ev.grad.LogB
	}
	add := func(kind, np, nq int, sigma float64, dst [4][]float64) {
		pr := fusedProblem{kind: kind, sym: kind > 0, sigma: sigma, dst: dst}
		if dst[0] != nil || dst[1] != nil || dst[2] != nil || dst[3] != nil {
			pr.mode = fmEnvelope
			if ev.opt.Grad == ot.GradUnrolled {
				pr.mode = fmUnrolled
			}
		}
		pr.p.n, pr.q.n = np, nq
		grid := ev.grid.N() > 0
		if grid {
			pr.nt = e.gridThreads(np)
		} else {
			pr.nt = e.threadsFor(max(np, nq))
		}
		// Running the unrolled backward pass's fills beside its sweeps
		// saves two barriers per iteration, and staging the history in
		// shared memory hides the latency of its reads, where the problem
		// still fits with them (in this order of preference).
		pr.prefill = e.prefills(np, nq, pr.nt, pr.mode, grid)
		pr.stage = pr.mode == fmUnrolled && !grid && fusedShared(np, nq, d, pr.nt, grid, true, pr.prefill) <= fusedMaxShared
		L.threads = max(L.threads, pr.nt)
		L.shared = max(L.shared, fusedShared(np, nq, d, pr.nt, grid, pr.stage, pr.prefill))
		L.probs = append(L.probs, pr)
	}
	if ev.xy {
		add(0, n, m, 1, [4][]float64{gx, gy, gla, glb})
	}
	if ev.xx {
		add(1, n, n, -0.5, [4][]float64{gx, nil, gla, nil})
	}
	if ev.yy {
		add(2, m, m, -0.5, [4][]float64{gy, nil, glb, nil})
	}
	L.inLen = (n+m)*d + n + m
	if desc {
		L.inLen += fdWords * len(L.probs)
	}
	L.in = in.take(L.inLen)
	L.x = L.in
	L.y = L.x.at(n * d)
	L.la = L.y.at(m * d)
	L.lb = L.la.at(n)
	L.desc = L.lb.at(m)
	for i := range L.probs {
		pr := &L.probs[i]
		np, nq := pr.p.n, pr.q.n
		if pr.mode == fmUnrolled {
			pr.f, pr.g = work.take(T*np), work.take((T+1)*nq)
		} else {
			pr.f, pr.g = work.take(np), work.take(nq)
		}
	}
	start := out.off
	L.out = out.base.at(start)
	for i := range L.probs {
		pr := &L.probs[i]
		np, nq := pr.p.n, pr.q.n
		pr.scal = out.take(3)
		sizes := [4]int{np * d, nq * d, np, nq}
		for k, dst := range pr.dst {
			if dst != nil {
				pr.grad[k] = out.take(sizes[k])
			}
		}
	}
	L.outLen = out.off - start
}

// fusedPlanAlone lays out the fused evaluation ev alone at offsets from
// base (0 when only the size is wanted), descriptors included.
func (e *engine) fusedPlanAlone(base ptr, ev *evaluation, L *fusedLayout) {
	a := arena{base: base, guard: e.guard, gaps: L.gaps[:0]}
	e.fusedPlan(&a, &a, &a, ev, L, true)
	L.total, L.gaps = a.off, a.gaps
}

// The work of a fused evaluation is split so that a batch of them (see
// combiner) holds the device only for its transfers and its launch: the
// host work before (fusedStage: the spatial orders and the permuted
// inputs) and after (fusedScatter: the gradients back in the caller's
// order) runs on each evaluation's own goroutine, in parallel; inside
// exec, a batch (combiner.run) lays out and uploads the inputs of all its
// evaluations at once and downloads their outputs at once, and an
// evaluation alone does the same with fusedPrepare and fusedDownload.

// fusedStage writes the inputs of the fused evaluation ev (the measures,
// in spatial order unless inOrder) to the start of e.host, sized for its
// inputs and outputs, where fusedPrepare appends the descriptors. It
// needs no device.
func (e *engine) fusedStage(ev *evaluation) {
	L := &e.fl
	e.fusedPlanAlone(0, ev, L)
	n, m, d := len(ev.logA), len(ev.logB), e.d
	e.host = grow(e.host, max(L.inLen, L.outLen))
	in := e.host[:0]
	if e.inOrder(ev) {
		in = append(in, ev.x...)
		in = append(in, ev.y...)
		in = append(in, ev.logA...)
		in = append(in, ev.logB...)
	} else {
		// Both measures in spatial order (the kernel's truncation needs
		// it); fusedScatter puts the gradients back in the caller's order.
		e.permX = slices.Grow(e.permX[:0], n)[:n]
		e.permY = slices.Grow(e.permY[:0], m)[:m]
		e.keys = spatialOrder(e.permX, e.keys, ev.x, d)
		e.keys = spatialOrder(e.permY, e.keys, ev.y, d)
		in = permuteRows(in, ev.x, e.permX, d)
		in = permuteRows(in, ev.y, e.permY, d)
		in = permuteRows(in, ev.logA, e.permX, 1)
		in = permuteRows(in, ev.logB, e.permY, 1)
	}
	e.staged = len(in)
}

// fusedPrepare reserves the device memory of ev, staged by fusedStage, and
// uploads its inputs and descriptors. It runs inside exec.
func (e *engine) fusedPrepare(l launcher, ev *evaluation) error {
	L := &e.fl
	e.fusedPlanAlone(0, ev, L)
	if err := e.ensure(l, L.total); err != nil {
		return err
	}
	e.fusedPlanAlone(e.mem, ev, L)
	if err := e.fillGuards(l); err != nil {
		return err
	}
	e.fusedSides(ev)
	in := e.host[:e.staged]
	L.descWords = L.descWords[:0]
	for i := range L.probs {
		L.descWords = e.fusedDesc(L.descWords, &L.probs[i], ev)
	}
	for _, w := range L.descWords {
		in = append(in, math.Float64frombits(w))
	}
	if err := l.upload(L.in, in); err != nil {
		return fmt.Errorf("cuda: upload: %w", err)
	}
	return nil
}

// fusedSides points the problems of the fused evaluation ev, laid out, at
// their measures' device arrays.
func (e *engine) fusedSides(ev *evaluation) {
	L := &e.fl
	n, m := len(ev.logA), len(ev.logB)
	ps := side{pts: L.x, logw: L.la, n: n}
	qs := side{pts: L.y, logw: L.lb, n: m}
	for i := range L.probs {
		pr := &L.probs[i]
		switch pr.kind {
		case 0:
			pr.p, pr.q = ps, qs
		case 1:
			pr.p, pr.q = ps, ps
		default:
			pr.p, pr.q = qs, qs
		}
	}
}

// inOrder reports whether the fused evaluation ev keeps the caller's
// order of the points: without truncation (fusedPlain), and on a grid,
// whose passes need its row-major order.
func (e *engine) inOrder(ev *evaluation) bool { return e.fusedPlain || ev.grid.N() > 0 }

// fusedDesc appends the descriptor of pr, a problem of ev.
func (e *engine) fusedDesc(w []uint64, pr *fusedProblem, ev *evaluation) []uint64 {
	opt, d := ev.opt, e.d
	var desc [fdWords]uint64
	desc[fdP], desc[fdQ] = pr.p.pts.arg(), pr.q.pts.arg()
	desc[fdLP], desc[fdLQ] = pr.p.logw.arg(), pr.q.logw.arg()
	desc[fdN], desc[fdM], desc[fdD] = intArg(pr.p.n), intArg(pr.q.n), intArg(d)
	desc[fdIters] = intArg(opt.Iters)
	desc[fdEps], desc[fdRho] = floatArg(opt.Eps), floatArg(opt.Rho)
	desc[fdBalanced] = boolArg(opt.Balanced)
	desc[fdMode] = intArg(pr.mode)
	desc[fdSigma] = floatArg(pr.sigma)
	desc[fdF], desc[fdG] = pr.f.arg(), pr.g.arg()
	desc[fdScal] = pr.scal.arg()
	desc[fdGP], desc[fdGQ], desc[fdGLP], desc[fdGLQ] = pr.grad[0].arg(), pr.grad[1].arg(), pr.grad[2].arg(), pr.grad[3].arg()
	if pr.sym {
		desc[fdGQ], desc[fdGLQ] = desc[fdGP], desc[fdGLP]
	}
	desc[fdThreads] = intArg(pr.nt)
	switch {
	case e.fusedPlain:
	case ev.grid.N() > 0 || e.fusedCull == cullNever || e.fusedCull == cullAuto && !cullPays(d, pr.p.n, pr.q.n):
		desc[fdTrunc] = ftTerms
	default:
		desc[fdTrunc] = ftTerms | ftBlocks
	}
	desc[fdGridH], desc[fdGridW] = intArg(ev.grid.H), intArg(ev.grid.W)
	desc[fdStage] = boolArg(pr.stage)
	desc[fdPair] = boolArg(!e.fusedUnpaired)
	desc[fdPivot] = boolArg(!e.fusedNoPivot)
	desc[fdPrefill] = boolArg(pr.prefill)
	return append(w, desc[:]...)
}

// fusedDownload downloads the outputs of the fused evaluation ev after its
// launch into e.host, for fusedScatter. It runs inside exec.
func (e *engine) fusedDownload(l launcher) error {
	L := &e.fl
	if err := l.download(e.host[:L.outLen], L.out); err != nil {
		return fmt.Errorf("cuda: download: %w", err)
	}
	if e.guard > 0 {
		return e.checkGuards(l, L.gaps)
	}
	return nil
}

// fusedScatter writes the gradients of the fused evaluation ev, downloaded
// into e.host (fusedDownload, combiner.run), and returns the problems'
// values (without constants) in the order xy, xx, yy. It needs no device.
func (e *engine) fusedScatter(ev *evaluation, c consts) (vals [3]float64) {
	L := &e.fl
	out := e.host[:L.outLen]
	at := func(p ptr) int { return int(p-L.out) / 8 }
	if wanted(ev.grad) {
		for _, g := range [][]float64{ev.grad.X, ev.grad.Y, ev.grad.LogA, ev.grad.LogB} {
			clear(g)
		}
	}
	for _, pr := range L.probs {
		vals[pr.kind] = dualValue(out[at(pr.scal):][:3], c)
		for g, dst := range pr.dst {
			if dst == nil {
				continue
			}
			src := out[at(pr.grad[g]):][:len(dst)]
			if e.inOrder(ev) {
				for i := range dst {
					dst[i] += src[i]
				}
				continue
			}
			// g: 0 and 2 are the first measure's (x, or y for y–y), 1 and
			// 3 the second's (y); 0 and 1 points, 2 and 3 log-weights.
			perm := e.permX
			if pr.kind == 2 || g%2 == 1 {
				perm = e.permY
			}
			w := len(dst) / len(perm)
			for k, i := range perm {
				for c := range w {
					dst[i*w+c] += src[k*w+c]
				}
			}
		}
	}
	return vals
}

// evaluateFused is evaluate on the fused path: batched with the
// concurrent evaluations of other workspaces when the engine has a
// combiner, alone otherwise.
func (e *engine) evaluateFused(ev evaluation) (vals [3]float64, err error) {
	c := newConsts(ev.opt)
	e.fusedStage(&ev)
	if e.comb != nil {
		j := &fusedJob{e: e, ev: &ev, cohort: e.cohort}
		e.comb.submit(e.x, j)
		err = j.err
	} else {
		err = e.x.exec(func(l launcher) error {
			if err := e.fusedPrepare(l, &ev); err != nil {
				return err
			}
			L := &e.fl
			if err := l.launch(kFused, len(L.probs), 1, L.threads, 8*L.shared, []uint64{L.desc.arg(), intArg(len(L.probs))}); err != nil {
				return fmt.Errorf("cuda: launching fused: %w", err)
			}
			return e.fusedDownload(l)
		})
	}
	if err != nil {
		return vals, err
	}
	return e.fusedScatter(&ev, c), nil
}

// combiner batches fused evaluations: an evaluation that arrives while the
// device runs a batch waits, and the waiting evaluations of every
// workspace of the device then run as one batch (one upload, one launch
// and one download for all). Before a batch starts, its leader lets the
// evaluations that could still join it arrive (gather): those of the
// cohorts of the queued evaluations (the other replicates of a crn call),
// those of the workspaces of the last batch (the other chains), and, on an
// idle device, those started with it without a cohort. A problem's result does not depend on the problems it is
// batched with (each runs in its own block with its own thread count), so
// batching changes timings only.
type combiner struct {
	mu    sync.Mutex
	queue []*fusedJob
	busy  bool // a batch is running or about to
	// cohortMax and expectMax, when positive (tests), replace
	// gatherCohortMax and gatherExpectMax.
	cohortMax, expectMax time.Duration
	// last are the engines of the last batch, which the next one expects
	// (gather).
	last []*engine
	// arrived wakes a gathering leader when a job joins the queue.
	arrived chan struct{}

	// Used by the batch's leader only: the device buffer of the batch's
	// inputs, descriptors and outputs (length in float64s), and its host
	// copy.
	mem    ptr
	memLen int
	host   []float64
}

// fusedJob is one evaluation, staged (fusedStage), waiting in a combiner.
type fusedJob struct {
	e   *engine
	ev  *evaluation
	err error
	// work is the size of its work buffers in its engine's allocation.
	work int
	// cohort is the cohort of the job's goroutine, nil for none: the job
	// counts as waiting in it from its submission to the end of its batch.
	cohort *stdlib.Cohort
	// wake receives false when the job is done, true when it must lead
	// the next batch.
	wake chan bool
}

// submit runs j in the next batch of x's device and returns when it is
// done. The first job of an idle combiner leads: it runs the queued jobs
// as one batch, then hands the lead to the first job queued meanwhile.
func (cb *combiner) submit(x executor, j *fusedJob) {
	j.wake = make(chan bool, 1)
	cb.mu.Lock()
	cb.queue = append(cb.queue, j)
	if cb.arrived == nil {
		cb.arrived = make(chan struct{}, 1)
	}
	select {
	case cb.arrived <- struct{}{}:
	default:
	}
	if j.cohort != nil {
		j.cohort.Wait()
	}
	idle := !cb.busy
	cb.busy = true
	cb.mu.Unlock()
	if !idle && !<-j.wake {
		return
	}
	cb.gather(idle)
	cb.mu.Lock()
	batch := cb.queue
	cb.queue = nil
	cb.last = cb.last[:0]
	for _, o := range batch {
		cb.last = append(cb.last, o.e)
	}
	cb.mu.Unlock()

	err := x.exec(func(l launcher) error { return cb.run(l, batch) })
	for _, o := range batch {
		if o.err == nil {
			o.err = err
		}
	}
	cb.mu.Lock()
	// The batch's goroutines compute again from here: a cohort with
	// members in it is not idle for the next leader.
	for _, o := range batch {
		if o.cohort != nil {
			o.cohort.Resume()
		}
	}
	if len(cb.queue) > 0 {
		cb.queue[0].wake <- true
	} else {
		cb.busy = false
	}
	cb.mu.Unlock()
	for _, o := range batch {
		if o != j {
			o.wake <- false
		}
	}
}

// The gathering windows of a batch. A few microseconds of CPU work
// separate the submissions of evaluations started together, and a fused
// launch takes milliseconds. Without cohorts, a batch started on an idle
// device waits until no job has joined the queue for gatherQuiet, at
// most gatherMax; a batch waits for the computing members of its jobs'
// cohorts at most gatherCohortMax, about a launch's time: a batch that
// leaves a member behind costs that member a launch of its own. It waits
// for the workspaces of the last batch at most gatherExpectMax: enough for
// chains that resumed together to submit again, and little for a chain
// whose successive batches come from different workspaces (a Sinkhorn
// call outside a crn call after one inside), which waits that long for
// workspaces that cannot come.
const (
	gatherQuiet     = 50 * time.Microsecond
	gatherMax       = 500 * time.Microsecond
	gatherCohortMax = 2 * time.Millisecond
	gatherExpectMax = 100 * time.Microsecond
	gatherSpin      = 50 * time.Microsecond
	gatherPoll      = 10 * time.Microsecond
)

// gather yields until the queue holds every evaluation that could still
// join the batch: until no member of the cohort of a queued job computes
// (at most gatherCohortMax); until every engine of the last batch has a
// job queued (at most gatherMax: chains that shared a batch stay together,
// and one that fell a batch behind catches up with the others); and, for
// a batch started on an idle device with a queued job without a cohort,
// until no job has joined the queue for gatherQuiet (at most gatherMax).
// It spins for the first gatherSpin, for the quiet window and for the
// last batch's engines; cohorts' members awaited longer it waits for on
// the arrived channel, since their goroutines may need the processor
// (measured on 2 cores: spinning leaders delayed a third of the rounds of
// BenchmarkHostChains by 2 ms).
func (cb *combiner) gather(idle bool) {
	cohortMax, expectMax := gatherCohortMax, gatherExpectMax
	if cb.cohortMax > 0 {
		cohortMax = cb.cohortMax
	}
	if cb.expectMax > 0 {
		expectMax = cb.expectMax
	}
	start := time.Now()
	last, lastAt := -1, start
	var timer *time.Timer
	for {
		cb.mu.Lock()
		n := len(cb.queue)
		computing, plain := false, false
		for _, j := range cb.queue {
			switch {
			case j.cohort == nil:
				plain = true
			case j.cohort.Computing() > 0:
				computing = true
			}
		}
		expecting := slices.ContainsFunc(cb.last, func(e *engine) bool {
			return !slices.ContainsFunc(cb.queue, func(j *fusedJob) bool { return j.e == e })
		})
		cb.mu.Unlock()
		now := time.Now()
		if n != last {
			last, lastAt = n, now
		}
		quiet := !idle || !plain || now.Sub(lastAt) >= gatherQuiet || now.Sub(start) >= gatherMax
		expected := !expecting || now.Sub(start) >= expectMax
		if quiet && expected && (!computing || now.Sub(start) >= cohortMax) {
			return
		}
		// Cohorts' members that are late past the first microseconds may
		// need the processor this goroutine holds: wait for an arrival
		// (a timer of less than a millisecond takes one). The quiet
		// window and the last batch's engines are awaited for a time too
		// short for a timer: spin.
		awaiting := computing && now.Sub(start) < cohortMax
		if !awaiting || now.Sub(start) < gatherSpin {
			runtime.Gosched()
			continue
		}
		if timer == nil {
			timer = time.NewTimer(gatherPoll)
			defer timer.Stop()
		} else {
			timer.Reset(gatherPoll)
		}
		select {
		case <-cb.arrived:
		case <-timer.C:
		}
	}
}

// run uploads the inputs of the jobs (staged by fusedStage) and the
// descriptors of their problems at once, launches the fused kernel once
// for all the problems, and downloads their outputs at once into each
// job's host buffer, for fusedScatter on the job's goroutine. The inputs
// and outputs of a batch lie in the combiner's device buffer (the inputs
// of each job, the descriptors, the outputs of each job); each job's work
// buffers (the potentials and their history) in its engine's. A job's own
// error is left in it; the returned error (a failed allocation, transfer
// or launch of the batch) concerns them all. It runs inside exec.
func (cb *combiner) run(l launcher, jobs []*fusedJob) error {
	guard := 0
	for _, j := range jobs {
		guard = max(guard, j.e.guard)
	}
	// The sizes: inputs, descriptors, outputs; each job's work buffers.
	in, out := arena{guard: guard}, arena{guard: guard}
	nprob := 0
	for _, j := range jobs {
		work := arena{guard: j.e.guard}
		j.e.fusedPlan(&in, &work, &out, j.ev, &j.e.fl, false)
		j.work = work.off
		nprob += len(j.e.fl.probs)
	}
	descAt := in.off
	in.take(fdWords * nprob)
	outAt := in.off
	total := outAt + out.off
	if err := growAlloc(l, &cb.mem, &cb.memLen, total); err != nil {
		return fmt.Errorf("cuda: allocating the batch's inputs and outputs: %w", err)
	}
	cb.host = grow(cb.host, total)
	host := cb.host[:total]
	if guard > 0 {
		for i := range host {
			host[i] = math.Float64frombits(guardBits)
		}
	}

	// The layout: inputs and outputs in the combiner's buffer, work
	// buffers in each job's engine.
	in = arena{base: cb.mem, guard: guard, gaps: in.gaps[:0]}
	out = arena{base: cb.mem, off: outAt, guard: guard}
	words := host[descAt:descAt]
	threads, shared := 0, 0
	for _, j := range jobs {
		e, L := j.e, &j.e.fl
		j.err = e.ensure(l, j.work)
		work := arena{base: e.mem, guard: e.guard, gaps: L.gaps[:0]}
		e.fusedPlan(&in, &work, &out, j.ev, L, false)
		L.gaps = work.gaps
		if j.err == nil {
			j.err = e.fillGuards(l)
		}
		if j.err != nil {
			continue
		}
		e.fusedSides(j.ev)
		copy(host[int(L.in-cb.mem)/8:], e.host[:e.staged])
		L.descWords = L.descWords[:0]
		for i := range L.probs {
			L.descWords = e.fusedDesc(L.descWords, &L.probs[i], j.ev)
		}
		for _, w := range L.descWords {
			words = append(words, math.Float64frombits(w))
		}
		threads, shared = max(threads, L.threads), max(shared, L.shared)
	}
	in.take(fdWords * nprob) // the descriptors' guard gap
	gaps := append(in.gaps, out.gaps...)
	if n := len(words) / fdWords; n > 0 {
		upload := host[:descAt+len(words)]
		if guard > 0 {
			upload = host // the guard words of the outputs too
		}
		if err := l.upload(cb.mem, upload); err != nil {
			return fmt.Errorf("cuda: upload: %w", err)
		}
		if err := l.launch(kFused, n, 1, threads, 8*shared, []uint64{cb.mem.at(descAt).arg(), intArg(n)}); err != nil {
			return fmt.Errorf("cuda: launching fused: %w", err)
		}
		if guard > 0 {
			if err := l.download(host, cb.mem); err != nil {
				return fmt.Errorf("cuda: download: %w", err)
			}
			if err := checkGuardWords(host, gaps, guard); err != nil {
				return err
			}
		} else if err := l.download(host[outAt:], cb.mem.at(outAt)); err != nil {
			return fmt.Errorf("cuda: download: %w", err)
		}
	}
	for _, j := range jobs {
		if j.err != nil {
			continue
		}
		e, L := j.e, &j.e.fl
		e.host = grow(e.host, L.outLen) // the batch's guard gaps may be wider than e's
		copy(e.host, host[int(L.out-cb.mem)/8:])
		if e.guard > 0 {
			j.err = e.checkGuards(l, L.gaps)
		}
	}
	return nil
}

// release frees the combiner's device buffer. It runs inside exec.
func (cb *combiner) release(l launcher) error {
	if cb.mem == 0 {
		return nil
	}
	err := l.free(cb.mem)
	cb.mem, cb.memLen = 0, 0
	return err
}
