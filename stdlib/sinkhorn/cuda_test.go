//go:build cuda

package sinkhorn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// The tests of this file need an NVIDIA GPU: a binary built with the cuda
// tag exits at start without one (see package cuda).

// tapeResult is a sinkhorn node's value and the adjoints of its four
// inputs.
type tapeResult struct {
	value          float64
	x, y, la, lb   []float64
	usedGPUContext bool // the chain state holds a GPU device
}

// evalBackend evaluates fn(x, y) through the tape with every input a
// variable and the given backend and gradient mode.
func evalBackend(t *testing.T, impls stdlib.Impls, fn string, r *reference, backend, mode string) tapeResult {
	t.Helper()
	d := len(r.Inputs.X[0])
	tape := autodiff.NewTape()
	c := &stdlib.Context{Tape: tape, State: map[string]any{}}
	x := tape.NewVar(autodiff.MatrixShape(len(r.Inputs.X), d), flat(r.Inputs.X))
	y := tape.NewVar(autodiff.MatrixShape(len(r.Inputs.Y), d), flat(r.Inputs.Y))
	la, lb := tape.VarVec(r.Inputs.LogA), tape.VarVec(r.Inputs.LogB)
	n := named(tape, r, la, lb, mode)
	n[argBackend] = stdlib.Value{Type: lang.StringType, Str: backend}
	v, err := impls[fn](c, []stdlib.Value{stdlib.ADValue(x), stdlib.ADValue(y)}, n)
	if err != nil {
		t.Fatalf("%s backend=%s: %v", fn, backend, err)
	}
	if err := tape.Gradient(v.AD); err != nil {
		t.Fatal(err)
	}
	gpu := usedGPU(c.State)
	return tapeResult{
		value: tape.Scalar(v.AD),
		x:     slices.Clone(tape.Adj(x)), y: slices.Clone(tape.Adj(y)),
		la: slices.Clone(tape.Adj(la)), lb: slices.Clone(tape.Adj(lb)),
		usedGPUContext: gpu,
	}
}

// usedGPU reports whether a chain's built-in state holds a GPU workspace.
func usedGPU(state map[string]any) bool {
	s, _ := state[stateKey].(*chainState)
	return s != nil && slices.ContainsFunc(s.chans, func(cs *channelState) bool { return cs.gpu != nil })
}

// closeRel reports whether got and want agree to rtol relative to the
// largest magnitude in want (and 1e-300, for all-zero gradients).
func closeRel(got, want []float64, rtol float64) (int, bool) {
	scale := 1e-300
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= rtol*scale) {
			return i, false
		}
	}
	return 0, true
}

// TestCUDABackendThroughTape evaluates sinkhorn and sinkhorn_ot on every
// shared reference vector through the tape node with backend = "cuda" and
// backend = "cpu", in both gradient modes, and requires the values and the
// adjoints of x, y, log_a and log_b to agree to 1e-9 relative (issue 7).
func TestCUDABackendThroughTape(t *testing.T) {
	if !cudaAvailable() {
		t.Fatal("built with the cuda tag but no device is usable")
	}
	impls := stdlib.Impls{}
	Register(impls)
	const rtol = 1e-9
	for _, r := range shared.SinkhornRefs(t) {
		for _, fn := range []string{"sinkhorn", "sinkhorn_ot"} {
			for _, mode := range []string{"unrolled", "envelope"} {
				t.Run(r.Name+"/"+fn+"/"+mode, func(t *testing.T) {
					cpu := evalBackend(t, impls, fn, r, "cpu", mode)
					gpu := evalBackend(t, impls, fn, r, "cuda", mode)
					if cpu.usedGPUContext || !gpu.usedGPUContext {
						t.Fatalf("GPU state: cpu %v, cuda %v; want false, true", cpu.usedGPUContext, gpu.usedGPUContext)
					}
					// Relative to max |ot_*| (the reference files' value
					// scale): the divergence is a difference of OT terms.
					scale := math.Max(math.Abs(cpu.value), r.Tolerance.ValueScale)
					if !(math.Abs(gpu.value-cpu.value) <= rtol*scale) {
						t.Errorf("value: cuda %.17g, cpu %.17g", gpu.value, cpu.value)
					}
					for _, a := range []struct {
						name      string
						got, want []float64
					}{{"x", gpu.x, cpu.x}, {"y", gpu.y, cpu.y}, {"log_a", gpu.la, cpu.la}, {"log_b", gpu.lb, cpu.lb}} {
						if i, ok := closeRel(a.got, a.want, rtol); !ok {
							t.Errorf("d/d%s[%d]: cuda %.17g, cpu %.17g", a.name, i, a.got[i], a.want[i])
						}
					}
				})
			}
		}
	}
}

