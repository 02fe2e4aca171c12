package parser

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/lang"
)

// parseExpr parses "transformed data { real x = <src>; }" and returns the
// initializer.
func parseExpr(t *testing.T, src string) lang.Expr {
	t.Helper()
	prog, errs := Parse("t.shm", "transformed data { real x = "+src+"; }")
	if len(errs) > 0 {
		t.Fatalf("%s: %v", src, errs)
	}
	d := prog.Blocks[0].Stmts[0].(*lang.VarDecl)
	return d.Init
}

// parenthesize renders an expression with every operation in parentheses,
// to make precedence and associativity visible.
func parenthesize(e lang.Expr) string {
	switch e := e.(type) {
	case *lang.Binary:
		return "(" + parenthesize(e.Left) + " " + e.Op + " " + parenthesize(e.Right) + ")"
	case *lang.Unary:
		return "(" + e.Op + parenthesize(e.X) + ")"
	case *lang.Ternary:
		return "(" + parenthesize(e.Cond) + " ? " + parenthesize(e.Then) + " : " + parenthesize(e.Else) + ")"
	case *lang.Transpose:
		return "(" + parenthesize(e.X) + "')"
	case *lang.Paren:
		return parenthesize(e.X)
	case *lang.Index:
		var items []string
		for _, it := range e.Items {
			switch it.Kind {
			case lang.IndexSingle:
				items = append(items, parenthesize(it.Lo))
			case lang.IndexAll:
				items = append(items, ":")
			case lang.IndexRange:
				s := ""
				if it.Lo != nil {
					s = parenthesize(it.Lo)
				}
				s += ":"
				if it.Hi != nil {
					s += parenthesize(it.Hi)
				}
				items = append(items, s)
			}
		}
		return parenthesize(e.X) + "[" + strings.Join(items, ", ") + "]"
	case *lang.Call:
		var args []string
		for _, a := range e.Args {
			args = append(args, parenthesize(a))
		}
		for _, a := range e.Named {
			args = append(args, a.Name+"="+parenthesize(a.Value))
		}
		sep := ", "
		if e.Conditional {
			return e.Name + "(" + args[0] + " | " + strings.Join(args[1:], sep) + ")"
		}
		return e.Name + "(" + strings.Join(args, sep) + ")"
	}
	return lang.ExprString(e)
}

