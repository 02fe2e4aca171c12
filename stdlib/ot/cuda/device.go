//go:build cuda

package cuda

import (
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
	"gorgonia.org/cu"
)

// ptxModule is kernels/sinkhorn.cu compiled by `go generate` for compute
// capability 8.0; the driver JIT-compiles it for the GPU at hand.
//
//go:embed kernels/sinkhorn.ptx
var ptxModule string

// Available reports whether the CUDA driver sees at least one device.
//
// In a binary built with the cuda tag, gorgonia.org/cu's initialization has
// already called cuInit and exited the process if that failed (no driver,
// or no device), so a running process normally gets true.
func Available() bool {
	n, err := cu.NumDevices()
	return err == nil && n > 0
}

// ErrClosed is returned by the methods of a closed Device and of its
// workspaces.
var ErrClosed = errors.New("cuda: device closed")

// Device is one GPU with a context and the loaded kernels. A goroutine
// locked to its OS thread creates the context and destroys it; the
// device's work runs on the goroutine that asks for it, with the context
// made current on its thread for the call. The evaluations of the
// workspaces of one Device are serialized, except that concurrent
// evaluations on the fused path (small problems) are batched into one
// launch. A Device is safe for concurrent use.
type Device struct {
	name string
	ctx  cu.CUContext
	fns  [numKernels]cu.Function
	comb combiner

	mu     sync.Mutex // held during an evaluation; guards closed
	closed bool
	work   chan func()
	done   chan error
	// viaThread (tests, benchmarks) runs the device's work on the
	// context's own thread instead, handed over by a channel.
	viaThread bool
}

// Open creates a context on the GPU with the given ordinal (0 for the
// first) and loads the kernels.
func Open(ordinal int) (*Device, error) {
	d := &Device{work: make(chan func()), done: make(chan error, 1)}
	ready := make(chan error)
	go d.serve(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// serve owns the context: it creates it on its locked thread, runs the
// work sent by exec (viaThread), and destroys the context when the device
// is closed. It never unlocks the thread, which therefore exits with the
// goroutine.
func (d *Device) serve(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		ready <- fmt.Errorf("cuda: device %d: %w", ordinal, err)
		return
	}
	if d.name, err = dev.Name(); err != nil {
		ready <- fmt.Errorf("cuda: device %d: %w", ordinal, err)
		return
	}
	ctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		ready <- fmt.Errorf("cuda: creating a context on %s: %w", d.name, err)
		return
	}
	d.ctx = ctx
	mod, err := cu.LoadData(ptxModule)
	if err != nil {
		ctx.Destroy()
		ready <- fmt.Errorf("cuda: loading the kernels on %s: %w", d.name, err)
		return
	}
	for k := range numKernels {
		if d.fns[k], err = mod.Function(k.name()); err != nil {
			mod.Unload()
			ctx.Destroy()
			ready <- fmt.Errorf("cuda: kernel %s: %w", k.name(), err)
			return
		}
	}
	close(ready)
	for f := range d.work {
		f()
	}
	d.done <- errors.Join(mod.Unload(), ctx.Destroy())
}

// Default returns the process's device: GPU 0, opened at the first call
// and never closed. The workspaces of every chain and every crn replicate
// of a process share its one context, so that their concurrent
// evaluations are batched.
func Default() (*Device, error) {
	defaultDevice.once.Do(func() {
		defaultDevice.d, defaultDevice.err = Open(0)
	})
	return defaultDevice.d, defaultDevice.err
}

// defaultDevice is the device of Default, opened once per process.
var defaultDevice struct {
	once sync.Once
	d    *Device
	err  error
}

// Name returns the GPU's name as the driver reports it.
func (d *Device) Name() string { return d.name }

// Close destroys the device's context, which frees the device memory of
// its workspaces. Later calls return ErrClosed.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	close(d.work)
	return <-d.done
}

// exec runs f with the device's context current: on the calling
// goroutine, locked to its OS thread for the call (a context may be
// current on several threads at once; d.mu serializes the calls), so that
// no goroutine waits for another thread to wake up. With viaThread it
// runs f on the context's own thread.
func (d *Device) exec(f func(l launcher) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.viaThread {
		errc := make(chan error, 1)
		d.work <- func() { errc <- f(gpu{d}) }
		return <-errc
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cuda: making the context current: %w", err)
	}
	return f(gpu{d})
}

// gpu is the launcher of a Device; its methods run inside exec, with the
// device's context current.
type gpu struct{ d *Device }

func (g gpu) alloc(n int) (ptr, error) {
	p, err := cu.MemAlloc(int64(8 * max(n, 1)))
	return ptr(p), err
}

func (g gpu) free(p ptr) error { return cu.MemFree(cu.DevicePtr(p)) }

