package runtime

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
)

// Compacted loops. A loop of transformed data or generated quantities
// computes values no gradient will ever be taken of, yet every operation
// of every iteration leaves its result on the tape: a running sum of 10^8
// terms filled gigabytes (Stan's doubles use constant memory). In such an
// evaluation (evaluator.compactLoops) a loop whose body may be compacted
// rewinds the tape now and then to where the loop began, after copying
// out the values of the variables the body writes, and records them again
// as constants: the tape then holds what the loop's variables hold, not
// the history of every iteration.
//
// A body may be compacted when nothing but the frame's variables can hold
// a value it made once an iteration is over: no crn call (its sites keep
// values of the tape between calls) and no call of a user function (whose
// body may make one).

// compactMinValues is the growth of the tape, in values, from which a
// loop compacts it: 8 MB, and at least four times what the loop's
// variables hold, so that copying them costs a fraction of the work that
// made the garbage.
const compactMinValues = 1 << 20

// loopCompactor is what a loop needs to compact: the frame slots of the
// variables its body writes that live beyond an iteration.
type loopCompactor struct {
	slots []int
}

// newLoopCompactor returns the compactor of the loop s, or nil when its
// body may not be compacted.
func newLoopCompactor(s *ir.For) *loopCompactor {
	ok := true
	ir.Inspect(s.Body, func(st ir.Stmt) bool {
		for _, e := range ir.Parts(st).Exprs {
			ir.InspectExpr(e, func(e ir.Expr) bool {
				switch e.(type) {
				case *ir.CRN, *ir.UserCall, *hoistedRef:
					ok = false
				}
				return ok
			})
		}
		return ok
	})
	if !ok {
		return nil
	}
	declared := map[*ir.Var]bool{}
	var assigned []*ir.Var
	ir.WalkWrites(s.Body, func(v *ir.Var) { assigned = append(assigned, v) }, func(v *ir.Var) { declared[v] = true })
	c := &loopCompactor{}
	seen := map[int]bool{}
	for _, v := range assigned {
		if !declared[v] && !seen[v.Slot] {
			seen[v.Slot] = true
			c.slots = append(c.slots, v.Slot)
		}
	}
	return c
}

// compaction is the state of one execution of a compacted loop.
type compaction struct {
	lc       *loopCompactor
	base     autodiff.Mark
	baseSize int // the tape's size at base
	every    int // the least growth that compacts
	next     int // the tape's size at which to compact next

	vals  []float64
	moved []movedValue
}

// movedValue is a value copied out of the tape before a rewind: its place
// in the frame, its shape, and where its values are in compaction.vals.
type movedValue struct {
	at    *autodiff.Value
	shape autodiff.Shape
	off   int
}

// start begins an execution of the loop, from the tape's current end
// (nil: the loop does not compact).
func (lc *loopCompactor) start(ev *evaluator) *compaction {
	t := ev.tape()
	if ev.compactEvery < 0 {
		return nil // tests: never
	}
	c := &compaction{lc: lc, base: t.Mark(), baseSize: t.Size(), every: compactMinValues}
	if ev.compactEvery > 0 {
		c.every = ev.compactEvery // tests: compact at (nearly) every iteration
	}
	c.next = t.Size() + c.every
	return c
}

// after ends an iteration: once the tape has grown enough, it moves the
// values of the loop's variables to constants recorded again from the
// loop's start, dropping everything else the iterations recorded.
func (c *compaction) after(ev *evaluator) {
	t := ev.tape()
	if t.Size() < c.next || t.Err() != nil || !t.Rewindable(c.base) {
		return
	}
	c.vals, c.moved = c.vals[:0], c.moved[:0]
	move := func(v *autodiff.Value) bool {
		if v.Kind() == autodiff.Invalid {
			return true
		}
		if !v.IsConst() {
			return false // a value with a gradient: not this evaluation's kind
		}
		c.moved = append(c.moved, movedValue{at: v, shape: v.Shape(), off: len(c.vals)})
		c.vals = append(c.vals, t.Val(*v)...)
		return true
	}
	frame := ev.frame
	for _, k := range c.lc.slots {
		s := &frame[k]
		if !s.set || !isADBacked(s.v.Type) {
			continue
		}
		if !move(&s.v.AD) {
			return
		}
		for i := range s.v.Elems {
			if !move(&s.v.Elems[i].AD) {
				return
			}
		}
		if s.dirty {
			for i := range s.cells {
				if !move(&s.cells[i]) {
					return
				}
			}
		}
	}
	t.Rewind(c.base)
	ev.compacted++
	for _, m := range c.moved {
		*m.at = t.NewConst(m.shape, c.vals[m.off:m.off+m.shape.Len()])
	}
	// Cells that are views of the whole value view its new place.
	for _, k := range c.lc.slots {
		if s := &frame[k]; s.set && s.cells != nil && !s.dirty && isADBacked(s.v.Type) {
			t.Elements(s.v.AD, s.cells)
		}
	}
	c.next = t.Size() + max(c.every, 4*(t.Size()-c.baseSize))
}
