package ir

import (
	"fmt"
	"strings"

	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Function is a user-defined function of the functions block.
type Function struct {
	Name   string
	Pos    lang.Pos // of the definition (of the first declaration until defined)
	Params []*Var   // the arguments: slots 0 to len(Params)-1 of a call's frame
	Return lang.Type
	Body   []Stmt
	// Vars holds every variable of a call: the arguments, then the
	// locals and loop variables of the body; Var.Slot indexes it. Each
	// call has a frame of its own with len(Vars) slots.
	Vars []*Var

	defined bool
	// draw is the position of the first draw in the body (or in a user
	// function it calls) from a distribution without a
	// reparameterization, whose arguments are not data: inside crn(...)
	// such a function may only be called with data arguments.
	draw    lang.Pos
	hasDraw bool
	callees []calleeSite
}

// calleeSite is a call of a user _rng function from a function body.
type calleeSite struct {
	fn   *Function
	data bool // every argument is data in the caller's body
	pos  lang.Pos
}

// Void reports whether the function returns nothing.
func (f *Function) Void() bool { return f.Return == lang.VoidType }

// suffix returns the function's kind suffix: "_rng", "_lp", "_lpdf",
// "_lpmf", "_lcdf", "_lccdf", "_cdf", or "".
func (f *Function) suffix() string { return nameSuffix(f.Name) }

// normalized maps the suffixes of unnormalized densities to the
// definitions they call.
var normalized = map[string]string{"_lupdf": "_lpdf", "_lupmf": "_lpmf"}

// suffixes are the suffixes that say what a function is.
var suffixes = []string{"_rng", "_lp", "_lpdf", "_lpmf", "_lupdf", "_lupmf", "_lcdf", "_lccdf", "_cdf"}

func nameSuffix(name string) string {
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return s
		}
	}
	return ""
}

// isDensitySuffix reports whether calls of functions with the suffix take
// "|" after their first argument.
func isDensitySuffix(s string) bool {
	return s == "_lpdf" || s == "_lpmf" || s == "_lupdf" || s == "_lupmf" || s == "_lcdf" || s == "_lccdf"
}

// signature renders the function's signature: "real foo(real, vector)".
func (f *Function) signature() string {
	ps := make([]string, len(f.Params))
	for i, p := range f.Params {
		ps[i] = p.Type.String()
	}
	return fmt.Sprintf("%s %s(%s)", f.Return, f.Name, strings.Join(ps, ", "))
}

// UserCall calls a user-defined function.
type UserCall struct {
	info
	Func *Function
	Args []Expr
}

// Return is return Value; (Value nil in a void function).
type Return struct {
	Pos   lang.Pos
	Value Expr
}

// CallStmt is a call of a void user-defined function as a statement.
type CallStmt struct {
	Pos  lang.Pos
	Call *UserCall
}

func (s *Return) Position() lang.Pos   { return s.Pos }
func (s *CallStmt) Position() lang.Pos { return s.Pos }
func (*Return) stmtNode()              {}
func (*CallStmt) stmtNode()            {}

// ---- Checking ----

// declareFunctions records the signature of every function definition
// and forward declaration, so that bodies and blocks may call functions
// defined later (and functions may recurse).
func (c *checker) declareFunctions(defs []*lang.FunDef) []*Function {
	c.funcs = map[string][]*Function{}
	bodies := make([]*Function, len(defs))
	for i, d := range defs {
		fn := &Function{Name: d.Name, Pos: d.NamePos, Return: d.Return}
		if c.table.Lookup(d.Name) != nil || IsODESolver(d.Name) {
			c.errorf(d.NamePos, "%s is a built-in function; a user-defined function cannot take its name", d.Name)
			continue
		}
		if sfx := nameSuffix(d.Name); sfx == "_lupdf" || sfx == "_lupmf" {
			c.errorf(d.NamePos, "define %s as %s%s; it is then also called as %s", d.Name, strings.TrimSuffix(d.Name, sfx), normalized[sfx], d.Name)
			continue
		}
		for _, p := range d.Params {
			v := &Var{Slot: len(fn.Vars), Name: p.Name, Pos: p.Pos, Type: p.Type, Block: lang.FunctionsBlock, Local: true, Arg: true, Data: p.Data}
			fn.Params = append(fn.Params, v)
			fn.Vars = append(fn.Vars, v)
		}
		c.functionRules(d, fn)
		var prev *Function
		for _, g := range c.funcs[d.Name] {
			if sameParams(g, fn) {
				prev = g
			}
		}
		switch {
		case prev == nil:
			c.funcs[d.Name] = append(c.funcs[d.Name], fn)
		case prev.Return != fn.Return:
			c.errorf(d.NamePos, "%s is declared at %s with result type %s, here with %s", d.Name, prev.Pos, prev.Return, fn.Return)
			continue
		case prev.defined && d.Body != nil:
			c.errorf(d.NamePos, "%s is already defined at %s", fn.signature(), prev.Pos)
			continue
		case prev.defined:
			// As in Stan: a function is declared, then defined; or only
			// defined.
			c.errorf(d.NamePos, "%s is declared after its definition at %s; a declaration must come first", fn.signature(), prev.Pos)
			continue
		case d.Body == nil:
			c.errorf(d.NamePos, "%s is already declared at %s; declare a function once", fn.signature(), prev.Pos)
			continue
		default:
			// The definition of a forward declaration: its names, from now.
			prev.Params, prev.Vars, prev.Pos = fn.Params, fn.Vars, fn.Pos
			fn = prev
		}
		if d.Body != nil {
			fn.defined = true
			bodies[i] = fn
		}
	}
	return bodies
}

