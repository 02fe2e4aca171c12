package cuda

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/stdlib/ot"
)

// hostRtol is the agreement required between the host-compiled kernels and
// package ot (issue 7: 1e-12 relative).
const hostRtol = 1e-12

// hostFusedMax is the largest side the fused configurations of the host
// tests take (beyond the default fusedMaxPoints: the kernel's limits are
// its shared memory).
const hostFusedMax = 2048

// hostConfig is a configuration of the engine under test: the
// multi-launch path with a shortest reduction chunk (fusedNT = 0), or the
// fused path with a thread count per problem.
type hostConfig struct {
	name              string
	minChunk, fusedNT int
	plain             bool // fused, in the caller's order, without truncation
}

// hostBackend returns a backend running the engine on the host-compiled
// kernels in configuration hc.
func hostBackend(t *testing.T, bin string, d int, hc hostConfig) (backend, *engine, *hostKernels) {
	h := startHostKernels(t, bin)
	e := newEngine(h, d)
	e.minChunk = hc.minChunk
	e.fusedNT = hc.fusedNT
	e.fusedPlain = hc.plain
	e.fusedMax = 0
	if hc.fusedNT > 0 {
		e.fusedMax = hostFusedMax
	}
	e.guard = 7
	b := backend{
		divergence: func(x, y, la, lb []float64, opt ot.Options, grad *ot.Grad) (ot.Result, error) {
			return e.divergence(x, y, la, lb, opt, nil, grad)
		},
		ot: e.ot,
	}
	return b, e, h
}

// TestHostKernels runs the kernels of sinkhorn.cu, compiled as host C++,
// through the engine (the orchestration the GPU runs), in guard mode (a
// read outside a buffer or of memory not written first gives NaN, a write
// outside a buffer is reported), and compares every value and gradient with
// package ot to 1e-12 relative, and with the reference vectors at their own
// tolerance, on both paths: the multi-launch kernels and the fused kernel
// (d ≤ 3; in spatial order with truncation, and for small problems also in
// the caller's order without). Small problems also run with reductions
// split in chunks of 2, and the fused kernel with two thread counts, so
// that the combination of partial results (chunks, segments of rows,
// rounds of rows) is exercised,
// and with subsets of the gradients and a cached y–y term; the two 256×256
// grid files (a few seconds each) check the divergence and all its
// gradients in both modes once.
func TestHostKernels(t *testing.T) {
	bin := buildHostKernels(t)
	cases := append(referenceCases(t), generatedCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			configs := []hostConfig{{name: "multi-launch", minChunk: defaultMinChunk}}
			if c.small {
				configs = append(configs, hostConfig{name: "multi-launch, chunks of 2", minChunk: 2})
			}
			if c.d <= fusedMaxDim && max(c.n(), c.m()) <= hostFusedMax {
				configs = append(configs, hostConfig{name: "fused, 32 threads", minChunk: defaultMinChunk, fusedNT: 32})
				if c.small {
					configs = append(configs, hostConfig{name: "fused, 64 threads", minChunk: defaultMinChunk, fusedNT: 64},
						hostConfig{name: "fused, 32 threads, plain", minChunk: defaultMinChunk, fusedNT: 32, plain: true})
				}
			}
			for _, hc := range configs {
				b, e, h := hostBackend(t, bin, c.d, hc)
				if hc.minChunk == 2 {
					if nch, _ := split(c.n(), c.m(), hc.minChunk); nch < 2 {
						t.Fatalf("chunks of %d do not split a reduction of %d terms", hc.minChunk, c.m())
					}
				}
				compareWithCPU(t, c, b, hostRtol, c.small)
				if c.small {
					checkSelfTerm(t, c, e)
				}
				// Every launch took the path of the configuration.
				fused := h.byKernel[kFused]
				if (hc.fusedNT > 0) != (fused > 0) || (fused > 0 && fused != h.launches) {
					t.Errorf("%s: %d launches of which %d fused", hc.name, h.launches, fused)
				}
				if err := h.exec(e.release); err != nil {
					t.Fatal(err)
				}
				if t.Failed() {
					t.Logf("configuration: %s", hc.name)
					return
				}
			}
		})
	}
}

