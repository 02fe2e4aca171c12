// Package stdlib is shm's standard library: the signature table of every
// built-in function and distribution, which the checker (package ir)
// resolves calls against, and, in its subpackages, the implementations
// (values and adjoints on the autodiff tape).
//
// A built-in has one or more signatures. A parameter either names an exact
// type (an int argument is promoted where a real is expected, also inside
// arrays) or a class of types, such as Stan's "reals" (int, real, vector,
// row_vector, array[] int, array[] real) for vectorized distribution
// arguments. Named parameters, an shm extension, carry their type, whether
// they must be data, whether they are required, and the accepted strings.
//
// The table is immutable: Lookup returns shared values that callers must
// not modify.
package stdlib
