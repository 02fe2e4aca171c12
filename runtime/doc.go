// Package runtime turns a checked model (package ir) and its data into a
// differentiable log density over an unconstrained parameter vector, and
// runs transformed parameters and generated quantities.
//
// Bind reads and checks the data against the data block's declarations,
// evaluates transformed data once, and decides the parameter layout. A
// bound Model is immutable and may be shared; NewDensity makes the
// per-chain object (one autodiff tape each) whose LogDensityGrad is the
// sampler's target, and whose Constrain and Generate produce the values
// written to the output.
//
// Statements and expressions run as plans where they can: loops,
// conditions, scalar and element assignments, ~ statements and scalar
// expressions are compiled at their first execution into closures bound
// to frame slots and tape operations (plan.go, plan_stmt.go), which record
// exactly what the interpreter records; everything else is interpreted
// over stdlib.Value, with calls through the stdlib.Impls table. Containers
// assigned element by element keep their elements as separate tape values
// and are packed into one vector or matrix (one tape node) only when read
// whole, so that a loop filling a vector costs O(n), not O(n²). A loop
// whose iterations are independent runs as whole-vector operations
// (lift.go; a nest with fixed inner bounds as one loop over its pairs),
// and a loop whose iterations depend on each other has its arithmetic that
// does not depend on them computed before it, as vectors (hoist.go).
//
// Errors are values (Error, RejectError): a domain error (a built-in's
// argument outside its domain, reject) rejects a proposal during
// sampling; any other error stops the run with its position.
//
// The K replicates of crn(K, body) with a scalar body are evaluated on
// per-replicate sub-evaluators, each with its own tape and built-in state,
// and enter the chain's tape as one node each carrying the replicate's
// partial derivatives; Density.Workers of them run at once, on cores the
// chains leave idle, with a value and gradient that do not depend on it.
package runtime
