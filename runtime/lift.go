package runtime

import (
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
}

// liftEnv is the state of one execution of a lifted loop.
type liftEnv struct {
	lo, n int
	// assigned holds the vector assigned to each container's range so
	// far in the body, by frame slot.
	assigned map[int]autodiff.Value
}

// liftPlan evaluates a lifted expression; ok is false when the loop must
// run as a loop (its iterations would report an error).
type liftPlan func(ev *evaluator, env *liftEnv) (v liftedValue, ok bool, err error)

// liftCompiler analyses one loop body.
type liftCompiler struct {
	loopVar  *ir.Var
	written  map[*ir.Var]bool // containers assigned anywhere in the body
	assigned map[*ir.Var]bool // those assigned by the statements so far
}

// liftStmt is one compiled statement of a lifted body: an assignment of a
// range (write set) or a term of the target.
type liftStmt struct {
	write *ir.Var
	rhs   liftPlan
	// A density: its implementation, arguments and whether it drops
	// constants.
	pos    lang.Pos
	name   string
	args   []liftPlan
	propto bool
}

// compileLiftedFor compiles a loop whose iterations are independent into
// whole-vector operations, falling back on loop (the loop's own plan) at
// run time; it returns nil when the loop does not have that form.
func compileLiftedFor(s *ir.For, loop stmtPlan) stmtPlan {
	lo, hi := compileInt(s.Lo), compileInt(s.Hi)
	if lo == nil || hi == nil {
		return nil
	}
	body := []ir.Stmt{s.Body}
	if b, ok := s.Body.(*ir.Block); ok {
		body = b.Stmts
	}
	lc := &liftCompiler{loopVar: s.Var, written: map[*ir.Var]bool{}, assigned: map[*ir.Var]bool{}}
	for _, st := range body {
		if a, ok := st.(*ir.Assign); ok {
			lc.written[a.Var] = true
		}
	}
	var stmts []liftStmt
	hasTerm := false
	for _, st := range body {
		ls, ok := lc.stmt(st)
		if !ok {
			return nil
		}
		hasTerm = hasTerm || ls.write == nil
		stmts = append(stmts, ls)
	}
	if len(stmts) == 0 {
		return nil
	}
	var impls []stdlib.Impl // bound at the first run (plans are per evaluator)
	env := &liftEnv{assigned: map[int]autodiff.Value{}}
	var argBuf []stdlib.Value
	return func(ev *evaluator) (control, error) {
		a, b, err := ints(ev, lo, hi)
		if err != nil || a > b {
			return ctlNext, err // as the loop: bounds first, then nothing to do
		}
		if impls == nil {
			impls = make([]stdlib.Impl, len(stmts))
			for i, st := range stmts {
				if st.write == nil {
					impls[i] = ev.impls[st.name]
				}
			}
		}
		t := ev.tape()
		mark := t.Mark()
		env.lo, env.n = a, b-a+1
		clear(env.assigned)
		fallback := func() (control, error) {
			t.Rewind(mark)
			return loop(ev)
		}
		// Evaluate every statement first: any reason to fall back comes
		// before the containers or the target change.
		type term struct {
			k    int
			args []stdlib.Value
		}
		var terms []term
		argBuf = argBuf[:0]
		for k, st := range stmts {
			if st.write != nil {
				v, ok, err := st.rhs(ev, env)
				if err != nil {
					return ctlNext, err
				}
				if !ok || !ev.rangeWritable(st.write, a, b) {
					return fallback()
				}
				env.assigned[st.write.Slot] = asVector(t, v, env.n)
				continue
			}
			start := len(argBuf)
			for _, p := range st.args {
				v, ok, err := p(ev, env)
				if err != nil {
					return ctlNext, err
				}
				if !ok {
					return fallback()
				}
				argBuf = append(argBuf, v.value(t))
			}
			terms = append(terms, term{k: k, args: argBuf[start:len(argBuf):len(argBuf)]})
		}
		for _, st := range stmts {
			if st.write != nil {
				ev.writeRange(st.write, a, env.assigned[st.write.Slot])
			}
		}
		ev.lifted++
		for _, tm := range terms {
			st := stmts[tm.k]
			lp, err := ev.callBound(st.pos, st.name, impls[tm.k], tm.args, nil, st.propto)
			if err != nil {
				return ctlNext, err
			}
			ev.addTarget(lp, st.pos)
		}
		return ctlNext, nil
	}
}

