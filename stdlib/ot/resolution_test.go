package ot

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestResolution(t *testing.T) {
	grid := func(h, w int, step float64) []float64 {
		var x []float64
		for r := 0; r < h; r++ {
			for c := 0; c < w; c++ {
				x = append(x, step*float64(r), step*float64(c))
			}
		}
		return x
	}
	for _, tc := range []struct {
		name string
		x    []float64
		n, d int
		want float64
	}{
		{"grid 4x5 unit", grid(4, 5, 1), 20, 2, 1},
		{"grid 3x3 step 0.25", grid(3, 3, 0.25), 9, 2, 0.25},
		// 1-D points 0, 1, 3, 7: nearest distances 1, 1, 2, 4 → median 1.5.
		{"1d even", []float64{0, 1, 3, 7}, 4, 1, 1.5},
		// 0, 1, 3, 7, 15: 1, 1, 2, 4, 8 → 2.
		{"1d odd", []float64{15, 0, 7, 1, 3}, 5, 1, 2},
		// duplicates count as 0: 0, 0, 0, 5 → nearest 0, 0, 0, 5 → 0.
		{"duplicates", []float64{0, 0, 0, 5}, 4, 1, 0},
		// 3-D: two pairs at distances 3 (3-4-... ) → (0,0,0),(1,2,2) dist 3; (10,10,10),(10,10,14) dist 4.
		{"3d pairs", []float64{0, 0, 0, 1, 2, 2, 10, 10, 10, 10, 10, 14}, 4, 3, 3.5},
	} {
		got, err := Resolution(tc.x, tc.n, tc.d)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(got-tc.want) > 1e-15*math.Max(1, tc.want) {
			t.Errorf("%s: Resolution = %.17g, want %.17g", tc.name, got, tc.want)
		}
	}
	if _, err := Resolution([]float64{1, 2}, 1, 2); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("one point: error %v", err)
	}
	if _, err := Resolution([]float64{1, 2, 3}, 2, 2); err == nil || !strings.Contains(err.Error(), "3 coordinates") {
		t.Errorf("bad length: error %v", err)
	}
	if _, err := Resolution([]float64{1, 2, 3, math.NaN()}, 2, 2); err == nil || !strings.Contains(err.Error(), "coordinate 2 of point 2 is NaN") {
		t.Errorf("NaN: error %v", err)
	}
}

// TestResolutionMatchesBruteForce compares the tree search with the
// brute-force nearest distances, bit for bit, on clustered points with
// duplicates in 1, 2, 3 and 5 dimensions.
func TestResolutionMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, d := range []int{1, 2, 3, 5} {
		for _, n := range []int{2, 3, 17, 300} {
			x := make([]float64, n*d)
			for i := range n {
				c := float64(rng.IntN(3)) * 10
				for k := range d {
					x[i*d+k] = c + rng.NormFloat64()*math.Pow(10, -float64(rng.IntN(6)))
				}
				if i > 0 && i%7 == 0 { // a duplicate
					copy(x[i*d:i*d+d], x[(i-1)*d:i*d])
				}
			}
			got := nearestSq(x, n, d)
			for i := range n {
				want := math.Inf(1)
				for j := range n {
					if j != i {
						want = min(want, sqDist(x[i*d:i*d+d], x[j*d:j*d+d]))
					}
				}
				if math.Float64bits(got[i]) != math.Float64bits(want) {
					t.Fatalf("d=%d n=%d point %d: nearest %v, brute force %v", d, n, i, got[i], want)
				}
			}
		}
	}
}

// TestResolutionRepeatedValues: points that repeat (all equal, or two
// values) have resolution 0 and take O(n log n), not O(n²): 80 000 equal
// values took 41 s, and 2 million did not finish in 10 minutes. The
// distances are still the brute force's for points without a duplicate.
func TestResolutionRepeatedValues(t *testing.T) {
	const n = 200_000
	equal := make([]float64, n)
	twoValues := make([]float64, n)
	for i := range twoValues {
		twoValues[i] = float64(i % 2)
	}
	for _, tc := range []struct {
		name string
		x    []float64
		d    int
	}{
		{"all equal, 1-D", equal, 1},
		{"all equal, 2-D", equal, 2},
		{"two values", twoValues, 1},
		{"two values, 2-D", twoValues, 2},
	} {
		h, err := Resolution(tc.x, len(tc.x)/tc.d, tc.d)
		if err != nil || h != 0 {
			t.Errorf("%s: %g, %v; want 0", tc.name, h, err)
		}
	}
	// One point apart from many duplicates: its nearest neighbour is 3
	// away, the others' 0.
	x := append(make([]float64, 9), 3)
	nn := nearestSq(x, 10, 1)
	for i, v := range nn {
		want := 0.0
		if i == 9 {
			want = 9
		}
		if v != want {
			t.Errorf("point %d: squared distance %g, want %g", i+1, v, want)
		}
	}
}
