package ir

import "github.com/shmlang/shm/lang"

// binaryType returns the result type of l op r, following Stan: scalars
// combine with promotion, + and - and the elementwise operators work on
// equal linear-algebra types or with a scalar, * is the matrix product,
// comparisons and logic are on scalars only. Arrays take no arithmetic.
func binaryType(op string, l, r lang.Type) (lang.Type, bool) {
	if l.Dims > 0 || r.Dims > 0 || !l.IsNumeric() || !r.IsNumeric() {
		return lang.BadType, false
	}
	scalar := func() lang.Type {
		if l.Base == lang.Int && r.Base == lang.Int {
			return lang.IntType
		}
		return lang.RealType
	}
	ls, rs := l.IsScalar(), r.IsScalar()
	switch op {
	case "||", "&&", "==", "!=", "<", "<=", ">", ">=":
		if ls && rs {
			return lang.IntType, true
		}
	case "%", "%/%":
		if l.Base == lang.Int && r.Base == lang.Int {
			return lang.IntType, true
		}
	case "^":
		if ls && rs {
			return lang.RealType, true
		}
	case "+", "-":
		switch {
		case ls && rs:
			return scalar(), true
		case ls:
			return r, true
		case rs, l == r:
			return l, true
		}
	case ".*", "./", ".^":
		switch {
		case ls && rs:
			if op == ".^" {
				return lang.RealType, true
			}
			return scalar(), true
		case ls:
			return r, true
		case rs, l == r:
			return l, true
		}
	case "*":
		switch {
		case ls && rs:
			return scalar(), true
		case ls:
			return r, true
		case rs:
			return l, true
		}
		switch [2]lang.Base{l.Base, r.Base} {
		case [2]lang.Base{lang.RowVector, lang.Vector}:
			return lang.RealType, true
		case [2]lang.Base{lang.Vector, lang.RowVector}, [2]lang.Base{lang.Matrix, lang.Matrix}:
			return lang.MatrixType, true
		case [2]lang.Base{lang.Matrix, lang.Vector}:
			return lang.VectorType, true
		case [2]lang.Base{lang.RowVector, lang.Matrix}:
			return lang.RowVectorType, true
		}
	case "/":
		switch {
		case ls && rs:
			return scalar(), true
		case rs:
			return l, true
		}
		switch [2]lang.Base{l.Base, r.Base} {
		case [2]lang.Base{lang.RowVector, lang.Matrix}:
			return lang.RowVectorType, true
		case [2]lang.Base{lang.Matrix, lang.Matrix}:
			return lang.MatrixType, true
		}
	case "\\":
		switch [2]lang.Base{l.Base, r.Base} {
		case [2]lang.Base{lang.Matrix, lang.Vector}:
			return lang.VectorType, true
		case [2]lang.Base{lang.Matrix, lang.Matrix}:
			return lang.MatrixType, true
		}
	}
	return lang.BadType, false
}

// binaryHint suggests the operator the user probably meant.
func binaryHint(op string, l, r lang.Type) string {
	switch {
	case l.Dims > 0 || r.Dims > 0:
		return " (arrays take no arithmetic; use vector types, or loop over the elements)"
	case op == "*" && l == r && (l.Base == lang.Vector || l.Base == lang.RowVector):
		return " (use .* for the elementwise product, or dot_product)"
	case op == "/" && !r.IsScalar() && !l.IsScalar():
		return " (use ./ for elementwise division)"
	case op == "^" && (!l.IsScalar() || !r.IsScalar()):
		return " (use .^ for elementwise powers)"
	}
	return ""
}
