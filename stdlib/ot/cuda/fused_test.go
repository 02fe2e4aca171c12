package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// batchCases are problems of different sizes, dimensions, options and
// gradient requests, for the batching tests.
func batchCases(t *testing.T) []*testCase {
	var cases []*testCase
	for _, c := range referenceCases(t) {
		if c.small && c.d <= fusedMaxDim && len(cases) < 6 {
			cases = append(cases, c)
		}
	}
	for _, c := range generatedCases() {
		if c.d <= fusedMaxDim {
			cases = append(cases, c)
		}
	}
	// A larger problem, so that a batch mixes thread counts (512 and 64):
	// the threads of a block beyond a problem's own count must leave it
	// alone.
	cases = append(cases, cullingCases()[1])
	if len(cases) < 4 {
		t.Fatalf("only %d problems for the batching tests", len(cases))
	}
	return cases
}

// batchOutcome is the result of one evaluation of a batch test.
type batchOutcome struct {
	res  ot.Result
	grad *ot.Grad
	err  error
}

// batchGrad asks case k for a mode and a subset of the gradients that
// depend on k, so that a batch mixes them.
func batchGrad(c *testCase, k int) (ot.Options, *ot.Grad) {
	opt := c.opt
	if k%2 == 1 {
		opt.Grad = ot.GradEnvelope
	}
	g := fullGrad(c.n(), c.m(), c.d)
	switch k % 3 {
	case 1:
		g.Y, g.LogB = nil, nil
	case 2:
		return opt, nil
	}
	return opt, g
}

func sameOutcome(t *testing.T, name string, got, want batchOutcome) {
	t.Helper()
	if got.err != nil || want.err != nil {
		t.Fatalf("%s: errors %v and %v", name, got.err, want.err)
	}
	if got.res != want.res {
		t.Errorf("%s: %+v, want %+v", name, got.res, want.res)
	}
	if (got.grad == nil) != (want.grad == nil) {
		t.Fatalf("%s: gradients requested differently", name)
	}
	if got.grad == nil {
		return
	}
	for _, p := range [][2][]float64{{got.grad.X, want.grad.X}, {got.grad.Y, want.grad.Y},
		{got.grad.LogA, want.grad.LogA}, {got.grad.LogB, want.grad.LogB}} {
		if !slices.EqualFunc(p[0], p[1], func(a, b float64) bool {
			return a == b || (math.IsNaN(a) && math.IsNaN(b))
		}) {
			t.Errorf("%s: gradient %v, want %v", name, p[0], p[1])
		}
	}
}

// TestFusedBatch checks that evaluations batched into one launch of the
// fused kernel, directly and through concurrent submissions to a
// combiner, give bitwise the results of the same evaluations run alone.
func TestFusedBatch(t *testing.T) {
	h := startHostKernels(t, buildHostKernels(t))
	testFusedBatch(t, h, func() int { return h.launches })
}

