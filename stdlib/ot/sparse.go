package ot

import (
	"fmt"
	"math"
	"slices"
)

// Path selects how the sweeps of a problem on scattered points (not the
// separable grid path) are computed.
type Path int

const (
	// PathAuto uses the sparse sweeps and falls back to the dense ones for
	// sweeps in which the culling leaves too many terms (sparseMaxDensity).
	PathAuto Path = iota
	// PathDense evaluates every (row, column) term: the reference.
	PathDense
	// PathSparse always uses the sparse sweeps.
	PathSparse
	// PathScaling always uses the scaling path (scaling.go): truncated
	// kernels absorbed from the potentials, sparse products between
	// absorptions.
	PathScaling
)

func (p Path) String() string {
	switch p {
	case PathAuto:
		return "auto"
	case PathDense:
		return "dense"
	case PathSparse:
		return "sparse"
	case PathScaling:
		return "scaling"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// ParsePath returns the path named "auto", "dense", "sparse" or "scaling".
func ParsePath(s string) (Path, error) {
	for _, p := range []Path{PathAuto, PathDense, PathSparse, PathScaling} {
		if s == p.String() {
			return p, nil
		}
	}
	return PathAuto, fmt.Errorf("ot: unknown path %q (want auto, dense, sparse or scaling)", s)
}

// SetPath selects the sweeps of later evaluations (PathAuto by default).
// The paths agree to rounding; PathDense is the reference.
func (w *Workspace) SetPath(p Path) { w.e.path = p }

// The sparse sweeps.
//
// A log-sum-exp row LSE_j(a_ij), a_ij = u_j − C_ij/eps, is dominated by the
// few terms near its maximum. Both measures are put in k-d tree order
// (kdtree.go). For each row block R of the rows' tree (its "leafs":
// kdRowSize), the column tree is descended from the root and a node N is
// dropped when an upper bound of a_ij over the rows of R and the columns
// of N lies below L_R − thr, with L_R the smallest of the rows' references
// (below). The surviving column leaves are the row block's candidates (in
// 1-D one range, from the first to the
// last surviving leaf, trimmed at both ends with the exact bound of each
// column); the leaf kernels (d = 1, 2) or the row kernels evaluate every
// row of R on them, exponentiating only the groups of four terms with a
// term above the threshold. The references are:
//
//   - log-sum-exp sweeps (the forward pass) and the envelope's weighted
//     sweep: a lower bound of the row's maximum, the term at a hint column
//     (the row's argmax in its previous sweep, kept per problem; found by
//     an exact best-first search of the column tree when there is none);
//   - the backward pass's weighted sweeps, whose weights e^(a_ij + s_i) are
//     normalized (s_i = −LSE_i): the LSE itself, −s_i. These sweeps usually
//     need no bounds at all: the forward sweep over the same terms records
//     its candidates and each row's span of surviving terms (recordStore).
//
// Every dropped term is therefore below e^(−thr) times the row's largest
// term (forward) or total weight (backward), and so is every term that the
// forward sum prunes (sumExpAVX2 with the same threshold). With
// thr = ln(m) + 54·ln 2 for m columns, the dropped terms of a row add up to
// less than 2^-54 of its sum: the log-sum-exp differs from the dense one by
// less than half an ulp of the sum (before rounding), so the two paths agree
// to rounding. In the backward pass each dropped weight is below
// e^(−thr) = 2^-54/m, so each adjoint accumulated by a sweep (a row's
// gradient Σ_j e_ij (x_i − y_j), a column's Σ_i r_i e_ij and
// Σ_i r_i e_ij (x_i − y_j)) changes by at most 2^-54 times the same sum taken
// with |r_i| and the largest |x_i − y_j|: an absolute error bound per sweep
// of about 5.6e-17 × the adjoint's scale, 2T sweeps per problem.
//
// The bound. For a column node N, w_j = u_j·eps is written as
// ⟨σ_N, y_j⟩ + r_j with a slope σ_N (a least-squares fit over a leaf; the
// mean of the children's slopes above) and W_N ≥ max r_j. Then
//
//	a_ij·eps = w_j − |x_i − y_j|² ≤ W_N + max over y in box(N), x in box(R)
//	           of ⟨σ_N, y⟩ − |x − y|²,
//
// which separates by coordinate into concave one-dimensional maximizations
// solved in closed form (nodeBound). The slope follows the potentials, which
// are nearly c-concave (g_j − C_ij ≤ −f_i with equality on the transport
// plan's support): without it the bound of a block that the plan reaches
// from afar would be loose by |∇g|·width/eps, hundreds of units. Bounds are
// computed in floating point with a slack of 2^-40 of their scale.
//
// Culling costs as much as evaluating the candidates, and from one sweep
// to the next of the same orientation the column terms mostly move
// together: a forward sweep culls with a slack (sparseCullSlack) and the
// following ones reuse its candidates while their terms' drift stays
// within it (candCache), and so do the backward sweeps through the
// records, which share the candidates of such a run of sweeps.
//
// The orderings are internal: inputs and outputs keep the caller's order
// (sparseProblem permutes them in and out). The tree of a measure that does
// not change between evaluations (y, data) is kept in a small cache.

// sparseMaxDensity is the share of the n·m terms above which PathAuto
// evaluates a sweep densely: gathering candidates and the per-leaf culling
// cost more than they save beyond it.
const sparseMaxDensity = 0.7

// sparseMinPoints is the smallest problem (on either side) that PathAuto
// runs sparse: below it the tree and its bounds cost more than a dense
// sweep.
const sparseMinPoints = 32

// sparseRetry is the number of sweeps PathAuto runs densely after a sweep
// whose density exceeded sparseMaxDensity, before culling again.
const sparseRetry = 8

// Evaluation slots: the hints of each problem of a divergence are kept
// separately.
const (
	slotXY = iota
	slotXX
	slotYY
	numSlots
)

// sparseState holds the sparse path's buffers and caches.
type sparseState struct {
	trees [4]*kdTree // most recently used first

	logw       [2][]float64 // permuted log-weights of p and q
	gp, gq     []float64    // permuted point gradients
	glp, glq   []float64    // permuted log-weight gradients
	fOut, gOut []float64    // the final potentials in the callers' order

	hints  [numSlots][2][]int32 // per slot and orientation: a column per row
	slot   int                  // the slot of the problem being solved
	sig    []float64            // per column node: the slope σ_N (d)
	wmax   []float64            // per column node: W_N
	n1     []node1              // 1-D: the nodes with their bounds, packed
	n2     []node2              // 2-D: the same
	refs   []float64            // per row: its reference
	blocks []sparseBlock
	scr    []sparseScratch // per worker
	skip   int             // PathAuto: dense sweeps left before culling again

	rec recordStore // the forward sweeps' candidates, for the backward
	// Per orientation o: the last culling of its forward sweeps (cands[o])
	// and of its backward sweeps without a record (cands[2+o]).
	cands [4]candCache

	// Per sweep.
	thr, cutSlack float64
	thrTest       float64 // tests only: a threshold in place of ln(m) + 54·ln 2

	// Counters over the workspace's life (tests and benchmarks): the
	// candidate terms of the sparse sweeps, their n·m, and the sweeps run
	// densely on the sparse path.
	candTerms, allTerms float64
	denseSweeps         int
	reusedCulls         int // forward sweeps that reused a culling
	loadedSweeps        int // backward sweeps with their forward sweep's candidates
	spannedSweeps       int // and its spans
}

// sparseCullSlack is the drift, in units of the log-domain terms, that the
// culling of a forward sweep leaves room for, so that the following sweeps
// of its orientation can reuse its candidates (candCache).
const sparseCullSlack = 16.0

// candCache is the candidates of the last culling of one orientation's
// forward sweeps in a problem, with the column terms u⁰ they were culled
// from at the threshold thr + sparseCullSlack. Every term a_ij it drops is
// below ref_R − thr − slack, where ref_R ≤ a_{i,h_i} for each row i of the
// leaf R (h_i its hint). A later sweep of the same rows and columns with
// terms u = u⁰ + Δ has a'_ij ≤ a_ij + max Δ and a row maximum at least
// a'_{i,h_i} ≥ ref_R + min Δ, so every term it would drop is below its row's
// maximum minus thr — the culling's own guarantee — while
// max Δ − min Δ ≤ slack (columns of weight zero must stay so). The same
// holds for the backward sweeps, whose reference is the row's
// log-sum-exp: it too grows by at least min Δ.
type candCache struct {
	ok               bool
	rowTree, colTree *kdTree
	u                []float64 // u⁰
	cands            []int32   // appendCandidates's form
	terms            int
	rec              int // the forward sweep whose record holds them, −1 for none
}

// save keeps the candidates of the blocks, culled for job.
func (cc *candCache) save(job *sweepJob, blocks []sparseBlock, terms int) {
	cc.ok, cc.rowTree, cc.colTree, cc.terms, cc.rec = true, job.rowTree, job.colTree, terms, -1
	cc.u = append(cc.u[:0], job.u[:job.nc]...)
	cc.cands = appendCandidates(cc.cands[:0], blocks)
}

// holds reports whether the kept candidates are valid for job (see the
// type's comment).
func (cc *candCache) holds(job *sweepJob) bool {
	if !cc.ok || cc.rowTree != job.rowTree || cc.colTree != job.colTree || len(cc.u) != job.nc {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for j, v := range job.u[:job.nc] {
		w := cc.u[j]
		if v == w { // a zero drift, or a column of weight zero that stays so
			lo, hi = min(lo, 0), max(hi, 0)
			continue
		}
		d := v - w
		if !(d > lo) {
			lo = d
		}
		if !(d < hi) {
			hi = d
		}
	}
	return hi-lo <= sparseCullSlack
}

// sparseBlock is a run of row leaves processed by one goroutine, with the
// candidates of each leaf.
type sparseBlock struct {
	leafLo, leafHi int
	ranges         []int32 // candidate column ranges, lo and hi in turn
	off            []int32 // per leaf, the start of its ranges in ranges (len leaves+1)
	terms          int     // Σ over leaves of rows × candidates
	colLo, colHi   int     // the columns the block touches

	ownRanges, ownOff []int32 // the culling's buffers (ranges and off may view a record)
}

// recordStore keeps, for each forward sweep of an unrolled problem, the
// candidates of its row leaves and each row's span of terms above the
// threshold. The backward sweep over the same terms (same u, same rows)
// needs no bounds: its weights e^(a_ij − LSE_i) are below e^(−thr) wherever
// a_ij < max_j a_ij − thr, outside the recorded spans. The store is
// bounded (recordLimit); sweeps that do not fit are culled again.
type recordStore struct {
	recs []sweepRecord // per forward sweep: 2(t−1) for f^t, 2(t−1)+1 for g^t
	// The records: each one's candidates in appendCandidates's form, and
	// each one's spans (a, z per row).
	buf []int32
}

// sweepRecord locates one forward sweep's record in the store.
type sweepRecord struct {
	ok   bool
	off  int // its candidates' first entry in buf (shared by sweeps that reused a culling)
	span int // its spans' first entry in buf, −1 when they did not fit
	nr   int
}

// recordLimit bounds the store, in int32 entries (16 MiB); the spans take
// at most half of it.
const recordLimit = 4 << 20

// reset empties the store for a problem of T iterations.
func (r *recordStore) reset(iters int) {
	if cap(r.recs) < 2*iters {
		r.recs = make([]sweepRecord, 2*iters)
	}
	r.recs = r.recs[:2*iters]
	clear(r.recs)
	r.buf = r.buf[:0]
}

// record keeps the candidates of the culled sweep rec (blocks) and returns
// the spans to fill, or nil when the store is full. The candidates alone
// are kept when the spans do not fit. With from ≥ 0, the record of sweep
// from holds the same candidates, and rec shares them.
func (r *recordStore) record(rec int, blocks []sparseBlock, nr, from int) []int32 {
	need := 0
	if shared := r.has(from) && r.recs[from].nr == nr; !shared {
		need = candidatesLen(blocks)
	}
	used := len(r.buf)
	if rec < 0 || rec >= len(r.recs) || used+need > recordLimit {
		return nil
	}
	sr := sweepRecord{ok: true, off: used, span: -1, nr: nr}
	if need == 0 {
		sr.off = r.recs[from].off
	} else {
		r.buf = appendCandidates(r.buf, blocks)
	}
	if len(r.buf)+2*nr <= recordLimit/2 {
		sr.span = len(r.buf)
		r.buf = slices.Grow(r.buf, 2*nr)[:len(r.buf)+2*nr]
	}
	r.recs[rec] = sr
	if sr.span < 0 {
		return nil
	}
	return r.buf[sr.span : sr.span+2*nr]
}

// has reports whether the sweep rec has a record.
func (r *recordStore) has(rec int) bool {
	return rec >= 0 && rec < len(r.recs) && r.recs[rec].ok
}

// candidatesLen is the length of the blocks' candidates in
// appendCandidates's form.
func candidatesLen(blocks []sparseBlock) int {
	n := 1
	for _, b := range blocks {
		n += len(b.off) - 1 + int(b.off[len(b.off)-1]-b.off[0])
	}
	return n
}

// appendCandidates appends the candidates of the blocks to dst: the start
// of each leaf's column ranges in dst (then the end of the last), and the
// ranges.
func appendCandidates(dst []int32, blocks []sparseBlock) []int32 {
	dst = slices.Grow(dst, candidatesLen(blocks))
	leaves := 0
	for _, b := range blocks {
		leaves += len(b.off) - 1
	}
	pos := int32(len(dst) + leaves + 1)
	for _, b := range blocks {
		for _, o := range b.off[:len(b.off)-1] {
			dst = append(dst, pos+o-b.off[0])
		}
		pos += b.off[len(b.off)-1] - b.off[0]
	}
	dst = append(dst, pos)
	for _, b := range blocks {
		dst = append(dst, b.ranges[b.off[0]:b.off[len(b.off)-1]]...)
	}
	return dst
}

// setCandidates sets the blocks' candidates to those stored in buf in
// appendCandidates's form, off being buf from the first leaf's entry.
func setCandidates(blocks []sparseBlock, buf, off []int32) {
	ranges := buf
	for b := range blocks {
		blk := &blocks[b]
		blk.ranges = ranges
		blk.off = off[blk.leafLo : blk.leafHi+1]
		blk.colLo, blk.colHi = math.MaxInt, 0
		for k := range blk.off[:len(blk.off)-1] {
			if lo, hi := blk.off[k], blk.off[k+1]; hi > lo {
				blk.colLo = min(blk.colLo, int(ranges[lo]))
				blk.colHi = max(blk.colHi, int(ranges[hi-1]))
			}
		}
		if blk.colLo > blk.colHi {
			blk.colLo, blk.colHi = 0, 0
		}
	}
}

// load sets the blocks' candidates from the record rec and returns its
// spans (nil if it has none); ok is false when there is no such record.
func (r *recordStore) load(rec int, blocks []sparseBlock, nr int) (spans []int32, ok bool) {
	if !r.has(rec) || r.recs[rec].nr != nr {
		return nil, false
	}
	sr := r.recs[rec]
	setCandidates(blocks, r.buf, r.buf[sr.off:])
	if sr.span < 0 {
		return nil, true
	}
	return r.buf[sr.span : sr.span+2*nr], true
}

// sparseScratch is one worker's scratch.
type sparseScratch struct {
	stack          []int32
	cols, u        []float64 // gathered candidates
	cs, cg         []float64 // gathered column accumulators
	idx            []int32   // tree-order column of each gathered candidate
	sums, mxs, lgs []float64 // per row of a leaf
	res            []float64 // the leaf kernels' results
	lspans         []int32   // the forward leaf kernel's spans
	kept           []float64 // the leaf kernels' packed terms or arguments
	groups         []int32   // the backward leaf kernel's kept groups
	heap           []heapItem
	sel            []int32   // a culled absorption's selection (selectRow)
	junk, inf      []float64 // its discarded column maxima, and +Inf
}

// useSparse reports whether the problem (p, q) runs on the sparse path.
func (e *engine) useSparse(p, q side) bool {
	switch e.path {
	case PathDense:
		return false
	case PathSparse:
		return true
	}
	return p.n >= sparseMinPoints && q.n >= sparseMinPoints
}

// tree returns the k-d tree of the n points pts, from the cache if they
// were seen recently.
func (sp *sparseState) tree(pts []float64, n, d int) *kdTree {
	for k, t := range sp.trees {
		if t != nil && t.matches(pts, n, d) {
			copy(sp.trees[1:k+1], sp.trees[:k])
			sp.trees[0] = t
			return t
		}
	}
	last := len(sp.trees) - 1
	t := sp.trees[last]
	if t == nil {
		t = new(kdTree)
	}
	copy(sp.trees[1:], sp.trees[:last])
	sp.trees[0] = t
	t.build(pts, n, d)
	return t
}

// permuteSide returns the side s in the tree order of t, with log-weights
// in buf.
func permuteSide(s side, t *kdTree, buf *[]float64) side {
	*buf = grow(*buf, s.n)
	lw := *buf
	for k, i := range t.perm {
		lw[k] = s.logw[i]
	}
	return side{pts: t.pts, logw: lw, n: s.n, tree: t}
}

// sparseProblem is problem on the sparse path: the measures are put in tree
// order, the problem is solved there, and the gradients (added to gr) and
// the final potentials come back in the callers' order.
func (e *engine) sparseProblem(slot int, p, q side, c consts, mode GradMode, sigma float64, gr grads, want bool) (float64, []float64, []float64) {
	sp := e.sp
	d := e.d
	// The symmetric problems (x–x, y–y) share one permuted side and one
	// gradient.
	same := p.n == q.n && &p.pts[0] == &q.pts[0] && &p.logw[0] == &q.logw[0] &&
		sameSlice(gr.p, gr.q) && sameSlice(gr.logp, gr.logq)
	pt := sp.tree(p.pts, p.n, d)
	pp := permuteSide(p, pt, &sp.logw[0])
	qq := pp
	if !same {
		// p's tree is now the cache's most recent entry: q's lookup
		// cannot evict it.
		qq = permuteSide(q, sp.tree(q.pts, q.n, d), &sp.logw[1])
	}
	pg := grads{p: scratchFor(gr.p, &sp.gp), logp: scratchFor(gr.logp, &sp.glp), fixp: gr.fixp, fixq: gr.fixq}
	if same {
		pg.q, pg.logq = pg.p, pg.logp
	} else {
		pg.q, pg.logq = scratchFor(gr.q, &sp.gq), scratchFor(gr.logq, &sp.glq)
	}
	sp.slot = slot
	e.sparseOn = true
	e.scalingOn, e.scalingCulled = e.useScaling(p, q)
	if e.path == PathAuto && e.scalingCulled && want && mode == GradUnrolled &&
		(e.d <= 2 || c.iters*(p.n+q.n) > scalingCulledMaxHistory) {
		// Faster on the sparse sweeps in 1-D and 2-D (their leaf kernels;
		// BENCHMARKS.md: in 2-D 337-347 against 392-395 ms at 2896
		// points, 454-461 against 580-604 ms at 4096, one core); beyond,
		// the history and two epochs would not fit the memory the package
		// allows itself.
		e.scalingOn = false
	}
	if e.scalingOn && e.scalingCulled && !(want && mode == GradUnrolled) {
		e.releaseHistory()
	}
	e.symmetric = same
	v, f, g := e.problem(pp, qq, c, mode, sigma, pg, want)
	if e.scalingOn && e.scalingCulled {
		e.sc.release(scalingCulledHeld)
	}
	e.sparseOn, e.scalingOn, e.scalingCulled, e.symmetric = false, false, false, false
	unpermute(gr.p, pg.p, pp.tree.perm, d)
	unpermute(gr.logp, pg.logp, pp.tree.perm, 1)
	if !same {
		unpermute(gr.q, pg.q, qq.tree.perm, d)
		unpermute(gr.logq, pg.logq, qq.tree.perm, 1)
	}
	sp.fOut = grow(sp.fOut, p.n)
	sp.gOut = grow(sp.gOut, q.n)
	for k, i := range pp.tree.perm {
		sp.fOut[i] = f[k]
	}
	for k, i := range qq.tree.perm {
		sp.gOut[i] = g[k]
	}
	return v, sp.fOut, sp.gOut
}

// sameSlice reports whether a and b are both nil or start at the same element.
func sameSlice(a, b []float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return len(a) == len(b) && &a[0] == &b[0]
}

// scratchFor returns *buf resized to len(dst) and cleared, or nil when dst
// is nil (a gradient that is not wanted).
func scratchFor(dst []float64, buf *[]float64) []float64 {
	if dst == nil {
		return nil
	}
	*buf = zeroed(*buf, len(dst))
	return *buf
}

// zeroed returns s resized to n and cleared.
func zeroed(s []float64, n int) []float64 {
	s = grow(s, n)
	clear(s)
	return s
}

// unpermute adds src (in tree order, dim values per point) to dst (in the
// callers' order); nothing when dst is nil.
func unpermute(dst, src []float64, perm []int32, dim int) {
	if dst == nil {
		return
	}
	for k, i := range perm {
		for c := range dim {
			dst[int(i)*dim+c] += src[k*dim+c]
		}
	}
}

// hint returns the hint column per row of the slot's problem in the given
// orientation (0: rows p, 1: rows q), with −1 for rows without one.
func (sp *sparseState) hint(orient, nr int) []int32 {
	h := sp.hints[sp.slot][orient]
	if len(h) != nr {
		if cap(h) < nr {
			h = make([]int32, nr)
		}
		h = h[:nr]
		for i := range h {
			h[i] = -1
		}
		sp.hints[sp.slot][orient] = h
	}
	return h
}

// fitColumns computes the slope σ_N and the bound W_N of every column node
// from the column terms u (tree order). It reports false when a u_j is +Inf
// or NaN (the dense sweep handles those).
func (sp *sparseState) fitColumns(t *kdTree, u []float64, eps float64) bool {
	d := t.d
	nn := len(t.nodes)
	sp.sig = grow(sp.sig, nn*d)
	sp.wmax = grow(sp.wmax, nn)
	maxW, maxSig := 0.0, 0.0
	for k := nn - 1; k >= 0; k-- {
		nd := t.nodes[k]
		sig := sp.sig[k*d : k*d+d]
		if nd.left < 0 {
			w, ok := fitLeaf(sig, t.pts[int(nd.lo)*d:int(nd.hi)*d], u[nd.lo:nd.hi], eps)
			if !ok {
				return false
			}
			sp.wmax[k] = w
		} else {
			l, r := nd.left, nd.right
			wl, wr := sp.wmax[l], sp.wmax[r]
			sl, sr := sp.sig[int(l)*d:int(l)*d+d], sp.sig[int(r)*d:int(r)*d+d]
			switch {
			case math.IsInf(wl, -1):
				copy(sig, sr)
			case math.IsInf(wr, -1):
				copy(sig, sl)
			default:
				for c := range sig {
					sig[c] = 0.5 * (sl[c] + sr[c])
				}
			}
			sp.wmax[k] = max(shiftBound(wl, sl, sig, t.lo(l), t.hi(l)), shiftBound(wr, sr, sig, t.lo(r), t.hi(r)))
		}
		if w := sp.wmax[k]; !math.IsInf(w, -1) {
			maxW = max(maxW, math.Abs(w))
			for _, s := range sig {
				maxSig = max(maxSig, math.Abs(s))
			}
		}
	}
	sp.cutSlack = maxW + float64(d)*maxSig*t.abs
	switch d {
	case 1:
		sp.pack1(t)
	case 2:
		sp.pack2(t)
	}
	return true
}

// node2 is node1 for 2-D trees.
type node2 struct {
	lo0, lo1, hi0, hi1 float64 // the box
	sig0, sig1, w      float64 // the slope and the residual bound
	left, right        int32
}

// pack2 fills sp.n2 from the tree and the bounds of fitColumns.
func (sp *sparseState) pack2(t *kdTree) {
	if cap(sp.n2) < len(t.nodes) {
		sp.n2 = make([]node2, len(t.nodes))
	}
	sp.n2 = sp.n2[:len(t.nodes)]
	for k, nd := range t.nodes {
		b := t.box[4*k : 4*k+4]
		sp.n2[k] = node2{lo0: b[0], lo1: b[1], hi0: b[2], hi1: b[3], sig0: sp.sig[2*k], sig1: sp.sig[2*k+1], w: sp.wmax[k],
			left: nd.left, right: nd.right}
	}
}

// node1 is one column node of a 1-D tree with its bound's data, packed
// for the culling's descents (one cache line per visit).
type node1 struct {
	lo, hi      float64 // the box
	sig, w      float64 // the slope and the residual bound
	left, right int32
	first, end  int32 // the columns [first, end)
}

// pack1 fills sp.n1 from the tree and the bounds of fitColumns.
func (sp *sparseState) pack1(t *kdTree) {
	if cap(sp.n1) < len(t.nodes) {
		sp.n1 = make([]node1, len(t.nodes))
	}
	sp.n1 = sp.n1[:len(t.nodes)]
	for k, nd := range t.nodes {
		sp.n1[k] = node1{lo: t.box[2*k], hi: t.box[2*k+1], sig: sp.sig[k], w: sp.wmax[k],
			left: nd.left, right: nd.right, first: nd.lo, end: nd.hi}
	}
}

// fitLeaf sets sig to the least-squares slope of w_j = u_j·eps against each
// coordinate of the points (finite u_j only) and returns
// W = max_j (w_j − ⟨sig, y_j⟩), −Inf when every u_j is −Inf. It reports
// false for a u_j that is +Inf or NaN.
func fitLeaf(sig, pts, u []float64, eps float64) (float64, bool) {
	d := len(sig)
	if d == 1 {
		return fitLeaf1(sig, pts, u, eps)
	}
	var cnt, wm float64
	var ym [16]float64 // means of the coordinates; d ≤ 16 uses the array
	var ymean []float64
	if d <= len(ym) {
		ymean = ym[:d]
	} else {
		ymean = make([]float64, d)
	}
	for j, v := range u {
		if v > math.MaxFloat64 || v != v {
			return 0, false
		}
		if math.IsInf(v, -1) {
			continue
		}
		cnt++
		wm += v * eps
		for c := range d {
			ymean[c] += pts[j*d+c]
		}
	}
	clear(sig)
	if cnt == 0 {
		return math.Inf(-1), true
	}
	wm /= cnt
	for c := range d {
		ymean[c] /= cnt
	}
	if d == 2 && fitSlope2(sig, pts, u, ymean, wm, eps) {
		return residualMax(sig, pts, u, eps), true
	}
	for c := range d {
		var sxy, sxx float64
		for j, v := range u {
			if math.IsInf(v, -1) {
				continue
			}
			dy := pts[j*d+c] - ymean[c]
			sxy += dy * (v*eps - wm)
			sxx += dy * dy
		}
		if sxx > 0 {
			sig[c] = sxy / sxx
		}
	}
	return residualMax(sig, pts, u, eps), true
}

// residualMax returns max_j (u_j·eps − ⟨sig, y_j⟩) over the finite u_j.
func residualMax(sig, pts, u []float64, eps float64) float64 {
	d := len(sig)
	w := math.Inf(-1)
	for j, v := range u {
		if math.IsInf(v, -1) {
			continue
		}
		r := v * eps
		for c, s := range sig {
			r -= s * pts[j*d+c]
		}
		w = max(w, r)
	}
	return w
}

// fitSlope2 sets sig to the least-squares slope of w_j = u_j·eps against
// both coordinates of the 2-D points (finite u_j; means ymean and wm). It
// reports false when the points are (nearly) collinear, for which the
// per-coordinate fit is used.
func fitSlope2(sig, pts, u, ymean []float64, wm, eps float64) bool {
	var a, b, c, s0, s1 float64
	for j, v := range u {
		if math.IsInf(v, -1) {
			continue
		}
		d0, d1 := pts[2*j]-ymean[0], pts[2*j+1]-ymean[1]
		dw := v*eps - wm
		a += d0 * d0
		b += d0 * d1
		c += d1 * d1
		s0 += d0 * dw
		s1 += d1 * dw
	}
	det := a*c - b*b
	if det > 1e-9*a*c {
		sig[0] = (c*s0 - b*s1) / det
		sig[1] = (a*s1 - b*s0) / det
		return true
	}
	// (Nearly) collinear points: the slope along their principal axis v,
	// the eigenvector of the larger eigenvalue l of [[a b] [b c]].
	l := 0.5*(a+c) + math.Sqrt(0.25*(a-c)*(a-c)+b*b)
	v0, v1 := b, l-a
	if math.Abs(a-l)+math.Abs(b) < math.Abs(c-l)+math.Abs(b) {
		v0, v1 = l-c, b
	}
	nv := math.Hypot(v0, v1)
	if !(nv > 0) || !(l > 0) {
		return false
	}
	v0, v1 = v0/nv, v1/nv
	// Σ t·dw / Σ t² with t = ⟨y − ȳ, v⟩: Σ t² = l, Σ t·dw = ⟨v, s⟩.
	k := (v0*s0 + v1*s1) / l
	sig[0], sig[1] = k*v0, k*v1
	return true
}

// fitLeaf1 is fitLeaf for d = 1 with the slope through the first and last
// finite terms (the points are sorted), which is cheaper than the
// least-squares slope and as good on the smooth potentials of the sweeps.
func fitLeaf1(sig, pts, u []float64, eps float64) (float64, bool) {
	j0, j1 := -1, -1
	for j, v := range u {
		if v > math.MaxFloat64 || v != v {
			return 0, false
		}
		if !math.IsInf(v, -1) {
			if j0 < 0 {
				j0 = j
			}
			j1 = j
		}
	}
	sig[0] = 0
	if j0 < 0 {
		return math.Inf(-1), true
	}
	if dy := pts[j1] - pts[j0]; dy > 0 {
		sig[0] = (u[j1] - u[j0]) * eps / dy
	}
	s := sig[0]
	w := math.Inf(-1)
	for j, v := range u {
		w = max(w, v*eps-s*pts[j])
	}
	return w, true
}

// shiftBound bounds max_j (w_j − ⟨to, y_j⟩) over a node whose residuals
// w_j − ⟨from, y_j⟩ are at most w, with y in the box [lo, hi].
func shiftBound(w float64, from, to, lo, hi []float64) float64 {
	if math.IsInf(w, -1) {
		return w
	}
	for c, f := range from {
		dlt := f - to[c]
		w += max(dlt*lo[c], dlt*hi[c])
	}
	return w
}

// nodeBound is the bound, in units of eps·a, of the terms between the rows
// in the box [rlo, rhi] and the columns of a node with slope sig, residual
// bound w and box [blo, bhi]: w + Σ_c max over y_c in [blo_c, bhi_c] of
// sig_c·y_c − dist(y_c, [rlo_c, rhi_c])² (coordMax).
func nodeBound(w float64, sig, blo, bhi, rlo, rhi []float64) float64 {
	for c, s := range sig {
		w += coordMax(s, blo[c], bhi[c], rlo[c], rhi[c])
	}
	return w
}

// coordMax is one coordinate's term of nodeBound: max over y in
// [blo, bhi] of s·y − dist(y, [rlo, rhi])². The function is concave with
// unconstrained maximizer rhi + s/2 (s ≥ 0) or rlo + s/2 (s < 0); clamped
// into [blo, bhi] it gives the maximum.
func coordMax(s, blo, bhi, rlo, rhi float64) float64 {
	var y float64
	if s >= 0 {
		y = rhi + 0.5*s
	} else {
		y = rlo + 0.5*s
	}
	y = min(max(y, blo), bhi)
	dd := max(rlo-y, y-rhi, 0)
	return s*y - dd*dd
}

// nodeBound2 is nodeBound for d = 2 and the packed node nd.
func nodeBound2(nd *node2, rlo0, rlo1, rhi0, rhi1 float64) float64 {
	return nd.w + coordMax(nd.sig0, nd.lo0, nd.hi0, rlo0, rhi0) + coordMax(nd.sig1, nd.lo1, nd.hi1, rlo1, rhi1)
}

// sparseBlocks returns the number of row blocks of a sparse sweep with nr
// rows: it depends only on the size, so that results do not depend on the
// number of workers.
func sparseBlocks(nr, leaves int) int {
	return max(1, min(8, nr/2048, leaves))
}

// sparsePhase is the part of a sparse sweep that the workers run.
type sparsePhase int

const (
	phaseCull sparsePhase = iota + 1
	phaseEval
	phaseAbsorbCount // a culled absorption's rows count their entries
	phaseAbsorbFill  // and fill them in (scaling_cull.go)
	phaseKernelBack  // a culled backward sweep's blocks
	phaseSumColumns  // the reduction of the blocks' column accumulators
)

// sparseSweep runs job on the sparse path. It reports false, having
// written nothing, when the job must run densely instead: PathAuto with too
// many surviving terms, or column terms that are +Inf or NaN.
func (e *engine) sparseSweep(job *sweepJob) bool {
	sp := e.sp
	nr, nc, d := job.nr, job.nc, e.d
	blocks := sp.setBlocks(job.rowTree)
	nb := len(blocks)
	sp.thr = math.Log(float64(nc)) + 54*math.Ln2
	if sp.thrTest > 0 {
		sp.thr = sp.thrTest
	}
	e.sparseNB = nb
	job.spans = nil
	loaded := false
	if job.weighted && job.normalized {
		job.spans, loaded = sp.rec.load(job.rec, blocks, nr)
		if loaded {
			sp.loadedSweeps++
			if job.spans != nil {
				sp.spannedSweeps++
			}
		}
	}
	if !loaded {
		if e.path == PathAuto && sp.skip > 0 {
			sp.skip--
			sp.denseSweeps++
			return false
		}
		// The forward sweeps of an orientation reuse their last culling
		// while it holds (candCache), and so do the backward sweeps that
		// have no record; they cull with its slack.
		o := job.orient
		forward := !job.weighted && o >= 0
		backward := job.weighted && job.normalized && o >= 0
		ci := o // the cache
		if backward {
			ci = 2 + o
		}
		reuse := (forward || backward) && sp.cands[ci].holds(job)
		terms := 0
		if reuse {
			cc := &sp.cands[ci]
			setCandidates(blocks, cc.cands, cc.cands)
			terms = cc.terms
			sp.reusedCulls++
		} else {
			thr := sp.thr
			if forward || backward {
				sp.thr += sparseCullSlack
			}
			ok := e.cull(job, nb)
			sp.thr = thr
			if !ok {
				return false
			}
			for _, blk := range blocks {
				terms += blk.terms
			}
		}
		if !reuse && e.path == PathAuto && float64(terms) > sparseMaxDensity*float64(nr)*float64(nc) {
			sp.skip = sparseRetry
			sp.denseSweeps++
			// The dense sweep does not move the hints: search them
			// anew at the next try, in case they caused the density.
			for i := range job.hint {
				job.hint[i] = -1
			}
			e.phase = 0
			e.job = sweepJob{}
			return false
		}
		sp.candTerms += float64(terms)
		sp.allTerms += float64(nr) * float64(nc)
		if (forward || backward) && !reuse {
			sp.cands[ci].save(job, blocks, terms)
		}
		if !job.weighted && job.rec >= 0 {
			from := -1 // a record holding the same candidates
			if forward {
				from = sp.cands[o].rec
			}
			job.spans = sp.rec.record(job.rec, blocks, nr, from)
			if forward && !reuse {
				sp.cands[o].rec = -1
				if sp.rec.has(job.rec) {
					sp.cands[o].rec = job.rec
				}
			}
		}
	}
	needCols := job.weighted && (job.wantColSum || job.wantColGrad)
	if needCols {
		e.blkSum = grow(e.blkSum, nb*nc)
		e.blkGrad = grow(e.blkGrad, nb*nc*d)
		e.colSum = grow(e.colSum, nc)
		e.colGrad = grow(e.colGrad, nc*d)
	}
	if job.rowGrad != nil {
		clear(job.rowGrad[:nr*d])
	}
	e.job = *job
	e.phase = phaseEval
	e.runSparse(nb)
	if needCols {
		e.sumColumns(nb, nc, func(b int) (int, int) { return blocks[b].colLo, blocks[b].colHi }, job.wantColSum, job.wantColGrad)
	}
	e.phase = 0
	e.job = sweepJob{}
	return true
}

// setBlocks returns the blocks of a sparse sweep whose rows are in the
// order of the tree rt, each with its run of leaves.
func (sp *sparseState) setBlocks(rt *kdTree) []sparseBlock {
	nb := sparseBlocks(rt.n, len(rt.leafs))
	if len(sp.blocks) < nb {
		sp.blocks = append(sp.blocks, make([]sparseBlock, nb-len(sp.blocks))...)
	}
	blocks := sp.blocks[:nb]
	for b := range blocks {
		blk := &blocks[b]
		blk.leafLo, blk.leafHi = b*len(rt.leafs)/nb, (b+1)*len(rt.leafs)/nb
	}
	return blocks
}

// cull finds the candidates of the nb blocks of job at the threshold
// sp.thr (the culling phase of a sparse sweep), and reports false when
// the column terms have a +Inf or NaN.
func (e *engine) cull(job *sweepJob, nb int) bool {
	sp := e.sp
	rt, ct := job.rowTree, job.colTree
	if !sp.fitColumns(ct, job.u[:job.nc], 1/job.invEps) {
		return false
	}
	// cutSlack bounds the rounding of the bounds, in units of eps·a.
	sp.cutSlack = (sp.cutSlack + float64(e.d)*(rt.abs+ct.abs)*(rt.abs+ct.abs)) * 0x1p-40
	sp.refs = grow(sp.refs, job.nr)
	e.job = *job
	e.phase = phaseCull
	e.runSparse(nb)
	return true
}

// sumColumns sets e.colSum (with wantSum) and e.colGrad (with wantGrad)
// for nc columns to the sums, in block order, of the nb blocks' column
// accumulators in e.blkSum and e.blkGrad, block b having touched only the
// columns [span(b)). The columns are split across the workers (each
// column's sum is taken in block order whatever the split).
func (e *engine) sumColumns(nb, nc int, span func(b int) (lo, hi int), wantSum, wantGrad bool) {
	t := &e.colTask
	t.spans = t.spans[:0]
	for b := range nb {
		lo, hi := span(b)
		t.spans = append(t.spans, lo, hi)
	}
	t.nc, t.wantSum, t.wantGrad = nc, wantSum, wantGrad
	chunks := max(1, min(8, nc/8192))
	phase, nbSaved := e.phase, e.sparseNB
	e.phase, e.sparseNB = phaseSumColumns, chunks
	e.runSparse(chunks)
	e.phase, e.sparseNB = phase, nbSaved
}

// colTask is the column reduction of sumColumns in progress: the blocks'
// column spans (lo and hi in turn), the number of columns and what to sum.
type colTask struct {
	spans             []int
	nc                int
	wantSum, wantGrad bool
}

// sumColumnsChunk runs chunk c of the current column reduction.
func (e *engine) sumColumnsChunk(c int) {
	t, d := &e.colTask, e.d
	nc, nb := t.nc, len(t.spans)/2
	clo, chi := blockRange(c, e.sparseNB, nc)
	if t.wantSum {
		cs := e.colSum[clo:chi]
		clear(cs)
		for b := range nb {
			lo, hi := max(t.spans[2*b], clo), min(t.spans[2*b+1], chi)
			if lo >= hi {
				continue
			}
			for j, v := range e.blkSum[b*nc+lo : b*nc+hi] {
				cs[lo-clo+j] += v
			}
		}
	}
	if t.wantGrad {
		cg := e.colGrad[clo*d : chi*d]
		clear(cg)
		for b := range nb {
			lo, hi := max(t.spans[2*b], clo), min(t.spans[2*b+1], chi)
			if lo >= hi {
				continue
			}
			for j, v := range e.blkGrad[(b*nc+lo)*d : (b*nc+hi)*d] {
				cg[(lo-clo)*d+j] += v
			}
		}
	}
}

// runSparse runs the current phase over nb blocks, in parallel when the
// sweep is large enough to be split.
func (e *engine) runSparse(nb int) {
	if e.pool.workers > 1 && nb > 1 {
		e.pool.do()
		return
	}
	for b := range nb {
		e.sparseBlock(0, b)
	}
}

// sparseBlock runs the current phase on block b with worker w's scratch.
func (e *engine) sparseBlock(w, b int) {
	switch e.phase {
	case phaseCull:
		e.cullBlock(w, b)
	case phaseEval:
		e.evalBlock(w, b)
	case phaseAbsorbCount, phaseAbsorbFill:
		e.absorbBlock(w, b, e.phase == phaseAbsorbFill)
	case phaseKernelBack:
		e.kernelBackBlock(w, b)
	case phaseSumColumns:
		e.sumColumnsChunk(b)
	}
}

// rowRefs sets the references of rows [lo, hi) (see the comment at the
// top), with the scratch scr of the calling worker.
func (e *engine) rowRefs(lo, hi int, scr *sparseScratch) {
	sp, job, d := e.sp, &e.job, e.d
	refs := sp.refs
	if job.weighted && job.normalized {
		for i := lo; i < hi; i++ {
			refs[i] = -job.s[i]
		}
		return
	}
	ct := job.colTree
	for i := lo; i < hi; i++ {
		p := job.rows[i*d : i*d+d]
		h := job.hint[i]
		if h < 0 {
			h = e.bestHint(p, scr)
			job.hint[i] = h
		}
		refs[i] = job.u[h] - sqDist(p, ct.pts[int(h)*d:int(h)*d+d])*job.invEps
	}
}

// bestHint returns the column of the largest term u_j − C(p, y_j)·invEps
// for the point p, by a best-first search of the column tree: the node
// with the largest bound is expanded first, and the search stops when no
// remaining bound exceeds the best term found.
func (e *engine) bestHint(p []float64, scr *sparseScratch) int32 {
	sp, job, d := e.sp, &e.job, e.d
	ct := job.colTree
	bound := func(k int32) float64 {
		return nodeBound(sp.wmax[k], sp.sig[int(k)*d:int(k)*d+d], ct.lo(k), ct.hi(k), p, p) * job.invEps
	}
	heap := append(scr.heap[:0], heapItem{bound(0), 0})
	best, bv := int32(0), math.Inf(-1)
	for len(heap) > 0 {
		it := heap[0]
		heap = popHeap(heap)
		if !(it.b > bv) {
			break
		}
		nd := ct.nodes[it.k]
		if nd.left >= 0 {
			heap = pushHeap(heap, heapItem{bound(nd.left), nd.left})
			heap = pushHeap(heap, heapItem{bound(nd.right), nd.right})
			continue
		}
		for j := nd.lo; j < nd.hi; j++ {
			if v := job.u[j] - sqDist(p, ct.pts[int(j)*d:int(j)*d+d])*job.invEps; v > bv {
				best, bv = j, v
			}
		}
	}
	scr.heap = heap[:0]
	return best
}

// heapItem is a node of the column tree with its bound, in a max-heap.
type heapItem struct {
	b float64
	k int32
}

func pushHeap(h []heapItem, it heapItem) []heapItem {
	h = append(h, it)
	for c := len(h) - 1; c > 0; {
		p := (c - 1) / 2
		if !(h[c].b > h[p].b) {
			break
		}
		h[c], h[p] = h[p], h[c]
		c = p
	}
	return h
}

func popHeap(h []heapItem) []heapItem {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for p := 0; ; {
		c := 2*p + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].b > h[c].b {
			c++
		}
		if !(h[c].b > h[p].b) {
			break
		}
		h[c], h[p] = h[p], h[c]
		p = c
	}
	return h
}

// sqDist is the squared Euclidean distance, summed in coordinate order as
// argsRow does for d > 2.
func sqDist(p, q []float64) float64 {
	var s float64
	for k, v := range p {
		t := v - q[k]
		s += t * t
	}
	return s
}

// cullBlock finds the candidate column ranges of the row leaves of block b.
// In 1-D a leaf's candidates are one range (the gaps between the surviving
// column leaves are kept: they are few), padded to a multiple of four
// columns for the vector kernels.
func (e *engine) cullBlock(w, b int) {
	sp, job, d := e.sp, &e.job, e.d
	rt, ct := job.rowTree, job.colTree
	nc := job.nc
	blk := &sp.blocks[b]
	scr := e.scratch(w)
	ranges := blk.ownRanges[:0]
	off := blk.ownOff[:0]
	blk.terms = 0
	blk.colLo, blk.colHi = nc, 0
	eps := 1 / job.invEps
	for li := blk.leafLo; li < blk.leafHi; li++ {
		leaf := rt.leafs[li]
		lo, hi := int(rt.nodes[leaf].lo), int(rt.nodes[leaf].hi)
		e.rowRefs(lo, hi, scr)
		ref := math.Inf(1)
		for _, v := range sp.refs[lo:hi] {
			ref = min(ref, v)
		}
		cut := (ref-sp.thr)*eps - sp.cutSlack
		rlo, rhi := rt.lo(leaf), rt.hi(leaf)
		off = append(off, int32(len(ranges)))
		start := len(ranges)
		if d == 1 {
			ranges = sp.cull1(ct, job.u, eps, rlo[0], rhi[0], cut, ranges, scr)
			if len(ranges) > start {
				c0, c1 := padSpan(int(ranges[start]), int(ranges[start+1]), nc)
				ranges[start], ranges[start+1] = int32(c0), int32(c1)
				blk.colLo = min(blk.colLo, c0)
				blk.colHi = max(blk.colHi, c1)
				blk.terms += (c1 - c0) * (hi - lo)
			}
			continue
		}
		stack := append(scr.stack[:0], 0)
		for len(stack) > 0 {
			k := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if d == 2 {
				nd := &sp.n2[k]
				if nodeBound2(nd, rlo[0], rlo[1], rhi[0], rhi[1]) < cut {
					continue
				}
				if nd.left >= 0 {
					stack = append(stack, nd.right, nd.left)
					continue
				}
			} else {
				if nodeBound(sp.wmax[k], sp.sig[int(k)*d:int(k)*d+d], ct.lo(k), ct.hi(k), rlo, rhi) < cut {
					continue
				}
				if nd := ct.nodes[k]; nd.left >= 0 {
					stack = append(stack, nd.right, nd.left)
					continue
				}
			}
			nd := ct.nodes[k]
			if n := len(ranges); n > start && ranges[n-1] == nd.lo {
				ranges[n-1] = nd.hi
			} else {
				ranges = append(ranges, nd.lo, nd.hi)
			}
		}
		scr.stack = stack
		if len(ranges) == start+2 {
			c0, c1 := padSpan(int(ranges[start]), int(ranges[start+1]), nc)
			ranges[start], ranges[start+1] = int32(c0), int32(c1)
		}
		cand := 0
		for k := start; k < len(ranges); k += 2 {
			cand += int(ranges[k+1] - ranges[k])
		}
		if len(ranges) > start {
			blk.colLo = min(blk.colLo, int(ranges[start]))
			blk.colHi = max(blk.colHi, int(ranges[len(ranges)-1]))
		}
		blk.terms += cand * (hi - lo)
	}
	off = append(off, int32(len(ranges)))
	if blk.colLo > blk.colHi {
		blk.colLo, blk.colHi = 0, 0
	}
	blk.ownRanges, blk.ownOff = ranges, off
	blk.ranges, blk.off = ranges, off
}

// padSpan widens [a, z) to a multiple of four elements inside [0, n) when
// n allows, so that the vector kernels need no scalar tail. The added
// terms are exact terms of the sum: including them only adds accuracy.
func padSpan(a, z, n int) (int, int) {
	l := (z - a + 3) &^ 3
	if l > n {
		return a, z
	}
	z = a + l
	if z > n {
		a, z = n-l, n
	}
	return a, z
}

// scratch returns worker w's scratch.
func (e *engine) scratch(w int) *sparseScratch {
	sp := e.sp
	if len(sp.scr) < e.pool.workers {
		sp.scr = append(sp.scr, make([]sparseScratch, e.pool.workers-len(sp.scr))...)
	}
	return &sp.scr[w]
}

// evalBlock evaluates the rows of block b on their candidates.
func (e *engine) evalBlock(w, b int) {
	sp, job, d := e.sp, &e.job, e.d
	rt, ct := job.rowTree, job.colTree
	blk := &sp.blocks[b]
	scr := e.scratch(w)
	k := kern{simd: e.simd}
	nc := job.nc
	var blkSum, blkGrad []float64
	if job.weighted && job.wantColSum {
		blkSum = e.blkSum[b*nc : (b+1)*nc]
		clear(blkSum[blk.colLo:blk.colHi])
	}
	if job.weighted && job.wantColGrad {
		blkGrad = e.blkGrad[b*nc*d : (b+1)*nc*d]
		clear(blkGrad[blk.colLo*d : blk.colHi*d])
	}
	half := len(e.bufs[w]) / 2
	for li := blk.leafLo; li < blk.leafHi; li++ {
		leaf := rt.leafs[li]
		lo, hi := int(rt.nodes[leaf].lo), int(rt.nodes[leaf].hi)
		ranges := blk.ranges[blk.off[li-blk.leafLo]:blk.off[li-blk.leafLo+1]]
		// The candidates: one range is used in place, several are gathered.
		var cols, u, colSum, colGrad []float64
		var idx []int32
		c0 := 0
		if len(ranges) == 2 {
			c0 = int(ranges[0])
			c1 := int(ranges[1])
			cols, u = ct.pts[c0*d:c1*d], job.u[c0:c1]
			if blkSum != nil {
				colSum = blkSum[c0:c1]
			}
			if blkGrad != nil {
				colGrad = blkGrad[c0*d : c1*d]
			}
		} else {
			cols, u, idx = scr.gather(ranges, ct.pts, job.u, d)
			if blkSum != nil {
				scr.cs = zeroed(scr.cs, len(u))
				colSum = scr.cs
			}
			if blkGrad != nil {
				scr.cg = zeroed(scr.cg, len(u)*d)
				colGrad = scr.cg
			}
		}
		nca := len(u)
		buf := e.bufs[w][:nca]
		ebuf := e.bufs[w][half : half+nca]
		if !job.weighted {
			e.lseLeaf(k, scr, lo, hi, buf, cols, u, c0, idx)
			continue
		}
		if e.weightedLeafSIMD(scr, lo, hi, cols, u, colSum, colGrad) {
			e.scatter(idx, blkSum, blkGrad, colSum, colGrad)
			continue
		}
		for i := lo; i < hi; i++ {
			e.weightedRow(k, i, buf, ebuf, cols, u, colSum, colGrad)
		}
		e.scatter(idx, blkSum, blkGrad, colSum, colGrad)
	}
}

// scatter adds the gathered column accumulators of a leaf's candidates
// (colSum, colGrad) to the block's (blkSum, blkGrad); nothing when the
// candidates were used in place (idx == nil). Padding candidates (idx −1)
// are skipped.
func (e *engine) scatter(idx []int32, blkSum, blkGrad, colSum, colGrad []float64) {
	d := e.d
	if idx == nil {
		return
	}
	if d == 2 && blkSum != nil && blkGrad != nil {
		// The backward sweeps of 2-D problems with a gradient on both
		// sides: one pass, bounds checked once per slice.
		cs, cg := colSum[:len(idx)], colGrad[:2*len(idx)]
		for a, j := range idx {
			if j < 0 {
				continue
			}
			blkSum[j] += cs[a]
			g := blkGrad[2*j : 2*j+2 : 2*j+2]
			g[0] += cg[2*a]
			g[1] += cg[2*a+1]
		}
		return
	}
	for a, j := range idx {
		if j < 0 {
			continue
		}
		if blkSum != nil {
			blkSum[j] += colSum[a]
		}
		if blkGrad != nil {
			for c := range d {
				blkGrad[int(j)*d+c] += colGrad[a*d+c]
			}
		}
	}
}

// weightedRow computes row i of a weighted sweep on the candidates (cols,
// u) of its leaf, adding to their column accumulators.
func (e *engine) weightedRow(k kern, i int, buf, ebuf, cols, u, colSum, colGrad []float64) {
	job := &e.job
	if job.spans != nil {
		e.weightedRowSpan(k, i, job.spans[2*i], job.spans[2*i+1], buf, ebuf, cols, u, colSum, colGrad)
		return
	}
	e.weightedRowSpan(k, i, -1, -1, buf, ebuf, cols, u, colSum, colGrad)
}

// weightedRowSpan is weightedRow over the candidates [a, z), or, for
// a < 0, over the span of every candidate's terms above the threshold:
// normalized weights against −thr, the envelope's against the row's
// maximum.
func (e *engine) weightedRowSpan(k kern, i int, a32, z32 int32, buf, ebuf, cols, u, colSum, colGrad []float64) {
	sp, job, d := e.sp, &e.job, e.d
	nca := len(u)
	r := 1.0
	if job.r != nil {
		r = job.r[i]
	}
	if r == 0 && job.out == nil {
		return
	}
	p := job.rows[i*d : i*d+d]
	s := 0.0
	if job.s != nil {
		s = job.s[i]
	}
	var rg []float64
	if job.rowGrad != nil {
		rg = job.rowGrad[i*d : i*d+d]
	}
	sum := 0.0
	a, z := int(a32), int(z32)
	trimSpan := a < 0
	if trimSpan {
		a, z = 0, nca
	}
	if z > a {
		mx := k.args(buf[a:z], p, cols[a*d:z*d], u[a:z], job.invEps, s)
		if trimSpan {
			cut := -sp.thr
			if !job.normalized {
				cut += mx
			}
			a, z = trim(buf[:z], cut)
			a, z = padSpan(a, z, nca)
		}
		var cs, cg []float64
		if colSum != nil {
			cs = colSum[a:z]
		}
		if colGrad != nil {
			cg = colGrad[a*d : z*d]
		}
		sum = k.expWeighted(buf[a:z], ebuf[a:z], mx, p, cols[a*d:z*d], r, rg, cs, cg)
	}
	for c := range rg {
		rg[c] *= r
	}
	if job.out != nil {
		job.out[i] = sum
	}
}

// weightedLeafSIMD runs the rows [lo, hi) of a normalized weighted sweep
// (the backward pass) on the leaf kernels for d = 1 and 2 (exp1LeafAVX2,
// exp2LeafAVX2), over the recorded spans or, without a record, every
// candidate (the kernels skip the groups below the threshold). It reports
// false, having done nothing, where the kernels do not apply: other
// sweeps, or a shift or row factor that is not finite. With finite shifts
// s_i = −LSE_i no argument a_ij + s_i exceeds expHigh: a_ij is at most the
// row's maximum, which is at most LSE_i (the u_j were checked when the
// forward sweep was culled).
func (e *engine) weightedLeafSIMD(scr *sparseScratch, lo, hi int, cols, u, colSum, colGrad []float64) bool {
	sp, job, d := e.sp, &e.job, e.d
	if !e.simd || d > 2 || !job.normalized || job.s == nil || job.r == nil || len(u)&3 != 0 {
		return false
	}
	for i := lo; i < hi; i++ {
		if !isFinite(job.s[i]) || !isFinite(job.r[i]) {
			return false
		}
	}
	var spans []int32
	if job.spans != nil {
		spans = job.spans[2*lo : 2*hi]
	} else {
		// Every candidate; the kernel skips the groups below the threshold
		// (the weights are normalized).
		if cap(scr.lspans) < 2*(hi-lo) {
			scr.lspans = make([]int32, 2*(hi-lo))
		}
		spans = scr.lspans[:2*(hi-lo)]
		for r := 0; r < len(spans); r += 2 {
			spans[r], spans[r+1] = 0, int32(len(u))
		}
	}
	for r := 0; r < len(spans); r += 2 {
		if (spans[r+1]-spans[r])&3 != 0 {
			return false
		}
	}
	mode := 0
	if colSum != nil {
		mode |= 1
	}
	if colGrad != nil {
		mode |= 2
	}
	st := d + 1
	scr.res = grow(scr.res, st*(hi-lo))
	scr.kept = grow(scr.kept, len(u))
	if cap(scr.groups) < len(u)/4 {
		scr.groups = make([]int32, len(u)/4)
	}
	groups := scr.groups[:len(u)/4]
	if d == 1 {
		exp1LeafAVX2(job.rows[lo:hi], job.s[lo:hi], job.r[lo:hi], spans, cols, u, colSum, colGrad, scr.res, scr.kept, groups, job.invEps, -sp.thr, mode)
	} else {
		exp2LeafAVX2(job.rows[2*lo:2*hi], job.s[lo:hi], job.r[lo:hi], spans, cols, u, colSum, colGrad, scr.res, scr.kept, groups, job.invEps, -sp.thr, mode)
	}
	for i := lo; i < hi; i++ {
		res := scr.res[st*(i-lo) : st*(i-lo)+st]
		if job.rowGrad != nil {
			for c := range d {
				job.rowGrad[i*d+c] = res[1+c] * job.r[i]
			}
		}
		if job.out != nil {
			job.out[i] = res[0]
		}
	}
	return true
}

// lseLeaf computes out[i] = outScale·LSE over the candidates for the rows
// [lo, hi) of a leaf, records each row's span of terms above the threshold
// (job.spans) and moves its hint to its argmax. The candidates are the
// columns c0, c0+1, … (idx == nil) or idx.
func (e *engine) lseLeaf(k kern, scr *sparseScratch, lo, hi int, buf, cols, u []float64, c0 int, idx []int32) {
	sp, job, d := e.sp, &e.job, e.d
	nrow := hi - lo
	scr.sums = grow(scr.sums, nrow)
	scr.mxs = grow(scr.mxs, nrow)
	scr.lgs = grow(scr.lgs, nrow)
	if e.simd && d <= 2 && len(u) >= 4 && len(u)&3 == 0 {
		e.lseLeafSIMD(scr, lo, hi, buf, cols, u, c0, idx)
		k.log(scr.lgs, scr.sums)
		for i := lo; i < hi; i++ {
			job.out[i] = job.outScale * (scr.mxs[i-lo] + scr.lgs[i-lo])
		}
		return
	}
	for i := lo; i < hi; i++ {
		mx := math.Inf(-1)
		if len(u) > 0 {
			mx = k.args(buf, job.rows[i*d:i*d+d], cols, u, job.invEps, 0)
		}
		scr.mxs[i-lo] = mx
		if math.IsInf(mx, 0) || math.IsNaN(mx) {
			scr.sums[i-lo] = 1
			if job.spans != nil {
				job.spans[2*i], job.spans[2*i+1] = 0, int32(len(u))
			}
			continue
		}
		a, z := trim(buf, mx-sp.thr)
		for c, v := range buf[a:z] {
			if v == mx {
				if idx != nil {
					job.hint[i] = idx[a+c]
				} else {
					job.hint[i] = int32(c0 + a + c)
				}
				break
			}
		}
		a, z = padSpan(a, z, len(buf))
		if job.spans != nil {
			job.spans[2*i], job.spans[2*i+1] = int32(a), int32(z)
		}
		scr.sums[i-lo] = k.sumExpThr(buf[a:z], mx, -sp.thr)
	}
	k.log(scr.lgs, scr.sums)
	for i := lo; i < hi; i++ {
		job.out[i] = job.outScale * (scr.mxs[i-lo] + scr.lgs[i-lo])
	}
}

// gather copies the candidate columns of ranges (points and terms) into the
// scratch and returns them with their tree-order indices, padded to a
// multiple of four candidates for the vector kernels with columns that
// contribute nothing (u = −Inf, index −1).
func (scr *sparseScratch) gather(ranges []int32, pts, u []float64, d int) ([]float64, []float64, []int32) {
	n := 0
	for k := 0; k < len(ranges); k += 2 {
		n += int(ranges[k+1] - ranges[k])
	}
	np := (n + 3) &^ 3
	scr.cols = grow(scr.cols, np*d)
	scr.u = grow(scr.u, np)
	if cap(scr.idx) < np {
		scr.idx = make([]int32, np)
	}
	scr.idx = scr.idx[:np]
	a := 0
	for k := 0; k < len(ranges); k += 2 {
		lo, hi := int(ranges[k]), int(ranges[k+1])
		copy(scr.cols[a*d:], pts[lo*d:hi*d])
		copy(scr.u[a:], u[lo:hi])
		for j := lo; j < hi; j++ {
			scr.idx[a] = int32(j)
			a++
		}
	}
	for ; a < np; a++ {
		clear(scr.cols[a*d : a*d+d])
		scr.u[a] = math.Inf(-1)
		scr.idx[a] = -1
	}
	return scr.cols, scr.u, scr.idx
}

// trim returns the span [a, z) of buf outside which every element is below
// cut (NaN elements are kept). Terms outside it are below the threshold:
// dropping them is the culling at the level of single terms.
func trim(buf []float64, cut float64) (a, z int) {
	z = len(buf)
	for a < z && buf[a] < cut {
		a++
	}
	for z > a && buf[z-1] < cut {
		z--
	}
	return a, z
}

// lseLeafSIMD is the row loop of lseLeaf on the leaf kernels for d = 1
// and 2 (lse1LeafAVX2, lse2LeafAVX2), over candidates whose number is a
// multiple of four: the columns c0, c0+1, … (idx == nil) or idx.
func (e *engine) lseLeafSIMD(scr *sparseScratch, lo, hi int, buf, cols, u []float64, c0 int, idx []int32) {
	sp, job, d := e.sp, &e.job, e.d
	nrow := hi - lo
	scr.res = grow(scr.res, 2*nrow)
	mxs, sums := scr.mxs[:nrow], scr.sums[:nrow]
	if cap(scr.lspans) < 3*nrow {
		scr.lspans = make([]int32, 3*nrow)
	}
	spans := scr.lspans[:3*nrow]
	scr.kept = grow(scr.kept, 2*len(u)+8)
	if d == 1 {
		lse1LeafAVX2(job.rows[lo:hi], cols, u, buf, scr.kept, scr.res, spans, job.invEps, -sp.thr)
	} else {
		lse2LeafAVX2(job.rows[2*lo:2*hi], cols, u, buf, scr.kept, scr.res, spans, job.invEps, -sp.thr)
	}
	for r := range nrow {
		i := lo + r
		mx := scr.res[2*r]
		mxs[r] = mx
		a, z := spans[3*r], spans[3*r+1]
		if math.IsInf(mx, 0) || math.IsNaN(mx) {
			sums[r] = 1
			a, z = 0, int32(len(u))
		} else {
			sums[r] = scr.res[2*r+1]
			if am := spans[3*r+2]; am >= 0 {
				switch {
				case idx == nil:
					job.hint[i] = int32(c0) + am
				case idx[am] >= 0:
					job.hint[i] = idx[am]
				}
			}
		}
		if job.spans != nil {
			job.spans[2*i], job.spans[2*i+1] = a, z
		}
	}
}

// cull1 is the culling of one row leaf in 1-D (rows in [rlo, rhi]): it
// appends to ranges the single range from the first to the last surviving
// column leaf (the leaves between them are kept, surviving or not), found
// by two depth-first searches that stop at the first surviving leaf from
// the left and from the right.
//
// The range is then trimmed at both ends with the exact bound of a single
// column j, u_j·eps − dist(y_j, [rlo, rhi])², so that its granularity is
// a column, not a leaf.
func (sp *sparseState) cull1(ct *kdTree, u []float64, eps, rlo, rhi, cut float64, ranges []int32, scr *sparseScratch) []int32 {
	first := sp.edge1(rlo, rhi, cut, scr, false)
	if first < 0 {
		return ranges
	}
	last := sp.edge1(rlo, rhi, cut, scr, true)
	lo, hi := sp.n1[first].first, sp.n1[last].end
	bound := func(j int32) float64 {
		y := ct.pts[j]
		dd := max(rlo-y, y-rhi, 0)
		return u[j]*eps - dd*dd
	}
	for lo < hi-1 && bound(lo) < cut {
		lo++
	}
	for hi > lo+1 && bound(hi-1) < cut {
		hi--
	}
	return append(ranges, lo, hi)
}

// edge1 returns the leftmost (or, with right, the rightmost) column leaf
// whose bound for the rows in [rlo, rhi] is not below cut, or −1.
func (sp *sparseState) edge1(rlo, rhi, cut float64, scr *sparseScratch, right bool) int32 {
	nodes := sp.n1
	stack := append(scr.stack[:0], 0)
	found := int32(-1)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := &nodes[k]
		if nd.w+coordMax(nd.sig, nd.lo, nd.hi, rlo, rhi) < cut {
			continue
		}
		if nd.left < 0 {
			found = k
			break
		}
		if right {
			stack = append(stack, nd.left, nd.right)
		} else {
			stack = append(stack, nd.right, nd.left)
		}
	}
	scr.stack = stack[:0]
	return found
}
