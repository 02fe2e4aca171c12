package runtime

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	mathlib "github.com/shmlang/shm/stdlib/math"
)

// Scalar plans (issue 18, first step). A scalar expression built from
// literals, scalar variables, single elements of containers and the
// arithmetic operators is compiled once, at its first evaluation, into a
// tree of closures: every variable bound to its frame slot, every operator
// to its operation, ints computed as Go ints and reals recorded on the tape
// directly, without the boxing of stdlib.Value and the walk over the IR of
// evaluator.expr. A plan records on the tape exactly the operations the
// interpreter records, in the same order, and reports the same errors at
// the same positions, so the two give bitwise the same log density and
// gradient (TestScalarPlansMatchInterpreter). Expressions outside that
// subset keep the interpreter; their scalar subexpressions are planned.

// intPlan computes a scalar int expression.
type intPlan func(ev *evaluator) (int, error)

// realPlan computes a scalar real expression as a tape value.
type realPlan func(ev *evaluator) (autodiff.Value, error)

// scalarPlan is the compiled form of one expression: one of its fields is
// set, or neither when the expression cannot be compiled.
type scalarPlan struct {
	i intPlan
	r realPlan
}

// plan returns the compiled form of e, compiling it at the first call (nil
// when e cannot be compiled, or plans are off).
func (ev *evaluator) plan(e ir.Expr) *scalarPlan {
	if ev.noPlans {
		return nil
	}
	if p, ok := ev.plans[e]; ok {
		return p
	}
	if ev.plans == nil {
		ev.plans = map[ir.Expr]*scalarPlan{}
	}
	var p *scalarPlan
	switch e.Type() {
	case lang.IntType:
		if f := compileInt(e); f != nil {
			p = &scalarPlan{i: f}
		}
	case lang.RealType:
		if f := compileReal(e); f != nil {
			p = &scalarPlan{r: f}
		}
	}
	ev.plans[e] = p
	return p
}

// run evaluates a compiled expression as a value.
func (p *scalarPlan) run(ev *evaluator) (stdlib.Value, error) {
	if p.i != nil {
		n, err := p.i(ev)
		return stdlib.IntValue(n), err
	}
	v, err := p.r(ev)
	return stdlib.RealValue(v), err
}

// compileInt compiles a scalar int expression, or returns nil.
func compileInt(e ir.Expr) intPlan {
	if e.Type() != lang.IntType {
		return nil
	}
	switch e := e.(type) {
	case *ir.IntLit:
		n := int(e.Value)
		return func(*evaluator) (int, error) { return n, nil }
	case *ir.VarRef:
		v, p := e.Var, e.Position()
		return func(ev *evaluator) (int, error) {
			s := &ev.frame[v.Slot]
			if !s.set {
				return 0, ev.errorf(p, "%s is used before it has a value", v.Name)
			}
			return s.v.Int, nil
		}
	case *ir.Unary:
		x := compileInt(e.X)
		switch {
		case x == nil:
			return nil
		case e.Op == "+":
			return x
		case e.Op == "-":
			p := e.Position()
			return func(ev *evaluator) (int, error) {
				n, err := x(ev)
				if err != nil {
					return 0, err
				}
				if n, err = lang.IntNeg(n); err != nil {
					return 0, ev.domainf(p, "%v", err)
				}
				return n, nil
			}
		}
	case *ir.Binary:
		return compileIntBinary(e)
	case *ir.Index:
		return compileIntElement(e)
	}
	return nil
}

// compileIntBinary compiles int arithmetic (as evaluator.arith) and the
// comparisons of two scalars (as evaluator.binary), or returns nil.
func compileIntBinary(e *ir.Binary) intPlan {
	switch e.Op {
	case "==", "!=", "<", "<=", ">", ">=":
		return compileCompare(e)
	case "+", "-", "*", "/", "%/%", "%":
	default:
		return nil
	}
	l, r := compileInt(e.Left), compileInt(e.Right)
	if l == nil || r == nil {
		return nil
	}
	p, op := e.Position(), e.Op
	return func(ev *evaluator) (int, error) {
		a, b, err := ints(ev, l, r)
		if err != nil {
			return 0, err
		}
		n, err := lang.IntArith(op, a, b)
		if err != nil {
			return 0, ev.domainf(p, "%v", err)
		}
		return n, nil
	}
}

