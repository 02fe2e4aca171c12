package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// evaluator interprets IR statements and expressions on one tape.
type evaluator struct {
	file  string
	impls stdlib.Impls
	ctx   stdlib.Context
	// constants keeps the constant terms that ~ statements and _lupdf
	// calls drop (Density.Constants).
	constants bool
	frame     []slot
	target    []autodiff.Value // terms of the log density
	targetPos []lang.Pos       // the statement (or declaration) of each term
	print     io.Writer
	// args is a stack of call arguments, reused across calls so that
	// evaluating a call allocates nothing; a call pushes its arguments and
	// pops them when it returns.
	args []stdlib.Value
	// plans are the compiled scalar expressions (plan.go), by expression;
	// noPlans turns them off (tests compare the two paths).
	// ctx0, when not nil, interrupts loops (checkInterrupt); done is
	// its Done channel, polled at every iteration.
	ctx0 context.Context
	done <-chan struct{}
	// maxValues bounds the tape's values, checked with ctx0 (Options);
	// memoryShare is the number of evaluations that share it
	// (Options.MemoryShare, 1 for none).
	maxValues   int64
	memoryShare int

	plans     map[ir.Expr]*scalarPlan
	stmtPlans map[ir.Stmt]stmtPlan
	noPlans   bool
	// lifted counts the executions of lifted loops (lift.go) that did
	// not fall back on the loop, for tests; noLift runs them as loops
	// (tests that compare plans with the interpreter bitwise, or one
	// strategy at a time).
	lifted int
	noLift bool
	// cellMem holds the memory of the cells of unpacked containers.
	cellMem cellPool
	// hoisted counts the executions of loops with hoisted subexpressions
	// (hoist.go), for tests; noHoist runs them as written.
	hoisted int
	noHoist bool
	// compactLoops is set while the evaluation takes no gradient
	// (transformed data, generated quantities): its loops compact the
	// tape (compact.go).
	compactLoops bool
	// compactEvery, when positive, replaces compactMinValues (tests);
	// compacted counts the compactions, for tests.
	compactEvery, compacted int
	// replays are the model's loops that may be replayed (replay.go),
	// replayed counts their replayed executions, for tests, and
	// evaluation counts the evaluations begun, which a replayed loop's
	// executions are counted in.
	replays    map[*ir.For]bool
	replayed   int
	evaluation uint64
	// frames are the frames of user-function calls by depth, reused
	// from call to call; depth is the number of calls running, and ret
	// the value of the return statement being executed.
	frames [][]slot
	depth  int
	ret    stdlib.Value
	// crn is the state of crn(...) (crn.go, crnpar.go).
	crn crnState
}

func newEvaluator(file string, m *ir.Model, impls stdlib.Impls, tape *autodiff.Tape, print io.Writer) *evaluator {
	ev := &evaluator{
		file:      file,
		impls:     impls,
		ctx:       stdlib.Context{Tape: tape, State: map[string]any{}},
		print:     print,
		maxValues: sysmem.MaxElements() / tapeCopies,
	}
	if m != nil {
		ev.frame = make([]slot, len(m.Vars))
	}
	ev.replays = replayedLoops(m)
	return ev
}

func (ev *evaluator) tape() *autodiff.Tape { return ev.ctx.Tape }

func (ev *evaluator) setContext(ctx context.Context) {
	ev.ctx0, ev.done = ctx, nil
	if ctx != nil {
		ev.done = ctx.Done()
	}
	if ev.ctx.Tape != nil {
		ev.ctx.Tape.SetInterrupt(ev.done)
	}
	ev.ctx.Run = ctx
}

// configure applies the run's options to an evaluator of the model.
func (ev *evaluator) configure(opts Options) {
	ev.setContext(opts.Context)
	switch {
	case opts.MaxValues > 0:
		ev.maxValues = opts.MaxValues
	case opts.MemoryShare > 1:
		ev.maxValues = sysmem.MaxElements() / tapeCopies / int64(opts.MemoryShare)
		ev.memoryShare = opts.MemoryShare
	}
	ev.ctx.Iters, ev.ctx.Refine, ev.crn.k = opts.SinkhornIters, opts.Refine, opts.CRNReplicates
	ev.compactEvery = opts.compactEvery
	ev.tape().SetLimit(ev.maxValues)
}

