package ot

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulpErr returns |got − want| in units of the last place of want.
func ulpErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	ulp := math.Nextafter(want, math.Inf(1)) - want
	return math.Abs(got-want) / ulp
}

// TestFastExpAccuracy measures the error of fastExp against math.Exp over
// the arguments that occur: [−708, 0] in the shifted log-sum-exp, up to 709
// in plans. The measured maximum is recorded in BENCHMARKS-ot.md.
func TestFastExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var maxUlp, maxRel float64
	check := func(x float64) {
		got, want := fastExp(x), math.Exp(x)
		if want < 0x1p-1022 { // the polynomial path stops at normal results
			return
		}
		maxUlp = max(maxUlp, ulpErr(got, want))
		maxRel = max(maxRel, math.Abs(got-want)/want)
	}
	for range 2_000_000 {
		check(-50 * rng.Float64()) // where the sums get their digits
	}
	for range 500_000 {
		check(expLow + (expHigh-expLow)*rng.Float64())
	}
	for _, x := range []float64{0, -0.5 * math.Ln2, 0.5 * math.Ln2, -1e-300, 1e-300, expLow, expHigh, -1, 1} {
		check(x)
	}
	t.Logf("fastExp: max error %.2f ulp, max relative error %.3g", maxUlp, maxRel)
	if maxUlp > 3 {
		t.Errorf("fastExp max error %.2f ulp, want ≤ 3", maxUlp)
	}
	// Special values.
	for _, tc := range []struct{ x, want float64 }{
		{math.Inf(-1), 0}, {-1000, 0}, {expLow - 1, 0}, {710, math.Inf(1)}, {math.Inf(1), math.Inf(1)},
	} {
		if got := fastExp(tc.x); got != tc.want {
			t.Errorf("fastExp(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := fastExp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("fastExp(NaN) = %g", got)
	}
	// The in-loop forms agree with fastExp bitwise.
	buf := make([]float64, 1000)
	want := make([]float64, len(buf))
	for i := range buf {
		buf[i] = -800 + 1600*rng.Float64()
		if i%7 == 0 {
			buf[i] = math.Inf(-1)
		}
		want[i] = fastExp(buf[i])
	}
	expInto(buf, buf)
	for i := range buf {
		if buf[i] != want[i] {
			t.Fatalf("expInto differs from fastExp at %d: %g vs %g", i, buf[i], want[i])
		}
	}
}

func TestSumExpShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 64, 1001} {
		buf := make([]float64, n)
		for i := range buf {
			buf[i] = -60 * rng.Float64()
		}
		buf[rng.IntN(n)] = 0
		var want float64
		for _, v := range buf {
			want += math.Exp(v)
		}
		got := sumExpShift(buf, 0)
		if math.Abs(got-want) > 1e-15*want*float64(n) {
			t.Errorf("n=%d: sumExpShift = %.17g, want %.17g", n, got, want)
		}
	}
}
