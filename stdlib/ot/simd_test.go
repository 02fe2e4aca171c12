package ot

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The SIMD kernels are tested against the pure-Go kernels, which are the
// reference (themselves tested against math.Exp and naive formulas).

func TestSIMDKernels(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine: only the pure-Go kernels run")
		return
	}
	rng := rand.New(rand.NewPCG(41, 42))
	var maxUlp float64
	for _, n := range []int{0, 1, 3, 4, 5, 8, 9, 15, 16, 17, 100, 1027} {
		// sumExp: agreement to a few ulps of the sum.
		buf := make([]float64, n)
		for i := range buf {
			buf[i] = -60 * rng.Float64()
			if i%11 == 3 {
				buf[i] = -1000
			}
		}
		n4 := n &^ 3
		want := 0.0
		for _, v := range buf[:n4] {
			want += math.Exp(max(v, expLow))
		}
		got := sumExpAVX2(buf, 0, math.Inf(-1))
		if math.Abs(got-want) > 4e-16*float64(n4+1)*want {
			t.Errorf("n=%d: sumExpAVX2 = %.17g, want %.17g", n, got, want)
		}

		// exp: each element to a few ulps of math.Exp; flags.
		src := make([]float64, n)
		for i := range src {
			src[i] = -750 + 1450*rng.Float64()
			if i%7 == 1 {
				src[i] = -30 * rng.Float64()
			}
		}
		dst := make([]float64, n)
		if bad := expAVX2(dst, src); bad {
			t.Errorf("n=%d: flagged arguments in range", n)
		}
		for i := range src[:n4] {
			if !(src[i] >= expLow) {
				if dst[i] != 0 {
					t.Errorf("exp(%g) = %g, want 0", src[i], dst[i])
				}
				continue
			}
			if math.Exp(src[i]) < 0x1p-1022 {
				continue
			}
			maxUlp = max(maxUlp, ulpErr(dst[i], math.Exp(src[i])))
		}
		if n4 > 0 {
			src[n4-1] = 710
			if !expAVX2(dst, src) {
				t.Errorf("n=%d: argument 710 not flagged", n)
			}
			src[n4-1] = math.NaN()
			if !expAVX2(dst, src) {
				t.Errorf("n=%d: NaN not flagged", n)
			}
		}

		// args, d = 2: bitwise equal to argsRow.
		q := make([]float64, 2*n)
		u := make([]float64, n)
		for i := range q {
			q[i] = rng.NormFloat64()
		}
		for i := range u {
			u[i] = rng.NormFloat64()
		}
		p := []float64{0.3, -0.7}
		b1 := make([]float64, n)
		b2 := make([]float64, n)
		m1 := argsRow(b1[:n4], p, q[:2*n4], u[:n4], 13.7, 0.25)
		m2 := argsMax2AVX2(b2, q, u, p[0], p[1], 13.7, 0.25)
		if n4 > 0 && m1 != m2 {
			t.Errorf("n=%d: max %v vs %v", n, m2, m1)
		}
		for i := range b1[:n4] {
			if b1[i] != b2[i] {
				t.Fatalf("n=%d: args[%d] = %v, pure Go %v", n, i, b2[i], b1[i])
			}
		}
		if n4 > 0 {
			u[n4/2] = math.NaN()
			if m := argsMax2AVX2(b2, q, u, p[0], p[1], 13.7, 0.25); !math.IsNaN(m) {
				t.Errorf("n=%d: NaN argument gave max %v", n, m)
			}
		}
	}
	t.Logf("expAVX2: max error %.2f ulp against math.Exp", maxUlp)
	if maxUlp > 3 {
		t.Errorf("expAVX2 max error %.2f ulp", maxUlp)
	}
}

func TestSIMDWeighted(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{1, 4, 5, 8, 13, 64, 257} {
		e := make([]float64, n)
		q := make([]float64, 2*n)
		for i := range e {
			e[i] = rng.Float64()
		}
		for i := range q {
			q[i] = rng.NormFloat64()
		}
		p := []float64{0.4, -1.1}
		r := -0.37
		for mode := 0; mode < 4; mode++ {
			var cs1, cs2, cg1, cg2 []float64
			if mode&1 != 0 {
				cs1, cs2 = make([]float64, n), make([]float64, n)
				for i := range cs1 {
					cs1[i] = float64(i)
					cs2[i] = float64(i)
				}
			}
			if mode&2 != 0 {
				cg1, cg2 = make([]float64, 2*n), make([]float64, 2*n)
			}
			rg1, rg2 := []float64{1, 2}, []float64{1, 2}
			s1 := weightedRow(e, p, q, r, rg1, cs1, cg1)
			s2 := kern{simd: true}.weighted(e, p, q, r, rg2, cs2, cg2)
			const tol = 1e-13
			if math.Abs(s1-s2) > tol*math.Abs(s1) {
				t.Errorf("n=%d mode=%d: sum %v vs %v", n, mode, s2, s1)
			}
			checkArray(t, "rowGrad", rg2, rg1, tol)
			if cs1 != nil {
				checkArray(t, "colSum", cs2, cs1, tol)
			}
			if cg1 != nil {
				checkArray(t, "colGrad", cg2, cg1, tol)
			}
		}
	}
}

