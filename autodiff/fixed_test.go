package autodiff

import (
	"slices"
	"testing"
)

func TestFixedElements(t *testing.T) {
	// appendCol builds the row-major n×2 matrix (a_i, b_i) as the stdlib's
	// append_col does: a Concat of both columns, then a Gather.
	appendCol := func(tp *Tape, a, b Value) Value {
		n := a.Len()
		both := tp.Concat(VectorShape(2*n), a, b)
		idx := make([]int, 0, 2*n)
		for i := range n {
			idx = append(idx, i, n+i)
		}
		return tp.Reshape(tp.Gather(both, idx), MatrixShape(n, 2))
	}
	tests := []struct {
		name  string
		build func(tp *Tape) Value
		want  []bool // nil: none known fixed
	}{
		{"constant", func(tp *Tape) Value { return tp.ConstVec([]float64{1, 2, 3}) }, []bool{true, true, true}},
		{"variable", func(tp *Tape) Value { return tp.VarVec([]float64{1, 2}) }, nil},
		{"computed", func(tp *Tape) Value { return tp.Exp(tp.VarVec([]float64{1, 2})) }, nil},
		{"append_row", func(tp *Tape) Value {
			return tp.Concat(VectorShape(4), tp.ConstVec([]float64{1, 2}), tp.VarVec([]float64{3, 4}))
		}, []bool{true, true, false, false}},
		{"scalars", func(tp *Tape) Value {
			return tp.Concat(VectorShape(3), tp.Var(1), tp.Const(2), tp.Var(3))
		}, []bool{false, true, false}},
		{"append_col data first", func(tp *Tape) Value {
			return appendCol(tp, tp.ConstVec([]float64{1, 2, 3}), tp.Exp(tp.VarVec([]float64{4, 5, 6})))
		}, []bool{true, false, true, false, true, false}},
		{"append_col data second", func(tp *Tape) Value {
			return appendCol(tp, tp.VarVec([]float64{1, 2}), tp.ConstVec([]float64{3, 4}))
		}, []bool{false, true, false, true}},
		{"append_col of a partly fixed column", func(tp *Tape) Value {
			a := tp.Concat(VectorShape(2), tp.Const(1), tp.Var(2))
			return appendCol(tp, a, tp.VarVec([]float64{3, 4}))
		}, []bool{true, false, false, false}},
		{"gather of a variable", func(tp *Tape) Value {
			return tp.Gather(tp.VarVec([]float64{1, 2, 3}), []int{2, 0})
		}, nil},
		{"function of append_col", func(tp *Tape) Value {
			return tp.Exp(appendCol(tp, tp.ConstVec([]float64{1}), tp.VarVec([]float64{2})))
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp := NewTape()
			v := tc.build(tp)
			got := make([]bool, v.Len())
			set := tp.FixedElements(v, got)
			if set != (tc.want != nil) {
				t.Fatalf("FixedElements reported %v, want %v", set, tc.want != nil)
			}
			want := tc.want
			if want == nil {
				want = make([]bool, v.Len())
			}
			if !slices.Equal(got, want) {
				t.Errorf("fixed = %v, want %v", got, want)
			}
			// The claim is what Gradient computes: every variable's
			// derivative of a fixed element is zero.
			for i, f := range got {
				if !f || v.IsConst() {
					continue
				}
				tp := NewTape()
				v := tc.build(tp)
				if err := tp.Gradient(tp.Index(v, i)); err != nil {
					t.Fatal(err)
				}
				g := make([]float64, tp.NumVars())
				if err := tp.VarGrad(g); err != nil {
					t.Fatal(err)
				}
				for k, gk := range g {
					if gk != 0 {
						t.Errorf("element %d is reported fixed, but its derivative by variable %d is %g", i, k, gk)
					}
				}
			}
		})
	}
}

func TestFixedElementsShortBuffer(t *testing.T) {
	tp := NewTape()
	v := tp.ConstVec([]float64{1, 2})
	if tp.FixedElements(v, make([]bool, 1)) {
		t.Error("a buffer shorter than the value was filled")
	}
}

// TestFixedElementsAllocs checks that FixedElements reuses the tape's
// buffers: a primitive calls it at every evaluation.
func TestFixedElementsAllocs(t *testing.T) {
	tp := NewTape()
	a, b := tp.ConstVec([]float64{1, 2, 3}), tp.VarVec([]float64{4, 5, 6})
	x := tp.Gather(tp.Concat(VectorShape(6), a, b), []int{0, 3, 1, 4, 2, 5})
	fixed := make([]bool, 6)
	tp.FixedElements(x, fixed)
	if n := testing.AllocsPerRun(10, func() { tp.FixedElements(x, fixed) }); n != 0 {
		t.Errorf("FixedElements allocates %g times per call", n)
	}
}
