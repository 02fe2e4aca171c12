package ot

import "math"

// sweepJob describes one pass over all (row, column) pairs of a problem. Row
// points and column points are row-major with the engine's dimension d.
//
// An lse job computes out[i] = outScale·LSE_j(u[j] − C_ij·invEps).
//
// A weighted job uses e_ij = e^(u[j] + s[i] − C_ij·invEps) and computes
//
//	out[i]          = Σ_j e_ij                 (if out != nil)
//	rowGrad[i,k]    = r[i]·Σ_j e_ij (row_ik − col_jk)  (if rowGrad != nil)
//	colSum[j]       = Σ_i r[i]·e_ij             (if wantColSum)
//	colGrad[j,k]    = Σ_i r[i]·e_ij (row_ik − col_jk) (if wantColGrad)
//
// Rows with r[i] == 0 are skipped when out is nil.
type sweepJob struct {
	weighted    bool
	rows, cols  []float64
	nr, nc      int
	u, s, r     []float64
	invEps      float64
	outScale    float64
	out         []float64
	rowGrad     []float64
	wantColSum  bool
	wantColGrad bool
	nb          int

	// The sparse path (sparse.go): the trees of the rows and columns (nil
	// on the dense path), whether s[i] = −LSE_i (the backward pass), and
	// the rows' hint columns.
	rowTree, colTree *kdTree
	normalized       bool
	hint             []int32
	rec              int     // the forward sweep's record index, or −1
	orient           int     // its orientation (0: rows p), −1 for none: the culling it may reuse
	spans            []int32 // per row: the span of its candidates (a record)
}

// sparseJob adds to job the trees of the row and column sides and, for
// orient ≥ 0, the hints of that orientation (0: rows p, 1: rows q) of the
// problem being solved, and the index rec of the forward sweep's record
// (−1 for none); it returns job unchanged on the dense path.
func (e *engine) sparseJob(job sweepJob, rows, cols side, orient, rec int) sweepJob {
	if !e.sparseOn {
		return job
	}
	job.rowTree, job.colTree = rows.tree, cols.tree
	job.rec, job.orient = rec, orient
	if orient >= 0 {
		job.hint = e.sp.hint(orient, job.nr)
	}
	return job
}

// sweep runs the job, on several goroutines when the problem is large.
func (e *engine) sweep(job sweepJob) {
	if e.halted {
		return // the evaluation was stopped: its results are discarded
	}
	if e.onGrid {
		e.gridSweep(job)
		return
	}
	if job.rowTree != nil && e.sparseSweep(&job) {
		return
	}
	job.nb = numBlocks(job.nr)
	e.job = job
	needCols := job.weighted && (job.wantColSum || job.wantColGrad)
	if needCols {
		e.blkSum = grow(e.blkSum, job.nb*job.nc)
		e.blkGrad = grow(e.blkGrad, job.nb*job.nc*e.d)
		e.colSum = grow(e.colSum, job.nc)
		e.colGrad = grow(e.colGrad, job.nc*e.d)
	}
	if job.rowGrad != nil {
		clear(job.rowGrad[:job.nr*e.d])
	}
	if e.pool.workers > 1 && float64(job.nr)*float64(job.nc) >= float64(e.parallelMin) {
		e.pool.do()
	} else {
		for b := 0; b < job.nb; b++ {
			e.block(0, b)
		}
	}
	// The blocks stop early once the context is done (a dense sweep of
	// 40 000 × 40 000 points takes seconds): record it, so that the
	// evaluation ends with its interruption and the partial sweep is never
	// a result.
	e.halt()
	if needCols {
		nc, d := job.nc, e.d
		if job.wantColSum {
			cs := e.colSum[:nc]
			copy(cs, e.blkSum[:nc])
			for b := 1; b < job.nb; b++ {
				for j, v := range e.blkSum[b*nc : (b+1)*nc] {
					cs[j] += v
				}
			}
		}
		if job.wantColGrad {
			cg := e.colGrad[:nc*d]
			copy(cg, e.blkGrad[:nc*d])
			for b := 1; b < job.nb; b++ {
				for j, v := range e.blkGrad[b*nc*d : (b+1)*nc*d] {
					cg[j] += v
				}
			}
		}
	}
	e.job = sweepJob{}
}