func TestSIMDArgs1AndSubMax(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(45, 46))
	for _, n := range []int{1, 3, 4, 5, 8, 13, 64, 255} {
		q := make([]float64, n)
		u := make([]float64, n)
		v := make([]float64, n)
		kt := make([]float64, n)
		for i := range q {
			q[i] = rng.NormFloat64()
			u[i] = rng.NormFloat64()
			v[i] = rng.NormFloat64()
			kt[i] = rng.Float64()
		}
		p := []float64{0.3}
		b1 := make([]float64, n)
		b2 := make([]float64, n)
		m1 := argsRow(b1, p, q, u, 7.5, -0.5)
		m2 := kern{simd: true}.args(b2, p, q, u, 7.5, -0.5)
		if m1 != m2 {
			t.Errorf("n=%d: d=1 max %v vs %v", n, m2, m1)
		}
		for i := range b1 {
			if b1[i] != b2[i] {
				t.Fatalf("n=%d: d=1 args[%d] = %v, pure Go %v", n, i, b2[i], b1[i])
			}
		}
		m1 = kern{}.subMax(b1, v, kt)
		m2 = kern{simd: true}.subMax(b2, v, kt)
		if m1 != m2 {
			t.Errorf("n=%d: subMax %v vs %v", n, m2, m1)
		}
		for i := range b1 {
			if b1[i] != b2[i] || b1[i] != v[i]-kt[i] {
				t.Fatalf("n=%d: subMax[%d] = %v, pure Go %v", n, i, b2[i], b1[i])
			}
		}
		v[n/2] = math.NaN()
		if m := (kern{simd: true}).subMax(b2, v, kt); !math.IsNaN(m) {
			t.Errorf("n=%d: NaN gave max %v", n, m)
		}
	}
}

func TestSIMDExpWeighted(t *testing.T) {
	for _, d := range []int{1, 2} {
		testSIMDExpWeighted(t, d)
	}
}

func testSIMDExpWeighted(t *testing.T, d int) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(47, 48))
	for _, n := range []int{1, 4, 6, 8, 13, 64, 257} {
		a := make([]float64, n)
		q := make([]float64, d*n)
		for i := range a {
			a[i] = -40 * rng.Float64()
			if i%9 == 2 {
				a[i] = -800 // below expLow: weight 0
			}
		}
		for i := range q {
			q[i] = rng.NormFloat64()
		}
		p := []float64{0.4, -1.1}[:d]
		r := 1.7
		mx := math.Inf(-1)
		for _, v := range a {
			mx = max(mx, v)
		}
		for mode := 0; mode < 4; mode++ {
			var cs1, cs2, cg1, cg2 []float64
			if mode&1 != 0 {
				cs1, cs2 = make([]float64, n), make([]float64, n)
			}
			if mode&2 != 0 {
				cg1, cg2 = make([]float64, d*n), make([]float64, d*n)
			}
			rg1, rg2 := make([]float64, d), make([]float64, d)
			e := make([]float64, n)
			expInto(e, a)
			s1 := weightedRow(e, p, q, r, rg1, cs1, cg1)
			s2 := kern{simd: true}.expWeighted(a, make([]float64, n), mx, p, q, r, rg2, cs2, cg2)
			const tol = 1e-13
			if math.Abs(s1-s2) > tol*math.Abs(s1) {
				t.Errorf("d=%d n=%d mode=%d: sum %v vs %v", d, n, mode, s2, s1)
			}
			checkArray(t, "rowGrad", rg2, rg1, tol)
			if cs1 != nil {
				checkArray(t, "colSum", cs2, cs1, tol)
			}
			if cg1 != nil {
				checkArray(t, "colGrad", cg2, cg1, tol)
			}
		}
	}
}

// TestPruningBound checks that the pruned sum stays within half an ulp
// (plus the rounding of the accumulation) of the unpruned one, on rows whose
// terms are mostly far below the maximum, and that groups are skipped only
// when all four terms are below the threshold.
func TestPruningBound(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(49, 50))
	for _, n := range []int{4, 8, 64, 1000, 4096} {
		buf := make([]float64, n)
		for i := range buf {
			buf[i] = -120 * rng.Float64() // ~60 % of the terms below −50
			if i%13 == 0 {
				buf[i] = -55 + 10*rng.Float64() // straddling the threshold
			}
		}
		buf[rng.IntN(n)] = 0
		full := kern{simd: true, noPrune: true}.sumExp(buf, 0)
		pruned := kern{simd: true}.sumExp(buf, 0)
		if math.Abs(pruned-full) > 4*0x1p-52*full {
			t.Errorf("n=%d: pruned %.17g, full %.17g", n, pruned, full)
		}
	}
}

