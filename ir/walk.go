package ir

import "fmt"

// StmtParts is what one statement is made of, as the analyses of the code
// around it see it. Parts is the one description of every statement
// kind's structure: analyses walk statements through it (Inspect,
// WalkWrites, Jumps), so that a new kind is described once, here, and
// an analysis that meets a kind Parts does not know fails (it panics)
// instead of silently taking it for a statement that writes nothing.
type StmtParts struct {
	// Body holds the nested statements in order: a block's statements, a
	// loop's body, a conditional's branches.
	Body []Stmt
	// Exprs holds the expressions the statement evaluates itself (not
	// those of Body): bounds, conditions, right-hand sides, indices of an
	// assignment, a declaration's sizes, bounds and initial value,
	// arguments.
	Exprs []Expr
	// Assigns is the variable an assignment writes, Declares the
	// variable a declaration or a loop introduces.
	Assigns, Declares *Var
	// Loop is set for loops (their body runs repeatedly), Jump for
	// break, continue and return.
	Loop, Jump bool
}

// Parts returns the parts of s. It panics on a statement kind it does not
// know (a kind added to the IR without its description here).
func Parts(s Stmt) StmtParts {
	switch s := s.(type) {
	case *DeclStmt:
		d := s.Decl
		exprs := append(append([]Expr(nil), d.ArraySizes...), d.Sizes...)
		return StmtParts{Exprs: appendSet(exprs, d.Lower, d.Upper, d.Offset, d.Multiplier, d.Init), Declares: d.Var}
	case *Assign:
		return StmtParts{Exprs: append(indexExprs(nil, s.Indices), s.RHS), Assigns: s.Var}
	case *Tilde:
		exprs := append([]Expr{s.LHS}, s.Args...)
		if s.Trunc != nil {
			exprs = appendSet(exprs, s.Trunc.Lo, s.Trunc.Hi)
		}
		return StmtParts{Exprs: exprs}
	case *TargetAdd:
		return StmtParts{Exprs: []Expr{s.Expr}}
	case *For:
		return StmtParts{Body: []Stmt{s.Body}, Exprs: []Expr{s.Lo, s.Hi}, Declares: s.Var, Loop: true}
	case *ForEach:
		return StmtParts{Body: []Stmt{s.Body}, Exprs: []Expr{s.Container}, Declares: s.Var, Loop: true}
	case *While:
		return StmtParts{Body: []Stmt{s.Body}, Exprs: []Expr{s.Cond}, Loop: true}
	case *If:
		body := []Stmt{s.Then}
		if s.Else != nil {
			body = append(body, s.Else)
		}
		return StmtParts{Body: body, Exprs: []Expr{s.Cond}}
	case *Block:
		return StmtParts{Body: s.Stmts}
	case *Print:
		return StmtParts{Exprs: s.Args}
	case *Reject:
		return StmtParts{Exprs: s.Args}
	case *Break, *Continue:
		return StmtParts{Jump: true}
	case *Return:
		return StmtParts{Exprs: appendSet(nil, s.Value), Jump: true}
	case *CallStmt:
		return StmtParts{Exprs: []Expr{s.Call}}
	}
	panic(fmt.Sprintf("ir: Parts of an unknown statement %T", s))
}

// Operands returns the expressions e evaluates directly, in order. It
// panics on an expression kind it does not know.
func Operands(e Expr) []Expr {
	switch e := e.(type) {
	case *IntLit, *RealLit, *StringLit, *VarRef:
		return nil
	case *Call:
		return appendSet(append([]Expr(nil), e.Args...), e.Named...)
	case *UserCall:
		return e.Args
	case *CRN:
		return appendSet(nil, e.K, e.Body, e.Seed)
	case *ODE:
		return append(appendSet(nil, e.Y0, e.T0, e.Ts, e.RelTol, e.AbsTol, e.MaxSteps), e.Args...)
	case *Index:
		return indexExprs([]Expr{e.X}, e.Items)
	case *Binary:
		return []Expr{e.Left, e.Right}
	case *Unary:
		return []Expr{e.X}
	case *Ternary:
		return []Expr{e.Cond, e.Then, e.Else}
	case *Transpose:
		return []Expr{e.X}
	case *ArrayLit:
		return e.Elems
	case *RowVectorLit:
		return e.Elems
	}
	panic(fmt.Sprintf("ir: Operands of an unknown expression %T", e))
}

// appendSet appends the expressions of es that are not nil.
func appendSet(out []Expr, es ...Expr) []Expr {
	for _, e := range es {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// indexExprs appends the bounds of the index items.
func indexExprs(out []Expr, items []*IndexItem) []Expr {
	for _, it := range items {
		out = appendSet(out, it.Lo, it.Hi)
	}
	return out
}

// Inspect calls f for s and, where f returns true, for every statement
// nested in it, depth first in order (as go/ast.Inspect).
func Inspect(s Stmt, f func(Stmt) bool) {
	if !f(s) {
		return
	}
	for _, b := range Parts(s).Body {
		Inspect(b, f)
	}
}

// InspectExpr calls f for e and, where f returns true, for its operands,
// depth first in order.
func InspectExpr(e Expr, f func(Expr) bool) {
	if !f(e) {
		return
	}
	for _, x := range Operands(e) {
		InspectExpr(x, f)
	}
}

// WalkWrites calls assigned for the variable of every assignment in s, at
// any depth, and declared for every variable s declares (its locals and
// loop variables).
func WalkWrites(s Stmt, assigned, declared func(*Var)) {
	Inspect(s, func(s Stmt) bool {
		p := Parts(s)
		if p.Assigns != nil {
			assigned(p.Assigns)
		}
		if p.Declares != nil {
			declared(p.Declares)
		}
		return true
	})
}

// Jumps reports whether s holds a break, continue or return at any depth.
func Jumps(s Stmt) bool {
	found := false
	Inspect(s, func(s Stmt) bool {
		found = found || Parts(s).Jump
		return !found
	})
	return found
}