// ints evaluates two int operands, left first.
func ints(ev *evaluator, l, r intPlan) (int, int, error) {
	a, err := l(ev)
	if err != nil {
		return 0, 0, err
	}
	b, err := r(ev)
	return a, b, err
}

// compileCompare compiles a comparison of two scalars (ints compared as
// ints, anything else as float64 values, as evaluator.scalar does).
func compileCompare(e *ir.Binary) intPlan {
	var cmp func(a, b float64) bool
	switch e.Op {
	case "==":
		cmp = func(a, b float64) bool { return a == b }
	case "!=":
		cmp = func(a, b float64) bool { return a != b }
	case "<":
		cmp = func(a, b float64) bool { return a < b }
	case "<=":
		cmp = func(a, b float64) bool { return a <= b }
	case ">":
		cmp = func(a, b float64) bool { return a > b }
	case ">=":
		cmp = func(a, b float64) bool { return a >= b }
	}
	l, r := compileNumber(e.Left), compileNumber(e.Right)
	if l == nil || r == nil {
		return nil
	}
	return func(ev *evaluator) (int, error) {
		a, err := l(ev)
		if err != nil {
			return 0, err
		}
		b, err := r(ev)
		if err != nil {
			return 0, err
		}
		if cmp(a, b) {
			return 1, nil
		}
		return 0, nil
	}
}

// compileNumber compiles a scalar int or real expression to its float64
// value (for comparisons), or returns nil.
func compileNumber(e ir.Expr) func(ev *evaluator) (float64, error) {
	if f := compileInt(e); f != nil {
		return func(ev *evaluator) (float64, error) {
			n, err := f(ev)
			return float64(n), err
		}
	}
	if e.Type() != lang.RealType {
		return nil
	}
	f := compileReal(e)
	if f == nil {
		return nil
	}
	return func(ev *evaluator) (float64, error) {
		v, err := f(ev)
		if err != nil {
			return 0, err
		}
		return ev.tape().Scalar(v), nil
	}
}

// indexPlan computes one single index: an int variable plus a constant
// (i, t - 1, the common case, read from its slot without a call) or any
// other int expression (f).
type indexPlan struct {
	f    intPlan
	v    *ir.Var // when f is nil
	vpos lang.Pos
	add  int
	item *ir.IndexItem
}

// single returns the only index of idx when it is a variable plus a
// constant (x[n], s[t - 1]), whose position at returns without a call;
// nil otherwise.
func single(idx []indexPlan) *indexPlan {
	if len(idx) == 1 && idx[0].f == nil {
		return &idx[0]
	}
	return nil
}

// at returns the 0-based position of the single index p among n elements
// and whether it is in range and its variable set (flatIndex reports
// the error otherwise).
func (p *indexPlan) at(ev *evaluator, n int) (int, bool) {
	s := &ev.frame[p.v.Slot]
	i := s.v.Int + p.add - 1
	return i, s.set && uint(i) < uint(n)
}

// compileIndices compiles the indices of a single-element selection: every
// item a single int index. It returns nil otherwise.
func compileIndices(items []*ir.IndexItem) []indexPlan {
	if len(items) == 0 || len(items) > 8 {
		return nil
	}
	out := make([]indexPlan, len(items))
	for k, it := range items {
		if it.Kind != ir.IndexSingle {
			return nil
		}
		out[k].item = it
		if ref, add, ok := varPlusConst(it.Lo); ok {
			out[k].v, out[k].vpos, out[k].add = ref.Var, ref.Position(), add
		} else if out[k].f = compileInt(it.Lo); out[k].f == nil {
			return nil
		}
	}
	return out
}