// checkSelfTerm checks that a cached y–y term gives bitwise the divergence
// and x-gradients of the uncached evaluation, and the y-gradients of the
// x–y problem alone.
func checkSelfTerm(t *testing.T, c *testCase, e *engine) {
	t.Helper()
	n, m, d := c.n(), c.m(), c.d
	opt := c.opt
	st, err := e.selfTerm(c.y, c.lb, opt)
	if err != nil {
		t.Fatal(err)
	}
	full, cached := fullGrad(n, m, d), fullGrad(n, m, d)
	want, err := e.divergence(c.x, c.y, c.la, c.lb, opt, nil, full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.divergence(c.x, c.y, c.la, c.lb, opt, st, cached)
	if err != nil {
		t.Fatal(err)
	}
	if got.Divergence != want.Divergence || got.OTyy != want.OTyy || !got.YYFromCache || st.value() != want.OTyy || st.mass != want.MassB {
		t.Errorf("cached y–y: divergence %v, ot_yy %v (term %v, mass %v); uncached %v, %v (mass %v)",
			got.Divergence, got.OTyy, st.value(), st.mass, want.Divergence, want.OTyy, want.MassB)
	}
	for k := range full.X {
		if cached.X[k] != full.X[k] {
			t.Fatalf("cached y–y: grad X[%d] = %v, uncached %v", k, cached.X[k], full.X[k])
		}
	}
	for k := range full.LogA {
		if cached.LogA[k] != full.LogA[k] {
			t.Fatalf("cached y–y: grad LogA[%d] = %v, uncached %v", k, cached.LogA[k], full.LogA[k])
		}
	}
	// With the y–y term cached, y and log_b get the x–y problem's gradient
	// (and, balanced, the mass term).
	xy := fullGrad(n, m, d)
	if _, err := e.ot(c.x, c.y, c.la, c.lb, opt, xy); err != nil {
		t.Fatal(err)
	}
	if opt.Balanced {
		k := opt.Eps * (want.MassA - want.MassB)
		for j := range xy.LogB {
			xy.LogB[j] -= k * math.Exp(c.lb[j])
		}
	} else {
		// OT's gradient includes that of the constant eps·m_a·m_b, which
		// cancels in the divergence.
		for j := range xy.LogB {
			xy.LogB[j] -= opt.Eps * math.Exp(c.lb[j]) * want.MassA
		}
	}
	checkArrayRel(t, "cached y–y grad Y", cached.Y, xy.Y, 1e-15)
	checkArrayRel(t, "cached y–y grad LogB", cached.LogB, xy.LogB, 1e-12)
}

// noDevice is an executor that fails the test if the engine reaches the
// device: invalid inputs must be rejected before.
type noDevice struct{ t *testing.T }

func (x noDevice) exec(func(launcher) error) error {
	x.t.Error("the engine reached the device with invalid inputs")
	return errors.New("no device")
}

func TestInvalidInputs(t *testing.T) {
	x := []float64{0, 1, 2, 3}
	y := []float64{0.5, 1.5}
	la := []float64{math.Log(0.5), math.Log(0.5)}
	lb := []float64{0}
	ok := ot.Options{Eps: 0.1, Balanced: true, Iters: 5}
	other := &selfTerm{m: 1, opt: ot.Options{Eps: 0.2, Balanced: true, Iters: 5}}
	tests := []struct {
		name           string
		x, y, la, lb   []float64
		opt            ot.Options
		yy             *selfTerm
		grad           *ot.Grad
		want           string
		divergenceOnly bool
	}{
		{name: "eps", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 0, Balanced: true, Iters: 5}, want: "eps must be"},
		{name: "iters", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 0.1, Balanced: true}, want: "iters must be"},
		{name: "rho", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 0.1, Rho: math.Inf(1), Iters: 5}, want: "needs rho"},
		{name: "mode", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 0.1, Balanced: true, Iters: 5, Grad: 7}, want: "unknown gradient mode"},
		{name: "tol", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 0.1, Balanced: true, Iters: 5, Tol: 1e-6, Grad: ot.GradEnvelope}, want: "runs on the CPU only"},
		{name: "empty", x: nil, y: y, la: nil, lb: lb, opt: ok, want: "has no points"},
		{name: "coordinates", x: x[:3], y: y, la: la, lb: lb, opt: ok, want: "coordinates"},
		{name: "nan point", x: []float64{0, math.NaN(), 2, 3}, y: y, la: la, lb: lb, opt: ok, want: "coordinate 2 of point 1"},
		{name: "+inf weight", x: x, y: y, la: []float64{0, math.Inf(1)}, lb: lb, opt: ok, want: "log-weight 2"},
		{name: "no weight", x: x, y: y, la: []float64{math.Inf(-1), math.Inf(-1)}, lb: lb, opt: ok, want: "no positive weight"},
		{name: "masses", x: x, y: y, la: []float64{0, 0}, lb: lb, opt: ok, want: "equal masses"},
		{name: "grad length", x: x, y: y, la: la, lb: lb, opt: ok, grad: &ot.Grad{X: make([]float64, 3)}, want: "gradient slice X"},
		{name: "cached term", x: x, y: y, la: la, lb: lb, opt: ok, yy: other, want: "cached y–y term", divergenceOnly: true},
		// package ot's scale rules (ot.CheckScale), as on the CPU.
		{name: "coordinates of 1e200", x: []float64{1e200, 1, 2, 3}, y: y, la: la, lb: lb, opt: ok, want: "squared distances overflow"},
		{name: "eps of 1e-310", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 1e-310, Balanced: true, Iters: 5}, want: "C/eps overflows"},
		{name: "eps of 1e12", x: x, y: y, la: la, lb: lb, opt: ot.Options{Eps: 1e12, Balanced: true, Iters: 5}, want: "more than 2^26 times"},
	}
	e := newEngine(noDevice{t}, 2)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.divergence(tt.x, tt.y, tt.la, tt.lb, tt.opt, tt.yy, tt.grad)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Divergence: error %v, want one containing %q", err, tt.want)
			}
			if tt.divergenceOnly {
				return
			}
			_, err = e.ot(tt.x, tt.y, tt.la, tt.lb, tt.opt, tt.grad)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OT: error %v, want one containing %q", err, tt.want)
			}
		})
	}
	// The y–y term alone checks the scale of y.
	if _, err := e.selfTerm([]float64{1e200, 1, 0, 0}, la, ok); err == nil || !strings.Contains(err.Error(), "squared distances overflow") {
		t.Errorf("SelfTerm: error %v, want the scale error", err)
	}
	if _, err := e.selfTerm(x, la, ot.Options{Eps: 1e-310, Balanced: true, Iters: 5}); err == nil || !strings.Contains(err.Error(), "C/eps overflows") {
		t.Errorf("SelfTerm: error %v, want the scale error", err)
	}
}

