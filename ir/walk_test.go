package ir

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// nodeKinds returns the names of the package's statement kinds (types with
// a stmtNode method) and expression kinds (types embedding info), read
// from its source: the kinds Parts and Operands must describe.
func nodeKinds(t *testing.T) (stmts, exprs []string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name == "stmtNode" && d.Recv != nil {
					if star, ok := d.Recv.List[0].Type.(*ast.StarExpr); ok {
						stmts = append(stmts, star.X.(*ast.Ident).Name)
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						if id, ok := field.Type.(*ast.Ident); ok && id.Name == "info" && len(field.Names) == 0 {
							exprs = append(exprs, ts.Name.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(stmts)
	slices.Sort(exprs)
	return stmts, exprs
}

// TestPartsDescribeEveryKind: Parts and Operands describe every statement
// and expression kind of the package (a kind added without its
// description fails here), with what each holds.
func TestPartsDescribeEveryKind(t *testing.T) {
	v := &Var{Name: "v"}
	lit := func(k int64) Expr { return &IntLit{Value: k} }
	stmtCases := []struct {
		s    Stmt
		want StmtParts
	}{
		{&DeclStmt{Decl: &Decl{Var: v, Sizes: []Expr{lit(1)}, Lower: lit(2), Init: lit(3)}}, StmtParts{Exprs: []Expr{lit(1), lit(2), lit(3)}, Declares: v}},
		{&Assign{Var: v, Indices: []*IndexItem{{Lo: lit(1)}}, RHS: lit(2)}, StmtParts{Exprs: []Expr{lit(1), lit(2)}, Assigns: v}},
		{&Tilde{LHS: lit(1), Args: []Expr{lit(2)}, Trunc: &Truncation{Hi: lit(3)}}, StmtParts{Exprs: []Expr{lit(1), lit(2), lit(3)}}},
		{&TargetAdd{Expr: lit(1)}, StmtParts{Exprs: []Expr{lit(1)}}},
		{&For{Var: v, Lo: lit(1), Hi: lit(2), Body: &Break{}}, StmtParts{Body: []Stmt{&Break{}}, Exprs: []Expr{lit(1), lit(2)}, Declares: v, Loop: true}},
		{&ForEach{Var: v, Container: lit(1), Body: &Break{}}, StmtParts{Body: []Stmt{&Break{}}, Exprs: []Expr{lit(1)}, Declares: v, Loop: true}},
		{&While{Cond: lit(1), Body: &Continue{}}, StmtParts{Body: []Stmt{&Continue{}}, Exprs: []Expr{lit(1)}, Loop: true}},
		{&If{Cond: lit(1), Then: &Break{}, Else: &Continue{}}, StmtParts{Body: []Stmt{&Break{}, &Continue{}}, Exprs: []Expr{lit(1)}}},
		{&Block{Stmts: []Stmt{&Break{}}}, StmtParts{Body: []Stmt{&Break{}}}},
		{&Print{Args: []Expr{lit(1)}}, StmtParts{Exprs: []Expr{lit(1)}}},
		{&Reject{Args: []Expr{lit(1)}}, StmtParts{Exprs: []Expr{lit(1)}}},
		{&Break{}, StmtParts{Jump: true}},
		{&Continue{}, StmtParts{Jump: true}},
		{&Return{Value: lit(1)}, StmtParts{Exprs: []Expr{lit(1)}, Jump: true}},
		{&CallStmt{Call: &UserCall{}}, StmtParts{Exprs: []Expr{&UserCall{}}}},
	}
	exprCases := []struct {
		e    Expr
		want []Expr
	}{
		{&IntLit{}, nil}, {&RealLit{}, nil}, {&StringLit{}, nil}, {&VarRef{Var: v}, nil},
		{&Call{Args: []Expr{lit(1)}, Named: []Expr{nil, lit(2)}}, []Expr{lit(1), lit(2)}},
		{&UserCall{Args: []Expr{lit(1)}}, []Expr{lit(1)}},
		{&CRN{K: lit(1), Body: lit(2)}, []Expr{lit(1), lit(2)}},
		{&ODE{Y0: lit(1), T0: lit(2), Ts: lit(3), MaxSteps: lit(4), Args: []Expr{lit(5)}}, []Expr{lit(1), lit(2), lit(3), lit(4), lit(5)}},
		{&Index{X: lit(1), Items: []*IndexItem{{Lo: lit(2), Hi: lit(3)}, {}}}, []Expr{lit(1), lit(2), lit(3)}},
		{&Binary{Left: lit(1), Right: lit(2)}, []Expr{lit(1), lit(2)}},
		{&Unary{X: lit(1)}, []Expr{lit(1)}},
		{&Ternary{Cond: lit(1), Then: lit(2), Else: lit(3)}, []Expr{lit(1), lit(2), lit(3)}},
		{&Transpose{X: lit(1)}, []Expr{lit(1)}},
		{&ArrayLit{Elems: []Expr{lit(1)}}, []Expr{lit(1)}},
		{&RowVectorLit{Elems: []Expr{lit(1)}}, []Expr{lit(1)}},
	}
	stmts, exprs := nodeKinds(t)
	var gotStmts, gotExprs []string
	for _, c := range stmtCases {
		name := reflect.TypeOf(c.s).Elem().Name()
		gotStmts = append(gotStmts, name)
		if got := Parts(c.s); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parts(%s) = %+v, want %+v", name, got, c.want)
		}
	}
	for _, c := range exprCases {
		name := reflect.TypeOf(c.e).Elem().Name()
		gotExprs = append(gotExprs, name)
		if got := Operands(c.e); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Operands(%s) = %v, want %v", name, got, c.want)
		}
	}
	slices.Sort(gotStmts)
	slices.Sort(gotExprs)
	if !slices.Equal(gotStmts, stmts) {
		t.Errorf("the statement kinds tested are %v; the package has %v: describe the new kind in Parts and test it here", gotStmts, stmts)
	}
	if !slices.Equal(gotExprs, exprs) {
		t.Errorf("the expression kinds tested are %v; the package has %v: describe the new kind in Operands and test it here", gotExprs, exprs)
	}
}

// throwaway is a statement kind Parts does not know: an assignment in
// disguise.
type throwaway struct{ *Assign }

// TestWalkersRefuseUnknownKinds: a statement kind Parts does not know
// makes every walker panic rather than take it for one that writes
// nothing.
func TestWalkersRefuseUnknownKinds(t *testing.T) {
	v := &Var{Name: "x"}
	body := &Block{Stmts: []Stmt{throwaway{&Assign{Var: v, RHS: &IntLit{Value: 1}}}}}
	loop := &For{Var: &Var{Name: "i"}, Lo: &IntLit{Value: 1}, Hi: &IntLit{Value: 3}, Body: body}
	for name, walk := range map[string]func(){
		"WalkWrites": func() { WalkWrites(loop, func(*Var) {}, func(*Var) {}) },
		"Jumps":      func() { Jumps(loop) },
		"Inspect":    func() { Inspect(loop, func(Stmt) bool { return true }) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "unknown statement ir.throwaway") {
					t.Errorf("%s over an unknown kind: %v, want a panic naming it", name, r)
				}
			}()
			walk()
		}()
	}
}

