package ir

import (
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/testprogs"
)

// TestByteOrderMark checks that a program saved with a byte order mark is
// checked as the same program without one: the same model or the same
// errors, on the same lines and columns, checked whole or by prefixes.
func TestByteOrderMark(t *testing.T) {
	for file, src := range testprogs.All(t, "..") {
		m, errs := CheckSource("p.shm", src)
		bm, berrs := CheckSource("p.shm", "\ufeff"+src)
		if (m == nil) != (bm == nil) || errs.Error() != berrs.Error() {
			t.Errorf("%s: with a byte order mark:\n%v\nwithout:\n%v", file, berrs, errs)
		}
	}
	var b strings.Builder
	b.WriteString("parameters {\n  real mu;\n}\nmodel {\n")
	for i := range 400 {
		b.WriteString("  real x" + strconv.Itoa(i) + " = undefined + mu;\n")
	}
	b.WriteString("}\n")
	_, want := checkSource("m.shm", b.String(), 256)
	_, got := checkSource("m.shm", "\ufeff"+b.String(), 256)
	if len(want) == 0 || got.Error() != want.Error() {
		t.Errorf("by prefixes, with a byte order mark:\n%v\nwithout:\n%v", got, want)
	}
}

// TestUnterminatedComment checks that a comment left open late in a file
// is reported at its start, after the errors before it.
func TestUnterminatedComment(t *testing.T) {
	src := "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1 + );\n  mu ~ normal(0, 1);\n  /* to do\n  mu ~ normal(0, 2);\n}\n"
	_, errs := CheckSource("c.shm", src)
	var got []string
	for _, e := range errs {
		got = append(got, e.Pos.String()+": "+e.Msg)
	}
	want := []string{`5:22: expected an expression after "+", found ")"`, "7:3: unterminated comment: /* at 7:3 has no */"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
}