// varPlusConst recognizes an int variable, v + c, c + v and v - c.
func varPlusConst(e ir.Expr) (v *ir.VarRef, c int, ok bool) {
	if e.Type() != lang.IntType {
		return nil, 0, false
	}
	switch e := e.(type) {
	case *ir.VarRef:
		return e, 0, true
	case *ir.Binary:
		l, lok := e.Left.(*ir.VarRef)
		r, rok := e.Right.(*ir.VarRef)
		li, liok := e.Left.(*ir.IntLit)
		ri, riok := e.Right.(*ir.IntLit)
		switch {
		case e.Op == "+" && lok && riok:
			return l, int(ri.Value), true
		case e.Op == "+" && liok && rok:
			return r, int(li.Value), true
		case e.Op == "-" && lok && riok:
			return l, -int(ri.Value), true
		}
	}
	return nil, 0, false
}

// flatIndex evaluates the indices against the sizes and returns the
// row-major position, with evaluator.singleElement's range errors.
func flatIndex(ev *evaluator, idx []indexPlan, sizes []int) (int, error) {
	// One index, a variable plus a constant, in range (x[n], s[t - 1]).
	if p := single(idx); p != nil && len(sizes) == 1 {
		if i, ok := p.at(ev, sizes[0]); ok {
			return i, nil
		}
	}
	return flatIndexAll(ev, idx, sizes)
}

// flatIndexAll is flatIndex in general, with its errors.
func flatIndexAll(ev *evaluator, idx []indexPlan, sizes []int) (int, error) {
	flat := 0
	for k := range idx {
		p := &idx[k]
		var i int
		if p.f == nil {
			s := &ev.frame[p.v.Slot]
			if !s.set {
				return 0, ev.errorf(p.vpos, "%s is used before it has a value", p.v.Name)
			}
			i = s.v.Int + p.add
		} else {
			var err error
			if i, err = p.f(ev); err != nil {
				return 0, err
			}
		}
		if i < 1 || i > sizes[k] {
			return 0, ev.errorf(p.item.Pos, "index %d out of range: the size is %d", i, sizes[k])
		}
		flat = flat*sizes[k] + i - 1
	}
	return flat, nil
}

// compileIntElement compiles a[i, ...] for an int array variable a with one
// int index per dimension, or returns nil.
func compileIntElement(e *ir.Index) intPlan {
	ref, ok := e.X.(*ir.VarRef)
	if !ok || ref.Var.Type.Base != lang.Int || ref.Var.Type.Dims != len(e.Items) {
		return nil
	}
	idx := compileIndices(e.Items)
	if idx == nil {
		return nil
	}
	v, p := ref.Var, ref.Position()
	return func(ev *evaluator) (int, error) {
		s := &ev.frame[v.Slot]
		if !s.set {
			return 0, ev.errorf(p, "%s is used before it has a value", v.Name)
		}
		flat, err := flatIndex(ev, idx, s.v.Dims)
		if err != nil {
			return 0, err
		}
		return s.v.Ints[flat], nil
	}
}

