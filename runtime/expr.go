package runtime

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// expr evaluates an expression.
func (ev *evaluator) expr(e ir.Expr) (stdlib.Value, error) {
	t := ev.tape()
	switch e := e.(type) {
	case *ir.IntLit:
		return stdlib.IntValue(int(e.Value)), nil
	case *ir.RealLit:
		return stdlib.RealValue(t.Const(e.Value)), nil
	case *ir.StringLit:
		return stdlib.Value{Type: lang.StringType, Str: e.Value}, nil
	case *ir.VarRef:
		return ev.read(e.Var, e.Position())
	case *ir.Call:
		return ev.call(e)
	case *ir.CRN:
		return ev.evalCRN(e)
	case *ir.UserCall:
		return ev.userCall(e)
	case *ir.ODE:
		return ev.ode(e)
	case *hoistedRef:
		v, err := e.value(ev)
		return stdlib.RealValue(v), err
	case *ir.Index:
		if p := ev.plan(e); p != nil {
			return p.run(ev)
		}
		if v, ok, err := ev.cellElement(e); ok || err != nil {
			return v, err
		}
		x, err := ev.expr(e.X)
		if err != nil {
			return stdlib.Value{}, err
		}
		if v, ok, err := ev.singleElement(e, x); ok || err != nil {
			return v, err
		}
		sel, err := ev.selection(e.Items, x)
		if err != nil {
			return stdlib.Value{}, err
		}
		v, err := ev.index(x, sel, e.Type())
		if err != nil {
			return stdlib.Value{}, ev.errorf(e.Position(), "%v", err)
		}
		return v, nil
	case *ir.Binary:
		if p := ev.plan(e); p != nil {
			return p.run(ev)
		}
		return ev.binary(e)
	case *ir.Unary:
		if p := ev.plan(e); p != nil {
			return p.run(ev)
		}
		x, err := ev.expr(e.X)
		if err != nil {
			return x, err
		}
		switch {
		case e.Op == "+":
			return x, nil
		case e.Op == "!":
			if ev.scalar(x) == 0 {
				return stdlib.IntValue(1), nil
			}
			return stdlib.IntValue(0), nil
		case x.Type == lang.IntType:
			n, err := lang.IntNeg(x.Int)
			if err != nil {
				return stdlib.Value{}, ev.domainf(e.Position(), "%v", err)
			}
			return stdlib.IntValue(n), nil
		}
		return withAD(x, t.Neg(x.AD)), nil
	case *ir.Ternary:
		ok, err := ev.truth(e.Cond)
		if err != nil {
			return stdlib.Value{}, err
		}
		branch := e.Else
		if ok {
			branch = e.Then
		}
		v, err := ev.expr(branch)
		if err != nil {
			return v, err
		}
		return ev.convert(v, e.Type()), nil
	case *ir.Transpose:
		x, err := ev.expr(e.X)
		if err != nil {
			return x, err
		}
		return stdlib.ADValue(t.Transpose(x.AD)), nil
	case *ir.ArrayLit:
		elems := make([]stdlib.Value, len(e.Elems))
		for i, x := range e.Elems {
			v, err := ev.expr(x)
			if err != nil {
				return v, err
			}
			elems[i] = ev.convert(v, e.Type().Elem())
		}
		return ev.makeArray(e.Type(), []int{len(elems)}, elems), nil
	case *ir.RowVectorLit:
		parts := make([]autodiff.Value, len(e.Elems))
		for i, x := range e.Elems {
			v, err := ev.expr(x)
			if err != nil {
				return v, err
			}
			parts[i] = ev.toAD(v)
		}
		if e.Type() == lang.RowVectorType {
			return stdlib.ADValue(t.Concat(autodiff.RowVectorShape(len(parts)), parts...)), nil
		}
		cols := 0
		if len(parts) > 0 {
			cols = parts[0].Len()
		}
		for i, p := range parts {
			if p.Len() != cols {
				return stdlib.Value{}, ev.errorf(e.Elems[i].Position(), "rows of a matrix literal differ in length: %d and %d", cols, p.Len())
			}
		}
		return stdlib.ADValue(t.Concat(autodiff.MatrixShape(len(parts), cols), parts...)), nil
	}
	return stdlib.Value{}, ev.errorf(e.Position(), "unsupported expression %T", e)
}

// withAD returns v with its tape value replaced.
func withAD(v stdlib.Value, ad autodiff.Value) stdlib.Value {
	v.AD = ad
	return v
}

// toAD returns the tape value of v, making constants of ints.
func (ev *evaluator) toAD(v stdlib.Value) autodiff.Value {
	t := ev.tape()
	switch {
	case v.Type == lang.IntType:
		return t.Const(float64(v.Int))
	case v.Type.Base == lang.Int:
		xs := make([]float64, len(v.Ints))
		for i, n := range v.Ints {
			xs[i] = float64(n)
		}
		return t.ConstVec(xs)
	}
	return v.AD
}

