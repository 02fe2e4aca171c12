//go:build !cuda

package sinkhorn

import "github.com/shmlang/shm/stdlib"

// cudaAvailable reports whether a CUDA backend is compiled in and usable.
// The default build (without the cuda tag) has none.
func cudaAvailable() bool { return false }

// gpuChannel is a channel's GPU working memory: none in the default
// build.
type gpuChannel struct{}

// onGPU would solve a problem on the GPU; the default build has no GPU
// path, so it never does (gpu is false).
func (*gpuChannel) onGPU(*stdlib.Cohort, *problem) (gpu bool, err error) { return false, nil }
