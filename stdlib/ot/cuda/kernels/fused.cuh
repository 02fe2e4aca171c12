// Fused kernel (issue 15): one thread block solves one Sinkhorn problem
// from start to end (every iteration, the dual value and the gradient, in
// either mode) in a single launch, and one launch solves a batch of
// problems, one block each. Included by sinkhorn.cu, whose conventions it
// follows: the arithmetic of every term, and the order of every sum, are
// those of the multi-launch kernels above (and so of package ot), so the
// two paths differ by the GPU's rounding only.
//
// A problem is described by FD_WORDS 8-byte words (fusedDesc in fused.go
// writes them; the host kernels print FD_WORDS so that the Go test checks
// the two agree). Pointers are device addresses; 0 means "not wanted".
// Every block works in the problem's own buffers: the potentials (F, G:
// the whole history f^1..f^T and g^0..g^T with the unrolled gradient, else
// the current f and g), the adjoints (FBAR, GBAR) and the outputs (SCAL:
// three value sums, and the gradients GP, GQ, GLP, GLQ, which the kernel
// zeroes first). Problems of one launch never share an output, so blocks
// need no synchronization with each other; the symmetric problems (x–x,
// y–y) pass the same arrays for both sides, which the block updates in
// sequence.
//
// Inside a block the sweeps over rows are split among the threads: row i
// of a sweep over nr rows is reduced by S = segsFor(nr) threads, thread s
// over the columns j ≡ s (mod S), and the first of them combines the S
// partial results in segment order (as lse_fin and row_fin combine
// chunks), so results do not depend on scheduling. Sweeps over columns are
// computed the same way with rows and columns exchanged.
//
// Truncation. With FD_TRUNC the sweeps skip the exp of every term below
// e^−thr times the sum's reference (fusedThr): the dropped terms of a sum
// of at most N terms total less than 2^−54 of it, half an ulp. The log-sum-
// exps use each segment's maximum as the reference (at most the row's);
// the sweeps of the unrolled backward pass use 1, the sum of each row's
// normalized terms (e_rc = exp(u_c − C_rc/ε + s_r) with s_r = −LSE_c(u_c −
// C_rc/ε)); the column sums of those sweeps, Σ_r rfac_r·e_rc, then carry an
// absolute error below 2^−54·max|rfac|, the bound package ot's sparse
// sweeps state. The caller orders both measures in space (fused.go), so
// that the threads of a warp, which work on neighbouring rows and
// neighbouring columns, skip the same steps; the envelope gradient's sweeps
// (rows not normalized) never truncate.
//
// Dynamic shared memory (fusedShared in fused.go): 2·max(n, m) + nt·(1 + d)
// doubles for a block of nt threads: the column terms u, the row shifts s
// and the partial results of the segments.

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
	FD_FBAR,     // n doubles of work
	FD_GBAR,     // m doubles of work
	FD_SCAL,     // 3 doubles: the value sums (value_part's slots)
	FD_GP,       // gradient with respect to P (n×d) or 0
	FD_GQ,       // gradient with respect to Q (m×d) or 0
	FD_GLP,      // gradient with respect to LP (n) or 0
	FD_GLQ,      // gradient with respect to LQ (m) or 0
	FD_THREADS,  // the problem's thread count nt ≤ blockDim.x (see fusedBody)
	FD_TRUNC,    // 1: drop the terms that cannot change a sum (see fusedThr)
	FD_WORDS
};

enum : int { FM_NONE = 0, FM_UNROLLED = 1, FM_ENVELOPE = 2 };

// FUSED_MAXSEG is the largest number of threads reducing one row.
#define FUSED_MAXSEG 8

// FUSED_MAX_THREADS is the largest block of the fused kernel
// (fusedMaxThreads in fused.go), for which the compiler fits the registers.
#define FUSED_MAX_THREADS 512

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

__device__ __forceinline__ double *asPtr(uint64_t w) { return (double *)(uintptr_t)w; }

// segsFor is the number of threads reducing each of nout rows in a block
// of nt threads: the largest power of two S ≤ FUSED_MAXSEG with S·nout ≤ nt
// (at least 1).
__device__ __forceinline__ int64_t segsFor(int64_t nout, int64_t nt) {
	int64_t s = 1;
	while (s < FUSED_MAXSEG && 2 * s * nout <= nt) {
		s *= 2;
	}
	return s;
}

// blk is a thread's view of its block: its index, the block size, the
// shared arrays, and whether the sweeps may truncate.
struct blk {
	int64_t tid, nt;
	double *u, *s, *scr;
	bool trunc;
};

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

