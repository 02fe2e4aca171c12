package parser

import (
	"os"
	"testing"
)

func BenchmarkParseSyntax(b *testing.B) {
	src, err := os.ReadFile("../ir/testdata/valid/syntax.shm")
	if err != nil {
		b.Fatal(err)
	}
	p, err := New()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, errs := p.Parse("syntax.shm", string(src)); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
