//go:build amd64 && !purego

package ot

//go:generate sh -c "python3 gen_asm.py > kernels_amd64.s"

// haveSIMD reports whether the AVX2 + FMA kernels (which also use POPCNT)
// can run. It is set once at initialization from the CPU's features and
// never changes.
var haveSIMD = detectAVX2FMA()

// detectAVX2FMA reports whether the CPU has AVX2, FMA and POPCNT and the
// operating system saves the YMM registers.
func detectAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, popcnt, osxsave, avx = 1 << 12, 1 << 23, 1 << 27, 1 << 28
	if ecx1&(fma|popcnt|osxsave|avx) != fma|popcnt|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0 // AVX2
}

// argsMax1AVX2 is argsRow for d = 1 over the first len(u) &^ 3 columns
// (bitwise equal results); it returns their maximum (NaN if one is NaN).
//
//go:noescape
func argsMax1AVX2(buf, q, u []float64, p0, invEps, shift float64) float64

// subMaxAVX2 writes buf[j] = v[j] − kt[j] for the first len(v) &^ 3
// elements and returns their maximum (NaN if one is NaN).
//
//go:noescape
func subMaxAVX2(buf, v, kt []float64) float64

// weighted2AVX2 is the d = 2 core of weightedRow over the first
// len(e) &^ 3 columns: it stores Σ e_j, Σ e_j(p0 − q_j0), Σ e_j(p1 − q_j1) in
// sums and, when mode&1, adds r·e_j to colSum[j], when mode&2, adds
// r·e_j·(p − q_j) to colGrad[2j:2j+2].
//
//go:noescape
func weighted2AVX2(e, q, colSum, colGrad []float64, p0, p1, r float64, mode int, sums *[3]float64)

// expWeighted2AVX2 is weighted2AVX2 applied to e_j = e^a[j] (0 below
// expLow), computed on the fly. The arguments must not exceed expHigh nor be
// NaN.
//
//go:noescape
func expWeighted2AVX2(a, q, colSum, colGrad []float64, p0, p1, r float64, mode int, sums *[3]float64)

// expWeighted1AVX2 is the d = 1 version of expWeighted2AVX2: with
// e_j = e^a[j] (0 below expLow) over the first len(a) &^ 3 columns, it
// stores Σ e_j and Σ e_j (p0 − q_j) in sums and, when mode&1, adds r·e_j to
// colSum[j], when mode&2, r·e_j·(p0 − q_j) to colGrad[j]. The arguments must
// not exceed expHigh nor be NaN.
//
//go:noescape
func expWeighted1AVX2(a, q, colSum, colGrad []float64, p0, r float64, mode int, sums *[2]float64)

// lse1LeafAVX2 computes the forward log-sum-exp rows of a leaf of the
// sparse path for d = 1 (sparse.go, lseLeaf): for each row r of xs over
// the candidates q, u (a multiple of four, at least four), out[2r] is the
// row's maximum argument mx (as argsMax1AVX2 with shift 0: bitwise equal),
// out[2r+1] the sum of e^v over the kept values v = buf[j] − mx, those not
// below negThr: packed in order into cb, padded with −Inf to a multiple of
// four and summed as sumExpAVX2(cb, 0, −Inf) sums them, without a branch
// per group. spans[3r] and spans[3r+1] are the first element of the first
// group of four with a kept value and the end of the last, spans[3r+2] the
// first argmax. buf is scratch of at least len(q), cb of 2·len(q) + 8
// (the packed values, then their indices).
//
//go:noescape
func lse1LeafAVX2(xs, q, u, buf, cb, out []float64, spans []int32, invEps, negThr float64)

// exp1LeafAVX2 computes the backward weighted rows of a leaf of the sparse
// path for d = 1 (sparse.go, weightedLeafSIMD): for each row r, over the
// candidates [spans[2r], spans[2r+1]) (a multiple of four), the arguments
// of argsMax1AVX2 with shift ss[r] (bitwise), stored in buf, and, over the
// groups of four with an element not below negThr (listed in kept, then
// taken in order: no branch per group on the data), the sums of
// expWeighted1AVX2 with factor rs[r]: res[2r] = Σ e_j, res[2r+1] = Σ e_j
// (xs[r] − q_j), and colSum, colGrad as mode says. buf and kept are
// scratch of at least the longest span and a quarter of it. No argument
// may exceed expHigh or be NaN (the caller checks: normalized weights,
// finite shifts).
//
//go:noescape
func exp1LeafAVX2(xs, ss, rs []float64, spans []int32, q, u, colSum, colGrad, res, buf []float64, kept []int32, invEps, negThr float64, mode int)

