// Kernels of the fixed-iteration log-domain Sinkhorn algorithm (package
// github.com/shmlang/shm/stdlib/ot/cuda). The conventions are those of
// shared/testdata/sinkhorn/README.md and package ot; the Go side
// (engine.go) launches them in the order package ot runs its sweeps.
//
// Every kernel parameter is 8 bytes wide (a pointer, an int64_t or a
// double): gorgonia.org/cu's Launch copies 8 bytes per argument. A null
// pointer means "not wanted" where a comment says so.
//
// The cost C_ij = Σ_k (row_ik − col_jk)² is computed from the points on the
// fly; no n×m matrix is ever stored. A row reduction over n_c columns is
// split in chunks: thread (i, c) of a grid (rows, chunks) reduces the
// columns [c·chunk, (c+1)·chunk) of row i into a partial, and a *_fin kernel
// combines the partials of each row in chunk order, so results do not
// depend on scheduling. Column reductions (the sums over rows of the
// backward pass) are computed the same way with the roles of rows and
// columns exchanged: the plan entries are recomputed instead of being
// accumulated with atomics.
//
// The file also compiles as host C++ through shim.h (see hostkernels.cpp),
// which is how the arithmetic is tested without a GPU.
#include "shim.h"

// KMAX is the number of coordinates whose gradient sums one pass keeps in
// registers; larger dimensions are processed in groups of KMAX.
#define KMAX 8
static_assert(KMAX >= 3, "the kernels specialized for d = 1, 2, 3 make one pass");

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

