// Package mathlib implements shm's built-in math, container and
// linear-algebra functions (every function of kind stdlib.MathFunc in the
// signature table except target, which the runtime implements) on the
// autodiff tape. The folder is stdlib/math; the package is called mathlib so
// that it does not shadow the standard library's math.
//
// Register adds the implementations to a stdlib.Impls table. Each
// implementation follows the stdlib.Value representation: ints are plain Go
// ints (int arrays flat in Ints), an int argument where a real is expected
// becomes a tape constant, so that calls whose arguments are all constant
// record nothing on the tape.
//
// A vectorized operation is one tape node: elementwise math goes through
// autodiff's Unary and Binary tables, reshaping and selection through the
// free views (Slice, Reshape, Row) and one Gather or Concat node, and
// functions that autodiff lacks (prod, variance, inverse, determinant,
// cholesky_decompose, triangular solves, ...) through ScalarPartials,
// ElementwisePartials or a Custom node with its own backward pass, using
// gonum/mat for the dense linear algebra.
//
// Stan's conventions are followed: to_vector, to_row_vector and
// to_array_1d read matrices in column-major order, to_matrix(v, m, n)
// fills column-major, indices are 1-based, and dims of a vector or row
// vector is {n, 1} or {1, n} (as in Stan Math). Size mismatches, indices
// out of range and domain problems (a matrix that is not positive
// definite, a singular matrix) are errors naming the function.
package mathlib