// lse2LeafAVX2 is lse1LeafAVX2 for d = 2 (xs and q hold two coordinates
// per point; the arguments are argsMax2AVX2's, bitwise).
//
//go:noescape
func lse2LeafAVX2(xs, q, u, buf, cb, out []float64, spans []int32, invEps, negThr float64)

// exp2LeafAVX2 is exp1LeafAVX2 for d = 2 (xs, q and colGrad hold two
// coordinates per point, res three values per row: Σ e_j and the two
// coordinates of Σ e_j (xs[r] − q_j)).
//
//go:noescape
func exp2LeafAVX2(xs, ss, rs []float64, spans []int32, q, u, colSum, colGrad, res, buf []float64, kept []int32, invEps, negThr float64, mode int)

// logAVX2 writes logPos(src[j]) into dst[j] for the first len(src) &^ 3
// elements (bitwise equal results). It reports whether an element was not
// a finite positive normal number; such elements hold wrong values and must
// be recomputed.
//
//go:noescape
func logAVX2(dst, src []float64) bool

// kernelSumsAVX2 is kernelSums for the first len(sums) &^ 3 outputs
// (bitwise equal results); len(ev) ≥ 1.
//
//go:noescape
func kernelSumsAVX2(sums, ev, ekb []float64)

// addScaledAVX2 adds a·src[k] to dst[k] for the first len(src) &^ 3
// elements, rounding the product before the sum (bitwise as the Go loop on
// amd64); len(dst) ≥ len(src).
//
//go:noescape
func addScaledAVX2(dst, src []float64, a float64)

// expShiftAVX2 is expAVX2 of src[j] − shift (the difference rounded
// first, bitwise as expAVX2 of the differences).
//
//go:noescape
func expShiftAVX2(dst, src []float64, shift float64) bool

// colDriftAVX2 is the first pass of the scaling path's column factors over
// the first len(u) &^ 3 columns: h[j] = u[j] − off[j], H the largest h[j]
// (NaNs ignored; −Inf for none), D the largest h[j] − ref[j] over the j
// with ref[j] > −Inf (NaNs ignored; −Inf for none) and nan whether one of
// those differences was NaN.
//
//go:noescape
func colDriftAVX2(h, u, off, ref []float64) (H, D float64, nan bool)

// mulAddAVX2 writes x[j]·a + b[j] into dst[j] for the first len(x) &^ 3
// elements (the product rounded first, bitwise as the Go expression on
// amd64).
//
//go:noescape
func mulAddAVX2(dst, x []float64, a float64, b []float64)

// divAVX2 writes a[j] / b[j] into dst[j] for the first len(a) &^ 3
// elements.
//
//go:noescape
func divAVX2(dst, a, b []float64)

// scaleAVX2 writes dst[j]·a into dst[j] for the first len(dst) &^ 3
// elements.
//
//go:noescape
func scaleAVX2(dst []float64, a float64)

// chainFactorsAVX2 is kern.chainFactors over the first len(sig) &^ 3
// columns (the Go loop's bits): inv[c] = 1/sig[c], cf[c] = w[c]·inv[c]
// and the maxima, from 0, of cf[c] and rho[c]·inv[c]. Every input must be
// finite, sig positive, and cf, inv, w and rho at least as long as sig.
//
//go:noescape
func chainFactorsAVX2(cf, inv, sig, w, rho []float64) (qmax, dmax float64)

// mulAVX2 writes a[j]·b[j] into dst[j] for the first len(a) &^ 3 elements.
//
//go:noescape
func mulAVX2(dst, a, b []float64)

// minProdAVX2 returns the least a[j]·b[j], from +Inf, over the first
// len(a) &^ 3 elements (b at least as long; no product NaN).
//
//go:noescape
func minProdAVX2(a, b []float64) float64

// scalePairsAVX2 writes f[i]·src[2i + k] into dst[2i + k] (k = 0, 1) for
// the first len(f) &^ 1 rows.
//
//go:noescape
func scalePairsAVX2(dst, src, f []float64)

// inRangeAVX2 reports whether lo ≤ s[j] ≤ hi for the first len(s) &^ 3
// elements (false where one is NaN).
//
//go:noescape
func inRangeAVX2(s []float64, lo, hi float64) bool

// potentialsAVX2 is a kernel sweep's exactness test and outputs
// (kernelSweep) over the first len(lg) &^ 3 rows: it returns false and
// writes nothing when some lg[i] < top[i] + lim; otherwise it writes
// out[i] = p + (r + scale·(H + lg[i])) with p = nscale·off[i] (nscale =
// −scale) and r = nscale·off[i] − p fused, bitwise as the Go loop.
//
//go:noescape
func potentialsAVX2(out, lg, off, top []float64, nscale, scale, H, lim float64) bool

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

