package ot

import (
	"math"
	"slices"
)

// The scaling path.
//
// At the paper's eps the potentials of a problem change by a few units of
// eps per iteration once the first iterations have placed them, so the
// kernel can be "absorbed" (Schmitzer 2019, stabilized sparse scaling): after
// a log-domain sweep, with row offsets A_i and column offsets B_j (log
// units, from the potentials just computed), the truncated kernel
//
//	K_ij = e^(A_i + B_j − C_ij/eps),  kept where it can matter,
//
// is stored in compressed rows, and the following sweeps are sparse
// matrix–vector products without exponentials of terms:
//
//	LSE_i = −A_i + H + log Σ_j K_ij e^(h_j − H),  h_j = u_j − B_j, H = max h,
//
// and likewise for the columns with Kᵀ. The stored kernel is an *epoch*; a
// new one is absorbed whenever a sweep cannot be computed exactly from the
// current one (the first few sweeps, and now and then as the potentials
// drift). The backward pass of an unrolled gradient reuses each sweep's
// epoch: its weights e^(a_ij − LSE_i) are K_ij e^(h_j − H)/σ_i, with σ_i
// the row sum of the forward sweep (kept per sweep, O(T·(n+m))), so each
// row's softmax is normalized exactly (see the package documentation on
// accuracy).
//
// Exactness. With h⁰ the column factors at absorption and
// M_i = max_j (k_ij + h⁰_j) (k = log K), an entry is kept when
// k_ij + h⁰_j ≥ M_i − L (it matters to its row) or the same holds for its
// column in the transposed orientation; L = ln(max(n, m)) + 54·ln 2 +
// scalingMargin. A later sweep with factors h = h⁰ + Δ drops, in row i,
// terms below e^(M_i − L + max Δ − H) each, so it is accepted only when
//
//	log σ_i ≥ ln(m) + 54·ln 2 + M_i − (L − 1) + max Δ − H
//
// for every row (σ_i the computed sum, at least 2^-900), that is when the
// dropped terms add up to less than 2^-54 of the row's sum (with a factor e
// of slack for the rounding of the selection): the same guarantee as the
// sparse sweeps, so the paths agree to rounding. Otherwise the sweep is
// computed densely in the log domain and a new epoch is absorbed from it.
// The weights dropped from a row of a backward sweep then add up to less
// than 2^-54 of the row's total, and dividing by the kept sum moves the
// others by as much: each adjoint of a sweep is within 2·2^-54 of the exact
// one times the same sum taken with |r_i| and the largest |x_i − y_j|
// (TestScalingSweepErrorBound checks these bounds with 2^-4 and 2^-10).
//
// The sweeps that absorb, and those no epoch covers, run on the sparse
// sweeps (sparse.go), recording for the backward pass as there, except in
// 2-D and above in problems of at most scalingDenseAbsorb pairs, whose
// absorbing sweeps are dense sweeps (cheaper than a culling there). Absorbing
// also scans every (row, column) pair twice (the row and column maxima,
// then the selection), so PathAuto uses the path for problems of at most
// scalingMaxTerms pairs (scalingMaxTerms1D in 1-D); the stored epochs are
// bounded by scalingMaxEntries and scalingMaxEpochs (beyond them the
// remaining sweeps are sparse sweeps).

// scalingMargin is the drift of the potentials, in units of eps, that an
// epoch absorbs before a sweep must absorb a new one; larger margins keep
// more entries and absorb less often. scalingMarginWide is the margin of
// problems whose kernels grow slowly with it: the first absorption of a
// problem from a scan counts the rows' terms within both margins and the
// problem takes the wide one when it keeps at most scalingWideGrowth
// times as many. scalingMarginSymmetric is the margin of the symmetric
// problems (x–x, y–y: the same measure on both sides), whose potentials
// barely drift once the first sweep has placed them.
//
// Measured on the gradients at points of real runs (BenchmarkGradientDraws,
// 2026-11-27, one core, the same build with the margins set from the
// environment): Experiment C's x–x problems keep one epoch for all 160
// sweeps with margins from 4 to 55, and keep 30% fewer entries with 14 than
// with 55 (1420 against 2036 per epoch); its x–y problems (a pulse: a
// curve) keep 1.35–1.64 times as many terms with 85 as with 28, and the
// gradient is fastest with margins of 70–100 there (about 6.9–7.0 ms
// against 7.25 with 55 and 8.9 with 28, the x–x margin 14); B's spiral
// keeps 1.8–2.1 times as many (nearly as a plane fills) and stays on 28.
// With these constants C's gradient takes 8–12% less time than with
// 28/55/1.35 and no symmetric margin, B's 3–6% less; A's (1-D, at the
// truth) is within the machine's noise.
const (
	scalingMargin          = 28.0
	scalingMarginWide      = 85.0
	scalingWideGrowth      = 1.7
	scalingMarginSymmetric = 14.0
)

// scalingMaxTerms and scalingMaxTerms1D are the largest n·m for which
// PathAuto absorbs the scaling path's epochs from a scan of every pair, in
// 2 or more dimensions and in 1-D; beyond them it absorbs from the
// culling (scaling_cull.go), except for unrolled problems in 1-D and 2-D,
// which run on the sparse sweeps (sparseProblem; in 2-D since their leaf
// kernels were made faster, 2026-11-27). Measured with the AVX2
// kernels, one divergence with and without its unrolled gradient, one
// worker (BENCHMARKS.md): in 1-D the scan wins at n = m = 724 by 1.2× over
// the sparse sweeps; at 1024–4096 the sparse sweeps win by 1.2–1.3× over
// the culled absorption with the gradient and tie without; in 2-D the scan
// and the culled absorption tie at 2048 with a gradient (the culled one
// wins by 1.2× without), and the culled one wins at 2896 by 1.2×.
const (
	scalingMaxTerms   = 1 << 22
	scalingMaxTerms1D = 1 << 19
)

// scalingDenseAbsorb is the largest n·m (d ≥ 2) whose absorbing sweeps are
// dense sweeps: measured with one core, they make one gradient of
// Experiment B (6 problems of 160 points) 11% faster and C's (128 points)
// 5%, and a divergence of 256 or 512 points 2–4%; in 1-D the sparse
// sweeps stay faster (Experiment A: 1–2%).
const scalingDenseAbsorb = 1 << 18

// scalingMaxEntries and scalingMaxEpochs bound the kernels stored for one
// problem: entries (at most scalingEntriesPerPair·n·m; 24 bytes each with
// the transpose, 12 MiB in all, and up to 16·d bytes more where the
// gradient's difference planes are formed, 28 MiB in 2-D) and epochs.
// Problems that reach them (potentials that move by hundreds of units per
// iteration, as at a sampler's wildest warmup proposals) finish on the
// sparse sweeps. A problem at the paper's scales stores about one entry
// per pair over all its epochs.
const (
	scalingMaxEntries     = 1 << 19
	scalingEntriesPerPair = 2
	scalingMaxEpochs      = 32
)

// scalingMinSum is the smallest row sum a kernel sweep accepts (2^-900):
// its terms stay normal numbers and their reciprocals finite.
const scalingMinSum = 0x1p-900

