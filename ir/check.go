package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/parser"
	"github.com/shmlang/shm/stdlib"
)

// CheckSource parses and checks the source text of one file.
func CheckSource(file, text string) (*Model, lang.ErrorList) {
	m, errs := checkSource(file, text, firstPrefix)
	if m != nil {
		sum := sha256.Sum256([]byte(text))
		m.SourceSHA256 = hex.EncodeToString(sum[:])
	}
	return m, errs
}

// firstPrefix is the size of the first prefix that checkSource checks.
const firstPrefix = 64 << 10

// checkSource checks text. A file of more than twice prefix bytes is first
// checked a prefix at a time (parser.Prefix), each four times longer than
// the last: once a prefix holds MaxErrors errors on its own lines, they are
// the file's first MaxErrors errors, and checking stops there. A huge file
// full of errors costs what its first errors cost; a valid one is checked
// whole after prefixes that add at most a third to the work.
func checkSource(file, text string, prefix int) (*Model, lang.ErrorList) {
	var source *lang.Source // of the whole text, for the errors' lines
	for ; prefix > 0 && prefix <= len(text)/2; prefix *= 4 {
		cut, ok := parser.Prefix(text, prefix)
		if !ok {
			break
		}
		_, errs := checkWhole(file, cut.Text)
		if source == nil {
			source = lang.NewSource(file, text)
		}
		var before lang.ErrorList
		for _, e := range errs {
			if e.Pos.Line <= cut.Line {
				before = append(before, source.At(e.Pos, e.Msg)) // the whole line
			}
		}
		if len(before) >= parser.MaxErrors {
			return nil, before
		}
	}
	return checkWhole(file, text)
}

// checkWhole parses and checks all of text.
func checkWhole(file, text string) (*Model, lang.ErrorList) {
	prog, errs := parser.Parse(file, text)
	if prog == nil || len(errs) > 0 {
		// Check what parsed, to report independent type errors too.
		if prog == nil {
			return nil, errs
		}
		_, cerrs := Check(prog, lang.NewSource(file, text))
		all := append(errs, cerrs...)
		all.Sort()
		if len(all) > parser.MaxErrors {
			all = all[:parser.MaxErrors]
		}
		return nil, all
	}
	return Check(prog, lang.NewSource(file, text))
}

