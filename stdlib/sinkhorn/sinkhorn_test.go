package sinkhorn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

type reference = shared.SinkhornRef

func flat(a [][]float64) []float64 { return shared.Flatten(a) }

// named builds the named-argument list of sinkhorn for a reference.
func named(t *autodiff.Tape, r *reference, la, lb autodiff.Value, grad string) []stdlib.Value {
	n := make([]stdlib.Value, argBackend+1)
	n[argEps] = stdlib.RealValue(t.Const(r.Inputs.Eps))
	n[argIters] = stdlib.IntValue(r.Inputs.T)
	if r.Inputs.Rho != nil {
		n[argRho] = stdlib.RealValue(t.Const(*r.Inputs.Rho))
	}
	n[argLogA] = stdlib.ADValue(la)
	n[argLogB] = stdlib.ADValue(lb)
	n[argGrad] = stdlib.Value{Type: lang.StringType, Str: grad}
	return n
}

// TestReferenceThroughTape evaluates every shared reference vector through
// the tape node, with every input a variable, and compares the value and
// the gradients the tape reports with the file's (unrolled and envelope).
func TestReferenceThroughTape(t *testing.T) {
	refs := shared.SinkhornRefs(t)
	if len(refs) < 13 {
		t.Fatalf("found %d reference files", len(refs))
	}
	impls := stdlib.Impls{}
	Register(impls)
	for _, r := range refs {
		t.Run(r.Name, func(t *testing.T) {
			d := len(r.Inputs.X[0])
			for _, mode := range []string{"unrolled", "envelope"} {
				tape := autodiff.NewTape()
				c := &stdlib.Context{Tape: tape, State: map[string]any{}}
				x := tape.NewVar(autodiff.MatrixShape(len(r.Inputs.X), d), flat(r.Inputs.X))
				y := tape.NewVar(autodiff.MatrixShape(len(r.Inputs.Y), d), flat(r.Inputs.Y))
				la, lb := tape.VarVec(r.Inputs.LogA), tape.VarVec(r.Inputs.LogB)
				v, err := impls["sinkhorn"](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, named(tape, r, la, lb, mode))
				if err != nil {
					t.Fatal(err)
				}
				got := tape.Scalar(v.AD)
				if math.Abs(got-r.Expected.Divergence) > r.Tolerance.ValueRtol*r.Tolerance.ValueScale {
					t.Errorf("%s: divergence %.17g, want %.17g", mode, got, r.Expected.Divergence)
				}
				if err := tape.Gradient(v.AD); err != nil {
					t.Fatal(err)
				}
				check := func(name string, adj []float64, want []float64) {
					scale := 0.0
					for _, w := range want {
						scale = math.Max(scale, math.Abs(w))
					}
					for i := range want {
						if math.Abs(adj[i]-want[i]) > r.Tolerance.GradRtol*scale {
							t.Errorf("%s %s[%d] = %.17g, want %.17g", mode, name, i, adj[i], want[i])
							return
						}
					}
				}
				if mode == "unrolled" {
					check("grad_x", tape.Adj(x), flat(r.Expected.GradX))
					check("grad_y", tape.Adj(y), flat(r.Expected.GradY))
					check("grad_log_a", tape.Adj(la), r.Expected.GradLogA)
					check("grad_log_b", tape.Adj(lb), r.Expected.GradLogB)
				} else {
					check("envelope_grad_x", tape.Adj(x), flat(r.Expected.EnvelopeGradX))
				}
			}
		})
	}
}