__device__ __forceinline__ int64_t globalX() { return (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x; }

// sqdist is Σ_k (p_k − q_k)² over D coordinates (d when D == 0), computed
// from the differences like package ot.
template <int D>
__device__ __forceinline__ double sqdist(const double *p, const double *q, int64_t d) {
	const int64_t nd = D > 0 ? D : d;
	double c = 0;
	for (int64_t k = 0; k < nd; k++) {
		const double t = p[k] - q[k];
		c += t * t;
	}
	return c;
}

// lseBody is lse_part for the dimension D (d when D == 0).
template <int D>
__device__ __forceinline__ void lseBody(const double *rows, const double *cols, int64_t nr, int64_t nc, int64_t d,
                                        const double *cpot, const double *clogw, double invEps, int64_t chunk,
                                        double *pmax, double *psum) {
	const int64_t i = globalX();
	if (i >= nr) {
		return;
	}
	const int64_t c = blockIdx.y;
	const int64_t j0 = c * chunk, j1 = min64(nc, j0 + chunk);
	const int64_t nd = D > 0 ? D : d;
	const double *p = rows + i * nd;
	double mx = -INFINITY;
	for (int64_t j = j0; j < j1; j++) {
		const double u = cpot[j] * invEps + clogw[j];
		const double v = u - sqdist<D>(p, cols + j * nd, nd) * invEps;
		mx = v > mx ? v : mx;
	}
	double s = 0;
	if (mx > -INFINITY) {
		for (int64_t j = j0; j < j1; j++) {
			const double u = cpot[j] * invEps + clogw[j];
			const double v = u - sqdist<D>(p, cols + j * nd, nd) * invEps;
			s += exp(v - mx);
		}
	}
	pmax[c * nr + i] = mx;
	psum[c * nr + i] = s;
}

// lse_part: for row i and chunk c (blockIdx.y), with
// v_j = (cpot_j·invEps + clogw_j) − C_ij·invEps over the chunk's columns,
// pmax[c·nr+i] = max_j v_j and psum[c·nr+i] = Σ_j e^(v_j − max).
extern "C" __global__ void lse_part(const double *rows, const double *cols, int64_t nr, int64_t nc, int64_t d,
                                    const double *cpot, const double *clogw, double invEps, int64_t chunk,
                                    double *pmax, double *psum) {
	switch (d) {
	case 1:
		lseBody<1>(rows, cols, nr, nc, d, cpot, clogw, invEps, chunk, pmax, psum);
		break;
	case 2:
		lseBody<2>(rows, cols, nr, nc, d, cpot, clogw, invEps, chunk, pmax, psum);
		break;
	case 3:
		lseBody<3>(rows, cols, nr, nc, d, cpot, clogw, invEps, chunk, pmax, psum);
		break;
	default:
		lseBody<0>(rows, cols, nr, nc, d, cpot, clogw, invEps, chunk, pmax, psum);
	}
}

// lse_fin: out[i] = outScale·LSE over all chunks of row i, from the
// partials of lse_part (outScale·max when the maximum is infinite).
extern "C" __global__ void lse_fin(int64_t nr, int64_t nch, const double *pmax, const double *psum, double outScale,
                                   double *out) {
	const int64_t i = globalX();
	if (i >= nr) {
		return;
	}
	double mx = -INFINITY;
	for (int64_t c = 0; c < nch; c++) {
		const double m = pmax[c * nr + i];
		mx = m > mx ? m : mx;
	}
	if (mx == INFINITY || mx == -INFINITY) {
		out[i] = outScale * mx;
		return;
	}
	double s = 0;
	for (int64_t c = 0; c < nch; c++) {
		const double m = pmax[c * nr + i];
		if (m > -INFINITY) {
			s += psum[c * nr + i] * exp(m - mx);
		}
	}
	out[i] = outScale * (mx + log(s));
}

// rowShift is s_i = rpot_i·sScale, plus rlogw_i when rlogw is not null.
__device__ __forceinline__ double rowShift(const double *rpot, const double *rlogw, double sScale, int64_t i) {
	const double s = rpot[i] * sScale;
	return rlogw ? rlogw[i] + s : s;
}

// wrowBody is wrow_part for the dimension D (d when D == 0).
template <int D>
__device__ __forceinline__ void wrowBody(const double *rows, const double *cols, int64_t nr, int64_t nc, int64_t d,
                                         const double *cpot, const double *clogw, double invEps, const double *rpot,
                                         const double *rlogw, double sScale, int64_t chunk, double *psum,
                                         double *pgrad) {
	const int64_t i = globalX();
	if (i >= nr) {
		return;
	}
	const int64_t c = blockIdx.y;
	const int64_t j0 = c * chunk, j1 = min64(nc, j0 + chunk);
	const int64_t nd = D > 0 ? D : d;
	const double *p = rows + i * nd;
	const double s = rowShift(rpot, rlogw, sScale, i);
	double sum = 0;
	// Without gradients one pass computes the sum; with them, each pass
	// handles up to KMAX coordinates and the first one also the sum.
	const int64_t kend = pgrad ? nd : 1;
	for (int64_t k0 = 0; k0 < kend; k0 += KMAX) {
		// With D > 0 (D ≤ KMAX) there is one pass and the sums stay in registers.
		const int64_t kn = D > 0 ? D : min64(KMAX, nd - k0);
		double g[D > 0 ? D : KMAX];
		for (int64_t k = 0; k < kn; k++) {
			g[k] = 0;
		}
		for (int64_t j = j0; j < j1; j++) {
			const double *q = cols + j * nd;
			const double u = cpot[j] * invEps + clogw[j];
			const double e = exp(u - sqdist<D>(p, q, nd) * invEps + s);
			if (k0 == 0) {
				sum += e;
			}
			if (pgrad) {
				for (int64_t k = 0; k < kn; k++) {
					g[k] += e * (p[k0 + k] - q[k0 + k]);
				}
			}
		}
		if (pgrad) {
			double *out = pgrad + (c * nr + i) * nd + k0;
			for (int64_t k = 0; k < kn; k++) {
				out[k] = g[k];
			}
		}
	}
	psum[c * nr + i] = sum;
}

// wrow_part: with e_ij = e^((cpot_j·invEps + clogw_j) − C_ij·invEps + s_i)
// and s_i as in rowShift, over the columns of chunk c (blockIdx.y) of row i:
// psum[c·nr+i] = Σ_j e_ij and, when pgrad is not null,
// pgrad[(c·nr+i)·d+k] = Σ_j e_ij·(row_ik − col_jk).
extern "C" __global__ void wrow_part(const double *rows, const double *cols, int64_t nr, int64_t nc, int64_t d,
                                     const double *cpot, const double *clogw, double invEps, const double *rpot,
                                     const double *rlogw, double sScale, int64_t chunk, double *psum, double *pgrad) {
	switch (d) {
	case 1:
		wrowBody<1>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, chunk, psum, pgrad);
		break;
	case 2:
		wrowBody<2>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, chunk, psum, pgrad);
		break;
	case 3:
		wrowBody<3>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, chunk, psum, pgrad);
		break;
	default:
		wrowBody<0>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, chunk, psum, pgrad);
	}
}

