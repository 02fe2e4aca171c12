package runtime

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// bindData reads every data declaration from set into the evaluator's
// frame, in declaration order, checking sizes, types and constraints. Its
// warnings name the first infinite element of each real value: allowed
// in data (as in Stan), but a density of it is zero, and the failure
// later names only the statement.
func (ev *evaluator) bindData(decls []*ir.Decl, set *data.Set, sources string) (warnings []string, err error) {
	for i, d := range decls {
		dv, ok := set.Lookup(d.Var.Name)
		var sized []string // the declarations it sizes, all missing
		if !ok && d.Var.Type == lang.IntType {
			n, found, users, err := inferSize(d.Var, decls[i+1:], set)
			if err != nil {
				return warnings, err
			}
			if found {
				ev.frame[d.Var.Slot] = slot{v: stdlib.IntValue(n), set: true}
				if err := ev.checkBounds(d, stdlib.IntValue(n)); err != nil {
					return warnings, fmt.Errorf("%s (inferred from the data): %v", d.Var.Name, err)
				}
				continue
			}
			sized = users
		}
		if !ok && len(sized) > 0 {
			// The size is missing because what it sizes is: name that.
			return warnings, fmt.Errorf("data variable %s is missing: not found in %s (%s, its size, would have been inferred from it)",
				sized[0], sources, d.Var.Name)
		}
		if !ok {
			return warnings, fmt.Errorf("data variable %s (%s) is missing: not found in %s", d.Var.Name, d.TypeText, sources)
		}
		dims, err := ev.declDims(d)
		if err != nil {
			return warnings, err
		}
		v, err := ev.fromData(d, dims, dv)
		if err != nil {
			return warnings, err
		}
		ev.frame[d.Var.Slot] = slot{v: v, dims: dims, set: true}
		if k := slices.IndexFunc(dv.Data, func(x float64) bool { return math.IsInf(x, 0) }); k >= 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %s%s is %+g: allowed in data, but a distribution of it has zero density",
				dv.Where(k), d.Var.Name, indexText(dims, k), dv.Data[k]))
		}
		if err := ev.checkDataBounds(d, v, dv); err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

// inferSize finds the value of an int that sizes a later declaration from
// that declaration's data: N in vector[N] y is the length of y. When none
// is found, users lists the declarations it sizes ("y (vector[N])").
// A value of the declaration that has too few sizes is an error.
func inferSize(v *ir.Var, later []*ir.Decl, set *data.Set) (n int, found bool, users []string, err error) {
	for _, d := range later {
		sizes := append(append([]ir.Expr{}, d.ArraySizes...), d.Sizes...)
		for p, e := range sizes {
			ref, ok := e.(*ir.VarRef)
			if !ok || ref.Var != v {
				continue
			}
			dv, ok := set.Lookup(d.Var.Name)
			if ok && p >= len(dv.Dims) {
				// The value is there but has too few sizes: say that
				// rather than that it is missing.
				return 0, false, nil, fmt.Errorf("%s: %s is declared %s, but the data gives %s (%s, its size, would have been inferred from it)",
					dv.Origin(), d.Var.Name, d.TypeText, dimsText(dv.Dims), v.Name)
			}
			if !ok {
				users = append(users, d.Var.Name+" ("+d.TypeText+")")
				continue
			}
			return dv.Dims[p], true, nil, nil
		}
	}
	return 0, false, users, nil
}