// TestFiniteDifferences checks the tape gradient of sinkhorn and
// sinkhorn_ot on points given as a vector, a matrix and an array of
// vectors, against finite differences.
func TestFiniteDifferences(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	yPts := []float64{0.1, 0.4, -0.3, 0.9, 0.5}
	for _, fn := range []string{"sinkhorn", "sinkhorn_ot"} {
		for _, rho := range []float64{0, 2} {
			f := func(tape *autodiff.Tape, x autodiff.Value) autodiff.Value {
				c := &stdlib.Context{Tape: tape, State: map[string]any{}}
				n := make([]stdlib.Value, argBackend+1)
				n[argEps] = stdlib.RealValue(tape.Const(0.3))
				n[argIters] = stdlib.IntValue(7)
				if rho > 0 {
					n[argRho] = stdlib.RealValue(tape.Const(rho))
				}
				y := tape.ConstVec(yPts)
				v, err := impls[fn](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, n)
				if err != nil {
					t.Fatal(err)
				}
				return v.AD
			}
			if err := autodiff.CheckGradient(f, []float64{0.2, -0.1, 0.7, 0.3}, 1e-6); err != nil {
				t.Errorf("%s rho=%g: %v", fn, rho, err)
			}
		}
	}
	// Points in R^2 as an array of vectors: same value as the matrix form.
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}}
	n := make([]stdlib.Value, argBackend+1)
	n[argEps] = stdlib.RealValue(tape.Const(0.5))
	m := tape.NewConst(autodiff.MatrixShape(2, 2), []float64{0, 1, 2, 3})
	arr := stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Dims: []int{2},
		Elems: []stdlib.Value{stdlib.ADValue(tape.ConstVec([]float64{0, 1})), stdlib.ADValue(tape.ConstVec([]float64{2, 3}))}}
	y := tape.NewConst(autodiff.MatrixShape(1, 2), []float64{1, 1})
	a, err := impls["sinkhorn"](c, []stdlib.Value{stdlib.ADValue(m), stdlib.ADValue(y)}, n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := impls["sinkhorn"](c, []stdlib.Value{arr, stdlib.ADValue(y)}, n)
	if err != nil {
		t.Fatal(err)
	}
	if tape.Scalar(a.AD) != tape.Scalar(b.AD) {
		t.Errorf("matrix %g and array-of-vectors %g differ", tape.Scalar(a.AD), tape.Scalar(b.AD))
	}
}

