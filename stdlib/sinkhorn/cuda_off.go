//go:build !cuda

package sinkhorn

import (
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/ot"
)

// cudaAvailable reports whether a CUDA backend is compiled in and usable.
// The default build (without the cuda tag) has none.
func cudaAvailable() bool { return false }

// onGPU would run a divergence or OT value on the GPU; the default build
// has no GPU path, so it never does (used is false).
func onGPU(*stdlib.Context, kind, string, int, ot.Grid, []float64, []float64, []float64, []float64, ot.Options, bool, *ot.Grad) (float64, bool, error) {
	return 0, false, nil
}
