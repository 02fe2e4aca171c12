package ir

import (
	"fmt"
	"strings"

	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

func bad(p lang.Pos) Expr {
	return &IntLit{info: info{pos: p, typ: lang.BadType, data: true}}
}

// expr checks an expression in which a string literal is an error.
func (c *checker) expr(e lang.Expr) Expr {
	if s, ok := e.(*lang.StringLit); ok {
		c.errorf(s.Pos, "a string is only allowed in print, reject and named arguments")
		return bad(s.Pos)
	}
	return c.exprAllowString(e)
}

func (c *checker) exprAllowString(e lang.Expr) Expr {
	switch e := e.(type) {
	case *lang.IntLit:
		return &IntLit{info: info{pos: e.Pos, typ: lang.IntType, data: true}, Value: e.Value}
	case *lang.RealLit:
		return &RealLit{info: info{pos: e.Pos, typ: lang.RealType, data: true}, Value: e.Value}
	case *lang.StringLit:
		return &StringLit{info: info{pos: e.Pos, typ: lang.StringType, data: true}, Value: e.Value}
	case *lang.Paren:
		return c.expr(e.X)
	case *lang.Ident:
		v := c.lookup(e.Name)
		if v == nil {
			c.undeclared(e)
			return bad(e.Pos)
		}
		var shape []int
		if v.Decl != nil {
			shape = c.declShape(v.Decl, v.Type)
		}
		return &VarRef{info: info{pos: e.Pos, typ: v.Type, data: v.Data, shape: shape}, Var: v}
	case *lang.Call:
		return c.call(e)
	case *lang.Index:
		return c.index(e)
	case *lang.Binary:
		return c.binary(e)
	case *lang.Unary:
		x := c.expr(e.X)
		t := x.Type()
		out := &Unary{info: info{pos: e.Pos, typ: t, data: x.IsData(), shape: x.Shape()}, Op: e.Op, X: x}
		switch {
		case t.IsBad():
		case e.Op == "!":
			if !t.IsScalar() {
				c.errorf(e.Pos, "! needs an int or real, found %s", t)
				out.typ = lang.BadType
			} else {
				out.typ = lang.IntType
			}
		case t.Dims > 0 || !t.IsNumeric():
			c.errorf(e.Pos, "unary %s is not defined for %s", e.Op, t)
			out.typ = lang.BadType
		}
		return out
	case *lang.Ternary:
		cond := c.condition(e.Cond)
		th, el := c.expr(e.Then), c.expr(e.Else)
		t := lang.BadType
		switch a, b := th.Type(), el.Type(); {
		case a.IsBad() || b.IsBad():
		case a == b:
			t = a
		case a.Promoted() == b.Promoted():
			t = a.Promoted()
		default:
			c.errorf(e.Pos, "the branches of ?: have different types: %s and %s", a, b)
		}
		return &Ternary{info: info{pos: e.Pos, typ: t, data: cond.IsData() && th.IsData() && el.IsData()}, Cond: cond, Then: th, Else: el}
	case *lang.Transpose:
		x := c.expr(e.X)
		t := x.Type()
		out := &Transpose{info: info{pos: e.Pos, data: x.IsData()}, X: x}
		switch {
		case t.IsBad():
		case t == lang.VectorType:
			out.typ = lang.RowVectorType
			out.shape = x.Shape()
		case t == lang.RowVectorType:
			out.typ = lang.VectorType
			out.shape = x.Shape()
		case t == lang.MatrixType:
			out.typ = lang.MatrixType
			if s := x.Shape(); len(s) == 2 {
				out.shape = []int{s[1], s[0]}
			}
		default:
			c.errorf(e.Pos, "cannot transpose a value of type %s", t)
		}
		return out
	case *lang.ArrayLit:
		return c.arrayLit(e)
	case *lang.RowVectorLit:
		return c.rowVectorLit(e)
	}
	c.errorf(e.Position(), "unsupported expression")
	return bad(e.Position())
}

func (c *checker) arrayLit(e *lang.ArrayLit) Expr {
	out := &ArrayLit{info: info{pos: e.Pos, data: true}}
	elem := lang.BadType
	var inner []int
	for i, x := range e.Elems {
		ce := c.expr(x)
		out.Elems = append(out.Elems, ce)
		out.data = out.data && ce.IsData()
		t := ce.Type()
		switch {
		case t.IsBad():
			return &ArrayLit{info: info{pos: e.Pos, typ: lang.BadType}, Elems: out.Elems}
		case i == 0:
			elem, inner = t, ce.Shape()
		case elem == t:
		case elem.Promoted() == t.Promoted():
			elem = elem.Promoted()
		default:
			c.errorf(x.Position(), "array elements must have the same type: element 1 is %s, element %d is %s", elem, i+1, t)
			return &ArrayLit{info: info{pos: e.Pos, typ: lang.BadType}, Elems: out.Elems}
		}
	}
	out.typ = lang.ArrayOf(elem, 1)
	if inner != nil || elem.IsScalar() {
		out.shape = append([]int{len(e.Elems)}, inner...)
	}
	return out
}

func (c *checker) rowVectorLit(e *lang.RowVectorLit) Expr {
	out := &RowVectorLit{info: info{pos: e.Pos, data: true}}
	allScalar, allRow := true, true
	cols := -1
	for _, x := range e.Elems {
		ce := c.expr(x)
		out.Elems = append(out.Elems, ce)
		out.data = out.data && ce.IsData()
		t := ce.Type()
		if t.IsBad() {
			out.typ = lang.BadType
			return out
		}
		allScalar = allScalar && t.IsScalar()
		allRow = allRow && t == lang.RowVectorType
		if s := ce.Shape(); t == lang.RowVectorType && len(s) == 1 {
			if cols >= 0 && s[0] >= 0 && s[0] != cols {
				c.errorf(x.Position(), "rows of a matrix literal must have the same length: %d and %d", cols, s[0])
			}
			cols = s[0]
		}
	}
	switch {
	case allScalar:
		out.typ = lang.RowVectorType
		out.shape = []int{len(e.Elems)}
	case allRow:
		out.typ = lang.MatrixType
		out.shape = []int{len(e.Elems), cols}
	default:
		c.errorf(e.Pos, "a [...] literal holds scalars (a row_vector) or row_vectors (a matrix)")
		out.typ = lang.BadType
	}
	return out
}

func (c *checker) binary(e *lang.Binary) Expr {
	l, r := c.expr(e.Left), c.expr(e.Right)
	out := &Binary{info: info{pos: e.Pos, data: l.IsData() && r.IsData()}, Op: e.Op, Left: l, Right: r}
	lt, rt := l.Type(), r.Type()
	if lt.IsBad() || rt.IsBad() {
		return out
	}
	t, ok := binaryType(e.Op, lt, rt)
	if !ok {
		c.errorf(e.Pos, "operator %s is not defined for %s and %s%s", e.Op, lt, rt, binaryHint(e.Op, lt, rt))
		return out
	}
	out.typ = t
	out.shape = c.binaryShape(e, l, r, t)
	return out
}

// binaryShape checks sizes known statically and returns the result's.
func (c *checker) binaryShape(e *lang.Binary, l, r Expr, t lang.Type) []int {
	ls, rs := l.Shape(), r.Shape()
	lt, rt := l.Type(), r.Type()
	mismatch := func(a, b int) bool { return a >= 0 && b >= 0 && a != b }
	switch {
	case e.Op == "*" && lt.Base.IsLinalg() && rt.Base.IsLinalg():
		// Matrix product: inner sizes must agree.
		inner := func(s []int, t lang.Type, left bool) int {
			switch {
			case s == nil:
				return -1
			case t.Base == lang.Matrix && left:
				return s[1]
			case t.Base == lang.Matrix:
				return s[0]
			}
			return s[0]
		}
		if a, b := inner(ls, lt, true), inner(rs, rt, false); mismatch(a, b) {
			c.errorf(e.Pos, "size mismatch in %s * %s: %d columns times %d rows", lt, rt, a, b)
		}
		return nil
	case lt.IsScalar():
		return rs
	case rt.IsScalar():
		return ls
	case lt == rt || lt.Promoted() == rt.Promoted():
		if ls != nil && rs != nil && len(ls) == len(rs) {
			for i := range ls {
				if mismatch(ls[i], rs[i]) {
					c.errorf(e.Pos, "size mismatch in %s: %s and %s", e.Op, shapeText(ls), shapeText(rs))
					return nil
				}
			}
		}
		if ls != nil {
			return ls
		}
		return rs
	}
	return nil
}

func (c *checker) index(e *lang.Index) Expr {
	x := c.expr(e.X)
	out := &Index{info: info{pos: e.Pos, data: x.IsData()}, X: x}
	t := x.Type()
	for _, it := range e.Items {
		item := &IndexItem{Pos: it.Pos}
		switch it.Kind {
		case lang.IndexAll:
			item.Kind = IndexAll
		case lang.IndexRange:
			item.Kind = IndexRange
			for _, p := range []struct {
				src lang.Expr
				dst *Expr
			}{{it.Lo, &item.Lo}, {it.Hi, &item.Hi}} {
				if p.src == nil {
					continue
				}
				b := c.expr(p.src)
				if bt := b.Type(); !bt.IsBad() && bt != lang.IntType {
					c.errorf(p.src.Position(), "a range bound must be an int, found %s", bt)
				}
				out.data = out.data && b.IsData()
				*p.dst = b
			}
		case lang.IndexSingle:
			ix := c.expr(it.Lo)
			item.Lo = ix
			out.data = out.data && ix.IsData()
			switch it := ix.Type(); {
			case it.IsBad():
			case it == lang.IntType:
				item.Kind = IndexSingle
			case it == lang.ArrayOf(lang.IntType, 1):
				item.Kind = IndexMulti
			default:
				c.errorf(ix.Position(), "an index must be an int or array[] int, found %s", it)
			}
		}
		out.Items = append(out.Items, item)
	}
	if t.IsBad() {
		return out
	}
	rt, ok := indexType(t, out.Items)
	if !ok {
		c.errorf(e.Pos, "too many indices for %s of type %s: %d given", lang.ExprString(e.X), t, len(e.Items))
		return out
	}
	out.typ = rt
	return out
}

// indexType returns the type of t indexed by items: a single index drops
// a dimension, other kinds keep it.
func indexType(t lang.Type, items []*IndexItem) (lang.Type, bool) {
	dims := t.Dims
	var keptArray int
	i := 0
	for ; i < len(items) && i < dims; i++ {
		if items[i].Kind != IndexSingle {
			keptArray++
		}
	}
	rest := items[i:]
	base := t.Base
	switch base {
	case lang.Int, lang.Real:
		if len(rest) > 0 {
			return lang.BadType, false
		}
	case lang.Vector, lang.RowVector:
		switch {
		case len(rest) > 1:
			return lang.BadType, false
		case len(rest) == 1 && rest[0].Kind == IndexSingle:
			base = lang.Real
		}
	case lang.Matrix:
		switch {
		case len(rest) > 2:
			return lang.BadType, false
		case len(rest) == 1 && rest[0].Kind == IndexSingle:
			base = lang.RowVector
		case len(rest) == 2:
			rs, cs := rest[0].Kind == IndexSingle, rest[1].Kind == IndexSingle
			switch {
			case rs && cs:
				base = lang.Real
			case rs:
				base = lang.RowVector
			case cs:
				base = lang.Vector
			}
		}
	default:
		return lang.BadType, false
	}
	return lang.Type{Base: base, Dims: keptArray + dims - i}, true
}

// call checks a function call.
func (c *checker) call(e *lang.Call) Expr {
	if sv, ok := odeSolvers[e.Name]; ok {
		return c.odeCall(e, sv)
	}
	if fns, _ := c.userFunctions(e.Name); fns != nil {
		args := make([]Expr, len(e.Args))
		for i, a := range e.Args {
			args[i] = c.expr(a)
		}
		return c.userCall(e, fns, args)
	}
	f := c.table.Lookup(e.Name)
	if f == nil {
		if v := c.lookup(e.Name); v != nil {
			c.errorf(e.Pos, "%s is a variable, not a function", e.Name)
		} else if fam := c.table.Family(e.Name); fam != nil {
			c.errorf(e.Pos, "%s is a distribution: use y ~ %s(...) or call %s%s(y | ...)", e.Name, e.Name, e.Name, fam.Suffix())
		} else {
			names := c.table.Names()
			for n := range c.funcs {
				names = append(names, n)
			}
			c.errorf(e.Pos, "unknown function %q%s", e.Name, suggest(e.Name, names))
		}
		for _, a := range e.Args {
			c.exprAllowString(a)
		}
		return bad(e.Pos)
	}
	if f.Kind == stdlib.CRN {
		return c.crnCall(e, f)
	}
	args := make([]Expr, len(e.Args))
	data := true
	for i, a := range e.Args {
		args[i] = c.expr(a)
		data = data && args[i].IsData()
	}
	out := &Call{info: info{pos: e.Pos}, Func: f, Args: args}
	c.callRules(e, f, args)
	out.Named = c.namedArgs(e, f)
	for _, n := range out.Named {
		if n != nil {
			data = data && n.IsData()
		}
	}
	if f.Kind == stdlib.RNG && c.block_ != lang.TransformedDataBlock {
		data = false // a draw outside transformed data is not a constant of the data
	}
	if f.Name == "target" {
		data = false
	}
	out.data = data
	sig := c.resolve(f, e.Pos, args, func(i int) string { return fmt.Sprintf("argument %d of %s", i+1, f.Name) }, -1)
	if sig == nil {
		out.typ = lang.BadType
		return out
	}
	out.Sig = sig
	types := make([]lang.Type, len(args))
	for i, a := range args {
		types[i] = a.Type()
	}
	t, ok := sig.Result(types)
	if !ok {
		c.errorf(e.Pos, "%s is not defined for arguments of types %s", f.Name, typeList(types))
		out.typ = lang.BadType
		return out
	}
	out.typ = t
	c.primitiveRules(e, f, args)
	if f.NamedParam("iters") != nil && !data && (c.fn != nil || c.block_ == lang.TransformedParametersBlock || c.block_ == lang.ModelBlock) {
		c.model.Iterative = append(c.model.Iterative, out)
	}
	return out
}

// callRules enforces where a built-in may be called and the "|" syntax.
func (c *checker) callRules(e *lang.Call, f *stdlib.Func, args []Expr) {
	switch {
	case f.Kind == stdlib.RNG && c.fn != nil:
		switch {
		case c.fn.suffix() == "":
			c.errorf(e.Pos, "%s may only be used in the body of an _rng function, not in %s (name it %s_rng)", f.Name, c.fn.Name, c.fn.Name)
		case c.fn.suffix() != "_rng":
			c.errorf(e.Pos, "%s may only be used in the body of an _rng function, not in %s", f.Name, c.fn.Name)
		}
		c.recordDraw(f, e.Pos, args)
	case f.Kind == stdlib.RNG:
		allowed := c.block_ == lang.TransformedDataBlock || c.block_ == lang.GeneratedQuantitiesBlock || c.crn > 0
		if !allowed {
			c.errorf(e.Pos, "%s may only be used in transformed data, generated quantities or inside crn(...), not in the %s block", f.Name, c.block_)
		} else if c.crn > 0 && !f.Family.Reparam {
			for i, a := range args {
				if !a.IsData() {
					c.errorf(a.Position(), "%s has no reparameterization, so inside crn(...) its arguments must be data; argument %d depends on parameters", f.Name, i+1)
				}
			}
		}
	case f.ModelOnly && !c.mayAddTarget():
		c.errorf(e.Pos, "%s() is only available in the model block and in the body of an _lp function", f.Name)
	case f.Kind == stdlib.Density && (f.Suffix == "_lupdf" || f.Suffix == "_lupmf") && c.block_ != lang.ModelBlock &&
		!(c.fn != nil && contains([]string{"_lpdf", "_lpmf", "_lp"}, c.fn.suffix())):
		c.errorf(e.Pos, "%s (unnormalized) is only allowed in the model block; use %s%s", f.Name, f.Family.Name, f.Family.Suffix())
	}
	if f.Kind == stdlib.Density {
		needsBar := f.Suffix != "_cdf" && len(args) > 1
		if needsBar && !e.Conditional {
			c.errorf(e.Pos, "%s needs '|' after its first argument: %s(y | ...)", f.Name, f.Name)
		}
	} else if e.Conditional {
		c.errorf(e.Pos, "'|' is only used in the arguments of densities such as normal_lpdf(y | mu, sigma); %s takes commas", f.Name)
	}
}

// resolve picks the signature of f matching args, reporting an error and
// returning nil when none does. what names argument i in messages. skip
// is the number of leading signature parameters to leave out of arity
// messages (used by ~, where the outcome is not written in the call).
func (c *checker) resolve(f *stdlib.Func, at lang.Pos, args []Expr, what func(int) string, arity int) *stdlib.Sig {
	for _, a := range args {
		if a.Type().IsBad() {
			return nil
		}
	}
	var best *stdlib.Sig
	bestCost, ties := -1, 0
	var sameArity []*stdlib.Sig
	for i := range f.Sigs {
		s := &f.Sigs[i]
		if len(s.Params) != len(args) {
			continue
		}
		sameArity = append(sameArity, s)
		cost, ok := 0, true
		for j, p := range s.Params {
			k, accepted := p.Accepts(args[j].Type())
			if !accepted {
				ok = false
				break
			}
			cost += k
		}
		if !ok {
			continue
		}
		if _, ok := s.Result(argTypes(args)); !ok {
			continue
		}
		switch {
		case best == nil || cost < bestCost:
			best, bestCost, ties = s, cost, 0
		case cost == bestCost:
			ties++
		}
	}
	if best != nil {
		for j, p := range best.Params {
			if p.Data && !args[j].IsData() {
				c.errorf(args[j].Position(), "%s (%s) must be data, but it depends on parameters", what(j), p.Name)
			}
		}
		return best
	}
	name := f.Name
	if arity >= 0 && f.Family != nil {
		name = f.Family.Name
	}
	switch {
	case len(sameArity) == 0:
		counts := f.Arity()
		given := len(args)
		if arity >= 0 {
			given = arity
			for i := range counts {
				counts[i]--
			}
		}
		c.errorf(at, "%s takes %s, got %d", name, arityText(counts), given)
	case len(sameArity) == 1:
		s := sameArity[0]
		for j, p := range s.Params {
			if _, ok := p.Accepts(args[j].Type()); !ok {
				c.errorf(args[j].Position(), "%s must be %s, got %s", what(j), p.Describe(), args[j].Type())
				return nil
			}
		}
		c.errorf(at, "%s is not defined for arguments of types %s", name, typeList(argTypes(args)))
	default:
		var alts []string
		for _, s := range sameArity {
			var ps []string
			for _, p := range s.Params {
				ps = append(ps, p.Describe())
			}
			alts = append(alts, name+"("+strings.Join(ps, ", ")+")")
		}
		c.errorf(at, "no signature of %s matches arguments of types %s; available: %s", name, typeList(argTypes(args)), strings.Join(alts, "; "))
	}
	return nil
}

func argTypes(args []Expr) []lang.Type {
	ts := make([]lang.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return ts
}

func typeList(ts []lang.Type) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func arityText(counts []int) string {
	parts := make([]string, len(counts))
	for i, n := range counts {
		parts[i] = fmt.Sprint(n)
	}
	s := strings.Join(parts, " or ")
	if len(counts) == 1 && counts[0] == 1 {
		return "1 argument"
	}
	return s + " arguments"
}

// namedArgs checks named arguments against the function's accepted ones
// and returns them in the order of f.Named.
func (c *checker) namedArgs(e *lang.Call, f *stdlib.Func) []Expr {
	var out []Expr
	if len(f.Named) > 0 {
		out = make([]Expr, len(f.Named))
	}
	for _, na := range e.Named {
		var p *stdlib.NamedParam
		idx := -1
		for i := range f.Named {
			if f.Named[i].Name == na.Name {
				p, idx = &f.Named[i], i
			}
		}
		if p == nil {
			c.exprAllowString(na.Value)
			if len(f.Named) == 0 {
				c.errorf(na.Pos, "%s takes no named arguments", f.Name)
			} else {
				hint := ""
				if best := Closest(na.Name, namedNames(f)); best != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", best)
				}
				c.errorf(na.Pos, "unknown named argument %s of %s%s; accepted: %s", na.Name, f.Name, hint, f.NamedList())
			}
			continue
		}
		x := c.exprAllowString(na.Value)
		out[idx] = x
		t := x.Type()
		switch {
		case t.IsBad():
		case !p.Accepts(t):
			c.errorf(na.Value.Position(), "%s = ... of %s must be %s, got %s", p.Name, f.Name, p.Describe(), t)
		case p.Choices != nil:
			s, ok := x.(*StringLit)
			if !ok {
				c.errorf(na.Value.Position(), "%s of %s must be a string literal: one of %s", p.Name, f.Name, quoteList(p.Choices))
			} else if !contains(p.Choices, s.Value) {
				c.errorf(na.Value.Position(), "%s = %q is not accepted by %s; accepted: %s", p.Name, s.Value, f.Name, quoteList(p.Choices))
			}
		}
		if p.Data && !x.IsData() {
			c.errorf(na.Value.Position(), "%s of %s must be data, but it depends on parameters", p.Name, f.Name)
		}
	}
	for i, p := range f.Named {
		if p.Required && out[i] == nil {
			c.errorf(e.Pos, "%s needs the named argument %s = ...", f.Name, p.Name)
		}
	}
	return out
}

func namedNames(f *stdlib.Func) []string {
	out := make([]string, len(f.Named))
	for i, p := range f.Named {
		out[i] = p.Name
	}
	return out
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// primitiveRules checks what the signature table cannot express for the
// paper's primitives.
func (c *checker) primitiveRules(e *lang.Call, f *stdlib.Func, args []Expr) {
	if f.Kind != stdlib.Primitive || len(args) != 2 {
		return
	}
	x, y := args[0].Type(), args[1].Type()
	oneD := func(t lang.Type) bool { return t == lang.VectorType }
	if oneD(x) != oneD(y) {
		c.errorf(e.Pos, "%s: x and y must be points in the same space: x is %s, y is %s (a vector holds points on the line; a matrix or array[] vector holds points in R^d)", f.Name, x, y)
	}
}

// crnCall checks crn(K, expr, seed = s).
func (c *checker) crnCall(e *lang.Call, f *stdlib.Func) Expr {
	out := &CRN{info: info{pos: e.Pos, typ: lang.BadType}}
	if c.fn != nil {
		c.errorf(e.Pos, "crn(...) is not allowed in the body of a function; call the function inside crn(...) instead")
	}
	if c.crn > 0 {
		c.errorf(e.Pos, "crn(...) cannot be nested inside another crn(...)")
	}
	if len(e.Args) != 2 {
		c.errorf(e.Pos, "crn takes 2 arguments (K, expr), got %d", len(e.Args))
		for _, a := range e.Args {
			c.expr(a)
		}
		return out
	}
	out.K = c.expr(e.Args[0])
	c.crn++
	out.Body = c.expr(e.Args[1])
	c.crn--
	if t := out.K.Type(); !t.IsBad() && t != lang.IntType {
		c.errorf(e.Args[0].Position(), "the K of crn must be an int, got %s", t)
	}
	if !out.K.IsData() {
		c.errorf(e.Args[0].Position(), "the K of crn must be data, but it depends on parameters")
	}
	if k, ok := ConstInt(out.K); ok && k < 1 {
		c.errorf(e.Args[0].Position(), "the K of crn must be at least 1, got %d", k)
	}
	named := c.namedArgs(e, f)
	out.Seed = named[0]
	if t := out.Body.Type(); !t.IsBad() {
		if !t.IsNumeric() {
			c.errorf(e.Args[1].Position(), "crn averages a numeric expression, got %s", t)
		} else {
			out.typ = t.Promoted()
			out.shape = out.Body.Shape()
		}
	}
	out.data = false
	out.ID = len(c.model.CRNs)
	c.model.CRNs = append(c.model.CRNs, out)
	return out
}
