//go:build !amd64 || purego

package ot

// haveSIMD is false: only the pure-Go kernels exist on this platform.
const haveSIMD = false

func sumExpAVX2(buf []float64, mx, thr float64) float64 { panic("ot: no SIMD kernels") }

func expAVX2(dst, src []float64) bool { panic("ot: no SIMD kernels") }

func argsMax2AVX2(buf, q, u []float64, p0, p1, invEps, shift float64) float64 {
	panic("ot: no SIMD kernels")
}

func weighted2AVX2(e, q, colSum, colGrad []float64, p0, p1, r float64, mode int, sums *[3]float64) {
	panic("ot: no SIMD kernels")
}

func argsMax1AVX2(buf, q, u []float64, p0, invEps, shift float64) float64 {
	panic("ot: no SIMD kernels")
}

func subMaxAVX2(buf, v, kt []float64) float64 { panic("ot: no SIMD kernels") }

func logAVX2(dst, src []float64) bool { panic("ot: no SIMD kernels") }

func expWeighted2AVX2(a, q, colSum, colGrad []float64, p0, p1, r float64, mode int, sums *[3]float64) {
	panic("ot: no SIMD kernels")
}

func expWeighted1AVX2(a, q, colSum, colGrad []float64, p0, r float64, mode int, sums *[2]float64) {
	panic("ot: no SIMD kernels")
}

func lse1LeafAVX2(xs, q, u, buf, cb, out []float64, spans []int32, invEps, negThr float64) {
	panic("ot: no SIMD kernels")
}

func exp1LeafAVX2(xs, ss, rs []float64, spans []int32, q, u, colSum, colGrad, res, buf []float64, kept []int32, invEps, negThr float64, mode int) {
	panic("ot: no SIMD kernels")
}

func lse2LeafAVX2(xs, q, u, buf, cb, out []float64, spans []int32, invEps, negThr float64) {
	panic("ot: no SIMD kernels")
}

func exp2LeafAVX2(xs, ss, rs []float64, spans []int32, q, u, colSum, colGrad, res, buf []float64, kept []int32, invEps, negThr float64, mode int) {
	panic("ot: no SIMD kernels")
}

func kernelSumsAVX2(sums, ev, ekb []float64) { panic("ot: no SIMD kernels") }

func csrGather1AVX2(start, idx []int32, a, v, out []float64) { panic("ot: no SIMD kernels") }

func csrGather2AVX2(start, idx []int32, a, b, v, out []float64) { panic("ot: no SIMD kernels") }

func csrGather3AVX2(start, idx []int32, a, b, c, v, out []float64) {
	panic("ot: no SIMD kernels")
}

func csrGatherLead1AVX2(start, idx []int32, a, v, f, out, rest []float64, sign float64) {
	panic("ot: no SIMD kernels")
}

func csrGatherLead2AVX2(start, idx []int32, a, b, v, f, out, rest []float64, sign float64) {
	panic("ot: no SIMD kernels")
}

func csrGatherLead3AVX2(start, idx []int32, a, b, c, v, f, out, rest []float64, sign float64) {
	panic("ot: no SIMD kernels")
}

func csrDiffs2AVX2(start, idx []int32, val, rp, cp, d0, d1 []float64) {
	panic("ot: no SIMD kernels")
}

func csrDiffs1AVX2(start, idx []int32, val, rp, cp, out []float64) { panic("ot: no SIMD kernels") }

func count2AVX2(buf, ref []float64, cut1, cut2 float64) (n1, n2 int) {
	panic("ot: no SIMD kernels")
}

func addScaledAVX2(dst, src []float64, a float64) { panic("ot: no SIMD kernels") }

func expShiftAVX2(dst, src []float64, shift float64) bool { panic("ot: no SIMD kernels") }

func colDriftAVX2(h, u, off, ref []float64) (H, D float64, nan bool) {
	panic("ot: no SIMD kernels")
}

func mulAddAVX2(dst, x []float64, a float64, b []float64) { panic("ot: no SIMD kernels") }

func divAVX2(dst, a, b []float64) { panic("ot: no SIMD kernels") }

func scaleAVX2(dst []float64, a float64) { panic("ot: no SIMD kernels") }

func chainFactorsAVX2(cf, inv, sig, w, rho []float64) (qmax, dmax float64) {
	panic("ot: no SIMD kernels")
}

func mulAVX2(dst, a, b []float64) { panic("ot: no SIMD kernels") }

func minProdAVX2(a, b []float64) float64 { panic("ot: no SIMD kernels") }

func scalePairsAVX2(dst, src, f []float64) { panic("ot: no SIMD kernels") }

func inRangeAVX2(s []float64, lo, hi float64) bool { panic("ot: no SIMD kernels") }

func potentialsAVX2(out, lg, off, top []float64, nscale, scale, H, lim float64) bool {
	panic("ot: no SIMD kernels")
}

func rowColMaxAVX2(buf, ref, top []float64, ri float64) float64 { panic("ot: no SIMD kernels") }

func subRowColMaxAVX2(buf, v, ref, top []float64, ri float64) float64 {
	panic("ot: no SIMD kernels")
}

func selectAVX2(buf, ref, topL []float64, cut, ri float64, idx []int32) int {
	panic("ot: no SIMD kernels")
}
