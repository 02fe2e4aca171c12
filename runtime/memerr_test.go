package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

// TestBuiltinMemoryErrorStops: a built-in's refusal of a size for want of
// memory (stdlib.ErrMemory) is an error that stops the run, at the call's
// position, not a domain error that would reject the proposal and be
// retried; a built-in's other failures stay domain errors.
func TestBuiltinMemoryErrorStops(t *testing.T) {
	if sysmem.MaxElements() == 0 {
		t.Skip("the memory is unknown: no size is refused")
	}
	for _, tc := range []struct {
		name, expr string
		domain     bool
		want       string
	}{
		{"size beyond the memory", "sum(rep_matrix(mu, 1000000, 1000000))", false, "t.shm:2:47: rep_matrix: a result of 1e+12 elements"},
		{"a negative size: a domain error", "sum(rep_vector(mu, -1))", true, "size must be non-negative"},
		{"history beyond the evaluation", "sinkhorn([mu, 1]', [1, 2]', eps = 0.1, iters = 100000000)", false, "sinkhorn: the history of 100000000 iterations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "parameters { real mu; }\nmodel { mu ~ normal(0, 1); target += 0 * (" + tc.expr + "); }"
			m, errs := ir.CheckSource("t.shm", src)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			bm, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			d, err := bm.NewDensity()
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.LogDensityGrad([]float64{0.5}, make([]float64, 1))
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T), want a runtime *Error", err, err)
			}
			if re.Domain != tc.domain || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v (domain %v), want domain %v and %q", err, re.Domain, tc.domain, tc.want)
			}
		})
	}
}
