package runtime

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Replayed loops. Models often compute tables from the data in
// transformed parameters or the model block, with loops that never touch
// a parameter: running counts over the observations (dogs' n_avoid and
// n_shock), cumulative sums, constant design entries. Such a loop does the
// same thing in every evaluation, yet an interpreter pays for its
// arithmetic every time (half of dogs' gradient).
//
// A loop is replayed when every variable it assigns is invariant: every
// assignment to it anywhere in those blocks computes, from data and other
// invariant variables only, under loop bounds and conditions of the same
// kind, in loops without break, continue or return (so that each
// assignment runs the same number of times in the same order in every
// evaluation). The k-th execution of such a loop in an evaluation then
// starts from the same values and leaves the same values. It runs once as
// written (the values it leaves are recorded; they are constants on the
// tape) and is then replayed: the elements it changed get their recorded
// values, without a node, a read or an operation. An execution that does
// not end normally (an error) is not recorded, and one that leaves a
// value that is not a constant turns replay off for the loop.

// replayedLoops returns the loops of the model's transformed parameters
// and model block that may be replayed.
func replayedLoops(m *ir.Model) map[*ir.For]bool {
	if m == nil {
		return nil
	}
	blocks := [][]ir.Stmt{m.TransformedParams, m.ModelBlock}
	inv := map[*ir.Var]bool{}
	for _, b := range blocks {
		for _, s := range b {
			ir.WalkWrites(s, func(v *ir.Var) { inv[v] = true }, func(v *ir.Var) { inv[v] = true })
		}
	}
	// Remove the variables some assignment or declaration makes vary,
	// until none changes.
	a := invariance{inv: inv}
	for a.changed = true; a.changed; {
		a.changed = false
		for _, b := range blocks {
			for _, s := range b {
				a.stmt(s, true)
			}
		}
	}
	units := map[*ir.For]bool{}
	for _, b := range blocks {
		for _, s := range b {
			a.units(s, units)
		}
	}
	return units
}

// invariance holds the variables believed invariant (inv) while the
// analysis removes the ones that are not.
type invariance struct {
	inv     map[*ir.Var]bool
	changed bool
}

func (a *invariance) vary(v *ir.Var) {
	if a.inv[v] {
		delete(a.inv, v)
		a.changed = true
	}
}

// expr reports whether e is computed from data and invariant variables
// only, with no draw, target() or other call a lifted body may not make.
func (a *invariance) expr(e ir.Expr) bool {
	ok := true
	pure := exprVars(e, liftableCall, func(v *ir.Var) {
		ok = ok && (v.Data || a.inv[v])
	})
	return ok && pure
}

// stmt removes the variables s makes vary; fixed says whether s runs the
// same way in every evaluation.
func (a *invariance) stmt(s ir.Stmt, fixed bool) {
	switch s := s.(type) {
	case *ir.Assign:
		if !fixed || !a.expr(s.RHS) || !a.indices(s.Indices) {
			a.vary(s.Var)
		}
	case *ir.DeclStmt:
		d := s.Decl
		if !fixed || !a.expr(d.Init) || !a.all(d.ArraySizes) || !a.all(d.Sizes) {
			a.vary(d.Var)
		}
	case *ir.Block:
		for _, x := range s.Stmts {
			a.stmt(x, fixed)
		}
	case *ir.For:
		fixed = fixed && a.expr(s.Lo) && a.expr(s.Hi) && !ir.Jumps(s.Body)
		if !fixed {
			a.vary(s.Var)
		}
		a.stmt(s.Body, fixed)
	case *ir.ForEach:
		a.vary(s.Var)
		a.stmt(s.Body, false)
	case *ir.While:
		a.stmt(s.Body, false)
	case *ir.If:
		fixed = fixed && a.expr(s.Cond)
		a.stmt(s.Then, fixed)
		if s.Else != nil {
			a.stmt(s.Else, fixed)
		}
	default:
		// The other kinds, as ir.Parts describes them (it panics on a
		// kind it does not know, so that a new kind that writes cannot
		// pass for one that does not): what they write varies, and so
		// does what their nested statements write.
		p := ir.Parts(s)
		for _, v := range []*ir.Var{p.Assigns, p.Declares} {
			if v != nil {
				a.vary(v)
			}
		}
		for _, b := range p.Body {
			a.stmt(b, false)
		}
	}
}

func (a *invariance) all(es []ir.Expr) bool {
	for _, e := range es {
		if !a.expr(e) {
			return false
		}
	}
	return true
}

func (a *invariance) indices(items []*ir.IndexItem) bool {
	for _, it := range items {
		if !a.expr(it.Lo) || !a.expr(it.Hi) {
			return false
		}
	}
	return true
}

// units adds to units the loops in s that may be replayed: loops over
// invariant bounds whose bodies only assign invariant real scalars and
// elements (in nested loops and conditionals of the same kind).
func (a *invariance) units(s ir.Stmt, units map[*ir.For]bool) {
	switch s := s.(type) {
	case *ir.Block:
		for _, x := range s.Stmts {
			a.units(x, units)
		}
	case *ir.For:
		if a.inv[s.Var] && a.replayable(s.Body) {
			units[s] = true
			return
		}
		a.units(s.Body, units)
	case *ir.If:
		a.units(s.Then, units)
		if s.Else != nil {
			a.units(s.Else, units)
		}
	}
}

