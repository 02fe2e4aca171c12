package sinkhorn

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// Register adds the Sinkhorn primitives to m.
func Register(m stdlib.Impls) {
	m.Add("sinkhorn", func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
		return call(c, "sinkhorn", args, named, divergence)
	})
	m.Add("sinkhorn_ot", func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
		return call(c, "sinkhorn_ot", args, named, rawOT)
	})
	m.Add("sinkhorn_plan", func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
		return call(c, "sinkhorn_plan", args, named, plan)
	})
	m.Add("resolution", resolution)
}

type kind int

const (
	divergence kind = iota
	rawOT
	plan
)

// The positions of the named arguments in the signature table (stdlib's
// addPrimitives): eps, iters, rho, log_a, log_b, grad, backend.
const (
	argEps = iota
	argIters
	argRho
	argLogA
	argLogB
	argGrad
	argBackend
)

// points returns the support points of a sinkhorn argument as one tape
// value holding an n×d row-major array: a vector is n points on the line,
// a matrix n points in R^d (one per row), an array of vectors n points.
func points(t *autodiff.Tape, v stdlib.Value) (pts autodiff.Value, n, d int, err error) {
	switch {
	case v.Type == lang.VectorType:
		return v.AD, v.AD.Len(), 1, nil
	case v.Type == lang.MatrixType:
		return v.AD, v.AD.Rows(), v.AD.Cols(), nil
	case v.Type.Dims == 1 && v.Type.Base == lang.Vector:
		if len(v.Elems) == 0 {
			return pts, 0, 0, errors.New("no points")
		}
		d = v.Elems[0].AD.Len()
		parts := make([]autodiff.Value, len(v.Elems))
		for i, el := range v.Elems {
			if el.AD.Len() != d {
				return pts, 0, 0, fmt.Errorf("point %d has dimension %d, point 1 has %d", i+1, el.AD.Len(), d)
			}
			parts[i] = el.AD
		}
		return t.Concat(autodiff.VectorShape(len(parts)*d), parts...), len(parts), d, nil
	}
	return pts, 0, 0, fmt.Errorf("points must be a vector, a matrix or an array of vectors, got %s", v.Type)
}

// logWeights returns the given log-weights (checking their length) or
// uniform ones, −log n each.
func logWeights(t *autodiff.Tape, v stdlib.Value, n int, name, fn string) (autodiff.Value, error) {
	if v.Type.IsBad() {
		w := make([]float64, n)
		for i := range w {
			w[i] = -math.Log(float64(n))
		}
		return t.ConstVec(w), nil
	}
	if v.AD.Len() != n {
		return autodiff.Value{}, fmt.Errorf("%s: %s has %d entries but there are %d points", fn, name, v.AD.Len(), n)
	}
	return v.AD, nil
}

// options reads the named settings, and the backend ("auto", "cpu" or
// "cuda").
func options(c *stdlib.Context, named []stdlib.Value, fn string) (ot.Options, string, error) {
	t := c.Tape
	opt := ot.Options{Iters: 100, Balanced: true}
	backend := "auto"
	scalar := func(v stdlib.Value) float64 {
		if v.Type == lang.IntType {
			return float64(v.Int)
		}
		return t.Scalar(v.AD)
	}
	if len(named) <= argBackend || named[argEps].Type.IsBad() {
		return opt, backend, fmt.Errorf("%s: eps = ... is required", fn)
	}
	opt.Eps = scalar(named[argEps])
	if !(opt.Eps > 0) || math.IsInf(opt.Eps, 1) {
		return opt, backend, fmt.Errorf("%s: eps must be positive and finite, got %g", fn, opt.Eps)
	}
	if v := named[argIters]; !v.Type.IsBad() {
		opt.Iters = v.Int
		if opt.Iters < 1 {
			return opt, backend, fmt.Errorf("%s: iters must be at least 1, got %d", fn, opt.Iters)
		}
	}
	if c.Iters > 0 {
		opt.Iters = c.Iters
	}
	if v := named[argRho]; !v.Type.IsBad() {
		opt.Rho = scalar(v)
		opt.Balanced = false
		if !(opt.Rho > 0) || math.IsInf(opt.Rho, 1) {
			return opt, backend, fmt.Errorf("%s: rho must be positive and finite, got %g (omit rho for the balanced divergence)", fn, opt.Rho)
		}
	}
	if v := named[argGrad]; !v.Type.IsBad() && v.Str == "envelope" {
		opt.Grad = ot.GradEnvelope
	}
	if v := named[argBackend]; !v.Type.IsBad() {
		backend = v.Str
	}
	if backend == "cuda" && !cudaAvailable() {
		return opt, backend, fmt.Errorf(`%s: backend = "cuda" needs shm built with the cuda tag and a GPU; use "auto" or "cpu"`, fn)
	}
	return opt, backend, nil
}

// chainState is a chain's Sinkhorn working memory.
type chainState struct {
	ws    *ot.Workspace
	cache selfCache[*ot.SelfTerm]
	plan  []float64
	elems []bool    // fixedCoords' flags per element
	fixed [2][]bool // fixedCoords' results for x and y
}

