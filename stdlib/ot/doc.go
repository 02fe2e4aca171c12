// Package ot implements the fixed-iteration log-domain Sinkhorn algorithm of
// the paper's Algorithm 2 on the CPU: the entropic optimal-transport value
// (balanced, or unbalanced with the dual of Séjourné et al.), the debiased
// Sinkhorn divergence
//
//	S = OT_xy − ½·OT_xx − ½·OT_yy + (eps/2)·(m_a − m_b)²,
//
// the transport plan at the final potentials, and the gradients of these
// values with respect to the support points and the log-weights.
//
// # Conventions
//
// The conventions are those of shared/testdata/sinkhorn/README.md. Points are
// row-major n×d slices of float64, weights are log-weights, and the cost is
// the squared Euclidean distance C_ij = Σ_k (x_ik − y_jk)², always computed
// from the coordinate differences. The potentials start at zero and exactly
// Options.Iters iterations are run, each updating f and then g with the new
// f:
//
//	f_i ← −tau·eps·LSE_j(g_j/eps − C_ij/eps + log b_j)
//	g_j ← −tau·eps·LSE_i(f_i/eps − C_ij/eps + log a_i)
//
// with tau = 1 (balanced) or rho/(rho+eps) (unbalanced). There is no
// convergence test: the value is a smooth function of the inputs for a fixed
// number of iterations, and its gradients are exact derivatives of that
// function.
//
// # Gradients
//
// GradUnrolled differentiates through all iterations. The forward pass keeps
// the potentials of every iteration (memory O(T·(n+m))) and the backward pass
// recomputes the kernel rows from the points, so no n×m matrix is ever
// stored. GradEnvelope differentiates the dual objective at the final
// potentials held fixed (one extra pass over the kernel).
//
// # Performance and determinism
//
// A Workspace owns every buffer; after the first evaluation at given sizes,
// later evaluations allocate nothing. Each log-sum-exp row is computed with a
// fast exponential (max relative error a few ulps, see expNeg) in two passes
// (arguments and maximum, then the shifted sum with four accumulators).
// Large problems are split across goroutines by blocks of rows. The block
// partition depends only on the problem size, every row is computed by one
// goroutine, and column sums are reduced over blocks in a fixed order, so
// results are bitwise identical whatever the number of workers.
//
// Points on a regular h×w grid with unit spacing can use the separable path
// (GridDivergence, GridOT), which computes each half-iteration as two 1-D
// log-sum-exp passes, O(h·w·(h+w)) instead of O((h·w)²).
package ot
