package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shmlang/shm/stdlib/ot"
)

// TestGraphs checks the multi-launch path's graphs on the host kernels: an
// evaluation gives bit for bit the results of its launches made one by one
// (noGraph), an evaluation with other inputs of the same sizes and options
// replays its graph, other options, sizes or gradient requests make a new
// one, alternating sequences replay theirs, and releasing the engine
// destroys them.
func TestGraphs(t *testing.T) {
	h := startHostKernels(t, buildHostKernels(t))
	multi := func(graphs bool) *engine {
		e := newEngine(h, 1)
		e.fusedMax, e.guard, e.noGraph = 0, 3, !graphs
		return e
	}
	withGraphs, oneByOne := multi(true), multi(false)
	rng := rand.New(rand.NewPCG(2, 9))
	balanced := ot.Options{Eps: 0.05, Balanced: true, Iters: 6, Grad: ot.GradUnrolled}
	unbalanced := ot.Options{Eps: 0.08, Rho: 0.5, Iters: 5, Grad: ot.GradUnrolled}
	for _, step := range []struct {
		name   string
		n      int
		opt    ot.Options
		grad   bool
		builds int // graphs made so far
	}{
		{"first", 40, balanced, true, 1},
		{"other inputs", 40, balanced, true, 1},
		{"other inputs again", 40, balanced, true, 1},
		{"value only", 40, balanced, false, 2},
		{"other options", 40, unbalanced, true, 3},
		{"larger", 60, unbalanced, true, 4},
		{"smaller", 40, unbalanced, true, 5},
		{"smaller, other inputs", 40, unbalanced, true, 5},
		{"value only again", 40, unbalanced, false, 6},
		{"gradient again", 40, unbalanced, true, 6},
		{"value only, third time", 40, unbalanced, false, 6},
	} {
		x := normalPoints(rng, step.n, 0, 1)
		y := normalPoints(rng, step.n+3, 0.5, 1)
		la, lb := make([]float64, step.n), make([]float64, step.n+3)
		for i := range la {
			la[i] = -math.Log(float64(step.n))
		}
		for i := range lb {
			lb[i] = -math.Log(float64(step.n + 3))
		}
		var res [2]ot.Result
		var grads [2]*ot.Grad
		for k, e := range []*engine{withGraphs, oneByOne} {
			if step.grad {
				grads[k] = &ot.Grad{X: make([]float64, len(x)), LogB: make([]float64, len(lb))}
			}
			var err error
			if res[k], err = e.divergence(x, y, la, lb, step.opt, nil, grads[k]); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		if res[0] != res[1] {
			t.Errorf("%s: with graphs %+v, launch by launch %+v", step.name, res[0], res[1])
		}
		if step.grad && (!slices.Equal(grads[0].X, grads[1].X) || !slices.Equal(grads[0].LogB, grads[1].LogB)) {
			t.Errorf("%s: the gradients with graphs differ from those launch by launch", step.name)
		}
		if withGraphs.graphBuilds != step.builds || h.graphs != step.builds {
			t.Errorf("%s: %d graphs made (%d by the launcher), want %d", step.name, withGraphs.graphBuilds, h.graphs, step.builds)
		}
	}
	if oneByOne.graphBuilds != 0 {
		t.Errorf("noGraph made %d graphs", oneByOne.graphBuilds)
	}
	if err := h.exec(withGraphs.release); err != nil {
		t.Fatal(err)
	}
	if len(withGraphs.graphs) != 0 {
		t.Errorf("%d graphs survive release", len(withGraphs.graphs))
	}
}

// TestGraphCheck checks that a graph that does not do what its launches do
// (here, one that leaves out the last launch) is caught by the engine's
// check, destroyed, and never used: the evaluation gives the results of
// the launches one by one, and the engine's graphs are off.
func TestGraphCheck(t *testing.T) {
	h := startHostKernels(t, buildHostKernels(t))
	multi := func(graphs bool) *engine {
		e := newEngine(h, 2)
		e.fusedMax, e.noGraph = 0, !graphs
		return e
	}
	rng := rand.New(rand.NewPCG(6, 1))
	x, y := normalPoints(rng, 2*25, 0, 1), normalPoints(rng, 2*20, 0.3, 1)
	la, lb := make([]float64, 25), make([]float64, 20)
	for i := range la {
		la[i] = -math.Log(25)
	}
	for i := range lb {
		lb[i] = -math.Log(20)
	}
	opt := ot.Options{Eps: 0.1, Balanced: true, Iters: 5, Grad: ot.GradUnrolled}
	eval := func(e *engine) (ot.Result, []float64) {
		g := &ot.Grad{X: make([]float64, len(x))}
		res, err := e.divergence(x, y, la, lb, opt, nil, g)
		if err != nil {
			t.Fatal(err)
		}
		return res, g.X
	}
	want, wantX := eval(multi(false))
	h.faultyGraphs = true
	defer func() { h.faultyGraphs = false }()
	e := multi(true)
	for round := range 2 {
		got, gotX := eval(e)
		if got != want || !slices.Equal(gotX, wantX) {
			t.Errorf("round %d: with a faulty graph %+v, launch by launch %+v", round, got, want)
		}
	}
	if !e.noGraph || e.graphErr == nil || len(e.graphs) != 0 || h.graphs != 1 {
		t.Errorf("faulty graph: noGraph %v, error %v, %d kept, %d made", e.noGraph, e.graphErr, len(e.graphs), h.graphs)
	}
}
