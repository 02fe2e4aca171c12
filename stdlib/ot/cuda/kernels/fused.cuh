// Fused kernel (issue 15): one thread block solves one Sinkhorn problem
// from start to end (every iteration, the dual value and the gradient, in
// either mode) in a single launch, and one launch solves a batch of
// problems, one block each. Included by sinkhorn.cu, whose conventions it
// follows: the arithmetic of every term is that of the multi-launch kernels
// above (and so of package ot); the sums are taken in another order
// (segments, culling blocks, row maxima shared by segments), so the two paths
// differ by rounding only.
//
// A problem is described by FD_WORDS 8-byte words (fusedDesc in fused.go
// writes them; the host kernels print FD_WORDS so that the Go test checks
// the two agree). Pointers are device addresses; 0 means "not wanted".
// Every block works in the problem's own buffers: the potentials (F, G:
// the whole history f^1..f^T and g^0..g^T with the unrolled gradient, else
// the current f and g) and the outputs (SCAL: three value sums, and the
// gradients GP, GQ, GLP, GLQ, which the kernel zeroes first). Problems of
// one launch never share an output, so blocks need no synchronization
// with each other; the symmetric problems (x–x, y–y) pass the same arrays
// for both sides, which the block updates in sequence.
//
// Inside a block the sweeps over rows are split among the threads: row i
// of a sweep over nr rows is reduced by S = 2^segsLog(nr) threads of one
// warp, thread s over the columns j ≡ s (mod S) of each culling block (see
// FUSED_CB), and the first of them combines the S partial results in
// segment order, so results do not depend on scheduling. Sweeps over
// columns are computed the same way with rows and columns exchanged.
//
// Truncation. With FT_TERMS the sweeps skip the exp of every term below
// e^−thr times the sum's reference (fusedThr): the dropped terms of a sum
// of at most N terms total less than 2^−54 of it, half an ulp; with
// FT_BLOCKS they also skip the culling blocks whose every term would be
// skipped (fusedCut), which changes no result. The log-sum-exps use the
// row's maximum as the reference, or a term of the row (see fusedLSE);
// the sweeps of the unrolled backward pass use 1, the sum of each row's
// normalized terms (e_rc = exp(u_c − C_rc/ε + s_r) with s_r = −LSE_c(u_c −
// C_rc/ε)); the column sums of those sweeps, Σ_r rfac_r·e_rc, then carry an
// absolute error below 2^−54·max|rfac|, the bound package ot's sparse
// sweeps state. The caller orders both measures in space (fused.go), so
// that the threads of a warp, which work on neighbouring rows and
// neighbouring columns, skip the same steps; the envelope gradient's sweeps
// (rows not normalized) never truncate.
//
// A problem on a unit grid (FD_GRID_H > 0: Experiment D's images) takes
// package ot's separable grid path instead (fusedGridLSE,
// fusedGridWeighted), in the caller's row-major order.
//
// Dynamic shared memory: fusedShared in fused.go, the layout of fusedBody.

enum : int {
	FD_P,        // points of the first measure (n×d)
	FD_Q,        // points of the second measure (m×d)
	FD_LP,       // log-weights of the first measure (n)
	FD_LQ,       // log-weights of the second measure (m)
	FD_N,        // n
	FD_M,        // m
	FD_D,        // d, 1 to 3
	FD_ITERS,    // T
	FD_EPS,      // eps (bits of a double)
	FD_RHO,      // rho (bits of a double; unused when balanced)
	FD_BALANCED, // 1 when balanced
	FD_MODE,     // FM_NONE, FM_UNROLLED or FM_ENVELOPE
	FD_SIGMA,    // the gradient's scale (bits of a double)
	FD_F,        // f: T·n (unrolled) or n doubles
	FD_G,        // g: (T+1)·m (unrolled) or m doubles
	FD_SCAL,     // 3 doubles: the value sums (value_part's slots)
	FD_GP,       // gradient with respect to P (n×d) or 0
	FD_GQ,       // gradient with respect to Q (m×d) or 0
	FD_GLP,      // gradient with respect to LP (n) or 0
	FD_GLQ,      // gradient with respect to LQ (m) or 0
	FD_THREADS,  // the problem's thread count nt ≤ blockDim.x (see fusedBody)
	FD_TRUNC,    // FT_* flags: drop the terms (and blocks of terms) that cannot change a sum
	FD_GRID_H,   // H of a unit grid (see fusedGridLSE), or 0: scattered points
	FD_GRID_W,   // W of the grid
	FD_STAGE,    // 1: the unrolled backward pass stages the history in shared memory
	FD_PAIR,     // 1: the unrolled backward pass pairs its sweeps (see fusedSweeps)
	FD_PIVOT,    // 1: the forward sweeps sum in one pass from a pivot (see fusedLSE)
	FD_PREFILL,  // 1: a second set of sweep arrays; with FD_PAIR, the backward pass's fills run beside sweeps
	FD_WORDS
};

enum : int { FM_NONE = 0, FM_UNROLLED = 1, FM_ENVELOPE = 2 };

// The flags of FD_TRUNC: FT_TERMS skips the exp of every term below the
// threshold (fusedThr), FT_BLOCKS also skips the culling blocks whose terms
// all are (it needs FT_TERMS and changes no result: see fusedCut).
enum : int { FT_TERMS = 1, FT_BLOCKS = 2 };

// FUSED_MAXSEG is the largest number of threads reducing one row.
#define FUSED_MAXSEG 8

// FUSED_MAX_THREADS is the largest block of the fused kernel
// (fusedMaxThreads in fused.go), for which the compiler fits the registers.
#define FUSED_MAX_THREADS 512

// FUSED_CB is the number of points of a culling block: the points of a
// side, in the caller's (spatial) order, are cut in blocks of FUSED_CB,
// each with its bounding box, and a sweep skips the blocks whose every term
// is provably below its threshold (see fusedCut). It is the warp size, so
// that the lanes of a warp fill one block's terms.
#define FUSED_CB 32

// FUSED_IDLE_TID is the index fusedBody gives the threads of a block beyond
// its problem's thread count: past every loop of the sweeps, which index
// with 32-bit integers (it leaves room for the row and column offsets
// added to it).
#define FUSED_IDLE_TID 0x1fffffff

// FUSED_SCR is the number of doubles of scratch per thread: a segment's
// partial results (a maximum, a sum and an argmax column, or a sum and
// D ≤ 3 gradient sums).
#define FUSED_SCR 4

// asDouble reinterprets a descriptor word as a double.
__device__ __forceinline__ double asDouble(uint64_t w) {
#ifdef __CUDACC__
	return __longlong_as_double((long long)w);
#else
	double v;
	memcpy(&v, &w, sizeof v);
	return v;
#endif
}

// asBits is the bits of x (the inverse of asDouble).
__device__ __forceinline__ uint64_t asBits(double x) {
#ifdef __CUDACC__
	return (uint64_t)__double_as_longlong(x);
#else
	uint64_t w;
	memcpy(&w, &x, sizeof w);
	return w;
#endif
}

__device__ __forceinline__ double *asPtr(uint64_t w) { return (double *)(uintptr_t)w; }

// syncWarp orders the shared-memory accesses of the lanes of a warp (all
// 32 call it). The host shim runs it as a barrier of the block, which is
// stronger: every thread of the fused kernel calls it equally often.
__device__ __forceinline__ void syncWarp() {
#ifdef __CUDACC__
	__syncwarp();
#else
	__syncthreads();
#endif
}

