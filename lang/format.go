package lang

import (
	"strconv"
	"strings"
)

// ExprString renders an expression in the language's syntax, with the
// parentheses it needs and no others. It is used in error messages.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e, 0)
	return b.String()
}

// Operator precedence levels, loosest first; higher binds tighter.
const (
	precTernary = iota + 1
	precOr
	precAnd
	precEq
	precCmp
	precAdd
	precMul
	precUnary
	precPow
	precPostfix
)

// BinaryPrec returns the precedence level of a binary operator.
func BinaryPrec(op string) int {
	switch op {
	case "||":
		return precOr
	case "&&":
		return precAnd
	case "==", "!=":
		return precEq
	case "<", "<=", ">", ">=":
		return precCmp
	case "+", "-":
		return precAdd
	case "*", "/", "%", "%/%", "\\", ".*", "./":
		return precMul
	case "^", ".^":
		return precPow
	}
	return 0
}

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Ternary:
		return precTernary
	case *Binary:
		return BinaryPrec(e.Op)
	case *Unary:
		return precUnary
	default:
		return precPostfix + 1
	}
}

func writeExpr(b *strings.Builder, e Expr, min int) {
	p := exprPrec(e)
	if p < min {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	switch e := e.(type) {
	case *IntLit:
		b.WriteString(strconv.FormatInt(e.Value, 10))
	case *RealLit:
		if e.Text != "" {
			b.WriteString(e.Text)
		} else {
			b.WriteString(strconv.FormatFloat(e.Value, 'g', -1, 64))
		}
	case *StringLit:
		b.WriteString(strconv.Quote(e.Value))
	case *Ident:
		b.WriteString(e.Name)
	case *Paren:
		writeExpr(b, e.X, min)
	case *Call:
		b.WriteString(e.Name)
		b.WriteByte('(')
		for i, a := range e.Args {
			if i == 1 && e.Conditional {
				b.WriteString(" | ")
			} else if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, a, 0)
		}
		for i, a := range e.Named {
			if i > 0 || len(e.Args) > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.Name)
			b.WriteString(" = ")
			writeExpr(b, a.Value, 0)
		}
		b.WriteByte(')')
	case *Index:
		writeExpr(b, e.X, precPostfix)
		b.WriteByte('[')
		for i, it := range e.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			switch it.Kind {
			case IndexSingle:
				writeExpr(b, it.Lo, 0)
			case IndexRange:
				if it.Lo != nil {
					writeExpr(b, it.Lo, 0)
				}
				b.WriteByte(':')
				if it.Hi != nil {
					writeExpr(b, it.Hi, 0)
				}
			case IndexAll:
			}
		}
		b.WriteByte(']')
	case *Binary:
		l, r := p, p+1 // left associative
		if p == precPow {
			l, r = p+1, p-1 // right associative; the exponent may be unary
		}
		writeExpr(b, e.Left, l)
		b.WriteByte(' ')
		b.WriteString(e.Op)
		b.WriteByte(' ')
		writeExpr(b, e.Right, r)
	case *Unary:
		b.WriteString(e.Op)
		writeExpr(b, e.X, precUnary)
	case *Ternary:
		writeExpr(b, e.Cond, precOr)
		b.WriteString(" ? ")
		writeExpr(b, e.Then, 0)
		b.WriteString(" : ")
		writeExpr(b, e.Else, precTernary)
	case *Transpose:
		writeExpr(b, e.X, precPostfix)
		b.WriteByte('\'')
	case *ArrayLit:
		b.WriteByte('{')
		writeList(b, e.Elems)
		b.WriteByte('}')
	case *RowVectorLit:
		b.WriteByte('[')
		writeList(b, e.Elems)
		b.WriteByte(']')
	default:
		b.WriteString("<?>")
	}
}

func writeList(b *strings.Builder, es []Expr) {
	for i, x := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, x, 0)
	}
}
