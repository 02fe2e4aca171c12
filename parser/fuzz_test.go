package parser

import (
	"testing"

	"github.com/shmlang/shm/internal/testprogs"
)

// addSeeds adds the repository's programs to the fuzzer's corpus (beside
// the committed testdata/fuzz files).
func addSeeds(f *testing.F) {
	for _, src := range testprogs.All(f, "..") {
		f.Add(src)
	}
}

// FuzzParse checks that no input makes the parser panic or hang, and that
// every error it reports has a position inside the input.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	p, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, errs := p.Parse("fuzz.shm", src)
		if prog == nil && len(errs) == 0 {
			t.Fatal("no program and no error")
		}
		if len(errs) > MaxErrors {
			t.Fatalf("%d errors, more than the cap", len(errs))
		}
		for _, e := range errs {
			if e.Pos.Line < 0 || e.Pos.Col < 0 {
				t.Fatalf("bad position in %v", e)
			}
			_ = e.Error()
		}
	})
}
