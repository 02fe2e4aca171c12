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
	// Text the lexer does not expect, and operators without operands.
	for _, src := range []string{
		"\ufeffdata { int N; }", "data { int N;\ufeff }", "data { int N; \x00 }", "data {\n  \xff\xfe\n}",
		"\xff\xfed\x00a\x00", "data { int N; }\n/* open", "model { real x = 1 +; /* c",
		"model { x = a + * 2; y = f(1, + * b); z = v[1 + ]; }", "model { \x1b[31mx = 1; real µ; print(\"a); }",
	} {
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