func (g gpu) upload(dst ptr, src []float64) error {
	if len(src) == 0 {
		return nil
	}
	return cu.MemcpyHtoD(cu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(8*len(src)))
}

// download copies from the device after every kernel launched before it
// has finished (the copy is synchronous on the default stream), and
// reports the errors of those kernels.
func (g gpu) download(dst []float64, src ptr) error {
	if len(dst) == 0 {
		return cu.Synchronize()
	}
	return cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), cu.DevicePtr(src), int64(8*len(dst)))
}

// launch queues the kernel on the default stream. Every argument is one
// 8-byte word, which is what gorgonia.org/cu's Launch copies.
func (g gpu) launch(k kernel, gridX, gridY, blockX, shared int, args []uint64) error {
	var params [16]unsafe.Pointer
	if len(args) > len(params) {
		return fmt.Errorf("%d arguments, at most %d", len(args), len(params))
	}
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	return g.d.fns[k].Launch(gridX, gridY, 1, blockX, 1, 1, shared, cu.NoStream, params[:len(args)])
}

// Workspace runs Sinkhorn evaluations of points of one dimension on a
// Device, with package ot's API and conventions. It owns device memory,
// allocated at the first evaluation and grown when a larger problem comes;
// Close frees it. It is not safe for concurrent use; give each goroutine
// (chain) its own (their evaluations are serialized on the Device).
type Workspace struct {
	dev *Device
	e   *engine
}

// NewWorkspace returns a workspace for points of dimension dim on d.
func (d *Device) NewWorkspace(dim int) *Workspace {
	e := newEngine(d, dim)
	e.comb = &d.comb
	return &Workspace{dev: d, e: e}
}

// SetCohort tells the workspace the cohort of the goroutine that uses it
// (nil for none): a batch of fused evaluations waits for its computing
// members, which may still join the batch.
func (w *Workspace) SetCohort(c *stdlib.Cohort) { w.e.cohort = c }

// Dim returns the dimension of the points.
func (w *Workspace) Dim() int { return w.e.d }

// Close frees the workspace's device memory; the workspace stays usable.
func (w *Workspace) Close() error { return w.dev.exec(w.e.release) }

// Divergence is ot.Workspace.Divergence on the GPU: the debiased Sinkhorn
// divergence between (x, logA) and (y, logB), with its gradient written into
// grad (nil for none). If yy is non-nil the y–y problem is taken from it.
func (w *Workspace) Divergence(x, y, logA, logB []float64, opt ot.Options, yy *SelfTerm, grad *ot.Grad) (ot.Result, error) {
	var s *selfTerm
	if yy != nil {
		s = &yy.s
	}
	return w.e.divergence(x, y, logA, logB, opt, s, grad)
}

// OT is ot.Workspace.OT on the GPU: the entropic OT value after opt.Iters
// iterations (with the unbalanced constant eps·m_a·m_b), with its gradient
// written into grad.
func (w *Workspace) OT(x, y, logA, logB []float64, opt ot.Options, grad *ot.Grad) (float64, error) {
	return w.e.ot(x, y, logA, logB, opt, grad)
}

// GridDivergence is ot.Workspace.GridDivergence on the GPU: the debiased
// divergence between two measures on the unit grid g (a workspace of
// dimension 2), by the separable passes of package ot's grid path inside the
// fused kernel, with gradients with respect to the log-weights only. A grid
// whose problem does not fit the fused kernel gives ErrGridTooLarge.
func (w *Workspace) GridDivergence(g ot.Grid, logA, logB []float64, opt ot.Options, grad *ot.Grad) (ot.Result, error) {
	return w.e.gridDivergence(g, logA, logB, opt, grad)
}

// GridOT is ot.Workspace.GridOT on the GPU (see GridDivergence).
func (w *Workspace) GridOT(g ot.Grid, logA, logB []float64, opt ot.Options, grad *ot.Grad) (float64, error) {
	return w.e.gridOT(g, logA, logB, opt, grad)
}

// SelfTerm is ot.Workspace.SelfTerm on the GPU: the y–y problem of the
// divergence, computed once for use with Divergence while y and log_b do
// not change.
func (w *Workspace) SelfTerm(y, logB []float64, opt ot.Options) (*SelfTerm, error) {
	s, err := w.e.selfTerm(y, logB, opt)
	if err != nil {
		return nil, err
	}
	return &SelfTerm{s: *s}, nil
}

// SelfTerm is a cached y–y problem (ot.SelfTerm for the GPU).
type SelfTerm struct{ s selfTerm }

// Value returns OT_yy with the README's convention.
func (s *SelfTerm) Value() float64 { return s.s.value() }

// Mass returns m_b.
func (s *SelfTerm) Mass() float64 { return s.s.mass }
