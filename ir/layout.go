package ir

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/lang"
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
// matrix sizes) once the data are known. Naming the columns of tens of
// millions of values takes seconds: it stops with ctx's error once ctx is
// done (a nil ctx never is), and columns whose names would need more than
// an eighth of the memory the process may use are refused before any is
// named.
func NewLayout(ctx context.Context, decls []*Decl, dims func(*Decl) ([]int, error)) (*Layout, error) {
	l := &Layout{}
	columns := 0.0
	for _, d := range decls {
		ds, err := dims(d)
		if err != nil {
			return nil, err
		}
		size, n := 1, 1.0
		for _, k := range ds {
			if k < 0 {
				return nil, &DeclError{Decl: d, Msg: fmt.Sprintf("%s: negative size %d in %s", d.Var.Name, k, d.TypeText)}
			}
			size *= k
			n *= float64(k)
		}
		if d.Special != lang.NoSpecial {
			arr := d.Var.Type.Dims
			free, err := FreeSize(d.Special, ds[arr:])
			if err != nil {
				return nil, &DeclError{Decl: d, Msg: fmt.Sprintf("%s (%s): %v", d.Var.Name, d.TypeText, err)}
			}
			size = free
			for _, k := range ds[:arr] {
				size *= k
			}
		}
		columns += n
		if total, _ := sysmem.Total(); total > 0 && columns*columnNameBytes > float64(total)/8 {
			return nil, &DeclError{Decl: d, Msg: fmt.Sprintf("%s (%s): the parameters' draws would have %.4g columns, whose names need %s, more than an eighth of %s",
				d.Var.Name, d.TypeText, columns, sysmem.Bytes(columns*columnNameBytes), sysmem.Source())}
		}
		l.Entries = append(l.Entries, LayoutEntry{Decl: d, Dims: ds, Offset: l.Dim, Size: size})
		l.Dim += size
	}
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.Columns = columnNames(e.Decl.Var.Name, e.Dims, done); e.Columns == nil {
			return nil, ctx.Err()
		}
	}
	return l, nil
}

// A DeclError is NewLayout's error about a declaration (its sizes), for
// the caller to place at the declaration.
type DeclError struct {
	Decl *Decl
	Msg  string
}

func (e *DeclError) Error() string { return e.Msg }

// columnNameBytes is about what one column's name costs: its string
// header and a short name.
const columnNameBytes = 40

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
func ColumnNames(name string, dims []int) []string { return columnNames(name, dims, nil) }

// columnNames is ColumnNames that returns nil once done is closed,
// checked every 65 536 names.
func columnNames(name string, dims []int, done <-chan struct{}) []string {
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
		if k&0xffff == 0xffff && done != nil {
			select {
			case <-done:
				return nil
			default:
			}
		}
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

// FreeSize returns the number of unconstrained values of one element of a
// constrained type with the given value sizes ([K] for the vector types,
// [M, N] for the matrix types), as Stan counts them.
func FreeSize(s lang.Special, sizes []int) (int, error) {
	k := sizes[0]
	switch s {
	case lang.Simplex:
		if k < 1 {
			return 0, fmt.Errorf("a simplex needs at least 1 element, got %d", k)
		}
		return k - 1, nil
	case lang.UnitVector:
		if k < 1 {
			return 0, fmt.Errorf("a unit_vector needs at least 1 element, got %d", k)
		}
		return k, nil
	case lang.Ordered, lang.PositiveOrdered:
		return k, nil
	case lang.CholeskyFactorCorr, lang.CorrMatrix:
		return k * (k - 1) / 2, nil
	case lang.CovMatrix:
		return k * (k + 1) / 2, nil
	case lang.CholeskyFactorCov:
		m, n := sizes[0], sizes[1]
		if m < n {
			return 0, fmt.Errorf("cholesky_factor_cov[M, N] needs M ≥ N, got %d < %d", m, n)
		}
		return n*(n+1)/2 + (m-n)*n, nil
	}
	return 0, fmt.Errorf("unknown constrained type %v", s)
}
