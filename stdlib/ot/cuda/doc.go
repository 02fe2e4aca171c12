// Package cuda runs the fixed-iteration log-domain Sinkhorn algorithm of
// package ot on an NVIDIA GPU through gorgonia.org/cu: the Sinkhorn
// iterations (balanced and unbalanced), the dual values, the debiased
// divergence, and both gradient modes (unrolled through every iteration,
// or the envelope gradient). Values and gradients are those of package ot,
// with the conventions of shared/testdata/sinkhorn/README.md.
//
// # Build tag
//
// The GPU API (Open, Device, Workspace, SelfTerm, Available) exists only
// when the package is built with the cuda build tag, which needs cgo and the
// CUDA driver header and library (cuda.h, libcuda.so; .ci/cudaenv.sh
// fetches a minimal kit). A binary built with -tags cuda is a GPU binary:
// gorgonia.org/cu's package initialization calls cuInit and exits the
// process when there is no usable driver or device, before main runs. The
// default build contains no cgo and no CUDA; in it this package only holds
// the orchestration code and the kernels' tests.
//
// # Device side
//
// The kernels are in kernels/sinkhorn.cu. `go generate` compiles them to
// PTX for compute capability 8.0 (kernels/sinkhorn.ptx, committed and
// embedded), which the driver JIT-compiles for the GPU at hand (Ampere,
// Hopper and later), so building with the tag needs no nvcc. One evaluation
// uploads the points and log-weights once, runs every iteration, the value
// and the backward pass on the device, and downloads the values and
// gradients once. The cost C_ij = ‖x_i − y_j‖² is computed on the fly from
// the points; no n×m matrix is stored. The unrolled backward pass keeps the
// potentials of every iteration on the device (memory O(T·(n+m))).
//
// Two paths compute the same thing. Small problems (at most
// fusedMaxPoints a side, d ≤ 3) take the fused path (fused.go,
// kernels/fused.cuh): one launch solves every problem of an evaluation,
// one thread block per problem doing all the iterations, the value and
// the gradient; the concurrent evaluations of all workspaces of a Device
// are batched into one launch (combiner); its sweeps skip the blocks of
// 32 points whose terms all lie below the truncation threshold. Larger
// problems take the multi-launch path (engine.go): one kernel per sweep,
// spread over the whole GPU; an evaluation records its launches and
// replays them as one CUDA graph, made once per sequence of launches
// (the engine keeps its last few: graph.go). Problems on a unit grid (GridDivergence,
// GridOT) take package ot's separable grid path inside the fused kernel.
// Default returns the process's one Device.
//
// Every reduction is split in chunks whose partial results are combined in
// a fixed order, without atomics, so a result does not depend on thread
// scheduling. The arithmetic differs from package ot's by rounding only
// (the GPU's exp and fused multiply-adds, other summation orders).
//
// # Testing without a GPU
//
// The same kernel sources compile as host C++ (kernels/shim.h maps the CUDA
// built-ins to loops, and the fused kernel's threads to coroutines that
// meet at its barriers; kernels/hostkernels.cpp serves them to a Go process),
// and the package's default tests drive them with the orchestration code
// that drives the GPU, comparing every value and gradient with package ot
// on the reference vectors, and the fused kernel's results with its
// threads resumed between barriers in several orders (kernels/shim.h's
// shm_order). They need g++.
package cuda
