package ir

import (
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Session checks statements and expressions one at a time in a growing
// scope, for interactive use. The data and transformed data of a model
// (if any) are in scope; declarations and assignments to new names add
// session variables, which behave like transformed data (random draws
// are allowed).
type Session struct {
	c *checker
}

// NewSession starts a session over m's data, transformed data and
// functions; m may
// be nil for a session without a model. The session has its own copy of
// the variable list: m is not modified.
func NewSession(m *Model) *Session {
	model := &Model{Name: "session"}
	if m != nil {
		model.Vars = append([]*Var(nil), m.Vars...)
		model.File = m.File
	}
	c := &checker{table: stdlib.Builtins(), model: model, block_: lang.TransformedDataBlock, funcs: map[string][]*Function{}}
	if m != nil {
		// The model's functions can be called in the session.
		model.Functions = m.Functions
		for _, fn := range m.Functions {
			c.funcs[fn.Name] = append(c.funcs[fn.Name], fn)
		}
	}
	c.push()
	for _, v := range model.Vars {
		if (v.Block == lang.DataBlock || v.Block == lang.TransformedDataBlock) && !v.Local {
			c.scopes[0][v.Name] = v
		}
	}
	return &Session{c: c}
}

// Vars returns every variable known to the session, indexed by slot.
func (s *Session) Vars() []*Var { return s.c.model.Vars }

// Lookup returns the session variable or data variable called name.
func (s *Session) Lookup(name string) *Var { return s.c.lookup(name) }

// Names returns the names in scope.
func (s *Session) Names() []string {
	var out []string
	for n := range s.c.scopes[0] {
		out = append(out, n)
	}
	return out
}

// CheckExpr checks an expression in the session's scope.
func (s *Session) CheckExpr(e lang.Expr, src *lang.Source) (Expr, lang.ErrorList) {
	s.c.src, s.c.errs = src, nil
	x := s.c.expr(e)
	return x, s.result()
}

// CheckStmts checks statements in the session's scope. An assignment
// "name = expr" to a name not yet declared declares a session variable
// of the expression's type first (its sizes are those of the first value
// assigned).
func (s *Session) CheckStmts(stmts []lang.Stmt, src *lang.Source) ([]Stmt, lang.ErrorList) {
	s.c.src, s.c.errs = src, nil
	var out []Stmt
	for _, st := range stmts {
		if a, ok := st.(*lang.Assign); ok && a.Op == "=" {
			if id, ok := a.LHS.(*lang.Ident); ok && s.c.lookup(id.Name) == nil {
				rhs := s.c.expr(a.RHS)
				if t := rhs.Type(); !t.IsBad() {
					v := s.c.declare(id.Name, id.Pos, t)
					v.Data = true
					v.Decl = &Decl{Pos: id.Pos, Var: v, Init: rhs, SizesFromValue: true, TypeText: t.String(), ShapeText: t.String()}
					out = append(out, &DeclStmt{Decl: v.Decl})
				}
				continue
			}
		}
		if x := s.c.stmt(st, false); x != nil {
			out = append(out, x)
		}
	}
	return out, s.result()
}

func (s *Session) result() lang.ErrorList {
	errs := s.c.errs
	s.c.errs = nil
	errs.Sort()
	return errs
}
