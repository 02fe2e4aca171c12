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

// The sizes from which backend = "auto" uses the GPU: the number of kernel
// terms n·m in 1-D (autoTerms1D) and in 2-D and above (autoTermsND), and
// the number of points of a unit grid (autoGridPoints; the separable grid
// path). Measured on an NVIDIA H100 against package ot on the same
// machine's 16 Xeon cores (BENCHMARKS.md, "The GPU after the sparse CPU
// path", 2026-11-27), one evaluation of the debiased divergence with the
// unrolled gradient, T = 80, eps = resolution², n = m: in 1-D the CPU wins
// up to n = 512 (11.5 against 16.8 ms), ties at 256 (6.7 against 6.3 ms)
// and loses from 1024 (61 against 19 ms); in 2-D it wins up to 64 (3.1
// against 4.2 ms) and loses from 120 (9.6 against 7.0 ms). One gradient
// of Experiment D (three 16×16 grids, T = 64): 9.3 ms on the GPU, 19.4 ms
// on one core. Small problems take the fused path (one launch per
// evaluation, batched with the concurrent evaluations of other chains and
// crn replicates), large ones the multi-launch path. A CPU with fewer
// cores only moves the crossovers lower.
const (
	autoTerms1D    = 1024 * 1024
	autoTermsND    = 120 * 120
	autoGridPoints = 16 * 16
)

// autoGPU reports whether backend = "auto" takes a problem of n and m
// points of dimension d to the GPU: on the grid path when grid is set.
func autoGPU(n, m, d int, grid bool) bool {
	switch {
	case grid:
		return n >= autoGridPoints
	case d == 1:
		return n*m >= autoTerms1D
	}
	return n*m >= autoTermsND
}

// gpuState is the GPU device, a workspace of one evaluator (a chain or a
// crn replicate), and its cached y–y terms.
type gpuState struct {
	dev   *cuda.Device
	ws    *cuda.Workspace
	cache selfCache[*cuda.SelfTerm]
}

const gpuKey = "sinkhorn.cuda"

// onGPU runs the divergence (k = divergence) or the raw OT value on the
// GPU when backend asks for it ("cuda", or "auto" for large problems with
// a device present: autoGPU): on the grid g when it is not empty (x and y
// are its points; a grid too large for the GPU's grid path takes its
// general path with "cuda", package ot's grid path with "auto"). constYY
// says that y and log_b are data: the general path then computes the y–y
// term once. used is false when the CPU must do the work.
func onGPU(c *stdlib.Context, k kind, backend string, d int, g ot.Grid, x, y, logA, logB []float64, opt ot.Options, constYY bool, grad *ot.Grad) (float64, bool, error) {
	onGrid := g.N() > 0
	auto := autoGPU(len(logA), len(logB), d, onGrid)
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
	if c.Cohort != nil {
		s.ws.SetCohort(c.Cohort)
	} else {
		s.ws.SetCohort(nil) // not a nil *stdlib.Cohort in the interface
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
		var yy *cuda.SelfTerm
		if constYY {
			var err error
			if yy, err = s.cache.get(y, logB, opt, false, func() (*cuda.SelfTerm, error) { return s.ws.SelfTerm(y, logB, opt) }); err != nil {
				return 0, true, err
			}
		}
		res, err := s.ws.Divergence(x, y, logA, logB, opt, yy, grad)
		return res.Divergence, true, err
	}
	v, err := s.ws.OT(x, y, logA, logB, opt, grad)
	return v, true, err
}
