package ot

import (
	"math"
	"runtime/debug"
)

// Culled absorption: the scaling path for large problems.
//
// Absorbing an epoch as fillEpoch does scans all n·m pairs twice, which
// beyond a few million pairs costs more than the sparse sweeps save. A
// large problem (more than scalingMaxTerms pairs) absorbs from the sparse
// sweeps' culling instead: the column tree is culled for each row leaf at
// the threshold L in place of ln(m) + 54·ln 2 (every term dropped is below
// the row's maximum M_i minus L), and of the candidates each row keeps
// those with k_ij + h⁰_j ≥ M_i − L, M_i being their maximum, which is the
// row's. That is the row criterion of fillEpoch without the column one: the
// epoch is exact for the sweeps of its own orientation only, and each
// orientation has its own (epochs[o]). The acceptance test of a kernel
// sweep is unchanged.
//
// Memory. A problem at 10^5 points in 2-D keeps about 60 entries per row
// (6·10^6, 72 MB per epoch), so no transpose is formed and no epoch is
// kept for the backward pass: each backward sweep takes its epoch from
// epochs[o], absorbing it again, from the stored potentials of the forward
// sweep that absorbed it (absorbedAt), when another one is there. The
// absorption is a deterministic function of those potentials (the culling
// only decides which candidates are looked at; the selection is exact per
// entry), so the epoch is bitwise the one of the forward sweeps. The row
// sums and column factors of each sweep are computed again from it and the
// sweep's own potentials, as the forward pass computed them, and one pass
// over the rows forms the row gradients and scatters the column sums into
// per-block accumulators (kernelBackBlock), summed in block order.

// scalingCulledMaxEntries and scalingCulledPerRow bound the entries of one
// culled epoch: at most scalingCulledPerRow per row of the larger side on
// average, and at most scalingCulledMaxEntries (8·2^20, 96 MiB). Problems
// beyond them finish on the sparse sweeps.
const (
	scalingCulledMaxEntries = 1 << 23
	scalingCulledPerRow     = 128
)

// scalingCulledMaxHistory is the largest history T·(n + m) of an unrolled
// problem that PathAuto solves with culled absorptions (4·2^20 values,
// 32 MiB, n + m = 52 428 at T = 80): beyond it the history and the two
// epochs would take more memory than the package may (at 10^5 points in
// 2-D, 128 MB and 144 MB), and the problem runs on the sparse sweeps, which
// keep only the history.
const scalingCulledMaxHistory = 4 << 20

// scalingCulledHeld is the most entries the culled epochs of a problem
// keep for the next one (24 MiB); larger ones are released.
const scalingCulledHeld = 2 << 20

// heldEntries is the room for entries the epochs hold, both orientations.
func (sc *scalingState) heldEntries() int {
	held := 0
	for k := range sc.epochs {
		held += cap(sc.epochs[k].k[0].val) + cap(sc.epochs[k].k[1].val)
	}
	return held
}

// release drops the epochs when they hold more than limit entries.
func (sc *scalingState) release(limit int) {
	if sc.heldEntries() > limit {
		sc.epochs = nil
		sc.cur, sc.resident = [2]int{-1, -1}, [2]int32{-1, -1}
		// Tens of megabytes just freed: hand them back now rather than
		// when the runtime's scavenger would, so that the history of an
		// unrolled problem that follows (as large) does not come on top
		// of them in the process's resident memory.
		debug.FreeOSMemory()
	}
}

// releaseHistory hands back the history an earlier unrolled problem left
// when it is larger than scalingCulledMaxHistory: a problem on culled
// epochs without one would otherwise hold both (at 10^5 points in 2-D,
// 128 MB and 144 MB). The next unrolled problem allocates it again.
func (e *engine) releaseHistory() {
	if cap(e.fHist)+cap(e.gHist) > scalingCulledMaxHistory {
		e.fHist, e.gHist = nil, nil
		debug.FreeOSMemory()
	}
}