// scalingEpoch is one absorbed kernel. Side 0 is p (the rows of the
// f-sweeps), side 1 is q.
type scalingEpoch struct {
	k   [2]csr // the kernel with rows on side 0 (K) and on side 1 (Kᵀ)
	off [2][]float64
	ref [2][]float64 // per point: its factor h at absorption, as a column
	top [2][]float64 // per point: max over the other side of k + ref, as a row

	spans []int32 // culled: per row block of a backward sweep, its columns (blockSpans)

	L float64 // the limit L of its selection (see the top of the file)

	chain chainFactors // the chained sweeps' constants (scaling_chain.go)
}

// csr is a sparse matrix in compressed rows.
type csr struct {
	start []int32   // row r's entries are start[r]:start[r+1]
	idx   []int32   // an entry's column
	val   []float64 // its value
	ncol  int       // the number of columns: every idx is below it

	// The entries times the differences of their points in d planes,
	// diff[c·len(idx) + k] = val_k·(row point − column point)_c: the
	// backward pass's gradient sums, formed once per kernel (setDiffs)
	// instead of once per sweep.
	diff   []float64
	diffOK bool
}

// row returns the columns and values of row r.
func (m *csr) row(r int) ([]int32, []float64) {
	lo, hi := m.start[r], m.start[r+1]
	return m.idx[lo:hi], m.val[lo:hi:hi]
}

// transpose sets t to mᵀ, whose rows are the nc columns of m.
func (m *csr) transpose(t *csr, nc int) {
	nr := len(m.start) - 1
	nnz := int(m.start[nr])
	t.start = grow32(t.start, nc+1)
	clear(t.start)
	cols, vals := m.idx[:nnz], m.val[:nnz]
	count := t.start[1 : nc+1]
	for _, j := range cols {
		count[j]++
	}
	for j := range nc {
		t.start[j+1] += t.start[j]
	}
	t.idx = grow32(t.idx, nnz)
	t.val = grow(t.val, nnz)
	tidx, tval := t.idx[:nnz], t.val[:nnz]
	next := t.start[:nc] // the next free entry of each row of t, restored below
	k := 0
	for i, z := range m.start[1 : nr+1] {
		for ; k < int(z); k++ {
			j := cols[k]
			p := next[j]
			next[j] = p + 1
			tidx[p] = int32(i)
			tval[p] = vals[k]
		}
	}
	copy(t.start[1:], t.start[:nc])
	t.start[0] = 0
	t.ncol = nr
	t.diffOK = false
}

// setDiffs forms m.diff from the points of m's rows (rp) and columns (cp)
// of dimension d, once per kernel: one plane per coordinate, or with
// coords non-nil one per coordinate of coords (plane p holds coordinate
// coords[p]); in 2-D on the AVX2 kernels when kr.simd (the same bits).
func (kr kern) setDiffs(m *csr, rp, cp []float64, d int, coords []int) {
	if m.diffOK {
		return
	}
	nnz, nr := len(m.idx), len(m.start)-1
	np := d
	if coords != nil {
		np = len(coords)
	}
	m.diff = grow(m.diff, nnz*np)
	m.diffOK = true
	simd2 := d == 2 && kr.simd
	if simd2 {
		_, _ = rp[:2*nr], cp[:2*m.ncol] // with idx < ncol, the kernels' bounds
	}
	if simd2 && coords == nil { // both planes in one pass
		csrDiffs2AVX2(m.start, m.idx, m.val[:nnz], rp, cp, m.diff[:nnz], m.diff[nnz:2*nnz])
		return
	}
	for p := range np {
		c := p
		if coords != nil {
			c = coords[p]
		}
		plane := m.diff[p*nnz : (p+1)*nnz]
		if simd2 {
			csrDiffs1AVX2(m.start, m.idx, m.val[:nnz], rp[c:], cp[c:], plane)
			continue
		}
		for r := range nr {
			a, z := int(m.start[r]), int(m.start[r+1])
			vals, out := m.val[a:z:z], plane[a:z:z]
			x := rp[r*d+c]
			for k, j := range m.idx[a:z] {
				out[k] = vals[k] * (x - cp[int(j)*d+c])
			}
		}
	}
}

// plane returns plane c of m.diff.
func (m *csr) plane(c int) []float64 {
	nnz := len(m.idx)
	return m.diff[c*nnz : (c+1)*nnz]
}

// planes returns the planes of a gatherRows call and their number: lead
// (none when nil) and then the d planes of m.diff, at most three in all.
func (m *csr) planes(lead []float64, d int) (pl [3][]float64, np int) {
	if lead != nil {
		pl[np] = lead
		np++
	}
	for c := range d {
		pl[np] = m.plane(c)
		np++
	}
	return pl, np
}

// gatherDst is where gatherRows writes the sums of its np planes: with
// lead nil, out[np·r + p]; otherwise the first (lead) plane's sums to
// lead[r] and the others' to rest[(np−1)·r + p − 1], times f_r (and the
// others also times sign, ±1) when f is non-nil.
type gatherDst struct {
	out        []float64
	lead, rest []float64
	f          []float64
	sign       float64
}

// rows returns dst for the rows [lo, hi) of np planes.
func (dst gatherDst) rows(np, lo, hi int) gatherDst {
	if dst.lead == nil {
		return gatherDst{out: dst.out[np*lo : np*hi]}
	}
	dst.lead, dst.rest = dst.lead[lo:hi], dst.rest[(np-1)*lo:(np-1)*hi]
	if dst.f != nil {
		dst.f = dst.f[lo:hi]
	}
	return dst
}

// gatherRows computes Σ_k planes[p][k]·v[idx[k]] over the entries k of
// each row r of m, for the first np (1 to 3) planes, each indexed like m's
// entries, into dst: the sparse products of the scaling path, on the AVX2
// kernels when kr.simd.
func (kr kern) gatherRows(m *csr, planes [3][]float64, np int, v []float64, dst gatherDst) {
	kr.gatherRange(m, planes, np, v, dst.rows(np, 0, len(m.start)-1), 0, len(m.start)-1)
}

// gatherRange is gatherRows for the rows [lo, hi) of m into dst (which
// holds those rows only).
func (kr kern) gatherRange(m *csr, planes [3][]float64, np int, v []float64, dst gatherDst, lo, hi int) {
	nnz := int(m.start[len(m.start)-1])
	for _, pl := range planes[:np] {
		_ = pl[:nnz]
	}
	_ = v[:m.ncol] // with the construction's idx < ncol, the kernels' bounds
	start := m.start[lo : hi+1]
	split := dst.lead != nil
	if split {
		_, _ = dst.lead[:hi-lo], dst.rest[:(np-1)*(hi-lo)]
		if dst.f != nil {
			_ = dst.f[:hi-lo]
		}
	} else {
		_ = dst.out[:np*(hi-lo)]
	}
	if kr.simd {
		switch {
		case split && np == 1:
			csrGatherLead1AVX2(start, m.idx, planes[0], v, dst.f, dst.lead, dst.rest, dst.sign)
		case split && np == 2:
			csrGatherLead2AVX2(start, m.idx, planes[0], planes[1], v, dst.f, dst.lead, dst.rest, dst.sign)
		case split:
			csrGatherLead3AVX2(start, m.idx, planes[0], planes[1], planes[2], v, dst.f, dst.lead, dst.rest, dst.sign)
		case np == 1:
			csrGather1AVX2(start, m.idx, planes[0], v, dst.out)
		case np == 2:
			csrGather2AVX2(start, m.idx, planes[0], planes[1], v, dst.out)
		default:
			csrGather3AVX2(start, m.idx, planes[0], planes[1], planes[2], v, dst.out)
		}
		return
	}
	// Plane by plane, so that each plane's sums do not depend on np (the
	// row sums of a forward sweep are the same with or without its
	// gradient sums), as in the kernels.
	for r := range hi - lo {
		a, z := start[r], start[r+1]
		cols := m.idx[a:z]
		for p, pl := range planes[:np] {
			s := gatherDot(cols, pl[a:z], v)
			switch {
			case !split:
				dst.out[np*r+p] = s
			case p == 0 && dst.f != nil:
				dst.lead[r] = dst.f[r] * s
			case p == 0:
				dst.lead[r] = s
			case dst.f != nil:
				dst.rest[(np-1)*r+p-1] = dst.sign * dst.f[r] * s
			default:
				dst.rest[(np-1)*r+p-1] = s
			}
		}
	}
}

