package runtime

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
)

// Hoisted subexpressions. A loop whose iterations depend on each other,
// a recursion such as GARCH's
//
//	for (t in 2:T)
//	  s[t] = sqrt(alpha0 + alpha1 * square(y[t - 1] - mu) + beta1 * square(s[t - 1]));
//
// cannot be lifted whole (lift.go), but most of its arithmetic does not
// depend on the recursion: alpha0 + alpha1 * square(y[t - 1] - mu) reads
// only the loop variable and values the loop does not change. Such a
// subexpression is computed before the loop for every iteration at once,
// as the lifted loops compute theirs (a gather and elementwise
// operations, a handful of tape nodes whatever the length, bitwise the
// values of the scalar operations), and the loop reads its iteration's
// element, a view that records nothing. The loop then records only the
// operations of the recursion itself.
//
// A subexpression is hoisted when it is a real scalar, reads the loop
// variable, reads no variable the body assigns or declares, and has a
// lifted form (lift.go's expressions: arithmetic, elementwise math,
// element reads). Anything its computation would report (an index out of
// range at some iteration) makes the plan rewind the tape and run the loop
// as written, which reports it at its iteration, as for lifted loops.

// hoistedRef stands in the rewritten body of a loop for a hoisted
// subexpression (the embedded original, which gives its position and
// type): its value at the current iteration.
type hoistedRef struct {
	ir.Expr
	st   *hoistState
	k    int // the subexpression's vector in st.vecs
	slot int // the loop variable's frame slot
}

// value returns the subexpression's value at the current iteration: an
// element of its vector.
func (h *hoistedRef) value(ev *evaluator) (autodiff.Value, error) {
	i := ev.frame[h.slot].v.Int - h.st.lo
	return ev.tape().Index(h.st.vecs[h.k], i), nil
}

// hoistState is the state of one execution of a loop with hoisted
// subexpressions: the first iteration's loop value and the vectors.
type hoistState struct {
	lo   int
	vecs []autodiff.Value
	busy bool // the loop runs (a recursive call that meets it runs it as written)
}

// hoister rewrites the body of one loop.
type hoister struct {
	lc    *liftCompiler
	decl  map[*ir.Var]bool // variables the body declares
	st    *hoistState
	plans []liftPlan // the hoisted subexpressions' lifted forms
}

// compileHoistedFor compiles a loop with hoisted subexpressions, falling
// back on run (the loop as written) at run time; it returns nil when the
// body has none.
func compileHoistedFor(s *ir.For, lo, hi intPlan, run func(ev *evaluator, a, b int) (control, error), replays map[*ir.For]bool) stmtPlan {
	lc := &liftCompiler{loopVar: s.Var, written: map[*ir.Var]bool{}, assigned: map[*ir.Var]bool{}, locals: map[*ir.Var]bool{}}
	h := &hoister{lc: lc, decl: map[*ir.Var]bool{}, st: &hoistState{}}
	ir.WalkWrites(s.Body, func(v *ir.Var) { lc.written[v] = true }, func(v *ir.Var) { h.decl[v] = true })
	body := h.stmt(s.Body)
	if len(h.plans) == 0 {
		return nil
	}
	h.st.vecs = make([]autodiff.Value, len(h.plans))
	hoisted := forLoop(s, compileStmt(body, replays))
	env := &liftEnv{ni: 1}
	return func(ev *evaluator) (control, error) {
		a, b, err := ints(ev, lo, hi)
		if err != nil || a > b || ev.noHoist || h.st.busy || ev.compactLoops && b-a >= compactMinValues/max(len(h.plans), 1) || !ev.liftFits(b-a+1, len(h.plans)) {
			// A loop of millions of iterations that takes no gradient
			// runs as written, compacted (compact.go): its hoisted
			// vectors would fill the memory that compaction saves. One
			// whose vectors would not fit in the evaluation's memory
			// runs as written too, checking its memory at every
			// iteration.
			if err != nil {
				return ctlNext, err
			}
			return run(ev, a, b)
		}
		t := ev.tape()
		mark := t.Mark()
		env.lo, env.n = a, b-a+1
		for k, p := range h.plans {
			v, ok, err := p(ev, env)
			if !ok || err != nil {
				// The loop as written reports it at its iteration (or
				// never meets it).
				t.Rewind(mark)
				return run(ev, a, b)
			}
			h.st.vecs[k] = asVector(t, v, env.n)
		}
		h.st.lo, h.st.busy = a, true
		ev.hoisted++
		c, err := hoisted(ev, a, b)
		h.st.busy = false
		return c, err
	}
}