// replayable reports whether the body of a replayed loop may be s.
func (a *invariance) replayable(s ir.Stmt) bool {
	switch s := s.(type) {
	case *ir.Assign:
		// A real scalar, or one element of a real container (the
		// assignments compileAssign compiles), of an invariant variable.
		return a.inv[s.Var] && compileAssign(s) != nil && (s.Var.Type == lang.RealType || len(s.Indices) > 0)
	case *ir.Block:
		for _, x := range s.Stmts {
			if !a.replayable(x) {
				return false
			}
		}
		return true
	case *ir.For:
		return a.inv[s.Var] && a.replayable(s.Body)
	case *ir.If:
		return a.expr(s.Cond) && a.replayable(s.Then) && (s.Else == nil || a.replayable(s.Else))
	}
	return false
}

// replayUnit is the state of one replayed loop in one evaluator: the
// recordings of its executions, by their order in an evaluation.
type replayUnit struct {
	targets    []int // the frame slots of the variables it assigns
	records    []*replayRecord
	evaluation uint64 // the evaluation that next counts executions in
	next       int    // the index of the next execution in it
	off        bool   // a recording failed: run as written
	scratch    []autodiff.Value
}

// replayRecord is what one execution left: the values of the elements
// (cell ≥ 0) or real scalars (cell < 0) it changed, in slot order.
type replayRecord struct {
	slots, cells []int
	values       []float64
}

// compileReplayedFor returns the plan of a replayed loop s, whose plan as
// written is loop.
func compileReplayedFor(s *ir.For, loop stmtPlan) stmtPlan {
	u := &replayUnit{}
	seen := map[int]bool{}
	ir.WalkWrites(s, func(v *ir.Var) {
		if !seen[v.Slot] {
			seen[v.Slot] = true
			u.targets = append(u.targets, v.Slot)
		}
	}, func(*ir.Var) {})
	return func(ev *evaluator) (control, error) {
		if u.evaluation != ev.evaluation {
			u.evaluation, u.next = ev.evaluation, 0
		}
		k := u.next
		u.next++
		switch {
		case u.off:
			return loop(ev)
		case k < len(u.records) && u.records[k] != nil:
			u.replay(ev, u.records[k])
			ev.replayed++
			return ctlNext, nil
		}
		before := u.snapshot(ev)
		c, err := loop(ev)
		if err != nil || c != ctlNext {
			return c, err
		}
		rec, ok := u.record(ev, before)
		if !ok {
			u.off = true
			return c, nil
		}
		for len(u.records) <= k {
			u.records = append(u.records, nil)
		}
		u.records[k] = rec
		return c, nil
	}
}

// slotState is what a target slot held before an execution.
type slotState struct {
	ad    autodiff.Value
	cells []autodiff.Value
}

func (u *replayUnit) snapshot(ev *evaluator) []slotState {
	out := make([]slotState, len(u.targets))
	for i, slot := range u.targets {
		s := &ev.frame[slot]
		out[i] = slotState{ad: s.v.AD, cells: append([]autodiff.Value(nil), s.cells...)}
	}
	return out
}

// record returns the values the execution changed, compared with before,
// or false when one of them is not a constant.
func (u *replayUnit) record(ev *evaluator, before []slotState) (*replayRecord, bool) {
	t := ev.tape()
	rec := &replayRecord{}
	add := func(slot, cell int, x autodiff.Value) bool {
		if !x.IsConst() {
			return false
		}
		rec.slots, rec.cells = append(rec.slots, slot), append(rec.cells, cell)
		rec.values = append(rec.values, t.Scalar(x))
		return true
	}
	for i, slot := range u.targets {
		s, b := &ev.frame[slot], before[i]
		if s.v.Type == lang.RealType && s.cells == nil {
			if s.v.AD != b.ad && !add(slot, -1, s.v.AD) {
				return nil, false
			}
			continue
		}
		for j, x := range s.cells {
			if (j >= len(b.cells) || x != b.cells[j]) && !add(slot, j, x) {
				return nil, false
			}
		}
	}
	return rec, true
}

// replay writes a recording's values into their slots, as the loop's
// assignments do (compileAssign).
func (u *replayUnit) replay(ev *evaluator, rec *replayRecord) {
	if len(rec.values) == 0 {
		return
	}
	t := ev.tape()
	if cap(u.scratch) < len(rec.values) {
		u.scratch = make([]autodiff.Value, len(rec.values))
	}
	vals := u.scratch[:len(rec.values)]
	t.Elements(t.ConstVec(rec.values), vals)
	for i, slot := range rec.slots {
		s := &ev.frame[slot]
		if cell := rec.cells[i]; cell >= 0 {
			ev.unpack(s, s.v.AD)
			s.cells[cell] = vals[i]
			s.dirty = true
		} else {
			s.v, s.cells, s.dirty = stdlib.RealValue(vals[i]), nil, false
		}
	}
}
