package cuda

import (
	"fmt"
	"math"
	"slices"
)

// The multi-launch path launches about a thousand kernels per evaluation
// (three thousand with the unrolled gradient), and each launch costs the
// host several microseconds: at a few hundred points a side the launches,
// not the kernels, set the time. Its launches depend only on the layout
// of the workspace's allocation, the sizes and the options, so from one
// evaluation to the next they are usually the same. An evaluation
// therefore records its launches (recorder) and replays them: on a
// launcher that makes graphs (grapher: the GPU, a CUDA graph) as one graph
// launch, the graph built at the first evaluation and again whenever the
// sequence differs from the graph's; elsewhere launch by launch.

// launchRec is one recorded launch: its kernel, grid, block, dynamic
// shared memory and the number of its arguments, which follow those of
// the launches before it in launchSeq.args.
type launchRec struct {
	k                            kernel
	gridX, gridY, blockX, shared int
	nargs                        int
}

// launchSeq is a recorded sequence of launches.
type launchSeq struct {
	recs []launchRec
	args []uint64
}

func (s *launchSeq) reset() { s.recs, s.args = s.recs[:0], s.args[:0] }

// equal reports whether s and t are the same launches.
func (s *launchSeq) equal(t *launchSeq) bool {
	return slices.Equal(s.recs, t.recs) && slices.Equal(s.args, t.args)
}

// copyFrom makes s a copy of t, reusing its memory.
func (s *launchSeq) copyFrom(t *launchSeq) {
	s.recs = append(s.recs[:0], t.recs...)
	s.args = append(s.args[:0], t.args...)
}

// each calls f for every launch of s, in order, with its arguments; it
// stops at the first error, which it returns naming the kernel.
func (s *launchSeq) each(f func(k kernel, gridX, gridY, blockX, shared int, args []uint64) error) error {
	off := 0
	for _, r := range s.recs {
		args := s.args[off : off+r.nargs]
		off += r.nargs
		if err := f(r.k, r.gridX, r.gridY, r.blockX, r.shared, args); err != nil {
			return fmt.Errorf("cuda: launching %s: %w", r.k.name(), err)
		}
	}
	return nil
}

// recorder is a launcher that records launches into seq instead of
// launching them; its other operations are those of the launcher it
// wraps.
type recorder struct {
	launcher
	seq *launchSeq
}

func (r recorder) launch(k kernel, gridX, gridY, blockX, shared int, args []uint64) error {
	r.seq.recs = append(r.seq.recs, launchRec{k, gridX, gridY, blockX, shared, len(args)})
	r.seq.args = append(r.seq.args, args...)
	return nil
}

// A grapher is a launcher that can make a recorded sequence of launches
// into one graph.
type grapher interface {
	// makeGraph returns an executable graph of the launches of seq, each
	// after the one before; the graph keeps copies of their arguments.
	makeGraph(seq *launchSeq) (graph, error)
}

// A graph is an executable graph of launches; its methods run inside exec.
type graph interface {
	// launch queues the graph's launches, as the launcher queues one.
	launch() error
	// destroy releases the graph.
	destroy() error
}

// maxGraphs is the number of graphs an engine keeps: enough for the
// sequences a chain alternates between (a gradient and a value only, the
// y–y term, a second call site) without rebuilding one at each call.
const maxGraphs = 4

// engineGraph is a graph with the sequence it was made of.
type engineGraph struct {
	seq launchSeq
	g   graph
}

// replay launches the sequence e.seq recorded by an evaluation whose n
// outputs lie at out: as the engine's graph of that sequence when l makes
// graphs (made when it has none, and checked against the launches:
// checkGraph; replacing the least recently used beyond maxGraphs), launch
// by launch otherwise, or when the engine's graphs are off (noGraph) or a
// graph could not be made or failed its check (which turns them off and
// keeps the error in graphErr). It runs inside exec.
func (e *engine) replay(l launcher, out ptr, n int) error {
	gr, ok := l.(grapher)
	if !ok || e.noGraph {
		return e.seq.each(l.launch)
	}
	i := slices.IndexFunc(e.graphs, func(g engineGraph) bool { return g.seq.equal(&e.seq) })
	if i < 0 {
		if len(e.graphs) == maxGraphs {
			if err := e.graphs[0].g.destroy(); err != nil {
				return err
			}
			e.graphs = slices.Delete(e.graphs, 0, 1)
		}
		g, err := gr.makeGraph(&e.seq)
		if err == nil {
			if err = e.checkGraph(l, g, out, n); err != nil {
				if derr := g.destroy(); derr != nil {
					return derr
				}
			}
		}
		if err != nil {
			// The same launches, one by one: slower, not different.
			e.noGraph, e.graphErr = true, err
			return e.seq.each(l.launch)
		}
		var eg engineGraph
		eg.seq.copyFrom(&e.seq)
		eg.g = g
		e.graphs = append(e.graphs, eg)
		e.graphBuilds++
		return nil // the check's launch of the graph left the outputs
	}
	// The most recently used last.
	eg := e.graphs[i]
	e.graphs = append(slices.Delete(e.graphs, i, i+1), eg)
	if err := eg.g.launch(); err != nil {
		return fmt.Errorf("cuda: launching a graph of %d kernels: %w", len(e.seq.recs), err)
	}
	return nil
}

// checkGraph runs the recorded launches one by one, then the graph g made
// of them, and reports an error unless the n outputs at out agree bit for
// bit: an evaluation's launches compute its outputs from its uploaded
// inputs alone, with reductions in a fixed order, so a graph that does
// what they do gives the same bits, and one that does not is never used.
// It runs inside exec.
func (e *engine) checkGraph(l launcher, g graph, out ptr, n int) error {
	for k := range e.checked {
		e.checked[k] = grow(e.checked[k], n)
	}
	if err := e.seq.each(l.launch); err != nil {
		return err
	}
	if err := l.download(e.checked[0], out); err != nil {
		return err
	}
	if err := g.launch(); err != nil {
		return err
	}
	if err := l.download(e.checked[1], out); err != nil {
		return err
	}
	for i, v := range e.checked[0] {
		if w := e.checked[1][i]; math.Float64bits(v) != math.Float64bits(w) {
			return fmt.Errorf("cuda: a graph's output %d is %v where its launches give %v", i, w, v)
		}
	}
	return nil
}

// dropGraphs destroys the engine's graphs. It runs inside exec.
func (e *engine) dropGraphs() error {
	var err error
	for _, eg := range e.graphs {
		if derr := eg.g.destroy(); err == nil {
			err = derr
		}
	}
	e.graphs = e.graphs[:0]
	return err
}
