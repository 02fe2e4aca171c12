package ir

import (
	"fmt"
	"strings"
	"testing"
)

// generateProgram writes a valid program of about lines lines: data
// declarations, transformed data loops, parameters and model statements
// that exercise calls, indexing and operators.
func generateProgram(lines int) string {
	var b strings.Builder
	n := lines / 7
	b.WriteString("data {\n  int<lower=1> N;\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  vector[N] y%d;\n", i)
	}
	b.WriteString("}\ntransformed data {\n  real acc = 0;\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  for (i in 1:N) {\n    acc += y%d[i] * 2 - log1p(square(y%d[i]));\n  }\n", i, i)
	}
	b.WriteString("}\nparameters {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  real<lower=0> s%d;\n", i)
	}
	b.WriteString("  real mu;\n}\nmodel {\n  mu ~ normal(0, 10);\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  s%d ~ exponential(1);\n  y%d ~ normal(mu + %d * s%d, s%d + 1e-3);\n", i, i, i, i, i)
	}
	b.WriteString("}\n")
	return b.String()
}

func TestGeneratedProgramChecks(t *testing.T) {
	src := generateProgram(2000)
	if got := strings.Count(src, "\n"); got < 1900 {
		t.Fatalf("generated %d lines", got)
	}
	m, errs := CheckSource("gen.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(m.Params) != 2000/7+1 {
		t.Errorf("got %d parameters", len(m.Params))
	}
}

// BenchmarkCheck2000Lines parses and checks a generated 2,000-line program.
func BenchmarkCheck2000Lines(b *testing.B) {
	src := generateProgram(2000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, errs := CheckSource("gen.shm", src); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
