package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/shmlang/shm/runtime/nuts"
)

// chainProgress prints shm sample's progress on stderr: a line per chain
// every refresh iterations (and at the first and last); for a chain with
// no line for heartbeat, a line saying what its iteration is doing (how
// long it has run, its leapfrog steps, tree depth and step size), so that
// a slow chain is never silent; and, once per chain, a warning when
// warmup keeps hitting the maximum tree depth. A label (a calibration's
// run: "lambda 0.5, dataset 3") starts each line.
type chainProgress struct {
	w          io.Writer
	mu         *sync.Mutex // serializes lines on w (shared with other writers)
	label      string      // "" or the run's, followed by ": " on each line
	refresh    int
	maxDepth   int
	numSamples int // the chains' post-warmup iterations (a warm start's warmup is shorter)
	heartbeat  time.Duration
	ids        []int
	chains     map[int]*chainState // by chain id; fixed after newChainProgress
}

// chainState is one chain's progress, written by its goroutine and read by
// the heartbeat.
type chainState struct {
	mu        sync.Mutex
	started   bool
	done      bool
	activity  nuts.Activity
	iterStart time.Time // when the iteration in progress began
	lastLine  time.Time
	lastIter  int    // the iterations finished at lastLine
	finished  int    // the iterations finished
	hits      []bool // whether each recent warmup iteration hit the maximum depth
	warned    bool
}

// depthWindow and depthHits: warmup "keeps hitting" the maximum tree depth
// when depthHits of its last depthWindow iterations did.
const (
	depthWindow = 20
	depthHits   = 18
)

// heartbeat is how long a running chain may go without a progress line.
const heartbeat = 10 * time.Second

func newChainProgress(w io.Writer, mu *sync.Mutex, refresh, maxDepth, numSamples int, ids []int) *chainProgress {
	p := &chainProgress{w: w, mu: mu, refresh: refresh, maxDepth: maxDepth, numSamples: numSamples, heartbeat: heartbeat,
		ids: ids, chains: make(map[int]*chainState, len(ids))}
	for _, id := range ids {
		p.chains[id] = &chainState{}
	}
	return p
}

// configure sets cfg's Progress and Activity hooks.
func (p *chainProgress) configure(cfg *nuts.Config) {
	cfg.Progress = p.progress
	cfg.Activity = p.activity
}

// start runs the heartbeat until the returned function is called.
func (p *chainProgress) start() (stop func()) {
	if p.refresh <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(min(time.Second, p.heartbeat))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				p.beat(now)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

func (p *chainProgress) activity(a nuts.Activity) {
	s := p.chains[a.Chain]
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.started {
		s.started = true
		s.iterStart, s.lastLine = time.Now(), time.Now()
	}
	s.activity = a
	s.mu.Unlock()
}

func (p *chainProgress) progress(pr nuts.Progress) {
	s := p.chains[pr.Chain]
	if s == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	if !s.started {
		s.started, s.lastLine = true, now
	}
	s.iterStart = now
	s.finished = pr.Iteration
	s.done = pr.Iteration == pr.Total
	// The next iteration, until its first leapfrog step.
	s.activity = nuts.Activity{Chain: pr.Chain, Iteration: pr.Iteration + 1, Total: pr.Total, Warmup: pr.Iteration < pr.Total-p.numSamples,
		StepSize: pr.StepSize}
	line := p.refresh > 0 && (pr.Iteration%p.refresh == 0 || pr.Iteration == pr.Total || pr.Iteration == 1)
	if line {
		s.lastLine, s.lastIter = now, pr.Iteration
	}
	warn := ""
	if pr.Warmup && !s.warned && p.maxDepth > 0 {
		s.hits = append(s.hits, pr.TreeDepth >= p.maxDepth)
		if len(s.hits) > depthWindow {
			s.hits = s.hits[1:]
		}
		n := 0
		for _, h := range s.hits {
			if h {
				n++
			}
		}
		if len(s.hits) == depthWindow && n >= depthHits {
			s.warned = true
			warn = fmt.Sprintf("%sChain %d: %d of the last %d warmup iterations hit the maximum tree depth %d (%d leapfrog steps in the last; step size %.3g): each draw costs that many gradients. The posterior's scales differ widely or it is ill-conditioned: reparameterize (non-centered forms, standardized predictors), try --metric dense, or raise --max-depth\n",
				p.prefix(), pr.Chain, n, depthWindow, p.maxDepth, pr.NLeapfrog, pr.StepSize)
		}
	}
	s.mu.Unlock()
	if !line && warn == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if line {
		fmt.Fprintf(p.w, "%sChain %d Iteration: %*d / %d [%3d%%]  (%s)\n", p.prefix(), pr.Chain, len(fmt.Sprint(pr.Total)), pr.Iteration, pr.Total,
			100*pr.Iteration/max(pr.Total, 1), phaseName(pr.Warmup))
	}
	fmt.Fprint(p.w, warn)
}

// beat prints, for every running chain whose last line is at least a
// heartbeat old, what its current iteration is doing.
func (p *chainProgress) beat(now time.Time) {
	var lines []string
	for _, id := range p.ids {
		s := p.chains[id]
		s.mu.Lock()
		if s.started && !s.done && now.Sub(s.lastLine) >= p.heartbeat {
			lines = append(lines, p.prefix()+s.heartbeatLine(id, now))
			s.lastLine, s.lastIter = now, s.finished
		}
		s.mu.Unlock()
	}
	if len(lines) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range lines {
		fmt.Fprint(p.w, l)
	}
}

// heartbeatLine says what the chain is doing at now: its pace since its
// last line, and the state of the iteration in progress. The caller holds
// s.mu.
func (s *chainState) heartbeatLine(id int, now time.Time) string {
	a := s.activity
	if a.Iteration == 0 {
		return fmt.Sprintf("Chain %d initializing (initial point, step size) for %s\n", id, now.Sub(s.iterStart).Round(time.Second))
	}
	pace := ""
	if n := s.finished - s.lastIter; n > 0 {
		pace = fmt.Sprintf(" %.3g s per iteration over the last %s;", now.Sub(s.lastLine).Seconds()/float64(n), now.Sub(s.lastLine).Round(time.Second))
	}
	return fmt.Sprintf("Chain %d Iteration: %*d / %d [%3d%%]  (%s)%s this one running for %s: %d leapfrog step(s) so far, tree depth %d, step size %.3g\n",
		id, len(fmt.Sprint(a.Total)), a.Iteration, a.Total, 100*max(a.Iteration-1, 0)/max(a.Total, 1), phaseName(a.Warmup), pace,
		now.Sub(s.iterStart).Round(time.Second), a.NLeapfrog, a.TreeDepth, a.StepSize)
}

// prefix is what starts each line: the label and ": ", or nothing.
func (p *chainProgress) prefix() string {
	if p.label == "" {
		return ""
	}
	return p.label + ": "
}

func phaseName(warmup bool) string {
	if warmup {
		return "Warmup"
	}
	return "Sampling"
}