// The sweeps are kept out of line: inlined into fusedBody, they share its
// registers, and the block size of FUSED_MAX_THREADS makes them spill in
// their loops.

// fusedLSE is lse_part and lse_fin of one sweep: out[i] = outScale·LSE_j
// (cpot_j·invEps + clogw_j − C_ij·invEps) for the nr rows against the nc
// columns. It begins and ends with a barrier-separated phase, so out may
// alias cpot.
template <int D>
__device__ __noinline__ void fusedLSE(const blk &b, const double *rows, const double *cols, int64_t nr, int64_t nc,
                         const double *cpot, const double *clogw, double invEps, double outScale, double *out) {
	for (int64_t j = b.tid; j < nc; j += b.nt) {
		b.u[j] = cpot[j] * invEps + clogw[j];
	}
	__syncthreads();
	const int64_t S = segsFor(nr, b.nt), per = b.nt / S;
	const double thr = fusedThr(b.trunc, nc);
	for (int64_t r0 = 0; r0 < nr; r0 += per) {
		const int64_t i = r0 + b.tid / S, sg = b.tid % S;
		const bool active = b.tid < per * S && i < nr;
		double mx = -INFINITY, sum = 0;
		if (active) {
			const double *p = rows + i * D;
			for (int64_t j = sg; j < nc; j += S) {
				const double v = b.u[j] - sqdist<D>(p, cols + j * D, D) * invEps;
				mx = v > mx ? v : mx;
			}
			if (mx > -INFINITY) {
				for (int64_t j = sg; j < nc; j += S) {
					const double z = b.u[j] - sqdist<D>(p, cols + j * D, D) * invEps - mx;
					if (!(z < -thr)) {
						sum += exp(z);
					}
				}
			}
		}
		if (S == 1) {
			if (active) {
				out[i] = lseOut(mx, sum, outScale);
			}
			continue;
		}
		if (active) {
			b.scr[2 * b.tid] = mx;
			b.scr[2 * b.tid + 1] = sum;
		}
		__syncthreads();
		if (active && sg == 0) {
			const double *pp = b.scr + 2 * b.tid;
			double m = -INFINITY;
			for (int64_t c = 0; c < S; c++) {
				m = pp[2 * c] > m ? pp[2 * c] : m;
			}
			double s = 0;
			if (m > -INFINITY && m < INFINITY) {
				for (int64_t c = 0; c < S; c++) {
					if (pp[2 * c] > -INFINITY) {
						s += pp[2 * c + 1] * exp(pp[2 * c] - m);
					}
				}
			}
			out[i] = lseOut(m, s, outScale);
		}
		__syncthreads();
	}
	__syncthreads();
}

// wjob describes a plan-weighted sweep, as weighted in engine.go:
// e_rc = exp(u_c − C_rc·invEps + s_r) over rows r < nr and columns c < nc,
// with u_c = cpot_c·invEps + clogw_c and s_r = rpot_r·sScale (+ rlogw_r
// when rlogw is not null), and the row factors rfac (null: 1).
struct wjob {
	const double *rows, *cols;
	int64_t nr, nc;
	const double *cpot, *clogw, *rpot, *rlogw;
	double invEps, sScale;
	const double *rfac;
	bool normalized; // each row's terms sum to 1: the sweep may truncate
};

// wfin says where the sums of a weighted sweep go. Over rows (row_fin):
// sumOut[r] = S_r and gradOut[r·d+k] += gradScale·(G_rk·rfac_r). Over
// columns (col_fin): a[c] = aScale·S_c (assign) or a[c] + aScale·S_c,
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
};


// rowFin and colFin make the wfin of a sweep over rows and over columns.
__device__ __forceinline__ wfin rowFin(double *sumOut, double *gradOut, double gradScale) {
	return wfin{sumOut, gradOut, gradScale, nullptr, 0, false, nullptr, 0, nullptr, 0};
}

__device__ __forceinline__ wfin colFin(double *a, double aScale, bool assign, double *b, double bScale, double *g,
                                       double gScale) {
	return wfin{nullptr, nullptr, 0, a, aScale, assign, b, bScale, g, gScale};
}