// kernelBlocks is the number of row blocks of a culled backward sweep with
// nr rows: it depends only on the size, so that results do not depend on
// the number of workers.
func kernelBlocks(nr int) int {
	return max(1, min(8, nr/256))
}

// absorbTask is a culled absorption in progress: its epoch, orientation
// and threshold, and whether a block met an entry that cannot be stored.
type absorbTask struct {
	ep   *scalingEpoch
	o    int
	L    float64
	fail [8]bool
}

// backTask is a culled backward sweep in progress: its kernel, the rows'
// factors r_i/σ_i and the column factors, in kernelBlocks(nr) blocks.
type backTask struct {
	m      *csr
	rf, cf []float64
	spans  []int32 // per block (kernelBlocks): the columns it touches, lo and hi
}

// absorbCulled absorbs the epoch of orientation o from the sweep just
// computed (input u, output out, colPot the column side's potential) into
// epochs[o], recording it for the backward pass as absorbed by the forward
// sweep rec; it leaves orientation o without an epoch when it cannot.
func (e *engine) absorbCulled(o int, rows, cols side, u, colPot, out []float64, c consts, rec int) {
	sc := e.sc
	sc.cur[o], sc.resident[o] = -1, -1
	if sc.broken {
		return
	}
	if len(sc.epochs) < 2 {
		sc.epochs = append(sc.epochs, make([]scalingEpoch, 2-len(sc.epochs))...)
	}
	if !e.fillEpochCulled(&sc.epochs[o], o, rows, cols, u, colPot, out, c) {
		sc.failed++
		sc.broken = true
		return
	}
	sc.absorbs++
	id := int32(len(sc.absorbedAt))
	if sc.keep {
		sc.absorbedAt = append(sc.absorbedAt, int32(rec))
		sc.absorbedSum = append(sc.absorbedSum, sc.epochs[o].k[o].checksum())
	}
	sc.cur[o], sc.id[o], sc.resident[o] = o, id, id
}

// fillEpochCulled sets ep to the kernel of orientation o absorbed from the
// culling (see the comment at the top), and reports whether it could
// (finite offsets, entries below e^700, at most sc.budget of them).
func (e *engine) fillEpochCulled(ep *scalingEpoch, o int, rows, cols side, u, colPot, out []float64, c consts) bool {
	sc, sp := e.sc, e.sp
	nr := rows.n
	if !ep.setColOffsets(o, rows, cols, u, colPot, c) || !ep.setRowOffsets(o, rows, out, c) {
		return false
	}
	job := e.sparseJob(sweepJob{rows: rows.pts, cols: cols.pts, nr: nr, nc: cols.n, u: u, invEps: c.invEps}, rows, cols, o, -1)
	nb := len(sp.setBlocks(job.rowTree))
	e.sparseNB = nb
	sp.thr = sc.limit(rows.n, cols.n)
	ep.L = sp.thr
	defer func() { e.phase, e.job, e.absorbing = 0, sweepJob{}, absorbTask{} }()
	if !e.cull(&job, nb) {
		return false
	}
	km := &ep.k[o]
	km.start = grow32(km.start, nr+1)
	e.absorbing = absorbTask{ep: ep, o: o, L: sp.thr}
	e.phase = phaseAbsorbCount
	e.runSparse(nb)
	total := 0
	for i := range nr {
		total += int(km.start[i+1])
		if total > sc.budget || total > math.MaxInt32 {
			return false
		}
		km.start[i+1] = int32(total)
	}
	km.start[0] = 0
	// A quarter more room than asked: the next absorption, a little
	// larger, need not allocate again.
	if cap(km.val) < total {
		room := min(total+total/4, sc.budget)
		km.idx, km.val = make([]int32, total, room), make([]float64, total, room)
	}
	km.idx, km.val = km.idx[:total], km.val[:total]
	km.ncol, km.diffOK = cols.n, false
	e.phase = phaseAbsorbFill
	e.runSparse(nb)
	for _, f := range e.absorbing.fail[:nb] {
		if f {
			return false
		}
	}
	ep.spans = blockSpans(ep.spans, km, kernelBlocks(nr))
	return true
}