// sameParams reports whether f and g take the same argument types.
func sameParams(f, g *Function) bool {
	if len(f.Params) != len(g.Params) {
		return false
	}
	for i := range f.Params {
		if f.Params[i].Type != g.Params[i].Type {
			return false
		}
	}
	return true
}

// functionRules checks what a function's suffix demands of its
// signature.
func (c *checker) functionRules(d *lang.FunDef, fn *Function) {
	seen := map[string]bool{}
	for _, p := range d.Params {
		if seen[p.Name] {
			c.errorf(p.Pos, "%s names two arguments of %s", p.Name, d.Name)
		}
		seen[p.Name] = true
	}
	switch sfx := fn.suffix(); sfx {
	case "_lpdf", "_lpmf", "_lcdf", "_lccdf", "_cdf":
		if fn.Return != lang.RealType {
			c.errorf(d.NamePos, "%s must return real (a %s function returns a log density or probability), not %s", d.Name, sfx, fn.Return)
		}
		if len(fn.Params) == 0 {
			c.errorf(d.NamePos, "%s needs at least one argument, the outcome", d.Name)
			return
		}
		y := fn.Params[0].Type
		if sfx == "_lpmf" && y.Base != lang.Int {
			c.errorf(d.Params[0].Pos, "the outcome of %s must be int or an array of ints (it is a probability mass function), not %s", d.Name, y)
		}
		if sfx == "_lpdf" && y.Base == lang.Int {
			c.errorf(d.Params[0].Pos, "the outcome of %s must be real-valued (it is a density; name it %s_lpmf for an int outcome), not %s", d.Name, strings.TrimSuffix(d.Name, sfx), y)
		}
	}
}

// functionBody checks the body of a defined function, in a scope that
// holds only its arguments (a function cannot read the program's
// variables).
func (c *checker) functionBody(d *lang.FunDef, fn *Function) {
	savedScopes, savedFn, savedBlock := c.scopes, c.fn, c.block_
	savedLoops, savedCRN := c.loops, c.crn
	c.scopes = []map[string]*Var{{}}
	for _, p := range fn.Params {
		c.scopes[0][p.Name] = p
	}
	c.fn, c.block_, c.loops, c.crn = fn, lang.FunctionsBlock, 0, 0
	c.push()
	fn.Body = c.stmts(d.Body.Stmts, true)
	c.pop()
	c.scopes, c.fn, c.block_, c.loops, c.crn = savedScopes, savedFn, savedBlock, savedLoops, savedCRN
	if !fn.Void() && !alwaysReturns(fn.Body) {
		c.errorf(d.Body.Pos, "%s can reach the end of its body without returning a %s: every path must end in return (or reject)", d.Name, fn.Return)
	}
}

// alwaysReturns reports whether every path through ss ends in return or
// reject.
func alwaysReturns(ss []Stmt) bool {
	for _, s := range ss {
		if stmtReturns(s) {
			return true
		}
	}
	return false
}

func stmtReturns(s Stmt) bool {
	switch s := s.(type) {
	case *Return, *Reject:
		return true
	case *Block:
		return alwaysReturns(s.Stmts)
	case *If:
		return s.Else != nil && stmtReturns(s.Then) && stmtReturns(s.Else)
	}
	return false
}

