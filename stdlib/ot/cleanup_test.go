package ot

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestWorkspaceCleanupDuringCall evaluates on workspaces that the caller
// drops at once, with the collector running all the while: a workspace's
// cleanup (which stops its pool) must not run while one of its calls is
// still using the pool ("send on closed channel" before the calls kept
// their workspace alive).
func TestWorkspaceCleanupDuringCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 64
	x, y := gaussPts(rng, n, 2, 0, 1), gaussPts(rng, n, 2, 0.3, 1)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			runtime.GC()
		}
	}()
	defer func() { stop.Store(true); <-done }()
	opt := Options{Eps: 0.05, Balanced: true, Iters: 20}
	for range 200 {
		w := NewWorkspaceWorkers(n, n, 2, 2)
		w.SetParallelThreshold(1) // every sweep on the pool
		if _, err := w.Divergence(x, y, uniformLogW(n), uniformLogW(n), opt, nil, &Grad{X: make([]float64, 2*n)}); err != nil {
			t.Fatal(err)
		}
	}
}