// ulpDiff returns the distance in units in the last place between two
// finite floats of the same sign.
func ulpDiff(a, b float64) uint64 {
	ia, ib := math.Float64bits(a), math.Float64bits(b)
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestLog checks logInto against math.Log (within one ulp, and equal on
// the special values), and the AVX2 kernel against logInto bit for bit.
func TestLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	var xs []float64
	for range 20000 {
		xs = append(xs, 1+15*rng.Float64()) // the sums of lse: [1, n]
	}
	for range 20000 {
		xs = append(xs, math.Exp(1400*rng.Float64()-700)) // every binade
	}
	xs = append(xs, 1, 2, 0.5, 3, 16, math.Sqrt2/2, math.Nextafter(math.Sqrt2/2, 0), math.Nextafter(math.Sqrt2/2, 2),
		math.Sqrt2, math.Nextafter(1, 2), math.Nextafter(1, 0), 0x1p-1022, math.MaxFloat64, math.E, 10, 1e300)
	special := []float64{0, math.Copysign(0, -1), -1, 0x1p-1074, 0x1p-1030, math.Inf(1), math.Inf(-1), math.NaN()}
	got := make([]float64, len(xs))
	logInto(got, xs)
	for i, x := range xs {
		if want := math.Log(x); ulpDiff(got[i], want) > 1 && !(want == 0 && got[i] == 0) {
			t.Fatalf("log(%v) = %v, math.Log %v (%d ulp)", x, got[i], want, ulpDiff(got[i], want))
		}
	}
	sp := make([]float64, len(special))
	logInto(sp, special)
	for i, x := range special {
		if want := math.Log(x); sp[i] != want && !(math.IsNaN(sp[i]) && math.IsNaN(want)) {
			t.Errorf("log(%v) = %v, math.Log %v", x, sp[i], want)
		}
	}
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	// The kernel on every length and alignment, special values mixed in.
	mixed := append(slices.Clone(xs[:997]), special...)
	rng.Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
	for _, src := range [][]float64{xs, mixed, xs[:1], xs[:3], xs[:4], xs[1:6], mixed[:7]} {
		want := make([]float64, len(src))
		logInto(want, src)
		v := make([]float64, len(src))
		kern{simd: true}.log(v, src)
		for i := range src {
			if math.Float64bits(v[i]) != math.Float64bits(want[i]) && !(math.IsNaN(v[i]) && math.IsNaN(want[i])) {
				t.Fatalf("n=%d: simd log(%v) = %v, pure Go %v", len(src), src[i], v[i], want[i])
			}
		}
	}
	// The kernel reports every element outside its domain.
	for _, x := range special {
		src := []float64{1, 2, x, 3}
		if !logAVX2(make([]float64, 4), src) {
			t.Errorf("logAVX2 did not report %v", x)
		}
	}
	if logAVX2(make([]float64, 4), []float64{1, 0x1p-1022, math.MaxFloat64, 7}) {
		t.Error("logAVX2 reported a valid input")
	}
}

// TestSIMDKernelSums compares the vectorized Toeplitz products of the grid
// path with the pure-Go kernelSums, bit for bit, for output counts around
// the kernel's blocks of 16 and 4 and every line length up to 20.
func TestSIMDKernelSums(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(43, 44))
	for _, n := range []int{1, 3, 4, 7, 8, 15, 16, 17, 20, 32, 37} {
		for m := 1; m <= 20; m++ {
			ev := make([]float64, m)
			for j := range ev {
				ev[j] = math.Exp(-30 * rng.Float64())
			}
			ekb := make([]float64, m+n-1)
			for i := range ekb {
				ekb[i] = math.Exp(-5 * rng.Float64())
			}
			want := make([]float64, n)
			got := make([]float64, n)
			kernelSums(want, ev, ekb)
			kern{simd: true}.kernelSums(got, ev, ekb)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("n=%d m=%d: sums[%d] = %v, pure Go %v", n, m, i, got[i], want[i])
				}
				naive := 0.0
				for j := range ev {
					naive += ev[j] * ekb[m-1-j+i]
				}
				if math.Abs(want[i]-naive) > 1e-14*naive {
					t.Fatalf("n=%d m=%d: sums[%d] = %v, naive sum %v", n, m, i, want[i], naive)
				}
			}
		}
	}
}

// leafProblem returns the rows xs and the candidates q (near a line, in
// order), u of a leaf in d dimensions: terms spanning hundreds of units,
// some of them −Inf (zero weights).
func leafProblem(rng *rand.Rand, rows, cands, d int) (xs, q, u []float64) {
	xs = make([]float64, rows*d)
	q = make([]float64, cands*d)
	u = make([]float64, cands)
	for i := range xs {
		xs[i] = rng.Float64()
	}
	for j := range cands {
		for c := range d {
			q[j*d+c] = float64(j)/float64(cands) + 0.01*rng.NormFloat64()
		}
		u[j] = 30 * rng.NormFloat64()
		if j%11 == 5 {
			u[j] = math.Inf(-1)
		}
	}
	return xs, q, u
}