// fromData converts a data value to a runtime value of declaration d with
// sizes dims.
func (ev *evaluator) fromData(d *ir.Decl, dims []int, dv *data.Value) (stdlib.Value, error) {
	t := ev.tape()
	typ := d.Var.Type
	if !sizesMatch(dims, dv) && len(dims) == 0 {
		return stdlib.Value{}, fmt.Errorf("%s: %s is declared %s, a scalar, but the data has sizes %s",
			dv.Origin(), d.Var.Name, d.TypeText, dimsText(dataDims(dv)))
	}
	if !sizesMatch(dims, dv) && len(dv.Dims) == 0 {
		return stdlib.Value{}, fmt.Errorf("%s: %s is declared %s with sizes %s, but the data gives a scalar",
			dv.Origin(), d.Var.Name, d.TypeText, dimsText(dims))
	}
	if !sizesMatch(dims, dv) {
		return stdlib.Value{}, fmt.Errorf("%s: %s is declared %s with sizes %s, but the data has sizes %s",
			dv.Origin(), d.Var.Name, d.TypeText, dimsText(dims), dimsText(dataDims(dv)))
	}
	if k, text, ok := dv.WrittenAsReal(); ok && typ.Base == lang.Int {
		return stdlib.Value{}, fmt.Errorf("%s: %s%s must be an int, found %q (an int is written without a fraction or an exponent)",
			dv.Where(k), d.Var.Name, indexText(dims, k), text)
	}
	for k, x := range dv.Data {
		switch {
		case typ.Base == lang.Int && (x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x)):
			return stdlib.Value{}, fmt.Errorf("%s: %s%s must be an int, found %g", dv.Where(k), d.Var.Name, indexText(dims, k), x)
		case typ.Base == lang.Int && (x > math.MaxInt32 || x < math.MinInt32):
			return stdlib.Value{}, fmt.Errorf("%s: %s%s = %g does not fit in an int", dv.Where(k), d.Var.Name, indexText(dims, k), x)
		case math.IsNaN(x):
			return stdlib.Value{}, fmt.Errorf("%s: %s%s is NaN, which is not allowed in data", dv.Where(k), d.Var.Name, indexText(dims, k))
		}
	}
	arr := dims[:typ.Dims]
	switch {
	case typ == lang.IntType:
		return stdlib.IntValue(int(dv.Data[0])), nil
	case typ.Base == lang.Int:
		ints := make([]int, len(dv.Data))
		for i, x := range dv.Data {
			ints[i] = int(x)
		}
		return stdlib.Value{Type: typ, Ints: ints, Dims: arr}, nil
	case typ.Dims > 0 && typ.Base.IsLinalg():
		inner := dims[typ.Dims:]
		shape := adShape(lang.Type{Base: typ.Base}, inner)
		n := shape.Len()
		count := len(dv.Data) / max(n, 1)
		if n == 0 {
			count = 1
			for _, a := range arr {
				count *= a
			}
		}
		elems := make([]stdlib.Value, count)
		for i := range elems {
			elems[i] = stdlib.Value{Type: lang.Type{Base: typ.Base}, AD: t.NewConst(shape, dv.Data[i*n:(i+1)*n])}
		}
		return stdlib.Value{Type: typ, Elems: elems, Dims: arr}, nil
	case typ.Dims > 0:
		return stdlib.Value{Type: typ, AD: t.ConstVec(dv.Data), Dims: arr}, nil
	}
	return stdlib.Value{Type: typ, AD: t.NewConst(adShape(typ, dims), dv.Data)}, nil
}

// dataDims returns the sizes of a data value, with a one-row CSV column
// counting as a scalar.
func dataDims(dv *data.Value) []int { return dv.Dims }

// sizesMatch reports whether a data value has the declared sizes. A
// scalar may come as a one-row CSV column, but not as a one-element array
// (CmdStan refuses [2] for int N), and an empty value matches any
// declaration with zero elements.
func sizesMatch(dims []int, dv *data.Value) bool {
	if len(dims) == 0 {
		return len(dv.Data) == 1 && (len(dv.Dims) == 0 || (dv.IsColumn() && len(dv.Dims) == 1 && dv.Dims[0] == 1))
	}
	total := 1
	for _, n := range dims {
		total *= n
	}
	if total == 0 {
		return len(dv.Data) == 0
	}
	if len(dv.Dims) != len(dims) {
		return false
	}
	for i := range dims {
		if dims[i] != dv.Dims[i] {
			return false
		}
	}
	return true
}

// checkDataBounds checks a data variable's constraint and names the data
// cell of a violation.
func (ev *evaluator) checkDataBounds(d *ir.Decl, v stdlib.Value, dv *data.Value) error {
	if d.Special != lang.NoSpecial {
		if err := checkSpecial(d, dv.Dims, dv.Data); err != nil {
			return fmt.Errorf("%s: %v", dv.Origin(), err)
		}
		return nil
	}
	if d.Lower == nil && d.Upper == nil {
		return nil
	}
	b, err := ev.evalBounds(d)
	if err != nil {
		return err
	}
	t := ev.tape()
	var lo, hi []float64
	if b.hasLo {
		lo = t.Val(b.lo)
	}
	if b.hasHi {
		hi = t.Val(b.hi)
	}
	dims := fullDims(t, v)
	for k, x := range ev.flatValues(v) {
		if lo != nil {
			if l := lo[min(k, len(lo)-1)]; !(x >= l) {
				return fmt.Errorf("%s: %s%s = %g violates the constraint lower=%g", dv.Where(k), d.Var.Name, indexText(dims, k), x, l)
			}
		}
		if hi != nil {
			if h := hi[min(k, len(hi)-1)]; !(x <= h) {
				return fmt.Errorf("%s: %s%s = %g violates the constraint upper=%g", dv.Where(k), d.Var.Name, indexText(dims, k), x, h)
			}
		}
	}
	return nil
}

// copyValue copies a value from one tape to another as constants.
func copyValue(dst, src *autodiff.Tape, v stdlib.Value) stdlib.Value {
	switch {
	case v.Type.Base == lang.Int || v.Type.Base == lang.String:
		return v
	case v.Type.Dims > 0 && v.Type.Base.IsLinalg():
		out := v
		out.Elems = make([]stdlib.Value, len(v.Elems))
		for i, el := range v.Elems {
			out.Elems[i] = copyValue(dst, src, el)
		}
		return out
	}
	out := v
	out.AD = dst.NewConst(v.AD.Shape(), src.Val(v.AD))
	return out
}

// joinNames renders file names for messages: "a.csv and b.json".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return "the data (no data file given)"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
