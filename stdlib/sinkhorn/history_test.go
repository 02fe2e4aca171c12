package sinkhorn

import (
	"strings"
	"testing"

	"github.com/shmlang/shm/stdlib/ot"
)

// TestCheckHistory: the iteration history an unrolled gradient keeps
// (iterations × points) is checked against the memory of one evaluation
// before solving; a call without a gradient, with tol or with the
// envelope gradient keeps none and is not refused.
func TestCheckHistory(t *testing.T) {
	const limit = 1 << 20 // words
	unrolled := ot.Options{Iters: 1000}
	for _, tc := range []struct {
		name     string
		opt      ot.Options
		want     bool
		n, m, ch int
		err      string
	}{
		{"small", unrolled, true, 10, 10, 1, ""},
		{"many iterations", ot.Options{Iters: 1000000}, true, 120, 120, 1,
			`sinkhorn: the history of 1000000 iterations over 120 and 120 points kept for the exact gradient needs 9.0 GiB, more than the 8.0 MiB one evaluation may hold; give tol`},
		{"many points", unrolled, true, 10000, 50, 1, "the history of 1000 iterations over 10000 and 50 points"},
		{"channels add up", unrolled, true, 40, 40, 8, "the history of 1000 iterations over 40 and 40 points"},
		{"one channel of them fits", unrolled, true, 40, 40, 1, ""},
		{"no gradient", ot.Options{Iters: 1000000}, false, 120, 120, 1, ""},
		{"tol", ot.Options{Iters: 1000000, Tol: 1e-6}, true, 120, 120, 1, ""},
		{"envelope", ot.Options{Iters: 1000000, Grad: ot.GradEnvelope}, true, 120, 120, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkHistory("sinkhorn", tc.opt, tc.want, tc.n, tc.m, 1, tc.ch, limit)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}