// absorbBlock runs the rows of block b of the current culled absorption:
// it counts each row's entries into km.start[i+1], with fill writes them.
func (e *engine) absorbBlock(w, b int, fill bool) {
	sp, job, d := e.sp, &e.job, e.d
	t := &e.absorbing
	rt, ct := job.rowTree, job.colTree
	blk := &sp.blocks[b]
	scr := e.scratch(w)
	kr := kern{simd: e.simd}
	ep, o := t.ep, t.o
	km := &ep.k[o]
	offR, topR := ep.off[o], ep.top[o]
	offC, refC := ep.off[1-o], ep.ref[1-o]
	half := len(e.bufs[w]) / 2
	for li := blk.leafLo; li < blk.leafHi; li++ {
		leaf := rt.leafs[li]
		lo, hi := int(rt.nodes[leaf].lo), int(rt.nodes[leaf].hi)
		ranges := blk.ranges[blk.off[li-blk.leafLo]:blk.off[li-blk.leafLo+1]]
		// The candidates: one range is used in place, several are gathered
		// (padded with columns of factor −Inf and index −1).
		var cols, offs, refs []float64
		var idx []int32
		c0 := 0
		switch {
		case len(ranges) == 2:
			c0 = int(ranges[0])
			c1 := int(ranges[1])
			cols, offs, refs = ct.pts[c0*d:c1*d], offC[c0:c1], refC[c0:c1]
		case len(ranges) > 2:
			cols, offs, idx = scr.gather(ranges, ct.pts, offC, d)
			scr.cs = grow(scr.cs, len(idx))
			refs = scr.cs
			for k, j := range idx {
				refs[k] = math.Inf(-1)
				if j >= 0 {
					refs[k] = refC[j]
				}
			}
		}
		nca := len(offs)
		buf := e.bufs[w][:nca]
		ebuf := e.bufs[w][half : half+nca]
		scr.absorbScratch(nca)
		for i := lo; i < hi; i++ {
			if nca > 0 {
				kr.args(buf, job.rows[i*d:i*d+d], cols, offs, job.invEps, 0)
			}
			mr, kept := e.selectRow(buf, refs, t.L, scr)
			if !(math.Abs(mr) <= math.MaxFloat64) {
				// No finite term (a row whose candidates all have zero
				// weight): the epoch cannot hold the row.
				t.fail[b] = true
				km.start[i+1] = 0
				continue
			}
			if !fill {
				km.start[i+1] = int32(kept)
				topR[i] = mr + offR[i]
				continue
			}
			p := int(km.start[i])
			for k, s := range scr.sel[:kept] {
				j := int32(c0) + s
				if idx != nil {
					j = idx[s]
				}
				km.idx[p+k] = j
				v := offR[i] + buf[s]
				if !(v <= expHigh-9) {
					t.fail[b] = true
				}
				ebuf[k] = v
			}
			kr.exp(km.val[p:p+kept], ebuf[:kept])
		}
	}
}

// absorbScratch sizes the scratch of selectRow for n candidates.
func (scr *sparseScratch) absorbScratch(n int) {
	if cap(scr.sel) < n {
		scr.sel = make([]int32, n)
	}
	scr.sel = scr.sel[:n]
	scr.junk = grow(scr.junk, n)
	if len(scr.inf) < n {
		scr.inf = make([]float64, n)
		for k := range scr.inf {
			scr.inf[k] = math.Inf(1)
		}
	}
}

