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
package sinkhorn