// wcolBody is wcol_part for the dimension D (d when D == 0).
template <int D>
__device__ __forceinline__ void wcolBody(const double *rows, const double *cols, int64_t nr, int64_t nc, int64_t d,
                                         const double *cpot, const double *clogw, double invEps, const double *rpot,
                                         const double *rlogw, double sScale, const double *r, int64_t chunk,
                                         double *psum, double *pgrad) {
	const int64_t j = globalX();
	if (j >= nc) {
		return;
	}
	const int64_t c = blockIdx.y;
	const int64_t i0 = c * chunk, i1 = min64(nr, i0 + chunk);
	const int64_t nd = D > 0 ? D : d;
	const double *q = cols + j * nd;
	const double u = cpot[j] * invEps + clogw[j];
	double sum = 0;
	const int64_t kend = pgrad ? nd : 1;
	for (int64_t k0 = 0; k0 < kend; k0 += KMAX) {
		const int64_t kn = D > 0 ? D : min64(KMAX, nd - k0);
		double g[D > 0 ? D : KMAX];
		for (int64_t k = 0; k < kn; k++) {
			g[k] = 0;
		}
		for (int64_t i = i0; i < i1; i++) {
			const double ri = r ? r[i] : 1.0;
			if (ri == 0) {
				continue; // package ot skips rows with a zero factor
			}
			const double *p = rows + i * nd;
			const double s = rowShift(rpot, rlogw, sScale, i);
			const double re = ri * exp(u - sqdist<D>(p, q, nd) * invEps + s);
			if (k0 == 0) {
				sum += re;
			}
			if (pgrad) {
				for (int64_t k = 0; k < kn; k++) {
					g[k] += re * (p[k0 + k] - q[k0 + k]);
				}
			}
		}
		if (pgrad) {
			double *out = pgrad + (c * nc + j) * nd + k0;
			for (int64_t k = 0; k < kn; k++) {
				out[k] = g[k];
			}
		}
	}
	psum[c * nc + j] = sum;
}

// wcol_part: the column sums of the weighted job of wrow_part. With r_i = 1
// when r is null, over the rows of chunk c (blockIdx.y), for column j:
// psum[c·nc+j] = Σ_i r_i·e_ij and, when pgrad is not null,
// pgrad[(c·nc+j)·d+k] = Σ_i r_i·e_ij·(row_ik − col_jk). Rows with r_i = 0
// are skipped.
extern "C" __global__ void wcol_part(const double *rows, const double *cols, int64_t nr, int64_t nc, int64_t d,
                                     const double *cpot, const double *clogw, double invEps, const double *rpot,
                                     const double *rlogw, double sScale, const double *r, int64_t chunk, double *psum,
                                     double *pgrad) {
	switch (d) {
	case 1:
		wcolBody<1>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, r, chunk, psum, pgrad);
		break;
	case 2:
		wcolBody<2>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, r, chunk, psum, pgrad);
		break;
	case 3:
		wcolBody<3>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, r, chunk, psum, pgrad);
		break;
	default:
		wcolBody<0>(rows, cols, nr, nc, d, cpot, clogw, invEps, rpot, rlogw, sScale, r, chunk, psum, pgrad);
	}
}

// row_fin combines the partials of wrow_part for row i: with S = Σ_c psum
// and G_k = Σ_c pgrad (in chunk order), sumOut[i] = S when sumOut is not
// null, and gradOut[i·d+k] += gradScale·(G_k·r_i) when gradOut is not null
// (r_i = 1 when r is null).
extern "C" __global__ void row_fin(int64_t nr, int64_t nch, int64_t d, const double *psum, const double *pgrad,
                                   const double *r, double *sumOut, double *gradOut, double gradScale) {
	const int64_t i = globalX();
	if (i >= nr) {
		return;
	}
	if (sumOut) {
		double s = 0;
		for (int64_t c = 0; c < nch; c++) {
			s += psum[c * nr + i];
		}
		sumOut[i] = s;
	}
	if (gradOut) {
		const double ri = r ? r[i] : 1.0;
		for (int64_t k = 0; k < d; k++) {
			double g = 0;
			for (int64_t c = 0; c < nch; c++) {
				g += pgrad[(c * nr + i) * d + k];
			}
			gradOut[i * d + k] += gradScale * (g * ri);
		}
	}
}

// col_fin combines the partials of wcol_part for column j: with
// S = Σ_c psum and G_k = Σ_c pgrad (in chunk order), each destination that
// is not null is updated:
//
//	a[j] = aScale·S (aAssign != 0) or a[j] + aScale·S
//	b[j] += bScale·S
//	g[j·d+k] += gScale·G_k
extern "C" __global__ void col_fin(int64_t nc, int64_t nch, int64_t d, const double *psum, const double *pgrad,
                                   double *a, double aScale, int64_t aAssign, double *b, double bScale, double *g,
                                   double gScale) {
	const int64_t j = globalX();
	if (j >= nc) {
		return;
	}
	if (a || b) {
		double s = 0;
		for (int64_t c = 0; c < nch; c++) {
			s += psum[c * nc + j];
		}
		if (a) {
			a[j] = aAssign ? aScale * s : a[j] + aScale * s;
		}
		if (b) {
			b[j] += bScale * s;
		}
	}
	if (g) {
		for (int64_t k = 0; k < d; k++) {
			double t = 0;
			for (int64_t c = 0; c < nch; c++) {
				t += pgrad[(c * nc + j) * d + k];
			}
			g[j * d + k] += gScale * t;
		}
	}
}

