package runtime

import (
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Lifted loops. A loop over observations written as Stan code usually is
//
//	for (n in 1:N) {
//	  mu[n] = alpha[group[n]] + x[n] * beta;
//	  target += normal_lpdf(y[n] | mu[n], sigma);
//	}
//
// whose iterations are independent: every statement assigns the n-th
// element of a container, or adds a density of the n-th elements to the
// target. Such a loop is run as whole-vector operations: alpha[group[n]]
// becomes one gather of alpha at group[lo:hi], x[n] * beta one elementwise
// product, the assignment one write of the range, and the density one
// vectorized call; N iterations cost a handful of tape nodes instead of a
// few per iteration. Every element is computed by the same floating-point
// operations as in the loop, so the containers hold bitwise the values the
// loop would give; the log density differs only in the order of its sum.
//
// A loop is lifted only when the compiler can show the iterations
// independent (see liftCompiler); at run time, anything the loop would
// report as an error (an index out of range, a container read before its
// value) makes the lifted plan rewind the tape and run the loop itself,
// which reports it as before.

// liftedValue is the value of a lifted expression: one value for every
// iteration (ints or a tape vector), or an invariant.
type liftedValue struct {
	inv   bool
	v     stdlib.Value   // the invariant's value
	ints  []int          // per-iteration ints
	ad    autodiff.Value // per-iteration reals, a vector
	isInt bool
	// pat is the form of ints known from how they were computed: a loop
	// variable shifted by invariants (y[t - 1], p[j, t]).
	pat intPattern
}

// intPattern is a known form of a lifted value's per-iteration ints.
type intPattern uint8

const (
	patNone  intPattern = iota
	patUnit             // ints[k] = ints[0] + k: a single loop's variable
	patOuter            // ints[k] = ints[0] + k/ni: a collapsed nest's outer variable
	patInner            // ints[k] = ints[0] + k%ni: its inner variable
)

// span is the number of distinct values of n ints of pattern p in a nest
// of ni inner iterations (n a multiple of ni), ascending by one from the
// first; 0 for patNone.
func (p intPattern) span(n, ni int) int {
	switch p {
	case patUnit:
		return n
	case patOuter:
		return n / ni
	case patInner:
		return ni
	}
	return 0
}

// liftEnv is the state of one execution of a lifted loop.
type liftEnv struct {
	// The n iterations: the loop variable runs from lo, and the inner
	// variable of a collapsed nest from ilo over ni values for each of
	// its values (ni is 1 for a single loop), so that iteration k has
	// lo + k/ni and ilo + k%ni.
	lo, n   int
	ilo, ni int
	// assigned holds the vector assigned to each container's range so
	// far in the body, by frame slot; locals the values of the body's
	// local scalars.
	assigned map[int]autodiff.Value
	locals   map[int]liftedValue
}

// liftPlan evaluates a lifted expression; ok is false when the loop must
// run as a loop (its iterations would report an error).
type liftPlan func(ev *evaluator, env *liftEnv) (v liftedValue, ok bool, err error)

// liftCompiler analyses one loop body.
type liftCompiler struct {
	loopVar  *ir.Var
	inner    *ir.Var          // the inner variable of a collapsed nest, or nil
	written  map[*ir.Var]bool // variables assigned anywhere in the body
	assigned map[*ir.Var]bool // containers assigned by the statements so far
	locals   map[*ir.Var]bool // local scalars declared by the statements so far
}

// liftStmt is one compiled statement of a lifted body: an assignment of a
// range or of elements (write), a term of the target, a local scalar
// (local), or an inner loop whose bounds do not vary (inner).
type liftStmt struct {
	write *ir.Var
	rhs   liftPlan
	// idx, for a write of elements of a container of rank > 1 (or at
	// an index other than the loop variable), are the indices: the
	// iterations' elements are written in order at their positions.
	idx    []liftPlan
	posBuf []int
	// A density: its implementation (bound at the first run), arguments
	// and whether it drops constants.
	pos    lang.Pos
	name   string
	impl   stdlib.Impl
	args   []liftPlan
	propto bool
	// A local scalar declared in the body: its declaration (op "=",
	// rhs the initial value or nil for none) or an assignment (op "=",
	// "+=", ...).
	local *ir.Var
	op    string
	ints  []int // the local's own copy of per-iteration ints
	// An inner loop: its variable, bounds and body.
	inner    *ir.Var
	ilo, ihi intPlan
	body     []*liftStmt
}

// liftRun is the state of one execution of a lifted loop.
type liftRun struct {
	ev      *evaluator
	env     *liftEnv
	argBuf  []stdlib.Value
	intDims []int
	writes  []pendingWrite
	terms   []liftTerm
	ranges  []*liftStmt
}

// run executes the statements in order; ok is false when the loop must
// run as a loop.
func (r *liftRun) run(list []*liftStmt) (ok bool, err error) {
	ev, env := r.ev, r.env
	t := ev.tape()
	for _, st := range list {
		switch {
		case st.inner != nil:
			a, b, err := ints(ev, st.ilo, st.ihi)
			if err != nil {
				return false, err
			}
			for k := a; k <= b; k++ {
				ev.frame[st.inner.Slot] = slot{v: stdlib.IntValue(k), set: true}
				if ok, err := r.run(st.body); !ok || err != nil {
					return ok, err
				}
			}
		case st.local != nil:
			var v liftedValue
			switch {
			case st.rhs == nil && st.local.Type == lang.IntType:
				v = liftedValue{inv: true, v: stdlib.IntValue(minInt)}
			case st.rhs == nil:
				v = liftedValue{inv: true, v: stdlib.RealValue(t.Const(math.NaN()))}
			default:
				rhs, ok, err := st.rhs(ev, env)
				if !ok || err != nil {
					return ok, err
				}
				v = rhs
				if st.op != "=" {
					cur := env.locals[st.local.Slot]
					if v, ok = applyBinary(t, st.op[:len(st.op)-1], compoundOps[st.op], st.local.Type == lang.IntType, cur, rhs, &st.ints, env.n); !ok {
						return false, nil // an int overflows: the loop reports it
					}
				}
			}
			if v.isInt {
				// A copy of its own: the expression's buffer is reused.
				st.ints = append(grow(st.ints, 0), v.ints...)
				v.ints = st.ints
			}
			if st.local.Type == lang.RealType && v.inv && v.v.Type == lang.IntType {
				v.v = stdlib.RealValue(t.Const(float64(v.v.Int)))
			}
			env.locals[st.local.Slot] = v
		case st.write != nil && st.idx != nil:
			v, ok, err := st.rhs(ev, env)
			if !ok || err != nil {
				return ok, err
			}
			s := &ev.frame[st.write.Slot]
			if !s.set {
				return false, nil
			}
			pos, _, ok, err := liftPositions(ev, env, st.idx, s.dims, &st.posBuf)
			if !ok || err != nil {
				return ok, err
			}
			r.writes = append(r.writes, pendingWrite{v: st.write, pos: pos, x: asVector(t, v, env.n)})
		case st.write != nil:
			v, ok, err := st.rhs(ev, env)
			if !ok || err != nil {
				return ok, err
			}
			if !ev.rangeWritable(st.write, env.lo, env.lo+env.n-1) {
				return false, nil
			}
			env.assigned[st.write.Slot] = asVector(t, v, env.n)
			r.ranges = append(r.ranges, st)
		default:
			start := len(r.argBuf)
			for _, p := range st.args {
				v, ok, err := p(ev, env)
				if !ok || err != nil {
					return ok, err
				}
				arg := v.value()
				if v.isInt {
					r.intDims = append(r.intDims, len(v.ints))
					arg.Dims = r.intDims[len(r.intDims)-1:]
				}
				r.argBuf = append(r.argBuf, arg)
			}
			r.terms = append(r.terms, liftTerm{st: st, start: start, end: len(r.argBuf)})
		}
	}
	return true, nil
}

// compileLiftedFor compiles a loop whose iterations are independent into
// whole-vector operations, falling back on loop (the loop's own plan) at
// run time; it returns nil when the loop does not have that form.
func compileLiftedFor(s *ir.For, loop stmtPlan) stmtPlan {
	lo, hi := compileInt(s.Lo), compileInt(s.Hi)
	if lo == nil || hi == nil {
		return nil
	}
	lc := &liftCompiler{loopVar: s.Var, written: map[*ir.Var]bool{}, assigned: map[*ir.Var]bool{}, locals: map[*ir.Var]bool{}}
	writes := map[*ir.Var]int{}
	lc.markWritten(s.Body, writes)
	for v, n := range writes {
		if n > 1 && !v.Type.IsScalar() {
			return nil // a container written by two statements: their order matters
		}
	}
	var ilo, ihi intPlan
	stmts, ok := []*liftStmt(nil), false
	if in := lc.collapsible(s.Body); in != nil {
		// A nest: its iterations are those of the pairs.
		lc.inner = in.Var
		ilo, ihi = compileInt(in.Lo), compileInt(in.Hi)
		if stmts, ok = lc.stmts(in.Body, false); !ok {
			clear(lc.assigned)
			clear(lc.locals)
			lc.inner, ilo, ihi = nil, nil, nil
		}
	}
	if !ok {
		stmts, ok = lc.stmts(s.Body, false)
	}
	if !ok || len(stmts) == 0 {
		return nil
	}
	nArgs := countArgs(stmts)
	r := &liftRun{env: &liftEnv{assigned: map[int]autodiff.Value{}, locals: map[int]liftedValue{}}}
	return func(ev *evaluator) (control, error) {
		if ev.noLift {
			return loop(ev)
		}
		a, b, err := ints(ev, lo, hi)
		if err != nil || a > b {
			return ctlNext, err // as the loop: bounds first, then nothing to do
		}
		if ev.compactLoops && b-a >= compactMinValues || !ev.liftFits(b-a+1, nArgs) {
			// Millions of iterations that take no gradient run as
			// written, compacted (compact.go), in constant memory; a
			// lifted form beyond the evaluation's memory too (the loop
			// checks its memory at every iteration).
			return loop(ev)
		}
		c, ni := 0, 1
		if ilo != nil {
			d := 0
			if c, d, err = ints(ev, ilo, ihi); err != nil || c > d {
				return ctlNext, err // as the loop's first iteration
			}
			ni = d - c + 1
			if ni > maxLifted/(b-a+1) || !ev.liftFits((b-a+1)*ni, nArgs) {
				return loop(ev)
			}
		}
		t := ev.tape()
		mark := t.Mark()
		r.ev = ev
		r.env.lo, r.env.n, r.env.ilo, r.env.ni = a, (b-a+1)*ni, c, ni
		clear(r.env.assigned)
		clear(r.env.locals)
		r.terms, r.argBuf, r.writes, r.ranges = r.terms[:0], r.argBuf[:0], r.writes[:0], r.ranges[:0]
		if cap(r.intDims) < nArgs {
			r.intDims = make([]int, 0, nArgs) // never grown below: the Dims stay valid
		}
		r.intDims = r.intDims[:0]
		// Evaluate every statement first: any reason to fall back comes
		// before the containers or the target change.
		ok, err := r.run(stmts)
		if err != nil {
			return ctlNext, err
		}
		if !ok {
			t.Rewind(mark)
			return loop(ev)
		}
		for _, st := range r.ranges {
			ev.writeRange(st.write, a, r.env.assigned[st.write.Slot])
		}
		for _, w := range r.writes {
			ev.writeCells(w.v, w.pos, w.x)
		}
		ev.lifted++
		for _, tm := range r.terms {
			st := tm.st
			if st.impl == nil {
				st.impl = ev.impls[st.name]
			}
			lp, err := ev.callBound(st.pos, st.name, st.impl, r.argBuf[tm.start:tm.end:tm.end], nil, st.propto)
			if err != nil {
				return ctlNext, err
			}
			ev.addTarget(lp, st.pos)
		}
		return ctlNext, nil
	}
}

// maxLifted bounds the iterations of a collapsed nest: beyond it the nest
// runs as loops.
const maxLifted = 1 << 30

// collapsible returns the inner loop of a nest whose iterations can be
// lifted together, the pairs of the two variables in the loops' order: the
// body is that one loop, whose bounds do not vary with the outer variable.
func (lc *liftCompiler) collapsible(body ir.Stmt) *ir.For {
	if b, ok := body.(*ir.Block); ok && len(b.Stmts) == 1 {
		body = b.Stmts[0]
	}
	in, ok := body.(*ir.For)
	if !ok {
		return nil
	}
	for _, e := range []ir.Expr{in.Lo, in.Hi} {
		if v, ok := lc.varies(e); v || !ok || compileInt(e) == nil {
			return nil
		}
	}
	return in
}

// countArgs counts the density arguments of a lifted body.
func countArgs(list []*liftStmt) int {
	n := 0
	for _, st := range list {
		n += len(st.args) + countArgs(st.body)
	}
	return n
}

// markWritten records the variables the body assigns, at any depth, and
// counts the statements that assign each.
func (lc *liftCompiler) markWritten(s ir.Stmt, count map[*ir.Var]int) {
	ir.WalkWrites(s, func(v *ir.Var) {
		lc.written[v] = true
		count[v]++
	}, func(*ir.Var) {})
}

// stmts compiles a body (a block or one statement); inner is set inside
// an inner loop, whose body may only compute local scalars.
func (lc *liftCompiler) stmts(s ir.Stmt, inner bool) ([]*liftStmt, bool) {
	body := []ir.Stmt{s}
	if b, ok := s.(*ir.Block); ok {
		body = b.Stmts
	}
	var out []*liftStmt
	for _, st := range body {
		ls, ok := lc.stmt(st, inner)
		if !ok {
			return nil, false
		}
		out = append(out, ls)
	}
	return out, true
}

// stmt compiles one statement of a lifted body.
func (lc *liftCompiler) stmt(s ir.Stmt, inner bool) (*liftStmt, bool) {
	switch s := s.(type) {
	case *ir.DeclStmt:
		d := s.Decl
		if d.Constrained() || d.SizesFromValue || (d.Var.Type != lang.IntType && d.Var.Type != lang.RealType) {
			return nil, false
		}
		st := &liftStmt{local: d.Var, op: "="}
		if d.Init != nil {
			if st.rhs = lc.expr(d.Init); st.rhs == nil {
				return nil, false
			}
		}
		lc.locals[d.Var] = true
		return st, true
	case *ir.For:
		if v1, ok1 := lc.varies(s.Lo); v1 || !ok1 {
			return nil, false
		}
		if v2, ok2 := lc.varies(s.Hi); v2 || !ok2 {
			return nil, false
		}
		ilo, ihi := compileInt(s.Lo), compileInt(s.Hi)
		if ilo == nil || ihi == nil {
			return nil, false
		}
		body, ok := lc.stmts(s.Body, true)
		return &liftStmt{inner: s.Var, ilo: ilo, ihi: ihi, body: body}, ok
	case *ir.Assign:
		if lc.locals[s.Var] {
			if len(s.Indices) > 0 {
				return nil, false
			}
			switch {
			case s.Op == "=", s.Op == "+=", s.Op == "-=", s.Op == "*=":
			case s.Op == "/=" && s.Var.Type == lang.RealType:
			default:
				return nil, false
			}
			rhs := lc.expr(s.RHS)
			return &liftStmt{local: s.Var, rhs: rhs, op: s.Op}, rhs != nil
		}
		if inner || s.Op != "=" || len(s.Indices) == 0 {
			return nil, false
		}
		if len(s.Indices) > 1 || !lc.isLoopVar(s.Indices[0].Lo) {
			// Elements of a container the body does not read: written
			// at their positions, in the loop's order.
			idx, ok := lc.indices(s.Indices)
			if !ok || !flatStorage(s.Var.Type) || s.Var.Type.Base == lang.Int || !s.RHS.Type().IsScalar() || lc.assigned[s.Var] {
				return nil, false
			}
			rhs := lc.expr(s.RHS)
			return &liftStmt{write: s.Var, rhs: rhs, idx: idx}, rhs != nil
		}
		if s.Indices[0].Kind != ir.IndexSingle {
			return nil, false
		}
		if vt := s.Var.Type; !((vt.Dims == 1 && vt.Base == lang.Real) || (vt.Dims == 0 && (vt.Base == lang.Vector || vt.Base == lang.RowVector))) {
			return nil, false
		}
		if lc.assigned[s.Var] {
			return nil, false // assigned twice per iteration
		}
		rhs := lc.expr(s.RHS)
		if rhs == nil || !s.RHS.Type().IsScalar() {
			return nil, false
		}
		lc.assigned[s.Var] = true
		return &liftStmt{write: s.Var, rhs: rhs}, true
	case *ir.TargetAdd:
		call, ok := s.Expr.(*ir.Call)
		if inner || !ok || call.Func.Kind != stdlib.Density || len(call.Named) > 0 {
			return nil, false
		}
		switch call.Func.Suffix {
		case "_lpdf", "_lpmf", "_lupdf", "_lupmf":
		default:
			return nil, false
		}
		args, ok := lc.exprs(call.Args)
		return &liftStmt{pos: s.Pos, name: call.Func.Name, args: args, propto: call.Func.Suffix == "_lupdf" || call.Func.Suffix == "_lupmf"}, ok
	case *ir.Tilde:
		if inner || s.Trunc != nil {
			return nil, false
		}
		args, ok := lc.exprs(append([]ir.Expr{s.LHS}, s.Args...))
		return &liftStmt{pos: s.Pos, name: s.Func.Name, args: args, propto: true}, ok
	}
	return nil, false
}

func (lc *liftCompiler) exprs(es []ir.Expr) ([]liftPlan, bool) {
	out := make([]liftPlan, len(es))
	for i, e := range es {
		if !e.Type().IsScalar() {
			return nil, false
		}
		if out[i] = lc.expr(e); out[i] == nil {
			return nil, false
		}
	}
	return out, true
}

// isLoopVar reports whether e is the variable of a single loop, whose
// iterations write ranges of containers (a collapsed nest writes
// elements at their positions).
func (lc *liftCompiler) isLoopVar(e ir.Expr) bool {
	r, ok := e.(*ir.VarRef)
	return ok && r.Var == lc.loopVar && lc.inner == nil
}

// varies reports whether e depends on the iteration (reads the loop
// variable or a container the body assigns); ok is false for an
// expression the lifting does not know.
func (lc *liftCompiler) varies(e ir.Expr) (varies, ok bool) {
	ok = exprVars(e, liftableCall, func(v *ir.Var) {
		varies = varies || v == lc.loopVar || (lc.inner != nil && v == lc.inner) || lc.written[v] || lc.locals[v]
	})
	return varies && ok, ok
}

// liftableCall reports whether a call may appear in a lifted body: not
// target(), a draw or a call with named arguments.
func liftableCall(e *ir.Call) bool {
	return e.Func.Name != "target" && e.Func.Kind != stdlib.RNG && len(e.Named) == 0
}

// exprVars calls visit with every variable e reads. It returns false when
// e holds an expression other than literals, variables, indexing,
// operators and the calls that allowCall accepts.
func exprVars(e ir.Expr, allowCall func(*ir.Call) bool, visit func(*ir.Var)) bool {
	switch e := e.(type) {
	case nil, *ir.IntLit, *ir.RealLit:
		return true
	case *ir.VarRef:
		visit(e.Var)
		return true
	case *ir.Index:
		if !exprVars(e.X, allowCall, visit) {
			return false
		}
		for _, it := range e.Items {
			if !exprVars(it.Lo, allowCall, visit) || !exprVars(it.Hi, allowCall, visit) {
				return false
			}
		}
		return true
	case *ir.Binary:
		return exprVars(e.Left, allowCall, visit) && exprVars(e.Right, allowCall, visit)
	case *ir.Unary:
		return exprVars(e.X, allowCall, visit)
	case *ir.Call:
		if !allowCall(e) {
			return false
		}
		for _, a := range e.Args {
			if !exprVars(a, allowCall, visit) {
				return false
			}
		}
		return true
	}
	return false
}

// liftedMath are the elementwise functions of one real argument that a
// lifted expression may call on a vector.
var liftedMath = map[string]bool{
	"exp": true, "log": true, "inv_logit": true, "logit": true, "log1p": true, "expm1": true,
	"square": true, "sqrt": true, "log_inv_logit": true, "inv": true, "Phi": true,
}

// expr compiles a scalar expression of the body, or returns nil.
func (lc *liftCompiler) expr(e ir.Expr) liftPlan {
	varies, ok := lc.varies(e)
	if !ok {
		return nil
	}
	if !varies {
		if !e.Type().IsScalar() {
			return nil
		}
		f := compileValue(e)
		return func(ev *evaluator, _ *liftEnv) (liftedValue, bool, error) {
			v, err := f(ev)
			return liftedValue{inv: true, v: v}, true, err
		}
	}
	switch e := e.(type) {
	case *ir.VarRef:
		if lc.locals[e.Var] {
			slot := e.Var.Slot
			return func(_ *evaluator, env *liftEnv) (liftedValue, bool, error) {
				return env.locals[slot], true, nil
			}
		}
		var buf []int
		switch e.Var {
		case lc.loopVar, lc.inner:
			outer := e.Var == lc.loopVar
			var filled liftEnv // the iterations buf holds
			return func(_ *evaluator, env *liftEnv) (liftedValue, bool, error) {
				pat := patInner
				switch {
				case outer && env.ni == 1:
					pat = patUnit
				case outer:
					pat = patOuter
				}
				if len(buf) == env.n && filled.lo == env.lo && filled.ilo == env.ilo && filled.ni == env.ni {
					// The same iterations as the last execution (nobody
					// writes into buf).
					return liftedValue{ints: buf, isInt: true, pat: pat}, true, nil
				}
				buf = grow(buf, env.n)
				filled = liftEnv{lo: env.lo, ilo: env.ilo, ni: env.ni}
				if outer && env.ni == 1 { // a single loop, or a nest of one inner iteration
					for k := range buf {
						buf[k] = env.lo + k
					}
					return liftedValue{ints: buf, isInt: true, pat: pat}, true, nil
				}
				// Iteration k is (lo + k/ni, ilo + k%ni), row by row.
				for r, k := env.lo, 0; k < env.n; r, k = r+1, k+env.ni {
					row := buf[k : k+env.ni]
					for i := range row {
						if outer {
							row[i] = r
						} else {
							row[i] = env.ilo + i
						}
					}
				}
				return liftedValue{ints: buf, isInt: true, pat: pat}, true, nil
			}
		}
		return nil // a container the body assigns, read whole
	case *ir.Index:
		return lc.index(e)
	case *ir.Binary:
		return lc.binary(e)
	case *ir.Unary:
		if e.Op != "-" {
			return nil
		}
		x := lc.expr(e.X)
		if x == nil {
			return nil
		}
		var buf []int
		return func(ev *evaluator, env *liftEnv) (liftedValue, bool, error) {
			v, ok, err := x(ev, env)
			if !ok || err != nil {
				return v, ok, err
			}
			if v.isInt {
				buf = grow(buf, env.n)
				for k, n := range v.ints {
					if n == math.MinInt32 {
						return liftedValue{}, false, nil // overflows: the loop reports it
					}
					buf[k] = -n
				}
				return liftedValue{ints: buf, isInt: true}, true, nil
			}
			return liftedValue{ad: ev.tape().Neg(v.ad)}, true, nil
		}
	case *ir.Call:
		if !liftedMath[e.Func.Name] || len(e.Args) != 1 || e.Type() != lang.RealType {
			return nil
		}
		x := lc.expr(e.Args[0])
		if x == nil {
			return nil
		}
		p, name := e.Position(), e.Func.Name
		var impl stdlib.Impl
		return func(ev *evaluator, env *liftEnv) (liftedValue, bool, error) {
			v, ok, err := x(ev, env)
			if !ok || err != nil {
				return v, ok, err
			}
			if impl == nil {
				impl = ev.impls[name]
			}
			r, err := ev.callBound(p, name, impl, []stdlib.Value{stdlib.ADValue(asVector(ev.tape(), v, env.n))}, nil, false)
			if err != nil {
				return liftedValue{}, false, err
			}
			if r.AD.Len() != env.n {
				return liftedValue{}, false, nil
			}
			return liftedValue{ad: r.AD}, true, nil
		}
	}
	return nil
}

// index compiles x[i] for the loop's current element of a container the
// body assigned, or x[e] (e an int varying with the iteration) for a
// one-dimensional container the body does not assign: a gather.
func (lc *liftCompiler) index(e *ir.Index) liftPlan {
	ref, ok := e.X.(*ir.VarRef)
	if !ok {
		return nil
	}
	v := ref.Var
	if lc.assigned[v] {
		if len(e.Items) != 1 || e.Items[0].Kind != ir.IndexSingle || !lc.isLoopVar(e.Items[0].Lo) {
			return nil
		}
		return func(_ *evaluator, env *liftEnv) (liftedValue, bool, error) {
			return liftedValue{ad: env.assigned[v.Slot]}, true, nil
		}
	}
	if lc.written[v] || !flatStorage(v.Type) || len(e.Items) != v.Type.Dims+linalgRank(v.Type.Base) {
		return nil // read before its assignment, or not one element
	}
	idx, ok := lc.indices(e.Items)
	if !ok {
		return nil
	}
	pos, isInt := ref.Position(), v.Type.Base == lang.Int
	var ints, flat, dims []int
	var parts []autodiff.Value
	return func(ev *evaluator, env *liftEnv) (liftedValue, bool, error) {
		s := &ev.frame[v.Slot]
		if !s.set {
			return liftedValue{}, false, nil // the loop reports it
		}
		t := ev.tape()
		if s.dirty && !isInt {
			// Elements assigned one by one: gather the cells, without
			// packing the whole container first.
			at, contig, ok, err := liftPositions(ev, env, idx, s.dims, &flat)
			if !ok || err != nil || len(s.cells) != product(s.dims) {
				return liftedValue{}, ok && len(s.cells) == product(s.dims), err
			}
			var cells []autodiff.Value
			if contig || contiguous(at) {
				cells = s.cells[at[0] : at[0]+len(at)] // consecutive: no copy
			} else {
				parts = parts[:0]
				for _, j := range at {
					parts = append(parts, s.cells[j])
				}
				cells = parts
			}
			return liftedValue{ad: t.Concat(autodiff.VectorShape(len(cells)), cells...)}, true, nil
		}
		x, err := ev.read(v, pos)
		if err != nil {
			return liftedValue{}, false, err
		}
		dims = append(append(dims[:0], x.Dims...), linalgDims(x.AD, x.Type.Base)...)
		at, contig, ok, err := liftPositions(ev, env, idx, dims, &flat)
		if !ok || err != nil {
			return liftedValue{}, ok, err
		}
		if isInt {
			ints = grow(ints, env.n)
			for k, j := range at {
				ints[k] = x.Ints[j]
			}
			return liftedValue{ints: ints, isInt: true}, true, nil
		}
		if contig || contiguous(at) {
			// Consecutive elements (x[n], y[t - 1]): a view, no copy.
			whole := t.Reshape(x.AD, autodiff.VectorShape(x.AD.Len()))
			return liftedValue{ad: t.Slice(whole, at[0], len(at))}, true, nil
		}
		return liftedValue{ad: t.Gather(x.AD, at)}, true, nil
	}
}

// contiguous reports whether the positions are consecutive and ascending.
func contiguous(at []int) bool {
	for k := 1; k < len(at); k++ {
		if at[k] != at[0]+k {
			return false
		}
	}
	return len(at) > 0
}

// flatStorage reports whether values of type t keep their elements in
// one flat row-major store: int and real arrays, vectors and matrices
// (not arrays of vectors or matrices).
func flatStorage(t lang.Type) bool {
	return (t.Dims > 0 && (t.Base == lang.Int || t.Base == lang.Real)) || (t.Dims == 0 && t.Base.IsLinalg())
}

// indices compiles single int indices.
func (lc *liftCompiler) indices(items []*ir.IndexItem) ([]liftPlan, bool) {
	out := make([]liftPlan, len(items))
	for i, it := range items {
		if it.Kind != ir.IndexSingle || it.Lo.Type() != lang.IntType {
			return nil, false
		}
		if out[i] = lc.expr(it.Lo); out[i] == nil {
			return nil, false
		}
	}
	return out, true
}

// liftPositions computes each iteration's 0-based row-major position in
// a store of the given sizes from its 1-based indices, into *buf; ok is
// false when an index is out of range (the loop reports it). contig
// reports positions known to be consecutive and ascending (x[n],
// y[t - 1]: one varying index that ascends by one, in the last
// dimension).
func liftPositions(ev *evaluator, env *liftEnv, idx []liftPlan, dims []int, buf *[]int) (at []int, contig, ok bool, err error) {
	if len(dims) != len(idx) {
		return nil, false, false, nil
	}
	// Evaluate the indices first (an index may itself be a gather).
	var small [4]liftedValue
	vals := small[:0]
	for _, p := range idx {
		iv, ok, err := p(ev, env)
		if !ok || err != nil {
			return nil, false, ok, err
		}
		if !iv.inv && !iv.isInt {
			return nil, false, false, nil
		}
		vals = append(vals, iv)
	}
	// The invariant indices add one offset; each varying one its
	// iterations' multiples of its stride.
	at = grow(*buf, env.n)
	*buf = at
	base, stride, varying := 0, 1, 0
	contig = true
	for d := len(vals) - 1; d >= 0; d-- {
		iv := vals[d]
		switch {
		case iv.inv:
			j := iv.v.Int
			if j < 1 || j > dims[d] {
				return nil, false, false, nil
			}
			base += (j - 1) * stride
		case iv.pat != patNone && len(iv.ints) > 0:
			// A known pattern ascending by one from the first: all are
			// in range, computed without overflow, once the first and
			// the last distinct value are.
			if first := iv.ints[0]; first < 1 || first > dims[d]-(iv.pat.span(len(iv.ints), env.ni)-1) {
				return nil, false, false, nil
			}
			if varying == 0 {
				for k, j := range iv.ints {
					at[k] = (j - 1) * stride
				}
			} else {
				for k, j := range iv.ints {
					at[k] += (j - 1) * stride
				}
			}
			contig = contig && varying == 0 && stride == 1 && iv.pat == patUnit
			varying++
		default:
			for k, j := range iv.ints {
				if j < 1 || j > dims[d] {
					return nil, false, false, nil
				}
				if varying == 0 {
					at[k] = (j - 1) * stride
				} else {
					at[k] += (j - 1) * stride
				}
			}
			contig = false
			varying++
		}
		stride *= dims[d]
	}
	if varying == 0 {
		clear(at)
		contig = false
	}
	if base != 0 {
		for k := range at {
			at[k] += base
		}
	}
	return at, contig && len(at) > 0, true, nil
}

// liftTerm is a density of a lifted body, with its arguments'
// place in the argument buffer.
type liftTerm struct {
	st         *liftStmt
	start, end int
}

// pendingWrite is a write of elements of a container at flat positions.
type pendingWrite struct {
	v   *ir.Var
	pos []int
	x   autodiff.Value
}

// writeCells writes x's elements at the flat positions of v's store, in
// order (the last write of a position wins, as in the loop).
func (ev *evaluator) writeCells(v *ir.Var, pos []int, x autodiff.Value) {
	t := ev.tape()
	s := &ev.frame[v.Slot]
	ev.unpack(s, s.v.AD)
	for k, j := range pos {
		s.cells[j] = t.Index(x, k)
	}
	s.dirty = true
}

// binary compiles + - * / (and their elementwise spellings) of scalars.
func (lc *liftCompiler) binary(e *ir.Binary) liftPlan {
	l, r := lc.expr(e.Left), lc.expr(e.Right)
	if l == nil || r == nil {
		return nil
	}
	intResult := e.Type() == lang.IntType
	tapeOp := compoundOps[e.Op+"="] // the tape operation of op
	if tapeOp == nil || (intResult && (e.Op == "/" || e.Op == "./")) {
		return nil // not arithmetic, or int division (it stays in the loop)
	}
	if e.Type() != lang.IntType && e.Type() != lang.RealType {
		return nil
	}
	opc := e.Op
	var buf []int
	return func(ev *evaluator, env *liftEnv) (liftedValue, bool, error) {
		a, ok, err := l(ev, env)
		if !ok || err != nil {
			return a, ok, err
		}
		b, ok, err := r(ev, env)
		if !ok || err != nil {
			return b, ok, err
		}
		v, ok := applyBinary(ev.tape(), opc, tapeOp, intResult, a, b, &buf, env.n)
		return v, ok, nil
	}
}

// applyBinary computes a op b (op one of + - * / .* ./; no int division,
// tapeOp its tape operation) for lifted values, the per-iteration ints in
// *buf. It reports false when an iteration's int arithmetic overflows
// (the loop, run as a loop, reports it).
func applyBinary(t *autodiff.Tape, op string, tapeOp func(t *autodiff.Tape, a, b autodiff.Value) autodiff.Value, intResult bool, a, b liftedValue, buf *[]int, n int) (liftedValue, bool) {
	if intResult && a.inv && b.inv {
		r, err := lang.IntArith(op, a.v.Int, b.v.Int)
		return liftedValue{inv: true, v: stdlib.IntValue(r)}, err == nil
	}
	if intResult {
		out := grow(*buf, n)
		*buf = out
		pat, ok := liftInts(out, op, a, b)
		return liftedValue{ints: out, isInt: true, pat: pat}, ok
	}
	r := tapeOp(t, a.real(t), b.real(t))
	if r.Kind() == autodiff.Scalar {
		return liftedValue{inv: true, v: stdlib.RealValue(r)}, true
	}
	return liftedValue{ad: r}, true
}

// liftInts sets out to a op b, element by element, for int values of
// which at most one is invariant, and returns the result's pattern. An invariant added or subtracted (t - 1, the common case of
// lifted indices) takes one pass without per-element dispatch.
func liftInts(out []int, op string, a, b liftedValue) (intPattern, bool) {
	switch {
	case b.inv && (op == "+" || op == "-"):
		c := b.v.Int
		if op == "-" {
			c = -c
		}
		for k, x := range a.ints[:len(out)] {
			out[k] = x + c
			if !lang.IsInt32(out[k]) {
				return patNone, false
			}
		}
		return a.pat, true
	case a.inv && op == "+":
		c := a.v.Int
		for k, y := range b.ints[:len(out)] {
			out[k] = c + y
			if !lang.IsInt32(out[k]) {
				return patNone, false
			}
		}
		return b.pat, true
	}
	for k := range out {
		r, err := lang.IntArith(op, a.intAt(k), b.intAt(k))
		if err != nil {
			return patNone, false
		}
		out[k] = r
	}
	return patNone, true
}

// intAt returns the k-th iteration's int.
func (v liftedValue) intAt(k int) int {
	if v.inv {
		return v.v.Int
	}
	return v.ints[k]
}

// real returns the value as a tape value: a scalar for an invariant, a
// vector otherwise.
func (v liftedValue) real(t *autodiff.Tape) autodiff.Value {
	switch {
	case v.inv && v.v.Type == lang.IntType:
		return t.Const(float64(v.v.Int))
	case v.inv:
		return v.v.AD
	case v.isInt:
		xs := t.Scratch(len(v.ints))
		for k, n := range v.ints {
			xs[k] = float64(n)
		}
		return t.ConstVec(xs)
	}
	return v.ad
}

// value returns the value as a density's argument (an int array without
// its Dims, which the caller sets).
func (v liftedValue) value() stdlib.Value {
	switch {
	case v.inv:
		return v.v
	case v.isInt:
		// The buffer is the compiled expression's own, unchanged until
		// the density has run.
		return stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: v.ints}
	}
	return stdlib.ADValue(v.ad)
}