// checkInterrupt is called at every loop iteration: it returns an error
// wrapping the context's Err() once the context is done (Ctrl-C,
// SIGTERM), so that long loops stop within a fraction of a second
// however slow each iteration is (polling a channel costs a few
// nanoseconds), and it checks the memory the loop holds.
func (ev *evaluator) checkInterrupt(p lang.Pos) error {
	select {
	case <-ev.done: // never ready when nil
		return &Error{File: ev.file, Pos: p, Msg: "interrupted", cause: ev.ctx0.Err()}
	default:
	}
	// A loop whose intermediate values fill the memory stops here, with
	// its position, before the machine runs out.
	if n := int64(ev.tape().Size()); ev.maxValues > 0 && n > ev.maxValues {
		return ev.errorf(p, "this loop's values fill %s, more than the %s one evaluation may hold (%s)",
			sysmem.Bytes(8*float64(n)), sysmem.Bytes(8*float64(ev.maxValues)), ev.evaluationBound())
	}
	return nil
}

// evaluationBound says what bounds one evaluation's memory, for messages:
// "an eighth of this machine's memory (23.5 GiB)", shared by the
// evaluations that run at once.
func (ev *evaluator) evaluationBound() string {
	if ev.memoryShare > 1 {
		return fmt.Sprintf("an eighth of %s, shared by %d evaluations at once", sysmem.Source(), ev.memoryShare)
	}
	return "an eighth of " + sysmem.Source()
}

// liftFits reports whether the lifted or hoisted form of a loop of n
// iterations, with k vectors of them, fits in what is left of the
// evaluation's memory (ev.maxValues): each vector holds n values on the
// tape and an index buffer of n more; and whether its operations, which
// do not check the context, stop soon enough (maxLiftedIterations). A
// loop beyond runs as written, where every iteration checks the memory
// it holds and the context (checkInterrupt).
func (ev *evaluator) liftFits(n, k int) bool {
	if n > maxLiftedIterations {
		return false
	}
	if ev.maxValues <= 0 {
		return true
	}
	left := ev.maxValues - int64(ev.tape().Size())
	return float64(n)*float64(k+1) <= float64(left)
}

// maxLiftedIterations bounds the loops that are lifted or hoisted: an
// operation on vectors of 2^21 values takes a few tens of milliseconds,
// within the second in which Ctrl-C must stop an evaluation (a loop of
// 1.2e7 iterations took 1.8 s to stop while its vectors were computed).
const maxLiftedIterations = 1 << 21

// tapeCopies is how many times over an evaluation's tape holds its values
// at its peak: the values, their adjoints, and a growing arena's old and
// doubled new copies, with the operations' records. One evaluation's
// values are bounded by a 1/tapeCopies share of sysmem.MaxElements (half
// of the memory the process may use), so that the whole tape fits.
const tapeCopies = 4

// control is the outcome of executing a statement.
type control int

const (
	ctlNext control = iota
	ctlBreak
	ctlContinue
	ctlReturn // a return statement: leave the function
)

func (ev *evaluator) execAll(ss []ir.Stmt) (c control, err error) {
	var at lang.Pos
	defer ev.recoverArena(&at, &err)
	for _, s := range ss {
		at = s.Position()
		c, err := ev.exec(s)
		if err != nil || c != ctlNext {
			return c, err
		}
	}
	return ctlNext, nil
}

// recoverArena turns the tape's ArenaFull panic (a statement whose values
// would exceed the evaluation's memory, Options.MaxValues) into an error
// at the statement *at, and its ErrInterrupted panic (the run stopped
// while the tape's storage grew) into the interruption; other panics go
// on.
func (ev *evaluator) recoverArena(at *lang.Pos, err *error) {
	if r := recover(); r != nil {
		*err = ev.tapePanic(r, *at, "this statement's values")
	}
}

// recoverTape turns a panic of the tape met outside a statement (whose
// own recoverArena handles them): ArenaFull, or ErrInterrupted while its
// storage grows (copying the data, setting the parameters), into *err.
// The entry points of Model and Density defer it.
func (ev *evaluator) recoverTape(err *error) {
	if r := recover(); r != nil {
		*err = ev.tapePanic(r, lang.Pos{}, "the values")
	}
}

// tapePanic is the error at p of the tape's panic r, whose values are
// what: the interruption, or the values beyond the evaluation's memory;
// any other panic goes on.
func (ev *evaluator) tapePanic(r any, p lang.Pos, what string) error {
	if r == autodiff.ErrInterrupted {
		var cause error = autodiff.ErrInterrupted
		if ev.ctx0 != nil && ev.ctx0.Err() != nil {
			cause = ev.ctx0.Err()
		}
		return &Error{File: ev.file, Pos: p, Msg: "interrupted", cause: cause}
	}
	full, ok := r.(autodiff.ArenaFull)
	if !ok {
		panic(r)
	}
	return ev.errorf(p, "%s need %s, more than the %s one evaluation may hold (%s)",
		what, sysmem.Bytes(8*float64(full.Need)), sysmem.Bytes(8*float64(full.Limit)), ev.evaluationBound())
}