// argsMax is argsMax1AVX2 or argsMax2AVX2.
func argsMax(buf, q, u, p []float64, invEps, shift float64) float64 {
	if len(p) == 1 {
		return argsMax1AVX2(buf, q, u, p[0], invEps, shift)
	}
	return argsMax2AVX2(buf, q, u, p[0], p[1], invEps, shift)
}

// TestSIMDLseLeaf checks the forward leaf kernels (d = 1, 2) against
// argsMax1AVX2/argsMax2AVX2 and sumExpAVX2 row by row: the maximum
// bitwise, the sum exactly (the kept values packed in order, padded with
// −Inf and summed by sumExpAVX2), the span as the first and last groups
// with a kept value, the argmax as the first maximal element.
func TestSIMDLseLeaf(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(51, 52))
	const invEps = 200.0
	for _, thr := range []float64{-40, -3, -1e300} {
		for _, d := range []int{1, 2} {
			for _, cands := range []int{4, 8, 28, 64} {
				xs, q, u := leafProblem(rng, 9, cands, d)
				rows := len(xs) / d
				buf := make([]float64, cands)
				cb := make([]float64, 2*cands+8)
				for k := range cb {
					cb[k] = math.NaN() // scratch: must not leak into the sums
				}
				out := make([]float64, 2*rows)
				spans := make([]int32, 3*rows)
				if d == 1 {
					lse1LeafAVX2(xs, q, u, buf, cb, out, spans, invEps, thr)
				} else {
					lse2LeafAVX2(xs, q, u, buf, cb, out, spans, invEps, thr)
				}
				ref := make([]float64, cands)
				for r := range rows {
					mx := argsMax(ref, q, u, xs[r*d:r*d+d], invEps, 0)
					if math.Float64bits(mx) != math.Float64bits(out[2*r]) {
						t.Fatalf("thr=%g d=%d cands=%d row %d: max %v, want %v", thr, d, cands, r, out[2*r], mx)
					}
					var kept []float64
					a, z, am := int32(0x7fffffff), int32(-1), int32(-1)
					for g := 0; g < cands; g += 4 {
						for _, v := range ref[g : g+4] {
							if v := v - mx; !(v < thr) {
								kept = append(kept, v)
								if a == 0x7fffffff {
									a = int32(g)
								}
								z = int32(g + 4)
							}
						}
					}
					for len(kept)%4 != 0 {
						kept = append(kept, math.Inf(-1))
					}
					if sum := sumExpAVX2(kept, 0, math.Inf(-1)); sum != out[2*r+1] {
						t.Errorf("thr=%g d=%d cands=%d row %d: sum %v, want %v", thr, d, cands, r, out[2*r+1], sum)
					}
					for j, v := range ref {
						if v == mx {
							am = int32(j)
							break
						}
					}
					if got := spans[3*r : 3*r+3]; got[0] != a || got[1] != z || got[2] != am {
						t.Errorf("thr=%g d=%d cands=%d row %d: span %v, want [%d %d %d]", thr, d, cands, r, got, a, z, am)
					}
				}
			}
		}
	}
}

