package lang

import (
	"strconv"
	"strings"
	"testing"
)

func TestTypeString(t *testing.T) {
	tests := []struct {
		t    Type
		want string
	}{
		{IntType, "int"}, {RealType, "real"}, {ArrayOf(VectorType, 1), "array[] vector"},
		{ArrayOf(RealType, 3), "array[,,] real"}, {MatrixType, "matrix"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestAssignableFrom(t *testing.T) {
	tests := []struct {
		to, from Type
		ok       bool
	}{
		{RealType, IntType, true}, {IntType, RealType, false},
		{ArrayOf(RealType, 1), ArrayOf(IntType, 1), true},
		{ArrayOf(RealType, 2), ArrayOf(IntType, 1), false},
		{VectorType, RowVectorType, false}, {VectorType, VectorType, true},
	}
	for _, tt := range tests {
		if got := tt.to.AssignableFrom(tt.from); got != tt.ok {
			t.Errorf("%s from %s: got %v", tt.to, tt.from, got)
		}
	}
}

func TestErrorRendering(t *testing.T) {
	src := NewSource("m.shm", "data {\n\tint  N\n}\n")
	e := src.At(Pos{Line: 2, Col: 8}, "missing ';'")
	want := "m.shm:2:8: missing ';'\n  \tint  N\n  \t      ^"
	if got := e.Error(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := (&Error{Msg: "no position"}).Error(); got != "no position" {
		t.Errorf("got %q", got)
	}
	list := ErrorList{src.At(Pos{Line: 3, Col: 1}, "b"), src.At(Pos{Line: 1, Col: 2}, "a")}
	list.Sort()
	if list[0].Msg != "a" || list.Err() == nil || (ErrorList{}).Err() != nil {
		t.Error("ErrorList sort or Err wrong")
	}
}

// TestErrorExcerpt checks that an error on a very long line shows a
// window of excerptWidth characters around the column, with the caret
// under the same character.
func TestErrorExcerpt(t *testing.T) {
	long := strings.Repeat("a+", 5000) + "b"
	for _, tc := range []struct {
		name string
		col  int
	}{{"start", 1}, {"middle", 5001}, {"end", len(long)}} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Error{File: "m.shm", Pos: Pos{Line: 1, Col: tc.col}, Msg: "x", Line: long}
			lines := strings.Split(e.Error(), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d lines", len(lines))
			}
			shown := []rune(strings.TrimPrefix(lines[1], "  "))
			caret := len([]rune(strings.TrimPrefix(lines[2], "  ")))
			if n := len(shown); n > excerptWidth+2 {
				t.Errorf("%d characters shown", n)
			}
			if want := []rune(long)[tc.col-1]; shown[caret-1] != want {
				t.Errorf("caret under %q, want %q", shown[caret-1], want)
			}
		})
	}
}

func TestExprString(t *testing.T) {
	e := &Binary{Op: "*", Left: &Binary{Op: "+", Left: &Ident{Name: "a"}, Right: &IntLit{Value: 1}},
		Right: &Unary{Op: "-", X: &Call{Name: "f", Args: []Expr{&Ident{Name: "x"}, &Ident{Name: "y"}}, Conditional: true}}}
	if got := ExprString(e); got != "(a + 1) * -f(x | y)" {
		t.Errorf("got %q", got)
	}
	pow := &Binary{Op: "^", Left: &Binary{Op: "^", Left: &Ident{Name: "a"}, Right: &Ident{Name: "b"}}, Right: &Ident{Name: "c"}}
	if got := ExprString(pow); got != "(a ^ b) ^ c" {
		t.Errorf("got %q", got)
	}
}

// TestErrorExcerptVisible checks that an excerpt shows control characters,
// invisible characters and bytes that are not UTF-8 as visible ones, one
// for one (the caret stays under its character), and that a byte order
// mark at the start of a source is no part of its first line.
func TestErrorExcerptVisible(t *testing.T) {
	for _, tc := range []struct {
		line string
		col  int
		want string
	}{
		{"int N;\x00", 7, "  int N;\u2400\n        ^"},
		{"\tx\x1b[2Jy", 3, "  \tx\u241b[2Jy\n  \t ^"},
		{"x\x7f\ry", 4, "  x\u2421\u240dy\n     ^"},
		{"\xff\xfex", 3, "  \ufffd\ufffdx\n    ^"},
		{"a\ufeffb\u200b\u202ec", 6, "  a\ufffdb\ufffd\ufffdc\n       ^"},
		{"µ\u00a0é", 3, "  µ\u00a0é\n    ^"},
	} {
		e := NewSource("v.shm", tc.line).At(Pos{Line: 1, Col: tc.col}, "m")
		if got, want := e.Error(), "v.shm:1:"+strconv.Itoa(tc.col)+": m\n"+tc.want; got != want {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.line, got, want)
		}
	}
	if got := NewSource("b.shm", "\ufeffdata {\n}").LineText(1); got != "data {" {
		t.Errorf("first line %q", got)
	}
}