func TestErrors(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}}
	x := stdlib.ADValue(tape.ConstVec([]float64{0, 1, 2}))
	y := stdlib.ADValue(tape.ConstVec([]float64{0, 1}))
	base := func() []stdlib.Value {
		n := make([]stdlib.Value, argBackend+1)
		n[argEps] = stdlib.RealValue(tape.Const(0.1))
		return n
	}
	tests := []struct {
		name string
		edit func(n []stdlib.Value)
		want string
	}{
		{"eps <= 0", func(n []stdlib.Value) { n[argEps] = stdlib.RealValue(tape.Const(0)) }, "sinkhorn: eps must be positive and finite, got 0"},
		{"iters < 1", func(n []stdlib.Value) { n[argIters] = stdlib.IntValue(0) }, "sinkhorn: iters must be at least 1, got 0"},
		{"weights length", func(n []stdlib.Value) { n[argLogA] = stdlib.ADValue(tape.ConstVec([]float64{0, 0})) }, "sinkhorn: log_a has 2 entries but there are 3 points"},
		{"unequal masses", func(n []stdlib.Value) { n[argLogB] = stdlib.ADValue(tape.ConstVec([]float64{0, 0})) }, "balanced Sinkhorn needs equal masses, but mass(a) = 1 and mass(b) = 2"},
		{"cuda", func(n []stdlib.Value) { n[argBackend] = stdlib.Value{Type: lang.StringType, Str: "cuda"} }, `backend = "cuda" needs shm built with the cuda tag`},
	}
	for _, tt := range tests {
		if tt.name == "cuda" && cudaAvailable() {
			continue // a cuda build on a GPU machine: the backend exists
		}
		n := base()
		tt.edit(n)
		_, err := impls["sinkhorn"](c, []stdlib.Value{x, y}, n)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestGridPathThroughTape checks that sinkhorn and sinkhorn_ot on two
// copies of one unit grid (which take the separable path) give the value
// and log-weight gradients of the same problem with the points listed in
// a shuffled order (which takes the dense path).
func TestGridPathThroughTape(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	const h, w = 5, 6
	n := h * w
	pts := make([]float64, 0, 2*n)
	for r := range h {
		for c := range w {
			pts = append(pts, 1.5+float64(r), -2+float64(c))
		}
	}
	if g, ok := unitGrid(pts); !ok || g != (ot.Grid{H: h, W: w}) {
		t.Fatalf("unitGrid = %v, %v; want %d×%d", g, ok, h, w)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	perm := rng.Perm(n)
	shuffled := make([]float64, 2*n)
	for i, p := range perm {
		shuffled[2*i], shuffled[2*i+1] = pts[2*p], pts[2*p+1]
	}
	if _, ok := unitGrid(shuffled); ok {
		t.Fatal("shuffled points detected as a grid")
	}
	la, lb := make([]float64, n), make([]float64, n)
	for i := range la {
		la[i] = math.Log(0.05 + rng.Float64())
		lb[i] = math.Log(0.05 + rng.Float64())
	}
	normalize := func(v []float64) {
		m := math.Inf(-1)
		for _, x := range v {
			m = math.Max(m, x)
		}
		s := 0.0
		for _, x := range v {
			s += math.Exp(x - m)
		}
		for i := range v {
			v[i] -= m + math.Log(s)
		}
	}
	normalize(la)
	normalize(lb)
	permute := func(v []float64) []float64 {
		out := make([]float64, n)
		for i, p := range perm {
			out[i] = v[p]
		}
		return out
	}
	eval := func(fn string, rho float64, p, a, b []float64) (float64, []float64) {
		v, g, _ := logWeightCall(t, impls, fn, p, a, b, 0.8, 25, rho, "")
		return v, g
	}
	for _, fn := range []string{"sinkhorn", "sinkhorn_ot"} {
		for _, rho := range []float64{0, 10} {
			vg, gg := eval(fn, rho, pts, la, lb)
			vd, gd := eval(fn, rho, shuffled, permute(la), permute(lb))
			if math.Abs(vg-vd) > 1e-12*math.Max(1, math.Abs(vd)) {
				t.Errorf("%s rho=%g: grid %.17g, dense %.17g", fn, rho, vg, vd)
			}
			gg = permute(gg)
			for i := range gd {
				if math.Abs(gg[i]-gd[i]) > 1e-10*math.Max(1, math.Abs(gd[i])) {
					t.Errorf("%s rho=%g: d/dlog_a[%d] grid %.17g, dense %.17g", fn, rho, i, gg[i], gd[i])
					break
				}
			}
		}
	}
}

func TestUnitGrid(t *testing.T) {
	tests := []struct {
		name string
		pts  []float64
		want ot.Grid
		ok   bool
	}{
		{"2x2", []float64{1, 1, 1, 2, 2, 1, 2, 2}, ot.Grid{H: 2, W: 2}, true},
		{"3x2 shifted", []float64{0.5, 7, 0.5, 8, 1.5, 7, 1.5, 8, 2.5, 7, 2.5, 8}, ot.Grid{H: 3, W: 2}, true},
		{"column major", []float64{1, 1, 2, 1, 1, 2, 2, 2}, ot.Grid{}, false},
		{"spacing 2", []float64{0, 0, 0, 2, 2, 0, 2, 2}, ot.Grid{}, false},
		{"one row", []float64{0, 0, 0, 1, 0, 2, 0, 3}, ot.Grid{}, false},
		{"ragged", []float64{0, 0, 0, 1, 0, 2, 1, 0, 1, 1}, ot.Grid{}, false},
		{"too few", []float64{0, 0, 0, 1}, ot.Grid{}, false},
	}
	for _, tt := range tests {
		g, ok := unitGrid(tt.pts)
		if g != tt.want || ok != tt.ok {
			t.Errorf("%s: unitGrid = %v, %v; want %v, %v", tt.name, g, ok, tt.want, tt.ok)
		}
	}
}

// TestPathEnv checks SHM_SINKHORN_PATH: an unknown value is an error that
// names the variable, and the dense and sparse paths give the same value
// and gradient through the tape node (to 1e-12) on a problem at the
// paper's scale (1-D, eps = resolution², a constant y with its cached y–y
// term, x a variable).
func TestPathEnv(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 150
	xv, yv := make([]float64, n), make([]float64, n)
	for i := range n {
		xv[i] = 0.1 + 1.1*rng.NormFloat64()
		yv[i] = rng.NormFloat64()
	}
	h, err := ot.Resolution(yv, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(path string) (float64, []float64, error) {
		t.Setenv(PathEnv, path)
		tape := autodiff.NewTape()
		c := &stdlib.Context{Tape: tape, State: map[string]any{}}
		x := tape.VarVec(xv)
		y := tape.ConstVec(yv)
		nm := make([]stdlib.Value, argBackend+1)
		nm[argEps] = stdlib.RealValue(tape.Const(h * h))
		nm[argIters] = stdlib.IntValue(80)
		v, err := impls["sinkhorn"](c, []stdlib.Value{
			{Type: lang.VectorType, AD: x}, {Type: lang.VectorType, AD: y}}, nm)
		if err != nil {
			return 0, nil, err
		}
		if err := tape.Gradient(v.AD); err != nil {
			t.Fatal(err)
		}
		return tape.Scalar(v.AD), slices.Clone(tape.Adj(x)), nil
	}
	if _, _, err := eval("fast"); err == nil || !strings.Contains(err.Error(), PathEnv+"=fast") {
		t.Errorf("unknown path: error %v, want one naming %s=fast", err, PathEnv)
	}
	vd, gd, err := eval("dense")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"sparse", "auto", ""} {
		v, g, err := eval(path)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v-vd) > 1e-12*math.Abs(vd) {
			t.Errorf("%q: value %.17g, dense %.17g", path, v, vd)
		}
		scale := 0.0
		for _, w := range gd {
			scale = max(scale, math.Abs(w))
		}
		for i := range gd {
			if math.Abs(g[i]-gd[i]) > 1e-12*scale {
				t.Errorf("%q: grad x[%d] = %.17g, dense %.17g", path, i, g[i], gd[i])
				break
			}
		}
	}
}

// TestNoGrad checks that a Context with NoGrad gives the same value
// without computing the partial derivatives (the tape's adjoints stay
// zero), while the same call without it has a nonzero gradient.
func TestNoGrad(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	values := map[bool]float64{}
	for _, noGrad := range []bool{false, true} {
		tape := autodiff.NewTape()
		c := &stdlib.Context{Tape: tape, State: map[string]any{}, NoGrad: noGrad}
		n := make([]stdlib.Value, argBackend+1)
		n[argEps] = stdlib.RealValue(tape.Const(0.3))
		x := tape.VarVec([]float64{0.2, -0.1, 0.7, 0.3})
		y := tape.ConstVec([]float64{0.1, 0.4, -0.3, 0.9, 0.5})
		v, err := impls["sinkhorn"](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, n)
		if err != nil {
			t.Fatal(err)
		}
		values[noGrad] = tape.Scalar(v.AD)
		if err := tape.Gradient(v.AD); err != nil {
			t.Fatal(err)
		}
		nonzero := false
		for _, a := range tape.Adj(x) {
			nonzero = nonzero || a != 0
		}
		if nonzero == noGrad {
			t.Errorf("NoGrad = %v: gradient %v", noGrad, tape.Adj(x))
		}
	}
	if values[true] != values[false] {
		t.Errorf("value %.17g with NoGrad, %.17g without", values[true], values[false])
	}
}

// TestFixedColumns evaluates a divergence whose points put a column of
// data beside a simulated one (append_col, as Experiment C does): the
// call asks the kernels for the simulated coordinate's derivatives only,
// and the gradient the tape reports has the bits it has when the data
// column is a variable too.
func TestFixedColumns(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 128
	tv, yv, obs := make([]float64, n), make([]float64, n), make([]float64, 2*n)
	for i := range n {
		u := float64(i) / (n - 1)
		tv[i] = u + 0.05*rng.NormFloat64()
		yv[i] = math.Exp(-0.5*math.Pow((u-0.5)/0.05, 2)) + 0.02*rng.NormFloat64()
		obs[2*i] = u + 0.05*rng.NormFloat64()
		obs[2*i+1] = math.Exp(-0.5*math.Pow((u-0.48)/0.06, 2)) + 0.02*rng.NormFloat64()
	}
	h, err := ot.Resolution(obs, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	// appendCol is the stdlib's append_col: a Concat, then a Gather.
	appendCol := func(tape *autodiff.Tape, a, b autodiff.Value) autodiff.Value {
		idx := make([]int, 0, 2*n)
		for i := range n {
			idx = append(idx, i, n+i)
		}
		both := tape.Concat(autodiff.VectorShape(2*n), a, b)
		return tape.Reshape(tape.Gather(both, idx), autodiff.MatrixShape(n, 2))
	}
	eval := func(dataVar bool) ([]float64, []bool) {
		tape := autodiff.NewTape()
		c := &stdlib.Context{Tape: tape, State: map[string]any{}}
		col := tape.ConstVec(tv)
		if dataVar {
			col = tape.VarVec(tv)
		}
		y := tape.VarVec(yv)
		x := appendCol(tape, col, tape.Exp(y))
		nm := make([]stdlib.Value, argBackend+1)
		nm[argEps] = stdlib.RealValue(tape.Const(h * h))
		nm[argIters] = stdlib.IntValue(80)
		v, err := impls["sinkhorn"](c, []stdlib.Value{
			{Type: lang.MatrixType, AD: x}, {Type: lang.MatrixType, AD: tape.NewConst(autodiff.MatrixShape(n, 2), obs)}}, nm)
		if err != nil {
			t.Fatal(err)
		}
		if err := tape.Gradient(v.AD); err != nil {
			t.Fatal(err)
		}
		s := c.State[stateKey].(*chainState)
		return slices.Clone(tape.Adj(y)), s.fixedCoords(tape, x, n, 2, 0)
	}
	fixedGrad, fixed := eval(false)
	if !slices.Equal(fixed, []bool{true, false}) {
		t.Fatalf("fixed coordinates %v, want [true false]", fixed)
	}
	fullGrad, none := eval(true)
	if none != nil {
		t.Fatalf("fixed coordinates %v with both columns variables, want none", none)
	}
	nonzero := false
	for i, g := range fullGrad {
		nonzero = nonzero || g != 0
		if math.Float64bits(g) != math.Float64bits(fixedGrad[i]) {
			t.Fatalf("grad y[%d] = %.17g with the data column fixed, %.17g without", i, fixedGrad[i], g)
		}
	}
	if !nonzero {
		t.Fatal("the gradient is zero")
	}
}

// logWeightCall evaluates fn (sinkhorn or sinkhorn_ot) through a tape
// between two copies of the n×2 points p, with the log-weights a (a
// variable) and b, eps, iters, rho (0: balanced) and backend ("": the
// default), and returns the value, the adjoint of a and the call's context
// state.
func logWeightCall(t *testing.T, impls stdlib.Impls, fn string, p, a, b []float64, eps float64, iters int,
	rho float64, backend string) (float64, []float64, map[string]any) {
	t.Helper()
	n := len(a)
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}}
	x := tape.NewConst(autodiff.MatrixShape(n, 2), p)
	y := tape.NewConst(autodiff.MatrixShape(n, 2), p)
	lav := tape.VarVec(a)
	nm := make([]stdlib.Value, argBackend+1)
	nm[argEps] = stdlib.RealValue(tape.Const(eps))
	nm[argIters] = stdlib.IntValue(iters)
	if rho > 0 {
		nm[argRho] = stdlib.RealValue(tape.Const(rho))
	}
	nm[argLogA] = stdlib.ADValue(lav)
	nm[argLogB] = stdlib.ADValue(tape.ConstVec(b))
	if backend != "" {
		nm[argBackend] = stdlib.Value{Type: lang.StringType, Str: backend}
	}
	v, err := impls[fn](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, nm)
	if err != nil {
		t.Fatal(err)
	}
	if err := tape.Gradient(v.AD); err != nil {
		t.Fatal(err)
	}
	return tape.Scalar(v.AD), slices.Clone(tape.Adj(lav)), c.State
}