// sumExpAVX2 returns Σ e^(max(buf[j] − mx, expLow)) over the first
// len(buf) &^ 3 elements (the clamp as in sumExpShift), skipping every group
// of four consecutive elements whose buf[j] − mx are all below thr.
//
//go:noescape
func sumExpAVX2(buf []float64, mx, thr float64) float64

// expAVX2 writes e^src[j] into dst[j] for the first len(src) &^ 3 elements:
// 0 below expLow, the polynomial exponential up to expHigh. It reports
// whether an element was above expHigh or NaN; such elements hold wrong
// values and must be recomputed.
//
//go:noescape
func expAVX2(dst, src []float64) bool

// argsMax2AVX2 is argsRow for d = 2 over the first len(u) &^ 3 columns, with
// the same rounding (bitwise equal results); it returns their maximum (NaN if
// an argument is NaN).
//
//go:noescape
func argsMax2AVX2(buf, q, u []float64, p0, p1, invEps, shift float64) float64

// csrGather1AVX2, csrGather2AVX2 and csrGather3AVX2 are gatherRows for one,
// two and three planes: out[m·r + p] = Σ_k plane_p[k]·v[idx[k]] over the
// entries start[r]:start[r+1] of each row r (len(start) − 1 rows; every
// idx[k] < len(v), every plane at least start[nr] long, out at least m
// values per row: the caller's invariants, not checked here).
//
//go:noescape
func csrGather1AVX2(start, idx []int32, a, v, out []float64)

//go:noescape
func csrGather2AVX2(start, idx []int32, a, b, v, out []float64)

//go:noescape
func csrGather3AVX2(start, idx []int32, a, b, c, v, out []float64)

// csrGatherLead1AVX2, csrGatherLead2AVX2 and csrGatherLead3AVX2 are
// csrGather1AVX2, csrGather2AVX2 and csrGather3AVX2 writing the lead plane
// a's sums to out[r] and the others' to rest[(m−1)·r + k], scaled when
// len(f) > 0: out[r] = f_r·Σa, rest[(m−1)·r + k] = (sign·f_r)·Σ (sign ±1;
// the products rounded as written). The caller's invariants are
// csrGather's, with f, out and rest long enough (rest unused for m = 1).
//
//go:noescape
func csrGatherLead1AVX2(start, idx []int32, a, v, f, out, rest []float64, sign float64)

//go:noescape
func csrGatherLead2AVX2(start, idx []int32, a, b, v, f, out, rest []float64, sign float64)

//go:noescape
func csrGatherLead3AVX2(start, idx []int32, a, b, c, v, f, out, rest []float64, sign float64)

// csrDiffs2AVX2 is setDiffs in 2-D for the rows of start (len(start) − 1
// rows; rp holds their points, cp the columns' points, d0 and d1 the two
// planes): the same bits. Every idx[k] indexes a point of cp and the
// slices are long enough: the caller's invariants, not checked here.
//
//go:noescape
func csrDiffs2AVX2(start, idx []int32, val, rp, cp, d0, d1 []float64)

// csrDiffs1AVX2 is setDiffs for one coordinate of 2-D points (rp and cp
// start at that coordinate; points of stride 2) into the plane out: the
// same bits. The caller's invariants are csrDiffs2AVX2's.
//
//go:noescape
func csrDiffs1AVX2(start, idx []int32, val, rp, cp, out []float64)

// count2AVX2 returns, over the first len(buf) &^ 3 elements, the numbers
// of j with buf[j] + ref[j] ≥ cut1 and ≥ cut2 (len(ref) ≥ len(buf)).
//
//go:noescape
func count2AVX2(buf, ref []float64, cut1, cut2 float64) (n1, n2 int)

// rowColMaxAVX2 is the absorption's pass 1 over the first len(buf) &^ 3
// columns: top[j] = max(top[j], buf[j] + ri), and it returns
// max_j buf[j] + ref[j] (−Inf for none). The arguments must not be NaN.
//
//go:noescape
func rowColMaxAVX2(buf, ref, top []float64, ri float64) float64

// subRowColMaxAVX2 is subMaxAVX2's buf[j] = v[j] − ref[j] followed by
// rowColMaxAVX2 on it, in one pass over the first len(buf) &^ 3 columns
// (the same bits). The arguments must not be NaN.
//
//go:noescape
func subRowColMaxAVX2(buf, v, ref, top []float64, ri float64) float64

// selectAVX2 is the absorption's pass 2 over the first len(buf) &^ 3
// columns: it writes to idx, in order, the j with buf[j] + ref[j] ≥ cut or
// buf[j] + ri ≥ topL[j] and returns their number k; it may also overwrite
// idx[k:len(buf)&^3] (len(idx) ≥ len(buf) &^ 3).
//
//go:noescape
func selectAVX2(buf, ref, topL []float64, cut, ri float64, idx []int32) int