// exec executes a statement: its plan (plan_stmt.go), compiled at its
// first execution, or the interpreter when plans are off.
func (ev *evaluator) exec(s ir.Stmt) (control, error) {
	if p := ev.stmtPlanFor(s); p != nil {
		return p(ev)
	}
	return ev.execIR(s)
}

// execIR interprets a statement.
func (ev *evaluator) execIR(s ir.Stmt) (control, error) {
	switch s := s.(type) {
	case *ir.DeclStmt:
		return ctlNext, ev.declare(s.Decl)
	case *ir.Assign:
		return ctlNext, ev.assign(s)
	case *ir.TargetAdd:
		v, err := ev.expr(s.Expr)
		if err != nil {
			return ctlNext, err
		}
		ev.addTarget(v, s.Pos)
		return ctlNext, nil
	case *ir.Tilde:
		return ctlNext, ev.tilde(s)
	case *ir.For:
		lo, err := ev.intExpr(s.Lo)
		if err != nil {
			return ctlNext, err
		}
		hi, err := ev.intExpr(s.Hi)
		if err != nil {
			return ctlNext, err
		}
		body := func(ev *evaluator) (control, error) { return ev.exec(s.Body) }
		return forLoop(s, body)(ev, lo, hi)
	case *ir.ForEach:
		ctr, err := ev.expr(s.Container)
		if err != nil {
			return ctlNext, err
		}
		n := ev.outerLen(ctr)
		for i := 0; i < n; i++ {
			el, err := ev.outerElem(ctr, i)
			if err != nil {
				return ctlNext, ev.errorf(s.Pos, "%v", err)
			}
			if err := ev.checkInterrupt(s.Pos); err != nil {
				return ctlNext, err
			}
			ev.frame[s.Var.Slot] = slot{v: el, set: true}
			if done, c, err := iteration(ev.exec(s.Body)); done {
				return c, err
			}
		}
		return ctlNext, nil
	case *ir.While:
		for {
			if err := ev.checkInterrupt(s.Pos); err != nil {
				return ctlNext, err
			}
			ok, err := ev.truth(s.Cond)
			if err != nil || !ok {
				return ctlNext, err
			}
			if done, c, err := iteration(ev.exec(s.Body)); done {
				return c, err
			}
		}
	case *ir.If:
		ok, err := ev.truth(s.Cond)
		if err != nil {
			return ctlNext, err
		}
		if ok {
			return ev.exec(s.Then)
		}
		if s.Else != nil {
			return ev.exec(s.Else)
		}
		return ctlNext, nil
	case *ir.Block:
		return ev.execAll(s.Stmts)
	case *ir.Print:
		msg, err := ev.message(s.Args)
		if err != nil {
			return ctlNext, err
		}
		if ev.print != nil {
			fmt.Fprintln(ev.print, msg)
		}
		return ctlNext, nil
	case *ir.Reject:
		msg, err := ev.message(s.Args)
		if err != nil {
			return ctlNext, err
		}
		return ctlNext, &RejectError{File: ev.file, Pos: s.Pos, Msg: "reject: " + msg}
	case *ir.Break:
		return ctlBreak, nil
	case *ir.Continue:
		return ctlContinue, nil
	case *ir.Return:
		return ev.execReturn(s)
	case *ir.CallStmt:
		_, err := ev.userCall(s.Call)
		return ctlNext, err
	}
	return ctlNext, ev.errorf(s.Position(), "unsupported statement %T", s)
}

// message renders the arguments of print or reject.
func (ev *evaluator) message(args []ir.Expr) (string, error) {
	var b strings.Builder
	for _, a := range args {
		v, err := ev.expr(a)
		if err != nil {
			return "", err
		}
		b.WriteString(ev.format(v))
	}
	return b.String(), nil
}