// TestSIMDExpLeaf checks the backward leaf kernels (d = 1, 2) against
// argsMax1AVX2/argsMax2AVX2 and weightedRow on the kept groups, row by
// row.
func TestSIMDExpLeaf(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(53, 54))
	const invEps, thr = 200.0, -40.0
	const cands = 32
	for _, d := range []int{1, 2} {
		xs, q, u := leafProblem(rng, 7, cands, d)
		rows := len(xs) / d
		ss := make([]float64, rows)
		rs := make([]float64, rows)
		spans := make([]int32, 2*rows)
		buf := make([]float64, cands)
		for r := range rows {
			// Normalize each row over its span so that its weights are ≤ 1.
			a, z := 4*rng.IntN(3), cands-4*rng.IntN(3)
			spans[2*r], spans[2*r+1] = int32(a), int32(z)
			ss[r] = -argsMax(buf[a:z], q[a*d:z*d], u[a:z], xs[r*d:r*d+d], invEps, 0)
			rs[r] = rng.NormFloat64()
		}
		for mode := range 4 {
			var cs1, cs2, cg1, cg2 []float64
			if mode&1 != 0 {
				cs1, cs2 = make([]float64, cands), make([]float64, cands)
			}
			if mode&2 != 0 {
				cg1, cg2 = make([]float64, cands*d), make([]float64, cands*d)
			}
			res := make([]float64, (d+1)*rows)
			scratch, kept := make([]float64, cands), make([]int32, cands/4)
			for k := range scratch {
				scratch[k] = math.NaN() // must not leak into the sums
			}
			if d == 1 {
				exp1LeafAVX2(xs, ss, rs, spans, q, u, cs2, cg2, res, scratch, kept, invEps, thr, mode)
			} else {
				exp2LeafAVX2(xs, ss, rs, spans, q, u, cs2, cg2, res, scratch, kept, invEps, thr, mode)
			}
			for r := range rows {
				got := res[(d+1)*r : (d+1)*r+d+1]
				a, z := int(spans[2*r]), int(spans[2*r+1])
				args := make([]float64, z-a)
				p := xs[r*d : r*d+d]
				argsMax(args, q[a*d:z*d], u[a:z], p, invEps, ss[r])
				var sum float64
				rg := make([]float64, d)
				for g := 0; g < len(args); g += 4 {
					kept := false
					for _, v := range args[g : g+4] {
						kept = kept || !(v < thr)
					}
					if !kept {
						continue
					}
					e := make([]float64, 4)
					expInto(e, args[g:g+4])
					var cs, cg []float64
					if cs1 != nil {
						cs = cs1[a+g : a+g+4]
					}
					if cg1 != nil {
						cg = cg1[(a+g)*d : (a+g+4)*d]
					}
					sum += weightedRow(e, p, q[(a+g)*d:(a+g+4)*d], rs[r], rg, cs, cg)
				}
				const tol = 1e-13
				if math.Abs(got[0]-sum) > tol*sum {
					t.Errorf("d=%d mode %d row %d: sum %v, want %v", d, mode, r, got[0], sum)
				}
				for c := range d {
					if math.Abs(got[1+c]-rg[c]) > tol*sum {
						t.Errorf("d=%d mode %d row %d: row gradient %v, want %v", d, mode, r, got[1:], rg)
					}
				}
			}
			if cs1 != nil {
				checkArray(t, "colSum", cs2, cs1, 1e-13)
			}
			if cg1 != nil {
				checkArray(t, "colGrad", cg2, cg1, 1e-13)
			}
		}
	}
}