// compileReal compiles a scalar real expression, or returns nil. An int
// operand becomes a tape constant, as evaluator.toAD makes it.
func compileReal(e ir.Expr) realPlan {
	switch e.Type() {
	case lang.IntType:
		f := compileInt(e)
		if f == nil {
			return nil
		}
		return func(ev *evaluator) (autodiff.Value, error) {
			n, err := f(ev)
			if err != nil {
				return autodiff.Value{}, err
			}
			return ev.tape().Const(float64(n)), nil
		}
	case lang.RealType:
	default:
		return nil
	}
	switch e := e.(type) {
	case *ir.RealLit:
		x := e.Value
		return func(ev *evaluator) (autodiff.Value, error) { return ev.tape().Const(x), nil }
	case *ir.VarRef:
		v, p := e.Var, e.Position()
		return func(ev *evaluator) (autodiff.Value, error) {
			s := &ev.frame[v.Slot]
			if !s.set {
				return autodiff.Value{}, ev.errorf(p, "%s is used before it has a value", v.Name)
			}
			return s.v.AD, nil
		}
	case *ir.Unary:
		x := compileReal(e.X)
		switch {
		case x == nil:
			return nil
		case e.Op == "+":
			return x
		case e.Op == "-":
			return func(ev *evaluator) (autodiff.Value, error) {
				a, err := x(ev)
				if err != nil {
					return a, err
				}
				return ev.tape().Neg(a), nil
			}
		}
	case *ir.Binary:
		return compileRealBinary(e)
	case *ir.Index:
		return compileRealElement(e)
	case *ir.Call:
		return compileCall(e)
	case *hoistedRef:
		return e.value
	}
	return nil
}

// compileRealBinary compiles the arithmetic of two scalars with a real
// result, as evaluator.arith records it, or returns nil.
func compileRealBinary(e *ir.Binary) realPlan {
	if !e.Left.Type().IsScalar() || !e.Right.Type().IsScalar() {
		return nil
	}
	var op autodiff.BinaryFunc
	switch e.Op {
	case "+":
		op = autodiff.Add
	case "-":
		op = autodiff.Sub
	case "*", ".*":
		op = autodiff.Mul
	case "/", "./":
		op = autodiff.Div
	case "^", ".^":
		op = autodiff.Pow
	default:
		return nil
	}
	l, r := compileReal(e.Left), compileReal(e.Right)
	if l == nil || r == nil {
		return nil
	}
	p, name := e.Position(), e.Op
	return func(ev *evaluator) (autodiff.Value, error) {
		a, err := l(ev)
		if err != nil {
			return a, err
		}
		b, err := r(ev)
		if err != nil {
			return b, err
		}
		t := ev.tape()
		out := t.BinaryScalar(op, a, b)
		if err := t.Err(); err != nil {
			return autodiff.Value{}, ev.errorf(p, "%s: %v", name, err)
		}
		return out, nil
	}
}

// compileRealElement compiles x[i, ...] for a real container variable x
// (vector, row vector, matrix or real array) with one int index per
// dimension, as evaluator.cellElement and evaluator.singleElement read it,
// or returns nil.
func compileRealElement(e *ir.Index) realPlan {
	ref, ok := e.X.(*ir.VarRef)
	if !ok {
		return nil
	}
	vt := ref.Var.Type
	rank := vt.Dims
	switch {
	case vt.Dims > 0 && vt.Base != lang.Real:
		return nil
	case vt.Dims == 0 && (vt.Base == lang.Vector || vt.Base == lang.RowVector):
		rank = 1
	case vt.Dims == 0 && vt.Base == lang.Matrix:
		rank = 2
	case vt.Dims == 0:
		return nil
	}
	if rank != len(e.Items) {
		return nil
	}
	idx := compileIndices(e.Items)
	if idx == nil {
		return nil
	}
	v, p, one := ref.Var, ref.Position(), single(idx)
	return func(ev *evaluator) (autodiff.Value, error) {
		s := &ev.frame[v.Slot]
		if s.dirty {
			// Unpacked cells (cellElement).
			if one != nil && len(s.dims) == 1 {
				if i, ok := one.at(ev, s.dims[0]); ok {
					return s.cells[i], nil
				}
			}
			flat, err := flatIndex(ev, idx, s.dims)
			if err != nil {
				return autodiff.Value{}, err
			}
			return s.cells[flat], nil
		}
		if !s.set {
			return autodiff.Value{}, ev.errorf(p, "%s is used before it has a value", v.Name)
		}
		var sizes [2]int
		dims := s.v.Dims
		switch {
		case vt.Dims > 0:
		case rank == 1:
			sizes[0] = s.v.AD.Len()
			dims = sizes[:1]
		default:
			sizes[0], sizes[1] = s.v.AD.Rows(), s.v.AD.Cols()
			dims = sizes[:2]
		}
		flat, err := flatIndex(ev, idx, dims)
		if err != nil {
			return autodiff.Value{}, err
		}
		return ev.tape().Index(s.v.AD, flat), nil
	}
}

