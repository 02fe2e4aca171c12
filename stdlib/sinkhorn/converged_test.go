package sinkhorn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// TestConvergedThroughTape evaluates sinkhorn, sinkhorn_ot and
// sinkhorn_plan with tol = 1e-8 (no iters: the cap is DefaultTolCap) on
// every shared reference vector, every input a variable, and compares the
// value, the tape's gradient and the plan with package ot's converged
// evaluation of the same problem (the envelope gradient), bit for bit, and
// the chain's iteration counts with the workspace's.
func TestConvergedThroughTape(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	for _, r := range shared.SinkhornRefs(t) {
		if r.Name == "pc2d_small_eps_balanced_T80" {
			continue // 5·10^5 iterations to converge: TestConvergedCapThroughTape
		}
		t.Run(r.Name, func(t *testing.T) {
			in := &r.Inputs
			n, m, d := len(in.X), len(in.Y), len(in.X[0])
			x0, y0 := flat(in.X), flat(in.Y)
			opt := ot.Options{Eps: in.Eps, Balanced: in.Balanced, Iters: DefaultTolCap, Tol: 1e-8, Grad: ot.GradEnvelope}
			if in.Rho != nil {
				opt.Rho = *in.Rho
			}
			for _, fn := range []string{"sinkhorn", "sinkhorn_ot", "sinkhorn_plan"} {
				tape := autodiff.NewTape()
				c := &stdlib.Context{Tape: tape, State: map[string]any{}}
				x := tape.NewVar(autodiff.MatrixShape(n, d), x0)
				y := tape.NewVar(autodiff.MatrixShape(m, d), y0)
				la, lb := tape.VarVec(in.LogA), tape.VarVec(in.LogB)
				nm := named(tape, r, la, lb, "")
				nm[argIters] = stdlib.Value{} // absent: the cap's default
				nm[argGrad] = stdlib.Value{}  // absent: envelope with tol
				nm[argTol] = stdlib.RealValue(tape.Const(1e-8))
				v, err := impls[fn](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, nm)
				if err != nil {
					t.Fatal(err)
				}
				w := ot.NewWorkspace(n, m, d)
				gr := &ot.Grad{X: make([]float64, n*d), Y: make([]float64, m*d), LogA: make([]float64, n), LogB: make([]float64, m)}
				var want float64
				switch fn {
				case "sinkhorn":
					res, err := w.Divergence(x0, y0, in.LogA, in.LogB, opt, nil, gr)
					if err != nil {
						t.Fatal(err)
					}
					want = res.Divergence
				case "sinkhorn_ot":
					if want, err = w.OT(x0, y0, in.LogA, in.LogB, opt, gr); err != nil {
						t.Fatal(err)
					}
				case "sinkhorn_plan":
					plan, err := w.Plan(x0, y0, in.LogA, in.LogB, opt, nil)
					if err != nil {
						t.Fatal(err)
					}
					if got := tape.Val(v.AD); !slices.Equal(got, plan) {
						t.Errorf("%s: plan differs from ot's", fn)
					}
				}
				counts := ChainCounts(c.State)
				if it := w.Iterations(); counts.Last != it || counts.NotConverged != 0 || counts.Problems != int64(nonzero(it)) {
					t.Errorf("%s: counts %+v, ot's iterations %+v", fn, counts, it)
				}
				w.Close()
				if fn == "sinkhorn_plan" {
					continue
				}
				if got := tape.Scalar(v.AD); got != want {
					t.Errorf("%s: value %.17g, ot's %.17g", fn, got, want)
				}
				if err := tape.Gradient(v.AD); err != nil {
					t.Fatal(err)
				}
				for _, a := range []struct {
					name      string
					got, want []float64
				}{{"x", tape.Adj(x), gr.X}, {"y", tape.Adj(y), gr.Y}, {"log_a", tape.Adj(la), gr.LogA}, {"log_b", tape.Adj(lb), gr.LogB}} {
					if !slices.Equal(a.got, a.want) {
						t.Errorf("%s: gradient %s %v, ot's envelope gradient %v", fn, a.name, a.got, a.want)
					}
				}
			}
		})
	}
}

// nonzero returns the number of problems of it that ran.
func nonzero(it ot.Iterations) int {
	k := 0
	for _, n := range []int{it.XY, it.XX, it.YY} {
		if n > 0 {
			k++
		}
	}
	return k
}