// TestSelfCache checks the y–y cache: a term is computed once per set of
// inputs (points, log-weights, options, path), other inputs compute
// another, and the last 8 are kept.
func TestSelfCache(t *testing.T) {
	var c selfCache[int]
	computed := 0
	get := func(y, logB []float64, opt ot.Options, grid bool) int {
		t.Helper()
		v, err := c.get(y, logB, opt, grid, func() (int, error) { computed++; return computed, nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	y, lb := []float64{0, 1, 2}, []float64{-1, -1, -1}
	opt := ot.Options{Eps: 0.1, Balanced: true, Iters: 10}
	first := get(y, lb, opt, false)
	for _, step := range []struct {
		name    string
		y, lb   []float64
		opt     ot.Options
		grid    bool
		another bool
	}{
		{"same inputs", []float64{0, 1, 2}, []float64{-1, -1, -1}, opt, false, false},
		{"other points", []float64{0, 1, 3}, lb, opt, false, true},
		{"other weights", y, []float64{-1, -1, -2}, opt, false, true},
		{"other options", y, lb, ot.Options{Eps: 0.1, Balanced: true, Iters: 11}, false, true},
		{"grid path", y, lb, opt, true, true},
	} {
		before := computed
		v := get(step.y, step.lb, step.opt, step.grid)
		if step.another != (computed > before) || !step.another && v != first {
			t.Errorf("%s: got term %d, %d computed before, %d after", step.name, v, before, computed)
		}
	}
	for i := range 8 {
		get([]float64{float64(10 + i)}, []float64{0}, opt, false)
	}
	if before := computed; get(y, lb, opt, false) == first || computed == before {
		t.Error("the cache keeps more than 8 terms")
	}
	if _, err := c.get([]float64{99}, nil, opt, false, func() (int, error) { return 0, errors.New("failed") }); err == nil {
		t.Error("a failed computation gave no error")
	}
	if len(c.entries) != 8 {
		t.Errorf("%d entries, want 8", len(c.entries))
	}
}

// TestChannels checks calls whose log-weights are arrays of vectors (one
// problem per channel on the same points, the values summed) against the
// sum of one call per channel: the same value bit for bit, the same
// gradients of each channel's own log-weights bit for bit, and those of
// shared inputs (the points, a vector of log-weights given for every
// channel) to rounding; on a grid (the separable path) and on scattered
// points with variable x, balanced and unbalanced, for sinkhorn and
// sinkhorn_ot.
func TestChannels(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	rng := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		name       string
		grid       bool
		na, nb     int // channels of log_a and log_b (1: a vector for all)
		rho        float64
		fn         string
		varB, varX bool
	}{
		{"grid/3x3", true, 3, 3, 0, "sinkhorn", false, false},
		{"grid/3x1/unbalanced", true, 3, 1, 10, "sinkhorn", true, false},
		{"grid/ot/2x2", true, 2, 2, 0, "sinkhorn_ot", true, false},
		{"points/1x3", false, 1, 3, 0, "sinkhorn", true, true},
		{"points/4x4/unbalanced", false, 4, 4, 0.5, "sinkhorn", false, true},
		{"points/ot/2x1", false, 2, 1, 0, "sinkhorn_ot", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pts []float64
			n, d, eps := 30, 1, 0.05
			if c.grid {
				pts, n, d, eps = ot.Grid{H: 5, W: 6}.Points(), 30, 2, 1
			} else {
				pts = make([]float64, n)
				for i := range pts {
					pts[i] = rng.NormFloat64()
				}
			}
			weights := func(k int) [][]float64 {
				w := make([][]float64, k)
				for i := range w {
					w[i] = make([]float64, n)
					sum := 0.0
					for j := range w[i] {
						w[i][j] = 0.1 + rng.Float64()
						sum += w[i][j]
					}
					for j := range w[i] {
						w[i][j] = math.Log(w[i][j] / sum)
					}
				}
				return w
			}
			as, bs := weights(c.na), weights(c.nb)
			type outcome struct {
				value      float64
				dx         []float64
				da, db     [][]float64
				tape       *autodiff.Tape
				x          autodiff.Value
				avar, bvar []autodiff.Value
			}
			setup := func() *outcome {
				o := &outcome{tape: autodiff.NewTape()}
				tp := o.tape
				shape := autodiff.MatrixShape(n, d)
				if c.varX {
					o.x = tp.NewVar(shape, pts)
				} else {
					o.x = tp.NewConst(shape, pts)
				}
				for _, a := range as {
					o.avar = append(o.avar, tp.VarVec(a))
				}
				for _, b := range bs {
					if c.varB {
						o.bvar = append(o.bvar, tp.VarVec(b))
					} else {
						o.bvar = append(o.bvar, tp.ConstVec(b))
					}
				}
				return o
			}
			weightArg := func(vs []autodiff.Value) stdlib.Value {
				if len(vs) == 1 {
					return stdlib.ADValue(vs[0])
				}
				v := stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Dims: []int{len(vs)}}
				for _, e := range vs {
					v.Elems = append(v.Elems, stdlib.ADValue(e))
				}
				return v
			}
			call := func(o *outcome, la, lb stdlib.Value) autodiff.Value {
				nm := make([]stdlib.Value, argBackend+1)
				nm[argEps] = stdlib.RealValue(o.tape.Const(eps))
				nm[argIters] = stdlib.IntValue(12)
				if c.rho > 0 {
					nm[argRho] = stdlib.RealValue(o.tape.Const(c.rho))
				}
				nm[argLogA], nm[argLogB] = la, lb
				ctx := &stdlib.Context{Tape: o.tape, State: map[string]any{}}
				v, err := impls[c.fn](ctx, []stdlib.Value{{Type: lang.MatrixType, AD: o.x}, {Type: lang.MatrixType, AD: o.tape.NewConst(autodiff.MatrixShape(n, d), pts)}}, nm)
				if err != nil {
					t.Fatal(err)
				}
				return v.AD
			}
			finish := func(o *outcome, v autodiff.Value) {
				if err := o.tape.Gradient(v); err != nil {
					t.Fatal(err)
				}
				o.value = o.tape.Scalar(v)
				if c.varX {
					o.dx = slices.Clone(o.tape.Adj(o.x))
				}
				for _, a := range o.avar {
					o.da = append(o.da, slices.Clone(o.tape.Adj(a)))
				}
				if c.varB {
					for _, b := range o.bvar {
						o.db = append(o.db, slices.Clone(o.tape.Adj(b)))
					}
				}
			}
			vec := setup()
			finish(vec, call(vec, weightArg(vec.avar), weightArg(vec.bvar)))
			loop := setup()
			var sum autodiff.Value
			for ch := range max(c.na, c.nb) {
				s := call(loop, stdlib.ADValue(loop.avar[min(ch, c.na-1)]), stdlib.ADValue(loop.bvar[min(ch, c.nb-1)]))
				if ch == 0 {
					sum = s
				} else {
					sum = loop.tape.Add(sum, s)
				}
			}
			finish(loop, sum)
			if vec.value != loop.value {
				t.Errorf("value %.17g, sum of the channels %.17g", vec.value, loop.value)
			}
			near := func(what string, got, want []float64, exact bool) {
				t.Helper()
				for i := range want {
					if exact && got[i] != want[i] || math.Abs(got[i]-want[i]) > 1e-13*math.Max(1e-3, math.Abs(want[i])) {
						t.Fatalf("%s[%d] = %.17g, one call per channel %.17g", what, i, got[i], want[i])
					}
				}
			}
			near("d/dx", vec.dx, loop.dx, false)
			for ch := range vec.da {
				near(fmt.Sprintf("d/dlog_a[%d]", ch), vec.da[ch], loop.da[ch], c.na > 1)
			}
			for ch := range vec.db {
				near(fmt.Sprintf("d/dlog_b[%d]", ch), vec.db[ch], loop.db[ch], c.nb > 1)
			}
		})
	}
}