// gatherTask is a gatherRows call split across the workspace's goroutines.
type gatherTask struct {
	m      *csr
	planes [3][]float64
	np     int
	v      []float64
	dst    gatherDst
}

// gatherRows is kern.gatherRows, with the rows split in contiguous chunks
// across the workspace's goroutines when m holds at least parallelMin/8
// entries (an entry costs a multiply–add where a term of a dense sweep
// costs an exponential). Each row's sums are computed alike whatever the
// split.
func (e *engine) gatherRows(m *csr, planes [3][]float64, np int, v []float64, dst gatherDst) {
	kr := kern{simd: e.simd}
	if e.pool.workers <= 1 || len(m.idx) < e.parallelMin/8 || len(m.start)-1 < e.pool.workers {
		kr.gatherRows(m, planes, np, v, dst)
		return
	}
	e.gather = gatherTask{m: m, planes: planes, np: np, v: v, dst: dst}
	e.pool.do()
	e.gather = gatherTask{}
}

// gatherChunk runs worker w's rows of the current gatherTask.
func (e *engine) gatherChunk(w int) {
	t := &e.gather
	nr, W := len(t.m.start)-1, e.pool.workers
	lo, hi := w*nr/W, (w+1)*nr/W
	kern{simd: e.simd}.gatherRange(t.m, t.planes, t.np, t.v, t.dst.rows(t.np, lo, hi), lo, hi)
}

// scalingState holds the scaling path's epochs, scratch and counters.
type scalingState struct {
	epochs     []scalingEpoch
	n          int       // epochs in use
	cur        [2]int    // per orientation: the epoch of its next sweep, −1 for none
	id         [2]int32  // per orientation: the epoch its sweeps record in sweepEpoch
	stored     int       // entries of the epochs in use
	budget     int       // the entries this problem may store
	broken     bool      // the problem's remaining sweeps are sparse sweeps
	sweepEpoch []int32   // per forward sweep: its epoch, −1 when none covers it
	sigHist    []float64 // per forward sweep (stride rows each): its row sums σ
	invHist    []float64 // per forward sweep: 1/σ, where the next sweep chained (invOK)
	invOK      []bool
	cfHist     []float64 // per forward sweep (stride each): its column factors
	rgHist     []float64 // per forward sweep (d·stride each): its gradient sums
	stride     int
	keep       bool
	record     bool // keep the forward sweeps' sums (keep, not culled)
	dim        int  // the points' dimension

	// The coordinates of the gradient sums' planes (nil: all dim of them)
	// and their number ng: the coordinates of the points whose gradient
	// is wanted (Grad.FixedX, Grad.FixedY).
	coords []int
	ng     int

	// The culled absorption (scaling_cull.go): the epoch of orientation o
	// lives in epochs[o], valid for that orientation only; with keep, each
	// epoch's id indexes absorbedAt, the forward sweep that absorbed it, and
	// the backward pass absorbs an epoch again when resident[o] (the id in
	// epochs[o], −1 for none) is another.
	culled      bool
	absorbedAt  []int32
	absorbedSum []uint64 // per epoch id: its kernel's checksum
	resident    [2]int32
	u0          []float64 // the u of an absorption the backward pass repeats

	// gradRows[o]: the forward sweeps of orientation o also record the
	// row gradient sums Σ_c K_rc e^(h_c − H)(x_r − y_c) for the backward
	// pass (the rows' side wants its points' gradient; ng ≤ 2).
	gradRows [2]bool

	// The chained kernel sweeps of solve (scaling_chain.go): lazy while
	// they may leave their potentials pending, pend per orientation, w the
	// sides' weights, and the row sums of the sweeps that keep no history,
	// per orientation.
	lazy bool
	pend [2]pendingSweep
	w    [2][]float64
	sigs [2][]float64
	plg  []float64 // materialize's logarithms
	inv  []float64 // chainedFactors' reciprocals of unrecorded sums

	logs          [2]sizeLog // logOf's memory
	h, v, out, lg []float64
	args          []float64
	kargs         []float64 // an absorption's entries' exponents
	gat           []float64 // rowGradPass's gathered sums
	topL          []float64 // an absorption's column thresholds

	// The accepted error of a kernel sweep (the dropped terms of a row
	// below 2^-bits of its sum) and the margin of L: 54 and scalingMargin,
	// smaller in tests that must see terms dropped; wide is the margin a
	// problem may choose instead (scalingMarginWide, 0 for none),
	// symmetric the margin of the symmetric problems
	// (scalingMarginSymmetric, 0 for none: they choose as the others), and
	// chosen the problem's margin once its first scan absorption has
	// chosen it (0 before).
	bits, margin            float64
	wide, symmetric, chosen float64

	// Counters over the workspace's life (tests and benchmarks); reabsorbs
	// are the backward pass's culled absorptions, mismatches those whose
	// kernel was not the forward pass's, partial the kernel sweeps that
	// finishRows completed, chained those whose column factors came from
	// the pending sweep (scaling_chain.go).
	kernelSweeps, absorbs, failed  int
	reabsorbs, mismatches, partial int
	chained                        int
}

// useScaling reports whether the problem (p, q) runs on the scaling path,
// and whether its epochs are absorbed from the sparse sweeps' culling
// (problems of more than scalingMaxTerms pairs, scalingMaxTerms1D in 1-D)
// rather than from a scan of all pairs.
func (e *engine) useScaling(p, q side) (on, culled bool) {
	limit := scalingMaxTerms
	if e.d == 1 {
		limit = scalingMaxTerms1D
	}
	large := float64(p.n)*float64(q.n) > float64(limit)
	switch e.path {
	case PathScaling:
		return true, large || e.forceCulled
	case PathAuto:
		return p.n >= sparseMinPoints && q.n >= sparseMinPoints, large
	}
	return false, false
}

// newScalingState returns the scaling path's state with the standard
// precision (2^-54) and margin.
func newScalingState() *scalingState {
	return &scalingState{bits: 54, margin: scalingMargin, wide: scalingMarginWide, symmetric: scalingMarginSymmetric, logs: [2]sizeLog{{n: -1}, {n: -1}}}
}