// TestAutoBackend checks that backend = "auto" keeps small problems (in
// 2-D) on the CPU and sends problems from autoTermsND kernel terms to the
// GPU, with the same value as the CPU.
func TestAutoBackend(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	side := int(math.Ceil(math.Sqrt(autoTermsND)))
	for _, n := range []int{side / 4, side} {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		r := new(reference)
		for range n {
			r.Inputs.X = append(r.Inputs.X, []float64{rng.Float64(), rng.Float64()})
			r.Inputs.Y = append(r.Inputs.Y, []float64{0.2 + rng.Float64(), rng.Float64()})
			r.Inputs.LogA = append(r.Inputs.LogA, -math.Log(float64(n)))
			r.Inputs.LogB = append(r.Inputs.LogB, -math.Log(float64(n)))
		}
		r.Inputs.Eps, r.Inputs.T, r.Inputs.Balanced = 0.05, 20, true
		auto := evalBackend(t, impls, "sinkhorn", r, "auto", "unrolled")
		cpu := evalBackend(t, impls, "sinkhorn", r, "cpu", "unrolled")
		if want := n*n >= autoTermsND; auto.usedGPUContext != want {
			t.Errorf("n = m = %d: auto used the GPU = %v, want %v", n, auto.usedGPUContext, want)
		}
		if math.Abs(auto.value-cpu.value) > 1e-9*math.Abs(cpu.value) {
			t.Errorf("n = m = %d: auto %.17g, cpu %.17g", n, auto.value, cpu.value)
		}
		if i, ok := closeRel(auto.x, cpu.x, 1e-9); !ok {
			t.Errorf("n = m = %d: d/dx[%d] auto %.17g, cpu %.17g", n, i, auto.x[i], cpu.x[i])
		}
	}
}

// TestCUDAGridThroughTape checks that sinkhorn and sinkhorn_ot on two
// copies of one constant unit grid (Experiment D's shape: 16×16, eps = 1,
// T = 64) give, with backend = "cuda" (the GPU's grid path), the value and
// log_a adjoint of backend = "cpu" (package ot's grid path) to 1e-9
// relative, and that backend = "auto" takes such a grid to the GPU.
func TestCUDAGridThroughTape(t *testing.T) {
	impls := stdlib.Impls{}
	Register(impls)
	const h, w = 16, 16
	n := h * w
	pts := ot.Grid{H: h, W: w}.Points()
	rng := rand.New(rand.NewPCG(9, 2))
	la, lb := make([]float64, n), make([]float64, n)
	for i := range la {
		la[i] = math.Log(1e-6 + rng.Float64())
		lb[i] = math.Log(1e-6 + rng.Float64())
	}
	eval := func(fn, backend string, rho float64) (float64, []float64, bool) {
		v, g, state := logWeightCall(t, impls, fn, pts, la, lb, 1, 64, rho, backend)
		return v, g, usedGPU(state)
	}
	for _, fn := range []string{"sinkhorn", "sinkhorn_ot"} {
		vc, gc, _ := eval(fn, "cpu", 10)
		vg, gg, used := eval(fn, "cuda", 10)
		if !used {
			t.Fatalf("%s: backend cuda did not use the GPU", fn)
		}
		if _, _, used := eval(fn, "auto", 10); !used {
			t.Errorf("%s: backend auto kept a %d×%d grid on the CPU", fn, h, w)
		}
		if math.Abs(vg-vc) > 1e-9*math.Abs(vc) {
			t.Errorf("%s: value cuda %.17g, cpu %.17g", fn, vg, vc)
		}
		if i, ok := closeRel(gg, gc, 1e-9); !ok {
			t.Errorf("%s: d/dlog_a[%d] cuda %.17g, cpu %.17g", fn, i, gg[i], gc[i])
		}
	}
}
