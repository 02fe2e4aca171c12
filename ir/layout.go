package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// Layout places the parameters in the sampler's unconstrained vector and
// names their output columns.
type Layout struct {
	Entries []LayoutEntry
	// Dim is the length of the unconstrained parameter vector.
	Dim int
}

// LayoutEntry is one parameter's place in the unconstrained vector.
type LayoutEntry struct {
	Decl *Decl
	// Dims are the sizes: array sizes first, then the vector length or
	// the matrix rows and columns; empty for a scalar.
	Dims []int
	// Offset and Size locate the parameter's unconstrained values; the
	// values of a container are stored in row-major order (the last index
	// fastest), as the runtime holds them.
	Offset, Size int
	// Columns are the output column names in Stan's style (x.1.2) and
	// order (the first index fastest).
	Columns []string
}

// NewLayout lays out the parameter declarations decls, given their sizes.
// dims returns the sizes of a declaration (array sizes, then vector or
// matrix sizes) once the data are known.
func NewLayout(decls []*Decl, dims func(*Decl) ([]int, error)) (*Layout, error) {
	l := &Layout{}
	for _, d := range decls {
		ds, err := dims(d)
		if err != nil {
			return nil, err
		}
		size := 1
		for _, n := range ds {
			if n < 0 {
				return nil, fmt.Errorf("%s: negative size %d in %s", d.Var.Name, n, d.TypeText)
			}
			size *= n
		}
		l.Entries = append(l.Entries, LayoutEntry{
			Decl: d, Dims: ds, Offset: l.Dim, Size: size,
			Columns: ColumnNames(d.Var.Name, ds),
		})
		l.Dim += size
	}
	return l, nil
}

// StaticDims returns the sizes of a declaration when they are all
// compile-time constants.
func StaticDims(d *Decl) ([]int, bool) {
	var out []int
	for _, e := range append(append([]Expr{}, d.ArraySizes...), d.Sizes...) {
		n, ok := ConstInt(e)
		if !ok {
			return nil, false
		}
		out = append(out, int(n))
	}
	return out, true
}

// ColumnNames returns the output column names of a variable with the
// given sizes, in Stan's order: the first index varies fastest, so a
// matrix[2, 2] m gives m.1.1, m.2.1, m.1.2, m.2.2.
func ColumnNames(name string, dims []int) []string {
	total := 1
	for _, n := range dims {
		total *= n
	}
	if len(dims) == 0 {
		return []string{name}
	}
	out := make([]string, 0, total)
	idx := make([]int, len(dims))
	var b strings.Builder
	for k := 0; k < total; k++ {
		b.Reset()
		b.WriteString(name)
		for _, i := range idx {
			b.WriteByte('.')
			b.WriteString(strconv.Itoa(i + 1))
		}
		out = append(out, b.String())
		for j := range idx {
			idx[j]++
			if idx[j] < dims[j] {
				break
			}
			idx[j] = 0
		}
	}
	return out
}