// convert promotes v to type want (int to real, also inside arrays).
func (ev *evaluator) convert(v stdlib.Value, want lang.Type) stdlib.Value {
	if v.Type == want || want.IsBad() || want.Base != lang.Real || v.Type.Base != lang.Int {
		return v
	}
	return stdlib.Value{Type: want, AD: ev.toAD(v), Dims: v.Dims}
}

// makeArray builds an array of type at (dims = its outer sizes so far) from
// its elements, flattening nested arrays.
func (ev *evaluator) makeArray(at lang.Type, outer []int, elems []stdlib.Value) stdlib.Value {
	t := ev.tape()
	dims := append([]int(nil), outer...)
	if len(elems) > 0 && elems[0].Type.Dims > 0 {
		dims = append(dims, elems[0].Dims...)
	}
	v := stdlib.Value{Type: at, Dims: dims}
	switch {
	case at.Base == lang.Int:
		for _, el := range elems {
			if el.Type.Dims > 0 {
				v.Ints = append(v.Ints, el.Ints...)
			} else {
				v.Ints = append(v.Ints, el.Int)
			}
		}
	case at.Base == lang.Real:
		parts := make([]autodiff.Value, len(elems))
		n := 0
		for i, el := range elems {
			parts[i] = el.AD
			n += el.AD.Len()
		}
		v.AD = t.Concat(autodiff.VectorShape(n), parts...)
	default:
		for _, el := range elems {
			if el.Type.Dims > 0 {
				v.Elems = append(v.Elems, el.Elems...)
			} else {
				v.Elems = append(v.Elems, el)
			}
		}
	}
	return v
}

func (ev *evaluator) call(e *ir.Call) (stdlib.Value, error) {
	if e.Func.Name == "target" {
		return stdlib.RealValue(ev.targetSum()), nil
	}
	base := len(ev.args)
	defer func() { ev.args = ev.args[:base] }()
	for _, a := range e.Args {
		v, err := ev.expr(a)
		if err != nil {
			return v, err
		}
		ev.args = append(ev.args, v)
	}
	args := ev.args[base:]
	var named []stdlib.Value
	if len(e.Named) > 0 {
		named = make([]stdlib.Value, len(e.Named))
		for i, a := range e.Named {
			if a == nil {
				continue
			}
			v, err := ev.expr(a)
			if err != nil {
				return v, err
			}
			named[i] = v
		}
	}
	if ev.crn.depth > 0 && e.Func.Suffix == "_rng" {
		// Inside crn, the families with a reparameterization draw as
		// differentiable functions of their parameters and of noise from
		// the replicate's stream, whether or not their arguments depend
		// on parameters, so that crn's value is the same with and
		// without gradients.
		return ev.crnDraw(e, args, named)
	}
	propto := e.Func.Suffix == "_lupdf" || e.Func.Suffix == "_lupmf"
	return ev.callImpl(e.Position(), e.Func.Name, args, named, propto)
}

func (ev *evaluator) binary(e *ir.Binary) (stdlib.Value, error) {
	// && and || short-circuit, as in Stan.
	if e.Op == "&&" || e.Op == "||" {
		l, err := ev.truth(e.Left)
		if err != nil {
			return stdlib.Value{}, err
		}
		if (e.Op == "&&" && !l) || (e.Op == "||" && l) {
			return boolValue(l), nil
		}
		r, err := ev.truth(e.Right)
		return boolValue(r), err
	}
	l, err := ev.expr(e.Left)
	if err != nil {
		return l, err
	}
	r, err := ev.expr(e.Right)
	if err != nil {
		return r, err
	}
	switch e.Op {
	case "==", "!=", "<", "<=", ">", ">=":
		a, b := ev.scalar(l), ev.scalar(r)
		var ok bool
		switch e.Op {
		case "==":
			ok = a == b
		case "!=":
			ok = a != b
		case "<":
			ok = a < b
		case "<=":
			ok = a <= b
		case ">":
			ok = a > b
		case ">=":
			ok = a >= b
		}
		return boolValue(ok), nil
	}
	return ev.arith(e.Position(), e.Op, l, r)
}