// TestSIMDScalingKernels checks the scaling path's kernels against their
// pure-Go forms: gatherRows for one to three planes on random compressed
// rows (empty rows, rows of 1 to 13 entries, repeated and far columns) to
// a few ulps of the sums of absolute terms (its split and scaled outputs
// bitwise against the interleaved ones), and the absorption's two
// passes (rowColMaxAVX2, selectAVX2) exactly, for lengths around
// multiples of four.
func TestSIMDScalingKernels(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine: only the pure-Go kernels run")
		return
	}
	rng := rand.New(rand.NewPCG(43, 44))
	const nc = 57
	v := make([]float64, nc)
	for j := range v {
		v[j] = rng.NormFloat64()
	}
	var m csr
	m.start = []int32{0}
	for r := range 40 {
		n := r % 14
		if r%9 == 4 {
			n = 0
		}
		for range n {
			m.idx = append(m.idx, int32(rng.IntN(nc)))
		}
		m.start = append(m.start, int32(len(m.idx)))
	}
	m.ncol = nc
	nnz := len(m.idx)
	var planes [3][]float64
	for p := range planes {
		planes[p] = make([]float64, nnz)
		for k := range planes[p] {
			planes[p][k] = rng.NormFloat64() * math.Exp2(float64(rng.IntN(20)-10))
		}
	}
	nr := len(m.start) - 1
	for np := 1; np <= 3; np++ {
		want := make([]float64, np*nr)
		got := make([]float64, np*nr)
		kern{}.gatherRows(&m, planes, np, v, gatherDst{out: want})
		kern{simd: true}.gatherRows(&m, planes, np, v, gatherDst{out: got})
		for r := range nr {
			for p := range np {
				var abs float64
				for k := m.start[r]; k < m.start[r+1]; k++ {
					abs += math.Abs(planes[p][k] * v[m.idx[k]])
				}
				if d := math.Abs(got[np*r+p] - want[np*r+p]); !(d <= 4e-16*float64(m.start[r+1]-m.start[r]+1)*abs) {
					t.Errorf("np=%d row %d plane %d: %.17g, pure Go %.17g", np, r, p, got[np*r+p], want[np*r+p])
				}
			}
		}
		if np > 1 { // a plane's sums do not depend on the other planes
			one := make([]float64, nr)
			kern{simd: true}.gatherRows(&m, planes, 1, v, gatherDst{out: one})
			for r := range nr {
				if one[r] != got[np*r] {
					t.Errorf("np=%d row %d: plane 0 sum %.17g, alone %.17g", np, r, got[np*r], one[r])
				}
			}
		}
		// The split outputs, unscaled and scaled, are the interleaved
		// sums times the factors, bitwise, on both kernels.
		f := make([]float64, nr)
		for r := range f {
			f[r] = rng.NormFloat64()
		}
		for _, simd := range []bool{false, true} {
			sums := want
			if simd {
				sums = got
			}
			for _, scale := range []bool{false, true} {
				dst := gatherDst{lead: make([]float64, nr), rest: make([]float64, (np-1)*nr), sign: -1}
				if scale {
					dst.f = f
				}
				kern{simd: simd}.gatherRows(&m, planes, np, v, dst)
				for r := range nr {
					lead, rest := sums[np*r], sums[np*r+1:np*r+np]
					if scale {
						lead = f[r] * lead
					}
					if math.Float64bits(dst.lead[r]) != math.Float64bits(lead) {
						t.Errorf("simd=%v np=%d scaled=%v row %d: lead %.17g, want %.17g", simd, np, scale, r, dst.lead[r], lead)
					}
					for p, x := range rest {
						if scale {
							x = -f[r] * x
						}
						if y := dst.rest[(np-1)*r+p]; math.Float64bits(y) != math.Float64bits(x) {
							t.Errorf("simd=%v np=%d scaled=%v row %d plane %d: %.17g, want %.17g", simd, np, scale, r, p+1, y, x)
						}
					}
				}
			}
		}
	}

	// The gradient planes in 2-D (csrDiffs2AVX2): the pure-Go bits.
	m.val = planes[0]
	rp, cp := make([]float64, 2*nr), make([]float64, 2*nc)
	for k := range rp {
		rp[k] = rng.NormFloat64()
	}
	for k := range cp {
		cp[k] = rng.NormFloat64()
	}
	goDiffs, asmDiffs := m, m
	goDiffs.diff, asmDiffs.diff = nil, nil
	kern{}.setDiffs(&goDiffs, rp, cp, 2, nil)
	kern{simd: true}.setDiffs(&asmDiffs, rp, cp, 2, nil)
	for k, x := range goDiffs.diff {
		if y := asmDiffs.diff[k]; math.Float64bits(x) != math.Float64bits(y) {
			t.Errorf("setDiffs entry %d of %d: %.17g, pure Go %.17g", k%nnz, k/nnz, y, x)
		}
	}
	// One coordinate's plane: the same bits as that plane of both.
	for c := range 2 {
		one := m
		one.diff = nil
		kern{simd: true}.setDiffs(&one, rp, cp, 2, []int{c})
		if len(one.diff) < nnz {
			t.Fatalf("setDiffs of coordinate %d: %d entries, want %d", c, len(one.diff), nnz)
		}
		for k, x := range goDiffs.diff[c*nnz : (c+1)*nnz] {
			if y := one.diff[k]; math.Float64bits(x) != math.Float64bits(y) {
				t.Errorf("setDiffs of coordinate %d, entry %d: %.17g, both planes %.17g", c, k, y, x)
			}
		}
	}

	for _, n := range []int{4, 5, 8, 11, 16, 33} {
		buf, ref, top := make([]float64, n), make([]float64, n), make([]float64, n)
		for j := range buf {
			buf[j] = -20 * rng.Float64()
			ref[j] = rng.NormFloat64()
			top[j] = -5 * rng.Float64()
			if j%5 == 2 {
				buf[j] = math.Inf(-1)
			}
		}
		n4 := n &^ 3
		ri := 0.3
		topGo := slices.Clone(top)
		mr := math.Inf(-1)
		for j := range n4 {
			mr = max(mr, buf[j]+ref[j])
			topGo[j] = max(topGo[j], buf[j]+ri)
		}
		topAsm := slices.Clone(top)
		if got := rowColMaxAVX2(buf[:n4], ref[:n4], topAsm[:n4], ri); got != mr {
			t.Errorf("n=%d: rowColMaxAVX2 = %v, want %v", n, got, mr)
		}
		if !slices.Equal(topAsm, topGo) {
			t.Errorf("n=%d: rowColMaxAVX2 columns %v, want %v", n, topAsm, topGo)
		}
		// Fused with the subtraction that forms buf (v = buf + ref's
		// inputs: any finite or −Inf v).
		v := make([]float64, n)
		for j := range v {
			v[j] = buf[j] + 2*ref[j]
		}
		want := make([]float64, n)
		kern{}.subMax(want, v, ref)
		topGo2 := slices.Clone(top)
		mr2 := math.Inf(-1)
		for j := range n4 {
			mr2 = max(mr2, want[j]+ref[j])
			topGo2[j] = max(topGo2[j], want[j]+ri)
		}
		got, topAsm2 := make([]float64, n), slices.Clone(top)
		if m := subRowColMaxAVX2(got[:n4], v[:n4], ref[:n4], topAsm2[:n4], ri); m != mr2 {
			t.Errorf("n=%d: subRowColMaxAVX2 = %v, want %v", n, m, mr2)
		}
		if !slices.Equal(got[:n4], want[:n4]) || !slices.Equal(topAsm2, topGo2) {
			t.Errorf("n=%d: subRowColMaxAVX2 wrote %v and %v, want %v and %v", n, got[:n4], topAsm2, want[:n4], topGo2)
		}
		cut := -8.0
		var sel []int32
		for j := range n4 {
			if buf[j]+ref[j] >= cut || buf[j]+ri >= top[j] {
				sel = append(sel, int32(j))
			}
		}
		idx := make([]int32, n)
		k := selectAVX2(buf[:n4], ref[:n4], top[:n4], cut, ri, idx)
		if !slices.Equal(idx[:k], sel) {
			t.Errorf("n=%d: selectAVX2 kept %v, want %v", n, idx[:k], sel)
		}
		for _, cuts := range [][2]float64{{-8, -15}, {-3, -30}, {math.Inf(-1), 0}} {
			a, b := countAbove(buf, ref, cuts[0], cuts[1], true)
			wa, wb := countAbove(buf, ref, cuts[0], cuts[1], false)
			if a != wa || b != wb {
				t.Errorf("n=%d cuts %v: countAbove %d, %d on AVX2, %d, %d in Go", n, cuts, a, b, wa, wb)
			}
		}
	}
}