// fusedWeighted is wrow_part and row_fin (byCol false: for each row r,
// S_r = Σ_c e_rc and G_r = Σ_c e_rc·(row_r − col_c)) or wcol_part and
// col_fin (byCol true: for each column c, S_c = Σ_r rfac_r·e_rc and
// G_c = Σ_r rfac_r·e_rc·(row_r − col_c), rows with rfac_r = 0 skipped) of
// one sweep, the gradient sums only when grad is set. It begins and ends
// with a barrier.
template <int D>
__device__ __noinline__ void fusedWeighted(const blk &b, const wjob &w, bool byCol, bool grad, const wfin &fin) {
	for (int64_t j = b.tid; j < w.nc; j += b.nt) {
		b.u[j] = w.cpot[j] * w.invEps + w.clogw[j];
	}
	for (int64_t i = b.tid; i < w.nr; i += b.nt) {
		const double s = w.rpot[i] * w.sScale;
		b.s[i] = w.rlogw ? w.rlogw[i] + s : s;
	}
	__syncthreads();
	const int64_t nout = byCol ? w.nc : w.nr, nin = byCol ? w.nr : w.nc;
	const int64_t S = segsFor(nout, b.nt), per = b.nt / S;
	const double thr = fusedThr(b.trunc && w.normalized, w.nr + w.nc);
	for (int64_t o0 = 0; o0 < nout; o0 += per) {
		const int64_t o = o0 + b.tid / S, sg = b.tid % S;
		const bool active = b.tid < per * S && o < nout;
		double sum = 0, g[D];
		for (int k = 0; k < D; k++) {
			g[k] = 0;
		}
		if (active) {
			if (!byCol) {
				const double *p = w.rows + o * D;
				const double s = b.s[o];
				for (int64_t c = sg; c < nin; c += S) {
					const double *q = w.cols + c * D;
					const double z = b.u[c] - sqdist<D>(p, q, D) * w.invEps + s;
					if (z < -thr) {
						continue;
					}
					const double e = exp(z);
					sum += e;
					if (grad) {
						for (int k = 0; k < D; k++) {
							g[k] += e * (p[k] - q[k]);
						}
					}
				}
			} else {
				const double *q = w.cols + o * D;
				const double u = b.u[o];
				for (int64_t r = sg; r < nin; r += S) {
					const double ri = w.rfac ? w.rfac[r] : 1.0;
					if (ri == 0) {
						continue;
					}
					const double *p = w.rows + r * D;
					const double z = u - sqdist<D>(p, q, D) * w.invEps + b.s[r];
					if (z < -thr) {
						continue;
					}
					const double re = ri * exp(z);
					sum += re;
					if (grad) {
						for (int k = 0; k < D; k++) {
							g[k] += re * (p[k] - q[k]);
						}
					}
				}
			}
		}
		if (S > 1) {
			if (active) {
				double *pp = b.scr + (1 + D) * b.tid;
				pp[0] = sum;
				for (int k = 0; k < D; k++) {
					pp[1 + k] = g[k];
				}
			}
			__syncthreads();
			if (active && sg == 0) {
				const double *pp = b.scr + (1 + D) * b.tid;
				sum = 0;
				for (int k = 0; k < D; k++) {
					g[k] = 0;
				}
				for (int64_t c = 0; c < S; c++) {
					sum += pp[(1 + D) * c];
					for (int k = 0; k < D; k++) {
						g[k] += pp[(1 + D) * c + 1 + k];
					}
				}
			}
		}
		if (active && sg == 0) {
			if (!byCol) {
				if (fin.sumOut) {
					fin.sumOut[o] = sum;
				}
				if (fin.gradOut) {
					const double ri = w.rfac ? w.rfac[o] : 1.0;
					for (int k = 0; k < D; k++) {
						fin.gradOut[o * D + k] += fin.gradScale * (g[k] * ri);
					}
				}
			} else {
				if (fin.a) {
					fin.a[o] = fin.assign ? fin.aScale * sum : fin.a[o] + fin.aScale * sum;
				}
				if (fin.b) {
					fin.b[o] += fin.bScale * sum;
				}
				if (fin.g) {
					for (int k = 0; k < D; k++) {
						fin.g[o * D + k] += fin.gScale * g[k];
					}
				}
			}
		}
		if (S > 1) {
			__syncthreads();
		}
	}
	__syncthreads();
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

// fusedBody solves the problem of descriptor w in dimension D: engine.go's
// solve, value, and backward or envelope, in the same order.
template <int D>
__device__ void fusedBody(const uint64_t *w, double *smem) {
	const double *P = asPtr(w[FD_P]), *Q = asPtr(w[FD_Q]), *LP = asPtr(w[FD_LP]), *LQ = asPtr(w[FD_LQ]);
	const int64_t n = (int64_t)w[FD_N], m = (int64_t)w[FD_M], T = (int64_t)w[FD_ITERS];
	const double eps = asDouble(w[FD_EPS]), rho = asDouble(w[FD_RHO]), sigma = asDouble(w[FD_SIGMA]);
	const bool balanced = w[FD_BALANCED] != 0;
	const int mode = (int)w[FD_MODE];
	double *F = asPtr(w[FD_F]), *G = asPtr(w[FD_G]), *FBAR = asPtr(w[FD_FBAR]), *GBAR = asPtr(w[FD_GBAR]);
	double *SCAL = asPtr(w[FD_SCAL]), *GP = asPtr(w[FD_GP]), *GQ = asPtr(w[FD_GQ]), *GLP = asPtr(w[FD_GLP]),
	       *GLQ = asPtr(w[FD_GLQ]);
	const int64_t k = n > m ? n : m;
	// The problem uses its own number of threads nt, whatever the block
	// size of the launch (the largest nt of its problems), so that its
	// result does not depend on the problems it is batched with. The other
	// threads only pass the barriers: their index is beyond every loop.
	const int64_t nt = (int64_t)w[FD_THREADS];
	const int64_t tid = (int64_t)threadIdx.x < nt ? (int64_t)threadIdx.x : INT64_MAX / 4;
	const blk b{tid, nt, smem, smem + k, smem + 2 * k, w[FD_TRUNC] != 0};
	const double tau = balanced ? 1.0 : rho / (rho + eps);
	const double invEps = 1 / eps, scale = -tau * eps;
	const bool keep = mode == FM_UNROLLED;

	fusedZero(b, GP, n * D);
	fusedZero(b, GQ, m * D);
	fusedZero(b, GLP, n);
	fusedZero(b, GLQ, m);
	fusedZero(b, G, m);
	if (b.tid == 0) {
		SCAL[2] = 0;
	}
	__syncthreads();
	double *fcur = F, *gcur = G;
	for (int64_t t = 1; t <= T; t++) {
		if (keep) {
			fcur = F + (t - 1) * n;
		}
		fusedLSE<D>(b, P, Q, n, m, gcur, LQ, invEps, scale, fcur);
		if (keep) {
			gcur = G + t * m;
		}
		fusedLSE<D>(b, Q, P, m, n, fcur, LP, invEps, scale, gcur);
	}
	fusedValue(b, n, LP, fcur, rho, balanced, SCAL, nullptr);
	fusedValue(b, m, LQ, gcur, rho, balanced, SCAL + 1, balanced ? nullptr : SCAL + 2);

	if (mode == FM_UNROLLED) {
		fusedBarInit(b, n, LP, fcur, sigma, eps, rho, balanced, false, FBAR, GLP);
		fusedBarInit(b, m, LQ, gcur, sigma, eps, rho, balanced, true, GBAR, GLQ);
		const double invTauEps = 1 / (tau * eps);
		for (int64_t t = T; t >= 1; t--) {
			const double *ft = F + (t - 1) * n, *gt = G + t * m, *gprev = G + (t - 1) * m;
			// g^t_j = −τε·LSE_i(f^t_i/ε − C_ij/ε + log p_i): rows are Q.
			const wjob w1{Q, P, m, n, ft, LP, gt, nullptr, invEps, invTauEps, GBAR, true};
			if (GQ) {
				fusedWeighted<D>(b, w1, false, true, rowFin(nullptr, GQ, 2 * tau));
			}
			fusedWeighted<D>(b, w1, true, GP != nullptr,
			                 colFin(FBAR, -tau, false, GLP, -(tau * eps), GP, -(2 * tau)));
			// f^t_i = −τε·LSE_j(g^{t−1}_j/ε − C_ij/ε + log q_j): rows are P.
			const wjob w2{P, Q, n, m, gprev, LQ, ft, nullptr, invEps, invTauEps, FBAR, true};
			if (GP) {
				fusedWeighted<D>(b, w2, false, true, rowFin(nullptr, GP, 2 * tau));
			}
			const bool needColSum = t > 1 || GLQ;
			if (needColSum || GQ) {
				fusedWeighted<D>(b, w2, true, GQ != nullptr,
				                 colFin(needColSum ? GBAR : nullptr, -tau, true, GLQ, -(tau * eps), GQ, -(2 * tau)));
			}
			fusedZero(b, FBAR, n);
			__syncthreads();
		}
	} else if (mode == FM_ENVELOPE) {
		const wjob w{P, Q, n, m, gcur, LQ, fcur, LP, invEps, invEps, nullptr, false};
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
// fusedShared(n, m, d, FD_THREADS) doubles of dynamic shared memory.
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
