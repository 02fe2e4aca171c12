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

// gpuChannel is a channel's GPU working memory, made when a problem
// first goes to the GPU.
type gpuChannel struct{ gpu *gpuState }

// gpuState is the device, a workspace, and its cached y–y terms.
type gpuState struct {
	dev   *cuda.Device
	ws    *cuda.Workspace
	cache selfCache[*cuda.SelfTerm]
}

// onGPU solves pr on the GPU when its backend asks for it ("cuda", or
// "auto" for large problems with a device present: autoGPU), on the
// channel's GPU workspace, as a member of cohort (nil for none): on the
// grid pr.g when it is not empty (x and y are its points; a grid too large
// for the GPU's grid path takes its general path with "cuda", package ot's
// grid path with "auto"), computing a y–y term of data once on the general
// path. gpu is false when the CPU must do the work: always in the
// converged mode (tol), which the GPU does not run (options refuses
// backend = "cuda" with tol).
func (gc *gpuChannel) onGPU(cohort *stdlib.Cohort, pr *problem) (gpu bool, err error) {
	if pr.opt.Tol > 0 {
		return false, nil
	}
	onGrid := pr.g.N() > 0
	auto := autoGPU(len(pr.la), len(pr.lb), pr.d, onGrid)
	if pr.backend != "cuda" && !(pr.backend == "auto" && auto && cuda.Available()) {
		return false, nil
	}
	// The GPU runs opt.Iters iterations of each problem it solves: the
	// x–y one, and the x–x and y–y ones of a divergence (a y–y term of
	// data is solved once, into the cache, and not counted).
	pr.iters = ot.Iterations{XY: pr.opt.Iters}
	if pr.k == divergence {
		pr.iters.XX = pr.opt.Iters
		if !pr.constYY {
			pr.iters.YY = pr.opt.Iters
		}
	}
	s := gc.gpu
	if s == nil {
		// One device (one context) per process: the evaluations of every
		// chain, crn replicate and channel share it, and it batches the
		// concurrent ones into one launch.
		dev, err := cuda.Default()
		if err != nil {
			return true, err
		}
		s = &gpuState{dev: dev}
		gc.gpu = s
	}
	if s.ws == nil || s.ws.Dim() != pr.d {
		if s.ws != nil {
			// Its device memory and graphs; the device stays open.
			if err := s.ws.Close(); err != nil {
				return true, err
			}
		}
		s.ws = s.dev.NewWorkspace(pr.d)
	}
	s.ws.SetCohort(cohort)
	if onGrid {
		if pr.k == divergence {
			var res ot.Result
			res, err = s.ws.GridDivergence(pr.g, pr.la, pr.lb, pr.opt, pr.grad)
			pr.value = res.Divergence
		} else {
			pr.value, err = s.ws.GridOT(pr.g, pr.la, pr.lb, pr.opt, pr.grad)
		}
		if !errors.Is(err, cuda.ErrGridTooLarge) {
			return true, err
		}
		if pr.backend != "cuda" {
			return false, nil
		}
		// Too large for the grid path: the GPU's general path, as asked.
	}
	if pr.k == divergence {
		var yy *cuda.SelfTerm
		if pr.constYY {
			if yy, err = s.cache.get(pr.y, pr.lb, pr.opt, false, func() (*cuda.SelfTerm, error) { return s.ws.SelfTerm(pr.y, pr.lb, pr.opt) }); err != nil {
				return true, err
			}
		}
		res, err := s.ws.Divergence(pr.x, pr.y, pr.la, pr.lb, pr.opt, yy, pr.grad)
		pr.value = res.Divergence
		return true, err
	}
	pr.value, err = s.ws.OT(pr.x, pr.y, pr.la, pr.lb, pr.opt, pr.grad)
	return true, err
}