// Check checks a parsed program. src supplies source lines for error
// messages and may be nil. The model is nil when there are errors.
func Check(prog *lang.Program, src *lang.Source) (*Model, lang.ErrorList) {
	c := &checker{
		src:   src,
		table: stdlib.Builtins(),
		model: &Model{Source: prog, File: prog.File, Name: modelName(prog.File)},
	}
	c.push() // the global scope, for block-level variables
	c.functions(prog.Functions)
	for _, b := range prog.Blocks {
		c.block(b)
	}
	c.crnDrawRules()
	c.errs.Sort()
	if len(c.errs) > parser.MaxErrors {
		c.errs = c.errs[:parser.MaxErrors]
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return c.model, nil
}

func modelName(file string) string {
	base := filepath.Base(file)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

type checker struct {
	src    *lang.Source
	table  *stdlib.Table
	model  *Model
	errs   lang.ErrorList
	scopes []map[string]*Var

	block_ lang.BlockKind
	loops  int // nesting depth of loops
	crn    int // nesting depth of crn(...)

	// funcs are the user-defined functions by name (overloads);
	// fn is the function whose body is being checked, or nil.
	funcs map[string][]*Function
	fn    *Function
	// crnDraws are the calls of user _rng functions inside crn(...),
	// checked once every body is (crnDrawRules).
	crnDraws []calleeSite
	// stmtCall is the call being checked as a statement (which may
	// return void).
	stmtCall *lang.Call
}

func (c *checker) errorf(p lang.Pos, format string, args ...any) {
	if c.full() {
		return
	}
	c.errs = append(c.errs, c.src.At(p, fmt.Sprintf(format, args...)))
}

// full reports whether the checker holds every error it will report
// (more than MaxErrors, so that the first MaxErrors by position are among
// them). Statement lists stop there: checking a huge invalid file costs
// what its first errors cost, not what the whole file would.
func (c *checker) full() bool { return len(c.errs) >= 4*parser.MaxErrors }

func (c *checker) push() { c.scopes = append(c.scopes, map[string]*Var{}) }
func (c *checker) pop()  { c.scopes = c.scopes[:len(c.scopes)-1] }

func (c *checker) lookup(name string) *Var {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if v := c.scopes[i][name]; v != nil {
			return v
		}
	}
	return nil
}

// declare adds a variable to the innermost scope.
func (c *checker) declare(name string, pos lang.Pos, t lang.Type) *Var {
	if old := c.lookup(name); old != nil {
		c.errorf(pos, "%s is already declared at %s", name, old.Pos)
	}
	v := &Var{Name: name, Pos: pos, Type: t, Block: c.block_}
	if c.fn != nil {
		v.Slot = len(c.fn.Vars) // a slot of the call's frame
		c.fn.Vars = append(c.fn.Vars, v)
	} else {
		v.Slot = len(c.model.Vars)
		c.model.Vars = append(c.model.Vars, v)
	}
	c.scopes[len(c.scopes)-1][name] = v
	return v
}

func (c *checker) block(b *lang.Block) {
	c.block_ = b.Kind
	// The model block's variables are local to it.
	local := b.Kind == lang.ModelBlock
	if local {
		c.push()
		defer c.pop()
	}
	var stmts []Stmt
	for _, s := range b.Stmts {
		if c.full() {
			break
		}
		switch b.Kind {
		case lang.DataBlock, lang.ParametersBlock:
			d, ok := s.(*lang.VarDecl)
			if !ok {
				c.errorf(s.Position(), "only declarations are allowed in the %s block", b.Kind)
				continue
			}
			decl := c.decl(d, false)
			if b.Kind == lang.DataBlock {
				c.model.Data = append(c.model.Data, decl)
			} else {
				c.model.Params = append(c.model.Params, decl)
			}
			continue
		}
		if st := c.stmt(s, local); st != nil {
			stmts = append(stmts, st)
		}
	}
	switch b.Kind {
	case lang.TransformedDataBlock:
		c.model.TransformedData = stmts
	case lang.TransformedParametersBlock:
		c.model.TransformedParams = stmts
	case lang.ModelBlock:
		c.model.ModelBlock = stmts
	case lang.GeneratedQuantitiesBlock:
		c.model.Generated = stmts
	}
}

// isDataBlock reports whether variables of the current block are data.
func (c *checker) isDataBlock() bool {
	return c.block_ == lang.DataBlock || c.block_ == lang.TransformedDataBlock
}

// decl checks a declaration; local is true inside nested blocks and the
// model block.
func (c *checker) decl(d *lang.VarDecl, local bool) *Decl {
	te := d.Type
	decl := &Decl{Pos: d.Pos}
	topLevel := !local
	// Sizes are checked before the variable exists (it may not size itself).
	sizeExpr := func(e lang.Expr) Expr {
		x := c.expr(e)
		if !x.Type().IsBad() && x.Type() != lang.IntType {
			c.errorf(e.Position(), "a size must be an int, found %s", x.Type())
		}
		if topLevel && !x.IsData() {
			c.errorf(e.Position(), "the size of %s must be data (it depends on parameters)", d.Name)
		}
		return x
	}
	for _, e := range te.ArraySize {
		decl.ArraySizes = append(decl.ArraySizes, sizeExpr(e))
	}
	for _, e := range te.Size {
		decl.Sizes = append(decl.Sizes, sizeExpr(e))
	}
	typ := te.Type()
	decl.Special = te.Special
	if te.Special != lang.NoSpecial && local {
		c.errorf(te.Pos, "local variable %s cannot have the constrained type %s; constrained types are allowed on block-level declarations", d.Name, te.Special)
	}
	if sizes, ok := constSizes(decl.Sizes); ok && te.Special != lang.NoSpecial {
		// Sizes known here are checked here, as the run checks the others.
		if te.Special == lang.CholeskyFactorCov && len(sizes) == 1 {
			sizes = append(sizes, sizes[0])
		}
		if _, err := FreeSize(te.Special, sizes); err != nil {
			c.errorf(te.Pos, "%s: %v", d.Name, err)
		}
	}
	if b := te.Bounds; b != nil {
		if local {
			c.errorf(b.Pos, "local variable %s cannot have a constraint; constraints are allowed on block-level declarations", d.Name)
		}
		bound := func(e lang.Expr, what string) Expr {
			if e == nil {
				return nil
			}
			x := c.expr(e)
			elem := lang.Type{Base: lang.Real}
			if te.Base == lang.Int {
				elem = lang.IntType
			}
			switch {
			case x.Type().IsBad():
			case (what == "offset" || what == "multiplier") && te.Base == lang.Int:
			case elem.AssignableFrom(x.Type()):
			case lang.Type{Base: te.Base}.AssignableFrom(x.Type()) && te.Base.IsLinalg():
			default:
				c.errorf(e.Position(), "the %s bound of %s must be %s, found %s", what, d.Name, elem, x.Type())
			}
			if c.block_ == lang.DataBlock && !x.IsData() {
				c.errorf(e.Position(), "the %s bound of data variable %s must be data", what, d.Name)
			}
			return x
		}
		decl.Lower = bound(b.Lower, "lower")
		decl.Upper = bound(b.Upper, "upper")
		if lo, ok1 := ConstNumber(decl.Lower); ok1 {
			if hi, ok2 := ConstNumber(decl.Upper); ok2 && !(lo < hi) {
				c.errorf(b.Pos, "the lower bound of %s (%g) must be below its upper bound (%g)", d.Name, lo, hi)
			}
		}
		if te.Base == lang.Int && (b.Offset != nil || b.Multiplier != nil) {
			c.errorf(b.Pos, "offset and multiplier apply to real types, not to int %s", d.Name)
		} else {
			decl.Offset = bound(b.Offset, "offset")
			decl.Multiplier = bound(b.Multiplier, "multiplier")
		}
	}
	if d.Init != nil {
		switch c.block_ {
		case lang.DataBlock:
			c.errorf(d.Init.Position(), "data variable %s cannot have an initial value: it is read from the data", d.Name)
		case lang.ParametersBlock:
			c.errorf(d.Init.Position(), "parameter %s cannot have an initial value; use --init to set a starting point", d.Name)
		default:
			decl.Init = c.rngAsArray(typ, c.expr(d.Init))
			c.assignable(d.Init.Position(), d.Name, typ, decl.Init)
			c.checkShape(d.Init.Position(), d.Name, c.declShape(decl, typ), decl.Init.Shape())
		}
	}
	if c.block_ == lang.ParametersBlock && te.Base == lang.Int {
		c.errorf(te.Pos, "parameter %s cannot be an int: parameters are continuous", d.Name)
	}
	v := c.declare(d.Name, d.NamePos, typ)
	v.Decl = decl
	v.Local = local
	v.Data = c.isDataBlock()
	decl.Var = v
	decl.TypeText = typeText(te)
	decl.ShapeText = shapeSyntax(te, "")
	decl.ConstraintText = boundsText(te.Bounds)
	if te.Special != lang.NoSpecial {
		decl.ConstraintText = te.Special.String()
	}
	return decl
}

// constSizes returns the sizes when they are all constants (at least
// one).
func constSizes(es []Expr) ([]int, bool) {
	var out []int
	for _, e := range es {
		n, ok := ConstInt(e)
		if !ok {
			return nil, false
		}
		out = append(out, int(n))
	}
	return out, len(out) > 0
}

// declShape returns the statically known sizes of a declaration, or nil
// when none is known or the declaration has the wrong number of sizes
// (an error reported at the declaration).
func (c *checker) declShape(d *Decl, t lang.Type) []int {
	if len(d.ArraySizes) != t.Dims || len(d.Sizes) != t.Base.Rank() {
		return nil
	}
	var shape []int
	known := false
	for _, e := range append(append([]Expr{}, d.ArraySizes...), d.Sizes...) {
		n, ok := ConstInt(e)
		if ok {
			known = true
		} else {
			n = -1
		}
		shape = append(shape, int(n))
	}
	if !known {
		return nil
	}
	return shape
}

// checkShape reports a mismatch between two statically known shapes.
func (c *checker) checkShape(p lang.Pos, name string, want, got []int) {
	if want == nil || got == nil || len(want) != len(got) {
		return
	}
	for i := range want {
		if want[i] >= 0 && got[i] >= 0 && want[i] != got[i] {
			c.errorf(p, "size mismatch assigning to %s: declared size %s, value has size %s", name, shapeText(want), shapeText(got))
			return
		}
	}
}

func shapeText(s []int) string {
	parts := make([]string, len(s))
	for i, n := range s {
		if n < 0 {
			parts[i] = "?"
		} else {
			parts[i] = fmt.Sprint(n)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// assignable reports whether a value of e's type can be stored as t.
func (c *checker) assignable(p lang.Pos, name string, t lang.Type, e Expr) {
	et := e.Type()
	if et.IsBad() || t.IsBad() {
		return
	}
	if !t.AssignableFrom(et) {
		hint := ""
		switch {
		case t.Dims == 1 && t.Base.IsScalar() && et.Dims == 0 && (et.Base == lang.Vector || et.Base == lang.RowVector):
			hint = " (convert with to_array_1d(...))"
		case t.Dims == 0 && (t.Base == lang.Vector || t.Base == lang.RowVector) && et.Dims == 1 && et.Base.IsScalar():
			hint = fmt.Sprintf(" (convert with to_%s(...))", t.Base)
		}
		c.errorf(p, "cannot assign a value of type %s to %s of type %s%s", et, name, t, hint)
	}
}

func (c *checker) stmts(ss []lang.Stmt, local bool) []Stmt {
	var out []Stmt
	for _, s := range ss {
		if c.full() {
			break
		}
		if st := c.stmt(s, local); st != nil {
			out = append(out, st)
		}
	}
	return out
}

// body checks the body of a loop or conditional in its own scope.
func (c *checker) body(s lang.Stmt) Stmt {
	c.push()
	defer c.pop()
	st := c.stmt(s, true)
	if st == nil {
		return &Block{Pos: s.Position()}
	}
	return st
}

func (c *checker) stmt(s lang.Stmt, local bool) Stmt {
	switch s := s.(type) {
	case *lang.VarDecl:
		return &DeclStmt{Decl: c.decl(s, local)}
	case *lang.Assign:
		return c.assign(s)
	case *lang.Tilde:
		return c.tilde(s)
	case *lang.TargetAdd:
		if !c.mayAddTarget() {
			c.errorf(s.Pos, "target += is only allowed in the model block and in the body of an _lp function")
		}
		e := c.expr(s.Expr)
		if t := e.Type(); !t.IsBad() && !t.IsNumeric() {
			c.errorf(s.Expr.Position(), "target += needs a numeric value, found %s", t)
		}
		return &TargetAdd{Pos: s.Pos, Expr: e}
	case *lang.For:
		lo, hi := c.expr(s.Lo), c.expr(s.Hi)
		for _, e := range []Expr{lo, hi} {
			if t := e.Type(); !t.IsBad() && t != lang.IntType {
				c.errorf(e.Position(), "loop bounds must be int, found %s", t)
			}
		}
		c.push()
		defer c.pop()
		v := c.declare(s.Var, s.VarPos, lang.IntType)
		v.Local, v.Loop = true, true
		v.Data = lo.IsData() && hi.IsData()
		c.loops++
		body := c.body(s.Body)
		c.loops--
		return &For{Pos: s.Pos, Var: v, Lo: lo, Hi: hi, Body: body}
	case *lang.ForEach:
		ctr := c.expr(s.Container)
		elem := lang.BadType
		switch t := ctr.Type(); {
		case t.IsBad():
		case t.Dims > 0:
			elem = t.Elem()
		case t.Base.IsLinalg():
			elem = lang.RealType
		default:
			c.errorf(s.Container.Position(), "cannot loop over a value of type %s; use for (i in a:b) for a range", t)
		}
		c.push()
		defer c.pop()
		v := c.declare(s.Var, s.VarPos, elem)
		v.Local, v.Loop = true, true
		v.Data = ctr.IsData()
		c.loops++
		body := c.body(s.Body)
		c.loops--
		return &ForEach{Pos: s.Pos, Var: v, Container: ctr, Body: body}
	case *lang.While:
		cond := c.condition(s.Cond)
		c.loops++
		body := c.body(s.Body)
		c.loops--
		return &While{Pos: s.Pos, Cond: cond, Body: body}
	case *lang.If:
		st := &If{Pos: s.Pos, Cond: c.condition(s.Cond), Then: c.body(s.Then)}
		if s.Else != nil {
			st.Else = c.body(s.Else)
		}
		return st
	case *lang.BlockStmt:
		c.push()
		defer c.pop()
		return &Block{Pos: s.Pos, Stmts: c.stmts(s.Stmts, true)}
	case *lang.Print:
		return &Print{Pos: s.Pos, Args: c.printArgs(s.Args)}
	case *lang.Reject:
		return &Reject{Pos: s.Pos, Args: c.printArgs(s.Args)}
	case *lang.Break:
		if c.loops == 0 {
			c.errorf(s.Pos, "break outside a loop")
		}
		return &Break{Pos: s.Pos}
	case *lang.Continue:
		if c.loops == 0 {
			c.errorf(s.Pos, "continue outside a loop")
		}
		return &Continue{Pos: s.Pos}
	case *lang.Return:
		return c.returnStmt(s)
	case *lang.CallStmt:
		saved := c.stmtCall
		c.stmtCall = s.Call
		defer func() { c.stmtCall = saved }()
		return c.callStmt(s)
	}
	c.errorf(s.Position(), "unsupported statement")
	return nil
}

func (c *checker) printArgs(args []lang.Expr) []Expr {
	out := make([]Expr, len(args))
	for i, a := range args {
		out[i] = c.exprAllowString(a)
	}
	return out
}

func (c *checker) condition(e lang.Expr) Expr {
	x := c.expr(e)
	if t := x.Type(); !t.IsBad() && !t.IsScalar() {
		c.errorf(e.Position(), "a condition must be an int or real, found %s", t)
	}
	return x
}

func (c *checker) assign(s *lang.Assign) Stmt {
	// Find the variable under the indices.
	base := s.LHS
	for {
		ix, ok := base.(*lang.Index)
		if !ok {
			break
		}
		base = ix.X
	}
	id, _ := base.(*lang.Ident)
	rhs := c.expr(s.RHS)
	if id == nil {
		return nil // the parser already reported it
	}
	v := c.lookup(id.Name)
	if v == nil {
		c.undeclared(id)
		return nil
	}
	switch {
	case v.Arg:
		c.errorf(id.Pos, "cannot assign to function argument %s; copy it into a local variable", v.Name)
	case v.Loop:
		c.errorf(id.Pos, "cannot assign to loop variable %s", v.Name)
	case v.Block == lang.DataBlock:
		c.errorf(id.Pos, "cannot assign to data variable %s", v.Name)
	case v.Block == lang.ParametersBlock:
		c.errorf(id.Pos, "cannot assign to parameter %s", v.Name)
	case v.Block != c.block_:
		c.errorf(id.Pos, "cannot assign to %s (declared in the %s block) from the %s block", v.Name, v.Block, c.block_)
	}
	lhs := c.expr(s.LHS)
	st := &Assign{Pos: s.Pos, Var: v, Op: s.Op, RHS: rhs, LHSType: lhs.Type()}
	if ix, ok := lhs.(*Index); ok {
		st.Indices = c.flattenIndices(ix)
	}
	if s.Op == "=" {
		rhs = c.rngAsArray(lhs.Type(), rhs)
		st.RHS = rhs
		c.assignable(s.RHS.Position(), lang.ExprString(s.LHS), lhs.Type(), rhs)
		c.checkShape(s.RHS.Position(), lang.ExprString(s.LHS), lhs.Shape(), rhs.Shape())
	} else {
		op := strings.TrimSuffix(s.Op, "=")
		t, ok := binaryType(op, lhs.Type(), rhs.Type())
		if !lhs.Type().IsBad() && !rhs.Type().IsBad() && (!ok || !lhs.Type().AssignableFrom(t)) {
			c.errorf(s.Pos, "%s %s %s is not defined for %s and %s", lang.ExprString(s.LHS), s.Op, lang.ExprString(s.RHS), lhs.Type(), rhs.Type())
		}
	}
	if v.Data && !rhs.IsData() {
		v.Data = false
	}
	return st
}

// flattenIndices collects the index items of nested Index nodes on an
// assignment's left side, outermost variable first. Nested indexing such
// as a[i][j] is equivalent to a[i, j] for assignment.
func (c *checker) flattenIndices(ix *Index) []*IndexItem {
	var chain [][]*IndexItem
	var e Expr = ix
	for {
		x, ok := e.(*Index)
		if !ok {
			break
		}
		chain = append(chain, x.Items)
		e = x.X
	}
	var out []*IndexItem
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i]...)
	}
	return out
}

// rngAsArray returns e converted to array[] real when t is array[] real
// and e is a vectorized draw whose result is a vector: Stan's vectorized
// _rng functions return array[] real, shm's a vector, and a Stan program
// stores them as arrays (array[N] real y_rep = normal_rng(mu, sigma)).
func (c *checker) rngAsArray(t lang.Type, e Expr) Expr {
	call, ok := e.(*Call)
	if !ok || call.Func.Kind != stdlib.RNG || t != lang.ArrayOf(lang.RealType, 1) || e.Type() != lang.VectorType {
		return e
	}
	f := c.table.Lookup("to_array_1d")
	sig := c.resolve(f, e.Position(), []Expr{e}, func(int) string { return "the draw" }, -1)
	if sig == nil {
		return e
	}
	typ, ok := sig.Result([]lang.Type{e.Type()})
	if !ok {
		return e
	}
	return &Call{info: info{pos: e.Position(), typ: typ, data: e.IsData(), shape: e.Shape()}, Func: f, Sig: sig, Args: []Expr{e}}
}

// mayAddTarget reports whether target += and ~ are allowed here.
func (c *checker) mayAddTarget() bool {
	if c.fn != nil {
		return c.fn.suffix() == "_lp"
	}
	return c.block_ == lang.ModelBlock
}

func (c *checker) tilde(s *lang.Tilde) Stmt {
	if !c.mayAddTarget() {
		c.errorf(s.Pos, "~ statements are only allowed in the model block and in the body of an _lp function")
	}
	lhs := c.expr(s.LHS)
	args := make([]Expr, len(s.Args))
	for i, a := range s.Args {
		args[i] = c.expr(a)
	}
	name := s.Dist
	for _, sfx := range []string{"_lpdf", "_lpmf"} {
		if fns := c.funcs[name+sfx]; len(fns) > 0 {
			return c.userTilde(s, fns, lhs, args)
		}
	}
	for _, suf := range []string{"_lpdf", "_lpmf", "_lupdf", "_lupmf"} {
		if strings.HasSuffix(name, suf) && c.table.Family(strings.TrimSuffix(name, suf)) != nil {
			c.errorf(s.DistPos, "write %s ~ %s(...), without the %s suffix", lang.ExprString(s.LHS), strings.TrimSuffix(name, suf), suf)
			return nil
		}
	}
	fam := c.table.Family(name)
	if fam == nil {
		c.errorf(s.DistPos, "unknown distribution %q%s", name, suggest(name, c.table.FamilyNames()))
		return nil
	}
	fn := c.table.Lookup(name + fam.Suffix())
	all := append([]Expr{lhs}, args...)
	sig := c.resolve(fn, s.DistPos, all, func(i int) string {
		if i == 0 {
			return "the left side of ~ " + name
		}
		return fmt.Sprintf("argument %d of %s", i, name)
	}, len(all)-1)
	st := &Tilde{Pos: s.Pos, LHS: lhs, Func: fn, Sig: sig, Args: args}
	if s.Trunc != nil {
		tr := &Truncation{Pos: s.Trunc.Pos}
		if !fam.CDF {
			c.errorf(s.Trunc.Pos, "%s cannot be truncated: it has no cumulative distribution function", name)
		}
		if t := lhs.Type(); !t.IsBad() && !t.IsScalar() {
			c.errorf(s.Trunc.Pos, "truncation applies to a univariate outcome; %s has type %s", lang.ExprString(s.LHS), t)
		}
		bound := func(e lang.Expr) Expr {
			if e == nil {
				return nil
			}
			x := c.expr(e)
			if t := x.Type(); !t.IsBad() && !t.IsScalar() {
				c.errorf(e.Position(), "a truncation bound must be an int or real, found %s", t)
			}
			return x
		}
		tr.Lo, tr.Hi = bound(s.Trunc.Lo), bound(s.Trunc.Hi)
		tr.LCDF = c.table.Lookup(name + "_lcdf")
		tr.LCCDF = c.table.Lookup(name + "_lccdf")
		st.Trunc = tr
	}
	return st
}

func (c *checker) undeclared(id *lang.Ident) {
	if c.full() {
		return
	}
	var names []string
	for _, s := range c.scopes {
		for n := range s {
			names = append(names, n)
		}
	}
	if f := c.table.Lookup(id.Name); f != nil || len(c.funcs[id.Name]) > 0 {
		c.errorf(id.Pos, "%s is a function; call it as %s(...)", id.Name, id.Name)
		return
	}
	if c.fn != nil {
		c.errorf(id.Pos, "%s is not declared in %s%s (a function reads only its arguments and its own variables)", id.Name, c.fn.Name, suggest(id.Name, names))
		return
	}
	c.errorf(id.Pos, "%s is not declared%s", id.Name, suggest(id.Name, names))
}