// fixedCoords returns, for the n points pts of dimension d (side 0: x,
// 1: y), the flags of ot.Grad.FixedX: the coordinates whose every entry
// has a zero derivative on the tape (the columns of data beside
// simulated ones that append_col puts together), or nil when there is
// none.
func (s *chainState) fixedCoords(t *autodiff.Tape, pts autodiff.Value, n, d, side int) []bool {
	if pts.IsConst() {
		return nil
	}
	s.elems = slices.Grow(s.elems[:0], n*d)[:n*d]
	clear(s.elems)
	if !t.FixedElements(pts, s.elems) {
		return nil
	}
	f := slices.Grow(s.fixed[side][:0], d)[:d]
	s.fixed[side] = f
	some := false
	for k := range f {
		f[k] = true
		for i := range n {
			if !s.elems[i*d+k] {
				f[k] = false
				break
			}
		}
		some = some || f[k]
	}
	if !some {
		return nil
	}
	return f
}

// selfCache keeps the last y–y terms a chain computed (of type T: the
// CPU's or the GPU's), with the inputs they were computed from.
type selfCache[T any] struct {
	entries []selfEntry[T]
}

// selfEntry is a cached y–y term with the inputs it was computed from.
type selfEntry[T any] struct {
	y, logB []float64
	opt     ot.Options
	grid    bool // computed by the separable grid path
	term    T
}

// get returns the cached term of y, log_b, the options and the path
// (grid), computing it with compute on first use; it keeps the last 8.
func (c *selfCache[T]) get(y, logB []float64, opt ot.Options, grid bool, compute func() (T, error)) (T, error) {
	for _, e := range c.entries {
		if e.opt == opt && e.grid == grid && slices.Equal(e.y, y) && slices.Equal(e.logB, logB) {
			return e.term, nil
		}
	}
	term, err := compute()
	if err != nil {
		return term, err
	}
	if len(c.entries) >= 8 {
		c.entries = c.entries[1:]
	}
	c.entries = append(c.entries, selfEntry[T]{y: slices.Clone(y), logB: slices.Clone(logB), opt: opt, grid: grid, term: term})
	return term, nil
}

const stateKey = "sinkhorn"

func state(c *stdlib.Context, n, m, d int) (*chainState, error) {
	s, _ := c.State[stateKey].(*chainState)
	if s == nil {
		s = &chainState{}
		c.State[stateKey] = s
	}
	if s.ws == nil || s.ws.Dim() != d {
		path, err := envPath()
		if err != nil {
			return nil, err
		}
		s.ws = ot.NewWorkspace(n, m, d)
		s.ws.SetPath(path)
		s.cache = selfCache[*ot.SelfTerm]{}
	}
	return s, nil
}

// gpuReplicates is the number of crn replicates a process with a GPU
// evaluates at once per chain at least: their Sinkhorn problems wait for
// the GPU, not for a core, and the device batches the concurrent ones into
// one launch, so a replicate left waiting for a worker costs a launch.
const gpuReplicates = 16

// ReplicateWorkers returns the number of crn replicates to evaluate at once
// in a chain given cores, the cores the chain may use: cores itself, or at
// least gpuReplicates when a GPU is usable (the values do not depend on it).
func ReplicateWorkers(cores int) int {
	if cudaAvailable() {
		return max(cores, gpuReplicates)
	}
	return max(cores, 1)
}

// PathEnv is the environment variable that selects the CPU kernels of the
// Sinkhorn problems on scattered points: "auto" (the default: the scaling
// path up to 2^23 point pairs, 2^19 in 1-D, the sparse sweeps beyond,
// dense sweeps where too few terms can be dropped), "dense" (every term:
// the reference), "sparse" or "scaling". The paths agree to rounding; the
// variable is for benchmarks and tests.
const PathEnv = "SHM_SINKHORN_PATH"

func envPath() (ot.Path, error) {
	v := os.Getenv(PathEnv)
	if v == "" {
		return ot.PathAuto, nil
	}
	p, err := ot.ParsePath(v)
	if err != nil {
		return p, fmt.Errorf("%s=%s: want auto, dense, sparse or scaling", PathEnv, v)
	}
	return p, nil
}

// selfTerm returns the cached y–y term for constant y and log_b, computing
// it on first use (with the separable path when g is a grid).
func (s *chainState) selfTerm(y, logB []float64, opt ot.Options, g ot.Grid) (*ot.SelfTerm, error) {
	onGrid := g.N() > 0
	return s.cache.get(y, logB, opt, onGrid, func() (*ot.SelfTerm, error) {
		if onGrid {
			return s.ws.GridSelfTerm(g, logB, opt)
		}
		return s.ws.SelfTerm(y, logB, opt)
	})
}