// TestSIMDAddScaled checks addScaledAVX2 against the Go loop bitwise, for
// lengths around multiples of four, and that it leaves the tail alone.
func TestSIMDAddScaled(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(61, 62))
	for _, n := range []int{0, 1, 3, 4, 5, 8, 13, 64} {
		src, dst := make([]float64, n), make([]float64, n)
		for k := range src {
			src[k] = rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20))
			dst[k] = rng.NormFloat64()
		}
		a := -2 * rng.Float64()
		want, got := slices.Clone(dst), slices.Clone(dst)
		for k, v := range src {
			want[k] += a * v
		}
		kern{simd: true}.addScaled(got, src, a)
		for k := range want {
			if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
				t.Errorf("n=%d element %d: %.17g, want %.17g", n, k, got[k], want[k])
			}
		}
		n4 := n &^ 3
		tail := slices.Clone(dst)
		addScaledAVX2(tail, src, a)
		for k := n4; k < n; k++ {
			if tail[k] != dst[k] {
				t.Errorf("n=%d: the kernel changed element %d of the tail", n, k)
			}
		}
	}
}

// TestSIMDColumnFactors checks the column factors' kernels: colDriftAVX2
// against the Go loop (NaN and infinite entries included: H ignores NaNs,
// D skips the columns whose reference is −Inf and reports NaNs), and
// expShiftAVX2 bitwise against expAVX2 of the rounded differences.
func TestSIMDColumnFactors(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{4, 8, 12, 36} {
		for trial := range 6 {
			u, off, ref := make([]float64, n), make([]float64, n), make([]float64, n)
			for j := range u {
				u[j] = 50 * rng.NormFloat64()
				off[j] = 50 * rng.NormFloat64()
				ref[j] = 10 * rng.NormFloat64()
				switch rng.IntN(8) {
				case 0:
					ref[j] = math.Inf(-1)
				case 1:
					if trial >= 3 {
						u[j] = math.NaN()
					}
				case 2:
					if trial >= 4 {
						ref[j] = math.NaN()
					}
				}
			}
			wantH, wantD := math.Inf(-1), math.Inf(-1)
			wantNaN := false
			for j := range u {
				x := u[j] - off[j]
				if x > wantH {
					wantH = x
				}
				if r := ref[j]; r > math.Inf(-1) {
					y := x - r
					if y != y {
						wantNaN = true
					} else if y > wantD {
						wantD = y
					}
				}
			}
			h := make([]float64, n)
			H, D, nan := colDriftAVX2(h, u, off, ref)
			if H != wantH || D != wantD || nan != wantNaN {
				t.Errorf("n=%d trial %d: H, D, nan = %v, %v, %v; want %v, %v, %v", n, trial, H, D, nan, wantH, wantD, wantNaN)
			}
			for j := range h {
				if x := u[j] - off[j]; math.Float64bits(h[j]) != math.Float64bits(x) && !(x != x && h[j] != h[j]) {
					t.Errorf("n=%d trial %d: h[%d] = %v, want %v", n, trial, j, h[j], x)
				}
			}
			if math.IsInf(H, 0) {
				continue
			}
			diff, want, got := make([]float64, n), make([]float64, n), make([]float64, n)
			for j := range diff {
				diff[j] = h[j] - H
			}
			badWant := expAVX2(want, diff)
			badGot := expShiftAVX2(got, h, H)
			if badWant != badGot {
				t.Errorf("n=%d trial %d: bad %v, want %v", n, trial, badGot, badWant)
			}
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) && !(badWant && diff[j] != diff[j]) {
					t.Errorf("n=%d trial %d: e^(h − H)[%d] = %v, want %v", n, trial, j, got[j], want[j])
				}
			}
		}
	}
}

