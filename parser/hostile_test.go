package parser

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shmlang/shm/lang"
)

// hostileModel is a model into which the cases below put their text, on
// line 5 ("  real x = 1;" in a valid model).
func hostileModel(line string) string {
	return "data {\n  int N;\n}\nmodel {\n" + line + "\n}\n"
}

// TestHostileInput checks that text the lexer does not expect (bytes that
// are not UTF-8, control characters, a misplaced byte order mark, an
// unterminated comment) and operators without their operand are reported
// once each, at their position, by what they are.
func TestHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // "line:col: message"
	}{
		{"byte order mark at the start", "\ufeffdata {\n  int N;\n}\n", nil},
		{"two byte order marks at the start", "\ufeff\ufeffdata { int N; }", []string{
			"1:1: unexpected byte order mark (U+FEFF): allowed only at the start of a file"}},
		{"byte order mark at the start, error on line 1", "\ufeffdata { int N }", []string{
			`1:14: missing ';' before "}"`}},
		{"byte order mark in the middle", hostileModel("  real x\ufeff = 1;"), []string{
			"5:9: unexpected byte order mark (U+FEFF): allowed only at the start of a file"}},
		{"byte order mark on its own line", hostileModel("\ufeff"), []string{
			"5:1: unexpected byte order mark (U+FEFF): allowed only at the start of a file"}},
		{"NUL", "data {\n  vector[3] y;  \x00\n}\n", []string{"2:17: invalid character NUL (0x00)"}},
		{"NUL at the start", "\x00data { int N; }", []string{"1:1: invalid character NUL (0x00)"}},
		{"SOH", hostileModel("  real x = 1;\x01"), []string{"5:14: invalid character SOH (0x01)"}},
		{"DEL", hostileModel("  real x\x7f = 1;"), []string{"5:9: invalid character DEL (0x7f)"}},
		{"ESC", hostileModel("  real x = 1;\x1b"), []string{"5:14: invalid character ESC (0x1b)"}},
		{"terminal escape sequence", hostileModel("  \x1b[1;31mreal x = 1;"), []string{
			`5:3: invalid character ESC (0x1b): a terminal escape sequence, "\x1b[1;31m"`}},
		{"letter outside ASCII", hostileModel("  real µ;\n  real y = 1 +;"), []string{
			"5:8: invalid character 'µ'", `6:15: expected an expression after "+", found ";"`}},
		{"letters outside ASCII", hostileModel("  real σ2 = 1;\n  real y = σ2 +;"), []string{
			"5:8: invalid character 'σ'", "6:12: invalid character 'σ'"}},
		{"form feed", hostileModel("\f  real x = 1;"), []string{"5:1: invalid character FF (0x0c)"}},
		{"two control characters", hostileModel("  real\x01 x\x02 = 1;"), []string{
			"5:7: invalid character SOH (0x01)", "5:10: invalid character STX (0x02)"}},
		{"C1 control", hostileModel("  real x\u0085 = 1;"), []string{"5:9: invalid character U+0085 (a control character)"}},
		{"no-break space", hostileModel("  real\u00a0x = 1;"), []string{"5:7: invalid character U+00A0 (a space other than ' ' and tab)"}},
		{"zero-width space", hostileModel("  real x\u200b = 1;"), []string{"5:9: invalid character U+200B (an invisible character)"}},
		{"bidirectional control", hostileModel("  real x = 1; \u202e"), []string{"5:15: invalid character U+202E (a bidirectional text control)"}},
		{"replacement character", hostileModel("  real x\ufffd = 1;"), []string{"5:9: invalid character U+FFFD (the replacement character)"}},
		{"visible character", hostileModel("  real x@ = 1;"), []string{"5:9: invalid character '@'"}},
		{"invalid UTF-8, two bytes", "data {\n  vector[3] y;\n  \xff\xfe\n}\n", []string{
			"3:3: invalid UTF-8 byte 0xff (the first of 2)"}},
		{"invalid UTF-8, Latin-1 é", hostileModel("  real caf\xe9 = 1;"), []string{"5:11: invalid UTF-8 byte 0xe9"}},
		{"invalid UTF-8, truncated character", hostileModel("  real x = 1; \xc3"), []string{"5:15: invalid UTF-8 byte 0xc3"}},
		{"invalid UTF-8, columns after it", hostileModel("  \xff\xfe\xfd real x = 1 +;"), []string{
			"5:3: invalid UTF-8 byte 0xff (the first of 3)", `5:19: expected an expression after "+", found ";"`}},
		{"UTF-16 little-endian", "\xff\xfed\x00a\x00t\x00a\x00 \x00{\x00", []string{
			"1:1: invalid UTF-8 byte 0xff (the first of 2): the file looks like UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"}},
		{"UTF-16 big-endian", "\xfe\xff\x00d\x00a\x00t\x00a", []string{
			"1:1: invalid UTF-8 byte 0xfe (the first of 2): the file looks like UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"}},
		{"unterminated comment mid-file", "data {\n  int N;\n/* oops\n}\nmodel {\n}\n", []string{
			"3:1: unterminated comment: /* at 3:1 has no */"}},
		{"unterminated comment at the end", "data {\n  int N;\n}\n/* foo\nmodel {\n}\n", []string{
			"4:1: unterminated comment: /* at 4:1 has no */"}},
		{"unterminated comment, last bytes", "data { int N; } /*", []string{
			"1:17: unterminated comment: /* at 1:17 has no */"}},
		{"unterminated comment after an error", hostileModel("  real x = 1 +;\n  /* x"), []string{
			`5:15: expected an expression after "+", found ";"`, "6:3: unterminated comment: /* at 6:3 has no */"}},
		{"comment closed later", "data { int N; /* a /* b */ }", nil},
		{"# comment", hostileModel("  real x = 1; # a + * b\n  real y = 2 +;"), []string{
			"5:15: '#' is not a comment: use // or /* */", `6:15: expected an expression after "+", found ";"`}},
		{"unterminated string", hostileModel("  print(\"a + * b);\n  real y = 2 +;"), []string{
			"5:9: unterminated string literal", `6:15: expected an expression after "+", found ";"`}},
		// Operators without their operand.
		{"+ *", "data {\n  vector[3] y;\n}\nmodel {\n  target += mean(y) + * 2;\n}\n", []string{
			`5:23: expected an expression after "+", found "*"`}},
		{"* /", hostileModel("  target += mean(y) * / 2;"), []string{`5:23: expected an expression after "*", found "/"`}},
		{"+ ;", hostileModel("  real x = 3 +;"), []string{`5:15: expected an expression after "+", found ";"`}},
		{"+ )", hostileModel("  real x = (3 + );"), []string{`5:17: expected an expression after "+", found ")"`}},
		{"+ ]", hostileModel("  x[1 + ] = 2;"), []string{`5:9: expected an expression after "+", found "]"`}},
		{"prefix operators between", hostileModel("  real x = 1 + - ! * 2;"), []string{`5:20: expected an expression after "!", found "*"`}},
		{"in parentheses", hostileModel("  real x = (1 + * 2);"), []string{`5:17: expected an expression after "+", found "*"`}},
		{"in an argument", hostileModel("  real x = fmax(1, + * 2);"), []string{`5:22: expected an expression after "+", found "*"`}},
		{"in a nested call", hostileModel("  real x = fmax(1, fmin(2, + * 3));"), []string{`5:30: expected an expression after "+", found "*"`}},
		{"in an index", hostileModel("  real x = v[1 + * 2];"), []string{`5:18: expected an expression after "+", found "*"`}},
		{"in a distribution's arguments", hostileModel("  y ~ normal(0 + * 1, 1);"), []string{`5:18: expected an expression after "+", found "*"`}},
		{"in a condition", hostileModel("  if (N + * 2) print(N);"), []string{`5:11: expected an expression after "+", found "*"`}},
		{"in a loop bound", hostileModel("  for (i in 1:N + ) print(i);"), []string{`5:19: expected an expression after "+", found ")"`}},
		{"logical", hostileModel("  real x = N && || N;"), []string{`5:17: expected an expression after "&&", found "||"`}},
		{"comparison", hostileModel("  real x = N == > N;"), []string{`5:17: expected an expression after "==", found ">"`}},
		{"ternary", hostileModel("  real x = N ? : 1;"), []string{`5:16: expected an expression after "?", found ":"`}},
		{"power", hostileModel("  real x = N ^ ;"), []string{`5:16: expected an expression after "^", found ";"`}},
		{"elementwise", hostileModel("  x = y .* ;"), []string{`5:12: expected an expression after ".*", found ";"`}},
		{"assignment", hostileModel("  real x = ;"), []string{`5:12: expected an expression after "=", found ";"`}},
		{"compound assignment", hostileModel("  target += * 2;"), []string{`5:13: expected an expression after "+=", found "*"`}},
		{"named argument", hostileModel("  real x = f(a = );"), []string{`5:18: expected an expression after "=", found ")"`}},
		{"bound", "parameters {\n  real<lower=> x;\n}\n", []string{`2:14: expected an expression after "=", found ">"`}},
		{"two in one statement", hostileModel("  real x = 1 + * 2 - / 3;"), []string{`5:16: expected an expression after "+", found "*"`}},
		{"at the end of the line", hostileModel("  real x = 1 +\n"), []string{`7:1: expected an expression after "+", found "}"`}},
		{"operand missing, then another error", hostileModel("  real x = 1 + ;\n  real y = (1 + * 2;"), []string{
			`5:16: expected an expression after "+", found ";"`, `6:17: expected an expression after "+", found "*"`}},
		// Not a missing operand: the operator is not the cause.
		{"bounds closed, name missing", "parameters {\n  real<lower=0> ;\n}\n", []string{`2:17: unexpected ";"`}},
		{"operator after a distribution", hostileModel("  y ~ normal(0, 1) +;"), []string{`5:20: missing ';' before "+"`}},
		{"an earlier error in the statement", hostileModel("  real x = (1 2 + );"), []string{`5:15: unexpected "2"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Parse("h.shm", tc.src)
			var got []string
			for _, e := range errs {
				got = append(got, e.Pos.String()+": "+e.Msg)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%q:\ngot  %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}

// TestByteOrderMark checks that a byte order mark at the start is skipped
// by every entry point, with the positions of a file without it.
func TestByteOrderMark(t *testing.T) {
	src := "data {\n  int N;\n}\nmodel {\n}\n"
	plain, errs := Parse("b.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	marked, errs := Parse("b.shm", "\ufeff"+src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !reflect.DeepEqual(marked, plain) {
		t.Errorf("with a byte order mark: %+v, want %+v", marked, plain)
	}
	// The error's line is shown without the mark.
	_, errs = Parse("b.shm", "\ufeffdata { int N }")
	if len(errs) != 1 || errs[0].Line != "data { int N }" {
		t.Errorf("got %q", errs)
	}
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := p.ParseStmts("line", "\ufeffreal x = 1;"); len(errs) > 0 {
		t.Errorf("statements: %v", errs)
	}
	if e, errs := p.ParseExpr("line", "\ufeffx + 1"); len(errs) > 0 || e.Position() != (lang.Pos{Line: 1, Col: 3}) {
		t.Errorf("expression: %v at %v", errs, e.Position())
	}
	if cut, ok := Prefix("\ufeff"+src, len(src)); !ok || cut.Line != 2 || !strings.HasPrefix(cut.Text, "\ufeffdata {\n  int N;") {
		t.Errorf("prefix: %q %v", cut.Text, ok)
	}
}

// TestFragmentHostileInput checks that the statements and expressions of
// a session (the REPL's lines) get the same reports.
func TestFragmentHostileInput(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ src, want string }{
		{"real x = 1\x00;", "1:11: invalid character NUL (0x00)"},
		{"real x = \xff;", "1:10: invalid UTF-8 byte 0xff"},
		{"real x = 1; /* c", "1:13: unterminated comment: /* at 1:13 has no */"},
		{"real x\ufeff = 1;", "1:7: unexpected byte order mark (U+FEFF): allowed only at the start of a file"},
		{"x = mean(y) + * 2;", `1:15: expected an expression after "+", found "*"`},
		{"x = f(1, + * 2);", `1:12: expected an expression after "+", found "*"`},
		{"  x + ;", `1:7: expected an expression after "+", found ";"`},
		{"1 +", `1:4: expected an expression after "+", found end of file`},
	} {
		_, errs := p.ParseStmts("line", tc.src)
		if len(errs) != 1 || errs[0].Pos.String()+": "+errs[0].Msg != tc.want {
			t.Errorf("statements %q: got %v, want %s", tc.src, errs, tc.want)
		}
	}
	if _, errs := p.ParseExpr("line", "mean(y) * / 2"); len(errs) != 1 || errs[0].Msg != `expected an expression after "*", found "/"` || errs[0].Pos.Col != 11 {
		t.Errorf("expression: %v", errs)
	}
}

// TestRecoveryKeepsColumns checks that the blanking of a statement or of
// a character during recovery keeps the columns of what follows it on
// the line (multi-byte characters were blanked a space per byte).
func TestRecoveryKeepsColumns(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`  print("é") +; real y = 1 +;`, []string{
			`5:14: missing ';' before "+"`, `5:29: expected an expression after "+", found ";"`}},
		{"  real µ; real y = 1 +;", []string{
			"5:8: invalid character 'µ'", `5:23: expected an expression after "+", found ";"`}},
		{"  real x\ufeff = 1 +;", []string{
			"5:9: unexpected byte order mark (U+FEFF): allowed only at the start of a file",
			`5:16: expected an expression after "+", found ";"`}},
		{"  real \ufeffµ = 1 +; real y = 1 +;", []string{
			"5:8: unexpected byte order mark (U+FEFF): allowed only at the start of a file",
			"5:9: invalid character 'µ'", `5:30: expected an expression after "+", found ";"`}},
		{"  /* éé */ real x = 1 +; real y = 1 +;", []string{
			`5:24: expected an expression after "+", found ";"`, `5:38: expected an expression after "+", found ";"`}},
	} {
		_, errs := Parse("c.shm", hostileModel(tc.line))
		var got []string
		for _, e := range errs {
			got = append(got, e.Pos.String()+": "+e.Msg)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.line, got, tc.want)
		}
	}
}

// TestHostileRendering checks that an error's excerpt shows the control
// characters and invalid bytes of its line as visible characters, with
// the caret under the one it names.
func TestHostileRendering(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"data {\n  int N;\x00\n}\n", "h.shm:2:9: invalid character NUL (0x00)\n    int N;\u2400\n          ^"},
		{"data {\n  int N;\x1b[2J\n}\n", "h.shm:2:9: invalid character ESC (0x1b): a terminal escape sequence, \"\\x1b[2J\"\n    int N;\u241b[2J\n          ^"},
		{"data {\n\t\xff\xfeint N;\n}\n", "h.shm:2:2: invalid UTF-8 byte 0xff (the first of 2)\n  \t\ufffd\ufffdint N;\n  \t^"},
		{"data {\n  int\ufeffN;\n}\n", "h.shm:2:6: unexpected byte order mark (U+FEFF): allowed only at the start of a file\n    int\ufffdN;\n       ^"},
	} {
		_, errs := Parse("h.shm", tc.src)
		if len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.src, errs.Error(), tc.want)
		}
	}
}
