package mathlib

import (
	"math"
	"slices"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

func registerReductions(m stdlib.Impls) {
	m.Add("sum", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		if isInt(v) {
			s := 0
			for _, n := range v.Ints {
				s += n // within int64: each term is 32-bit
			}
			return intResult("sum", s)
		}
		return stdlib.RealValue(c.Tape.Sum(v.AD)), nil
	})
	m.Add("prod", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		if isInt(v) {
			p := 1
			for _, n := range v.Ints {
				if p *= n; !lang.IsInt32(p) {
					return intResult("prod", p)
				}
			}
			return stdlib.IntValue(p), nil
		}
		return stdlib.RealValue(prod(c.Tape, v.AD)), nil
	})
	for _, name := range []string{"mean", "variance", "sd"} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			x := toAD(c.Tape, args[0])
			if x.Len() == 0 {
				return value{}, errorf(name, "argument is empty")
			}
			return stdlib.RealValue(moments(c.Tape, name, x)), nil
		})
	}
	for _, name := range []string{"min", "max"} {
		less := func(a, b float64) bool { return a < b }
		f := autodiff.Fmin
		if name == "max" {
			less = func(a, b float64) bool { return a > b }
			f = autodiff.Fmax
		}
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			t := c.Tape
			if len(args) == 2 {
				a, b := args[0], args[1]
				if a.Type == intType && b.Type == intType {
					if less(float64(b.Int), float64(a.Int)) {
						return b, nil
					}
					return a, nil
				}
				return stdlib.RealValue(t.Binary(f, toAD(t, a), toAD(t, b))), nil
			}
			v := args[0]
			if isInt(v) {
				if len(v.Ints) == 0 {
					return value{}, errorf(name, "argument is empty")
				}
				best := v.Ints[0]
				for _, n := range v.Ints[1:] {
					if less(float64(n), float64(best)) {
						best = n
					}
				}
				return stdlib.IntValue(best), nil
			}
			xs := t.Val(v.AD)
			if len(xs) == 0 {
				// Stan: the minimum of nothing is +∞, the maximum -∞.
				if name == "min" {
					return stdlib.RealValue(t.Const(math.Inf(1))), nil
				}
				return stdlib.RealValue(t.Const(math.Inf(-1))), nil
			}
			k := 0
			for i, x := range xs {
				if math.IsNaN(x) {
					k = i
					break
				}
				if less(x, xs[k]) {
					k = i
				}
			}
			return stdlib.RealValue(t.Index(t.Gather(v.AD, []int{k}), 0)), nil
		})
	}
	m.Add("size", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		switch {
		case v.Type.Dims > 0:
			return stdlib.IntValue(v.Dims[0]), nil
		case v.IsScalar():
			return stdlib.IntValue(1), nil
		}
		return stdlib.IntValue(v.AD.Len()), nil
	})
	m.Add("num_elements", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.IntValue(numElements(args[0])), nil
	})
	m.Add("rows", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.IntValue(args[0].AD.Rows()), nil
	})
	m.Add("cols", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.IntValue(args[0].AD.Cols()), nil
	})
	m.Add("dims", func(c *ctx, args, _ []value) (value, error) {
		v := args[0]
		d := slices.Clone(v.Dims)
		if d == nil {
			d = []int{}
		}
		if v.Type.Base.IsLinalg() {
			x := v.AD
			if hasElems(v) {
				if len(v.Elems) == 0 {
					return intArr(append(d, 0, 0)), nil
				}
				x = v.Elems[0].AD
			}
			d = append(d, x.Rows(), x.Cols())
		}
		return intArr(d), nil
	})
}

// numElements returns the total number of scalars in v.
func numElements(v value) int {
	switch {
	case hasElems(v):
		n := 0
		for _, e := range v.Elems {
			n += e.Len()
		}
		return n
	case v.Type.Dims > 0:
		return v.Len()
	case v.IsScalar():
		return 1
	}
	return v.AD.Len()
}

// prod returns the product of the elements of x (one partials node); the
// partial derivative with respect to x_j is the product of the others,
// computed from prefix and suffix products so that zeros are exact.
func prod(t *autodiff.Tape, x ad) ad {
	p := t.ScalarPartials(x)
	xs := t.Val(x) // read after recording: the arena may have moved
	n := len(xs)
	out := 1.0
	for _, v := range xs {
		out *= v
	}
	p.Out()[0] = out
	if d := p.D(0); d != nil {
		pre := 1.0
		for j := range n {
			d[j] = pre
			pre *= xs[j]
		}
		suf := 1.0
		for j := n - 1; j >= 0; j-- {
			d[j] *= suf
			suf *= xs[j]
		}
	}
	return p.Value()
}

// moments returns the mean, the sample variance or the sample standard
// deviation of the elements of x (one partials node). The variance and sd
// of a single element are 0.
func moments(t *autodiff.Tape, name string, x ad) ad {
	p := t.ScalarPartials(x)
	xs := t.Val(x) // read after recording: the arena may have moved
	n := float64(len(xs))
	mean := 0.0
	for _, v := range xs {
		mean += v
	}
	mean /= n
	ss := 0.0
	for _, v := range xs {
		ss += (v - mean) * (v - mean)
	}
	d := p.D(0)
	switch name {
	case "mean":
		p.Out()[0] = mean
		for j := range d {
			d[j] = 1 / n
		}
	case "variance":
		if n > 1 {
			p.Out()[0] = ss / (n - 1)
			for j := range d {
				d[j] = 2 * (xs[j] - mean) / (n - 1)
			}
		}
	case "sd":
		if n > 1 {
			sd := math.Sqrt(ss / (n - 1))
			p.Out()[0] = sd
			for j := range d {
				if sd > 0 {
					d[j] = (xs[j] - mean) / ((n - 1) * sd)
				}
			}
		}
	}
	return p.Value()
}