// worker processes the blocks w, w+W, w+2W, ... of the current job.
func (e *engine) worker(w int) {
	if e.gather.m != nil {
		e.gatherChunk(w)
		return
	}
	if e.phase != 0 {
		for b := w; b < e.sparseNB; b += e.pool.workers {
			e.sparseBlock(w, b)
		}
		return
	}
	for b := w; b < e.job.nb; b += e.pool.workers {
		e.block(w, b)
	}
}

// block processes the rows of block b with the row buffer of worker w.
func (e *engine) block(w, b int) {
	job := &e.job
	d := e.d
	k := kern{simd: e.simd}
	half := len(e.bufs[w]) / 2
	buf := e.bufs[w][:job.nc]
	ebuf := e.bufs[w][half : half+job.nc]
	lo, hi := blockRange(b, job.nb, job.nr)
	u := job.u[:job.nc]
	cols := job.cols[:job.nc*d]
	// At its start and every stride rows (about stopCheckTerms terms)
	// after it, the block checks the context, and leaves the rest of its
	// rows once it is done.
	stride := max(1, stopCheckTerms/job.nc)
	next := lo
	if !job.weighted {
		for i := lo; i < hi; i++ {
			if i == next {
				if e.stopping() {
					return
				}
				next += stride
			}
			job.out[i] = job.outScale * k.lseRow(buf, job.rows[i*d:i*d+d], cols, u, job.invEps)
		}
		return
	}
	var colSum, colGrad []float64
	if job.wantColSum {
		colSum = e.blkSum[b*job.nc : (b+1)*job.nc]
		clear(colSum)
	}
	if job.wantColGrad {
		colGrad = e.blkGrad[b*job.nc*d : (b+1)*job.nc*d]
		clear(colGrad)
	}
	for i := lo; i < hi; i++ {
		if i == next {
			if e.stopping() {
				return
			}
			next += stride
		}
		r := 1.0
		if job.r != nil {
			r = job.r[i]
		}
		if r == 0 && job.out == nil {
			continue // contributes nothing (rowGrad was cleared)
		}
		p := job.rows[i*d : i*d+d]
		s := 0.0
		if job.s != nil {
			s = job.s[i]
		}
		mx := k.args(buf, p, cols, u, job.invEps, s)
		if job.normalized && mx > renormalizeAbove {
			// The stored potential's rounding exceeds eps (points far
			// apart for their eps): its shift leaves the weights far from
			// summing to 1, and they would overflow. Normalize the row's
			// softmax exactly instead.
			mx = renormalize(k, buf[:job.nc], ebuf[:job.nc], mx)
		}
		var rg []float64
		if job.rowGrad != nil {
			rg = job.rowGrad[i*d : i*d+d]
		}
		sum := k.expWeighted(buf, ebuf, mx, p, cols, r, rg, colSum, colGrad)
		for c := range rg {
			rg[c] *= r
		}
		if job.out != nil {
			job.out[i] = sum
		}
	}
}

// stopCheckTerms is about how many kernel terms a sweep's block evaluates
// between checks of the context: tens of microseconds.
const stopCheckTerms = 1 << 16

// grow returns s resized to n, reallocating only when the capacity is short.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// isFinite reports whether v is neither infinite nor NaN.
func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// renormalizeAbove is the largest shifted argument a normalized weighted
// row may have before its weights are renormalized: exactly normalized
// weights have arguments ≤ 0, and rounding leaves them within a few ulps
// of it.
const renormalizeAbove = 0.5

// renormalize shifts the arguments of a row (largest mx) so that their
// exponentials sum to 1, and returns the new largest argument.
func renormalize(k kern, args, ebuf []float64, mx float64) float64 {
	for j := range args {
		args[j] -= mx
	}
	k.exp(ebuf, args)
	sum := 0.0
	for _, e := range ebuf {
		sum += e
	}
	l := math.Log(sum)
	for j := range args {
		args[j] -= l
	}
	return -l
}