// TestSIMDVectorOps checks the small vector kernels of the sweeps bitwise
// against their Go loops (kern with and without simd), for lengths around
// multiples of four: mulAdd, div, scaleRows (d = 2), inRange (NaN and
// bounds included) and potentials (both outcomes of its test, out
// unchanged when it fails).
func TestSIMDVectorOps(t *testing.T) {
	if !haveSIMD {
		t.Log("no AVX2/FMA on this machine")
		return
	}
	rng := rand.New(rand.NewPCG(65, 66))
	same := func(name string, n int, got, want []float64) {
		t.Helper()
		for j := range want {
			if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
				t.Errorf("%s n=%d element %d: %.17g, want %.17g", name, n, j, got[j], want[j])
				return
			}
		}
	}
	vec := func(n int, scale float64) []float64 {
		v := make([]float64, n)
		for j := range v {
			v[j] = scale * rng.NormFloat64() * math.Exp2(float64(rng.IntN(20)-10))
		}
		return v
	}
	simd, scalar := kern{simd: true}, kern{}
	for _, n := range []int{1, 3, 4, 5, 8, 13, 30} {
		x, b, y := vec(n, 50), vec(n, 5), vec(n, 1)
		want, got := make([]float64, n), make([]float64, n)
		scalar.mulAdd(want, x, 0.37, b)
		simd.mulAdd(got, x, 0.37, b)
		same("mulAdd", n, got, want)

		scalar.div(want, x, y)
		simd.div(got, x, y)
		same("div", n, got, want)

		src := vec(2*n, 3)
		want2, got2 := make([]float64, 2*n), make([]float64, 2*n)
		scalar.scaleRows(want2, src, y, 2)
		simd.scaleRows(got2, src, y, 2)
		same("scaleRows", n, got2, want2)

		pos := make([]float64, n)
		for j := range pos {
			pos[j] = math.Abs(y[j]) + 1
		}
		for k := range n + 1 {
			s := slices.Clone(pos)
			if k < n {
				s[k] = [...]float64{math.NaN(), 0.5, 1e300}[k%3]
			}
			wantOK := scalar.inRange(s, 1, 1e200)
			if got := simd.inRange(s, 1, 1e200); got != wantOK || wantOK != (k == n) {
				t.Errorf("inRange n=%d k=%d: %v, pure Go %v", n, k, got, wantOK)
			}
		}

		lg, off, top := vec(n, 10), vec(n, 1e3), vec(n, 10)
		for k := range n + 1 {
			tp := slices.Clone(top)
			for j := range tp {
				tp[j] = lg[j] - 1 - math.Abs(tp[j]) // passes with lim = 0
			}
			if k < n {
				tp[k] = lg[k] + 1 // fails
			}
			w, g := slices.Clone(x), slices.Clone(x)
			okW := scalar.potentials(w, lg, off, tp, -0.3, 2.5, 0)
			okG := simd.potentials(g, lg, off, tp, -0.3, 2.5, 0)
			if okW != okG || okW != (k == n) {
				t.Errorf("potentials n=%d k=%d: %v, pure Go %v", n, k, okG, okW)
			}
			same("potentials", n, g, w)
			if !okG {
				same("potentials (failed: unchanged)", n, g, x)
			}
		}

		// The chained sweeps' kernels (scaling_chain.go): positive sums,
		// weights and drift factors, some zero.
		sig, wt, rho := make([]float64, n), make([]float64, n), make([]float64, n)
		for j := range sig {
			sig[j] = math.Abs(x[j]) + 1e-300
			wt[j] = math.Abs(b[j])
			rho[j] = math.Abs(y[j])
		}
		wt[n/2], rho[(n-1)/3] = 0, 0
		invW, invG := make([]float64, n), make([]float64, n)
		qw, dw := scalar.chainFactors(want, invW, sig, wt, rho)
		qg, dg := simd.chainFactors(got, invG, sig, wt, rho)
		same("chainFactors", n, got, want)
		same("chainFactors reciprocals", n, invG, invW)
		same("chainFactors maxima", n, []float64{qg, dg}, []float64{qw, dw})
		var q, d float64
		for j := range sig { // the maxima themselves
			q, d = max(q, wt[j]/sig[j]), max(d, rho[j]/sig[j])
		}
		if !(math.Abs(qg-q) <= 2e-16*q && math.Abs(dg-d) <= 2e-16*d) {
			t.Errorf("chainFactors n=%d: maxima %.17g, %.17g, want %.17g, %.17g", n, qg, dg, q, d)
		}
		scalar.mul(want, x, y)
		simd.mul(got, x, y)
		same("mul", n, got, want)
		w, g := slices.Clone(x), slices.Clone(x)
		scalar.scale(w, 0.37)
		simd.scale(g, 0.37)
		same("scale", n, g, w)
		mw, mg := scalar.minProd(x, y), simd.minProd(x, y)
		same("minProd", n, []float64{mg}, []float64{mw})
		m := math.Inf(1)
		for j := range x {
			m = min(m, x[j]*y[j])
		}
		if mg != m {
			t.Errorf("minProd n=%d: %.17g, want %.17g", n, mg, m)
		}
	}
}