// functions checks the functions block: signatures first, then bodies,
// then the rules that need every body (draws inside crn).
func (c *checker) functions(defs []*lang.FunDef) {
	bodies := c.declareFunctions(defs)
	for i, fn := range bodies {
		if fn != nil {
			c.functionBody(defs[i], fn)
		}
	}
	for _, fns := range c.funcs {
		for _, fn := range fns {
			if !fn.defined {
				c.errorf(fn.Pos, "%s is declared but never defined", fn.signature())
				continue
			}
			c.model.Functions = append(c.model.Functions, fn)
		}
	}
	// A function draws without a reparameterization when its body does,
	// or when it passes non-data arguments to one that does.
	for changed := true; changed; {
		changed = false
		for _, fn := range c.model.Functions {
			for _, cs := range fn.callees {
				if !fn.hasDraw && cs.fn.hasDraw && !cs.data {
					fn.draw, fn.hasDraw, changed = cs.pos, true, true
				}
			}
		}
	}
}

// returnStmt checks return and return value.
func (c *checker) returnStmt(s *lang.Return) Stmt {
	out := &Return{Pos: s.Pos}
	if s.Value != nil {
		out.Value = c.expr(s.Value)
	}
	switch fn := c.fn; {
	case fn == nil:
		c.errorf(s.Pos, "return is only allowed in the body of a function")
	case fn.Void() && out.Value != nil:
		c.errorf(s.Pos, "%s returns void: write return; without a value", fn.Name)
	case !fn.Void() && out.Value == nil:
		c.errorf(s.Pos, "%s must return a value of type %s", fn.Name, fn.Return)
	case !fn.Void():
		c.assignable(s.Value.Position(), "the result of "+fn.Name, fn.Return, out.Value)
	}
	return out
}

// callStmt checks a call used as a statement.
func (c *checker) callStmt(s *lang.CallStmt) Stmt {
	e := c.call(s.Call)
	uc, ok := e.(*UserCall)
	switch {
	case e.Type().IsBad() && (!ok || uc.Func == nil): // reported
		return nil
	case !ok:
		c.errorf(s.Pos, "the result of %s would be discarded: only a call of a function returning void is a statement", s.Call.Name)
		return nil
	case !uc.Func.Void():
		c.errorf(s.Pos, "the result of %s (%s) would be discarded: only a call of a function returning void is a statement", s.Call.Name, uc.Func.Return)
		return nil
	}
	return &CallStmt{Pos: s.Pos, Call: uc}
}

// userFunctions returns the user-defined functions a call of name can
// reach, with the definition's name (foo_lupdf calls foo_lpdf).
func (c *checker) userFunctions(name string) ([]*Function, string) {
	if fns := c.funcs[name]; len(fns) > 0 {
		return fns, name
	}
	for lu, lp := range normalized {
		if strings.HasSuffix(name, lu) {
			def := strings.TrimSuffix(name, lu) + lp
			if fns := c.funcs[def]; len(fns) > 0 {
				return fns, def
			}
		}
	}
	return nil, name
}

// userCall checks a call of a user-defined function: the overload whose
// argument types accept the arguments with the fewest int-to-real
// promotions, and where such a function may be called.
func (c *checker) userCall(e *lang.Call, fns []*Function, args []Expr) Expr {
	out := &UserCall{info: info{pos: e.Pos, typ: lang.BadType}, Args: args}
	if len(e.Named) > 0 {
		c.errorf(e.Named[0].Pos, "user-defined functions take no named arguments")
	}
	for _, a := range args {
		if a.Type().IsBad() {
			return out
		}
	}
	var best *Function
	bestCost, ties := -1, 0
	for _, fn := range fns {
		if len(fn.Params) != len(args) {
			continue
		}
		cost, ok := 0, true
		for i, p := range fn.Params {
			switch at := args[i].Type(); {
			case p.Type == at:
			case p.Type.AssignableFrom(at):
				cost++
			default:
				ok = false
			}
		}
		switch {
		case !ok:
		case best == nil || cost < bestCost:
			best, bestCost, ties = fn, cost, 0
		case cost == bestCost:
			ties++
		}
	}
	if best == nil || ties > 0 {
		alts := make([]string, len(fns))
		for i, fn := range fns {
			alts[i] = fn.signature()
		}
		problem := "no definition of %s accepts arguments of types %s"
		if best != nil {
			problem = "the call of %s is ambiguous for arguments of types %s"
		}
		c.errorf(e.Pos, problem+"; defined: %s", e.Name, typeList(argTypes(args)), strings.Join(alts, "; "))
		return out
	}
	out.Func, out.typ = best, best.Return
	out.data = true
	for i, a := range args {
		out.data = out.data && a.IsData()
		if best.Params[i].Data && !a.IsData() {
			c.errorf(a.Position(), "argument %d of %s (%s) must be data, but it depends on parameters", i+1, e.Name, best.Params[i].Name)
		}
	}
	c.userCallRules(e, best, out)
	return out
}