// limit is L for a problem of n and m points with the problem's margin
// (the standard one until chosen).
func (sc *scalingState) limit(n, m int) float64 {
	margin := sc.margin
	if sc.chosen > 0 {
		margin = sc.chosen
	}
	return sc.limitWith(n, m, margin)
}

// limitWith is L for a problem of n and m points with the given margin.
func (sc *scalingState) limitWith(n, m int, margin float64) float64 {
	return sc.logOf(max(n, m)) + sc.bits*math.Ln2 + margin
}

// sizeLog is a size n and its logarithm.
type sizeLog struct {
	n int
	l float64
}

// logOf returns log n, remembering the last two sizes (a problem's two
// sides, asked for at every sweep).
func (sc *scalingState) logOf(n int) float64 {
	for _, c := range sc.logs {
		if c.n == n {
			return c.l
		}
	}
	l := math.Log(float64(n))
	sc.logs[0], sc.logs[1] = sizeLog{n, l}, sc.logs[0]
	return l
}

// begin prepares the state for a problem of n·m pairs of points of
// dimension d and the given number of sweeps with at most rows rows each,
// keeping what the backward pass needs with keep (and the gradient sums of
// the sides s with gradRows[s], for the coordinates coords, nil for all),
// with culled absorptions when culled. Kernels kept from earlier problems
// holding more entries than this problem's budget are released.
func (sc *scalingState) begin(keep bool, gradRows [2]bool, coords []int, nm, sweeps, rows, d int, culled bool) {
	sc.n, sc.stored, sc.broken, sc.keep = 0, 0, false, keep
	sc.lazy, sc.pend = false, [2]pendingSweep{}
	sc.chosen = 0
	sc.cur, sc.resident = [2]int{-1, -1}, [2]int32{-1, -1}
	sc.culled, sc.record = culled, keep && !culled
	sc.absorbedAt, sc.absorbedSum = sc.absorbedAt[:0], sc.absorbedSum[:0]
	sc.dim, sc.gradRows = d, [2]bool{}
	sc.coords, sc.ng = coords, d
	if coords != nil {
		sc.ng = len(coords)
	}
	if sc.record && sc.ng <= 2 { // the gradient sums' kernels take up to three planes
		sc.gradRows = gradRows
	}
	sc.budget = min(scalingMaxEntries, scalingEntriesPerPair*nm)
	if culled { // per epoch
		sc.budget = min(scalingCulledMaxEntries, scalingCulledPerRow*rows)
	}
	if sc.heldEntries() > 2*sc.budget { // both orientations: more entries than the budget
		sc.epochs = nil
	}
	if keep {
		sc.sweepEpoch = grow32(sc.sweepEpoch, sweeps)
	}
	if sc.record {
		sc.stride = rows
		sc.sigHist = grow(sc.sigHist, sweeps*rows)
		sc.invHist = grow(sc.invHist, sweeps*rows)
		if cap(sc.invOK) < sweeps {
			sc.invOK = make([]bool, sweeps)
		}
		sc.invOK = sc.invOK[:sweeps]
		clear(sc.invOK)
		sc.cfHist = grow(sc.cfHist, sweeps*rows)
		if sc.gradRows[0] || sc.gradRows[1] {
			sc.rgHist = grow(sc.rgHist, sweeps*rows*sc.ng)
		}
	}
}

// sigma returns the row sums kept for the forward sweep rec.
func (sc *scalingState) sigma(rec, nr int) []float64 {
	return sc.sigHist[rec*sc.stride : rec*sc.stride+nr]
}

// colFactorsOf returns the column factors kept for the forward sweep rec.
func (sc *scalingState) colFactorsOf(rec, nc int) []float64 {
	return sc.cfHist[rec*sc.stride : rec*sc.stride+nc]
}

// gradSums returns the row gradient sums kept for the forward sweep rec of
// orientation o (ng sums for each of the nr rows), or nil when it keeps none.
func (sc *scalingState) gradSums(o, rec, nr int) []float64 {
	if !sc.gradRows[o] {
		return nil
	}
	ng := sc.ng
	return sc.rgHist[rec*sc.stride*ng : (rec*sc.stride+nr)*ng]
}

// scalingStep computes one forward sweep of orientation o (rows: side o):
// out_r = −τε·LSE_c(u_c − C_rc/eps), from the current epoch when it
// provably can, else on the sparse sweeps, absorbing a new epoch. colPot
// is the column side's potential; the step sets u = colPot/eps + log w
// where it needs it (a chained kernel sweep does not: scaling_chain.go).
func (e *engine) scalingStep(o int, sides [2]side, u, colPot, out []float64, c consts, rec int) {
	sc := e.sc
	rows, cols := sides[o], sides[1-o]
	sc.pend[o].ok = false // this sweep's potentials replace those
	chain := sc.chainable(o, c)
	if !chain {
		e.scalingInput(o, cols, u, colPot, c)
	}
	var test sweepTest
	if sc.cur[o] >= 0 {
		var ok bool
		if ok, test = e.kernelSweep(o, rows, cols, u, out, c, rec, chain); ok {
			sc.kernelSweeps++
			if rec >= 0 {
				sc.sweepEpoch[rec] = sc.id[o]
			}
			return
		}
	}
	if chain {
		e.scalingInput(o, cols, u, colPot, c)
	}
	// A dense absorbing sweep is computed in the absorption's first pass
	// (absorb with sweep) when every column factor is finite, or only for
	// the rows that failed the kernel sweep's test when they are few
	// (finishRows: the others keep the kernel sweep's outputs).
	dense := !sc.culled && !sc.broken && e.d > 1 && float64(rows.n)*float64(cols.n) <= scalingDenseAbsorb
	fused := dense && kern{simd: e.simd}.inRange(u[:cols.n], -math.MaxFloat64, math.MaxFloat64)
	finished := fused && test.ran && e.finishRows(o, rows, cols, u, out, c, test)
	switch {
	case finished, fused:
	case dense:
		e.sweep(forwardJob(rows, cols, u, out, c))
	default:
		e.logSweep(o, sides, u, out, c, rec)
	}
	if sc.culled {
		e.absorbCulled(o, rows, cols, u, colPot, out, c, rec)
	} else {
		sc.cur = [2]int{-1, -1}
		if !sc.broken {
			k := e.absorb(o, rows, cols, u, colPot, out, c, fused && !finished)
			sc.broken = k < 0
			sc.cur, sc.id = [2]int{k, k}, [2]int32{int32(k), int32(k)}
		}
	}
	if rec < 0 {
		return
	}
	// The backward pass takes this sweep's weights from the new epoch when
	// its row sums are representable (checked there when culled).
	sc.sweepEpoch[rec] = -1
	if sc.cur[o] < 0 {
		return
	}
	if sc.culled {
		sc.sweepEpoch[rec] = sc.id[o]
		return
	}
	if _, _, ok := e.rowSums(o, rows, cols, u, sc.sigma(rec, rows.n), sc.gradSums(o, rec, rows.n), sc.colFactorsOf(rec, cols.n)); ok {
		sc.sweepEpoch[rec] = sc.id[o]
	}
}

