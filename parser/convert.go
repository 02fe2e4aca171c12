package parser

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/shmlang/shm/lang"
)

// converter turns the participle parse tree into lang nodes, reporting the
// problems that the grammar accepts but the language does not.
type converter struct {
	src  *lang.Source
	errs lang.ErrorList
}

func pos(p lexer.Position) lang.Pos { return lang.Pos{Line: p.Line, Col: p.Column} }

func (c *converter) errorf(p lang.Pos, format string, args ...any) {
	c.errs = append(c.errs, c.src.At(p, fmt.Sprintf(format, args...)))
}

var blockOrder = map[string]lang.BlockKind{
	"functions":              lang.FunctionsBlock,
	"data":                   lang.DataBlock,
	"transformed data":       lang.TransformedDataBlock,
	"parameters":             lang.ParametersBlock,
	"transformed parameters": lang.TransformedParametersBlock,
	"model":                  lang.ModelBlock,
	"generated quantities":   lang.GeneratedQuantitiesBlock,
}

func (c *converter) program(p *pProgram, file string) *lang.Program {
	prog := &lang.Program{File: file}
	last := lang.BlockKind(-1)
	var lastName string
	for _, pb := range p.Blocks {
		name := pb.Name
		switch {
		case pb.Functions:
			name = "functions"
		case pb.Transformed != "":
			name = "transformed " + pb.Transformed
		case pb.Generated:
			name = "generated quantities"
		}
		kind := blockOrder[name]
		b := &lang.Block{Pos: pos(pb.Pos), Kind: kind, End: pos(pb.EndPos)}
		switch {
		case kind == lang.FunctionsBlock && last >= kind:
			c.errorf(b.Pos, "the functions block must come first, and only once")
			continue
		case kind == lang.FunctionsBlock:
			last, lastName = kind, name
			for _, d := range pb.Defs {
				prog.Functions = append(prog.Functions, c.funDef(d))
			}
			continue
		case kind == last:
			c.errorf(b.Pos, "duplicate %s block", name)
			continue
		case kind < last:
			c.errorf(b.Pos, "the %s block must come before the %s block", name, lastName)
			continue
		}
		last, lastName = kind, name
		b.Stmts = c.stmts(pb.Stmts)
		prog.Blocks = append(prog.Blocks, b)
	}
	return prog
}

