//go:build cuda

package sinkhorn

import "github.com/shmlang/shm/stdlib/ot/cuda"

// cudaAvailable reports whether a CUDA backend is compiled in and usable:
// in a build with the cuda tag, whether the driver sees a device. (Such a
// binary does not start at all without a driver and a device: see package
// cuda.)
func cudaAvailable() bool { return cuda.Available() }
