package runtime

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// The replicates of a crn call with a scalar body are evaluated on
// sub-evaluators, one per replicate index, each with its own tape, its own
// built-in state (a Sinkhorn workspace and cache) and its own random
// stream. The values the body reads from the chain's frame are copied into
// the sub-tape (constants as constants, values that depend on parameters
// as independent variables); after the body, a backward sweep of the
// sub-tape gives the partial derivatives of the replicate's value with
// respect to those inputs, and one node on the chain's tape carries them
// (Jacobian pre-accumulation). The K replicate values are then summed in
// replicate order on the chain's tape, as crnInline does.
//
// Every scalar crn call takes this path whatever the number of workers, and
// replicate r always runs on sub-evaluator r, so the value and the gradient
// are bitwise the same for any number of workers. Vector-valued bodies
// stay on crnInline (their Jacobian would have one row per element).

// crnSite is what the evaluator keeps about a crn call site.
type crnSite struct {
	call *ir.CRN
	// slots are the frame slots the body reads, ascending.
	slots []int
	// inline is set for bodies evaluated on the chain's tape: bodies that
	// are not real scalars, and bodies that read target(), which lives
	// on the chain's tape.
	inline bool
}

// crnSite returns the cached description of e's call site.
func (ev *evaluator) crnSite(e *ir.CRN) *crnSite {
	if e.ID < len(ev.crn.sites) && ev.crn.sites[e.ID] != nil && ev.crn.sites[e.ID].call == e {
		return ev.crn.sites[e.ID]
	}
	site := &crnSite{call: e, inline: e.Body.Type() != lang.RealType}
	if !bodyReads(e.Body, &site.slots) {
		site.inline = true
	}
	slices.Sort(site.slots)
	site.slots = slices.Compact(site.slots)
	if e.ID >= len(ev.crn.sites) {
		ev.crn.sites = append(ev.crn.sites, make([]*crnSite, e.ID+1-len(ev.crn.sites))...)
	}
	ev.crn.sites[e.ID] = site
	return site
}

// bodyReads appends to slots the frame slot of every variable e reads. It
// reports false when e reads evaluator state other than variables
// (target()) or contains an expression it does not know.
func bodyReads(e ir.Expr, slots *[]int) bool {
	all := func(es ...ir.Expr) bool {
		for _, x := range es {
			if x != nil && !bodyReads(x, slots) {
				return false
			}
		}
		return true
	}
	switch e := e.(type) {
	case *ir.IntLit, *ir.RealLit, *ir.StringLit:
		return true
	case *ir.VarRef:
		*slots = append(*slots, e.Var.Slot)
		return true
	case *ir.Call:
		if e.Func.Name == "target" {
			return false
		}
		return all(e.Args...) && all(e.Named...)
	case *ir.CRN:
		return all(e.K, e.Body, e.Seed)
	case *ir.UserCall:
		// A body reads its own frame; an _lp function reads target.
		return !e.Func.Void() && !strings.HasSuffix(e.Func.Name, "_lp") && all(e.Args...)
	case *ir.Index:
		if !all(e.X) {
			return false
		}
		for _, it := range e.Items {
			if !all(it.Lo, it.Hi) {
				return false
			}
		}
		return true
	case *ir.Binary:
		return all(e.Left, e.Right)
	case *ir.Unary:
		return all(e.X)
	case *ir.Ternary:
		return all(e.Cond, e.Then, e.Else)
	case *ir.Transpose:
		return all(e.X)
	case *ir.ArrayLit:
		return all(e.Elems...)
	case *ir.RowVectorLit:
		return all(e.Elems...)
	}
	return false
}

// visitAD calls f for every tape value of s that evaluating an expression
// may read, in a fixed order: the whole value, the elements of an array of
// vectors or matrices, and the unpacked cells of a container assigned
// element by element. For such a container (dirty), the whole value is
// stale and only its shape is used (shapeOnly).
func (s *slot) visitAD(f func(ad *autodiff.Value, shapeOnly bool)) {
	if !s.set {
		return
	}
	if isADBacked(s.v.Type) {
		f(&s.v.AD, s.dirty)
	}
	for i := range s.v.Elems {
		f(&s.v.Elems[i].AD, false)
	}
	if s.dirty {
		for i := range s.cells {
			f(&s.cells[i], false)
		}
	}
}

