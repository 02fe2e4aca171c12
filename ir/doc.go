// Package ir checks a parsed .shm program and lowers it into a typed
// intermediate representation that the runtime executes.
//
// Check resolves every name to its declaration (scopes per block and per
// local block, use before declaration is an error), enforces the block
// rules (what may be assigned where; target += and ~ only in the model
// block; _rng only in transformed data, generated quantities and inside
// crn(...); settings that must be data), types every expression with
// int-to-real promotion, resolves every call against the built-in table of
// package stdlib, and checks sizes where they are known statically.
//
// The result, a Model, holds the variables of every block with their slot
// numbers, the statements as typed IR nodes (calls bound to their
// stdlib.Func and signature), and the parameter declarations from which
// NewLayout computes the unconstrained layout and the output column names
// once the data fix the sizes.
package ir
