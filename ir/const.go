package ir

import (
	"strings"

	"github.com/shmlang/shm/lang"
)

// ConstNumber evaluates a number built from int and real literals, unary
// signs and ConstInt's int arithmetic. It reports false when the value is
// not a compile-time constant (or e is nil).
func ConstNumber(e Expr) (float64, bool) {
	switch e := e.(type) {
	case nil:
		return 0, false
	case *RealLit:
		return e.Value, true
	case *Unary:
		x, ok := ConstNumber(e.X)
		switch {
		case !ok || e.Op == "!":
			return 0, false
		case e.Op == "-":
			return -x, true
		}
		return x, true
	}
	n, ok := ConstInt(e)
	return float64(n), ok
}

// ConstInt evaluates an int expression built from literals and + - * / %
// (integer division truncates, as in Stan). It reports false when the
// value is not a compile-time constant.
func ConstInt(e Expr) (int64, bool) {
	switch e := e.(type) {
	case *IntLit:
		return e.Value, true
	case *Unary:
		x, ok := ConstInt(e.X)
		if !ok || e.Op == "!" {
			return 0, false
		}
		if e.Op == "-" {
			n, err := lang.IntNeg(int(x))
			return int64(n), err == nil
		}
		return x, true
	case *Binary:
		if e.Type() != lang.IntType {
			return 0, false
		}
		l, ok1 := ConstInt(e.Left)
		r, ok2 := ConstInt(e.Right)
		if !ok1 || !ok2 {
			return 0, false
		}
		// Overflow and division by zero are not constants: evaluating
		// the expression reports them at its position.
		n, err := lang.IntArith(e.Op, int(l), int(r))
		return int64(n), err == nil
	}
	return 0, false
}

// typeText renders a declared type in normalized syntax, such as
// "array[N] vector<lower=0>[K]".
func typeText(t *lang.TypeExpr) string {
	if t.Special != lang.NoSpecial {
		text := t.Special.String() + "[" + exprList(t.SpecialSize) + "]"
		if len(t.ArraySize) > 0 {
			text = "array[" + exprList(t.ArraySize) + "] " + text
		}
		return text
	}
	return shapeSyntax(t, boundsText(t.Bounds))
}

// shapeSyntax renders the declared type with the given constraint text
// ("<lower=0>" or "") in its place.
func shapeSyntax(t *lang.TypeExpr, bounds string) string {
	var b strings.Builder
	if len(t.ArraySize) > 0 {
		b.WriteString("array[")
		b.WriteString(exprList(t.ArraySize))
		b.WriteString("] ")
	}
	b.WriteString(t.Base.String())
	b.WriteString(bounds)
	if len(t.Size) > 0 {
		b.WriteString("[" + exprList(t.Size) + "]")
	}
	return b.String()
}

// boundsText renders a constraint as "<lower=0, upper=1>", or "" for none.
func boundsText(bd *lang.Bounds) string {
	if bd == nil {
		return ""
	}
	var parts []string
	for _, p := range []struct {
		name string
		e    lang.Expr
	}{{"lower", bd.Lower}, {"upper", bd.Upper}, {"offset", bd.Offset}, {"multiplier", bd.Multiplier}} {
		if p.e != nil {
			parts = append(parts, p.name+"="+lang.ExprString(p.e))
		}
	}
	return "<" + strings.Join(parts, ", ") + ">"
}

func exprList(es []lang.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = lang.ExprString(e)
	}
	return strings.Join(parts, ", ")
}