// testFusedBatch is TestFusedBatch on the executor h; launches, when not
// nil, counts the launches made so far.
func testFusedBatch(t *testing.T, h executor, launches func() int) {
	cases := batchCases(t)
	newFused := func(d int) *engine {
		e := newEngine(h, d)
		e.guard = 5
		return e
	}
	eval := func(e *engine, k int) batchOutcome {
		c := cases[k]
		opt, g := batchGrad(c, k)
		res, err := e.divergence(c.x, c.y, c.la, c.lb, opt, nil, g)
		return batchOutcome{res, g, err}
	}
	alone := make([]batchOutcome, len(cases))
	for k, c := range cases {
		alone[k] = eval(newFused(c.d), k)
	}

	t.Run("one launch", func(t *testing.T) {
		var cb combiner
		jobs := make([]*fusedJob, len(cases))
		type raw struct {
			vals [3]float64
			grad *ot.Grad
		}
		want := make([]raw, len(cases))
		for k, c := range cases {
			opt, g := batchGrad(c, k)
			ev := func(g *ot.Grad) *evaluation {
				return &evaluation{x: c.x, y: c.y, logA: c.la, logB: c.lb, opt: opt, grad: g, xy: true, xx: k%2 == 0, yy: true}
			}
			var g2 *ot.Grad // the same request, other slices
			if g != nil {
				g2 = &ot.Grad{X: slices.Clone(g.X), Y: slices.Clone(g.Y), LogA: slices.Clone(g.LogA), LogB: slices.Clone(g.LogB)}
			}
			vals, err := newFused(c.d).evaluateFused(*ev(g2))
			if err != nil {
				t.Fatal(err)
			}
			want[k] = raw{vals, g2}
			jobs[k] = &fusedJob{e: newFused(c.d), ev: ev(g)}
			jobs[k].e.fusedStage(jobs[k].ev)
		}
		before := 0
		if launches != nil {
			before = launches()
		}
		if err := h.exec(func(l launcher) error { return cb.run(l, jobs) }); err != nil {
			t.Fatal(err)
		}
		if launches != nil {
			if n := launches() - before; n != 1 {
				t.Errorf("%d evaluations took %d launches, want 1", len(cases), n)
			}
		}
		for k, j := range jobs {
			if j.err != nil {
				t.Fatal(j.err)
			}
			if vals := j.e.fusedScatter(j.ev, newConsts(j.ev.opt)); vals != want[k].vals {
				t.Errorf("%s: batched values %v, alone %v", cases[k].name, vals, want[k].vals)
			}
			if g := j.ev.grad; g != nil {
				sameOutcome(t, cases[k].name, batchOutcome{grad: g}, batchOutcome{grad: want[k].grad})
			}
		}
		if err := h.exec(cb.release); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		cb := &combiner{}
		got := make([]batchOutcome, len(cases))
		for round := range 3 {
			var wg sync.WaitGroup
			for k, c := range cases {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := newFused(c.d)
					e.comb = cb
					got[k] = eval(e, k)
				}()
			}
			wg.Wait()
			for k := range cases {
				sameOutcome(t, cases[k].name, got[k], alone[k])
			}
			if t.Failed() {
				t.Fatalf("round %d", round)
			}
		}
		if err := h.exec(cb.release); err != nil {
			t.Fatal(err)
		}
	})

	// With a cohort, a batch waits for every computing member, here one
	// that submits nothing and finishes late: one launch per round.
	t.Run("cohort", func(t *testing.T) {
		cb := &combiner{cohortMax: time.Minute}
		got := make([]batchOutcome, len(cases))
		for round := range 2 {
			before := 0
			if launches != nil {
				before = launches()
			}
			cohort := stdlib.NewCohort(len(cases) + 1)
			go func() { time.Sleep(20 * time.Millisecond); cohort.Done() }()
			concurrently(len(cases), cohort, func(k int) {
				e := newFused(cases[k].d)
				e.comb, e.cohort = cb, cohort
				got[k] = eval(e, k)
			})
			for k := range cases {
				sameOutcome(t, cases[k].name, got[k], alone[k])
			}
			if n := cohort.Computing(); n != 0 {
				t.Errorf("round %d: %d members computing at the end", round, n)
			}
			if launches != nil {
				if n := launches() - before; n != 1 {
					t.Errorf("round %d: a cohort's %d evaluations took %d launches, want 1", round, len(cases), n)
				}
			}
		}
		if err := h.exec(cb.release); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCombinerExpects checks that a batch waits for the workspaces of the
// last batch (the other chains): an evaluation of one that arrives 20 ms
// after another shares its launch.
func TestCombinerExpects(t *testing.T) {
	x, y, la, lb, eps := crossoverProblem(t, 40, 1)
	opt := ot.Options{Eps: eps, Balanced: true, Iters: 5}
	dev := &nullDevice{next: 1 << 30}
	cb := &combiner{}
	es := []*engine{newEngine(dev, 1), newEngine(dev, 1)}
	for _, e := range es {
		e.comb = cb
	}
	eval := func(e *engine) {
		if _, err := e.divergence(x, y, la, lb, opt, nil, nil); err != nil {
			t.Error(err)
		}
	}
	eval(es[0]) // allocations
	eval(es[1])
	cb.last = append(cb.last[:0], es...)
	cb.expectMax = time.Minute
	before := dev.launches
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); eval(es[0]) }()
	go func() { defer wg.Done(); time.Sleep(20 * time.Millisecond); eval(es[1]) }()
	wg.Wait()
	if n := dev.launches - before; n != 1 {
		t.Errorf("two expected evaluations took %d launches, want 1", n)
	}
}

