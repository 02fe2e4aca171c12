package ot

import (
	"math"
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
}