func (c *converter) stmts(ps []*pStmt) []lang.Stmt {
	var out []lang.Stmt
	for _, ps := range ps {
		if s := c.stmt(ps); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// stmt converts one statement; it returns nil for an empty statement.
func (c *converter) stmt(s *pStmt) lang.Stmt {
	at := pos(s.Pos)
	switch {
	case s.Decl != nil:
		return c.decl(s.Decl)
	case s.For != nil:
		f := s.For
		c.checkName(f.Var, "loop variable")
		body := c.body(f.Body, at)
		if f.Hi == nil {
			return &lang.ForEach{Pos: at, Var: f.Var.Name, VarPos: pos(f.Var.Pos), Container: c.expr(f.Lo), Body: body}
		}
		return &lang.For{Pos: at, Var: f.Var.Name, VarPos: pos(f.Var.Pos), Lo: c.expr(f.Lo), Hi: c.expr(f.Hi), Body: body}
	case s.While != nil:
		return &lang.While{Pos: at, Cond: c.expr(s.While.Cond), Body: c.body(s.While.Body, at)}
	case s.If != nil:
		st := &lang.If{Pos: at, Cond: c.expr(s.If.Cond), Then: c.body(s.If.Then, at)}
		if s.If.Else != nil {
			st.Else = c.body(s.If.Else, at)
		}
		return st
	case s.Block != nil:
		return &lang.BlockStmt{Pos: at, Stmts: c.stmts(s.Block.Stmts)}
	case s.Print != nil:
		args := c.exprs(s.Print.Args)
		if len(args) == 0 {
			c.errorf(at, "%s needs at least one argument", s.Print.Kind)
		}
		if s.Print.Kind == "print" {
			return &lang.Print{Pos: at, Args: args}
		}
		return &lang.Reject{Pos: at, Args: args}
	case s.Break:
		return &lang.Break{Pos: at}
	case s.Continue:
		return &lang.Continue{Pos: at}
	case s.Return != nil:
		r := &lang.Return{Pos: at}
		if s.Return.Value != nil {
			r.Value = c.expr(s.Return.Value)
		}
		return r
	case s.Empty:
		return nil
	case s.Expr != nil:
		return c.exprStmt(s.Expr)
	}
	return nil
}

// body converts the body of a loop or conditional; an empty statement
// becomes an empty block.
func (c *converter) body(s *pStmt, at lang.Pos) lang.Stmt {
	if st := c.stmt(s); st != nil {
		return st
	}
	return &lang.BlockStmt{Pos: at}
}

func (c *converter) exprStmt(s *pExprStmt) lang.Stmt {
	at := pos(s.Pos)
	lhs := c.expr(s.LHS)
	if s.Tilde != nil {
		t := &lang.Tilde{Pos: at, LHS: lhs, Dist: s.Tilde.Dist, DistPos: pos(s.Tilde.Pos)}
		call := c.args(&lang.Call{Pos: t.DistPos, Name: t.Dist}, s.Tilde.Args)
		if len(call.Named) > 0 {
			c.errorf(call.Named[0].Pos, "named arguments are not allowed in a ~ statement; call %s_lpdf with target += instead", t.Dist)
		}
		if call.Conditional {
			c.errorf(t.DistPos, "'|' is not used in a ~ statement: write %s ~ %s(...)", lang.ExprString(lhs), t.Dist)
		}
		t.Args = call.Args
		if tr := s.Tilde.Trunc; tr != nil {
			t.Trunc = &lang.Truncation{Pos: pos(tr.Pos)}
			if tr.Lo != nil {
				t.Trunc.Lo = c.expr(tr.Lo)
			}
			if tr.Hi != nil {
				t.Trunc.Hi = c.expr(tr.Hi)
			}
			if tr.Lo == nil && tr.Hi == nil {
				c.errorf(t.Trunc.Pos, "truncation needs at least one bound: T[L, U], T[L, ] or T[, U]")
			}
		}
		return t
	}
	a := s.Assign
	if a == nil {
		call, ok := lhs.(*lang.Call)
		if !ok {
			// Reported at the ';', where ~ or an assignment was expected.
			c.errorf(pos(s.Semi.Pos), "expected ~ or an assignment after %s: only a call of a void function is a statement by itself", lang.ExprString(lhs))
			return nil
		}
		return &lang.CallStmt{Pos: at, Call: call}
	}
	if id, ok := lhs.(*lang.Ident); ok && id.Name == "target" {
		if a.Op != "+=" {
			c.errorf(pos(a.Pos), "target can only be incremented: write target += ...")
		}
		return &lang.TargetAdd{Pos: at, Expr: c.expr(a.RHS)}
	}
	if !isLValue(lhs) {
		c.errorf(at, "the left side of %s must be a variable, possibly indexed; found %s", a.Op, lang.ExprString(lhs))
	}
	return &lang.Assign{Pos: at, LHS: lhs, Op: a.Op, RHS: c.expr(a.RHS)}
}

func isLValue(e lang.Expr) bool {
	for {
		switch x := e.(type) {
		case *lang.Ident:
			return true
		case *lang.Index:
			e = x.X
		default:
			return false
		}
	}
}

var reserved = map[string]bool{
	"for": true, "in": true, "while": true, "repeat": true, "until": true, "if": true,
	"then": true, "else": true, "true": true, "false": true, "target": true,
	"int": true, "real": true, "vector": true, "row_vector": true, "matrix": true,
	"array": true, "complex": true, "simplex": true, "ordered": true, "positive_ordered": true,
	"unit_vector": true, "cholesky_factor_corr": true, "cholesky_factor_cov": true,
	"corr_matrix": true, "cov_matrix": true, "functions": true, "model": true, "data": true,
	"parameters": true, "quantities": true, "transformed": true, "generated": true,
	"return": true, "break": true, "continue": true, "print": true, "reject": true,
	"void": true, "lower": true, "upper": true, "offset": true, "multiplier": true,
	"tuple": true, "struct": true, "typedef": true, "export": true, "auto": true,
	"extern": true, "var": true, "static": true, "T": false,
}

// checkName reports a declared name that the language reserves.
func (c *converter) checkName(n *pName, what string) {
	switch {
	case reserved[n.Name]:
		c.errorf(pos(n.Pos), "%q is a reserved word and cannot name a %s", n.Name, what)
	case strings.HasSuffix(n.Name, "__"):
		c.errorf(pos(n.Pos), "names ending in __ are reserved: %q", n.Name)
	}
}

// funDef converts a function definition or forward declaration.
func (c *converter) funDef(d *pFunDef) *lang.FunDef {
	c.checkName(d.Name, "function")
	f := &lang.FunDef{Pos: pos(d.Pos), Name: d.Name.Name, NamePos: pos(d.Name.Pos), Return: c.funType(d.Return, true)}
	for _, p := range d.Params {
		c.checkName(p.Name, "function argument")
		f.Params = append(f.Params, &lang.FunParam{Pos: pos(p.Pos), Data: p.Data, Type: c.funType(p.Type, false), Name: p.Name.Name})
	}
	if d.Body != nil {
		f.Body = &lang.BlockStmt{Pos: pos(d.Body.Pos), Stmts: c.stmts(d.Body.Stmts)}
	}
	return f
}

// funType converts the unsized type of a function's argument or result
// (void only as a result).
func (c *converter) funType(t *pFunType, result bool) lang.Type {
	base, ok := supportedBase[t.Base]
	switch {
	case t.Base == "void" && result && !t.Array:
		return lang.VoidType
	case t.Base == "void":
		c.errorf(pos(t.Pos), "void is only a function's result type")
		return lang.BadType
	case !ok:
		c.errorf(pos(t.Pos), "type %s is not supported yet in functions (supported: int, real, vector, row_vector, matrix and arrays of them)", t.Base)
		return lang.BadType
	}
	dims := 0
	if t.Array {
		dims = 1 + len(t.Commas)
	}
	return lang.Type{Base: base, Dims: dims}
}

var supportedBase = map[string]lang.Base{
	"int": lang.Int, "real": lang.Real, "vector": lang.Vector,
	"row_vector": lang.RowVector, "matrix": lang.Matrix,
}

// special sets the constrained type sp of te: the sizes as written go to
// SpecialSize, and Size becomes the value's sizes (a vector's length, or a
// matrix's rows and columns).
func (c *converter) special(te *lang.TypeExpr, sp lang.Special, at lang.Pos) {
	te.Special, te.SpecialSize = sp, te.Size
	n := len(te.Size)
	switch {
	case sp == lang.CholeskyFactorCov && (n == 1 || n == 2):
		if n == 1 {
			te.Size = []lang.Expr{te.Size[0], te.Size[0]}
		}
	case sp == lang.CholeskyFactorCov:
		c.errorf(at, "cholesky_factor_cov needs one size (M, a square factor) or two (M rows ≥ N columns): cholesky_factor_cov[M, N]")
		te.Size = []lang.Expr{&lang.IntLit{Pos: at, Value: 1}, &lang.IntLit{Pos: at, Value: 1}}
	case n != 1:
		c.errorf(at, "%s needs one size: %s[K]", sp, sp)
		te.Size = []lang.Expr{&lang.IntLit{Pos: at, Value: 1}}
		fallthrough
	case sp.Base() == lang.Matrix:
		if sp.Base() == lang.Matrix {
			te.Size = []lang.Expr{te.Size[0], te.Size[0]}
		}
	}
}

func (c *converter) decl(d *pDecl) lang.Stmt {
	t := d.Type
	at := pos(t.Pos)
	c.checkName(d.Name, "variable")
	te := &lang.TypeExpr{Pos: at}
	base, ok := supportedBase[t.Base]
	te.ArraySize = c.exprs(t.ArrayDims)
	te.Size = c.exprs(t.Sizes)
	if sp, isSpecial := lang.SpecialByName(t.Base); isSpecial {
		c.special(te, sp, at)
		base, ok = sp.Base(), false // sizes checked by special
	} else if !ok {
		c.errorf(at, "type %s is not supported yet (supported: int, real, vector, row_vector, matrix, the constrained types simplex, unit_vector, ordered, positive_ordered, cholesky_factor_corr, cholesky_factor_cov, corr_matrix, cov_matrix, and arrays of them)", t.Base)
		base = lang.Real
	}
	te.Base = base
	want := map[lang.Base]int{lang.Vector: 1, lang.RowVector: 1, lang.Matrix: 2}[base]
	if ok && len(te.Size) != want {
		switch {
		case want == 0 && len(d.OldDims) == 0:
			c.errorf(at, "%s takes no size; for an array write array[%s] %s %s", base, c.list(te.Size), base, d.Name.Name)
		case want == 0:
			c.errorf(at, "%s takes no size", base)
		case len(te.Size) == 0:
			c.errorf(at, "%s needs %s", base, map[int]string{1: "a size: " + base.String() + "[N]", 2: "two sizes: matrix[R, C]"}[want])
		default:
			c.errorf(at, "%s takes %d size(s), got %d", base, want, len(te.Size))
		}
	}
	if t.Bounds != nil {
		te.Bounds = c.bounds(t.Bounds)
		if te.Special != lang.NoSpecial {
			c.errorf(pos(t.Bounds.Pos), "%s takes no constraint: its values are constrained by the type", te.Special)
			te.Bounds = nil
		}
	}
	if t.ArrayBounds != nil {
		te.ArrayBounds = c.bounds(t.ArrayBounds)
		c.errorf(pos(t.ArrayBounds.Pos), "a constraint goes on the element type, not on array: write array[...] %s<...>", t.Base)
	}
	if len(d.OldDims) > 0 {
		var dims []string
		for _, it := range d.OldDims {
			if it.Lo == nil || it.Colon {
				dims = append(dims, "N")
				continue
			}
			dims = append(dims, lang.ExprString(c.expr(it.Lo)))
		}
		elem := t.Base
		if len(te.Size) > 0 {
			elem += "[" + c.list(te.Size) + "]"
		}
		c.errorf(pos(d.Name.Pos), "the array syntax %s %s[%s] was removed; write array[%s] %s %s",
			t.Base, d.Name.Name, strings.Join(dims, ", "), strings.Join(dims, ", "), elem, d.Name.Name)
	}
	v := &lang.VarDecl{Pos: at, Type: te, Name: d.Name.Name, NamePos: pos(d.Name.Pos)}
	if d.Init != nil {
		v.Init = c.expr(d.Init)
	}
	return v
}

func (c *converter) list(es []lang.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = lang.ExprString(e)
	}
	return strings.Join(parts, ", ")
}

func (c *converter) bounds(pb *pBounds) *lang.Bounds {
	b := &lang.Bounds{Pos: pos(pb.Pos)}
	for _, it := range pb.Items {
		v := c.arith(it.Value)
		var slot *lang.Expr
		switch it.Name {
		case "lower":
			slot = &b.Lower
		case "upper":
			slot = &b.Upper
		case "offset":
			slot = &b.Offset
		case "multiplier":
			slot = &b.Multiplier
		default:
			c.errorf(pos(it.Pos), "unknown constraint %q; accepted: lower, upper, offset, multiplier", it.Name)
			continue
		}
		if *slot != nil {
			c.errorf(pos(it.Pos), "constraint %s given twice", it.Name)
			continue
		}
		*slot = v
	}
	if (b.Lower != nil || b.Upper != nil) && (b.Offset != nil || b.Multiplier != nil) {
		c.errorf(b.Pos, "lower/upper cannot be combined with offset/multiplier")
	}
	return b
}

func (c *converter) exprs(ps []*pExpr) []lang.Expr {
	out := make([]lang.Expr, 0, len(ps))
	for _, p := range ps {
		out = append(out, c.expr(p))
	}
	return out
}

func (c *converter) expr(p *pExpr) lang.Expr {
	e := c.binary(p.Cond)
	if p.Then == nil {
		return e
	}
	return &lang.Ternary{Pos: e.Position(), Cond: e, Then: c.expr(p.Then), Else: c.expr(p.Else)}
}

// binOp is one operator of a flat operand/operator sequence.
type binOp struct {
	pos lang.Pos
	op  string
}

// climb applies precedence and left associativity to the operands xs and
// the operators ops between them (len(ops) == len(xs)-1), by precedence
// climbing.
func climb(xs []lang.Expr, ops []binOp) lang.Expr {
	i := 0
	var parse func(minPrec int) lang.Expr
	parse = func(minPrec int) lang.Expr {
		left := xs[i]
		for i < len(ops) {
			op := ops[i]
			prec := lang.BinaryPrec(op.op)
			if prec < minPrec {
				break
			}
			i++
			right := parse(prec + 1)
			left = &lang.Binary{Pos: op.pos, Op: op.op, Left: left, Right: right}
		}
		return left
	}
	return parse(0)
}

func (c *converter) binary(p *pBinary) lang.Expr {
	xs := []lang.Expr{c.unary(p.Head)}
	ops := make([]binOp, 0, len(p.Tail))
	for _, t := range p.Tail {
		ops = append(ops, binOp{pos(t.Pos), t.Op})
		xs = append(xs, c.unary(t.X))
	}
	return climb(xs, ops)
}

func (c *converter) arith(p *pArith) lang.Expr {
	xs := []lang.Expr{c.unary(p.Head)}
	ops := make([]binOp, 0, len(p.Tail))
	for _, t := range p.Tail {
		ops = append(ops, binOp{pos(t.Pos), t.Op})
		xs = append(xs, c.unary(t.X))
	}
	return climb(xs, ops)
}

func (c *converter) unary(p *pUnary) lang.Expr {
	if p.Pow != nil {
		return c.pow(p.Pow)
	}
	return &lang.Unary{Pos: pos(p.Pos), Op: p.Op, X: c.unary(p.X)}
}

func (c *converter) pow(p *pPow) lang.Expr {
	e := c.postfix(p.Base)
	if p.Exp == nil {
		return e
	}
	return &lang.Binary{Pos: pos(p.Exp.Pos), Op: p.Exp.Op, Left: e, Right: c.unary(p.Exp.X)}
}

func (c *converter) postfix(p *pPostfix) lang.Expr {
	e := c.primary(p.X)
	for _, s := range p.Ops {
		if s.Transpose {
			e = &lang.Transpose{Pos: pos(s.Pos), X: e}
			continue
		}
		ix := &lang.Index{Pos: pos(s.Pos), X: e}
		for _, it := range s.Index {
			ix.Items = append(ix.Items, c.indexItem(it))
		}
		e = ix
	}
	return e
}

func (c *converter) indexItem(it *pIndexItem) *lang.IndexItem {
	item := &lang.IndexItem{Pos: pos(it.Pos)}
	switch {
	case it.Colon:
		item.Kind = lang.IndexRange
		if it.Lo != nil {
			item.Lo = c.expr(it.Lo)
		}
		if it.Hi != nil {
			item.Hi = c.expr(it.Hi)
		}
		if it.Lo == nil && it.Hi == nil {
			item.Kind = lang.IndexAll
		}
	case it.Lo != nil:
		item.Kind = lang.IndexSingle
		item.Lo = c.expr(it.Lo)
	default:
		item.Kind = lang.IndexAll
	}
	return item
}

func (c *converter) primary(p *pPrimary) lang.Expr {
	at := pos(p.Pos)
	switch {
	case p.Real != nil:
		v, err := strconv.ParseFloat(*p.Real, 64)
		if err != nil || math.IsInf(v, 0) {
			c.errorf(at, "real literal %s is out of range", *p.Real)
		}
		return &lang.RealLit{Pos: at, Value: v, Text: *p.Real}
	case p.Int != nil:
		v, err := strconv.ParseInt(*p.Int, 10, 32)
		if err != nil {
			c.errorf(at, "integer literal %s is too large (ints are 32-bit, as in Stan)", *p.Int)
		}
		return &lang.IntLit{Pos: at, Value: v, Text: *p.Int}
	case p.Str != nil:
		s, err := strconv.Unquote(*p.Str)
		if err != nil {
			s = strings.Trim(*p.Str, `"`)
		}
		return &lang.StringLit{Pos: at, Value: s}
	case p.Call != nil:
		return c.args(&lang.Call{Pos: at, Name: p.Call.Name, End: pos(p.Call.EndPos)}, p.Call.Args)
	case p.Ident != nil:
		return &lang.Ident{Pos: at, Name: *p.Ident}
	case p.Paren != nil:
		return &lang.Paren{Pos: at, X: c.expr(p.Paren)}
	case p.Array != nil:
		return &lang.ArrayLit{Pos: at, Elems: c.exprs(p.Array)}
	case p.RowVec != nil:
		if len(p.RowVec.Elems) == 0 {
			c.errorf(at, "empty row-vector literal []; use rep_row_vector(0, 0)")
		}
		return &lang.RowVectorLit{Pos: at, Elems: c.exprs(p.RowVec.Elems)}
	}
	c.errorf(at, "expected an expression")
	return &lang.IntLit{Pos: at}
}

// args fills call's arguments, checking separators and the order of named
// arguments.
func (c *converter) args(call *lang.Call, args []*pArg) *lang.Call {
	seen := map[string]bool{}
	for i, a := range args {
		at := pos(a.Pos)
		switch {
		case i == 0 && a.Sep != "":
			c.errorf(at, "unexpected %q before the first argument of %s", a.Sep, call.Name)
		case i > 0 && a.Sep == "":
			c.errorf(pos(a.Value.Pos), "missing ',' between arguments of %s", call.Name)
		case a.Sep == "|" && i != 1:
			c.errorf(at, "'|' may only separate the first argument from the rest, as in %s(y | ...)", call.Name)
		case a.Sep == "|":
			call.Conditional = true
		}
		v := c.expr(a.Value)
		if a.Name != nil {
			if seen[a.Name.Name] {
				c.errorf(pos(a.Name.Pos), "argument %s given twice", a.Name.Name)
			}
			seen[a.Name.Name] = true
			call.Named = append(call.Named, &lang.NamedArg{Pos: pos(a.Name.Pos), Name: a.Name.Name, Value: v})
			continue
		}
		if len(call.Named) > 0 {
			c.errorf(v.Position(), "positional argument after named arguments in %s", call.Name)
		}
		call.Args = append(call.Args, v)
	}
	return call
}