// stageCommit closes the thread's copies started by stageCopy since the
// last, and stageWait waits for all of them (a barrier must follow before
// other threads read their destination). The host shim's copies land at
// the wait (shm_async_copy).
__device__ __forceinline__ void stageCommit() {
#ifdef __CUDACC__
	asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void stageWait() {
#ifdef __CUDACC__
	asm volatile("cp.async.wait_all;\n" ::: "memory");
#else
	shm_async_wait();
#endif
}

// segsLog is the base-2 logarithm of the number S of threads reducing each
// of nout rows in a block of nt threads: S is the largest power of two
// ≤ FUSED_MAXSEG with S·nout ≤ nt (at least 1).
__device__ __forceinline__ int segsLog(int nout, int nt) {
	int l = 0;
	while ((1 << l) < FUSED_MAXSEG && (2 << l) * nout <= nt) {
		l++;
	}
	return l;
}

__device__ __forceinline__ int64_t nblocks(int64_t n) { return (n + FUSED_CB - 1) / FUSED_CB; }

// fsd is one side of a problem as its block sees it: the points (in shared
// memory), their global log-weights, the bounding boxes of its culling
// blocks (box[B·2D + k] is block B's lower bound in coordinate k,
// box[B·2D + D + k] its upper bound), and the number of points.
struct fsd {
	const double *pts, *logw, *box;
	int64_t n;
};

// blk is a thread's view of its block: its index (past every loop for the
// threads beyond the problem's count), the problem's thread count, its lane,
// the shared arrays, and whether the sweeps may truncate.
struct blk {
	int64_t tid, nt;
	int lane;
	double *u, *s, *rf; // column terms, row shifts, row factors
	double *bu, *bs;    // block maxima of u and s
	double *scr;        // FUSED_SCR doubles per thread
	bool trunc, cull;   // FT_TERMS and FT_BLOCKS
	int64_t gh, gw;     // the grid (gh = 0: none)
	double *gs;         // a grid problem's scratch (see fusedGridLSE)
};

// stageCopy starts copying the n doubles of the global src to the shared
// dst, each thread its elements. On the GPU the copies are asynchronous
// (cp.async, compute capability 8.0), so that their latency overlaps the
// sweeps.
__device__ __forceinline__ void stageCopy(double *dst, const double *src, int64_t n, const blk &b) {
	for (int64_t i = b.tid; i < n; i += b.nt) {
#ifdef __CUDACC__
		const unsigned d = (unsigned)__cvta_generic_to_shared(dst + i);
		asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(d), "l"(src + i) : "memory");
#else
		shm_async_copy(dst + i, src + i);
#endif
	}
}

// fusedThr is the truncation threshold of a sum of at most nterms terms:
// ln(nterms) + 54·ln 2 (infinite without truncation).
__device__ __forceinline__ double fusedThr(bool trunc, int64_t nterms) {
	return trunc ? log((double)nterms) + 54 * 0.69314718055994530942 : INFINITY;
}

// lseOut is lse_fin's result for the combined maximum mx and sum s.
__device__ __forceinline__ double lseOut(double mx, double s, double outScale) {
	if (mx == INFINITY || mx == -INFINITY) {
		return outScale * mx;
	}
	return outScale * (mx + log(s));
}

// boxDist2 is the squared distance from p to block B's box, computed as
// sqdist computes a squared distance: for a point q of the box, every
// coordinate's difference is at least the box's in magnitude, and the
// rounded operations are monotone, so boxDist2 ≤ sqdist(p, q) as computed.
template <int D>
__device__ __forceinline__ double boxDist2(const double *p, const double *box, int64_t B) {
	const double *lo = box + B * 2 * D, *hi = lo + D;
	double c = 0;
	for (int k = 0; k < D; k++) {
		double t = 0;
		if (p[k] < lo[k]) {
			t = lo[k] - p[k];
		} else if (p[k] > hi[k]) {
			t = p[k] - hi[k];
		}
		c += t * t;
	}
	return c;
}

// fusedCut reports whether a culling block whose terms are at most bound
// (computed from operands of magnitude at most scale) may be skipped
// because each of its terms, as the sweep computes it, lies below cut. The
// margin covers the rounding of the bound (and a contraction into fused
// multiply-adds that differs from the term's): culling never drops a term
// the sweep would keep, so it changes no result.
__device__ __forceinline__ bool fusedCut(double bound, double cut, double scale) {
	return bound < cut - 1 - 1e-9 * scale;
}

// nanMax is the larger of a and b, NaN when either is: a NaN term is never
// culled.
__device__ __forceinline__ double nanMax(double a, double b) { return (b > a || b != b) ? b : a; }

// warpMax is the maximum (nanMax) of a[j..j+FUSED_CB) (up to n) in lane 0
// of the warp whose lane 0 holds index j (a multiple of FUSED_CB); lane l
// holds v = a[j + l] (−∞ beyond n). All lanes call it. On the GPU the
// lanes reduce by shuffles; the host shim has lane 0 read the block
// (nanMax is exact and order-independent: the same result).
__device__ __forceinline__ double warpMax(const blk &b, double v, const double *a, int64_t j, int64_t n) {
#ifdef __CUDACC__
	(void)a;
	(void)b;
	(void)j;
	(void)n;
	for (int off = 16; off > 0; off /= 2) {
		v = nanMax(v, __shfl_xor_sync(0xffffffffu, v, off));
	}
	return v;
#else
	(void)v;
	syncWarp();
	double m = -INFINITY;
	if (b.lane == 0 && j < n) {
		const int64_t j1 = min64(n, j + FUSED_CB);
		for (int64_t c = j; c < j1; c++) {
			m = nanMax(m, a[c]);
		}
	}
	return m;
#endif
}

// warpBlockMax sets bm[j/FUSED_CB] to warpMax(b, v, a, j, n).
__device__ __forceinline__ void warpBlockMax(const blk &b, double v, const double *a, int64_t j, int64_t n,
                                             double *bm) {
	const double m = warpMax(b, v, a, j, n);
	if (b.lane == 0 && j < n) {
		bm[j / FUSED_CB] = m;
	}
}

