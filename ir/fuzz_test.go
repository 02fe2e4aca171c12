package ir

import (
	"context"
	"testing"

	"github.com/shmlang/shm/internal/testprogs"
	"github.com/shmlang/shm/parser"
)

// FuzzCheck checks that no input makes the parser or the checker panic,
// that a program is either accepted with a model or rejected with errors,
// and that a prefix of it has its errors (what checkSource relies on).
func FuzzCheck(f *testing.F) {
	for _, src := range testprogs.All(f, "..") {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		m, errs := CheckSource("fuzz.shm", src)
		if (m == nil) == (len(errs) == 0) {
			t.Fatalf("model %v with %d errors", m != nil, len(errs))
		}
		for _, e := range errs {
			_ = e.Error()
		}
		// A prefix has the program's errors on its lines (checkSource).
		if cut, ok := parser.Prefix(src, len(src)/2); ok {
			_, whole := checkWhole("fuzz.shm", src)
			if ok, diff := prefixAgrees(src, whole, cut); !ok {
				t.Fatal(diff)
			}
		}
		if m != nil {
			// Lay out the parameters with unit sizes: must not fail or panic.
			if _, err := NewLayout(context.Background(), m.Params, func(d *Decl) ([]int, error) {
				dims := make([]int, len(d.ArraySizes)+len(d.Sizes))
				for i := range dims {
					dims[i] = 1
				}
				return dims, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