// crnInput is one tape value of the chain's frame that a crn body reads.
type crnInput struct {
	shape autodiff.Shape
	konst bool // copied as a constant
	valid bool // false for the zero Value
	off   int  // position of its values in crnInputs.vals
}

// crnInputs are the values a crn call's body reads, gathered from the
// chain's tape before the replicates run, so that the replicates never
// touch the chain's tape.
type crnInputs struct {
	leaves []crnInput
	vals   []float64
	// vars are the chain-tape values of the non-constant leaves, in
	// order: the inputs of each replicate's node.
	vars []autodiff.Value
	// nPartials is the total length of vars.
	nPartials int
}

// gather collects the inputs of a call site from the chain's frame.
func (ev *evaluator) gather(site *crnSite, in *crnInputs) {
	t := ev.tape()
	in.leaves, in.vals, in.vars, in.nPartials = in.leaves[:0], in.vals[:0], in.vars[:0], 0
	for _, i := range site.slots {
		ev.frame[i].visitAD(func(ad *autodiff.Value, shapeOnly bool) {
			if !ad.IsValid() {
				in.leaves = append(in.leaves, crnInput{})
				return
			}
			leaf := crnInput{shape: ad.Shape(), konst: shapeOnly || ad.IsConst(), valid: true, off: len(in.vals)}
			in.vals = append(in.vals, t.Val(*ad)...)
			in.leaves = append(in.leaves, leaf)
			if !leaf.konst {
				in.vars = append(in.vars, *ad)
				in.nPartials += ad.Len()
			}
		})
	}
}

// replicate is the sub-evaluator of one replicate index, reused across
// evaluations.
type replicate struct {
	ev  *evaluator
	pcg *rand.PCG
	// vars are the sub-tape variables of the non-constant inputs.
	vars []autodiff.Value
	// Buffers of the frame copy.
	elems []stdlib.Value
	cells []autodiff.Value
	// Outcome of the last run.
	value    float64
	konst    bool
	partials []float64
	err      error
}

// replicates returns the pool's first k sub-evaluators, creating missing
// ones, with the evaluator's context and file name of the moment (a REPL
// session's change from line to line).
func (ev *evaluator) replicates(k int) []*replicate {
	for _, r := range ev.crn.reps[:min(k, len(ev.crn.reps))] {
		r.ev.setContext(ev.ctx0)
		r.ev.file = ev.file
		r.ev.constants = ev.constants
	}
	for len(ev.crn.reps) < k {
		sub := newEvaluator(ev.file, nil, ev.impls, autodiff.NewTape(), ev.print)
		sub.setContext(ev.ctx0)
		sub.maxValues, sub.memoryShare = ev.maxValues, ev.memoryShare
		sub.ctx.Iters, sub.ctx.Refine, sub.crn.k = ev.ctx.Iters, ev.ctx.Refine, ev.crn.k
		sub.tape().SetLimit(ev.maxValues)
		sub.crn.replica = true
		sub.constants = ev.constants
		pcg := rand.NewPCG(0, 0)
		sub.ctx.RNG = rand.New(pcg)
		ev.crn.reps = append(ev.crn.reps, &replicate{ev: sub, pcg: pcg})
	}
	return ev.crn.reps[:k]
}