// TestSplit checks the chunking of reductions against its definition.
func TestSplit(t *testing.T) {
	for _, tt := range []struct{ nout, nred, minChunk int }{
		{1, 1, 32}, {7, 5, 32}, {7, 5, 2}, {256, 256, 32}, {256, 256, 2}, {1024, 1024, 32},
		{16384, 16384, 32}, {1 << 20, 1 << 20, 32}, {1, 1 << 30, 1}, {3, 100, 1000},
	} {
		nch, chunk := split(tt.nout, tt.nred, tt.minChunk)
		if nch < 1 || nch > maxGridY || chunk < 1 || nch*chunk < tt.nred || (nch-1)*chunk >= tt.nred {
			t.Errorf("split(%d, %d, %d) = %d chunks of %d", tt.nout, tt.nred, tt.minChunk, nch, chunk)
			continue
		}
		if nch > 1 && chunk < tt.minChunk {
			t.Errorf("split(%d, %d, %d): chunks of %d terms, below the minimum", tt.nout, tt.nred, tt.minChunk, chunk)
		}
		if nch < maxGridY/2 && chunk > tt.minChunk && tt.nout*nch < targetThreads/2 {
			t.Errorf("split(%d, %d, %d) = %d chunks of %d: %d threads, could use more", tt.nout, tt.nred, tt.minChunk, nch, chunk, tt.nout*nch)
		}
	}
}