// bar_init starts the backward pass of one problem from the partial
// derivatives of its value V at the final potentials (README "Gradients"),
// scaled by sigma. For the f side (qside = 0, pot = f^T, w = a):
//
//	balanced:   bar_i = sigma·a_i,               glogw_i += sigma·a_i·f_i
//	unbalanced: bar_i = sigma·a_i·e^(−f_i/rho),  glogw_i += sigma·(−rho·a_i·expm1(−f_i/rho))
//
// and for the g side (qside = 1, pot = g^T, w = b), with k = 1 + eps/rho:
//
//	balanced:   bar_j = sigma·b_j,               glogw_j += sigma·b_j·g_j
//	unbalanced: bar_j = sigma·k·b_j·e^(−g_j/rho),
//	            glogw_j += sigma·(−rho·b_j·expm1(−g_j/rho) − eps·b_j·e^(−g_j/rho))
//
// glogw may be null.
extern "C" __global__ void bar_init(int64_t n, const double *logw, const double *pot, double sigma, double eps,
                                    double rho, int64_t balanced, int64_t qside, double *bar, double *glogw) {
	const int64_t i = globalX();
	if (i >= n) {
		return;
	}
	const double w = exp(logw[i]);
	if (balanced) {
		bar[i] = sigma * w;
		if (glogw) {
			glogw[i] += sigma * w * pot[i];
		}
		return;
	}
	if (!qside) {
		bar[i] = sigma * w * exp(-pot[i] / rho);
		if (glogw) {
			glogw[i] += sigma * (-rho * w * expm1(-pot[i] / rho));
		}
		return;
	}
	const double k = 1 + eps / rho;
	const double eg = exp(-pot[i] / rho);
	bar[i] = sigma * k * w * eg;
	if (glogw) {
		glogw[i] += sigma * (-rho * w * expm1(-pot[i] / rho) - eps * w * eg);
	}
}

// env_logw adds the envelope gradient of one side's log-weights:
// glogw_i += sigma·(psi_i − eps·sums_i), with psi_i = w_i·pot_i (balanced)
// or −rho·w_i·expm1(−pot_i/rho), and sums_i the plan's marginal.
extern "C" __global__ void env_logw(int64_t n, const double *logw, const double *pot, const double *sums, double sigma,
                                    double eps, double rho, int64_t balanced, double *glogw) {
	const int64_t i = globalX();
	if (i >= n) {
		return;
	}
	const double w = exp(logw[i]);
	const double psi = balanced ? w * pot[i] : -rho * w * expm1(-pot[i] / rho);
	glogw[i] += sigma * (psi - eps * sums[i]);
}

// value_part sums the terms of the dual value of one side over the chunk of
// thread c: part1[c] = Σ w_i·pot_i (balanced) or Σ w_i·expm1(−pot_i/rho)
// (unbalanced), and, when part2 is not null, part2[c] = Σ w_i·e^(−pot_i/rho).
extern "C" __global__ void value_part(int64_t n, const double *logw, const double *pot, double rho, int64_t balanced,
                                      int64_t chunk, int64_t nch, double *part1, double *part2) {
	const int64_t c = globalX();
	if (c >= nch) {
		return;
	}
	const int64_t i0 = c * chunk, i1 = min64(n, i0 + chunk);
	double s1 = 0, s2 = 0;
	for (int64_t i = i0; i < i1; i++) {
		const double w = exp(logw[i]);
		if (balanced) {
			s1 += w * pot[i];
		} else {
			s1 += w * expm1(-pot[i] / rho);
			if (part2) {
				s2 += w * exp(-pot[i] / rho);
			}
		}
	}
	part1[c] = s1;
	if (part2) {
		part2[c] = s2;
	}
}

// sum_fin: out[0] = Σ_c part[c] in order (one thread).
extern "C" __global__ void sum_fin(int64_t nch, const double *part, double *out) {
	if (globalX() != 0) {
		return;
	}
	double s = 0;
	for (int64_t c = 0; c < nch; c++) {
		s += part[c];
	}
	out[0] = s;
}

// fill sets x[0..n) to v.
extern "C" __global__ void fill(int64_t n, double *x, double v) {
	const int64_t i = globalX();
	if (i < n) {
		x[i] = v;
	}
}

#include "fused.cuh"