// crnReplicates evaluates a crn call with a scalar body on the replicate
// sub-evaluators, up to ev.crn.workers at a time.
func (ev *evaluator) crnReplicates(site *crnSite, k int, seed uint64) (stdlib.Value, error) {
	e := site.call
	in := &ev.crn.inputs
	ev.gather(site, in)
	workers := min(max(ev.crn.workers, 1), k)
	cohort := ev.ctx.Cohort // with one worker, the chain's
	if workers > 1 {
		cohort = stdlib.NewCohort(workers) // the calling goroutine is a member
	}
	first := 0
	if len(ev.crn.reps) < k {
		// Each replicate keeps its sub-evaluator (its tape, and the
		// built-ins' working memory) from evaluation to evaluation: the
		// first runs alone, and what it holds, times k, is checked
		// before the others are created.
		rep := ev.replicates(1)[0]
		rep.run(ev, site, in, 0, seed, cohort)
		err := rep.err
		if err == nil {
			err = ev.checkReplicates(e, k, rep.ev)
		}
		if err != nil {
			if workers > 1 { // no member runs on
				for range workers {
					cohort.Done()
				}
			}
			return stdlib.Value{}, err
		}
		first = 1
	}
	reps := ev.replicates(k)
	if workers == 1 {
		// The replicates run on this goroutine, a member of its cohort
		// if it has one.
		for r := first; r < len(reps); r++ {
			reps[r].run(ev, site, in, r, seed, cohort)
			if reps[r].err != nil {
				return stdlib.Value{}, reps[r].err
			}
		}
	} else {
		var next atomic.Int64
		next.Store(int64(first))
		var wg sync.WaitGroup
		// cohort, of workers members, was created above.
		work := func() {
			defer cohort.Done()
			for r := int(next.Add(1) - 1); r < k; r = int(next.Add(1) - 1) {
				reps[r].run(ev, site, in, r, seed, cohort)
			}
		}
		wg.Add(workers - 1)
		for range workers - 1 {
			go func() { defer wg.Done(); work() }()
		}
		work()
		wg.Wait()
		for _, rep := range reps {
			if rep.err != nil {
				return stdlib.Value{}, rep.err
			}
		}
	}
	t := ev.tape()
	var sum autodiff.Value
	for r, rep := range reps {
		ev.mergeRecords(rep.ev)
		if ev.crn.values != nil {
			ev.crn.values[e.ID] = append(ev.crn.values[e.ID], rep.value)
		}
		var v autodiff.Value
		if rep.konst {
			v = t.Const(rep.value)
		} else {
			p := t.ScalarPartials(in.vars...)
			p.Out()[0] = rep.value
			off := 0
			for j, x := range in.vars {
				if d := p.D(j); d != nil {
					copy(d, rep.partials[off:off+x.Len()])
				}
				off += x.Len()
			}
			v = p.Value()
		}
		if r == 0 {
			sum = v
			continue
		}
		sum = t.Add(sum, v)
	}
	return stdlib.RealValue(t.Div(sum, t.Const(float64(k)))), nil
}

// replicateOverheadWords is what a replicate's sub-evaluator holds beside
// its tape and its built-ins' states, in 8-byte words: its maps, frames
// and buffers (an estimate).
const replicateOverheadWords = 512

// checkReplicates refuses crn(k, ...) at its K when k replicates, each
// holding what sub (replicate 1, just evaluated) holds, need more than one
// evaluation may hold (ev.maxValues).
func (ev *evaluator) checkReplicates(e *ir.CRN, k int, sub *evaluator) error {
	if ev.maxValues <= 0 {
		return nil
	}
	per := sub.tape().MemoryWords() + replicateOverheadWords + int64(2*len(sub.frame))
	for _, s := range sub.ctx.State {
		if h, ok := s.(stdlib.MemoryHolder); ok {
			per += h.MemoryWords()
		}
	}
	if need := float64(k) * float64(per); need > float64(ev.maxValues) {
		return ev.errorf(e.K.Position(), "crn: %d replicates, each holding %s (its tape and its built-ins' working memory), need %s, more than the %s one evaluation may hold (%s); at most %d replicates fit",
			k, sysmem.Bytes(8*float64(per)), sysmem.Bytes(8*need), sysmem.Bytes(8*float64(ev.maxValues)), ev.evaluationBound(), ev.maxValues/per)
	}
	return nil
}

