//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// The tests and benchmarks of this file need an NVIDIA GPU: they are built
// only with the cuda tag, and such a test binary exits at start (in
// gorgonia.org/cu's initialization) on a machine without one.

// gpuRtol is the agreement required between the GPU and package ot (issue
// 7: 1e-9 relative). The GPU's exp and its fused multiply-adds round
// differently from package ot's kernels.
const gpuRtol = 1e-9

func openDevice(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func gpuBackend(w *Workspace) backend {
	return backend{
		divergence: func(x, y, la, lb []float64, opt ot.Options, grad *ot.Grad) (ot.Result, error) {
			return w.Divergence(x, y, la, lb, opt, nil, grad)
		},
		ot: w.OT,
	}
}

// TestGPU compares the GPU's values and gradients (both modes) with package
// ot to 1e-9 relative, and with the reference vectors at their tolerance,
// on the fused path (where the problem fits it; in spatial order with
// truncation, plain, with the backward pass's sweeps unpaired, with its
// fills in phases of their own, and with the forward sweeps' two passes)
// and on the multi-launch path (as CUDA graphs, and launch by launch).
func TestGPU(t *testing.T) {
	dev := openDevice(t)
	t.Logf("device: %s", dev.Name())
	for _, c := range append(referenceCases(t), generatedCases()...) {
		for _, path := range []string{"fused", "fused-plain", "fused-unpaired", "fused-noprefill", "fused-nopivot",
			"multi-launch", "multi-launch-nograph"} {
			w := dev.NewWorkspace(c.d)
			w.e.fusedPlain = path == "fused-plain"
			w.e.fusedUnpaired = path == "fused-unpaired"
			w.e.fusedNoPrefill = path == "fused-noprefill"
			w.e.fusedNoPivot = path == "fused-nopivot"
			if strings.HasPrefix(path, "multi-launch") {
				w.e.fusedMax, w.e.noGraph = 0, path == "multi-launch-nograph"
			} else if !w.e.fusedOK(c.n(), c.m()) {
				w.Close()
				continue
			}
			t.Run(c.name+"/"+path, func(t *testing.T) {
				defer w.Close()
				gpuCase(t, c, w)
				if path == "multi-launch" && (w.e.graphErr != nil || w.e.graphBuilds == 0) {
					t.Errorf("no graph made (%d built): %v", w.e.graphBuilds, w.e.graphErr)
				}
			})
		}
	}
}

// TestGPUBatch is TestFusedBatch on the GPU: evaluations batched into one
// launch give bitwise the results of the same evaluations alone.
func TestGPUBatch(t *testing.T) {
	dev := openDevice(t)
	testFusedBatch(t, dev, nil)
}

// TestGPUGrid compares the GPU's grid path with package ot's grid path to
// 1e-9 relative (checkGridCase).
func TestGPUGrid(t *testing.T) {
	dev := openDevice(t)
	for _, c := range gridCases() {
		t.Run(c.name, func(t *testing.T) {
			w := dev.NewWorkspace(2)
			defer w.Close()
			checkGridCase(t, w.e, c, gpuRtol)
		})
	}
}

// TestGPUCulling checks on the GPU that the fused kernel's culling of
// blocks changes no bit of any value or gradient (both modes).
func TestGPUCulling(t *testing.T) {
	dev := openDevice(t)
	for _, c := range cullingCases() {
		t.Run(c.name, func(t *testing.T) {
			var out [2][2]batchOutcome
			for k, mode := range []cullMode{cullAlways, cullNever} {
				w := dev.NewWorkspace(c.d)
				w.e.fusedCull = mode
				out[k] = bothModes(w.e, c)
				w.Close()
			}
			for mode := range out[0] {
				sameOutcome(t, c.name, out[0][mode], out[1][mode])
			}
		})
	}
}

// TestGPUPair checks on the GPU that the fused kernel's backward pass
// with its sweeps paired (FD_PAIR) and its fills beside the sweeps
// (FD_PREFILL) gives the same bits every time (repeated evaluations: a
// race would show as a difference) and agrees with the pass without each
// to 1e-12 relative (bitwise on the host kernels, TestFusedPair; here up
// to the compiler's contraction into fused multiply-adds).
func TestGPUPair(t *testing.T) {
	dev := openDevice(t)
	eval := func(c *testCase, off func(e *engine)) batchOutcome {
		w := dev.NewWorkspace(c.d)
		defer w.Close()
		if off != nil {
			off(w.e)
		}
		return unrolledOutcome(w.e, c, fullGrad(c.n(), c.m(), c.d))
	}
	for _, c := range fusedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want := eval(c, nil)
			for k := 1; k < 3; k++ {
				sameOutcome(t, fmt.Sprintf("%s: repeat %d", c.name, k), eval(c, nil), want)
			}
			for _, v := range fusedBackwardVariants {
				got := eval(c, v.off)
				if got.err != nil || want.err != nil {
					t.Fatalf("errors %v and %v", got.err, want.err)
				}
				scale := math.Max(math.Abs(want.res.OTxy), math.Abs(want.res.OTxx))
				checkRel(t, v.name+" off: divergence", got.res.Divergence, want.res.Divergence, scale, 1e-12)
				checkGradsRel(t, v.name+" off: gradient", got.grad, want.grad, 1e-12)
			}
		})
	}
}