// scalingInput sets the input u = colPot/eps + log w of a sweep of
// orientation o (columns cols), forming colPot first if its sweep is
// pending.
func (e *engine) scalingInput(o int, cols side, u, colPot []float64, c consts) {
	e.materialize(1-o, c)
	kern{simd: e.simd}.mulAdd(u[:cols.n], colPot[:cols.n], c.invEps, cols.logw)
}

// colFactors sets v (nc values) to the column factors e^(h_c − H),
// h_c = u_c − B_c, of a sweep of orientation o on the current epoch and
// returns H, or false when h has no finite maximum. It also returns D, the
// largest drift h_c − h⁰_c of a column factor since absorption (NaN when
// one is NaN).
func (e *engine) colFactors(ep *scalingEpoch, o int, u, v []float64) (H, D float64, ok bool) {
	sc := e.sc
	offC, refC := ep.off[1-o], ep.ref[1-o]
	nc := len(offC)
	sc.h = grow(sc.h, nc)
	h := sc.h
	refC, u = refC[:nc], u[:nc]
	H, D = math.Inf(-1), math.Inf(-1)
	n4, nan := 0, false
	if e.simd {
		n4 = nc &^ 3
		H, D, nan = colDriftAVX2(h[:n4], u[:n4], offC[:n4], refC[:n4])
	}
	for j := n4; j < nc; j++ {
		x := u[j] - offC[j]
		h[j] = x
		if x > H { // not max (slower); a NaN makes its row sums NaN: refused
			H = x
		}
		if r := refC[j]; r > math.Inf(-1) {
			if y := x - r; y > D || y != y {
				D = y
			}
		}
	}
	if nan {
		D = math.NaN()
	}
	if !(math.Abs(H) <= math.MaxFloat64) {
		return H, D, false
	}
	kern{simd: e.simd}.expShift(v[:nc], h, H)
	return H, D, true
}

// rowSums sets sig to the row sums σ_r = Σ_c K_rc e^(h_c − H) of a sweep
// of orientation o on the current epoch and reports whether they are all
// at least scalingMinSum and finite, with H and D as colFactors; the
// column factors go to cf (nil: sc.v). With rg non-nil it also sets the
// row gradient sums rg[r·ng + p] = Σ_c K_rc e^(h_c − H)(row_rk − col_ck)
// for the coordinates k of sc.coords (rows and cols: the sweep's sides;
// ng ≤ 2), in the same pass.
func (e *engine) rowSums(o int, rows, cols side, u, sig, rg, cf []float64) (H, D float64, ok bool) {
	sc := e.sc
	ep := &sc.epochs[sc.cur[o]]
	if cf == nil {
		sc.v = grow(sc.v, cols.n)
		cf = sc.v
	}
	if H, D, ok = e.colFactors(ep, o, u, cf); !ok {
		return H, D, false
	}
	return H, D, e.factorSums(o, rows, cols, sig, rg, cf)
}

// factorSums is rowSums from the column factors cf.
func (e *engine) factorSums(o int, rows, cols side, sig, rg, cf []float64) bool {
	sc := e.sc
	km := &sc.epochs[sc.cur[o]].k[o]
	if rg == nil {
		e.gatherRows(km, [3][]float64{km.val}, 1, cf, gatherDst{out: sig})
	} else {
		kern{simd: e.simd}.setDiffs(km, rows.pts, cols.pts, e.d, sc.coords)
		pl, np := km.planes(km.val, sc.ng)
		e.gatherRows(km, pl, np, cf, gatherDst{lead: sig, rest: rg})
	}
	return kern{simd: e.simd}.inRange(sig, scalingMinSum, math.MaxFloat64)
}

// newEpoch returns an empty epoch for the next absorption, or −1 when the
// stored entries leave no room.
func (sc *scalingState) newEpoch() int {
	if !sc.keep {
		sc.n, sc.stored = 0, 0
	}
	if sc.n == len(sc.epochs) {
		sc.epochs = append(sc.epochs, scalingEpoch{})
	}
	k := sc.n
	sc.n++
	return k
}

// absorb builds a new epoch from the log-domain sweep of orientation o just
// computed (input u, output out) and returns its index, or −1 when the
// kernel cannot be stored or represented (weights beyond e^±700, no room).
// With sweep, the sweep is not yet computed: absorb computes it into out
// (densely, as a dense sweep does), whether or not the epoch is stored;
// every u must then be finite.
func (e *engine) absorb(o int, rows, cols side, u, colPot, out []float64, c consts, sweep bool) int {
	sc := e.sc
	if sc.keep && sc.n == scalingMaxEpochs {
		if sweep {
			e.sweep(forwardJob(rows, cols, u, out, c))
		}
		return -1
	}
	k := sc.newEpoch()
	if !e.fillEpoch(&sc.epochs[k], o, rows, cols, u, colPot, out, c, sc.budget-sc.stored, sweep) {
		sc.n--
		sc.failed++
		if sweep { // out may be incomplete
			e.sweep(forwardJob(rows, cols, u, out, c))
		}
		return -1
	}
	km := &sc.epochs[k].k[o]
	km.transpose(&sc.epochs[k].k[1-o], cols.n)
	e.prepareChain(&sc.epochs[k], o, rows, cols)
	sc.stored += len(km.idx)
	sc.absorbs++
	return k
}