// TestConvergedCounts checks the chain's running counts over calls: a
// divergence whose y–y term is data counts that problem on the call that
// solved it only, and the counts add up.
func TestConvergedCounts(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}}
	if got := ChainCounts(c.State); got != (Counts{}) {
		t.Fatalf("counts before any call: %+v", got)
	}
	y := tape.ConstVec([]float64{0.1, 0.4, -0.3, 0.9, 0.5})
	nm := make([]stdlib.Value, argBackend+1)
	nm[argEps] = stdlib.RealValue(tape.Const(0.3))
	nm[argTol] = stdlib.RealValue(tape.Const(1e-9))
	var want Counts
	pos := [2]lang.Pos{{Line: 3, Col: 7}, {Line: 9, Col: 2}}
	for call, xv := range [][]float64{{0.2, -0.1, 0.7, 0.3}, {0.25, -0.1, 0.7, 0.3}} {
		x := tape.VarVec(xv)
		c.Pos = pos[call]
		if _, err := impls["sinkhorn"](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, nm); err != nil {
			t.Fatal(err)
		}
		got := ChainCounts(c.State)
		if byCall := CallCounts(c.State, pos[call]); byCall.Last != got.Last || byCall.Problems != int64(nonzero(got.Last)) {
			t.Errorf("call %d at %v: its own counts %+v, the chain's last %+v", call+1, pos[call], byCall, got.Last)
		}
		if got.Last.XY < 1 || got.Last.XX < 1 || (call == 0) != (got.Last.YY > 0) {
			t.Errorf("call %d: last counts %+v (the y–y term is solved by the first call only)", call+1, got.Last)
		}
		want.add(got.Last)
		if got.Problems != want.Problems || got.Iters != want.Iters || got.Max != want.Max {
			t.Errorf("call %d: counts %+v, want the sums %+v", call+1, got, want)
		}
	}
	if a, b := CallCounts(c.State, pos[0]), CallCounts(c.State, pos[1]); a.Problems+b.Problems != want.Problems || a.Iters+b.Iters != want.Iters {
		t.Errorf("the calls' counts %+v and %+v do not add up to the chain's %+v", a, b, want)
	}
	if got := CallCounts(c.State, lang.Pos{Line: 1, Col: 1}); got != (Counts{}) {
		t.Errorf("a position without a call has counts %+v", got)
	}
}

// TestConvergedCapThroughTape checks a call whose problem reaches the cap:
// the error wraps ot.ErrNotConverged and says so, the chain counts it, and
// the run's iteration override (stdlib.Context.Iters) replaces the cap.
func TestConvergedCapThroughTape(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}, Iters: 3}
	x := stdlib.ADValue(tape.VarVec([]float64{0.2, -0.1, 0.7, 0.3}))
	y := stdlib.ADValue(tape.ConstVec([]float64{0.1, 0.4, -0.3, 0.9, 0.5}))
	nm := make([]stdlib.Value, argBackend+1)
	nm[argEps] = stdlib.RealValue(tape.Const(0.01))
	nm[argIters] = stdlib.IntValue(5000)
	nm[argTol] = stdlib.RealValue(tape.Const(1e-9))
	for _, fn := range []string{"sinkhorn", "sinkhorn_ot", "sinkhorn_plan"} {
		_, err := impls[fn](c, []stdlib.Value{x, y}, nm)
		if !errors.Is(err, ot.ErrNotConverged) || !strings.Contains(err.Error(), fn+": ") || !strings.Contains(err.Error(), "iters = 3 iterations (the cap)") {
			t.Errorf("%s: error %v, want ot.ErrNotConverged after the cap of 3", fn, err)
		}
	}
	if got := ChainCounts(c.State); got.NotConverged != 3 || got.Problems != 0 {
		t.Errorf("counts %+v, want 3 calls that did not converge and no problem solved", got)
	}
}

