package runtime

import (
	"strings"
	"testing"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

// TestCRNReplicatesMemory: the replicates of crn(K, ...) each keep their
// tape (and built-ins' working memory) between evaluations; K times what
// the first holds is checked against the memory of one evaluation
// (Options.MaxValues) before the others are created, and refused at K,
// with one worker or several. K within the bound is evaluated.
func TestCRNReplicatesMemory(t *testing.T) {
	const limit = 1 << 18 // values
	for _, tc := range []struct {
		name    string
		k       int
		body    string
		workers int
		want    string // "" when it fits
	}{
		{"fits", 4, tapeBody, 1, ""},
		{"fits, several workers", 4, tapeBody, 3, ""},
		{"too many replicates", 100000, tapeBody, 1, "t.shm:3:24: crn: 100000 replicates, each holding"},
		{"too many replicates, several workers", 100000, tapeBody, 3, "more than the 2.0 MiB one evaluation may hold"},
		{"how many fit", 100000, tapeBody, 1, "replicates fit"},
		// A small tape, but a Sinkhorn workspace with its history.
		{"Sinkhorn fits", 2, sinkhornBody, 1, ""},
		{"Sinkhorn's workspaces", 1000, sinkhornBody, 2, "t.shm:3:24: crn: 1000 replicates, each holding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `
parameters { real a; real b; }
model { target += -crn(` + itoa(tc.k) + `, ` + tc.body + `); }`
			m, errs := ir.CheckSource("t.shm", src)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			bm, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), Seed: 1, MaxValues: limit})
			if err != nil {
				t.Fatal(err)
			}
			d := newCRNDensity(t, bm, tc.workers, false)
			_, err = d.LogDensityGrad([]float64{0.1, 0.2}, make([]float64, 2))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if tc.want != "" && len(d.ev.crn.reps) > 1 {
				t.Errorf("%d replicates created before the refusal", len(d.ev.crn.reps))
			}
		})
	}
}

const (
	tapeBody     = "mean(exp(a + b * std_normal_rng(2000)))"
	sinkhornBody = "sinkhorn(a + b * std_normal_rng(100), b * std_normal_rng(100), eps = 0.3, iters = 50)"
)

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}
