package mathlib

import (
	"testing"

	"github.com/shmlang/shm/lang"
)

func TestConstruction(t *testing.T) {
	for _, c := range []tcase{
		{fn: "rep_vector", args: []arg{R(1.5), I(3)}, want: V(1.5, 1.5, 1.5)},
		{fn: "rep_vector", args: []arg{I(2), I(2)}, want: V(2, 2)},
		{fn: "rep_row_vector", args: []arg{R(-0.5), I(2)}, want: RV(-0.5, -0.5)},
		{fn: "rep_matrix", args: []arg{R(0.25), I(2), I(3)}, want: M(2, 3, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25)},
		{fn: "rep_matrix", args: []arg{V(1, 2), I(3)}, want: M(2, 3, 1, 1, 1, 2, 2, 2)},
		{fn: "rep_matrix", args: []arg{RV(1, 2, 3), I(2)}, want: M(2, 3, 1, 2, 3, 1, 2, 3)},
		{fn: "rep_array", args: []arg{R(0.5), I(3)}, want: A(0.5, 0.5, 0.5)},
		{fn: "rep_array", args: []arg{I(4), I(2)}, want: Is(4, 4)},
		{fn: "rep_array", args: []arg{V(1, 2), I(2)}, want: AE(V(1, 2), V(1, 2))},
		{fn: "rep_array", args: []arg{A(1, 2), I(2)}, want: A2(2, 2, 1, 2, 1, 2)},
		{fn: "rep_array", args: []arg{Is(1, 2), I(2)}, want: Is2(2, 2, 1, 2, 1, 2)},
		{fn: "rep_array", args: []arg{R(0.5), I(2), I(3)}, want: A2(2, 3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5)},
		{fn: "rep_array", args: []arg{I(7), I(1), I(2)}, want: Is2(1, 2, 7, 7)},
		{fn: "rep_array", args: []arg{M(1, 2, 3, 4), I(2), I(1)}, want: AE2(2, 1, M(1, 2, 3, 4), M(1, 2, 3, 4))},
		{fn: "rep_array", args: []arg{R(-1), I(1), I(2), I(2)},
			want: arg{typ: lang.ArrayOf(realType, 3), x: []float64{-1, -1, -1, -1}, dims: []int{1, 2, 2}}},
		{fn: "rep_array", args: []arg{RV(1, 2), I(2), I(1), I(1)},
			want: arg{typ: lang.ArrayOf(rowType, 3), dims: []int{2, 1, 1}, elems: []arg{RV(1, 2), RV(1, 2)}}},
		{fn: "to_vector", args: []arg{RV(1, 2, 3)}, want: V(1, 2, 3)},
		{fn: "to_vector", args: []arg{V(1, 2, 3)}, want: V(1, 2, 3)},
		{fn: "to_vector", args: []arg{A(1, 2)}, want: V(1, 2)},
		{fn: "to_vector", args: []arg{Is(1, 2)}, want: V(1, 2)},
		{fn: "to_vector", args: []arg{M(2, 3, 1, 2, 3, 4, 5, 6)}, want: V(1, 4, 2, 5, 3, 6)},
		{fn: "to_row_vector", args: []arg{V(1, 2, 3)}, want: RV(1, 2, 3)},
		{fn: "to_row_vector", args: []arg{Is(3)}, want: RV(3)},
		{fn: "to_row_vector", args: []arg{M(2, 2, 1, 2, 3, 4)}, want: RV(1, 3, 2, 4)},
		{fn: "to_matrix", args: []arg{M(2, 2, 1, 2, 3, 4)}, want: M(2, 2, 1, 2, 3, 4)},
		{fn: "to_matrix", args: []arg{V(1, 2, 3, 4, 5, 6), I(2), I(3)}, want: M(2, 3, 1, 3, 5, 2, 4, 6)},
		{fn: "to_matrix", args: []arg{RV(1, 2, 3, 4, 5, 6), I(3), I(2)}, want: M(3, 2, 1, 4, 2, 5, 3, 6)},
		// M is [1 2 3; 4 5 6], column-major 1 4 2 5 3 6, refilled 3×2.
		{fn: "to_matrix", args: []arg{M(2, 3, 1, 2, 3, 4, 5, 6), I(3), I(2)}, want: M(3, 2, 1, 5, 4, 3, 2, 6)},
		{fn: "to_matrix", args: []arg{A2(2, 3, 1, 2, 3, 4, 5, 6)}, want: M(2, 3, 1, 2, 3, 4, 5, 6)},
		{fn: "to_matrix", args: []arg{Is2(1, 2, 7, 8)}, want: M(1, 2, 7, 8)},
		{fn: "to_matrix", args: []arg{AE(RV(1, 2), RV(3, 4), RV(5, 6))}, want: M(3, 2, 1, 2, 3, 4, 5, 6)},
		{fn: "to_array_1d", args: []arg{Is(3, 1)}, want: Is(3, 1)},
		{fn: "to_array_1d", args: []arg{Is2(2, 2, 1, 2, 3, 4)}, want: Is(1, 2, 3, 4)},
		{fn: "to_array_1d", args: []arg{V(1, 2)}, want: A(1, 2)},
		{fn: "to_array_1d", args: []arg{RV(1, 2)}, want: A(1, 2)},
		{fn: "to_array_1d", args: []arg{M(2, 2, 1, 2, 3, 4)}, want: A(1, 3, 2, 4)},
		{fn: "to_array_1d", args: []arg{A2(2, 2, 1, 2, 3, 4)}, want: A(1, 2, 3, 4)},
		{fn: "to_array_1d", args: []arg{AE(V(1, 2), V(3, 4))}, want: A(1, 2, 3, 4)},
		{fn: "to_array_1d", args: []arg{AE(M(2, 2, 1, 2, 3, 4), M(1, 1, 5))}, want: A(1, 3, 2, 4, 5)},
		{fn: "to_array_1d", args: []arg{R(2.5)}, want: A(2.5)},
		{fn: "to_int", args: []arg{R(2.7)}, want: I(2)},
		{fn: "to_int", args: []arg{R(-2.7)}, want: I(-2)},
		{fn: "to_int", args: []arg{I(5)}, want: I(5)},
		{fn: "linspaced_vector", args: []arg{I(5), R(1), R(3)}, want: V(1, 1.5, 2, 2.5, 3)},
		{fn: "linspaced_vector", args: []arg{I(1), R(1), R(3)}, want: V(3)},
		{fn: "linspaced_vector", args: []arg{I(0), R(1), R(3)}, want: V()},
		{fn: "linspaced_row_vector", args: []arg{I(3), R(-1), I(1)}, want: RV(-1, 0, 1)},
		{fn: "linspaced_array", args: []arg{I(4), R(0), R(0.3)}, want: A(0, 0.1, 0.2, 0.3)},
		{fn: "one_hot_vector", args: []arg{I(4), I(2)}, want: V(0, 1, 0, 0)},
		{fn: "zeros_vector", args: []arg{I(3)}, want: V(0, 0, 0)},
		{fn: "ones_vector", args: []arg{I(2)}, want: V(1, 1)},
	} {
		c.tol = 1e-14
		c.run(t, covered)
	}
}