// cullingCases are problems with the locality the fused kernel's culling
// exploits (eps about the squared spacing of the points), in 1, 2 and 3
// dimensions, balanced and unbalanced, one with zero weights.
func cullingCases() []*testCase {
	rng := rand.New(rand.NewPCG(3, 5))
	gen := func(name string, n, m, d int, opt ot.Options) *testCase {
		c := &testCase{name: name, d: d, opt: opt}
		c.x = normalPoints(rng, n*d, 0, 1)
		c.y = normalPoints(rng, m*d, 0.3, 1.2)
		c.la, c.lb = make([]float64, n), make([]float64, m)
		for i := range c.la {
			c.la[i] = -math.Log(float64(n))
		}
		for i := range c.lb {
			c.lb[i] = -math.Log(float64(m))
		}
		return c
	}
	zero := gen("d2_zero_weights_unbalanced", 90, 70, 2, ot.Options{Eps: 0.01, Rho: 0.5, Iters: 12})
	zero.la[5], zero.la[40], zero.lb[0] = math.Inf(-1), math.Inf(-1), math.Inf(-1)
	return []*testCase{
		gen("d1_balanced", 200, 170, 1, ot.Options{Eps: 1e-4, Balanced: true, Iters: 15}),
		gen("d1_unbalanced", 120, 130, 1, ot.Options{Eps: 2e-4, Rho: 0.1, Iters: 10}),
		gen("d2_balanced", 150, 140, 2, ot.Options{Eps: 0.005, Balanced: true, Iters: 10}),
		gen("d3_balanced", 100, 110, 3, ot.Options{Eps: 0.02, Balanced: true, Iters: 8}),
		zero,
	}
}

// TestFusedCulling checks that the fused kernel's culling of blocks
// changes no bit of any value or gradient (both modes), with the forward
// sweeps' pivot and without, and that it does skip blocks on problems with
// locality: most of them in 1-D.
func TestFusedCulling(t *testing.T) {
	bin := buildHostKernels(t)
	for _, c := range cullingCases() {
		for _, noPivot := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nopivot=%v", c.name, noPivot), func(t *testing.T) {
				t.Parallel()
				testFusedCulling(t, bin, c, noPivot)
			})
		}
	}
}

// testFusedCulling is one case of TestFusedCulling.
func testFusedCulling(t *testing.T, bin string, c *testCase, noPivot bool) {
	var out [2][2]batchOutcome
	var visited, skipped uint64
	for k, mode := range []cullMode{cullAlways, cullNever} {
		e, h := guardedEngine(t, bin, c.d, func(e *engine) { e.fusedCull, e.fusedNoPivot = mode, noPivot })
		out[k] = bothModes(e, c)
		cnt, err := h.counters()
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			visited, skipped = cnt.visited, cnt.skipped
		} else if cnt.skipped != 0 {
			t.Errorf("%d blocks skipped with culling off", cnt.skipped)
		}
		if n := h.byKernel[kFused]; n != 2 {
			t.Fatalf("%d fused launches, want 2", n)
		}
	}
	for mode := range out[0] {
		sameOutcome(t, c.name, out[0][mode], out[1][mode])
	}
	frac := float64(skipped) / float64(visited+skipped)
	t.Logf("%d of %d culling blocks skipped (%.0f%%)", skipped, visited+skipped, 100*frac)
	if want := map[int]float64{1: 0.5, 2: 0.2, 3: 0.05}[c.d]; frac < want {
		t.Errorf("%.2f of the blocks skipped, want at least %.2f", frac, want)
	}
}

// guardedEngine starts the host kernels bin and returns an engine of
// dimension d on them, with guard gaps, configured by set.
func guardedEngine(t *testing.T, bin string, d int, set func(e *engine)) (*engine, *hostKernels) {
	h := startHostKernels(t, bin)
	e := newEngine(h, d)
	e.guard = 3
	set(e)
	return e, h
}