// run evaluates replicate r of the call at site on rep's sub-evaluator,
// with the chain evaluator ev's inputs in, on a goroutine that is a member
// of cohort (nil for none).
func (rep *replicate) run(ev *evaluator, site *crnSite, in *crnInputs, r int, seed uint64, cohort *stdlib.Cohort) {
	e := site.call
	sub := rep.ev
	t := sub.tape()
	t.Reset()
	sub.cellMem.reset()
	rep.err, rep.konst = nil, false
	sub.ctx.Cohort = cohort
	sub.crn.workers, sub.ctx.NoGrad, sub.crn.runSeed = 1, ev.ctx.NoGrad, ev.crn.runSeed
	sub.crn.depth = ev.crn.depth + 1
	sub.crn.call, sub.crn.rep = e.ID, r
	sub.crn.log = resetRecords(sub.crn.log, ev.crn.log)
	sub.crn.values = resetRecords(sub.crn.values, ev.crn.values)
	if sub.crn.log != nil {
		sub.crn.log[e.ID] = growReps(sub.crn.log[e.ID], r+1)
	}
	rep.pcg.Seed(seed, 0xc0ffee+uint64(r)) // the stream of crnStream(seed, r)
	rep.importFrame(ev, site, in)
	at := e.Position()
	defer sub.recoverArena(&at, &rep.err)
	v, err := sub.expr(e.Body)
	if err != nil {
		rep.err = err
		return
	}
	ad := sub.toAD(v)
	if err := t.Err(); err != nil {
		rep.err = err
		return
	}
	rep.value, rep.konst = t.Scalar(ad), ad.IsConst()
	rep.partials = slices.Grow(rep.partials[:0], in.nPartials)[:in.nPartials]
	if rep.konst || ev.ctx.NoGrad {
		clear(rep.partials)
		return
	}
	if err := t.Gradient(ad); err != nil {
		rep.err = err
		return
	}
	off := 0
	for _, x := range rep.vars {
		off += copy(rep.partials[off:], t.Adj(x))
	}
}

// importFrame copies into the sub-evaluator's frame the slots the body
// reads, with their tape values recreated on the sub-tape from in.
func (rep *replicate) importFrame(ev *evaluator, site *crnSite, in *crnInputs) {
	sub := rep.ev
	t := sub.tape()
	if len(sub.frame) < len(ev.frame) {
		sub.frame = append(sub.frame, make([]slot, len(ev.frame)-len(sub.frame))...)
	}
	rep.vars, rep.elems, rep.cells = rep.vars[:0], rep.elems[:0], rep.cells[:0]
	leaf := 0
	for _, i := range site.slots {
		sub.frame[i] = ev.frame[i]
		s := &sub.frame[i]
		if s.v.Elems != nil {
			n := len(rep.elems)
			rep.elems = append(rep.elems, s.v.Elems...)
			s.v.Elems = rep.elems[n:len(rep.elems):len(rep.elems)]
		}
		if s.dirty {
			n := len(rep.cells)
			rep.cells = append(rep.cells, s.cells...)
			s.cells = rep.cells[n:len(rep.cells):len(rep.cells)]
		} else {
			s.cells = nil
		}
		s.visitAD(func(ad *autodiff.Value, _ bool) {
			l := in.leaves[leaf]
			leaf++
			switch {
			case !l.valid:
				*ad = autodiff.Value{}
			case l.konst:
				*ad = t.NewConst(l.shape, in.vals[l.off:l.off+l.shape.Len()])
			default:
				*ad = t.NewVar(l.shape, in.vals[l.off:l.off+l.shape.Len()])
				rep.vars = append(rep.vars, *ad)
			}
		})
	}
}

// resetRecords returns an empty record table like outer (nil when outer is
// nil), reusing buf.
func resetRecords[T any](buf, outer []T) []T {
	if outer == nil {
		return nil
	}
	if cap(buf) < len(outer) {
		return make([]T, len(outer))
	}
	buf = buf[:len(outer)]
	clear(buf)
	return buf
}

// mergeRecords appends a replicate's crn noise and value records to ev's.
func (ev *evaluator) mergeRecords(sub *evaluator) {
	for id, reps := range sub.crn.log {
		if reps == nil {
			continue
		}
		ev.crn.log[id] = growReps(ev.crn.log[id], len(reps))
		for j, xs := range reps {
			ev.crn.log[id][j] = append(ev.crn.log[id][j], xs...)
		}
	}
	for id, vals := range sub.crn.values {
		ev.crn.values[id] = append(ev.crn.values[id], vals...)
	}
}