// format renders a value as print does.
func (ev *evaluator) format(v stdlib.Value) string {
	t := ev.tape()
	switch {
	case v.Type.Base == lang.String:
		return v.Str
	case v.Type == lang.IntType:
		return fmt.Sprint(v.Int)
	case v.Type.Dims > 0 && v.Type.Base == lang.Int:
		return formatList(len(v.Ints), func(i int) string { return fmt.Sprint(v.Ints[i]) }, "[", "]")
	case v.Type.Dims > 0 && v.Type.Base.IsLinalg():
		return formatList(len(v.Elems), func(i int) string { return ev.format(v.Elems[i]) }, "[", "]")
	case v.Type == lang.RealType:
		return fmt.Sprint(t.Scalar(v.AD))
	case v.Type == lang.MatrixType:
		r, c := v.AD.Rows(), v.AD.Cols()
		vals := t.Val(v.AD)
		return formatList(r, func(i int) string {
			return formatList(c, func(j int) string { return fmt.Sprint(vals[i*c+j]) }, "[", "]")
		}, "[", "]")
	}
	vals := t.Val(v.AD)
	return formatList(len(vals), func(i int) string { return fmt.Sprint(vals[i]) }, "[", "]")
}

func formatList(n int, item func(int) string, open, close string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item(i)
	}
	return open + strings.Join(parts, ", ") + close
}

// truth evaluates a condition.
func (ev *evaluator) truth(e ir.Expr) (bool, error) {
	v, err := ev.expr(e)
	if err != nil {
		return false, err
	}
	if v.Type == lang.IntType {
		return v.Int != 0, nil
	}
	return ev.tape().Scalar(v.AD) != 0, nil
}

func (ev *evaluator) intExpr(e ir.Expr) (int, error) {
	if p := ev.plan(e); p != nil && p.i != nil {
		return p.i(ev)
	}
	v, err := ev.expr(e)
	if err != nil {
		return 0, err
	}
	if v.Type != lang.IntType {
		return 0, ev.errorf(e.Position(), "expected an int, found %s", v.Type)
	}
	return v.Int, nil
}

// addTarget adds a value (a scalar, or every element of a container) to
// the log density, as a term of the statement at p.
func (ev *evaluator) addTarget(v stdlib.Value, p lang.Pos) {
	t := ev.tape()
	switch {
	case v.Type == lang.IntType:
		ev.pushTarget(t.Const(float64(v.Int)), p)
	case v.Type.Base == lang.Int:
		s := 0
		for _, x := range v.Ints {
			s += x
		}
		ev.pushTarget(t.Const(float64(s)), p)
	case v.Type.Dims > 0 && v.Type.Base.IsLinalg():
		for _, el := range v.Elems {
			ev.addTarget(el, p)
		}
	case v.AD.Len() == 1 && v.Type == lang.RealType:
		ev.pushTarget(v.AD, p)
	default:
		ev.pushTarget(t.Sum(v.AD), p)
	}
}

// pushTarget appends one term of the log density, from the statement or
// declaration at p.
func (ev *evaluator) pushTarget(v autodiff.Value, p lang.Pos) {
	ev.target = append(ev.target, v)
	ev.targetPos = append(ev.targetPos, p)
}

// nonFiniteTerm returns an error naming the first term of the log density
// whose value is not finite, or nil.
func (ev *evaluator) nonFiniteTerm() error {
	t := ev.tape()
	for k, v := range ev.target {
		for _, x := range t.Val(v) {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return &Error{File: ev.file, Pos: ev.targetPos[k], Msg: fmt.Sprintf("this term of the log density is %g", x), Domain: true}
			}
		}
	}
	return nil
}

// targetSum returns the sum of the target terms so far.
func (ev *evaluator) targetSum() autodiff.Value {
	t := ev.tape()
	switch len(ev.target) {
	case 0:
		return t.Const(0)
	case 1:
		return ev.target[0]
	}
	return t.Sum(t.Concat(autodiff.VectorShape(len(ev.target)), ev.target...))
}

func (ev *evaluator) tilde(s *ir.Tilde) error {
	lhs, err := ev.expr(s.LHS)
	if err != nil {
		return err
	}
	base := len(ev.args)
	defer func() { ev.args = ev.args[:base] }()
	ev.args = append(ev.args, lhs)
	for _, a := range s.Args {
		v, err := ev.expr(a)
		if err != nil {
			return err
		}
		ev.args = append(ev.args, v)
	}
	args := ev.args[base:]
	lp, err := ev.callImpl(s.Pos, s.Func.Name, args, nil, true)
	if err != nil {
		return err
	}
	ev.addTarget(lp, s.Pos)
	if s.Trunc == nil {
		return nil
	}
	return ev.truncate(s, lhs, args[1:])
}