// userCallRules enforces where a user function may be called, by its
// suffix, and the "|" of density calls.
func (c *checker) userCallRules(e *lang.Call, fn *Function, call *UserCall) {
	sfx := nameSuffix(e.Name)
	inFn := func(sfxs ...string) bool {
		return c.fn != nil && contains(sfxs, c.fn.suffix())
	}
	switch sfx {
	case "_rng":
		call.data = call.data && c.block_ == lang.TransformedDataBlock
		switch {
		case c.block_ == lang.TransformedDataBlock, c.block_ == lang.GeneratedQuantitiesBlock, inFn("_rng"):
		case c.crn > 0:
			c.crnDraws = append(c.crnDraws, calleeSite{fn: fn, data: call.data || allData(call.Args), pos: e.Pos})
		default:
			c.errorf(e.Pos, "%s may only be called in transformed data, generated quantities, inside crn(...) or in another _rng function, not in the %s", e.Name, c.where())
		}
		if c.fn != nil && c.fn.suffix() == "_rng" {
			c.fn.callees = append(c.fn.callees, calleeSite{fn: fn, data: allData(call.Args), pos: e.Pos})
		}
	case "_lp":
		call.data = false
		if c.block_ != lang.ModelBlock && c.block_ != lang.TransformedParametersBlock && !inFn("_lp") {
			c.errorf(e.Pos, "%s adds to target: it may only be called in the transformed parameters or model block or in another _lp function, not in the %s", e.Name, c.where())
		}
	case "_lupdf", "_lupmf":
		if c.block_ != lang.ModelBlock && !inFn("_lpdf", "_lpmf", "_lp") {
			c.errorf(e.Pos, "%s (unnormalized) is only allowed in the model block or in the body of a density; use %s", e.Name, fn.Name)
		}
	}
	if fn.Void() && c.stmtCall != e {
		c.errorf(e.Pos, "%s returns void: it can only be called as a statement", e.Name)
		call.typ = lang.BadType // no second error where the value is used
	}
	switch {
	case isDensitySuffix(sfx) && len(call.Args) > 1 && !e.Conditional:
		c.errorf(e.Pos, "%s needs '|' after its first argument: %s(y | ...)", e.Name, e.Name)
	case !isDensitySuffix(sfx) && e.Conditional:
		c.errorf(e.Pos, "'|' is only used in the arguments of densities such as %s_lpdf(y | ...); %s takes commas", strings.TrimSuffix(e.Name, sfx), e.Name)
	}
}

func allData(es []Expr) bool {
	for _, e := range es {
		if !e.IsData() {
			return false
		}
	}
	return true
}

// where names the block or function being checked, for messages.
func (c *checker) where() string {
	if c.fn != nil {
		return "body of " + c.fn.Name
	}
	return c.block_.String() + " block"
}

// crnDrawRules reports calls inside crn(...) of user _rng functions that
// draw without a reparameterization from arguments that depend on
// parameters; run once every body is checked.
func (c *checker) crnDrawRules() {
	for _, cs := range c.crnDraws {
		if cs.fn.hasDraw && !cs.data {
			c.errorf(cs.pos, "%s draws at %s from a distribution without a reparameterization, so inside crn(...) its arguments must be data; they depend on parameters", cs.fn.Name, cs.fn.draw)
		}
	}
}

// userTilde checks y ~ foo(args) for a user-defined foo_lpdf or foo_lpmf:
// target += foo_lpdf(y | args).
func (c *checker) userTilde(s *lang.Tilde, fns []*Function, lhs Expr, args []Expr) Stmt {
	if s.Trunc != nil {
		c.errorf(s.Trunc.Pos, "truncation of a user-defined distribution is not supported; add its normalizing term with target +=")
	}
	call := &lang.Call{Pos: s.DistPos, Name: fns[0].Name, Conditional: len(args) > 0}
	e := c.userCall(call, fns, append([]Expr{lhs}, args...))
	return &TargetAdd{Pos: s.Pos, Expr: e}
}

// recordDraw notes, in the body of a _rng function, a draw from a family
// without a reparameterization whose arguments are not data.
func (c *checker) recordDraw(f *stdlib.Func, at lang.Pos, args []Expr) {
	if c.fn == nil || c.fn.hasDraw || f.Family == nil || f.Family.Reparam || allData(args) {
		return
	}
	c.fn.draw, c.fn.hasDraw = at, true
}