// TestChannelErrors checks the errors of log-weights given per channel.
func TestChannelErrors(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	tp := autodiff.NewTape()
	pts := tp.ConstVec([]float64{0, 1, 2})
	arr := func(lens ...int) stdlib.Value {
		v := stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Dims: []int{len(lens)}}
		for _, l := range lens {
			w := make([]float64, l)
			for i := range w {
				w[i] = -math.Log(float64(l))
			}
			v.Elems = append(v.Elems, stdlib.ADValue(tp.ConstVec(w)))
		}
		return v
	}
	for _, c := range []struct {
		la, lb stdlib.Value
		want   string
	}{
		{arr(3, 3), arr(3, 3, 3), "log_a has 2 channels and log_b 3"},
		{arr(3, 2), arr(3, 3), "log_a[2] has 2 entries but there are 3 points"},
		{arr(), arr(3), "log_a is an empty array"},
	} {
		nm := make([]stdlib.Value, argBackend+1)
		nm[argEps] = stdlib.RealValue(tp.Const(0.1))
		nm[argLogA], nm[argLogB] = c.la, c.lb
		ctx := &stdlib.Context{Tape: tp, State: map[string]any{}}
		_, err := impls["sinkhorn"](ctx, []stdlib.Value{stdlib.ADValue(pts), stdlib.ADValue(pts)}, nm)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

// TestChannelsCohort checks that a call with channels on a goroutine of a
// cohort (a crn worker) leaves the cohort's count as it found it.
func TestChannelsCohort(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	tp := autodiff.NewTape()
	pts := tp.ConstVec([]float64{0, 1, 2, 3})
	la := stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Dims: []int{3}}
	for range 3 {
		la.Elems = append(la.Elems, stdlib.ADValue(tp.VarVec([]float64{-1.2, -1.5, -1.3, -1.6})))
	}
	nm := make([]stdlib.Value, argBackend+1)
	nm[argEps] = stdlib.RealValue(tp.Const(0.5))
	nm[argRho] = stdlib.RealValue(tp.Const(1))
	nm[argLogA] = la
	cohort := stdlib.NewCohort(1)
	ctx := &stdlib.Context{Tape: tp, State: map[string]any{}, Cohort: cohort}
	if _, err := impls["sinkhorn"](ctx, []stdlib.Value{stdlib.ADValue(pts), stdlib.ADValue(pts)}, nm); err != nil {
		t.Fatal(err)
	}
	if n := cohort.Computing(); n != 1 {
		t.Errorf("%d members computing after the call, want 1", n)
	}
}