// fusedCases are the culling cases, the reference vectors that take the
// fused path, and a problem of the fused path's largest size in 1-D, whose
// backward pass runs its fills beside its sweeps but cannot stage its
// history (too little shared memory for both).
func fusedCases(t *testing.T) []*testCase {
	x, y, la, lb, eps := crossoverProblem(t, fusedMaxPoints, 1)
	big := &testCase{name: "d1_largest", d: 1, x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: eps, Rho: 0.5, Iters: 6}}
	n, nt := fusedMaxPoints, fusedThreads(fusedMaxPoints)
	if fusedShared(n, n, 1, nt, false, false, true) > fusedMaxShared || fusedShared(n, n, 1, nt, false, true, true) <= fusedMaxShared {
		t.Fatalf("%s: no longer fits shared memory with a second set of sweep arrays but not with the history too", big.name)
	}
	cases := append(cullingCases(), big)
	for _, c := range referenceCases(t) {
		if c.d <= fusedMaxDim && max(c.n(), c.m()) <= fusedMaxPoints {
			cases = append(cases, c)
		}
	}
	return cases
}

// TestFusedPair checks that pairing the sweeps of the fused kernel's
// unrolled backward pass (FD_PAIR: one barrier for the sweeps of a fill,
// one pass for a symmetric problem's two), and running its fills beside
// the sweeps before them (FD_PREFILL, where the history is staged), change
// no bit of any value or gradient, for every subset of gradients, at the
// default thread count and at 32 and 64 threads (one thread per row,
// several passes per sweep), on points and on grids; that the sweeps visit
// and skip the same culling blocks; and that each saves barriers.
func TestFusedPair(t *testing.T) {
	bin := buildHostKernels(t)
	for _, c := range fusedCases(t) {
		for _, nt := range []int{0, 32, 64} {
			for _, v := range fusedBackwardVariants {
				t.Run(fmt.Sprintf("%s/nt=%d/%s", c.name, nt, v.name), func(t *testing.T) {
					t.Parallel()
					grads := append([]*ot.Grad{fullGrad(c.n(), c.m(), c.d)}, partialGrads(c.n(), c.m(), c.d)...)
					// Prefilling needs room in shared memory.
					e := &engine{d: c.d, fusedNT: nt}
					fewer := v.name == "pair" || e.prefills(c.n(), c.m(), e.threadsFor(max(c.n(), c.m())), fmUnrolled, false)
					compareVariant(t, bin, c.d, nt, v.off, fewer, len(grads), func(e *engine, i int) batchOutcome {
						g := grads[i]
						return unrolledOutcome(e, c, &ot.Grad{X: zerosLike(g.X), Y: zerosLike(g.Y), LogA: zerosLike(g.LogA),
							LogB: zerosLike(g.LogB)})
					})
				})
			}
		}
	}
	for _, c := range gridCases() {
		for _, v := range fusedBackwardVariants {
			t.Run("grid/"+c.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				n := c.g.N()
				grads := []*ot.Grad{{LogA: make([]float64, n), LogB: make([]float64, n)}, {LogA: make([]float64, n)}}
				// A grid problem's fills do not run beside sweeps.
				compareVariant(t, bin, 2, 0, v.off, v.name == "pair", len(grads), func(e *engine, i int) batchOutcome {
					return gridUnrolledOutcome(e, c, &ot.Grad{LogA: zerosLike(grads[i].LogA), LogB: zerosLike(grads[i].LogB)})
				})
			})
		}
	}
}

// unrolledOutcome evaluates the divergence of c on e with the unrolled
// gradient into g.
func unrolledOutcome(e *engine, c *testCase, g *ot.Grad) batchOutcome {
	opt := c.opt
	opt.Grad = ot.GradUnrolled
	res, err := e.divergence(c.x, c.y, c.la, c.lb, opt, nil, g)
	return batchOutcome{res, g, err}
}

// gridUnrolledOutcome evaluates the grid divergence of c on e with the
// unrolled gradient into g.
func gridUnrolledOutcome(e *engine, c gridCase, g *ot.Grad) batchOutcome {
	opt := c.opt
	opt.Grad = ot.GradUnrolled
	res, err := e.gridDivergence(c.g, c.la, c.lb, opt, g)
	return batchOutcome{res, g, err}
}

// fusedBackwardVariants are the options of the fused kernel's unrolled
// backward pass that change no result: off turns one off on an engine.
var fusedBackwardVariants = []struct {
	name string
	off  func(e *engine)
}{
	{"pair", func(e *engine) { e.fusedUnpaired = true }},
	{"prefill", func(e *engine) { e.fusedNoPrefill = true }},
}

