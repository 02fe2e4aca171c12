//go:build !cuda

package sinkhorn

// cudaAvailable reports whether a CUDA backend is compiled in and usable.
// The default build (without the cuda tag) has none.
func cudaAvailable() bool { return false }