func TestPrecedenceAndAssociativity(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a + b * c", "(a + (b * c))"},
		{"a * b + c", "((a * b) + c)"},
		{"a - b - c", "((a - b) - c)"},
		{"a / b / c", "((a / b) / c)"},
		{"a ^ b ^ c", "(a ^ (b ^ c))"},
		{"-a ^ 2", "(-(a ^ 2))"},
		{"a ^ -b", "(a ^ (-b))"},
		{"!a && b || c", "(((!a) && b) || c)"},
		{"a || b && c", "(a || (b && c))"},
		{"a == b < c", "(a == (b < c))"},
		{"a < b + c", "(a < (b + c))"},
		{"a ? b : c ? d : e", "(a ? b : (c ? d : e))"},
		{"a || b ? c : d", "((a || b) ? c : d)"},
		{"a .* b ./ c", "((a .* b) ./ c)"},
		{"a \\ b * c", "((a \\ b) * c)"},
		{"a % b %/% c", "((a % b) %/% c)"},
		{"x' * y", "((x') * y)"},
		{"-x'", "(-(x'))"},
		{"x[1]'", "(x[1]')"},
		{"m[1, :]", "m[1, :]"},
		{"m[, 2]", "m[:, 2]"},
		{"v[2:3]", "v[2:3]"},
		{"v[:3]", "v[:3]"},
		{"v[2:]", "v[2:]"},
		{"v[i + 1:n - 1]", "v[(i + 1):(n - 1)]"},
		{"a[b[1]][2]", "a[b[1]][2]"},
		{"normal_lpdf(y | mu, sigma)", "normal_lpdf(y | mu, sigma)"},
		{"f(a, b = 1 + 2, c = \"s\")", "f(a, b=(1 + 2), c=\"s\")"},
		{"(a + b) * c", "((a + b) * c)"},
		{"a - -b", "(a - (-b))"},
		{"2 * -3", "(2 * (-3))"},
		{"a .^ b ^ c", "(a .^ (b ^ c))"},
	}
	for _, tt := range tests {
		if got := parenthesize(parseExpr(t, tt.src)); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestLiterals(t *testing.T) {
	tests := []struct {
		src  string
		want lang.Expr
	}{
		{"42", &lang.IntLit{Value: 42}},
		{"1.5", &lang.RealLit{Value: 1.5}},
		{"1e-3", &lang.RealLit{Value: 1e-3}},
		{"2.", &lang.RealLit{Value: 2}},
		{".5", &lang.RealLit{Value: 0.5}},
		{"6.02E+23", &lang.RealLit{Value: 6.02e23}},
	}
	for _, tt := range tests {
		got := parseExpr(t, tt.src)
		switch w := tt.want.(type) {
		case *lang.IntLit:
			if g, ok := got.(*lang.IntLit); !ok || g.Value != w.Value {
				t.Errorf("%s: got %#v", tt.src, got)
			}
		case *lang.RealLit:
			if g, ok := got.(*lang.RealLit); !ok || g.Value != w.Value {
				t.Errorf("%s: got %#v", tt.src, got)
			}
		}
	}
	if _, ok := parseExpr(t, "{1, 2, 3}").(*lang.ArrayLit); !ok {
		t.Error("array literal not parsed")
	}
	if tr, ok := parseExpr(t, "[1, 2]'").(*lang.Transpose); !ok {
		t.Error("transposed row-vector literal not parsed")
	} else if _, ok := tr.X.(*lang.RowVectorLit); !ok {
		t.Error("row-vector literal not parsed")
	}
}

func TestPositions(t *testing.T) {
	src := "data {\n  int N; // comment\n  /* a\n  b */ vector[N] y;\n}\nmodel {\n\ty ~ normal(0, 1);\n}\n"
	prog, errs := Parse("p.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	data := prog.Block(lang.DataBlock)
	if data.Pos != (lang.Pos{Line: 1, Col: 1}) {
		t.Errorf("data block at %v", data.Pos)
	}
	y := data.Stmts[1].(*lang.VarDecl)
	if y.Pos != (lang.Pos{Line: 4, Col: 8}) || y.NamePos != (lang.Pos{Line: 4, Col: 18}) {
		t.Errorf("y declared at %v, name at %v", y.Pos, y.NamePos)
	}
	tilde := prog.Block(lang.ModelBlock).Stmts[0].(*lang.Tilde)
	if tilde.Pos != (lang.Pos{Line: 7, Col: 2}) || tilde.DistPos != (lang.Pos{Line: 7, Col: 6}) {
		t.Errorf("tilde at %v, dist at %v", tilde.Pos, tilde.DistPos)
	}
	// Columns count characters, not bytes.
	_, errs = Parse("u.shm", "data { /* µµ */ int N }")
	if len(errs) != 1 || errs[0].Pos != (lang.Pos{Line: 1, Col: 23}) {
		t.Fatalf("want one error at 1:23, got %v", errs)
	}
	_, errs = Parse("u.shm", "data { real µ; }")
	if len(errs) == 0 || errs[0].Msg != `invalid character 'µ'` || errs[0].Pos.Col != 13 {
		t.Fatalf("got %v", errs)
	}
}

func TestStatements(t *testing.T) {
	src := `model {
  for (i in 1:N) { x[i] ~ normal(0, 1) T[0, ]; }
  for (v in vs) target += v;
  while (a < b) a += 1;
  if (a) b = 1; else if (c) b = 2; else { b = 3; }
  print("a = ", a);
  reject("bad");
  x[1:2, 3] .*= y;
  ;
}`
	prog, errs := Parse("s.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	stmts := prog.Blocks[0].Stmts
	kinds := []string{}
	for _, s := range stmts {
		kinds = append(kinds, strings.TrimPrefix(strings.TrimPrefix(typeName(s), "*lang."), ""))
	}
	want := "For ForEach While If Print Reject Assign"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("statements: got %s, want %s", got, want)
	}
	loop := stmts[0].(*lang.For).Body.(*lang.BlockStmt).Stmts[0].(*lang.Tilde)
	if loop.Trunc == nil || loop.Trunc.Lo == nil || loop.Trunc.Hi != nil {
		t.Errorf("truncation T[0, ] not parsed: %+v", loop.Trunc)
	}
	els := stmts[3].(*lang.If).Else.(*lang.If)
	if els.Else == nil {
		t.Error("else-if chain lost its final else")
	}
	if a := stmts[6].(*lang.Assign); a.Op != ".*=" {
		t.Errorf("compound op %q", a.Op)
	}
}

func typeName(s lang.Stmt) string {
	switch s.(type) {
	case *lang.For:
		return "For"
	case *lang.ForEach:
		return "ForEach"
	case *lang.While:
		return "While"
	case *lang.If:
		return "If"
	case *lang.Print:
		return "Print"
	case *lang.Reject:
		return "Reject"
	case *lang.Assign:
		return "Assign"
	case *lang.Tilde:
		return "Tilde"
	}
	return "?"
}

func TestDeclarations(t *testing.T) {
	src := `data {
  array[N, M] vector<lower=0, upper=1>[K] a;
  matrix<offset=1, multiplier=2>[R, C] m;
}`
	prog, errs := Parse("d.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := prog.Blocks[0].Stmts[0].(*lang.VarDecl)
	if len(a.Type.ArraySize) != 2 || len(a.Type.Size) != 1 || a.Type.Base != lang.Vector ||
		a.Type.Bounds == nil || a.Type.Bounds.Lower == nil || a.Type.Bounds.Upper == nil {
		t.Errorf("bad declaration: %+v", a.Type)
	}
	m := prog.Blocks[0].Stmts[1].(*lang.VarDecl)
	if m.Type.Bounds.Offset == nil || m.Type.Bounds.Multiplier == nil || len(m.Type.Size) != 2 {
		t.Errorf("bad matrix declaration: %+v", m.Type)
	}
}

func TestErrorRendering(t *testing.T) {
	_, errs := Parse("r.shm", "data {\n\tint N\n\treal x;\n}\n")
	if len(errs) != 1 {
		t.Fatalf("got %d errors: %v", len(errs), errs)
	}
	want := "r.shm:3:2: missing ';' before \"real\"\n  \treal x;\n  \t^"
	if got := errs[0].Error(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestRecoveryReportsIndependentErrors(t *testing.T) {
	src := "model {\n  a = 1 +;\n  b = (2;\n  c = 3 3;\n  d = 4;\n}\n"
	_, errs := Parse("m.shm", src)
	if len(errs) != 3 {
		t.Fatalf("want 3 errors, got %d:\n%v", len(errs), errs)
	}
	for i, line := range []int{2, 3, 4} {
		if errs[i].Pos.Line != line {
			t.Errorf("error %d on line %d, want %d: %v", i, errs[i].Pos.Line, line, errs[i])
		}
	}
}

func TestDeepNestingIsAnError(t *testing.T) {
	src := "transformed data { real x = " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + "; }"
	_, errs := Parse("deep.shm", src)
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "nested") {
		t.Fatalf("got %v", errs)
	}
}

func TestErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("model {\n")
	for i := 0; i < 50; i++ {
		b.WriteString("  a = 1 +;\n")
	}
	b.WriteString("}\n")
	_, errs := Parse("many.shm", b.String())
	if len(errs) != MaxErrors {
		t.Fatalf("got %d errors, want the cap %d", len(errs), MaxErrors)
	}
}

func TestParseStmtsAndExpr(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	stmts, errs := p.ParseStmts("line", "real x = mean(y); x += 1;")
	if len(errs) > 0 || len(stmts) != 2 {
		t.Fatalf("got %d statements, errors %v", len(stmts), errs)
	}
	e, errs := p.ParseExpr("line", "sinkhorn(y, y + 0.1, eps = 0.01, iters = 80)")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if c, ok := e.(*lang.Call); !ok || len(c.Named) != 2 {
		t.Fatalf("got %#v", e)
	}
	if _, errs := p.ParseExpr("line", "mean(y"); len(errs) != 1 {
		t.Fatalf("want one error, got %v", errs)
	}
}

// TestDepthLimits checks that input nesting the parser deeper than
// maxNesting is an error at its position, not a stack overflow (a million
// unary minus signs, or a 300 000-term power chain, were fatal), and
// that chains at the limit, long flat sums and comments full of dashes
// still parse.
func TestDepthLimits(t *testing.T) {
	n := maxNesting
	pow := func(k int) string { return strings.TrimSuffix(strings.Repeat("y^", k+1), "^") }
	for _, tc := range []struct {
		name, expr string
		ok         bool
	}{
		{"minus at the limit", strings.Repeat("-", n) + "y", true},
		{"minus beyond", strings.Repeat("-", n+1) + "y", false},
		{"100000 minus", strings.Repeat("-", 100000) + "y", false},
		{"not beyond", strings.Repeat("!", n+1) + "y", false},
		{"power at the limit", pow(n), true},
		{"power beyond", pow(n + 1), false},
		{"power chain of 120000", pow(120000), false},
		{"powers in brackets", "(" + pow(n) + ")^" + pow(n-1), true},
		{"powers around brackets", "(" + pow(n) + ")^" + pow(n), false},
		{"sum of 20000", strings.TrimSuffix(strings.Repeat("y+", 20000), "+"), true},
		{"alternating", strings.TrimSuffix(strings.Repeat("y^y-", 10000), "-"), true},
		{"brackets beyond", strings.Repeat("(", n+1) + "y" + strings.Repeat(")", n+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "transformed data { real y = 1;\n// " + strings.Repeat("-", 2*n) + "\nreal x = " + tc.expr + "; }"
			_, errs := Parse("t.shm", src)
			if tc.ok {
				if len(errs) > 0 {
					t.Fatalf("%v", errs[0].Header())
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Msg, "more than 256 deep") || errs[0].Pos.Line != 3 {
				t.Fatalf("errors %v", errs)
			}
		})
	}
}

// TestRecoveryBudget checks that recovering from syntax errors stops at
// MaxErrors errors, or earlier once the reparsing has read the budget: a
// file of megabytes full of errors reports its first ones, not minutes
// later (100 000 broken lines took over two minutes). The parses that
// look for a missing operand (missingOperand) count too.
func TestRecoveryBudget(t *testing.T) {
	src := "parameters { real mu; }\nmodel {\n" + strings.Repeat("  mu ~ normal(0, 1) 2;\n", 30) + "}\n"
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := p.Parse("t.shm", src); len(errs) != MaxErrors {
		t.Errorf("%d errors, want %d", len(errs), MaxErrors)
	}
	p.recoveryBudget = 5 * countTokens(t, src)
	_, errs := p.Parse("t.shm", src)
	if len(errs) != 5 || errs[0].Pos.Line != 3 {
		t.Errorf("with a budget of five parses: %d errors (%v), want 5 from line 3", len(errs), errs)
	}
	src = strings.ReplaceAll(src, "mu ~ normal(0, 1) 2;", "mu ~ normal(0 + * 1, 1);")
	p.recoveryBudget = 5 * countTokens(t, src)
	_, errs = p.Parse("t.shm", src)
	if len(errs) == 0 || len(errs) >= 5 || errs[0].Pos.Line != 3 || !strings.Contains(errs[0].Msg, "after \"+\"") {
		t.Errorf("missing operands, with a budget of five parses: %d errors (%v), want fewer than 5 from line 3", len(errs), errs)
	}
}

// countTokens returns the tokens of src the parser reads.
func countTokens(t *testing.T, src string) int {
	t.Helper()
	toks, err := lexAll("t.shm", src)
	if err != nil {
		t.Fatal(err)
	}
	return len(toks)
}

// TestLargeInput: a list of more than maxListElements elements and a
// file or session line of more than the parser's token limit are refused
// at their position before parsing (a literal of a million elements took
// 27 s and 2 GB to be refused with the grammar's internals), and a file
// just within the limits parses.
func TestLargeInput(t *testing.T) {
	list := func(n int) string { return "{" + strings.Repeat("1, ", n-1) + "1}" }
	model := func(n int) string {
		return "transformed data {\n  array[" + strconv.Itoa(n) + "] real x = " + list(n) + ";\n}\n"
	}
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := p.Parse("t.shm", model(maxListElements)); len(errs) != 0 {
		t.Errorf("a list of maxListElements elements: %v", errs)
	}
	wantList := fmt.Sprintf("t.shm:2:26: a list of more than %d elements: put large values in a data file", maxListElements)
	if _, errs := p.Parse("t.shm", model(maxListElements+1)); len(errs) != 1 || errs[0].Header() != wantList {
		t.Errorf("a list of maxListElements + 1 elements: %v, want %s", errs, wantList)
	}
	if _, errs := p.ParseExpr("line", "sum("+list(maxListElements+1)+")"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "line:1:5: a list of more than") {
		t.Errorf("a session line with a long list: %v", errs)
	}

	p.maxTokens = 100
	src := "parameters {\n  real mu;\n}\nmodel {\n" + strings.Repeat("  mu ~ normal(0, 1);\n", 11) + "}\n"
	if n := countTokens(t, src); n <= 100 {
		t.Fatalf("the test file has %d tokens, want more than 100", n)
	}
	// The 101st token is the "normal" of line 15 (8 + 9 × 10 + 2 tokens before it).
	want := "t.shm:15:8: more than 100 tokens (names, numbers and symbols): put large values in a data file"
	if _, errs := p.Parse("t.shm", src); len(errs) != 1 || errs[0].Header() != want {
		t.Errorf("a file of more than maxTokens tokens: %v, want %s", errs, want)
	}
	if _, errs := p.ParseStmts("line", strings.Repeat("print(1);", 30)); len(errs) != 1 || !strings.Contains(errs[0].Error(), "more than 100 tokens") {
		t.Errorf("a session line of more than maxTokens tokens: %v", errs)
	}
}

// TestStmtsFunctionDefinition: a function definition typed in a session
// says where functions belong, rather than giving a syntax error.
func TestStmtsFunctionDefinition(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	_, errs := p.ParseStmts("line", "real f(real x) { return 2 * x; }")
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "functions block") {
		t.Errorf("got %v", errs)
	}
	if _, errs := p.ParseStmts("line", "real x = 1; x += 2;"); len(errs) > 0 {
		t.Errorf("statements: %v", errs)
	}
}

// TestExprStmtErrorPosition checks that an expression used as a statement
// is reported at its ';', where ~ or an assignment was expected, not at
// the token after it (the next line's '}').
func TestExprStmtErrorPosition(t *testing.T) {
	_, errs := Parse("e.shm", "data {\n  int N;\n}\nmodel {\n  N;\n}\n")
	if len(errs) != 1 || errs[0].Pos != (lang.Pos{Line: 5, Col: 4}) || !strings.HasPrefix(errs[0].Msg, "expected ~ or an assignment after N") {
		t.Errorf("got %v", errs)
	}
}