// arith computes l op r for an arithmetic operator (also the op of a
// compound assignment): int arithmetic in Go, everything else on the tape,
// with * the matrix product between linear-algebra values. The result
// keeps l's array type and sizes when l is an array.
func (ev *evaluator) arith(p lang.Pos, op string, l, r stdlib.Value) (stdlib.Value, error) {
	t := ev.tape()
	if l.Type == lang.IntType && r.Type == lang.IntType {
		switch op {
		case "+", "-", "*", "/", "%/%", "%":
			n, err := lang.IntArith(op, l.Int, r.Int)
			if err != nil {
				return stdlib.Value{}, ev.domainf(p, "%v", err)
			}
			return stdlib.IntValue(n), nil
		}
	}
	a, b := ev.toAD(l), ev.toAD(r)
	var out autodiff.Value
	switch op {
	case "+":
		out = t.Add(a, b)
	case "-":
		out = t.Sub(a, b)
	case "*":
		if l.Type.Base.IsLinalg() && r.Type.Base.IsLinalg() {
			out = t.MatMul(a, b)
		} else {
			out = t.Mul(a, b)
		}
	case ".*":
		out = t.Mul(a, b)
	case "./":
		out = t.Div(a, b)
	case "/":
		if r.Type.IsScalar() {
			out = t.Div(a, b)
		} else {
			inv, err := ev.callImpl(p, "inverse", []stdlib.Value{r}, nil, false)
			if err != nil {
				return inv, err
			}
			out = t.MatMul(a, inv.AD)
		}
	case "\\":
		inv, err := ev.callImpl(p, "inverse", []stdlib.Value{l}, nil, false)
		if err != nil {
			return inv, err
		}
		out = t.MatMul(inv.AD, b)
	case "^", ".^":
		out = t.Pow(a, b)
	default:
		return stdlib.Value{}, ev.errorf(p, "operator %s is not implemented for %s and %s", op, l.Type, r.Type)
	}
	if err := t.Err(); err != nil {
		return stdlib.Value{}, ev.errorf(p, "%s: %v", op, err)
	}
	v := stdlib.ADValue(out)
	if l.Type.Dims > 0 {
		v.Type, v.Dims = l.Type.Promoted(), l.Dims
	}
	return v, nil
}

func boolValue(b bool) stdlib.Value {
	if b {
		return stdlib.IntValue(1)
	}
	return stdlib.IntValue(0)
}

// singleElement is the allocation-free path of indexing for the common
// case of one element selected by int indices from a real container, an
// int array or a matrix (x[i], M[i, j], a[i, j]). It reports false when
// the general path must be taken.
func (ev *evaluator) singleElement(e *ir.Index, x stdlib.Value) (stdlib.Value, bool, error) {
	if x.Type.Dims > 0 && x.Type.Base.IsLinalg() {
		return stdlib.Value{}, false, nil
	}
	var sizes [8]int
	n := 0
	switch {
	case x.Type.Dims > 0:
		if len(x.Dims) > len(sizes) {
			return stdlib.Value{}, false, nil
		}
		n = copy(sizes[:], x.Dims)
	case x.Type.Base == lang.Vector || x.Type.Base == lang.RowVector:
		sizes[0], n = x.AD.Len(), 1
	case x.Type.Base == lang.Matrix:
		sizes[0], sizes[1], n = x.AD.Rows(), x.AD.Cols(), 2
	default:
		return stdlib.Value{}, false, nil
	}
	if len(e.Items) != n {
		return stdlib.Value{}, false, nil
	}
	for _, it := range e.Items {
		if it.Kind != ir.IndexSingle {
			return stdlib.Value{}, false, nil
		}
	}
	flat := 0
	for k, it := range e.Items {
		i, err := ev.intExpr(it.Lo)
		if err != nil {
			return stdlib.Value{}, true, err
		}
		if i < 1 || i > sizes[k] {
			return stdlib.Value{}, true, ev.errorf(it.Pos, "index %d out of range: the size is %d", i, sizes[k])
		}
		flat = flat*sizes[k] + i - 1
	}
	if x.Type.Base == lang.Int {
		return stdlib.IntValue(x.Ints[flat]), true, nil
	}
	return stdlib.RealValue(ev.tape().Index(x.AD, flat)), true, nil
}

// cellElement reads one element of a real container variable whose
// elements were assigned one by one (unpacked cells), without packing the
// container: a loop that assigns v[i] and reads v[i − 1] stays O(n).
func (ev *evaluator) cellElement(e *ir.Index) (stdlib.Value, bool, error) {
	ref, ok := e.X.(*ir.VarRef)
	if !ok {
		return stdlib.Value{}, false, nil
	}
	s := &ev.frame[ref.Var.Slot]
	if !s.dirty || len(e.Items) != len(s.dims) {
		return stdlib.Value{}, false, nil
	}
	flat := 0
	for k, it := range e.Items {
		if it.Kind != ir.IndexSingle {
			return stdlib.Value{}, false, nil
		}
		i, err := ev.intExpr(it.Lo)
		if err != nil {
			return stdlib.Value{}, true, err
		}
		if i < 1 || i > s.dims[k] {
			return stdlib.Value{}, true, ev.errorf(it.Pos, "index %d out of range: the size is %d", i, s.dims[k])
		}
		flat = flat*s.dims[k] + i - 1
	}
	return stdlib.RealValue(s.cells[flat]), true, nil
}