// compareVariant runs eval(e, i) for i < runs, each one fused launch, on
// engines of dimension d and nt threads per problem (0: the default), as
// they are and with off applied, and checks that the outcomes are the same
// bit for bit, that the culling blocks visited and skipped are the same,
// and that the engine as it is passed fewer barriers (fewer) or as many.
func compareVariant(t *testing.T, bin string, d, nt int, off func(e *engine), fewer bool, runs int,
	eval func(e *engine, i int) batchOutcome) {
	t.Helper()
	var out [2][]batchOutcome
	var cnt [2][]shimCounters
	for k := range 2 {
		e, h := guardedEngine(t, bin, d, func(e *engine) {
			e.fusedNT = nt
			if k == 1 {
				off(e)
			}
		})
		prev := shimCounters{}
		for i := range runs {
			out[k] = append(out[k], eval(e, i))
			c, err := h.counters()
			if err != nil {
				t.Fatal(err)
			}
			cnt[k] = append(cnt[k], c.minus(prev))
			prev = c
		}
		if n := h.byKernel[kFused]; n != runs {
			t.Fatalf("%d fused launches, want %d", n, runs)
		}
	}
	for i := range runs {
		what := fmt.Sprintf("run %d", i)
		sameOutcome(t, what, out[0][i], out[1][i])
		on, u := cnt[0][i], cnt[1][i]
		if on.visited != u.visited || on.skipped != u.skipped {
			t.Errorf("%s: culling blocks visited, skipped: %d, %d; turned off %d, %d", what, on.visited,
				on.skipped, u.visited, u.skipped)
		}
		if fewer && on.barriers >= u.barriers || !fewer && on.barriers != u.barriers {
			t.Errorf("%s: %d barriers, %d turned off (fewer: %v)", what, on.barriers, u.barriers, fewer)
		}
	}
}

// TestFusedThreadOrders runs the fused kernel on the host with its
// threads resumed between barriers in reverse and in random orders, and
// with the asynchronous copies landing as late as they may, and checks
// that every value and gradient (both modes, points and grids) is the same
// bit for bit as in index order: a read that races with another thread's
// write on a GPU would differ in some order. The shim also checks that no
// block writes past its shared memory.
func TestFusedThreadOrders(t *testing.T) {
	bin := buildHostKernels(t)
	orders := []uint64{1, 2, 3}
	for _, c := range fusedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want := bothModes(newEngine(startHostKernels(t, bin), c.d), c)
			for _, order := range orders {
				got := bothModes(newEngine(startHostKernelsOrder(t, bin, order), c.d), c)
				for mode := range got {
					sameOutcome(t, fmt.Sprintf("order %d, mode %d", order, mode), got[mode], want[mode])
				}
			}
		})
	}
	for _, c := range gridCases() {
		t.Run("grid/"+c.name, func(t *testing.T) {
			t.Parallel()
			eval := func(h *hostKernels) batchOutcome {
				n := c.g.N()
				return gridUnrolledOutcome(newEngine(h, 2), c, &ot.Grad{LogA: make([]float64, n), LogB: make([]float64, n)})
			}
			want := eval(startHostKernels(t, bin))
			for _, order := range orders {
				sameOutcome(t, fmt.Sprintf("order %d", order), eval(startHostKernelsOrder(t, bin, order)), want)
			}
		})
	}
}

// TestFusedPivot checks that the fused kernel's forward sweeps summed in
// one pass from a pivot (FD_PIVOT, the default) agree with the two-pass
// sweeps (a reference at each row's maximum) to 1e-13 relative, values and
// gradients, that without the pivot no row takes one pass, and that with it
// nearly every row does on Experiment A's problem (the first sweeps, whose
// pivots are guesses, take two).
func TestFusedPivot(t *testing.T) {
	bin := buildHostKernels(t)
	x, y, la, lb, eps := crossoverProblem(t, 120, 1)
	expA := &testCase{name: "expA", d: 1, x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: eps, Balanced: true, Iters: 80}}
	for _, c := range append(fusedCases(t), expA) {
		for _, nt := range []int{0, 32, 64} {
			t.Run(fmt.Sprintf("%s/nt=%d", c.name, nt), func(t *testing.T) {
				t.Parallel()
				testFusedPivot(t, bin, c, nt, c == expA)
			})
		}
	}
}

