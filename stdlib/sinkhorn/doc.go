// Package sinkhorn implements the language side of the paper's Sinkhorn
// primitives on the autodiff tape: sinkhorn (the debiased divergence),
// sinkhorn_ot (the raw entropic OT value), sinkhorn_plan (the transport
// plan) and resolution (the median nearest-neighbour distance, for eps).
//
// Each call is one tape node: the kernels of package ot compute the value
// and, when an input depends on parameters, its exact gradient (unrolled
// through all iterations, or the envelope gradient) in the forward pass;
// the node's backward pass only scales them. Every chain keeps its own ot
// Workspace in the Context's State, and the y–y term of the divergence,
// when y and log_b are constants, is computed once and reused while they
// do not change.
//
// With tol = ... a call iterates each problem from zero potentials (an
// x–y problem whose eps is small beside its points' spread annealing eps
// down to it first: package ot, "The converged mode") until package ot's
// convergence criterion (the potentials' change over an iteration, in
// units of eps) is at most tol, iters being the cap
// (DefaultTolCap when absent), and its gradient is the envelope gradient
// (grad = "unrolled" is an error: the number of iterations depends on the
// inputs). A problem that reaches the cap fails the call with an error
// wrapping ot.ErrNotConverged, which rejects the proposal during
// sampling. The run's iteration override (stdlib.Context.Iters, shm
// calibrate iters) replaces the cap. Such calls run on the CPU only:
// backend = "auto" keeps them there, backend = "cuda" is an error. Each
// chain keeps the iteration counts of its calls (ChainCounts): the last
// call's, the problems solved and their iterations in total and at most,
// and the calls that did not converge, for a report after sampling.
//
// Log-weights given as arrays of vectors are channels: one problem per
// channel on the same points, solved at once (each on its own goroutine
// and workspace; on the GPU, as one cohort, in one launch), the values and
// gradients summed in channel order.
//
// On the CPU, problems on scattered points use package ot's scaling path
// (truncated kernels, up to 2^23 point pairs, 2^19 in 1-D) or its sparse
// sweeps (beyond), both exact to rounding (see ot's package
// documentation), unless the environment variable SHM_SINKHORN_PATH
// (PathEnv) says "dense", the reference, "sparse" or "scaling" (forced);
// "auto" is the default. The variable is read when a chain's workspace is
// created and is meant for benchmarks and tests.
//
// When x and y are the same constant unit grid in row-major order (as
// grid_points makes them, for image histograms whose weights carry the
// parameters), sinkhorn and sinkhorn_ot take ot's separable grid path,
// O(H·W·(H+W)) per half-iteration instead of O((H·W)²), with the same
// result up to rounding; backend = "cuda" keeps the dense GPU path.
package sinkhorn