func call(c *stdlib.Context, fn string, args, named []stdlib.Value, k kind) (stdlib.Value, error) {
	t := c.Tape
	x, n, d, err := points(t, args[0])
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s: x: %v", fn, err)
	}
	y, m, dy, err := points(t, args[1])
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s: y: %v", fn, err)
	}
	if d != dy {
		return stdlib.Value{}, fmt.Errorf("%s: x has points of dimension %d, y of dimension %d", fn, d, dy)
	}
	opt, backend, err := options(c, named, fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	la, err := logWeights(t, named[argLogA], n, "log_a", fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	lb, err := logWeights(t, named[argLogB], m, "log_b", fn)
	if err != nil {
		return stdlib.Value{}, err
	}
	s, err := state(c, n, m, d)
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
	}
	s.ws.SetContext(c.Run)
	if k == plan {
		xv, yv, lav, lbv := t.Val(x), t.Val(y), t.Val(la), t.Val(lb)
		p, err := s.ws.Plan(xv, yv, lav, lbv, opt, s.plan)
		if err != nil {
			return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
		}
		s.plan = p
		return stdlib.ADValue(t.NewConst(autodiff.MatrixShape(n, m), p)), nil
	}
	// Both supports fixed and the same regular grid: the cost separates
	// and the separable path (O(H·W·(H+W)) per half-iteration instead of
	// O((H·W)²)) gives the same result, on the CPU or the GPU.
	var g ot.Grid
	if d == 2 && n == m && x.IsConst() && y.IsConst() {
		if xv := t.Val(x); slices.Equal(xv, t.Val(y)) {
			g, _ = unitGrid(xv)
		}
	}
	// A y–y term of data is computed once (on the device that takes the
	// problem).
	constYY := k == divergence && y.IsConst() && lb.IsConst()
	p := t.ScalarPartials(x, y, la, lb)
	grad := &ot.Grad{X: p.D(0), Y: p.D(1), LogA: p.D(2), LogB: p.D(3)}
	var gp *ot.Grad
	if !c.NoGrad && (grad.X != nil || grad.Y != nil || grad.LogA != nil || grad.LogB != nil) {
		gp = grad
	}
	xv, yv, lav, lbv := t.Val(x), t.Val(y), t.Val(la), t.Val(lb)
	var value float64
	used := false
	value, used, err = onGPU(c, k, backend, d, g, xv, yv, lav, lbv, opt, constYY, gp)
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("%s (cuda): %v", fn, err)
	}
	var yy *ot.SelfTerm
	if !used {
		if gp != nil {
			// The CPU kernels skip the derivatives that the tape discards.
			gp.FixedX = s.fixedCoords(t, x, n, d, 0)
			gp.FixedY = s.fixedCoords(t, y, m, d, 1)
		}
		if constYY {
			if yy, err = s.selfTerm(yv, lbv, opt, g); err != nil {
				return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
			}
		}
	}
	switch {
	case used:
	case g.N() > 0 && k == divergence:
		res, err := s.ws.GridDivergence(g, lav, lbv, opt, yy, gp)
		if err != nil {
			return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
		}
		value = res.Divergence
	case g.N() > 0:
		if value, err = s.ws.GridOT(g, lav, lbv, opt, gp); err != nil {
			return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
		}
	case k == divergence:
		res, err := s.ws.Divergence(xv, yv, lav, lbv, opt, yy, gp)
		if err != nil {
			return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
		}
		value = res.Divergence
	default:
		if value, err = s.ws.OT(xv, yv, lav, lbv, opt, gp); err != nil {
			return stdlib.Value{}, fmt.Errorf("%s: %v", fn, err)
		}
	}
	p.Out()[0] = value
	return stdlib.RealValue(p.Value()), nil
}

// unitGrid reports whether the n×2 row-major points pts are a regular
// H×W grid with unit spacing in row-major order, (r0 + i, c0 + j) for
// point i·W + j (as grid_points makes them, any common shift), and
// returns its shape. A grid of one row or one column is not reported (the
// dense path is as fast).
func unitGrid(pts []float64) (ot.Grid, bool) {
	n := len(pts) / 2
	if n < 4 {
		return ot.Grid{}, false
	}
	r0, c0 := pts[0], pts[1]
	w := 1
	for w < n && pts[2*w] == r0 {
		w++
	}
	if w < 2 || n%w != 0 || n/w < 2 {
		return ot.Grid{}, false
	}
	for k := range n {
		if pts[2*k] != r0+float64(k/w) || pts[2*k+1] != c0+float64(k%w) {
			return ot.Grid{}, false
		}
	}
	return ot.Grid{H: n / w, W: w}, true
}

// resolution is the median distance from each point to its nearest other
// point. It is a data summary used to set eps; it is treated as a constant
// (no gradient flows through it).
func resolution(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
	t := c.Tape
	x, n, d, err := points(t, args[0])
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("resolution: %v", err)
	}
	h, err := ot.Resolution(t.Val(x), n, d)
	if err != nil {
		return stdlib.Value{}, fmt.Errorf("resolution: %v", err)
	}
	return stdlib.RealValue(t.Const(h)), nil
}