// TestWalkWritesValidPrograms: over every statement of the valid test
// programs, WalkWrites finds each assignment's variable and Jumps each
// break, continue and return (against a plain recursive count).
func TestWalkWritesValidPrograms(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.shm")
	if err != nil || len(files) == 0 {
		t.Fatalf("no programs: %v", err)
	}
	total, jumping := 0, 0
	defer func() {
		if total == 0 || jumping == 0 {
			t.Errorf("the programs hold %d assignments and %d statements that jump: the test checks nothing", total, jumping)
		}
	}()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, errs := CheckSource(f, string(src))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		var all []Stmt
		for _, b := range [][]Stmt{m.TransformedData, m.TransformedParams, m.ModelBlock, m.Generated} {
			all = append(all, b...)
		}
		for _, fn := range m.Functions {
			all = append(all, fn.Body...)
		}
		for _, s := range all {
			assigned := 0
			WalkWrites(s, func(*Var) { assigned++ }, func(*Var) {})
			want := countKind[*Assign](s)
			total += want
			if Jumps(s) {
				jumping++
			}
			if assigned != want {
				t.Errorf("%s:%v: WalkWrites found %d assignments, want %d", f, s.Position(), assigned, want)
			}
			if got, want := Jumps(s), countKind[*Break](s)+countKind[*Continue](s)+countKind[*Return](s) > 0; got != want {
				t.Errorf("%s:%v: Jumps %v, want %v", f, s.Position(), got, want)
			}
		}
	}
}

// countKind counts the statements of type T in s, by reflection over the
// fields (independent of Parts).
func countKind[T Stmt](s Stmt) int {
	n := 0
	var visit func(v reflect.Value)
	stmtType := reflect.TypeOf((*Stmt)(nil)).Elem()
	visit = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Interface {
				visit(v.Elem())
				return
			}
			if v.Type().Implements(stmtType) {
				if _, ok := v.Interface().(T); ok {
					n++
				}
			}
			if v.Elem().Kind() == reflect.Struct {
				visit(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if f.Type.Implements(stmtType) || f.Type == reflect.TypeOf([]Stmt(nil)) {
					visit(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				visit(v.Index(i))
			}
		}
	}
	visit(reflect.ValueOf(&s).Elem())
	return n
}
