package stdlib

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
)

// Value is a value of the language at run time. Its representation
// depends on its type:
//
//   - int: Int.
//   - real, vector, row_vector, matrix: AD, a value on the tape (a
//     constant for data).
//   - array of int (any number of dimensions): Ints, flat in row-major
//     order, with Dims.
//   - array of real (any number of dimensions): AD, a flat vector on the
//     tape in row-major order, with Dims.
//   - array of vector, row_vector or matrix: Elems, flat in row-major
//     order over the array dimensions, with Dims.
//   - string (named arguments only): Str.
type Value struct {
	Type  lang.Type
	Int   int
	Ints  []int
	AD    autodiff.Value
	Elems []Value
	Dims  []int // array sizes, outermost first; nil for non-arrays
	Str   string
}

// MemoryHolder is implemented by the values of Context.State that hold
// working memory across evaluations (a Sinkhorn workspace): MemoryWords
// is that memory, in 8-byte words. An evaluator that keeps many states
// (crn's replicates) bounds their sum.
type MemoryHolder interface {
	MemoryWords() int64
}

// IntValue returns the int n.
func IntValue(n int) Value { return Value{Type: lang.IntType, Int: n} }

// RealValue returns a real held by v (a scalar on the tape).
func RealValue(v autodiff.Value) Value { return Value{Type: lang.RealType, AD: v} }

// ADValue returns a real, vector, row_vector or matrix held by v, with the
// type given by v's shape: a vector shape gives vector, and so on.
func ADValue(v autodiff.Value) Value {
	t := lang.RealType
	switch v.Kind() {
	case autodiff.Vector:
		t = lang.VectorType
	case autodiff.RowVector:
		t = lang.RowVectorType
	case autodiff.Matrix:
		t = lang.MatrixType
	}
	return Value{Type: t, AD: v}
}

// Len returns the number of array elements (for arrays: the product of
// Dims) or of linear-algebra elements (for vectors and matrices).
func (v Value) Len() int {
	if v.Type.Dims > 0 {
		n := 1
		for _, d := range v.Dims {
			n *= d
		}
		return n
	}
	switch v.Type.Base {
	case lang.Int:
		return 1
	case lang.String:
		return 1
	}
	return v.AD.Len()
}

// RealAD returns a real scalar argument as a tape value: an int becomes
// a constant (signatures let an int stand for a real).
func (v Value) RealAD(t *autodiff.Tape) autodiff.Value {
	if v.Type == lang.IntType {
		return t.Const(float64(v.Int))
	}
	return v.AD
}

// IsScalar reports whether v is an int or a real.
func (v Value) IsScalar() bool { return v.Type.IsScalar() }

// Context carries what a built-in needs besides its arguments.
type Context struct {
	Tape *autodiff.Tape
	// RNG draws random numbers for _rng functions; nil where draws are
	// not allowed.
	RNG *rand.Rand
	// Propto asks densities to drop the additive terms that do not depend
	// on parameters (terms whose arguments are all constants), as Stan's
	// ~ statement does.
	Propto bool
	// Run is the run's context, nil for none: built-ins that can run for
	// long (a Sinkhorn problem of 10^5 points) stop when it is done and
	// return an error wrapping its Err().
	Run context.Context
	// Iters, when positive, replaces the iteration count that calls of
	// iterative built-ins give (sinkhorn's iters = ...; with tol = ...,
	// the cap): the run asked for another budget (shm calibrate iters
	// compares them).
	Iters int
	// Pos is the position of the call being evaluated, and Refine, when
	// it holds that position with k, asks the call for a budget k times
	// finer (after Iters): an iterative built-in runs k times its
	// iterations, or with a tolerance, a tolerance k times smaller and k
	// times its cap. The run evaluates one call against a reference.
	Pos    lang.Pos
	Refine map[lang.Pos]int
	// NoGrad says that the evaluation's gradient will not be computed:
	// built-ins may leave their partial derivatives at zero instead of
	// computing them (sinkhorn then solves without its unrolled
	// backward pass). The zero value asks for them.
	NoGrad bool
	// State keeps per-chain working memory of built-ins between
	// evaluations (for example a Sinkhorn workspace and the cached y–y
	// term), keyed by a name each package chooses. The runtime creates one
	// map per chain; built-ins must not share it across goroutines.
	State map[string]any
	// Noise, when set, asks the _rng implementation of a family marked
	// reparameterizable (Family.Reparam) for a reparameterized draw
	// (inside crn(...)): a differentiable function on the tape of its
	// parameters and of standard noise drawn from Noise, instead of a
	// draw of plain numbers.
	Noise Noise
	// Cohort is the cohort of the goroutine evaluating (the workers of the
	// crn call it runs replicates of), nil for none: built-ins that batch
	// concurrent evaluations wait for its computing members.
	Cohort *Cohort
}

// Noise supplies the standard noise of reparameterized draws: values from
// the replicate's stream, which the runtime records for the replicate's
// log.
type Noise interface {
	// Normal returns n standard normal draws.
	Normal(n int) []float64
	// Uniform returns n draws uniform on the open interval (0, 1).
	Uniform(n int) []float64
	// ChiSquare returns one chi-square draw with df degrees of freedom
	// (not recorded in the log: it scales noise, it is not noise itself).
	ChiSquare(df float64) float64
}

// Impl implements a built-in: it computes the result of a call with the
// given positional arguments and named arguments (in the order of the
// Func's Named list, a zero Value where not given). Argument types have
// been checked against one of the function's signatures; an Impl returns
// an error for a domain problem, such as a negative scale, naming the
// function and the argument.
type Impl func(c *Context, args, named []Value) (Value, error)

// Impls maps built-in names to their implementations. Subpackages add
// theirs with their Register functions; the runtime builds one table per
// run and only reads it afterwards.
type Impls map[string]Impl

// Add registers the implementation of name, which must be in the
// signature table; adding a name twice is a programming error.
func (m Impls) Add(name string, f Impl) {
	if Builtins().Lookup(name) == nil {
		panic(fmt.Sprintf("stdlib: implementation of %s, which has no signature", name))
	}
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("stdlib: %s implemented twice", name))
	}
	m[name] = f
}