// TestConvergedOptions checks how options reads tol: the cap's default,
// iters and the run's override as the cap, the envelope gradient.
func TestConvergedOptions(t *testing.T) {
	tape := autodiff.NewTape()
	str := func(s string) stdlib.Value { return stdlib.Value{Type: lang.StringType, Str: s} }
	for _, tt := range []struct {
		name      string
		iters     int // 0: absent
		tol       float64
		grad      string
		override  int // stdlib.Context.Iters
		wantIters int
		wantTol   float64
		wantGrad  ot.GradMode
	}{
		{"fixed", 0, 0, "", 0, DefaultIters, 0, ot.GradUnrolled},
		{"fixed, iters", 80, 0, "envelope", 0, 80, 0, ot.GradEnvelope},
		{"tol", 0, 1e-6, "", 0, DefaultTolCap, 1e-6, ot.GradEnvelope},
		{"tol, iters", 500, 1e-6, "", 0, 500, 1e-6, ot.GradEnvelope},
		{"tol, grad envelope", 0, 1e-6, "envelope", 0, DefaultTolCap, 1e-6, ot.GradEnvelope},
		{"tol, override", 500, 1e-6, "", 40, 40, 1e-6, ot.GradEnvelope},
		{"fixed, override", 500, 0, "", 40, 40, 0, ot.GradUnrolled},
	} {
		nm := make([]stdlib.Value, argBackend+1)
		nm[argEps] = stdlib.RealValue(tape.Const(0.1))
		if tt.iters > 0 {
			nm[argIters] = stdlib.IntValue(tt.iters)
		}
		if tt.tol > 0 {
			nm[argTol] = stdlib.RealValue(tape.Const(tt.tol))
		}
		if tt.grad != "" {
			nm[argGrad] = str(tt.grad)
		}
		c := &stdlib.Context{Tape: tape, Iters: tt.override}
		opt, _, err := options(c, nm, "sinkhorn")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if opt.Iters != tt.wantIters || opt.Tol != tt.wantTol || opt.Grad != tt.wantGrad {
			t.Errorf("%s: iters %d, tol %g, grad %v; want %d, %g, %v", tt.name, opt.Iters, opt.Tol, opt.Grad, tt.wantIters, tt.wantTol, tt.wantGrad)
		}
	}
}

// TestConvergedErrors checks the errors of tol's argument: positive and
// finite, not with grad = "unrolled", not on the GPU.
func TestConvergedErrors(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}}
	x := stdlib.ADValue(tape.ConstVec([]float64{0, 1, 2}))
	y := stdlib.ADValue(tape.ConstVec([]float64{0, 1}))
	real := func(v float64) stdlib.Value { return stdlib.RealValue(tape.Const(v)) }
	str := func(s string) stdlib.Value { return stdlib.Value{Type: lang.StringType, Str: s} }
	for _, tt := range []struct {
		name string
		edit func(n []stdlib.Value)
		want string
	}{
		{"tol = 0", func(n []stdlib.Value) { n[argTol] = real(0) }, "sinkhorn: tol must be positive and finite, got 0"},
		{"tol < 0", func(n []stdlib.Value) { n[argTol] = real(-1e-6) }, "sinkhorn: tol must be positive and finite, got -1e-06"},
		{"tol = inf", func(n []stdlib.Value) { n[argTol] = real(math.Inf(1)) }, "sinkhorn: tol must be positive and finite, got +Inf"},
		{"tol = nan", func(n []stdlib.Value) { n[argTol] = real(math.NaN()) }, "sinkhorn: tol must be positive and finite, got NaN"},
		{"tol as int 0", func(n []stdlib.Value) { n[argTol] = stdlib.IntValue(0) }, "sinkhorn: tol must be positive and finite, got 0"},
		{"tol, unrolled", func(n []stdlib.Value) { n[argTol] = real(1e-6); n[argGrad] = str("unrolled") },
			`sinkhorn: grad = "unrolled" cannot be used with tol: the number of iterations depends on the inputs`},
		{"tol, cuda", func(n []stdlib.Value) { n[argTol] = real(1e-6); n[argBackend] = str("cuda") },
			`sinkhorn: tol runs on the CPU only`},
		{"tol, iters < 1", func(n []stdlib.Value) { n[argTol] = real(1e-6); n[argIters] = stdlib.IntValue(0) },
			"sinkhorn: iters must be at least 1, got 0"},
	} {
		n := make([]stdlib.Value, argBackend+1)
		n[argEps] = real(0.1)
		tt.edit(n)
		_, err := impls["sinkhorn"](c, []stdlib.Value{x, y}, n)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestNamedPositions checks that the positions of the named arguments
// (argEps, ...) are those of the signature table, for every primitive.
func TestNamedPositions(t *testing.T) {
	want := map[int]string{argEps: "eps", argIters: "iters", argTol: "tol", argRho: "rho",
		argLogA: "log_a", argLogB: "log_b", argGrad: "grad", argBackend: "backend"}
	for _, fn := range []string{"sinkhorn", "sinkhorn_ot", "sinkhorn_plan"} {
		f := stdlib.Builtins().Lookup(fn)
		if len(f.Named) != len(want) {
			t.Errorf("%s: %d named parameters, want %d", fn, len(f.Named), len(want))
			continue
		}
		for i, name := range want {
			if f.Named[i].Name != name {
				t.Errorf("%s: named parameter %d is %s, want %s", fn, i, f.Named[i].Name, name)
			}
		}
		if p := f.NamedParam("tol"); !p.Data || p.Type != lang.RealType {
			t.Errorf("%s: tol is %+v, want real data", fn, p)
		}
	}
}