// fillEpoch sets ep to the kernel absorbed from the sweep of absorb and
// reports whether it could (finite offsets, entries below e^700, at most
// budget of them). With sweep (absorb's), pass 1 first computes each row's
// output out_r = −τε·LSE_c(u_c − C_rc/eps) as a dense sweep does (the
// same bits) and takes the row's arguments from that sweep's.
func (e *engine) fillEpoch(ep *scalingEpoch, o int, rows, cols side, u, colPot, out []float64, c consts, budget int, sweep bool) bool {
	sc := e.sc
	nr, nc, d := rows.n, cols.n, e.d
	if !ep.setColOffsets(o, rows, cols, u, colPot, c) || !sweep && !ep.setRowOffsets(o, rows, out, c) {
		return false
	}
	offR, offC := ep.off[o], ep.off[1-o]
	refR, refC := ep.ref[o], ep.ref[1-o]
	topR, topC := ep.top[o], ep.top[1-o]
	kr := kern{simd: e.simd}
	// Problems of at most scalingDenseAbsorb pairs keep every row's
	// arguments from pass 1 for pass 2 (2 MiB at most).
	keepArgs := float64(nr)*float64(nc) <= scalingDenseAbsorb
	rowsArgs := 1
	if keepArgs {
		rowsArgs = nr
	}
	sc.args = grow(sc.args, (rowsArgs+1)*nc)
	ebuf := sc.args[:nc]
	argsOf := func(i int) []float64 {
		if keepArgs {
			return sc.args[(i+1)*nc : (i+2)*nc]
		}
		return sc.args[nc : 2*nc]
	}
	cpts := cols.pts[:nc*d]
	// Pass 1: the row maxima M_r − A_r and the column maxima.
	for j := range topC {
		topC[j] = math.Inf(-1)
	}
	n4 := 0 // the columns of the AVX2 kernels
	if e.simd {
		n4 = nc &^ 3
	}
	outScale := -c.tau * c.eps
	for i := range nr {
		buf := argsOf(i)
		if sweep {
			// The dense sweep's row (lseRow), then the arguments with offC
			// as buf_c = (u_c − C_rc/eps) − ref_c (u finite: ref finite).
			v := ebuf
			out[i] = outScale * kr.lseRow(v, rows.pts[i*d:i*d+d], cpts, u, c.invEps)
			if !ep.setRowOffset(o, i, rows, out[i], c) {
				return false
			}
			if n4 == 0 {
				kr.subMax(buf, v[:nc], refC[:nc])
			}
		} else {
			kr.args(buf, rows.pts[i*d:i*d+d], cpts, offC, c.invEps, 0)
		}
		mr := math.Inf(-1)
		ri := offR[i] + refR[i]
		switch {
		case sweep && n4 > 0: // subMax and rowColMax in one pass
			mr = subRowColMaxAVX2(buf[:n4], ebuf[:n4], refC[:n4], topC[:n4], ri)
			for j := n4; j < nc; j++ {
				buf[j] = ebuf[j] - refC[j]
			}
		case n4 > 0:
			mr = rowColMaxAVX2(buf[:n4], refC[:n4], topC[:n4], ri)
		}
		for j := n4; j < nc; j++ {
			// Comparisons, not max (which orders signed zeros and NaNs and
			// costs branches): the arguments are finite or −Inf here.
			b := buf[j]
			if v := b + refC[j]; v > mr {
				mr = v
			}
			if v := b + ri; v > topC[j] {
				topC[j] = v
			}
		}
		topR[i] = mr // + offR[i] below
	}
	switch {
	case e.symmetric && sc.symmetric > 0:
		sc.chosen = sc.symmetric
	case sc.chosen == 0 && sc.wide > 0 && keepArgs:
		sc.chosen = sc.margin
		if e.wideGrowth(rows.n, cols.n, refC, topR, argsOf) <= scalingWideGrowth {
			sc.chosen = sc.wide
		}
	}
	L := sc.limit(rows.n, cols.n)
	ep.L = L
	sc.topL = grow(sc.topL, nc)
	topL := sc.topL // the column thresholds of pass 2
	for j, t := range topC {
		topL[j] = t - L
	}
	// Pass 2: the selection and the kernel's entries.
	km := &ep.k[o]
	km.diffOK = false
	km.start = grow32(km.start, nr+1)
	km.idx = km.idx[:0]
	km.val = km.val[:0]
	for i := range nr {
		km.start[i] = int32(len(km.idx))
		buf := argsOf(i)
		if !keepArgs {
			kr.args(buf, rows.pts[i*d:i*d+d], cpts, offC, c.invEps, 0)
		}
		cutR := topR[i] - L
		ri := offR[i] + refR[i]
		n0 := len(km.idx)
		km.idx = slices.Grow(km.idx, nc)
		sel := km.idx[n0 : n0+nc]
		kept := 0
		if n4 > 0 {
			kept = selectAVX2(buf[:n4], refC[:n4], topL[:n4], cutR, ri, sel)
		}
		for j := n4; j < nc; j++ {
			if b := buf[j]; b+refC[j] >= cutR || b+ri >= topL[j] {
				sel[kept] = int32(j)
				kept++
			}
		}
		km.idx = km.idx[:n0+kept]
		if len(km.idx) > budget {
			return false
		}
		// The entries' exponents now, their exponentials for the whole
		// kernel at once below (rows are short: one call per row cost a
		// third of the absorption in Experiment C).
		sc.kargs = slices.Grow(sc.kargs[:n0], kept)[:n0+kept]
		if !offsetArgs(sc.kargs[n0:], sel[:kept], buf, offR[i], expHigh-9) {
			return false
		}
		topR[i] += offR[i]
	}
	nnz := len(km.idx)
	km.start[nr] = int32(nnz)
	km.val = grow(km.val, nnz)
	kr.exp(km.val[:nnz], sc.kargs[:nnz])
	km.ncol = nc
	return true
}

// offsetArgs sets dst[k] = off + buf[sel[k]], the exponents of a kernel
// row's entries, and reports whether every one is at most lim (none NaN).
func offsetArgs(dst []float64, sel []int32, buf []float64, off, lim float64) bool {
	dst = dst[:len(sel)]
	ok := true
	for k, j := range sel {
		a := off + buf[j]
		dst[k] = a
		if !(a <= lim) {
			ok = false
		}
	}
	return ok
}

// wideGrowth returns how many more terms of the nr rows (arguments argsOf,
// the nc column factors ref, row maxima top) lie within the wide margin's
// L of their row's maximum than within the standard margin's, as a ratio.
func (e *engine) wideGrowth(nr, nc int, ref, top []float64, argsOf func(int) []float64) float64 {
	sc := e.sc
	lStd, lWide := sc.limitWith(nr, nc, sc.margin), sc.limitWith(nr, nc, sc.wide)
	var std, wide int
	for i := range nr {
		a, b := countAbove(argsOf(i), ref, top[i]-lStd, top[i]-lWide, e.simd)
		std += a
		wide += b
	}
	return float64(wide) / float64(max(std, 1))
}

// countAbove returns the numbers of j with buf[j] + ref[j] ≥ cut1 and
// ≥ cut2, on the AVX2 kernel when simd.
func countAbove(buf, ref []float64, cut1, cut2 float64, simd bool) (n1, n2 int) {
	ref = ref[:len(buf)]
	n4 := 0
	if simd {
		n4 = len(buf) &^ 3
		n1, n2 = count2AVX2(buf[:n4], ref[:n4], cut1, cut2)
	}
	for j := n4; j < len(buf); j++ {
		v := buf[j] + ref[j]
		if v >= cut1 {
			n1++
		}
		if v >= cut2 {
			n2++
		}
	}
	return n1, n2
}

// setColOffsets sizes the offsets, reference factors and maxima of an
// epoch absorbed from the sweep of orientation o (input u; colPot the
// column side's potential), sets the columns' offsets and reference
// factors, and reports whether they are finite (the reference factors may
// be −Inf, for zero weights).
func (ep *scalingEpoch) setColOffsets(o int, rows, cols side, u, colPot []float64, c consts) bool {
	nr, nc := rows.n, cols.n
	size := [2]int{nr, nc} // per side
	if o == 1 {
		size = [2]int{nc, nr}
	}
	for side, n := range size {
		ep.off[side] = grow(ep.off[side], n)
		ep.ref[side] = grow(ep.ref[side], n)
		ep.top[side] = grow(ep.top[side], n)
	}
	offC, refC := ep.off[1-o], ep.ref[1-o]
	for j := range nc {
		offC[j] = colPot[j] * c.invEps
		refC[j] = u[j] - offC[j]
		if !isFinite(offC[j]) || math.IsNaN(refC[j]) || refC[j] == math.Inf(1) {
			return false
		}
	}
	return true
}

// setRowOffsets sets the rows' offsets and reference factors of the epoch
// from the sweep's output out, and reports whether they are finite (as
// setColOffsets).
func (ep *scalingEpoch) setRowOffsets(o int, rows side, out []float64, c consts) bool {
	for i := range rows.n {
		if !ep.setRowOffset(o, i, rows, out[i], c) {
			return false
		}
	}
	return true
}

