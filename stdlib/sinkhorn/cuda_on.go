//go:build cuda

package sinkhorn

import (
	"errors"

	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
	"github.com/shmlang/shm/stdlib/ot/cuda"
)

// cudaAvailable reports whether a CUDA backend is compiled in and usable:
// in a build with the cuda tag, whether the driver sees a device. (Such a
// binary does not start at all without a driver and a device: see package
// cuda.)
func cudaAvailable() bool { return cuda.Available() }

// autoThreshold is the number of kernel terms (n·m) from which backend =
// "auto" uses the GPU. Small problems take the fused path (one launch per
// evaluation, batched with the concurrent evaluations of other chains and
// crn replicates), large ones the multi-launch path. Measured on an NVIDIA
// H100 against package ot on 16 Xeon cores (BENCHMARKS.md, "Fused GPU
// kernel and batched launches"), one evaluation of the debiased
// divergence with the unrolled gradient, T = 80, eps = resolution²: the
// CPU wins at n = m = 16 (1.0 against 1.3 ms), the GPU from n = m = 32
// (3.0 against 1.7 ms in 1-D, 3.5 against 1.9 ms in 2-D) and at every
// larger size. A CPU with fewer cores only moves the crossover lower.
const autoThreshold = 32 * 32

// gpuState is the GPU device and a workspace of one evaluator (a chain or
// a crn replicate).
type gpuState struct {
	dev *cuda.Device
	ws  *cuda.Workspace
}

const gpuKey = "sinkhorn.cuda"

// autoGrid says whether backend = "auto" takes a problem on a unit grid
// (x and y the same constant grid_points) to the GPU's separable grid path
// rather than package ot's.
const autoGrid = false

// onGPU runs the divergence (k = divergence) or the raw OT value on the
// GPU when backend asks for it ("cuda", or "auto" for large problems with
// a device present): on the grid g when it is not empty (x and y are its
// points; a grid too large for the GPU's grid path takes its general path
// with "cuda", package ot's grid path with "auto"). used is false when the
// CPU must do the work.
func onGPU(c *stdlib.Context, k kind, backend string, d int, g ot.Grid, x, y, logA, logB []float64, opt ot.Options, grad *ot.Grad) (float64, bool, error) {
	onGrid := g.N() > 0
	auto := len(logA)*len(logB) >= autoThreshold
	if onGrid {
		auto = autoGrid
	}
	if backend != "cuda" && !(backend == "auto" && auto && cuda.Available()) {
		return 0, false, nil
	}
	s, _ := c.State[gpuKey].(*gpuState)
	if s == nil {
		// One device (one context) per process: the evaluations of every
		// chain and crn replicate share it, and it batches the concurrent
		// ones into one launch.
		dev, err := cuda.Default()
		if err != nil {
			return 0, true, err
		}
		s = &gpuState{dev: dev}
		c.State[gpuKey] = s
	}
	if s.ws == nil || s.ws.Dim() != d {
		s.ws = s.dev.NewWorkspace(d)
	}
	if onGrid {
		var v float64
		var err error
		if k == divergence {
			var res ot.Result
			res, err = s.ws.GridDivergence(g, logA, logB, opt, grad)
			v = res.Divergence
		} else {
			v, err = s.ws.GridOT(g, logA, logB, opt, grad)
		}
		if !errors.Is(err, cuda.ErrGridTooLarge) {
			return v, true, err
		}
		if backend != "cuda" {
			return 0, false, nil
		}
		// Too large for the grid path: the GPU's general path, as asked.
	}
	if k == divergence {
		res, err := s.ws.Divergence(x, y, logA, logB, opt, nil, grad)
		return res.Divergence, true, err
	}
	v, err := s.ws.OT(x, y, logA, logB, opt, grad)
	return v, true, err
}