// stmt compiles one statement of a lifted body.
func (lc *liftCompiler) stmt(s ir.Stmt) (liftStmt, bool) {
	switch s := s.(type) {
	case *ir.Assign:
		if s.Op != "=" || len(s.Indices) != 1 || s.Indices[0].Kind != ir.IndexSingle || !lc.isLoopVar(s.Indices[0].Lo) {
			return liftStmt{}, false
		}
		if vt := s.Var.Type; !((vt.Dims == 1 && vt.Base == lang.Real) || (vt.Dims == 0 && (vt.Base == lang.Vector || vt.Base == lang.RowVector))) {
			return liftStmt{}, false
		}
		if lc.assigned[s.Var] {
			return liftStmt{}, false // assigned twice per iteration
		}
		rhs := lc.expr(s.RHS)
		if rhs == nil || !s.RHS.Type().IsScalar() {
			return liftStmt{}, false
		}
		lc.assigned[s.Var] = true
		return liftStmt{write: s.Var, rhs: rhs}, true
	case *ir.TargetAdd:
		call, ok := s.Expr.(*ir.Call)
		if !ok || call.Func.Kind != stdlib.Density || len(call.Named) > 0 {
			return liftStmt{}, false
		}
		switch call.Func.Suffix {
		case "_lpdf", "_lpmf", "_lupdf", "_lupmf":
		default:
			return liftStmt{}, false
		}
		args, ok := lc.exprs(call.Args)
		return liftStmt{pos: s.Pos, name: call.Func.Name, args: args, propto: call.Func.Suffix == "_lupdf" || call.Func.Suffix == "_lupmf"}, ok
	case *ir.Tilde:
		if s.Trunc != nil {
			return liftStmt{}, false
		}
		args, ok := lc.exprs(append([]ir.Expr{s.LHS}, s.Args...))
		return liftStmt{pos: s.Pos, name: s.Func.Name, args: args, propto: true}, ok
	}
	return liftStmt{}, false
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

func (lc *liftCompiler) isLoopVar(e ir.Expr) bool {
	r, ok := e.(*ir.VarRef)
	return ok && r.Var == lc.loopVar
}

// varies reports whether e depends on the iteration (reads the loop
// variable or a container the body assigns); ok is false for an
// expression the lifting does not know.
func (lc *liftCompiler) varies(e ir.Expr) (varies, ok bool) {
	switch e := e.(type) {
	case nil:
		return false, true
	case *ir.IntLit, *ir.RealLit:
		return false, true
	case *ir.VarRef:
		return e.Var == lc.loopVar || lc.written[e.Var], true
	case *ir.Index:
		es := []ir.Expr{e.X}
		for _, it := range e.Items {
			es = append(es, it.Lo, it.Hi)
		}
		return lc.variesAny(es...)
	case *ir.Binary:
		return lc.variesAny(e.Left, e.Right)
	case *ir.Unary:
		return lc.variesAny(e.X)
	case *ir.Call:
		if e.Func.Name == "target" || e.Func.Kind == stdlib.RNG || len(e.Named) > 0 {
			return false, false
		}
		return lc.variesAny(e.Args...)
	}
	return false, false
}

func (lc *liftCompiler) variesAny(es ...ir.Expr) (bool, bool) {
	any := false
	for _, e := range es {
		v, ok := lc.varies(e)
		if !ok {
			return false, false
		}
		any = any || v
	}
	return any, true
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
		if e.Var != lc.loopVar {
			return nil // a container the body assigns, read whole
		}
		var buf []int
		return func(_ *evaluator, env *liftEnv) (liftedValue, bool, error) {
			buf = grow(buf, env.n)
			for k := range buf {
				buf[k] = env.lo + k
			}
			return liftedValue{ints: buf, isInt: true}, true, nil
		}
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
	if !ok || len(e.Items) != 1 || e.Items[0].Kind != ir.IndexSingle {
		return nil
	}
	v, item := ref.Var, e.Items[0].Lo
	if lc.assigned[v] {
		if !lc.isLoopVar(item) {
			return nil
		}
		return func(_ *evaluator, env *liftEnv) (liftedValue, bool, error) {
			return liftedValue{ad: env.assigned[v.Slot]}, true, nil
		}
	}
	vt := v.Type
	if lc.written[v] || item.Type() != lang.IntType ||
		!((vt.Dims == 1 && (vt.Base == lang.Int || vt.Base == lang.Real)) || (vt.Dims == 0 && (vt.Base == lang.Vector || vt.Base == lang.RowVector))) {
		return nil // read before its assignment, or not a 1-D container
	}
	idx := lc.expr(item)
	if idx == nil {
		return nil
	}
	pos := ref.Position()
	var ints, zero []int
	return func(ev *evaluator, env *liftEnv) (liftedValue, bool, error) {
		iv, ok, err := idx(ev, env)
		if !ok || err != nil {
			return iv, ok, err
		}
		if !iv.isInt {
			return liftedValue{}, false, nil
		}
		if s := &ev.frame[v.Slot]; !s.set {
			return liftedValue{}, false, nil // the loop reports it
		}
		x, err := ev.read(v, pos)
		if err != nil {
			return liftedValue{}, false, err
		}
		length := len(x.Ints)
		if vt.Base != lang.Int {
			length = x.AD.Len()
		}
		for _, k := range iv.ints {
			if k < 1 || k > length {
				return liftedValue{}, false, nil // the loop reports it
			}
		}
		if vt.Base == lang.Int {
			ints = grow(ints, env.n)
			for k, j := range iv.ints {
				ints[k] = x.Ints[j-1]
			}
			return liftedValue{ints: ints, isInt: true}, true, nil
		}
		zero = grow(zero, env.n)
		for k, j := range iv.ints {
			zero[k] = j - 1
		}
		return liftedValue{ad: ev.tape().Gather(x.AD, zero)}, true, nil
	}
}

// binary compiles + - * / (and their elementwise spellings) of scalars.
func (lc *liftCompiler) binary(e *ir.Binary) liftPlan {
	l, r := lc.expr(e.Left), lc.expr(e.Right)
	if l == nil || r == nil {
		return nil
	}
	intResult := e.Type() == lang.IntType
	var op func(t *autodiff.Tape, a, b autodiff.Value) autodiff.Value
	switch e.Op {
	case "+":
		op = (*autodiff.Tape).Add
	case "-":
		op = (*autodiff.Tape).Sub
	case "*", ".*":
		op = (*autodiff.Tape).Mul
	case "/", "./":
		if intResult {
			return nil // int division stays in the loop
		}
		op = (*autodiff.Tape).Div
	default:
		return nil
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
		t := ev.tape()
		if intResult {
			buf = grow(buf, env.n)
			for k := range buf {
				x, y := a.intAt(k), b.intAt(k)
				switch opc {
				case "+":
					buf[k] = x + y
				case "-":
					buf[k] = x - y
				default:
					buf[k] = x * y
				}
			}
			return liftedValue{ints: buf, isInt: true}, true, nil
		}
		return liftedValue{ad: op(t, a.real(t), b.real(t))}, true, nil
	}
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
		xs := make([]float64, len(v.ints))
		for k, n := range v.ints {
			xs[k] = float64(n)
		}
		return t.ConstVec(xs)
	}
	return v.ad
}

// value returns the value as a density's argument.
func (v liftedValue) value(t *autodiff.Tape) stdlib.Value {
	switch {
	case v.inv:
		return v.v
	case v.isInt:
		return stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: append([]int(nil), v.ints...), Dims: []int{len(v.ints)}}
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
	if s.cells == nil {
		s.cells = make([]autodiff.Value, s.dims[0])
		for i := range s.cells {
			s.cells[i] = t.Index(s.v.AD, i)
		}
	}
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