// setRowOffset is setRowOffsets for row i, whose output is out.
func (ep *scalingEpoch) setRowOffset(o, i int, rows side, out float64, c consts) bool {
	offR, refR := ep.off[o], ep.ref[o]
	scale := -c.tau * c.eps
	offR[i] = -(out / scale)
	refR[i] = out*c.invEps + rows.logw[i] - offR[i]
	return isFinite(offR[i]) && !math.IsNaN(refR[i]) && refR[i] != math.Inf(1)
}

// grow32 is grow for int32 slices.
func grow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// sweepTest is a kernel sweep's exactness test, when it ran: row r passes
// when log σ_r ≥ top_r + lim, with σ_r the row's sum of terms shifted by
// H (the largest column factor's exponent).
type sweepTest struct {
	ran    bool
	H, lim float64
}

// kernelSweep computes the forward sweep of orientation o from the current
// epoch into out and reports whether every row passed the exactness test
// (out is unchanged otherwise), and the test (with sc.lg the rows' log σ).
// The row sums are kept for the backward pass of sweep rec (rec ≥ 0). With
// chain, the column factors come from the pending sweep of the other
// orientation (u is not read); within solve (sc.lazy) a balanced sweep
// that passes leaves its potentials pending (scaling_chain.go).
func (e *engine) kernelSweep(o int, rows, cols side, u, out []float64, c consts, rec int, chain bool) (bool, sweepTest) {
	sc := e.sc
	ep := &sc.epochs[sc.cur[o]]
	nr, nc := rows.n, cols.n
	// A recorded sweep writes its sums and column factors straight into
	// the history (a sweep that fails is recomputed there, or not
	// recorded).
	var sig, rg, cf []float64
	if rec >= 0 && sc.record {
		sig, rg, cf = sc.sigma(rec, nr), sc.gradSums(o, rec, nr), sc.colFactorsOf(rec, nc)
	} else {
		sc.sigs[o] = grow(sc.sigs[o], nr)
		sig = sc.sigs[o][:nr]
	}
	var H, D float64
	var ok bool
	var qmax, dmax float64 // chained: D − H = log(dmax/qmax)
	if chain {
		if cf == nil {
			sc.v = grow(sc.v, nc)
			cf = sc.v
		}
		if qmax, dmax, ok = e.chainedFactors(ep, o, cf[:nc]); ok {
			sc.chained++
			H = math.Log(qmax) - sc.pend[1-o].H
			ok = e.factorSums(o, rows, cols, sig, rg, cf)
		}
	} else {
		H, D, ok = e.rowSums(o, rows, cols, u, sig, rg, cf)
	}
	if !ok || math.IsNaN(D) || D == math.Inf(1) { // D: the largest drift of a column factor
		return false, sweepTest{}
	}
	// Every row's dropped terms must add up to less than 2^-54 of its sum:
	// log σ_r ≥ top_r + lim.
	if sc.lazy && c.tau == 1 {
		// The test on the sums, against e^(lim + t0): without a
		// logarithm where chained.
		var thr float64
		switch b := ep.chain.base[o]; {
		case chain && b >= 0x1p-1022 && b <= math.MaxFloat64:
			thr = b * (dmax / qmax)
		case chain:
			thr = math.Exp(sc.sweepLimit(ep, nc, 0, 0) + ep.chain.t0[o] + math.Log(dmax/qmax))
		default:
			thr = math.Exp(sc.sweepLimit(ep, nc, D, H) + ep.chain.t0[o])
		}
		if chainedTest(kern{simd: e.simd}, ep, o, sig, thr) {
			r := -1
			if rec >= 0 && sc.record {
				r = rec
			}
			sc.pend[o] = pendingSweep{ok: true, out: out[:nr], sig: sig, H: H, k: sc.cur[o], rec: r}
			return true, sweepTest{}
		}
	}
	if chain {
		D = math.Log(dmax) - sc.pend[1-o].H
	}
	lim := sc.sweepLimit(ep, nc, D, H)
	test := sweepTest{ran: true, H: H, lim: lim}
	sc.lg = grow(sc.lg, nr)
	lg := sc.lg[:nr]
	kr := kern{simd: e.simd}
	kr.log(lg, sig)
	return kr.potentials(out[:nr], lg, ep.off[o][:nr], ep.top[o][:nr], -c.tau*c.eps, H, lim), test
}

// sweepLimit is lim of the exactness test of a kernel sweep on ep with nc
// columns, drift D and shift H.
func (sc *scalingState) sweepLimit(ep *scalingEpoch, nc int, D, H float64) float64 {
	return sc.logOf(nc) + sc.bits*math.Ln2 - (ep.L - 1) + D - H
}

// finishRows completes a kernel sweep of orientation o that failed its
// exactness test (kernelSweep's test, which ran): when at most half its
// rows failed, it sets the outputs of the rows that passed as the kernel
// sweep would have and computes the others as a dense sweep does (lseRow,
// the same bits), so that the absorption that follows needs no dense
// sweep of every row. It reports whether it did. The half
// is not tuned: the later absorptions of Experiment C's problems follow
// sweeps that fail in 3–12 of 128 rows, the early ones in all of them.
func (e *engine) finishRows(o int, rows, cols side, u, out []float64, c consts, test sweepTest) bool {
	sc := e.sc
	ep := &sc.epochs[sc.cur[o]]
	nr, nc, d := rows.n, cols.n, e.d
	lg, off, top := sc.lg[:nr], ep.off[o][:nr], ep.top[o][:nr]
	H, lim := test.H, test.lim
	failed := 0
	for i := range nr {
		if lg[i] < top[i]+lim {
			failed++
		}
	}
	if failed > nr/2 {
		return false
	}
	kr := kern{simd: e.simd}
	scale := -c.tau * c.eps
	sc.args = grow(sc.args, nc)
	buf := sc.args[:nc]
	cpts := cols.pts[:nc*d]
	for i := range nr {
		if lg[i] < top[i]+lim {
			out[i] = scale * kr.lseRow(buf, rows.pts[i*d:i*d+d], cpts, u[:nc], c.invEps)
			continue
		}
		out[i] = potential(scale, off[i], H, lg[i])
	}
	sc.partial++
	return true
}

// backInputs are the potentials from which a backward sweep's job.u and
// job.s are formed, u_c = colPot_c/eps + colLogw_c and s_r =
// rowPot_r·invTauEps, where the sweep needs them (not on an epoch's
// kernel).
type backInputs struct {
	colPot, colLogw, rowPot []float64
	invTauEps               float64
}

// fill sets job.u (as solve formed the forward sweep's) and job.s.
func (b backInputs) fill(job *sweepJob, c consts, kr kern) {
	kr.mulAdd(job.u, b.colPot[:len(b.colLogw)], c.invEps, b.colLogw)
	s := job.s
	for i := range s {
		s[i] = b.rowPot[i] * b.invTauEps
	}
}

