package ir

import (
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/testprogs"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/parser"
)

// prefixAgrees reports whether checking a prefix cut of src gives the
// same errors on the prefix's lines as checking all of src did (whole),
// and describes the difference if not. Lists cut at MaxErrors are compared
// as far as both go. A file that cannot be read as a program at all (a
// syntax error that recovery cannot pass) reports only its syntax errors,
// and its prefixes more: such files are not compared.
func prefixAgrees(src string, whole lang.ErrorList, cut parser.Cut) (bool, string) {
	if prog, _ := parser.Parse("p.shm", src); prog == nil {
		return true, ""
	}
	_, part := checkWhole("p.shm", cut.Text)
	onLines := func(errs lang.ErrorList) []string {
		var out []string
		for _, e := range errs {
			if e.Pos.Line <= cut.Line {
				out = append(out, e.Pos.String()+" "+e.Msg)
			}
		}
		return out
	}
	w, p := onLines(whole), onLines(part)
	if len(whole) >= parser.MaxErrors || len(part) >= parser.MaxErrors {
		n := min(len(w), len(p))
		w, p = w[:n], p[:n]
	}
	if strings.Join(w, "\n") != strings.Join(p, "\n") {
		return false, "cut after line " + lang.Pos{Line: cut.Line}.String() + ":\nwhole:\n" + strings.Join(w, "\n") + "\nprefix:\n" + strings.Join(p, "\n")
	}
	return true, ""
}

// TestPrefixErrors checks what checkSource relies on: at every place
// where parser.Prefix may cut a program, the prefix has the program's
// errors on its lines. Every test program is cut everywhere.
func TestPrefixErrors(t *testing.T) {
	cuts := 0
	for file, src := range testprogs.All(t, "..") {
		_, whole := checkWhole("p.shm", src)
		last := ""
		for i, c := range src {
			if c != '\n' {
				continue // every cut ends a line: try one size per line
			}
			cut, ok := parser.Prefix(src, i+1)
			if !ok || cut.Text == last {
				continue
			}
			last = cut.Text
			cuts++
			if ok, diff := prefixAgrees(src, whole, cut); !ok {
				t.Errorf("%s: %s", file, diff)
			}
		}
	}
	if cuts < 500 {
		t.Errorf("only %d cuts", cuts)
	}
}

// TestPrefixCheck checks that a file with many errors is answered from a
// prefix with the errors the whole check gives, and that a file with few
// errors (or none) is checked whole.
func TestPrefixCheck(t *testing.T) {
	var b strings.Builder
	b.WriteString("parameters {\n  real mu;\n}\nmodel {\n")
	for i := range 400 {
		b.WriteString("  real x" + strconv.Itoa(i) + " = undefined + mu; // comment\n")
	}
	b.WriteString("  mu ~ normal(0, 1);\n}\n")
	src := b.String()
	_, whole := checkWhole("m.shm", src)
	_, got := checkSource("m.shm", src, 256)
	if len(got) != parser.MaxErrors || len(whole) != len(got) {
		t.Fatalf("%d errors from prefixes, %d from the whole file", len(got), len(whole))
	}
	for i := range got {
		if got[i].Error() != whole[i].Error() {
			t.Errorf("error %d: %v, want %v", i, got[i], whole[i])
		}
	}
	valid := strings.ReplaceAll(src, "undefined", "mu")
	if m, errs := checkSource("m.shm", valid, 256); m == nil || len(errs) > 0 {
		t.Errorf("valid program: %v", errs)
	}
	few := strings.Replace(valid, "= mu + mu", "= undefined", 3)
	if _, errs := checkSource("m.shm", few, 256); len(errs) != 3 {
		t.Errorf("three errors: got %v", errs)
	}
}