func TestAppend(t *testing.T) {
	for _, c := range []tcase{
		{fn: "append_row", args: []arg{V(1, 2), V(3)}, want: V(1, 2, 3)},
		{fn: "append_row", args: []arg{R(0.5), V(3, 4)}, want: V(0.5, 3, 4)},
		{fn: "append_row", args: []arg{I(1), V(3, 4)}, want: V(1, 3, 4)},
		{fn: "append_row", args: []arg{V(3, 4), R(-1)}, want: V(3, 4, -1)},
		{fn: "append_row", args: []arg{M(1, 2, 1, 2), M(2, 2, 3, 4, 5, 6)}, want: M(3, 2, 1, 2, 3, 4, 5, 6)},
		{fn: "append_row", args: []arg{RV(1, 2), RV(3, 4)}, want: M(2, 2, 1, 2, 3, 4)},
		{fn: "append_row", args: []arg{M(1, 2, 1, 2), RV(3, 4)}, want: M(2, 2, 1, 2, 3, 4)},
		{fn: "append_row", args: []arg{RV(1, 2), M(1, 2, 3, 4)}, want: M(2, 2, 1, 2, 3, 4)},
		{fn: "append_col", args: []arg{RV(1, 2), RV(3)}, want: RV(1, 2, 3)},
		{fn: "append_col", args: []arg{R(0.5), RV(3, 4)}, want: RV(0.5, 3, 4)},
		{fn: "append_col", args: []arg{RV(3, 4), I(2)}, want: RV(3, 4, 2)},
		{fn: "append_col", args: []arg{M(2, 1, 1, 2), M(2, 2, 3, 4, 5, 6)}, want: M(2, 3, 1, 3, 4, 2, 5, 6)},
		{fn: "append_col", args: []arg{V(1, 2), V(3, 4)}, want: M(2, 2, 1, 3, 2, 4)},
		{fn: "append_col", args: []arg{M(2, 2, 1, 2, 3, 4), V(5, 6)}, want: M(2, 3, 1, 2, 5, 3, 4, 6)},
		{fn: "append_col", args: []arg{V(5, 6), M(2, 2, 1, 2, 3, 4)}, want: M(2, 3, 5, 1, 2, 6, 3, 4)},
		{fn: "append_array", args: []arg{Is(1, 2), Is(3)}, want: Is(1, 2, 3)},
		{fn: "append_array", args: []arg{A(1, 2), A(3)}, want: A(1, 2, 3)},
		{fn: "append_array", args: []arg{A(1.5), Is(3)}, want: A(1.5, 3)},
		{fn: "append_array", args: []arg{Is(3), A(1.5)}, want: A(3, 1.5)},
		{fn: "append_array", args: []arg{A2(1, 2, 1, 2), A2(1, 2, 3, 4)}, want: A2(2, 2, 1, 2, 3, 4)},
		{fn: "append_array", args: []arg{AE(V(1, 2)), AE(V(3, 4), V(5, 6))}, want: AE(V(1, 2), V(3, 4), V(5, 6))},
	} {
		c.tol = 1e-14
		c.run(t, covered)
	}
}