// backSweep runs the backward pass's weighted sweep job (orientation o:
// rows are side o) of the forward sweep rec: from its epoch on the scaling
// path, on the sparse or dense path otherwise. The job's u and s are
// formed from in where the sweep needs them. It reports whether the
// gradients it set are packed (kernelWeighted with sc.coords).
func (e *engine) backSweep(job sweepJob, sides [2]side, o, rec int, c consts, in backInputs) (packed bool) {
	sc, k := e.sc, int32(-1) // k: the sweep's epoch
	if e.scalingOn {
		k = sc.sweepEpoch[rec]
	}
	if k >= 0 && !sc.culled {
		var inv []float64
		if sc.invOK[rec] {
			inv = sc.invHist[rec*sc.stride : rec*sc.stride+job.nr]
		}
		e.kernelWeighted(&sc.epochs[k], o, job, sc.sigma(rec, job.nr), inv, sc.colFactorsOf(rec, job.nc), sc.gradSums(o, rec, job.nr))
		return sc.coords != nil
	}
	in.fill(&job, c, kern{simd: e.simd})
	if k >= 0 && e.culledWeighted(job, sides, o, k, c) {
		return false
	}
	sj := e.sparseJob(job, sides[o], sides[1-o], -1, rec)
	sj.orient = o // no hints (the references are the forward sweep's log-sum-exps), but a culling to reuse
	e.sweep(sj)
	return false
}

// kernelWeighted computes the normalized weighted sweep job from the epoch
// ep: the weights are e_rc = K_rc·e^(h_c − H)/σ_r with σ_r the forward
// sweep's row sums (sig; inv their reciprocals, when the next forward sweep
// formed them, or nil) and e^(h_c − H) its column factors (cf), that is
// the forward softmax exactly normalized. It sets rowGrad (from the forward
// sweep's gradient sums rg when non-nil), and colSum and colGrad in
// e.colSum, e.colGrad; the gradients hold sc.ng values per point, those
// of the coordinates sc.coords when it is not nil (packed).
func (e *engine) kernelWeighted(ep *scalingEpoch, o int, job sweepJob, sig, inv, cf, rg []float64) {
	sc := e.sc
	ng := sc.ng // coordinates of the gradients (packed with sc.coords)
	nr, nc := job.nr, job.nc
	sc.out = grow(sc.out, nr)
	rf := sc.out[:nr]
	kr := kern{simd: e.simd}
	if inv != nil {
		kr.mul(rf, job.r[:nr], inv)
	} else {
		kr.div(rf, job.r[:nr], sig)
	}
	e.colSum = grow(e.colSum, nc)
	e.colGrad = grow(e.colGrad, nc*e.d)
	rp, cp := job.rows, job.cols
	switch {
	case job.rowGrad == nil:
	case rg != nil:
		kr.scaleRows(job.rowGrad[:nr*ng], rg[:nr*ng], rf, ng)
	default:
		m := &ep.k[o]
		kr.setDiffs(m, rp, cp, e.d, sc.coords)
		sc.gat = grow(sc.gat, ng*nr)
		e.rowGradPass(m, rf, cf, ng, job.rowGrad, sc.gat)
	}
	m := &ep.k[1-o]
	if job.wantColGrad {
		kr.setDiffs(m, cp, rp, e.d, sc.coords)
	}
	e.colPass(m, cf, rf, ng, e.colSum, e.colGrad, job.wantColGrad)
}

// scaleRows sets dst[i·d + k] = f_i·src[i·d + k] for the rows i of f,
// vectorized for d = 1 and 2 when kr.simd.
func (kr kern) scaleRows(dst, src, f []float64, d int) {
	switch d {
	case 1:
		kr.mul(dst, f, src)
	case 2:
		src, dst = src[:2*len(f)], dst[:2*len(f)]
		n2 := 0
		if kr.simd {
			n2 = len(f) &^ 1
			scalePairsAVX2(dst[:2*n2], src[:2*n2], f[:n2])
		}
		for i := n2; i < len(f); i++ {
			fi := f[i]
			dst[2*i], dst[2*i+1] = fi*src[2*i], fi*src[2*i+1]
		}
	default:
		for i, fi := range f {
			for k := range d {
				dst[i*d+k] = fi * src[i*d+k]
			}
		}
	}
}

// gatherDot returns Σ_k a_k·v[cols_k].
func gatherDot(cols []int32, a, v []float64) float64 {
	a = a[:len(cols)]
	var s0, s1, s2, s3 float64
	for len(cols) >= 4 {
		c, x := (*[4]int32)(cols), (*[4]float64)(a)
		s0 += x[0] * v[c[0]]
		s1 += x[1] * v[c[1]]
		s2 += x[2] * v[c[2]]
		s3 += x[3] * v[c[3]]
		cols, a = cols[4:], a[4:]
	}
	for k, j := range cols {
		s0 += a[k] * v[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// rowGradPass sets rowGrad[i] = rf_i·Σ_j K_ij·cf_j·(p_i − q_j) over the
// kernel m whose rows are the sweep's rows (points p; columns q), from
// m.diff; buf holds d values per row.
func (e *engine) rowGradPass(m *csr, rf, cf []float64, d int, rowGrad, buf []float64) {
	if d <= 3 {
		pl, np := m.planes(nil, d)
		e.gatherRows(m, pl, np, cf, gatherDst{out: buf})
		kern{simd: e.simd}.scaleRows(rowGrad[:len(rf)*d], buf[:len(rf)*d], rf, d)
		return
	}
	for i, ri := range rf {
		cols, _ := m.row(i)
		lo := int(m.start[i])
		g := rowGrad[i*d : i*d+d]
		for c := range g {
			g[c] = ri * gatherDot(cols, m.plane(c)[lo:], cf)
		}
	}
}

// colPass sets colSum[j] = cf_j·Σ_i K_ij·rf_i and (with grads)
// colGrad[j] = cf_j·Σ_i K_ij·rf_i·(p_i − q_j) over the kernel m whose rows
// are the sweep's columns q (entries over its rows p; with grads, m.diff
// holds K_ij·(q_j − p_i)).
func (e *engine) colPass(m *csr, cf, rf []float64, d int, colSum, colGrad []float64, grads bool) {
	switch {
	case !grads:
		e.gatherRows(m, [3][]float64{m.val}, 1, rf, gatherDst{lead: colSum, f: cf})
	case d <= 2:
		pl, np := m.planes(m.val, d)
		e.gatherRows(m, pl, np, rf, gatherDst{lead: colSum, rest: colGrad, f: cf, sign: -1})
	default:
		// The column sums as alone (each plane's sums do not depend on the
		// others, so these have the bits of the lead plane's sums of the
		// cases above: the same whichever coordinates are wanted).
		e.gatherRows(m, [3][]float64{m.val}, 1, rf, gatherDst{lead: colSum, f: cf})
		if d == 3 {
			e.sc.gat = grow(e.sc.gat, 3*len(cf))
			pl, np := m.planes(nil, d)
			e.gatherRows(m, pl, np, rf, gatherDst{out: e.sc.gat})
			for j, cj := range cf {
				for c, s := range e.sc.gat[3*j : 3*j+3] {
					colGrad[j*d+c] = -cj * s
				}
			}
			return
		}
		for j, cj := range cf {
			rws, _ := m.row(j)
			lo := int(m.start[j])
			for c := range d {
				colGrad[j*d+c] = -cj * gatherDot(rws, m.plane(c)[lo:], rf)
			}
		}
	}
}