// stmt returns s with its hoistable subexpressions replaced, or s itself.
// Statements inside inner loops and conditions are left as they are.
func (h *hoister) stmt(s ir.Stmt) ir.Stmt {
	switch s := s.(type) {
	case *ir.Block:
		var out *ir.Block
		for i, x := range s.Stmts {
			if y := h.stmt(x); y != x {
				if out == nil {
					c := *s
					c.Stmts = append([]ir.Stmt(nil), s.Stmts...)
					out = &c
				}
				out.Stmts[i] = y
			}
		}
		if out != nil {
			return out
		}
	case *ir.Assign:
		if r := h.expr(s.RHS); r != s.RHS {
			c := *s
			c.RHS = r
			return &c
		}
	case *ir.DeclStmt:
		if d := s.Decl; d.Init != nil && !d.SizesFromValue {
			if r := h.expr(d.Init); r != d.Init {
				c := *d
				c.Init = r
				return &ir.DeclStmt{Decl: &c}
			}
		}
	case *ir.TargetAdd:
		if r := h.expr(s.Expr); r != s.Expr {
			c := *s
			c.Expr = r
			return &c
		}
	case *ir.Tilde:
		if s.Trunc != nil {
			break
		}
		lhs, args, changed := h.expr(s.LHS), make([]ir.Expr, len(s.Args)), false
		for i, a := range s.Args {
			args[i] = h.expr(a)
			changed = changed || args[i] != a
		}
		if changed || lhs != s.LHS {
			c := *s
			c.LHS, c.Args = lhs, args
			return &c
		}
	}
	return s
}

// expr returns e with its largest hoistable subexpressions replaced, or e
// itself.
func (h *hoister) expr(e ir.Expr) ir.Expr {
	if loop, clean := h.deps(e); loop && clean && e.Type() == lang.RealType && compound(e) {
		if p := h.lc.expr(e); p != nil {
			h.plans = append(h.plans, p)
			return &hoistedRef{Expr: e, st: h.st, k: len(h.plans) - 1, slot: h.lc.loopVar.Slot}
		}
	}
	switch e := e.(type) {
	case *ir.Binary:
		l, r := h.expr(e.Left), h.expr(e.Right)
		if l != e.Left || r != e.Right {
			c := *e
			c.Left, c.Right = l, r
			return &c
		}
	case *ir.Unary:
		if x := h.expr(e.X); x != e.X {
			c := *e
			c.X = x
			return &c
		}
	case *ir.Call:
		if len(e.Named) > 0 {
			break
		}
		args, changed := make([]ir.Expr, len(e.Args)), false
		for i, a := range e.Args {
			args[i] = h.expr(a)
			changed = changed || args[i] != a
		}
		if changed {
			c := *e
			c.Args = args
			return &c
		}
	}
	return e
}

// compound reports whether e computes something (an element read or a
// variable alone is not worth a vector).
func compound(e ir.Expr) bool {
	switch e.(type) {
	case *ir.Binary, *ir.Unary, *ir.Call:
		return true
	}
	return false
}

// deps reports whether e reads the loop variable, and whether it is clean:
// it reads nothing the body assigns or declares and is made of the
// expressions that lifted forms know.
func (h *hoister) deps(e ir.Expr) (loop, clean bool) {
	changed := false
	known := exprVars(e, func(c *ir.Call) bool { return liftedMath[c.Func.Name] && len(c.Named) == 0 }, func(v *ir.Var) {
		switch {
		case v == h.lc.loopVar:
			loop = true
		case h.lc.written[v] || h.decl[v]:
			changed = true
		}
	})
	return loop, known && !changed
}