func TestSelectAndSort(t *testing.T) {
	for _, c := range []tcase{
		{fn: "head", args: []arg{V(1, 2, 3), I(2)}, want: V(1, 2)},
		{fn: "head", args: []arg{RV(1, 2, 3), I(0)}, want: RV()},
		{fn: "head", args: []arg{A(1, 2, 3), I(3)}, want: A(1, 2, 3)},
		{fn: "head", args: []arg{Is(4, 5, 6), I(1)}, want: Is(4)},
		{fn: "tail", args: []arg{V(1, 2, 3), I(2)}, want: V(2, 3)},
		{fn: "tail", args: []arg{RV(1, 2, 3), I(1)}, want: RV(3)},
		{fn: "tail", args: []arg{Is(4, 5, 6), I(2)}, want: Is(5, 6)},
		{fn: "segment", args: []arg{V(1, 2, 3, 4), I(2), I(2)}, want: V(2, 3)},
		{fn: "segment", args: []arg{A(1, 2, 3, 4), I(4), I(1)}, want: A(4)},
		{fn: "segment", args: []arg{Is(1, 2, 3, 4), I(1), I(3)}, want: Is(1, 2, 3)},
		{fn: "reverse", args: []arg{V(1, 2, 3)}, want: V(3, 2, 1)},
		{fn: "reverse", args: []arg{RV(1, 2)}, want: RV(2, 1)},
		{fn: "reverse", args: []arg{A(1, 2)}, want: A(2, 1)},
		{fn: "reverse", args: []arg{Is(1, 2, 5)}, want: Is(5, 2, 1)},
		{fn: "sort_asc", args: []arg{V(0.3, -1, 2, 0.1)}, want: V(-1, 0.1, 0.3, 2)},
		{fn: "sort_asc", args: []arg{RV(0.3, -1, 2)}, want: RV(-1, 0.3, 2)},
		{fn: "sort_asc", args: []arg{Is(3, 1, 2)}, want: Is(1, 2, 3)},
		{fn: "sort_desc", args: []arg{A(0.3, -1, 2, 0.1)}, want: A(2, 0.3, 0.1, -1)},
		{fn: "sort_desc", args: []arg{Is(3, 1, 2)}, want: Is(3, 2, 1)},
		{fn: "sort_indices_asc", args: []arg{V(0.3, -1, 2, 0.1)}, want: Is(2, 4, 1, 3)},
		{fn: "sort_indices_asc", args: []arg{Is(3, 1, 3, 2)}, want: Is(2, 4, 1, 3)},
		{fn: "sort_indices_desc", args: []arg{RV(0.3, -1, 2, 0.1)}, want: Is(3, 1, 4, 2)},
		{fn: "rank", args: []arg{V(0.3, -1, 2, 0.1), I(1)}, want: I(2)},
		{fn: "rank", args: []arg{Is(5, 1, 5, 2), I(3)}, want: I(2)},
		{fn: "cumulative_sum", args: []arg{V(1, 2, 3)}, want: V(1, 3, 6)},
		{fn: "cumulative_sum", args: []arg{RV(1, -2)}, want: RV(1, -1)},
		{fn: "cumulative_sum", args: []arg{A(0.5, 0.25)}, want: A(0.5, 0.75)},
		{fn: "cumulative_sum", args: []arg{Is(1, 2, 3)}, want: Is(1, 3, 6)},
	} {
		c.tol = 1e-14
		c.run(t, covered)
	}
}
