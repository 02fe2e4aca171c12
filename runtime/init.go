package runtime

import (
	"fmt"
	"math/rand/v2"

	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// Unconstrain returns the unconstrained point for initial values given by
// name in init (constrained values, as a user writes them). Parameters
// absent from init are drawn uniformly from (−radius, radius) on the
// unconstrained scale with rng, as Stan does; rng may be nil only when
// every parameter is given.
func (m *Model) Unconstrain(init *data.Set, rng *rand.Rand, radius float64) ([]float64, error) {
	return m.unconstrain(func(name string) (*data.Value, bool) { return init.Lookup(name) }, rng, radius)
}

// UnconstrainColumns returns the unconstrained point whose constrained
// parameters are given by output column (as Model.Columns names them):
// for example the posterior means of the parameter columns.
func (m *Model) UnconstrainColumns(byColumn map[string]float64) ([]float64, error) {
	values := map[string]*data.Value{}
	for _, e := range m.Layout.Entries {
		v := &data.Value{Name: e.Decl.Var.Name, Dims: e.Dims, Data: make([]float64, e.Size)}
		order := stanOrder(e.Dims)
		for j, col := range e.Columns {
			x, ok := byColumn[col]
			if !ok {
				return nil, fmt.Errorf("no value for column %s", col)
			}
			v.Data[order[j]] = x
		}
		values[v.Name] = v
	}
	return m.unconstrain(func(name string) (*data.Value, bool) { v, ok := values[name]; return v, ok }, nil, 0)
}

func (m *Model) unconstrain(lookup func(string) (*data.Value, bool), rng *rand.Rand, radius float64) (_ []float64, err error) {
	d, err := m.NewDensity()
	if err != nil {
		return nil, err
	}
	defer d.ev.recoverTape(&err)
	d.start()
	ev := d.ev
	t := d.tape
	theta := make([]float64, m.Layout.Dim)
	for _, e := range m.Layout.Entries {
		decl := e.Decl
		name := decl.Var.Name
		var u []float64
		iv, given := lookup(name)
		b, err := ev.evalBounds(decl)
		if err != nil {
			return nil, err
		}
		if given {
			if !sizesMatch(e.Dims, iv) {
				return nil, fmt.Errorf("%s: initial value of %s has sizes %s, but %s declares %s",
					iv.Origin(), name, dimsText(iv.Dims), decl.TypeText, dimsText(e.Dims))
			}
			part := func(has bool, get func() []float64) []float64 {
				if !has {
					return nil
				}
				return append([]float64(nil), get()...)
			}
			if decl.Special != lang.NoSpecial {
				if u, err = freeSpecial(decl, e.Dims, iv.Data); err != nil {
					return nil, fmt.Errorf("%s: initial value of %v", iv.Origin(), err)
				}
				copy(theta[e.Offset:], u)
				v, _ := constrainSpecial(t, t.ConstVec(u), decl, e.Dims)
				ev.frame[decl.Var.Slot] = slot{v: v, dims: e.Dims, set: true}
				continue
			}
			lo := part(b.hasLo, func() []float64 { return t.Val(b.lo) })
			hi := part(b.hasHi, func() []float64 { return t.Val(b.hi) })
			off := part(b.hasOff, func() []float64 { return t.Val(b.offset) })
			mul := part(b.hasMul, func() []float64 { return t.Val(b.mult) })
			if u, err = unconstrain(iv.Data, lo, hi, off, mul); err != nil {
				return nil, fmt.Errorf("%s: initial value of %s (%s): %v", iv.Origin(), name, decl.TypeText, err)
			}
		} else {
			if rng == nil {
				return nil, fmt.Errorf("no initial value for %s", name)
			}
			u = make([]float64, e.Size)
			for i := range u {
				u[i] = (2*rng.Float64() - 1) * radius
			}
		}
		copy(theta[e.Offset:], u)
		if decl.Special != lang.NoSpecial {
			v, _ := constrainSpecial(t, t.ConstVec(u), decl, e.Dims)
			ev.frame[decl.Var.Slot] = slot{v: v, dims: e.Dims, set: true}
			continue
		}
		// Later bounds may depend on this parameter: set its value.
		x, _ := constrain(t, t.ConstVec(u), b)
		v := stdlib.Value{Type: decl.Var.Type, AD: x}
		if decl.Var.Type == lang.RealType {
			v.AD = t.Index(x, 0)
		} else if decl.Var.Type.Dims == 0 {
			v.AD = t.Reshape(x, adShape(decl.Var.Type, e.Dims))
		} else if decl.Var.Type.Base.IsLinalg() {
			inner := e.Dims[decl.Var.Type.Dims:]
			shape := adShape(lang.Type{Base: decl.Var.Type.Base}, inner)
			n := shape.Len()
			elems := make([]stdlib.Value, e.Size/max(n, 1))
			for i := range elems {
				elems[i] = stdlib.Value{Type: lang.Type{Base: decl.Var.Type.Base}, AD: t.Reshape(t.Slice(x, i*n, n), shape)}
			}
			v = stdlib.Value{Type: decl.Var.Type, Elems: elems, Dims: e.Dims[:decl.Var.Type.Dims]}
		} else {
			v.Dims = e.Dims
		}
		ev.frame[decl.Var.Slot] = slot{v: v, dims: e.Dims, set: true}
	}
	return theta, nil
}