// selectRow returns the largest of the terms buf[k] + ref[k] of a row of a
// culled absorption, M, and writes to scr.sel, in order, the positions k
// with buf[k] + ref[k] ≥ M − L, returning their number.
func (e *engine) selectRow(buf, ref []float64, L float64, scr *sparseScratch) (M float64, kept int) {
	n := len(buf)
	n4 := 0
	if e.simd {
		n4 = n &^ 3
	}
	M = math.Inf(-1)
	if n4 > 0 { // the column maxima go to scr.junk
		M = rowColMaxAVX2(buf[:n4], ref[:n4], scr.junk[:n4], 0)
	}
	for k := n4; k < n; k++ {
		if v := buf[k] + ref[k]; v > M {
			M = v
		}
	}
	cut := M - L
	sel := scr.sel[:n]
	if n4 > 0 { // no column criterion: buf[k] + 0 ≥ +Inf never holds
		kept = selectAVX2(buf[:n4], ref[:n4], scr.inf[:n4], cut, 0, sel)
	}
	for k := n4; k < n; k++ {
		if buf[k]+ref[k] >= cut {
			sel[kept] = int32(k)
			kept++
		}
	}
	return M, kept
}

// culledWeighted runs the backward sweep job of orientation o on the culled
// epoch id, absorbing it again into epochs[o] when another is there, and
// reports false (having written nothing) when it cannot: the caller then
// runs the sweep on the sparse path.
func (e *engine) culledWeighted(job sweepJob, sides [2]side, o int, id int32, c consts) bool {
	sc := e.sc
	rows, cols := sides[o], sides[1-o]
	if sc.resident[o] != id {
		sc.resident[o] = -1
		colPot, out := e.sweepPotentials(o, int(sc.absorbedAt[id]), sides)
		sc.u0 = grow(sc.u0, cols.n)
		u := sc.u0 // the forward sweep's u, formed as solve formed it
		kern{simd: e.simd}.mulAdd(u, colPot[:cols.n], c.invEps, cols.logw)
		if !e.fillEpochCulled(&sc.epochs[o], o, rows, cols, u, colPot, out, c) {
			return false
		}
		sc.reabsorbs++
		if sc.epochs[o].k[o].checksum() != sc.absorbedSum[id] {
			sc.mismatches++ // not the forward sweeps' kernel (a defect): the sparse path
			return false
		}
		sc.resident[o] = id
	}
	ep := &sc.epochs[o]
	sc.cur[o] = o
	nr, nc, d := job.nr, job.nc, e.d
	sc.sigs[o] = grow(sc.sigs[o], nr)
	sig := sc.sigs[o][:nr]
	if _, _, ok := e.rowSums(o, rows, cols, job.u, sig, nil, nil); !ok {
		return false
	}
	sc.out = grow(sc.out, nr)
	rf := sc.out[:nr]
	kern{simd: e.simd}.div(rf, job.r[:nr], sig)
	nb := kernelBlocks(nr)
	km := &ep.k[o]
	t := &e.backKernel
	*t = backTask{m: km, rf: rf, cf: sc.v[:nc], spans: ep.spans}
	e.colSum = grow(e.colSum, nc)
	e.colGrad = grow(e.colGrad, nc*d)
	e.blkSum = grow(e.blkSum, nb*nc)
	if job.wantColGrad {
		e.blkGrad = grow(e.blkGrad, nb*nc*d)
	}
	e.job = job
	e.phase = phaseKernelBack
	e.sparseNB = nb
	e.runSparse(nb)
	e.sumColumns(nb, nc, func(b int) (int, int) { return int(t.spans[2*b]), int(t.spans[2*b+1]) }, true, job.wantColGrad)
	e.phase, e.job = 0, sweepJob{}
	*t = backTask{}
	return true
}

// checksum returns a hash of m's entries (columns and values, row by row)
// that tells the kernel absorbed again in the backward pass from the
// forward pass's.
func (m *csr) checksum() uint64 {
	const prime = 1099511628211
	h := uint64(len(m.start))
	for _, s := range m.start {
		h = (h ^ uint64(s)) * prime
	}
	for k, j := range m.idx {
		h = (h ^ uint64(j) ^ math.Float64bits(m.val[k])<<1) * prime
	}
	return h
}

