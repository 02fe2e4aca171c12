package lang

import "strings"

// Base is the base kind of a value: the element type of an array.
type Base int

// The base kinds. String and Void occur only as the types of string
// literals (in print, reject and named arguments) and of statements.
const (
	BadBase Base = iota
	Int
	Real
	Vector
	RowVector
	Matrix
	String
	Void
)

var baseNames = [...]string{
	BadBase:   "<bad>",
	Int:       "int",
	Real:      "real",
	Vector:    "vector",
	RowVector: "row_vector",
	Matrix:    "matrix",
	String:    "string",
	Void:      "void",
}

func (b Base) String() string {
	if b < 0 || int(b) >= len(baseNames) {
		return "<bad>"
	}
	return baseNames[b]
}

// IsScalar reports whether b is int or real.
func (b Base) IsScalar() bool { return b == Int || b == Real }

// IsLinalg reports whether b is vector, row_vector or matrix.
func (b Base) IsLinalg() bool { return b == Vector || b == RowVector || b == Matrix }

// Rank is the number of sizes of a value of kind b: 2 for a matrix, 1 for
// a vector or row_vector, 0 otherwise.
func (b Base) Rank() int {
	switch b {
	case Matrix:
		return 2
	case Vector, RowVector:
		return 1
	}
	return 0
}

// Type is the static type of an expression or variable without sizes:
// a base kind and a number of array dimensions (0 for a non-array).
type Type struct {
	Base Base
	Dims int // number of array dimensions
}

// Common types.
var (
	BadType       = Type{}
	IntType       = Type{Base: Int}
	RealType      = Type{Base: Real}
	VectorType    = Type{Base: Vector}
	RowVectorType = Type{Base: RowVector}
	MatrixType    = Type{Base: Matrix}
	StringType    = Type{Base: String}
	VoidType      = Type{Base: Void}
)

// ArrayOf returns the type of an array with dims dimensions of t.
func ArrayOf(t Type, dims int) Type { return Type{Base: t.Base, Dims: t.Dims + dims} }

// IsBad reports whether t is the invalid type (the result of an expression
// that already produced an error).
func (t Type) IsBad() bool { return t.Base == BadBase }

// IsScalar reports whether t is int or real.
func (t Type) IsScalar() bool { return t.Dims == 0 && t.Base.IsScalar() }

// IsNumeric reports whether t holds numbers (anything but string and void).
func (t Type) IsNumeric() bool {
	return t.Base == Int || t.Base == Real || t.Base.IsLinalg()
}

// Elem returns the element type of an array type.
func (t Type) Elem() Type {
	if t.Dims == 0 {
		return BadType
	}
	return Type{Base: t.Base, Dims: t.Dims - 1}
}

// Promoted returns t with an int base promoted to real.
func (t Type) Promoted() Type {
	if t.Base == Int {
		return Type{Base: Real, Dims: t.Dims}
	}
	return t
}

// AssignableFrom reports whether a value of type from can be stored in a
// variable of type t: equal types, or int promoted to real (also inside
// arrays).
func (t Type) AssignableFrom(from Type) bool {
	if t == from {
		return true
	}
	return t.Base == Real && from.Base == Int && t.Dims == from.Dims
}

// String renders the type in the language's syntax: "array[,] vector".
func (t Type) String() string {
	if t.Dims == 0 {
		return t.Base.String()
	}
	return "array[" + strings.Repeat(",", t.Dims-1) + "] " + t.Base.String()
}

// Special is a constrained type whose values satisfy a structural
// constraint (Stan's simplex, ordered, correlation matrices, ...). Its
// values are vectors (simplex, unit_vector, ordered, positive_ordered) or
// matrices (the others); a parameter of such a type has fewer
// unconstrained coordinates than values, or a transform of its own.
type Special uint8

// The constrained types.
const (
	NoSpecial Special = iota
	Simplex
	UnitVector
	Ordered
	PositiveOrdered
	CholeskyFactorCorr
	CholeskyFactorCov
	CorrMatrix
	CovMatrix
)

var specialNames = [...]string{"", "simplex", "unit_vector", "ordered", "positive_ordered",
	"cholesky_factor_corr", "cholesky_factor_cov", "corr_matrix", "cov_matrix"}

func (s Special) String() string {
	if int(s) < len(specialNames) {
		return specialNames[s]
	}
	return "<bad>"
}

// SpecialByName returns the constrained type with the given keyword.
func SpecialByName(name string) (Special, bool) {
	for i, n := range specialNames {
		if i > 0 && n == name {
			return Special(i), true
		}
	}
	return NoSpecial, false
}

// Base returns the kind of the values: vector or matrix.
func (s Special) Base() Base {
	if s >= CholeskyFactorCorr {
		return Matrix
	}
	return Vector
}
