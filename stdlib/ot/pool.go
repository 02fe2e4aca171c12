package ot

import (
	"runtime"
	"sync"
)

// Work on large problems is split into blocks of rows. The partition depends
// only on the number of rows (never on the number of workers): each block is
// processed by exactly one goroutine, rows inside a block in order, and
// per-block column accumulators are reduced in block order. Results are
// therefore bitwise identical for any number of workers.
const (
	maxBlocks    = 16 // upper bound on the number of row blocks
	minBlockRows = 8  // lower bound on the rows per block
)

// numBlocks returns the number of row blocks for nr rows.
func numBlocks(nr int) int {
	nb := (nr + minBlockRows - 1) / minBlockRows
	return max(1, min(nb, maxBlocks))
}

// blockRange returns the rows [lo, hi) of block b among nb blocks of nr rows.
func blockRange(b, nb, nr int) (lo, hi int) {
	return b * nr / nb, (b + 1) * nr / nb
}

// pool runs the blocks of one sweep on a fixed set of goroutines. Workers
// are started on first use and stopped by close (or by the cleanup attached
// to the Workspace that owns the pool).
type pool struct {
	workers int // number of goroutines including the caller
	start   []chan int
	wg      sync.WaitGroup
	run     func(worker int) // set before each parallel sweep
	started bool
}

func newPool(workers int) *pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &pool{workers: workers}
}

func (p *pool) ensure() {
	if p.started || p.workers <= 1 {
		return
	}
	p.started = true
	p.start = make([]chan int, p.workers-1)
	for k := range p.start {
		ch := make(chan int)
		p.start[k] = ch
		go func() {
			for w := range ch {
				p.run(w)
				p.wg.Done()
			}
		}()
	}
}

// do calls p.run(w) for w = 0..workers-1 concurrently and waits.
func (p *pool) do() {
	p.ensure()
	p.wg.Add(len(p.start))
	for k, ch := range p.start {
		ch <- k + 1
	}
	p.run(0)
	p.wg.Wait()
}

func (p *pool) close() {
	if !p.started {
		return
	}
	for _, ch := range p.start {
		close(ch)
	}
	p.start = nil
	p.started = false
}
