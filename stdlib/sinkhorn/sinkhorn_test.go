package sinkhorn

import (
	"github.com/shmlang/shm/internal/shared"
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
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
		n := base()
		tt.edit(n)
		_, err := impls["sinkhorn"](c, []stdlib.Value{x, y}, n)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}
