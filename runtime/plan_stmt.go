package runtime

import (
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Statement plans: the loops, blocks, conditions and scalar assignments of
// a statement compiled once into closures over the scalar plans of
// plan.go, so that a loop body runs without a map look-up or a walk over
// the IR per statement. Statements outside that subset (declarations,
// ~ statements, calls on containers, ...) run through evaluator.execIR
// from their closure. As for expressions, a plan records what the
// interpreter records, in the same order, with the same errors.

// stmtPlan executes one compiled statement.
type stmtPlan func(ev *evaluator) (control, error)

// stmtPlanFor returns the compiled form of s (compiled at the first call;
// nil when plans are off).
func (ev *evaluator) stmtPlanFor(s ir.Stmt) stmtPlan {
	if ev.noPlans {
		return nil
	}
	if p, ok := ev.stmtPlans[s]; ok {
		return p
	}
	if ev.stmtPlans == nil {
		ev.stmtPlans = map[ir.Stmt]stmtPlan{}
	}
	p := compileStmt(s, ev.replays)
	ev.stmtPlans[s] = p
	return p
}

// compileStmt compiles s; a statement it does not know runs on the
// interpreter. The loops in replays are replayed (replay.go).
func compileStmt(s ir.Stmt, replays map[*ir.For]bool) stmtPlan {
	if p := compileKnownStmt(s, replays); p != nil {
		return p
	}
	return func(ev *evaluator) (control, error) { return ev.execIR(s) }
}

// iteration interprets the outcome of one execution of a loop's body: done
// when the loop ends there (an error, break or return), with the loop's
// own outcome.
func iteration(c control, err error) (done bool, out control, outErr error) {
	switch {
	case err != nil:
		return true, ctlNext, err
	case c == ctlBreak:
		return true, ctlNext, nil
	case c == ctlReturn:
		return true, c, nil
	}
	return false, ctlNext, nil
}

// forLoop returns the loop of s over the bounds it is given, with body the
// plan of its body.
func forLoop(s *ir.For, body stmtPlan) func(ev *evaluator, a, b int) (control, error) {
	slotIndex, pos := s.Var.Slot, s.Pos
	compactor := newLoopCompactor(s)
	return func(ev *evaluator, a, b int) (control, error) {
		if a <= b {
			ev.frame[slotIndex] = slot{v: stdlib.IntValue(a), set: true}
		}
		var cmp *compaction
		if compactor != nil && ev.compactLoops {
			cmp = compactor.start(ev)
		}
		for i := a; i <= b; i++ {
			if err := ev.checkInterrupt(pos); err != nil {
				return ctlNext, err
			}
			// The loop variable cannot be assigned in the body: only its
			// int changes.
			ev.frame[slotIndex].v.Int = i
			if done, c, err := iteration(body(ev)); done {
				return c, err
			}
			if cmp != nil {
				cmp.after(ev)
			}
		}
		return ctlNext, nil
	}
}

func compileKnownStmt(s ir.Stmt, replays map[*ir.For]bool) stmtPlan {
	switch s := s.(type) {
	case *ir.Block:
		body := make([]stmtPlan, len(s.Stmts))
		for i, x := range s.Stmts {
			body[i] = compileStmt(x, replays)
		}
		return func(ev *evaluator) (control, error) {
			for _, p := range body {
				if c, err := p(ev); err != nil || c != ctlNext {
					return c, err
				}
			}
			return ctlNext, nil
		}
	case *ir.For:
		lo, hi := compileInt(s.Lo), compileInt(s.Hi)
		if lo == nil || hi == nil {
			return nil
		}
		run := forLoop(s, compileStmt(s.Body, replays))
		loop := func(ev *evaluator) (control, error) {
			a, b, err := ints(ev, lo, hi)
			if err != nil {
				return ctlNext, err
			}
			return run(ev, a, b)
		}
		if lifted := compileLiftedFor(s, loop); lifted != nil {
			loop = lifted
		} else if hoisted := compileHoistedFor(s, lo, hi, run, replays); hoisted != nil {
			loop = hoisted
		}
		if replays[s] {
			return compileReplayedFor(s, loop)
		}
		return loop
	case *ir.If:
		cond := compileNumber(s.Cond)
		if cond == nil {
			return nil
		}
		then := compileStmt(s.Then, replays)
		var els stmtPlan
		if s.Else != nil {
			els = compileStmt(s.Else, replays)
		}
		return func(ev *evaluator) (control, error) {
			x, err := cond(ev)
			if err != nil {
				return ctlNext, err
			}
			if x != 0 {
				return then(ev)
			}
			if els != nil {
				return els(ev)
			}
			return ctlNext, nil
		}
	case *ir.Break:
		return func(*evaluator) (control, error) { return ctlBreak, nil }
	case *ir.Continue:
		return func(*evaluator) (control, error) { return ctlContinue, nil }
	case *ir.TargetAdd:
		if s.Expr.Type() != lang.RealType {
			return nil
		}
		f, pos := compileReal(s.Expr), s.Pos
		if f == nil {
			return nil
		}
		return func(ev *evaluator) (control, error) {
			v, err := f(ev)
			if err != nil {
				return ctlNext, err
			}
			ev.addTarget(stdlib.RealValue(v), pos)
			return ctlNext, nil
		}
	case *ir.DeclStmt:
		return compileScalarDecl(s.Decl)
	case *ir.Assign:
		return compileAssign(s)
	case *ir.Tilde:
		return compileTilde(s)
	}
	return nil
}

// compileTilde compiles lhs ~ dist(args) without truncation, as
// evaluator.tilde runs it, or returns nil.
func compileTilde(s *ir.Tilde) stmtPlan {
	if s.Trunc != nil {
		return nil
	}
	lhs, args := compileValue(s.LHS), compileValues(s.Args)
	p, name := s.Pos, s.Func.Name
	var impl stdlib.Impl // bound at the first run (plans are per evaluator)
	return func(ev *evaluator) (control, error) {
		y, err := lhs(ev)
		if err != nil {
			return ctlNext, err
		}
		base, err := pushArgs(ev, &y, args)
		if err != nil {
			return ctlNext, err
		}
		if impl == nil {
			impl = ev.impls[name]
		}
		lp, err := ev.callBound(p, name, impl, ev.args[base:], nil, true)
		ev.args = ev.args[:base]
		if err != nil {
			return ctlNext, err
		}
		ev.addTarget(lp, p)
		return ctlNext, nil
	}
}

// compoundOps maps the operator of a compound assignment to the tape
// operation evaluator.arith records for two scalars.
var compoundOps = map[string]func(t *autodiff.Tape, a, b autodiff.Value) autodiff.Value{
	"+=": (*autodiff.Tape).Add, "-=": (*autodiff.Tape).Sub,
	"*=": (*autodiff.Tape).Mul, ".*=": (*autodiff.Tape).Mul,
	"/=": (*autodiff.Tape).Div, "./=": (*autodiff.Tape).Div,
}

// compileAssign compiles an assignment of a scalar to a real or int scalar
// variable, or to one element of a real container, or returns nil.
func compileAssign(a *ir.Assign) stmtPlan {
	if !a.RHS.Type().IsScalar() || (a.Op != "=" && compoundOps[a.Op] == nil) {
		return nil
	}
	v, pos := a.Var, a.Pos
	if len(a.Indices) == 0 {
		switch {
		case v.Type == lang.IntType:
			return compileIntAssign(a)
		case v.Type != lang.RealType:
			return nil
		}
	}
	rhs := compileReal(a.RHS)
	if rhs == nil {
		return nil
	}
	op, name := compoundOps[a.Op], ""
	if op != nil {
		name = a.Op[:len(a.Op)-1]
	}
	// combine computes cur op rhs as evaluator.compound does.
	combine := func(ev *evaluator, cur, r autodiff.Value) (autodiff.Value, error) {
		t := ev.tape()
		out := op(t, cur, r)
		if err := t.Err(); err != nil {
			return autodiff.Value{}, ev.errorf(pos, "%s: %v", name, err)
		}
		return out, nil
	}
	if len(a.Indices) == 0 {
		return func(ev *evaluator) (control, error) {
			r, err := rhs(ev)
			if err != nil {
				return ctlNext, err
			}
			s := &ev.frame[v.Slot]
			if op != nil {
				if !s.set {
					return ctlNext, ev.errorf(pos, "%s is used before it has a value", v.Name)
				}
				if r, err = combine(ev, s.v.AD, r); err != nil {
					return ctlNext, err
				}
			}
			if s.v.Type == lang.RealType && s.cells == nil {
				s.v.AD = r // a real scalar's slot holds nothing else
			} else {
				s.v, s.cells, s.dirty = stdlib.RealValue(r), nil, false
			}
			return ctlNext, nil
		}
	}
	// One element of a real container (evaluator.assignElement).
	vt := v.Type
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
	idx := compileIndices(a.Indices)
	if idx == nil || rank != len(a.Indices) {
		return nil
	}
	one := single(idx)
	return func(ev *evaluator) (control, error) {
		r, err := rhs(ev)
		if err != nil {
			return ctlNext, err
		}
		s := &ev.frame[v.Slot]
		if !s.set {
			return ctlNext, ev.errorf(pos, "%s is used before it has a value", v.Name)
		}
		if op == nil && one != nil && s.cells != nil && len(s.dims) == 1 {
			// s[t] = ... into unpacked cells, the index in range.
			if i, ok := one.at(ev, s.dims[0]); ok {
				s.cells[i] = r
				s.dirty = true
				return ctlNext, nil
			}
		}
		t := ev.tape()
		if op != nil {
			// The current element (evaluator.readIndexed), then the
			// indices again (evaluator.assignElement).
			flat, err := flatIndex(ev, idx, s.dims)
			if err != nil {
				return ctlNext, err
			}
			var cur autodiff.Value
			if s.dirty {
				cur = s.cells[flat]
			} else {
				cur = t.Index(s.v.AD, flat)
			}
			if r, err = combine(ev, cur, r); err != nil {
				return ctlNext, err
			}
		}
		flat, err := flatIndex(ev, idx, s.dims)
		if err != nil {
			return ctlNext, err
		}
		ev.unpack(s, s.v.AD)
		s.cells[flat] = r
		s.dirty = true
		return ctlNext, nil
	}
}

// compileIntAssign compiles an assignment to an int scalar variable.
func compileIntAssign(a *ir.Assign) stmtPlan {
	rhs := compileInt(a.RHS)
	if rhs == nil || (a.Op != "=" && a.Op != "+=" && a.Op != "-=" && a.Op != "*=") {
		return nil
	}
	v, pos, opc := a.Var, a.Pos, a.Op
	return func(ev *evaluator) (control, error) {
		r, err := rhs(ev)
		if err != nil {
			return ctlNext, err
		}
		s := &ev.frame[v.Slot]
		if opc != "=" {
			if !s.set {
				return ctlNext, ev.errorf(pos, "%s is used before it has a value", v.Name)
			}
			if r, err = lang.IntArith(opc[:len(opc)-1], s.v.Int, r); err != nil {
				return ctlNext, ev.domainf(pos, "%v", err)
			}
		}
		if s.v.Type == lang.IntType && s.cells == nil {
			s.v.Int = r
		} else {
			s.v, s.cells, s.dirty = stdlib.IntValue(r), nil, false
		}
		return ctlNext, nil
	}
}

// compileScalarDecl compiles the declaration of a local int or real
// scalar without a constraint, with or without an initial value, as
// evaluator.declare runs it, or returns nil.
func compileScalarDecl(d *ir.Decl) stmtPlan {
	if d.Constrained() || d.SizesFromValue || (d.Var.Type != lang.IntType && d.Var.Type != lang.RealType) {
		return nil
	}
	slotIndex := d.Var.Slot
	if d.Var.Type == lang.IntType {
		if d.Init == nil {
			return func(ev *evaluator) (control, error) {
				ev.frame[slotIndex] = slot{v: stdlib.IntValue(minInt), set: true}
				return ctlNext, nil
			}
		}
		init := compileInt(d.Init)
		if init == nil {
			return nil
		}
		return func(ev *evaluator) (control, error) {
			// The slot is declared (set, NaN-free) before its initializer
			// runs, as in the interpreter.
			ev.frame[slotIndex] = slot{v: stdlib.IntValue(minInt), set: true}
			n, err := init(ev)
			if err != nil {
				return ctlNext, err
			}
			ev.frame[slotIndex].v.Int = n
			return ctlNext, nil
		}
	}
	if d.Init == nil {
		return func(ev *evaluator) (control, error) {
			ev.frame[slotIndex] = slot{v: stdlib.RealValue(ev.tape().Const(math.NaN())), set: true}
			return ctlNext, nil
		}
	}
	init := compileReal(d.Init)
	if init == nil {
		return nil
	}
	return func(ev *evaluator) (control, error) {
		ev.frame[slotIndex] = slot{v: stdlib.RealValue(ev.tape().Const(math.NaN())), set: true}
		v, err := init(ev)
		if err != nil {
			return ctlNext, err
		}
		ev.frame[slotIndex].v.AD = v
		return ctlNext, nil
	}
}