// The forward sweeps keep the block maxima of their column terms as keys:
// unsigned integers in the order of the doubles (NaN above all, 0 below
// −∞), so that the rows of a sweep, which are the next sweep's columns,
// can fold their terms into the next sweep's maxima with atomicMaxKey in
// any order. maxKey and keyMax convert.
__device__ __forceinline__ uint64_t maxKey(double x) {
	if (x != x) {
		return ~(uint64_t)0;
	}
	const uint64_t u = asBits(x);
	return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

__device__ __forceinline__ double keyMax(uint64_t k) {
	if (k == ~(uint64_t)0) {
		return NAN;
	}
	return asDouble((k >> 63) ? k & ~((uint64_t)1 << 63) : ~k);
}

// atomicMaxKey sets *a to the larger of *a and k.
__device__ __forceinline__ void atomicMaxKey(uint64_t *a, uint64_t k) {
#ifdef __CUDACC__
	atomicMax((unsigned long long *)a, (unsigned long long)k);
#else
	*a = k > *a ? k : *a;
#endif
}

// nextBlockKey folds the next sweep's column terms v of the rows i of a
// warp (where lead) into bk[i / FUSED_CB]: the rows of a warp, 32/S
// consecutive rows from a multiple of 32/S, lie in one culling block. On
// the GPU the warp reduces its keys by shuffles first, and lane 0 (whose
// row is the warp's first) folds; all lanes call it.
__device__ __forceinline__ void nextBlockKey(const blk &b, double v, int i, bool lead, uint64_t *bk) {
	uint64_t k = lead ? maxKey(v) : 0;
#ifdef __CUDACC__
	for (int off = 16; off > 0; off /= 2) {
		const uint64_t o = __shfl_xor_sync(0xffffffffu, (unsigned long long)k, off);
		k = o > k ? o : k;
	}
	if (b.lane == 0 && k != 0) {
		atomicMaxKey(bk + i / FUSED_CB, k);
	}
#else
	(void)b;
	if (lead) {
		atomicMaxKey(bk + i / FUSED_CB, k);
	}
#endif
}

// fusedLine is one log-sum-exp of a grid line: LSE_a(v[a·stride] −
// (a − pos)²·invEps) over a < len, in one pass from a = pos (the nearest
// point, which holds the maximum when v is smooth) on, skipping the terms
// below the running maximum by more than thr. ±∞ for a line of −∞ or with
// a +∞.
__device__ __forceinline__ double fusedLine(const double *v, int64_t stride, int64_t len, int64_t pos, double invEps,
                                            double thr) {
	double mx = -INFINITY, sum = 0;
	for (int64_t a = 0; a < len; a++) {
		const int64_t j = pos + a < len ? pos + a : pos + a - len;
		const double dl = (double)((j - pos) * (j - pos));
		const double x = v[j * stride] - dl * invEps;
		if (x > mx) {
			sum = sum * exp(mx - x) + 1;
			mx = x;
		} else if (mx > -INFINITY) {
			const double z = x - mx;
			if (!(z < -thr)) {
				sum += exp(z);
			}
		}
	}
	return lseOut(mx, sum, 1);
}

// FUSED_KERNEL_MAX_ARG is kernelMaxArg of package ot: the grid passes work
// by products with the kernel e^(−δ²/eps) when δ²/eps ≤ 600 over a line.
#define FUSED_KERNEL_MAX_ARG 600

// fusedGridPass is one pass of fusedGridLSE: res[k] = LSE over the line of
// k (its row when byRow, else its column) of in[k'] − δ²·invEps, δ the
// distance from k to k' along the line. With the kernel table (ek[δ] =
// e^(−δ²·invEps), kernel true) it is lseLineKernel of package ot: with m
// the line's maximum, res = m + log Σ e^(in[k'] − m)·ek[δ], one exponential
// per point (into E) instead of one per term; lines with a +∞ or a NaN, and
// every line without the table, take fusedLine. Mx holds each point's line
// maximum. It ends with a barrier.
__device__ void fusedGridPass(const blk &b, const double *in, bool byRow, bool kernel, const double *ek, double invEps,
                              double outScale, double *res, double *hist, double *E, double *Mx) {
	const int64_t H = b.gh, W = b.gw, n = H * W;
	const int64_t len = byRow ? W : H, stride = byRow ? 1 : W;
	const double thr = fusedThr(b.trunc, len);
	if (kernel) {
		for (int64_t k = b.tid; k < n; k += b.nt) {
			const double *v = in + (byRow ? (k / W) * W : k % W);
			double m = -INFINITY;
			for (int64_t a = 0; a < len; a++) {
				const double x = v[a * stride];
				m = (x > m || x != x) ? x : m;
			}
			Mx[k] = m;
			E[k] = m > -INFINITY && m < INFINITY ? exp(in[k] - m) : 0;
		}
		__syncthreads();
	}
	for (int64_t k = b.tid; k < n; k += b.nt) {
		const int64_t line = byRow ? (k / W) * W : k % W, pos = byRow ? k % W : k / W;
		double l;
		if (kernel && Mx[k] == -INFINITY) {
			l = -INFINITY;
		} else if (kernel && Mx[k] < INFINITY) {
			const double *e = E + line;
			double sum = 0;
			for (int64_t a = 0; a < len; a++) {
				sum += e[a * stride] * ek[a > pos ? a - pos : pos - a];
			}
			l = Mx[k] + log(sum);
		} else {
			l = fusedLine(in + line, stride, len, pos, invEps, thr);
		}
		res[k] = outScale * l;
		if (hist) {
			hist[k] = outScale * l;
		}
	}
	__syncthreads();
}

// fusedGridLSE is gridLSE of package ot on the unit grid of the block
// (gh×gw points in row-major order, the same for rows and columns): out[k] =
// outScale·LSE_k'(in[k'] − C_kk'·invEps), with C_kk' = (r − r')² + (c −
// c')², in two passes of 1-D log-sum-exps (over c', then r'), through the
// grid scratch (at, E, Mx; the kernel table ek follows them). When hist is
// not null, out is copied to it. It ends with a barrier; in must be
// complete (a barrier) before.
__device__ void fusedGridLSE(const blk &b, const double *in, double invEps, double outScale, double *out,
                             double *hist) {
	const int64_t n = b.gh * b.gw, L = b.gh > b.gw ? b.gh : b.gw;
	double *at = b.gs, *E = at + 5 * n, *Mx = E + n, *ek = Mx + n;
	const bool kernel = (double)((L - 1) * (L - 1)) * invEps <= FUSED_KERNEL_MAX_ARG;
	fusedGridPass(b, in, true, kernel, ek, invEps, 1, at, nullptr, E, Mx);
	fusedGridPass(b, at, false, kernel, ek, invEps, outScale, out, hist, E, Mx);
}

// The sweeps are kept out of line: inlined into fusedBody, they share its
// registers, and the block size of FUSED_MAX_THREADS makes them spill in
// their loops.

// fusedGridSweep is a forward sweep of a grid problem: out = outScale·
// LSE_j(cpot_j·invEps + clogw_j − C_ij·invEps) by fusedGridLSE, also written
// to the global hist when it is not null. cpot is in shared memory. It
// begins and ends with a barrier.
__device__ __noinline__ void fusedGridSweep(const blk b, const fsd C, const double *cpot, double invEps,
                                            double outScale, double *out, double *hist) {
	for (int64_t j = b.tid; j < C.n; j += b.nt) {
		b.u[j] = cpot[j] * invEps + C.logw[j];
	}
	__syncthreads();
	fusedGridLSE(b, b.u, invEps, outScale, out, hist);
}

// fusedFillTerms prepares the first forward sweep: u_j = cpot_j·invEps +
// clogw_j over the columns of side C and, when bk is not null, the keys
// (maxKey) of their culling blocks' maxima. It ends with a barrier.
__device__ __noinline__ void fusedFillTerms(const blk b, const fsd C, const double *cpot, double invEps, double *u,
                                            uint64_t *bk) {
	const int nc = (int)C.n, tid = (int)b.tid, nt = (int)b.nt;
	for (int j0 = 0; j0 < nc; j0 += nt) {
		const int j = j0 + tid;
		double v = -INFINITY;
		if (j < nc) {
			v = cpot[j] * invEps + C.logw[j];
			u[j] = v;
		}
		if (bk) {
			const double m = warpMax(b, v, u, j, nc);
			if (b.lane == 0 && j < nc) {
				bk[j / FUSED_CB] = maxKey(m);
			}
		}
	}
	__syncthreads();
}

// FUSED_PIVOT_SPAN bounds how far a row's maximum may lie above its pivot
// for the row's one-pass sum to stand (see fusedLSE): the sum's terms are
// then at most e^FUSED_PIVOT_SPAN, and its logarithm at most about as large.
#define FUSED_PIVOT_SPAN 30

// fusedLSE is lse_part and lse_fin of one forward sweep: out[i] =
// outScale·LSE_j(u_j − C_ij·invEps) for the rows of side R against the
// columns of side C, with the column terms u_j = cpot_j·invEps + clogw_j
// prepared by the sweep before (or fusedFillTerms), written to the shared
// potential out and, when hist is not null, to the global hist. Segment s
// of a row takes the columns j ≡ s (mod S) culling block by culling block,
// beginning with the block of the column that held the row's maximum in
// the previous sweep (amx, updated); the first segment combines the S
// segments' results in order.
//
// A log-sum-exp sums the exponentials of its terms shifted by a
// reference, and the truncation skips the terms below the reference by
// more than thr (fusedThr): a reference not above the maximum keeps the
// truncation's bound (the sum is then at least 1), and one not far below
// it keeps the exponentials finite. With pivot, the reference is the
// row's term of the column amx (the pivot: a term, so not above the
// maximum; on the GPU, up to the compiler's contraction of its two
// computations into fused multiply-adds, an ulp), computed alike by every
// segment, and one pass over the terms both sums their exponentials
// shifted by it and finds the maximum; the sum stands when the maximum
// lies at most FUSED_PIVOT_SPAN above the pivot, as it does when the
// maximum's column moves little from sweep to sweep. Otherwise (and
// without pivot, or for a pivot of ±∞) a first pass finds the maximum, the
// segments share it, and a second pass sums the exponentials shifted by
// it. When bk is not null
// (FT_BLOCKS) the passes skip the blocks whose bound (from bk, the keys of
// the blocks' maxima of u) is below the running maximum (a first pass) or
// below the reference by more than thr: they cannot hold the maximum, and
// their terms would all be skipped, so culling changes no result.
//
// The rows are the next sweep's columns: the first segment of row i also
// writes that sweep's term uNext_i = out_i·invEps + rlogw_i and, with bk,
// folds it into the key of its block in bkNext (reset to 0 by the sweep
// before), and the sweep resets bkReset for the sweep after. So the next
// sweep needs no pass over its columns, and a sweep has one barrier, at its
// end.
template <int D>
__device__ __noinline__ void fusedLSE(const blk b, const fsd R, const fsd C, const double *u, const uint64_t *bk,
                                      double thr, double invEps, double outScale, double *out, double *hist,
                                      double *amx, double *uNext, uint64_t *bkNext, uint64_t *bkReset, bool pivot) {
	const int nr = (int)R.n, nc = (int)C.n, nb = (int)nblocks(nc), tid = (int)b.tid, nt = (int)b.nt;
	double *const scr = b.scr;
	const double *const cpts = C.pts, *const cbox = C.box;
	const bool cull = bk != nullptr;
	if (cull) {
		// bkReset receives the keys of the sweep after this one, whose
		// rows are this sweep's columns.
		for (int B = tid; B < nb; B += nt) {
			bkReset[B] = 0;
		}
	}
	const int lgS = segsLog(nr, nt), S = 1 << lgS, per = nt >> lgS;
	for (int r0 = 0; r0 < nr; r0 += per) {
		const int i = r0 + (tid >> lgS), sg = tid & (S - 1);
		const bool active = tid < per * S && i < nr;
		// The row's log-weight, for the next sweep's term, read early.
		const double rlw = active && sg == 0 ? R.logw[i] : 0;
		double p[D];
		// The row's maximum and its column, and the pivot.
		double mx = -INFINITY, piv = -INFINITY;
		int amj = -1;
		const int jp = active ? (int)amx[i] : 0, b0 = jp / FUSED_CB;
		if (active) {
			for (int k = 0; k < D; k++) {
				p[k] = R.pts[i * D + k];
			}
			if (pivot) {
				piv = u[jp] - sqdist<D>(p, cpts + jp * D, D) * invEps;
			}
		}
		// one: this pass also sums, shifted by the pivot.
		const bool one = piv > -INFINITY && piv < INFINITY;
		double sum = 0;
		if (active) {
			for (int bi = 0; bi < nb; bi++) {
				const int B = b0 + bi < nb ? b0 + bi : b0 + bi - nb;
				if (cull) {
					const double bm = keyMax(bk[B]), dd = boxDist2<D>(p, cbox, B) * invEps;
					const double ref = one ? piv : mx;
					if (fusedCut(bm - dd, one ? piv - thr : mx, fabs(bm) + dd + fabs(ref))) {
						SHM_COUNT(1);
						continue;
					}
				}
				SHM_COUNT(0);
				const int j1 = nc < (B + 1) * FUSED_CB ? nc : (B + 1) * FUSED_CB;
				for (int j = B * FUSED_CB + sg; j < j1; j += S) {
					const double v = u[j] - sqdist<D>(p, cpts + j * D, D) * invEps;
					if (v > mx) {
						mx = v;
						amj = j;
					}
					if (one) {
						const double z = v - piv;
						if (!(z < -thr)) {
							sum += exp(z);
						}
					}
				}
			}
		}
		if (S > 1) {
			// The row's maximum, and the column that holds it.
			if (active) {
				scr[FUSED_SCR * tid] = mx;
				scr[FUSED_SCR * tid + 1] = (double)amj;
			}
			syncWarp();
			if (active) {
				const double *pp = scr + FUSED_SCR * (tid - sg);
				for (int c = 0; c < S; c++) {
					if (pp[FUSED_SCR * c] > mx) {
						mx = pp[FUSED_SCR * c];
						amj = (int)pp[FUSED_SCR * c + 1];
					}
				}
			}
		}
		// The row's segments agree on keep: they share the pivot and the
		// maximum.
		const bool keep = one && mx < INFINITY && mx - piv <= FUSED_PIVOT_SPAN;
		if (active) {
			SHM_COUNT(keep ? 3 : 4);
		}
		if (!keep) {
			sum = 0;
		}
		if (active && !keep && mx > -INFINITY && mx < INFINITY) {
			for (int bi = 0; bi < nb; bi++) {
				const int B = b0 + bi < nb ? b0 + bi : b0 + bi - nb;
				if (cull) {
					const double bm = keyMax(bk[B]), dd = boxDist2<D>(p, cbox, B) * invEps;
					if (fusedCut(bm - dd, mx - thr, fabs(bm) + dd + fabs(mx))) {
						SHM_COUNT(1);
						continue;
					}
				}
				SHM_COUNT(0);
				const int j1 = nc < (B + 1) * FUSED_CB ? nc : (B + 1) * FUSED_CB;
				for (int j = B * FUSED_CB + sg; j < j1; j += S) {
					const double z = u[j] - sqdist<D>(p, cpts + j * D, D) * invEps - mx;
					if (!(z < -thr)) {
						sum += exp(z);
					}
				}
			}
		}
		if (S > 1) {
			if (active) {
				scr[FUSED_SCR * tid + 2] = sum;
			}
			syncWarp();
			if (active && sg == 0) {
				sum = 0;
				for (int c = 0; c < S; c++) {
					sum += scr[FUSED_SCR * (tid + c) + 2];
				}
			}
			syncWarp();
		}
		double un = -INFINITY;
		if (active && sg == 0) {
			const double v = lseOut(keep ? piv : mx, sum, outScale);
			out[i] = v;
			if (hist) {
				hist[i] = v;
			}
			if (amj >= 0) {
				amx[i] = (double)amj;
			}
			un = v * invEps + rlw;
			uNext[i] = un;
		}
		if (cull) {
			// The rows of a warp lie in one culling block (see
			// nextBlockKey).
			nextBlockKey(b, un, i, active && sg == 0, bkNext);
		}
	}
	__syncthreads();
}

// wjob describes a plan-weighted sweep, as weighted in engine.go:
// e_rc = exp(u_c − C_rc·invEps + s_r) over the rows r of side R and the
// columns c of side C, with u_c = cpot_c·invEps + clogw_c and
// s_r = rpot_r·sScale (+ rlogw_r when rlogw is not null), and the row
// factors rfac (null: 1). The potentials and factors are global.
struct wjob {
	fsd R, C;
	const double *cpot, *rpot, *rlogw;
	double invEps, sScale;
	const double *rfac;
	bool normalized; // each row's terms sum to 1: the sweep may truncate
	double thr;      // then fusedThr of the n + m terms of a row and column (else ∞)
};

// wfin says where the sums of a weighted sweep go. Over rows (row_fin):
// sumOut[r] = S_r and gradOut[r·d+k] += gradScale·(G_rk·rfac_r). Over
// columns (col_fin): a[c] = aScale·S_c (assign) or a[c] + aScale·S_c,
// also copied to aCopy[c] (the next fill's row factors, see fusedBody),
// b[c] += bScale·S_c and g[c·d+k] += gScale·G_ck. Null arrays are skipped.
struct wfin {
	double *sumOut, *gradOut;
	double gradScale;
	double *a;
	double aScale;
	bool assign;
	double *b;
	double bScale;
	double *g;
	double gScale;
	double *aCopy;
};


// rowFin and colFin make the wfin of a sweep over rows and over columns.
__device__ __forceinline__ wfin rowFin(double *sumOut, double *gradOut, double gradScale) {
	return wfin{sumOut, gradOut, gradScale, nullptr, 0, false, nullptr, 0, nullptr, 0, nullptr};
}

__device__ __forceinline__ wfin colFin(double *a, double aScale, bool assign, double *b, double bScale, double *g,
                                       double gScale, double *aCopy = nullptr) {
	return wfin{nullptr, nullptr, 0, a, aScale, assign, b, bScale, g, gScale, aCopy};
}

// colFinA sets fin.a[o] (when not null) from column o's sum S_o: aScale·S_o
// (assign) or a[o] + aScale·S_o, also copied to fin.aCopy[o].
__device__ __forceinline__ void colFinA(const wfin &fin, int o, double sum) {
	if (!fin.a) {
		return;
	}
	const double a = fin.assign ? fin.aScale * sum : fin.a[o] + fin.aScale * sum;
	fin.a[o] = a;
	if (fin.aCopy) {
		fin.aCopy[o] = a;
	}
}

// fusedGridWeighted is gridSweep of package ot for a weighted sweep on the
// grid (no point gradients: the support is fixed), after fusedWeighted has
// filled u, s and rf. Over rows, S_r = exp(s_r + LSE_c(u_c − C_rc·invEps)).
// Over columns, S_c = Σ_r rf_r·e^(u_c + s_r − C_rc·invEps) = e^(u_c)·(Σ⁺ −
// Σ⁻), each part exp(LSE_r(log|rf_r| + s_r − C_rc·invEps)) over the rows
// of its sign. It ends with a barrier.
__device__ void fusedGridWeighted(const blk &b, const wjob &w, bool byCol, const wfin &fin) {
	const int64_t n = b.gh * b.gw;
	double *lp = b.gs + n, *ln = lp + n, *tp = ln + n, *tn = tp + n;
	if (!byCol) {
		fusedGridLSE(b, b.u, w.invEps, 1, tp, nullptr);
		for (int64_t r = b.tid; r < n; r += b.nt) {
			if (fin.sumOut) {
				fin.sumOut[r] = exp(b.s[r] + tp[r]);
			}
		}
		__syncthreads();
		return;
	}
	for (int64_t r = b.tid; r < n; r += b.nt) {
		const double rf = b.rf[r], l = log(fabs(rf)) + b.s[r];
		lp[r] = rf > 0 ? l : -INFINITY;
		ln[r] = rf < 0 ? l : -INFINITY;
	}
	__syncthreads();
	fusedGridLSE(b, lp, w.invEps, 1, tp, nullptr);
	fusedGridLSE(b, ln, w.invEps, 1, tn, nullptr);
	for (int64_t c = b.tid; c < n; c += b.nt) {
		const double sum = exp(b.u[c] + tp[c]) - exp(b.u[c] + tn[c]);
		if (fin.a) {
			fin.a[c] = fin.assign ? fin.aScale * sum : fin.a[c] + fin.aScale * sum;
		}
		if (fin.b) {
			fin.b[c] += fin.bScale * sum;
		}
	}
	__syncthreads();
}

// fusedFill prepares the plan-weighted sweeps of w: the column terms u,
// the row shifts s and (with setRf) the row factors rf, and the block
// maxima the culling of a truncated sweep bounds with: of u for a sweep
// over rows (rows), of s for a sweep over columns (cols). The sweeps of
// one wjob share it. It ends with a barrier when bar is set.
template <int D>
__device__ __noinline__ void fusedFill(const blk b, const wjob w, bool rows, bool cols, bool setRf = true,
                                       bool bar = true) {
	const int nr = (int)w.R.n, nc = (int)w.C.n, tid = (int)b.tid, nt = (int)b.nt;
	const bool cull = b.cull && w.normalized && b.gh == 0;
	for (int j0 = 0; j0 < nc; j0 += nt) {
		const int j = j0 + tid;
		double v = -INFINITY;
		if (j < nc) {
			v = w.cpot[j] * w.invEps + w.C.logw[j];
			b.u[j] = v;
		}
		if (cull && rows) {
			warpBlockMax(b, v, b.u, j, nc, b.bu);
		}
	}
	for (int i0 = 0; i0 < nr; i0 += nt) {
		const int i = i0 + tid;
		double v = -INFINITY;
		if (i < nr) {
			const double s = w.rpot[i] * w.sScale;
			v = w.rlogw ? w.rlogw[i] + s : s;
			b.s[i] = v;
			if (setRf) {
				b.rf[i] = w.rfac ? w.rfac[i] : 1.0;
			}
		}
		if (cull && cols) {
			warpBlockMax(b, v, b.s, i, nr, b.bs);
		}
	}
	if (bar) {
		__syncthreads();
	}
}

// fusedCombine adds the partial sums of the S segments of a weighted
// sweep's output (a sum and ND gradient sums), in segment order, into the
// first segment's (lead) sum and g, through the threads' scratch. All
// threads of the block call it equally often.
template <int ND>
__device__ __forceinline__ void fusedCombine(const blk &b, bool active, bool lead, int S, double *sum, double *g) {
	if (active) {
		double *pp = b.scr + FUSED_SCR * b.tid;
		pp[0] = *sum;
		for (int k = 0; k < ND; k++) {
			pp[1 + k] = g[k];
		}
	}
	syncWarp();
	if (lead) {
		const double *pp = b.scr + FUSED_SCR * b.tid;
		*sum = 0;
		for (int k = 0; k < ND; k++) {
			g[k] = 0;
		}
		for (int c = 0; c < S; c++) {
			*sum += pp[FUSED_SCR * c];
			for (int k = 0; k < ND; k++) {
				g[k] += pp[FUSED_SCR * c + 1 + k];
			}
		}
	}
	syncWarp();
}

// fusedWeightedT is wrow_part and row_fin (BYCOL false: for each row r,
// S_r = Σ_c e_rc and G_r = Σ_c e_rc·(row_r − col_c)) or wcol_part and
// col_fin (BYCOL true: for each column c, S_c = Σ_r rfac_r·e_rc and
// G_c = Σ_r rfac_r·e_rc·(row_r − col_c), rows with rfac_r = 0 skipped) of
// one sweep, the gradient sums only with GRAD. Truncated sweeps
// skip the culling blocks (of columns, or of rows) whose terms are all
// below the threshold. fusedFill(w) comes first (the sweeps of one wjob
// share it); the caller places the barrier after it (fusedWeighted).
template <int D, bool BYCOL, bool GRAD>
__device__ __noinline__ void fusedWeightedT(const blk b, const wjob w, const wfin fin) {
	const int nr = (int)w.R.n, nc = (int)w.C.n, tid = (int)b.tid, nt = (int)b.nt;
	const int nout = BYCOL ? nc : nr, nin = BYCOL ? nr : nc, nbin = (int)nblocks(nin);
	const int lgS = segsLog(nout, nt), S = 1 << lgS, per = nt >> lgS;
	const double thr = w.thr, invEps = w.invEps;
	const double *const inPts = BYCOL ? w.R.pts : w.C.pts, *const inBox = BYCOL ? w.R.box : w.C.box;
	const double *const outPts = BYCOL ? w.C.pts : w.R.pts;
	const double *const inMax = BYCOL ? b.bs : b.bu;
	const double *const u = b.u, *const sh = b.s, *const rf = b.rf;
	const bool cull = b.cull && w.normalized;
	// Without culling, each segment takes its inputs in one loop (the same
	// order as block by block).
	const int nloop = cull ? nbin : 1;
	for (int o0 = 0; o0 < nout; o0 += per) {
		const int o = o0 + (tid >> lgS), sg = tid & (S - 1);
		const bool active = tid < per * S && o < nout;
		double sum = 0, g[D];
		for (int k = 0; k < D; k++) {
			g[k] = 0;
		}
		// The global sums the first segment adds to, read before the
		// terms so that their latency overlaps them (only that thread
		// writes them in this sweep).
		const bool lead = active && sg == 0;
		double bOld = 0, gOld[D];
		for (int k = 0; k < D; k++) {
			gOld[k] = 0;
		}
		if (lead) {
			const double *gsum = BYCOL ? fin.g : fin.gradOut;
			if (BYCOL && fin.b) {
				bOld = fin.b[o];
			}
			if (gsum) {
				for (int k = 0; k < D; k++) {
					gOld[k] = gsum[o * D + k];
				}
			}
		}
		if (active) {
			double x[D];
			for (int k = 0; k < D; k++) {
				x[k] = outPts[o * D + k];
			}
			// The output's own term: the row shift s_o, or the column
			// term u_o.
			const double own = BYCOL ? u[o] : sh[o];
			for (int B = 0; B < nloop; B++) {
				if (cull) {
					const double dd = boxDist2<D>(x, inBox, B) * invEps;
					if (fusedCut(inMax[B] + own - dd, -thr, fabs(inMax[B]) + fabs(own) + dd)) {
						SHM_COUNT(1);
						continue;
					}
				}
				SHM_COUNT(0);
				const int c0 = cull ? B * FUSED_CB : 0;
				const int c1 = !cull || nin < (B + 1) * FUSED_CB ? nin : (B + 1) * FUSED_CB;
				for (int c = c0 + sg; c < c1; c += S) {
					const double *q = inPts + c * D;
					double re;
					if (!BYCOL) {
						const double z = u[c] - sqdist<D>(x, q, D) * invEps + own;
						if (z < -thr) {
							continue;
						}
						re = exp(z);
					} else {
						const double ri = rf[c];
						if (ri == 0) {
							continue;
						}
						const double z = own - sqdist<D>(q, x, D) * invEps + sh[c];
						if (z < -thr) {
							continue;
						}
						re = ri * exp(z);
					}
					sum += re;
					if (GRAD) {
						// (row − col): x is the row when !BYCOL.
						for (int k = 0; k < D; k++) {
							g[k] += BYCOL ? re * (q[k] - x[k]) : re * (x[k] - q[k]);
						}
					}
				}
			}
		}
		if (S > 1) {
			fusedCombine<GRAD ? D : 0>(b, active, lead, S, &sum, g);
		}
		if (lead) {
			if (!BYCOL) {
				if (fin.sumOut) {
					fin.sumOut[o] = sum;
				}
				if (fin.gradOut) {
					const double ri = rf[o];
					for (int k = 0; k < D; k++) {
						fin.gradOut[o * D + k] = gOld[k] + fin.gradScale * (g[k] * ri);
					}
				}
			} else {
				colFinA(fin, o, sum);
				if (fin.b) {
					fin.b[o] = bOld + fin.bScale * sum;
				}
				if (fin.g) {
					for (int k = 0; k < D; k++) {
						fin.g[o * D + k] = gOld[k] + fin.gScale * g[k];
					}
				}
			}
		}
	}
}

// fusedWeightedSym is fusedWeightedT's sweep over rows with the gradient
// sums (to rfin) and then its sweep over columns with them (to cfin) on a
// symmetric problem, whose rows and columns are the same points and whose
// two sides' gradients are the same arrays (x–x, y–y), in one pass over
// the terms: row o's sum and column o's sum share the segment's loop, each
// distance and each culling block's box distance, and no barrier parts the
// two sweeps. Each sum adds the same terms in the same order as its own
// sweep would, and the column sweep's gradient adds to the row sweep's
// result (the same thread writes both), so the results are those of the two
// sweeps, bit for bit (on the GPU, up to the compiler's contraction of
// their operations into fused multiply-adds). fusedFill(w) with both
// block maxima comes first; the caller places the barrier after it.
template <int D>
__device__ __noinline__ void fusedWeightedSym(const blk b, const wjob w, const wfin rfin, const wfin cfin) {
	const int n = (int)w.R.n, tid = (int)b.tid, nt = (int)b.nt;
	const int lgS = segsLog(n, nt), S = 1 << lgS, per = nt >> lgS;
	const double thr = w.thr, invEps = w.invEps;
	const double *const pts = w.R.pts, *const box = w.R.box;
	const double *const u = b.u, *const sh = b.s, *const rf = b.rf;
	const bool cull = b.cull && w.normalized;
	const int nloop = cull ? (int)nblocks(n) : 1;
	for (int o0 = 0; o0 < n; o0 += per) {
		const int o = o0 + (tid >> lgS), sg = tid & (S - 1);
		const bool active = tid < per * S && o < n;
		const bool lead = active && sg == 0;
		// Row o's sums (sr, gr) and column o's (sc, gc).
		double sr = 0, sc = 0, gr[D], gc[D], grOld[D];
		for (int k = 0; k < D; k++) {
			gr[k] = 0;
			gc[k] = 0;
			grOld[k] = 0;
		}
		if (lead && rfin.gradOut) {
			for (int k = 0; k < D; k++) {
				grOld[k] = rfin.gradOut[o * D + k];
			}
		}
		if (active) {
			double x[D];
			for (int k = 0; k < D; k++) {
				x[k] = pts[o * D + k];
			}
			// Row o's shift and column o's term.
			const double so = sh[o], uo = u[o];
			for (int B = 0; B < nloop; B++) {
				bool cr = false, cc = false;
				if (cull) {
					const double dd = boxDist2<D>(x, box, B) * invEps;
					cr = fusedCut(b.bu[B] + so - dd, -thr, fabs(b.bu[B]) + fabs(so) + dd);
					cc = fusedCut(b.bs[B] + uo - dd, -thr, fabs(b.bs[B]) + fabs(uo) + dd);
				}
				SHM_COUNT(cr ? 1 : 0);
				SHM_COUNT(cc ? 1 : 0);
				if (cr && cc) {
					continue;
				}
				const int c0 = cull ? B * FUSED_CB : 0;
				const int c1 = !cull || n < (B + 1) * FUSED_CB ? n : (B + 1) * FUSED_CB;
				for (int c = c0 + sg; c < c1; c += S) {
					const double *q = pts + c * D;
					const double e = sqdist<D>(x, q, D) * invEps;
					if (!cr) {
						const double z = u[c] - e + so;
						if (!(z < -thr)) {
							const double re = exp(z);
							sr += re;
							for (int k = 0; k < D; k++) {
								gr[k] += re * (x[k] - q[k]);
							}
						}
					}
					const double ri = rf[c];
					if (!cc && ri != 0) {
						const double z = uo - e + sh[c];
						if (!(z < -thr)) {
							const double re = ri * exp(z);
							sc += re;
							for (int k = 0; k < D; k++) {
								gc[k] += re * (q[k] - x[k]);
							}
						}
					}
				}
			}
		}
		if (S > 1) {
			fusedCombine<D>(b, active, lead, S, &sr, gr);
			fusedCombine<D>(b, active, lead, S, &sc, gc);
		}
		if (lead) {
			const double ri = rf[o];
			if (rfin.sumOut) {
				rfin.sumOut[o] = sr;
			}
			for (int k = 0; k < D; k++) {
				gr[k] = grOld[k] + rfin.gradScale * (gr[k] * ri);
				if (rfin.gradOut) {
					rfin.gradOut[o * D + k] = gr[k];
				}
			}
			colFinA(cfin, o, sc);
			if (cfin.b) {
				cfin.b[o] += cfin.bScale * sc;
			}
			if (cfin.g) {
				for (int k = 0; k < D; k++) {
					const double old = cfin.g == rfin.gradOut ? gr[k] : cfin.g[o * D + k];
					cfin.g[o * D + k] = old + cfin.gScale * gc[k];
				}
			}
		}
	}
}

// fusedWeighted runs the sweep of fusedWeightedT for byCol and grad (the
// grid path's for a grid problem), and then a barrier unless bar is false.
template <int D>
__device__ __forceinline__ void fusedWeighted(const blk &b, const wjob &w, bool byCol, bool grad, const wfin &fin,
                                              bool bar = true) {
	if (b.gh > 0) {
		fusedGridWeighted(b, w, byCol, fin);
		return;
	}
	if (byCol) {
		grad ? fusedWeightedT<D, true, true>(b, w, fin) : fusedWeightedT<D, true, false>(b, w, fin);
	} else {
		grad ? fusedWeightedT<D, false, true>(b, w, fin) : fusedWeightedT<D, false, false>(b, w, fin);
	}
	if (bar) {
		__syncthreads();
	}
}

// fusedSweeps runs the plan-weighted sweeps of wjob w of the unrolled
// backward pass: over rows with the gradient sums (when rows, to rfin),
// then over columns (when cols, with the gradient sums when colGrad, to
// cfin), and ends with a barrier when either runs. Unpaired, each sweep
// ends with a barrier. Paired (FD_PAIR), the sweep over rows is not
// followed by one: its outputs are not the sweep over columns' inputs
// (both read the fill's arrays), and where a row's output is also a
// column's (the gradient of a symmetric problem) the same thread writes
// both, in order. A symmetric problem's two sweeps then take one pass
// (fusedWeightedSym).
template <int D>
__device__ __forceinline__ void fusedSweeps(const blk &b, const wjob &w, bool rows, bool cols, bool colGrad,
                                            const wfin &rfin, const wfin &cfin, bool pair, bool sym) {
	if (pair && sym && rows && cols && colGrad && b.gh == 0) {
		fusedWeightedSym<D>(b, w, rfin, cfin);
		__syncthreads();
		return;
	}
	if (rows) {
		fusedWeighted<D>(b, w, false, true, rfin, !(pair && cols));
	}
	if (cols) {
		fusedWeighted<D>(b, w, true, colGrad, cfin);
	}
}

// fusedBarInit is bar_init over the n entries of one side.
__device__ void fusedBarInit(const blk &b, int64_t n, const double *logw, const double *pot, double sigma, double eps,
                             double rho, bool balanced, bool qside, double *bar, double *glogw) {
	for (int64_t i = b.tid; i < n; i += b.nt) {
		const double w = exp(logw[i]);
		if (balanced) {
			bar[i] = sigma * w;
			if (glogw) {
				glogw[i] += sigma * w * pot[i];
			}
		} else if (!qside) {
			bar[i] = sigma * w * exp(-pot[i] / rho);
			if (glogw) {
				glogw[i] += sigma * (-rho * w * expm1(-pot[i] / rho));
			}
		} else {
			const double k = 1 + eps / rho;
			const double eg = exp(-pot[i] / rho);
			bar[i] = sigma * k * w * eg;
			if (glogw) {
				glogw[i] += sigma * (-rho * w * expm1(-pot[i] / rho) - eps * w * eg);
			}
		}
	}
	__syncthreads();
}

// fusedEnvLogw is env_logw over the n entries of one side.
__device__ void fusedEnvLogw(const blk &b, int64_t n, const double *logw, const double *pot, const double *sums,
                             double sigma, double eps, double rho, bool balanced, double *glogw) {
	for (int64_t i = b.tid; i < n; i += b.nt) {
		const double w = exp(logw[i]);
		const double psi = balanced ? w * pot[i] : -rho * w * expm1(-pot[i] / rho);
		glogw[i] += sigma * (psi - eps * sums[i]);
	}
	__syncthreads();
}

// FUSED_VCHUNK is value_part's chunk (valueChunk in kernels.go).
#define FUSED_VCHUNK 256

// fusedValue is value_part and sum_fin of one side: out1 = Σ w_i·pot_i
// (balanced) or Σ w_i·expm1(−pot_i/rho), and, when out2 is not null,
// out2 = Σ w_i·e^(−pot_i/rho), summed in chunks of FUSED_VCHUNK whose
// partial sums are added in order.
__device__ void fusedValue(const blk &b, int64_t n, const double *logw, const double *pot, double rho, bool balanced,
                           double *out1, double *out2) {
	const int64_t nch = (n + FUSED_VCHUNK - 1) / FUSED_VCHUNK;
	for (int64_t c = b.tid; c < nch; c += b.nt) {
		const int64_t i0 = c * FUSED_VCHUNK, i1 = min64(n, i0 + FUSED_VCHUNK);
		double s1 = 0, s2 = 0;
		for (int64_t i = i0; i < i1; i++) {
			const double w = exp(logw[i]);
			if (balanced) {
				s1 += w * pot[i];
			} else {
				s1 += w * expm1(-pot[i] / rho);
				s2 += w * exp(-pot[i] / rho);
			}
		}
		b.scr[2 * c] = s1;
		b.scr[2 * c + 1] = s2;
	}
	__syncthreads();
	if (b.tid == 0) {
		double s1 = 0, s2 = 0;
		for (int64_t c = 0; c < nch; c++) {
			s1 += b.scr[2 * c];
			s2 += b.scr[2 * c + 1];
		}
		*out1 = s1;
		if (out2) {
			*out2 = s2;
		}
	}
	__syncthreads();
}

// fusedZero sets x[0..n) to 0 (x may be null).
__device__ void fusedZero(const blk &b, double *x, int64_t n) {
	if (x) {
		for (int64_t i = b.tid; i < n; i += b.nt) {
			x[i] = 0;
		}
	}
}

// fusedSetup copies the n points of pts (D coordinates each) into the
// shared array sp, computes the bounding boxes of their culling blocks
// into box, and sets amx[i], the column whose block a sweep over these
// rows begins with (and its pivot, see fusedLSE), to the first column of
// the block of the same rank among the nc columns. It ends with a
// barrier.
template <int D>
__device__ void fusedSetup(const blk &b, const double *pts, int64_t n, int64_t nc, double *sp, double *box,
                           double *amx) {
	for (int64_t i = b.tid; i < n * D; i += b.nt) {
		sp[i] = pts[i];
	}
	for (int64_t i = b.tid; i < n; i += b.nt) {
		amx[i] = (double)((i * nblocks(nc)) / n * FUSED_CB);
	}
	__syncthreads();
	for (int64_t B = b.tid; B < nblocks(n); B += b.nt) {
		double *lo = box + B * 2 * D, *hi = lo + D;
		for (int k = 0; k < D; k++) {
			lo[k] = INFINITY;
			hi[k] = -INFINITY;
		}
		const int64_t i1 = min64(n, (B + 1) * FUSED_CB);
		for (int64_t i = B * FUSED_CB; i < i1; i++) {
			for (int k = 0; k < D; k++) {
				lo[k] = sp[i * D + k] < lo[k] ? sp[i * D + k] : lo[k];
				hi[k] = sp[i * D + k] > hi[k] ? sp[i * D + k] : hi[k];
			}
		}
	}
	__syncthreads();
}

// fusedBody solves the problem of descriptor w in dimension D: engine.go's
// solve, value, and backward or envelope, in the same order.
//
// Its shared memory (fusedShared in fused.go, in this order): the points of
// both sides (n·D, m·D), the current potentials f and g (n, m), the column
// terms, row shifts and row factors of a sweep (k = max(n, m) each), the
// column of each row's maximum in the f and g sweeps (n, m), three
// arrays of block maxima (of the column terms and row shifts of a weighted
// sweep, and the forward sweeps' keys: nblocks(k) each), the boxes of
// both sides (2·D·nblocks(n), 2·D·nblocks(m)), the adjoints of f and g
// (n, m; none on a grid), with FD_STAGE one more f and two more g (n, m,
// m), with FD_PREFILL a second set of a weighted sweep's arrays (the
// column terms, row shifts and row factors, k each, and two arrays of
// block maxima, nblocks(k) each), FUSED_SCR doubles per thread and, for a
// grid problem, its scratch (7·n and the kernel table of max(gh, gw)).
template <int D>
__device__ void fusedBody(const uint64_t *w, double *smem) {
	const double *P = asPtr(w[FD_P]), *Q = asPtr(w[FD_Q]), *LP = asPtr(w[FD_LP]), *LQ = asPtr(w[FD_LQ]);
	const int64_t n = (int64_t)w[FD_N], m = (int64_t)w[FD_M], T = (int64_t)w[FD_ITERS];
	const double eps = asDouble(w[FD_EPS]), rho = asDouble(w[FD_RHO]), sigma = asDouble(w[FD_SIGMA]);
	const bool balanced = w[FD_BALANCED] != 0;
	const int mode = (int)w[FD_MODE];
	const bool keep = mode == FM_UNROLLED;
	double *F = asPtr(w[FD_F]), *G = asPtr(w[FD_G]);
	double *SCAL = asPtr(w[FD_SCAL]), *GP = asPtr(w[FD_GP]), *GQ = asPtr(w[FD_GQ]), *GLP = asPtr(w[FD_GLP]),
	       *GLQ = asPtr(w[FD_GLQ]);
	const int64_t k = n > m ? n : m;
	// The problem uses its own number of threads nt, whatever the block
	// size of the launch (the largest nt of its problems), so that its
	// result does not depend on the problems it is batched with. The other
	// threads only pass the barriers: their index is beyond every loop.
	const int64_t nt = (int64_t)w[FD_THREADS];
	const int64_t tid = (int64_t)threadIdx.x < nt ? (int64_t)threadIdx.x : FUSED_IDLE_TID;
	double *sP = smem, *sQ = sP + n * D, *fS = sQ + m * D, *gS = fS + n;
	double *u = gS + m, *s = u + k, *rf = s + k, *amxF = rf + k, *amxG = amxF + n;
	double *bu = amxG + m, *bs = bu + nblocks(k), *bx = bs + nblocks(k), *boxP = bx + nblocks(k),
	       *boxQ = boxP + 2 * D * nblocks(n);
	// The adjoints of the potentials (or the envelope gradient's row and
	// column sums), and, when the unrolled backward pass stages the
	// history (FD_STAGE), one more f and two more g, and with FD_PREFILL
	// the second set of a weighted sweep's arrays. A grid problem,
	// whose sweeps need neither culling nor pivots, keeps the adjoints in
	// the place of the columns of the rows' maxima.
	const int64_t gh = (int64_t)w[FD_GRID_H], gw = (int64_t)w[FD_GRID_W];
	double *FBAR = boxQ + 2 * D * nblocks(m), *GBAR = FBAR + n, *hF = GBAR + m, *hG1 = hF, *hG2 = hF;
	if (gh > 0) {
		FBAR = amxF;
		GBAR = amxG;
		hF = boxQ + 2 * D * nblocks(m);
	}
	const bool stage = keep && w[FD_STAGE] != 0, prefill = keep && w[FD_PREFILL] != 0;
	double *u2 = hF;
	if (stage) {
		hG1 = hF + n;
		hG2 = hG1 + m;
		u2 = hG2 + m;
	}
	double *s2 = u2, *rf2 = u2, *bu2 = u2, *bs2 = u2, *scr = u2;
	if (prefill) {
		s2 = u2 + k;
		rf2 = s2 + k;
		bu2 = rf2 + k;
		bs2 = bu2 + nblocks(k);
		scr = bs2 + nblocks(k);
	}
	double *gs = scr + FUSED_SCR * nt;
	const bool trunc = (w[FD_TRUNC] & FT_TERMS) != 0, cull = trunc && (w[FD_TRUNC] & FT_BLOCKS) != 0;
	const blk b{tid, nt, (int)(threadIdx.x % 32), u, s, rf, bu, bs, scr, trunc, cull, gh, gw, gs};
	const fsd Ps{sP, LP, boxP, n}, Qs{sQ, LQ, boxQ, m};
	const double tau = balanced ? 1.0 : rho / (rho + eps);
	const double invEps = 1 / eps, scale = -tau * eps;

	fusedSetup<D>(b, P, n, m, sP, boxP, amxF);
	fusedSetup<D>(b, Q, m, n, sQ, boxQ, amxG);
	if (gh > 0) {
		// The grid passes' kernel table: ek[δ] = e^(−δ²/eps), as package
		// ot's gridTable computes it.
		double *ek = gs + 7 * n;
		for (int64_t d = b.tid; d < (gh > gw ? gh : gw); d += b.nt) {
			ek[d] = exp(-((double)(d * d) * invEps));
		}
	}
	fusedZero(b, GP, n * D);
	fusedZero(b, GQ, m * D);
	fusedZero(b, GLP, n);
	fusedZero(b, GLQ, m);
	fusedZero(b, G, m);
	fusedZero(b, gS, m);
	if (b.tid == 0) {
		SCAL[2] = 0;
	}
	__syncthreads();
	// The truncation thresholds of the sweeps over rows of P (m terms), of
	// Q (n terms) and of the weighted sweeps (n + m).
	const double thrM = fusedThr(trunc, m), thrN = fusedThr(trunc, n), thrNM = fusedThr(trunc, n + m);
	double *fcur = F, *gcur = G;
	if (gh > 0) {
		for (int64_t t = 1; t <= T; t++) {
			if (keep) {
				fcur = F + (t - 1) * n;
				gcur = G + t * m;
			}
			fusedGridSweep(b, Qs, gS, invEps, scale, fS, fcur);
			fusedGridSweep(b, Ps, fS, invEps, scale, gS, gcur);
		}
	} else {
		// Sweep k reads the column terms U[k % 2] and their blocks' keys
		// K[k % 3], and prepares U[(k + 1) % 2] and K[(k + 1) % 3] for the
		// next (see fusedLSE).
		const bool pivot = w[FD_PIVOT] != 0;
		double *U[2] = {u, s};
		uint64_t *K[3] = {(uint64_t *)bu, (uint64_t *)bs, (uint64_t *)bx};
		if (cull) {
			for (int64_t B = b.tid; B < nblocks(k); B += b.nt) {
				K[1][B] = 0;
			}
		}
		fusedFillTerms(b, Qs, gS, invEps, U[0], cull ? K[0] : nullptr);
		int sw = 0;
		for (int64_t t = 1; t <= T; t++) {
			if (keep) {
				fcur = F + (t - 1) * n;
				gcur = G + t * m;
			}
			fusedLSE<D>(b, Ps, Qs, U[sw % 2], cull ? K[sw % 3] : nullptr, thrM, invEps, scale, fS, fcur, amxF,
			            U[(sw + 1) % 2], K[(sw + 1) % 3], K[(sw + 2) % 3], pivot);
			sw++;
			fusedLSE<D>(b, Qs, Ps, U[sw % 2], cull ? K[sw % 3] : nullptr, thrN, invEps, scale, gS, gcur, amxG,
			            U[(sw + 1) % 2], K[(sw + 1) % 3], K[(sw + 2) % 3], pivot);
			sw++;
		}
	}
	fusedValue(b, n, LP, fcur, rho, balanced, SCAL, nullptr);
	fusedValue(b, m, LQ, gcur, rho, balanced, SCAL + 1, balanced ? nullptr : SCAL + 2);

	if (mode == FM_UNROLLED) {
		// With FD_PAIR the sweeps of one fill share a barrier, and a
		// symmetric problem's (the same points, weights and gradients on
		// both sides) share their pass (fusedSweeps).
		const bool pair = w[FD_PAIR] != 0;
		const bool sym = n == m && w[FD_P] == w[FD_Q] && w[FD_LP] == w[FD_LQ] && w[FD_GP] == w[FD_GQ] &&
		                 w[FD_GLP] == w[FD_GLQ];
		fusedBarInit(b, n, LP, fcur, sigma, eps, rho, balanced, false, FBAR, GLP);
		fusedBarInit(b, m, LQ, gcur, sigma, eps, rho, balanced, true, GBAR, GLQ);
		const double invTauEps = 1 / (tau * eps);
		// With FD_STAGE, the history the sweeps of iteration t read (f^t,
		// g^t and g^{t−1}) is in shared memory, f^t in fb[(T − t) % 2] and
		// g^t in gb[(T − t) % 3]: f^T and g^T are the forward pass's last
		// potentials, and iteration t copies f^{t−1} and g^{t−2} from the
		// global history while it runs.
		double *fb[2] = {fS, hF}, *gb[3] = {gS, hG1, hG2};
		if (stage) {
			for (int64_t j = b.tid; j < m; j += b.nt) {
				hG1[j] = G[(T - 1) * m + j];
			}
			__syncthreads();
		}
		// With FD_PREFILL (and paired), the fills alternate between two
		// sets of arrays, b1's for the sweeps of w1 and b2's for w2's, and
		// each fill runs beside the sweeps before it: w2's beside w1's
		// sweeps, the next iteration's w1 beside w2's. A fill's row
		// factors are the adjoint that those sweeps complete (FBAR, GBAR),
		// so the column sweep's first segments copy it there (aCopy). An
		// iteration then has two barriers.
		const bool fill2 = pair && prefill && gh == 0;
		blk b1 = b, b2 = b;
		if (fill2) {
			b2.u = u2;
			b2.s = s2;
			b2.rf = rf2;
			b2.bu = bu2;
			b2.bs = bs2;
		}
		for (int64_t t = T; t >= 1; t--) {
			const double *ft = F + (t - 1) * n, *gt = G + t * m, *gprev = G + (t - 1) * m;
			if (stage) {
				ft = fb[(T - t) % 2];
				gt = gb[(T - t) % 3];
				gprev = gb[(T - t + 1) % 3];
				if (t > 1) {
					stageCopy(fb[(T - t + 1) % 2], F + (t - 2) * n, n, b);
					stageCopy(gb[(T - t + 2) % 3], G + (t - 2) * m, m, b);
				}
				stageCommit();
			}
			// g^t_j = −τε·LSE_i(f^t_i/ε − C_ij/ε + log p_i): rows are Q.
			const wjob w1{Qs, Ps, ft, gt, nullptr, invEps, invTauEps, GBAR, true, thrNM};
			// f^t_i = −τε·LSE_j(g^{t−1}_j/ε − C_ij/ε + log q_j): rows are P.
			const wjob w2{Ps, Qs, gprev, ft, nullptr, invEps, invTauEps, FBAR, true, thrNM};
			const bool needColSum = t > 1 || GLQ;
			const bool rows2 = GP != nullptr, cols2 = needColSum || GQ;
			if (fill2) {
				if (t == T) {
					fusedFill<D>(b1, w1, GQ != nullptr, true);
				}
				fusedFill<D>(b2, w2, rows2, cols2, false, false);
				fusedSweeps<D>(b1, w1, GQ != nullptr, true, GP != nullptr, rowFin(nullptr, GQ, 2 * tau),
				               colFin(FBAR, -tau, false, GLP, -(tau * eps), GP, -(2 * tau), b2.rf), pair, sym);
				fusedZero(b, FBAR, n);
				if (stage) {
					stageWait();
				}
				if (t > 1) {
					// The next iteration's w1: f^{t−1} (with FD_STAGE,
					// copied in by this iteration and by the same
					// threads) and g^{t−1}.
					const double *fn = stage ? fb[(T - t + 1) % 2] : F + (t - 2) * n;
					const wjob w1n{Qs, Ps, fn, gprev, nullptr, invEps, invTauEps, GBAR, true, thrNM};
					fusedFill<D>(b1, w1n, GQ != nullptr, true, false, false);
				}
				fusedSweeps<D>(b2, w2, rows2, cols2, GQ != nullptr, rowFin(nullptr, GP, 2 * tau),
				               colFin(needColSum ? GBAR : nullptr, -tau, true, GLQ, -(tau * eps), GQ, -(2 * tau),
				                      t > 1 ? b1.rf : nullptr),
				               pair, sym);
				if (!(rows2 || cols2)) {
					__syncthreads();
				}
				continue;
			}
			fusedFill<D>(b, w1, GQ != nullptr, true);
			fusedSweeps<D>(b, w1, GQ != nullptr, true, GP != nullptr, rowFin(nullptr, GQ, 2 * tau),
			               colFin(FBAR, -tau, false, GLP, -(tau * eps), GP, -(2 * tau)), pair, sym);
			fusedFill<D>(b, w2, rows2, cols2);
			if (pair) {
				// The fill has taken FBAR: it is zeroed, and the
				// staged copies waited for, before the sweeps, whose
				// barrier ends the iteration.
				fusedZero(b, FBAR, n);
				if (stage) {
					stageWait();
				}
			}
			fusedSweeps<D>(b, w2, rows2, cols2, GQ != nullptr, rowFin(nullptr, GP, 2 * tau),
			               colFin(needColSum ? GBAR : nullptr, -tau, true, GLQ, -(tau * eps), GQ, -(2 * tau)), pair,
			               sym);
			if (!pair) {
				fusedZero(b, FBAR, n);
				if (stage) {
					stageWait();
				}
			}
			if (!pair || !(rows2 || cols2)) {
				__syncthreads();
			}
		}
	} else if (mode == FM_ENVELOPE) {
		const wjob w{Ps, Qs, gcur, fcur, LP, invEps, invEps, nullptr, false, INFINITY};
		fusedFill<D>(b, w, false, false);
		if (GP || GLP) {
			fusedWeighted<D>(b, w, false, GP != nullptr, rowFin(FBAR, GP, sigma * 2));
		}
		if (GQ || GLQ) {
			fusedWeighted<D>(b, w, true, GQ != nullptr, colFin(GBAR, 1, true, nullptr, 0, GQ, -(sigma * 2)));
		}
		if (GLP) {
			fusedEnvLogw(b, n, LP, fcur, FBAR, sigma, eps, rho, balanced, GLP);
		}
		if (GLQ) {
			fusedEnvLogw(b, m, LQ, gcur, GBAR, sigma, eps, rho, balanced, GLQ);
		}
	}
}

// fused solves problem blockIdx.x of the nprob problems described by desc
// (FD_WORDS words each) in one block of at least FD_THREADS threads, with
// fusedShared(n, m, d, FD_THREADS, grid, FD_STAGE, FD_PREFILL) doubles of
// dynamic shared memory.
extern "C" __global__ void __launch_bounds__(FUSED_MAX_THREADS) fused(const uint64_t *desc, int64_t nprob) {
	SHM_SHARED_DOUBLES(smem);
	const int64_t p = blockIdx.x;
	if (p >= nprob) {
		return;
	}
	const uint64_t *w = desc + p * FD_WORDS;
	switch (w[FD_D]) {
	case 1:
		fusedBody<1>(w, smem);
		break;
	case 2:
		fusedBody<2>(w, smem);
		break;
	case 3:
		fusedBody<3>(w, smem);
		break;
	}
}