// valuePlan computes an expression as a value: its scalar plan when it has
// one, the interpreter otherwise.
type valuePlan func(ev *evaluator) (stdlib.Value, error)

// compileValue compiles e into a valuePlan (never nil).
func compileValue(e ir.Expr) valuePlan {
	switch e.Type() {
	case lang.IntType:
		if f := compileInt(e); f != nil {
			return func(ev *evaluator) (stdlib.Value, error) {
				n, err := f(ev)
				return stdlib.IntValue(n), err
			}
		}
	case lang.RealType:
		if f := compileReal(e); f != nil {
			return func(ev *evaluator) (stdlib.Value, error) {
				v, err := f(ev)
				return stdlib.RealValue(v), err
			}
		}
	}
	return func(ev *evaluator) (stdlib.Value, error) { return ev.expr(e) }
}

// compileValues compiles a list of expressions.
func compileValues(es []ir.Expr) []valuePlan {
	out := make([]valuePlan, len(es))
	for i, e := range es {
		out[i] = compileValue(e)
	}
	return out
}

// pushArgs evaluates args onto the evaluator's argument stack, after
// first (when valid), and returns the stack's base (evaluator.call).
func pushArgs(ev *evaluator, first *stdlib.Value, args []valuePlan) (int, error) {
	base := len(ev.args)
	if first != nil {
		ev.args = append(ev.args, *first)
	}
	for _, a := range args {
		v, err := a(ev)
		if err != nil {
			ev.args = ev.args[:base]
			return base, err
		}
		ev.args = append(ev.args, v)
	}
	return base, nil
}

// compileCall compiles a call with a real scalar result and no named
// arguments (the arguments of any type), as evaluator.call makes it, or
// returns nil. Random draws (reparameterized inside crn) and target() stay
// on the interpreter.
func compileCall(e *ir.Call) realPlan {
	if e.Func.Name == "target" || len(e.Named) > 0 || e.Func.Suffix == "_rng" {
		return nil
	}
	if f, ok := mathlib.ScalarUnary(e.Func.Name); ok && len(e.Args) == 1 && e.Args[0].Type().IsScalar() {
		if x := compileReal(e.Args[0]); x != nil {
			// sqrt(x), square(x), ...: the tape operation itself, as the
			// implementation records it, without the call's machinery.
			p, name := e.Position(), e.Func.Name
			bound := false
			return func(ev *evaluator) (autodiff.Value, error) {
				if !bound {
					if ev.impls[name] == nil {
						return autodiff.Value{}, ev.errorf(p, "%s is not implemented yet", name)
					}
					bound = true
				}
				a, err := x(ev)
				if err != nil {
					return a, err
				}
				return ev.tape().UnaryScalar(f, a), nil
			}
		}
	}
	args := compileValues(e.Args)
	p, name := e.Position(), e.Func.Name
	propto := e.Func.Suffix == "_lupdf" || e.Func.Suffix == "_lupmf"
	var impl stdlib.Impl // bound at the first run (plans are per evaluator)
	return func(ev *evaluator) (autodiff.Value, error) {
		base, err := pushArgs(ev, nil, args)
		if err != nil {
			return autodiff.Value{}, err
		}
		if impl == nil {
			impl = ev.impls[name]
		}
		v, err := ev.callBound(p, name, impl, ev.args[base:], nil, propto)
		ev.args = ev.args[:base]
		if err != nil {
			return autodiff.Value{}, err
		}
		if v.Type != lang.RealType {
			return autodiff.Value{}, ev.errorf(p, "internal error: %s returned %s, want real", name, v.Type)
		}
		return v.AD, nil
	}
}