// testFusedPivot is one case of TestFusedPivot, with nt threads per
// problem (0: the default); most says whether nearly every row must take
// one pass.
func testFusedPivot(t *testing.T, bin string, c *testCase, nt int, most bool) {
	var out [2][2]batchOutcome
	var cnt [2]shimCounters
	for k, noPivot := range []bool{false, true} {
		e, h := guardedEngine(t, bin, c.d, func(e *engine) { e.fusedNT, e.fusedNoPivot = nt, noPivot })
		out[k] = bothModes(e, c)
		var err error
		if cnt[k], err = h.counters(); err != nil {
			t.Fatal(err)
		}
	}
	for mode := range out[0] {
		p, q := out[0][mode], out[1][mode]
		if p.err != nil || q.err != nil {
			t.Fatalf("errors %v and %v", p.err, q.err)
		}
		scale := math.Max(math.Abs(q.res.OTxy), math.Max(math.Abs(q.res.OTxx), math.Abs(q.res.OTyy)))
		checkRel(t, fmt.Sprintf("mode %d: divergence", mode), p.res.Divergence, q.res.Divergence, scale, 1e-13)
		checkGradsRel(t, fmt.Sprintf("mode %d: gradient", mode), p.grad, q.grad, 1e-12)
	}
	if cnt[1].onePass != 0 || cnt[1].twoPass == 0 {
		t.Errorf("without the pivot: %d rows in one pass, %d in two", cnt[1].onePass, cnt[1].twoPass)
	}
	frac := float64(cnt[0].onePass) / float64(cnt[0].onePass+cnt[0].twoPass)
	t.Logf("%.3f of the rows in one pass", frac)
	if most && frac < 0.95 {
		t.Errorf("%.3f of the rows in one pass, want at least 0.95", frac)
	}
}

// bothModes evaluates the divergence of c on e with every gradient, in the
// unrolled and the envelope mode.
func bothModes(e *engine, c *testCase) (out [2]batchOutcome) {
	for mode, gm := range []ot.GradMode{ot.GradUnrolled, ot.GradEnvelope} {
		opt := c.opt
		opt.Grad = gm
		g := fullGrad(c.n(), c.m(), c.d)
		res, err := e.divergence(c.x, c.y, c.la, c.lb, opt, nil, g)
		out[mode] = batchOutcome{res, g, err}
	}
	return out
}

// crossoverProblem returns n points of dimension d for each measure
// (normal, the second shifted), uniform weights, and eps = resolution²
// (the paper's heuristic with alpha = 1).
func crossoverProblem(b testing.TB, n, d int) (x, y, la, lb []float64, eps float64) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	x = make([]float64, n*d)
	y = make([]float64, n*d)
	for i := range x {
		x[i] = rng.NormFloat64()
		y[i] = 0.5 + rng.NormFloat64()
	}
	la = make([]float64, n)
	for i := range la {
		la[i] = -math.Log(float64(n))
	}
	h, err := ot.Resolution(y, n, d)
	if err != nil {
		b.Fatal(err)
	}
	return x, y, la, slices.Clone(la), h * h
}

// nullDevice is an executor whose allocations are addresses only and whose
// transfers and launches do nothing: the host's part of the fused path,
// without a device (BenchmarkHostBatch).
type nullDevice struct {
	mu   sync.Mutex
	next ptr
	// kernel, when positive, is the time a launch takes (the executor is
	// held meanwhile, as the GPU's download waits for the kernel).
	kernel   time.Duration
	launches int
}

func (d *nullDevice) exec(f func(l launcher) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return f(d)
}

func (d *nullDevice) alloc(n int) (ptr, error) {
	d.next = d.next.at(n + 4096)
	return d.next, nil
}

func (*nullDevice) free(ptr) error                { return nil }
func (*nullDevice) upload(ptr, []float64) error   { return nil }
func (*nullDevice) download([]float64, ptr) error { return nil }
func (d *nullDevice) launch(kernel, int, int, int, int, []uint64) error {
	d.launches++
	if d.kernel > 0 {
		time.Sleep(d.kernel)
	}
	return nil
}

