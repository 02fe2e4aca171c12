// Package autodiff is the reverse-mode automatic differentiation tape on
// which every shm model's log density and its gradient are evaluated.
//
// # Values
//
// A Value is a small handle (16 bytes, copied freely) to a real scalar, a
// vector, a row vector or a row-major matrix stored on a Tape. Values are
// constants (data, literals: no adjoint, nothing recorded) or depend on the
// independent variables created by Var, VarVec or NewVar. An operation whose
// operands are all constant computes its result and records nothing.
//
// # Operations
//
// Every operation is one node whatever the size of its operands, with an
// O(n) backward pass:
//
//   - Unary(f, x) applies any of the elementwise functions of the UnaryFunc
//     table (exp, log, log1p, inv_logit, lgamma, Phi, ...; each with its
//     derivative) to a scalar or a whole container.
//   - Binary(f, a, b) applies a BinaryFunc (add, subtract, multiply, divide,
//     pow, fmax, log_sum_exp, lbeta, ...) elementwise, broadcasting a scalar
//     over a container. Add, Sub, Mul, Div, Pow, Neg, Exp, Log and Square
//     are shorthands.
//   - Reductions and vector functions: Sum, Dot, DotSelf, LogSumExp,
//     Softmax, LogSoftmax, CumSum, Fill.
//   - Linear algebra: MatMul (matrix×vector, matrix×matrix, row vector×
//     matrix, ...), Transpose.
//   - Structure: Index, At, Slice, Row and Reshape are free views (no node,
//     no copy: the adjoint of a view is the adjoint of the viewed elements);
//     Gather and Col copy selected elements and scatter adjoints back;
//     Concat builds a container from parts (for example a vector from
//     scalars).
//   - ScalarPartials and ElementwisePartials record a node whose partial
//     derivatives the caller computes in the forward pass, as Stan's
//     operands_and_partials: the way vectorized densities are written.
//   - Custom registers a caller-owned Node that brings its own backward
//     pass (Sinkhorn, crn).
//
// Shape mismatches and out-of-range indices do not panic: the operation
// returns a NaN-filled value and the first such error is kept; check Err
// at the end of an evaluation (Gradient returns it too).
//
// # Memory
//
// Values, adjoints, node records and partials live in slices owned by the
// Tape. Reset forgets them but keeps the memory, so that evaluating the
// same model again allocates nothing in steady state. Data bound once as
// constants can be kept across Reset with Keep. Slices returned by Val,
// Adj, Partials.Out and Partials.D alias the arena and are valid until the
// next operation that creates a value; Scratch gives working memory that
// stays valid until Reset.
//
// # Gradients
//
// Gradient(out) sweeps the tape backwards from a scalar; Adj(v) then holds
// ∂out/∂v and VarGrad copies the gradient with respect to all independent
// variables. CheckGradient and NumericGradient compare tape gradients with
// central finite differences, for tests here and in other packages.
//
// # Concurrency
//
// A Tape is not safe for concurrent use. Use one tape per goroutine (one
// per sampler chain); the function tables are read-only and shared.
package autodiff