// truncate adds the normalizing terms of T[lo, hi] and rejects outcomes
// outside the bounds: log(F(hi) − F(lo)), or the lccdf/lcdf for one bound.
func (ev *evaluator) truncate(s *ir.Tilde, y stdlib.Value, params []stdlib.Value) error {
	t := ev.tape()
	yv := ev.scalar(y)
	var lo, hi stdlib.Value
	var err error
	if s.Trunc.Lo != nil {
		if lo, err = ev.expr(s.Trunc.Lo); err != nil {
			return err
		}
		if yv < ev.scalar(lo) {
			ev.pushTarget(t.Const(math.Inf(-1)), s.Pos)
			return nil
		}
	}
	if s.Trunc.Hi != nil {
		if hi, err = ev.expr(s.Trunc.Hi); err != nil {
			return err
		}
		if yv > ev.scalar(hi) {
			ev.pushTarget(t.Const(math.Inf(-1)), s.Pos)
			return nil
		}
	}
	withY := func(b stdlib.Value) []stdlib.Value { return append([]stdlib.Value{b}, params...) }
	switch {
	case s.Trunc.Lo != nil && s.Trunc.Hi != nil:
		// log(F(hi) − F(lo)) = lcdf(hi) + log1m_exp(lcdf(lo) − lcdf(hi)).
		lcHi, err := ev.callImpl(s.Pos, s.Trunc.LCDF.Name, withY(hi), nil, false)
		if err != nil {
			return err
		}
		lcLo, err := ev.callImpl(s.Pos, s.Trunc.LCDF.Name, withY(lo), nil, false)
		if err != nil {
			return err
		}
		norm := t.Add(lcHi.AD, t.Unary(autodiff.Log1mExp, t.Sub(lcLo.AD, lcHi.AD)))
		ev.pushTarget(t.Neg(norm), s.Pos)
	case s.Trunc.Lo != nil:
		lcc, err := ev.callImpl(s.Pos, s.Trunc.LCCDF.Name, withY(lo), nil, false)
		if err != nil {
			return err
		}
		ev.pushTarget(t.Neg(lcc.AD), s.Pos)
	default:
		lc, err := ev.callImpl(s.Pos, s.Trunc.LCDF.Name, withY(hi), nil, false)
		if err != nil {
			return err
		}
		ev.pushTarget(t.Neg(lc.AD), s.Pos)
	}
	return nil
}

// scalar returns the number held by an int or real value.
func (ev *evaluator) scalar(v stdlib.Value) float64 {
	if v.Type == lang.IntType {
		return float64(v.Int)
	}
	return ev.tape().Scalar(v.AD)
}

// callImpl calls a built-in through the implementation table.
func (ev *evaluator) callImpl(p lang.Pos, name string, args, named []stdlib.Value, propto bool) (stdlib.Value, error) {
	return ev.callBound(p, name, ev.impls[name], args, named, propto)
}

// callBound is callImpl with the implementation f looked up already (nil
// when there is none).
func (ev *evaluator) callBound(p lang.Pos, name string, f stdlib.Impl, args, named []stdlib.Value, propto bool) (stdlib.Value, error) {
	if f == nil {
		return stdlib.Value{}, ev.errorf(p, "%s is not implemented yet", name)
	}
	if ev.constants && propto {
		// The _lupdf/_lupmf built-ins drop constants whatever Propto
		// says: their _lpdf/_lpmf keep them.
		if base, ok := strings.CutSuffix(name, "_lupdf"); ok && ev.impls[base+"_lpdf"] != nil {
			f = ev.impls[base+"_lpdf"]
		} else if base, ok := strings.CutSuffix(name, "_lupmf"); ok && ev.impls[base+"_lpmf"] != nil {
			f = ev.impls[base+"_lpmf"]
		}
	}
	savedPropto, savedPos := ev.ctx.Propto, ev.ctx.Pos // a built-in may call back (an ODE's right-hand side)
	ev.ctx.Propto, ev.ctx.Pos = propto && !ev.constants, p
	v, err := f(&ev.ctx, args, named)
	ev.ctx.Propto, ev.ctx.Pos = savedPropto, savedPos
	if err != nil {
		if ev.ctx0 != nil && ev.ctx0.Err() != nil {
			// The built-in stopped for the run's interruption.
			return stdlib.Value{}, &Error{File: ev.file, Pos: p, Msg: "interrupted", cause: ev.ctx0.Err()}
		}
		if errors.Is(err, stdlib.ErrMemory) {
			// A size refused for want of memory stops the run.
			return stdlib.Value{}, ev.errorf(p, "%v", err)
		}
		// A built-in's failure depends on its arguments' values (Stan
		// reports these as std::domain_error): it rejects the proposal.
		return stdlib.Value{}, ev.domainf(p, "%v", err)
	}
	return v, nil
}