// BenchmarkHostBatch measures the host's part of a batch of K concurrent
// fused evaluations of Experiment A's size (n = m = 120, 1-D, T = 80,
// the unrolled gradient of x) on a device that takes no time: the spatial
// orders, layouts, descriptors, gathering and scatter that surround the
// GPU's kernel. The evaluations of a round form a cohort, as a crn call's
// replicates do, or (quiet) are gathered by the quiet window.
func BenchmarkHostBatch(b *testing.B) {
	x, y, la, lb, eps := crossoverProblem(b, 120, 1)
	opt := ot.Options{Eps: eps, Balanced: true, Iters: 80}
	for _, k := range []int{1, 6} {
		for _, cohort := range []bool{true, false} {
			name := fmt.Sprintf("K=%d", k)
			if !cohort {
				name += "/quiet"
			}
			b.Run(name, func(b *testing.B) {
				dev := &nullDevice{next: 1 << 30}
				cb := &combiner{}
				es := make([]*engine, k)
				gs := make([]*ot.Grad, k)
				for i := range es {
					es[i] = newEngine(dev, 1)
					es[i].comb = cb
					gs[i] = &ot.Grad{X: make([]float64, len(x))}
				}
				round := func() {
					var c *stdlib.Cohort
					if cohort {
						c = stdlib.NewCohort(k)
					}
					concurrently(k, c, func(i int) {
						es[i].cohort = c
						if _, err := es[i].divergence(x, y, la, lb, opt, nil, gs[i]); err != nil {
							b.Error(err)
						}
					})
				}
				round()
				for b.Loop() {
					round()
				}
			})
		}
	}
}

// BenchmarkHostChains simulates chains sharing a device whose fused launch
// takes 2.7 ms (one gradient of Experiment A on the H100): each chain
// evaluates rounds of a crn cohort of K = 6 evaluations of A's size, with
// a little CPU work between rounds, as a cohort or (quiet) gathered by
// the quiet window. It reports the launches per chain round: 1/chains when
// every round's batch holds all the chains, 1 when each chain's cohort has
// a launch of its own.
func BenchmarkHostChains(b *testing.B) {
	x, y, la, lb, eps := crossoverProblem(b, 120, 1)
	opt := ot.Options{Eps: eps, Balanced: true, Iters: 80}
	for _, tc := range []struct {
		chains int
		quiet  bool
	}{{1, false}, {4, false}, {1, true}, {4, true}} {
		chains := tc.chains
		name := fmt.Sprintf("cohort/chains=%d", chains)
		if tc.quiet {
			name = fmt.Sprintf("quiet/chains=%d", chains)
		}
		b.Run(name, func(b *testing.B) {
			dev := &nullDevice{next: 1 << 30, kernel: 2700 * time.Microsecond}
			cb := &combiner{}
			const k = 6
			engines := make([][]*engine, chains)
			for c := range engines {
				for range k {
					e := newEngine(dev, 1)
					e.comb = cb
					engines[c] = append(engines[c], e)
				}
			}
			rounds := 0
			var mu sync.Mutex
			chain := func(c, n int) {
				gs := make([]*ot.Grad, k)
				for i := range gs {
					gs[i] = &ot.Grad{X: make([]float64, len(x))}
				}
				for range n {
					var cohort *stdlib.Cohort
					if !tc.quiet {
						cohort = stdlib.NewCohort(k)
					}
					concurrently(k, cohort, func(i int) {
						e := engines[c][i]
						e.cohort = cohort
						if _, err := e.divergence(x, y, la, lb, opt, nil, gs[i]); err != nil {
							b.Error(err)
						}
					})
					mu.Lock()
					rounds++
					mu.Unlock()
				}
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := range chains {
				wg.Add(1)
				go func() { defer wg.Done(); chain(c, b.N) }()
			}
			wg.Wait()
			dev.mu.Lock()
			b.ReportMetric(float64(dev.launches)/float64(rounds), "launches/round")
			dev.mu.Unlock()
		})
	}
}

// concurrently calls f(i) for each i < n, each on its own goroutine, and
// waits for them; with a cohort c (nil for none) each goroutine is one of
// its members and leaves it when f returns.
func concurrently(n int, c *stdlib.Cohort, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c != nil {
				defer c.Done()
			}
			f(i)
		}()
	}
	wg.Wait()
}