// blockSpans returns, in spans, the range of columns of m touched by each
// of nb blocks of rows (blockRange), lo and hi in turn.
func blockSpans(spans []int32, m *csr, nb int) []int32 {
	spans = spans[:0]
	nr := len(m.start) - 1
	for b := range nb {
		lo, hi := blockRange(b, nb, nr)
		cl, ch := int32(math.MaxInt32), int32(-1)
		for _, j := range m.idx[m.start[lo]:m.start[hi]] {
			cl = min(cl, j)
			ch = max(ch, j)
		}
		if ch < 0 {
			cl, ch = 0, -1
		}
		spans = append(spans, cl, ch+1)
	}
	return spans
}

// sweepPotentials returns the column side's potential and the output of
// the forward sweep rec (orientation o = rec mod 2) of the problem sides,
// from the stored history.
func (e *engine) sweepPotentials(o, rec int, sides [2]side) (colPot, out []float64) {
	np, nq := sides[0].n, sides[1].n
	t := rec/2 + 1
	ft := e.fHist[(t-1)*np : t*np]
	if o == 0 {
		return e.gHist[(t-1)*nq : t*nq], ft
	}
	return ft, e.gHist[t*nq : (t+1)*nq]
}

// kernelBackBlock runs block b of the current culled backward sweep: for
// its rows i, with weights w_ij = K_ij·cf_j (cf the column factors),
//
//	rowGrad_i = rf_i·Σ_j w_ij (x_i − y_j)  (if job.rowGrad != nil),
//
// and the block's column accumulators Σ_i rf_i·w_ij and (with
// job.wantColGrad) Σ_i rf_i·w_ij (x_i − y_j), with rf_i = r_i/σ_i.
func (e *engine) kernelBackBlock(w, b int) {
	job, t, d := &e.job, &e.backKernel, e.d
	m := t.m
	nr, nc := job.nr, job.nc
	lo, hi := blockRange(b, len(t.spans)/2, nr)
	cl, ch := int(t.spans[2*b]), int(t.spans[2*b+1])
	bs := e.blkSum[b*nc : (b+1)*nc]
	clear(bs[cl:ch])
	var bg []float64
	if job.wantColGrad {
		bg = e.blkGrad[b*nc*d : (b+1)*nc*d]
		clear(bg[cl*d : ch*d])
	}
	rows, cols, rf, cf := job.rows, job.cols, t.rf, t.cf
	if d == 2 {
		for i := lo; i < hi; i++ {
			a, z := m.start[i], m.start[i+1]
			idx, val := m.idx[a:z], m.val[a:z:z]
			ri := rf[i]
			x0, x1 := rows[2*i], rows[2*i+1]
			var g0, g1 float64
			for k, j := range idx {
				wt := val[k] * cf[j]
				d0, d1 := x0-cols[2*j], x1-cols[2*j+1]
				g0 += wt * d0
				g1 += wt * d1
				s := ri * wt
				bs[j] += s
				if bg != nil {
					bg[2*j] += s * d0
					bg[2*j+1] += s * d1
				}
			}
			if job.rowGrad != nil {
				job.rowGrad[2*i], job.rowGrad[2*i+1] = ri*g0, ri*g1
			}
		}
		return
	}
	scr := e.scratch(w)
	scr.res = grow(scr.res, 2*d)
	g, dx := scr.res[:d], scr.res[d:2*d]
	for i := lo; i < hi; i++ {
		a, z := m.start[i], m.start[i+1]
		idx, val := m.idx[a:z], m.val[a:z:z]
		ri := rf[i]
		x := rows[i*d : i*d+d]
		clear(g)
		for k, j := range idx {
			wt := val[k] * cf[j]
			y := cols[int(j)*d : int(j)*d+d]
			s := ri * wt
			bs[j] += s
			for c := range d {
				dx[c] = x[c] - y[c]
				g[c] += wt * dx[c]
			}
			if bg != nil {
				for c := range d {
					bg[int(j)*d+c] += s * dx[c]
				}
			}
		}
		if job.rowGrad != nil {
			for c := range d {
				job.rowGrad[i*d+c] = ri * g[c]
			}
		}
	}
}
