package runtime

import (
	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// slot holds one variable's value during an evaluation. A real container
// assigned element by element keeps its elements in cells (scalar tape
// values) and is packed into one tape value only when read whole.
type slot struct {
	v     stdlib.Value
	cells []autodiff.Value // element values, row-major; nil when not unpacked
	dirty bool             // cells are newer than v.AD
	dims  []int            // declared sizes (array sizes, then vector/matrix sizes)
	set   bool             // the variable has been declared in this evaluation
}

// unpack gives the container in slot s element cells, views of the
// elements of x (its current value), unless it has them already: the
// container is being assigned element by element.
func (ev *evaluator) unpack(s *slot, x autodiff.Value) {
	if s.cells != nil {
		return
	}
	s.cells = ev.cellMem.get(x.Len())
	ev.tape().Elements(x, s.cells)
}

// cellPool hands out the memory of element cells and takes all of it back
// when the evaluator's tape is reset, when no slot can refer to it any
// more (declarations start with no cells): an evaluation that unpacks the
// same containers in the same order as the one before reuses its buffers
// and allocates nothing.
type cellPool struct {
	bufs [][]autodiff.Value // in the order of the last evaluation; bufs[next:] are free
	next int
}

// maxPooledCells bounds the buffers a pool keeps (an evaluator that is
// never reset, such as the REPL's, keeps at most these).
const maxPooledCells = 1024

func (p *cellPool) get(n int) []autodiff.Value {
	if p.next < len(p.bufs) && cap(p.bufs[p.next]) >= n {
		b := p.bufs[p.next][:n]
		p.next++
		return b
	}
	b := make([]autodiff.Value, n)
	switch {
	case p.next < len(p.bufs):
		p.bufs[p.next] = b // the free buffer there was too small
	case len(p.bufs) < maxPooledCells:
		p.bufs = append(p.bufs, b)
	default:
		return b
	}
	p.next++
	return b
}

// reset takes every buffer back.
func (p *cellPool) reset() { p.next = 0 }

// adShape returns the tape shape of a non-array value of type t with the
// given linear-algebra sizes, or of the flat storage of a real array.
func adShape(t lang.Type, sizes []int) autodiff.Shape {
	if t.Dims > 0 {
		return autodiff.VectorShape(product(sizes))
	}
	switch t.Base {
	case lang.Vector:
		return autodiff.VectorShape(sizes[0])
	case lang.RowVector:
		return autodiff.RowVectorShape(sizes[0])
	case lang.Matrix:
		return autodiff.MatrixShape(sizes[0], sizes[1])
	}
	return autodiff.ScalarShape()
}

// product returns the number of elements of the given sizes.
func product(sizes []int) int {
	n := 1
	for _, d := range sizes {
		n *= d
	}
	return n
}

// isADBacked reports whether values of type t are stored as one tape
// value (reals, vectors, matrices, and arrays of reals).
func isADBacked(t lang.Type) bool {
	return (t.Dims == 0 && t.Base != lang.Int && t.Base != lang.String) ||
		(t.Dims > 0 && t.Base == lang.Real)
}

// fullDims returns the sizes of a value: array sizes, then the vector
// length or the matrix rows and columns.
func fullDims(t *autodiff.Tape, v stdlib.Value) []int {
	dims := append([]int(nil), v.Dims...)
	if v.Type.Dims > 0 {
		if v.Type.Base.IsLinalg() && len(v.Elems) > 0 {
			dims = append(dims, linalgDims(v.Elems[0].AD, v.Type.Base)...)
		} else if v.Type.Base.IsLinalg() {
			// An empty array: the element sizes are unknown here.
			dims = append(dims, make([]int, linalgRank(v.Type.Base))...)
		}
		return dims
	}
	if v.Type.Base.IsLinalg() {
		return linalgDims(v.AD, v.Type.Base)
	}
	return nil
}

func linalgRank(b lang.Base) int {
	switch b {
	case lang.Vector, lang.RowVector:
		return 1
	case lang.Matrix:
		return 2
	}
	return 0
}

func linalgDims(v autodiff.Value, b lang.Base) []int {
	switch b {
	case lang.Vector, lang.RowVector:
		return []int{v.Len()}
	case lang.Matrix:
		return []int{v.Rows(), v.Cols()}
	}
	return nil
}