// asVector returns the value as a tape vector of n elements.
func asVector(t *autodiff.Tape, v liftedValue, n int) autodiff.Value {
	x := v.real(t)
	if x.Kind() == autodiff.Scalar {
		return t.Fill(x, autodiff.VectorShape(n))
	}
	return x
}

// rangeWritable reports whether elements lo..hi (1-based) of the
// container v can be assigned: it has a value, and the range is inside it.
func (ev *evaluator) rangeWritable(v *ir.Var, lo, hi int) bool {
	s := &ev.frame[v.Slot]
	return s.set && len(s.dims) == 1 && lo >= 1 && hi <= s.dims[0]
}

// writeRange assigns x to elements lo, lo+1, ... (1-based) of the
// container v: the whole value when x covers it, its cells otherwise.
func (ev *evaluator) writeRange(v *ir.Var, lo int, x autodiff.Value) {
	t := ev.tape()
	s := &ev.frame[v.Slot]
	if lo == 1 && x.Len() == s.dims[0] {
		shape := autodiff.VectorShape(x.Len())
		if s.v.Type == lang.RowVectorType {
			shape = autodiff.RowVectorShape(x.Len())
		}
		s.v.AD, s.cells, s.dirty = t.Reshape(x, shape), nil, false
		return
	}
	ev.unpack(s, s.v.AD)
	for k := 0; k < x.Len(); k++ {
		s.cells[lo-1+k] = t.Index(x, k)
	}
	s.dirty = true
}

// grow returns buf with length n, reusing its memory.
func grow(buf []int, n int) []int {
	if cap(buf) < n {
		return make([]int, n)
	}
	return buf[:n]
}