// TestGPUExecThread checks that the device's work gives the same bits on
// the calling goroutine's thread (exec's default) as on the context's own
// thread (viaThread).
func TestGPUExecThread(t *testing.T) {
	dev := openDevice(t)
	c := cullingCases()[0]
	var out [2]batchOutcome
	for k, via := range []bool{false, true} {
		dev.viaThread = via
		w := dev.NewWorkspace(c.d)
		out[k] = bothModes(w.e, c)[0]
		w.Close()
	}
	dev.viaThread = false
	sameOutcome(t, c.name, out[0], out[1])
}

// BenchmarkExec measures a round trip of exec with no device work: on the
// calling goroutine's thread (the context made current for the call), and
// handed over to the context's own thread (viaThread).
func BenchmarkExec(b *testing.B) {
	dev := openDevice(b)
	for _, via := range []bool{false, true} {
		b.Run(fmt.Sprintf("viaThread=%v", via), func(b *testing.B) {
			dev.viaThread = via
			defer func() { dev.viaThread = false }()
			for b.Loop() {
				if err := dev.exec(func(launcher) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// gpuCase is one case of TestGPU on the workspace w.
func gpuCase(t *testing.T, c *testCase, w *Workspace) {
	compareWithCPU(t, c, gpuBackend(w), gpuRtol, true)

	// A cached y–y term gives the uncached divergence.
	st, err := w.SelfTerm(c.y, c.lb, c.opt)
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := fullGrad(c.n(), c.m(), c.d), fullGrad(c.n(), c.m(), c.d)
	want, err := w.Divergence(c.x, c.y, c.la, c.lb, c.opt, nil, g1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Divergence(c.x, c.y, c.la, c.lb, c.opt, st, g2)
	if err != nil {
		t.Fatal(err)
	}
	scale := max(math.Abs(want.OTxy), math.Abs(want.OTxx), math.Abs(want.OTyy))
	checkRel(t, "cached divergence", got.Divergence, want.Divergence, scale, gpuRtol)
	checkRel(t, "cached term", st.Value(), want.OTyy, scale, gpuRtol)
	checkArrayRel(t, "cached grad X", g2.X, g1.X, gpuRtol)
	checkArrayRel(t, "cached grad LogA", g2.LogA, g1.LogA, gpuRtol)
}

// TestGPUClosed checks that a closed device refuses work.
func TestGPUClosed(t *testing.T) {
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewWorkspace(1)
	if _, err := w.OT([]float64{0}, []float64{1}, []float64{0}, []float64{0}, ot.Options{Eps: 1, Balanced: true, Iters: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.OT([]float64{0}, []float64{1}, []float64{0}, []float64{0}, ot.Options{Eps: 1, Balanced: true, Iters: 2}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("OT on a closed device: %v, want ErrClosed", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// benchProblem returns n uniform points in the unit square for each
// measure, with uniform weights.
func benchProblem(n int) (x, y, la, lb []float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	x = make([]float64, 2*n)
	y = make([]float64, 2*n)
	for i := range x {
		x[i] = rng.Float64()
		y[i] = 0.3 + rng.Float64()
	}
	la = make([]float64, n)
	lb = make([]float64, n)
	for i := range la {
		la[i] = -math.Log(float64(n))
		lb[i] = la[i]
	}
	return x, y, la, lb
}

// BenchmarkDivergence compares package ot (all cores) and the GPU on the
// debiased divergence with n = m points in 2-D, T = 80, balanced,
// eps = 0.01: forward (value only) and forward+backward (value and the
// unrolled gradients of x and log_a). Run with -benchtime 1x for the large
// sizes; the CPU at n = 16384 takes tens of seconds per evaluation.
func BenchmarkDivergence(b *testing.B) {
	dev := openDevice(b)
	b.Logf("device: %s", dev.Name())
	opt := ot.Options{Eps: 0.01, Balanced: true, Iters: 80}
	// Issue 7's sizes (256, 1024, 4096, 16384) and the ones between the
	// small two, where backend = "auto" switches to the GPU.
	for _, n := range []int{64, 128, 256, 512, 1024, 2048, 4096, 16384} {
		x, y, la, lb := benchProblem(n)
		for _, backward := range []bool{false, true} {
			pass := "forward"
			if backward {
				pass = "backward"
			}
			grad := func() *ot.Grad {
				if !backward {
					return nil
				}
				return &ot.Grad{X: make([]float64, 2*n), LogA: make([]float64, n)}
			}
			b.Run("cpu/n="+strconv.Itoa(n)+"/"+pass, func(b *testing.B) {
				w := ot.NewWorkspace(n, n, 2)
				defer w.Close()
				g := grad()
				for b.Loop() {
					if _, err := w.Divergence(x, y, la, lb, opt, nil, g); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("cuda/n="+strconv.Itoa(n)+"/"+pass, func(b *testing.B) {
				w := dev.NewWorkspace(2)
				defer w.Close()
				g := grad()
				for b.Loop() {
					if _, err := w.Divergence(x, y, la, lb, opt, nil, g); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCrossover measures one evaluation of the debiased divergence
// with the unrolled gradient of x (T = 80, eps = resolution², n = m) on
// package ot (all cores), on the GPU's fused path (forced as far as its
// shared memory allows, culling blocks where cullPays says; "cull": every
// problem culling, "nocull": none, and "plain": in the caller's order
// without truncation, up to 256) and on its multi-launch path (as a CUDA
// graph, and launch by launch: "nograph"), in 1-D and 2-D: the sizes
// where backend = "auto" and the fused path should switch.
func BenchmarkCrossover(b *testing.B) {
	dev := openDevice(b)
	b.Logf("device: %s", dev.Name())
	for _, d := range []int{1, 2} {
		for _, n := range []int{16, 32, 64, 120, 256, 512, 1024, 2048} {
			x, y, la, lb, eps := crossoverProblem(b, n, d)
			opt := ot.Options{Eps: eps, Balanced: true, Iters: 80}
			g := &ot.Grad{X: make([]float64, n*d)}
			run := func(name string, eval func() error) {
				b.Run(fmt.Sprintf("d=%d/n=%d/%s", d, n, name), func(b *testing.B) {
					if err := eval(); err != nil { // first use: allocation, JIT
						b.Fatal(err)
					}
					for b.Loop() {
						if err := eval(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			cpu := ot.NewWorkspace(n, n, d)
			run("cpu", func() error { _, err := cpu.Divergence(x, y, la, lb, opt, nil, g); return err })
			cpu.Close()
			for _, name := range []string{"cuda-fused", "cuda-cull", "cuda-nocull", "cuda-plain", "cuda-multi", "cuda-multi-nograph"} {
				w := dev.NewWorkspace(d)
				switch name {
				case "cuda-fused":
					w.e.fusedMax = 2048
				case "cuda-cull":
					w.e.fusedMax, w.e.fusedCull = 2048, cullAlways
				case "cuda-nocull":
					w.e.fusedMax, w.e.fusedCull = 2048, cullNever
				case "cuda-plain":
					w.e.fusedMax, w.e.fusedPlain = 2048, true
				case "cuda-multi-nograph":
					w.e.fusedMax, w.e.noGraph = 0, true
				default:
					w.e.fusedMax = 0
				}
				if w.e.fusedMax == 0 || (w.e.fusedOK(n, n) && (name == "cuda-fused" || n <= 256)) {
					run(name, func() error { _, err := w.Divergence(x, y, la, lb, opt, nil, g); return err })
				}
				w.Close()
			}
		}
	}
}

// BenchmarkFusedThreads measures six concurrent evaluations of Experiment
// A's size (n = m = 120, 1-D, T = 80, unrolled gradient of x: one
// gradient's launch) with nt threads per problem (S = nt/128 rounded down
// to a power of two threads per row), with and without the culling of
// blocks (cullPays culls at this size), as one cohort: the fused
// kernel's tuning.
func BenchmarkFusedThreads(b *testing.B) {
	dev := openDevice(b)
	x, y, la, lb, eps := crossoverProblem(b, 120, 1)
	opt := ot.Options{Eps: eps, Balanced: true, Iters: 80}
	for _, nt := range []int{128, 256, 512} {
		for _, noCull := range []bool{false, true} {
			b.Run(fmt.Sprintf("nt=%d/nocull=%v", nt, noCull), func(b *testing.B) {
				ws := make([]*Workspace, 6)
				for i := range ws {
					ws[i] = dev.NewWorkspace(1)
					ws[i].e.fusedNT = nt
					if noCull {
						ws[i].e.fusedCull = cullNever
					}
					defer ws[i].Close()
				}
				benchConcurrent(b, ws, x, y, la, lb, opt, true)
			})
		}
	}
}

// BenchmarkFusedVariants measures one evaluation and six concurrent ones
// (one gradient's launch, as a cohort) of Experiment A's size (n = m =
// 120, 1-D, T = 80, unrolled gradient of x) with the fused kernel's
// default (the backward pass's sweeps paired and its fills beside them,
// the forward sweeps in one pass from a pivot), with each of these turned
// off in turn, and with all of them off.
func BenchmarkFusedVariants(b *testing.B) {
	dev := openDevice(b)
	x, y, la, lb, eps := crossoverProblem(b, 120, 1)
	opt := ot.Options{Eps: eps, Balanced: true, Iters: 80}
	for _, k := range []int{1, 6} {
		for _, v := range []struct {
			name string
			set  func(e *engine)
		}{
			{"default", func(*engine) {}},
			{"noprefill", func(e *engine) { e.fusedNoPrefill = true }},
			{"unpaired", func(e *engine) { e.fusedUnpaired = true }},
			{"nopivot", func(e *engine) { e.fusedNoPivot = true }},
			{"none", func(e *engine) { e.fusedUnpaired, e.fusedNoPivot = true, true }},
		} {
			b.Run(fmt.Sprintf("K=%d/%s", k, v.name), func(b *testing.B) {
				ws := make([]*Workspace, k)
				for i := range ws {
					ws[i] = dev.NewWorkspace(1)
					v.set(ws[i].e)
					defer ws[i].Close()
				}
				benchConcurrent(b, ws, x, y, la, lb, opt, true)
			})
		}
	}
}

// BenchmarkBatch measures K concurrent evaluations of Experiment A's size
// (n = m = 120, 1-D, T = 80, unrolled gradient of x) on the GPU, each from
// its own workspace, as K crn replicates (times the chains) submit them:
// batched by the device into one launch per round, gathered by the quiet
// window or (cohort/) as the cohort of a crn call's replicates.
func BenchmarkBatch(b *testing.B) {
	dev := openDevice(b)
	x, y, la, lb, eps := crossoverProblem(b, 120, 1)
	opt := ot.Options{Eps: eps, Balanced: true, Iters: 80}
	for _, k := range []int{1, 6, 24, 96} {
		for _, cohort := range []bool{false, true} {
			name := fmt.Sprintf("K=%d", k)
			if cohort {
				name = "cohort/" + name
			}
			b.Run(name, func(b *testing.B) {
				ws := make([]*Workspace, k)
				for i := range ws {
					ws[i] = dev.NewWorkspace(1)
					defer ws[i].Close()
				}
				benchConcurrent(b, ws, x, y, la, lb, opt, cohort)
			})
		}
	}
}

// benchConcurrent measures rounds of concurrent evaluations (one per
// workspace, as crn replicates and chains submit them) of the divergence
// of the 1-D measures x and y with the unrolled gradient of x; the
// evaluations of a round form a cohort (as a crn call's replicates do)
// when cohort is set.
func benchConcurrent(b *testing.B, ws []*Workspace, x, y, la, lb []float64, opt ot.Options, cohort bool) {
	gs := make([]*ot.Grad, len(ws))
	for i := range gs {
		gs[i] = &ot.Grad{X: make([]float64, len(x))}
	}
	round := func() {
		var c *stdlib.Cohort
		if cohort {
			c = stdlib.NewCohort(len(ws))
		}
		concurrently(len(ws), c, func(i int) {
			ws[i].SetCohort(c)
			if _, err := ws[i].Divergence(x, y, la, lb, opt, nil, gs[i]); err != nil {
				b.Error(err)
			}
		})
	}
	round()
	for b.Loop() {
		round()
	}
}
