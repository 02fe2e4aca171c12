package mathlib

import (
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/stdlib"
)

// TestErrors checks that size mismatches, indices out of range and domain
// problems are errors that name the function (and the sizes), not panics
// or NaNs.
func TestErrors(t *testing.T) {
	sq := M(2, 2, 1, 2, 3, 4)
	for _, c := range []struct {
		fn   string
		args []arg
		want string
	}{
		{"dot_product", []arg{V(1, 2, 3), V(1, 2, 3, 4)}, "dot_product: sizes differ: 3 and 4"},
		{"squared_distance", []arg{V(1, 2), RV(1)}, "squared_distance: sizes differ: 2 and 1"},
		{"distance", []arg{A(1, 2), Is(1, 2, 3)}, "distance: sizes differ: 2 and 3"},
		{"pow", []arg{V(1, 2), V(1, 2, 3)}, "pow: sizes differ: 2 and 3"},
		{"fmod", []arg{M(1, 2, 1, 2), M(2, 1, 1, 2)}, "fmod: sizes differ: 1×2 and 2×1"},
		{"hypot", []arg{A2(1, 2, 1, 2), A2(2, 1, 1, 2)}, "hypot: array sizes differ: [1 2] and [2 1]"},
		{"fmax", []arg{AE(V(1, 2)), AE(V(1, 2, 3))}, "fmax: sizes differ: 2 and 3"},
		{"mean", []arg{V()}, "mean: argument is empty"},
		{"sd", []arg{A()}, "sd: argument is empty"},
		{"min", []arg{Is()}, "min: argument is empty"},
		{"inv_Phi", []arg{V(0.5, 1.5)}, "inv_Phi: element 2 is 1.5, outside [0, 1]"},
		{"inv_Phi", []arg{R(-1)}, "inv_Phi: argument -1 is outside [0, 1]"},
		{"rep_vector", []arg{R(1), I(-1)}, "rep_vector: size must be non-negative, got -1"},
		{"rep_matrix", []arg{V(1), I(-2)}, "rep_matrix: size must be non-negative, got -2"},
		{"rep_array", []arg{R(1), I(2), I(-1)}, "rep_array: size must be non-negative, got -1"},
		{"zeros_vector", []arg{I(-3)}, "zeros_vector: size must be non-negative"},
		{"identity_matrix", []arg{I(-3)}, "identity_matrix: size must be non-negative"},
		{"one_hot_vector", []arg{I(3), I(4)}, "one_hot_vector: index 4 out of range for size 3"},
		{"linspaced_vector", []arg{I(3), R(2), R(1)}, "linspaced_vector: low 2 is greater than high 1"},
		{"linspaced_array", []arg{I(-1), R(0), R(1)}, "linspaced_array: size must be non-negative"},
		{"to_matrix", []arg{V(1, 2, 3), I(2), I(2)}, "to_matrix: cannot fill a 2×2 matrix with 3 elements"},
		{"to_matrix", []arg{AE(RV(1, 2), RV(1))}, "to_matrix: row sizes differ: 2 and 1"},
		{"to_int", []arg{R(math.NaN())}, "to_int: NaN is out of the range of int"},
		{"to_int", []arg{R(1e300)}, "to_int: 1e+300 is out of the range of int"},
		{"append_row", []arg{M(1, 2, 1, 2), RV(1, 2, 3)}, "append_row: columns differ: 2 and 3"},
		{"append_row", []arg{RV(1, 2), RV(1)}, "append_row: columns differ: 2 and 1"},
		{"append_col", []arg{V(1, 2), V(1)}, "append_col: rows differ: 2 and 1"},
		{"append_col", []arg{sq, V(1, 2, 3)}, "append_col: rows differ: 2 and 3"},
		{"append_array", []arg{A2(1, 2, 1, 2), A2(1, 1, 3)}, "append_array: element sizes differ: [2] and [1]"},
		{"append_array", []arg{AE(V(1)), AE(V(1, 2))}, "append_array: element sizes differ: 1×1 and 2×1"},
		{"head", []arg{V(1, 2), I(3)}, "head: n = 3 out of range for size 2"},
		{"head", []arg{Is(1, 2), I(-1)}, "head: n = -1 out of range for size 2"},
		{"tail", []arg{RV(1, 2), I(3)}, "tail: n = 3 out of range for size 2"},
		{"segment", []arg{V(1, 2, 3), I(2), I(3)}, "segment: start 2 and length 3 out of range for size 3"},
		{"segment", []arg{A(1, 2, 3), I(0), I(1)}, "segment: start 0 and length 1 out of range for size 3"},
		{"rank", []arg{V(1, 2), I(3)}, "rank: index 3 out of range for size 2"},
		{"sort_asc", []arg{V(1, math.NaN())}, "sort_asc: argument contains NaN"},
		{"inverse", []arg{M(2, 2, 1, 2, 2, 4)}, "inverse: matrix is singular"},
		{"inverse", []arg{M(2, 3, 1, 2, 3, 4, 5, 6)}, "inverse: matrix is not square: 2×3"},
		{"determinant", []arg{M(1, 2, 1, 2)}, "determinant: matrix is not square: 1×2"},
		{"log_determinant", []arg{M(2, 2, 1, 2, 2, 4)}, "log_determinant: matrix is singular"},
		{"cholesky_decompose", []arg{M(2, 2, 1, 2, 2, 1)}, "cholesky_decompose: matrix is not positive definite"},
		{"cholesky_decompose", []arg{M(2, 2, 2, 1, 0, 2)}, "cholesky_decompose: matrix is not symmetric"},
		{"cholesky_decompose", []arg{M(2, 1, 2, 1)}, "cholesky_decompose: matrix is not square: 2×1"},
		{"mdivide_left_tri_low", []arg{sq, V(1, 2, 3)}, "mdivide_left_tri_low: sizes differ: 2 and 3"},
		{"mdivide_left_tri_low", []arg{M(2, 2, 0, 0, 1, 1), V(1, 2)}, "mdivide_left_tri_low: matrix is singular: diagonal element 1 is 0"},
		{"mdivide_right_tri_low", []arg{RV(1, 2, 3), sq}, "mdivide_right_tri_low: sizes differ: 3 and 2"},
		{"quad_form", []arg{sq, V(1, 2, 3)}, "quad_form: sizes differ: 2 and 3"},
		{"quad_form", []arg{M(1, 2, 1, 2), V(1, 2)}, "quad_form: matrix is not square: 1×2"},
		{"diag_pre_multiply", []arg{V(1, 2, 3), sq}, "diag_pre_multiply: sizes differ: 3 and 2"},
		{"diag_post_multiply", []arg{sq, V(1, 2, 3)}, "diag_post_multiply: sizes differ: 2 and 3"},
		{"block", []arg{sq, I(2), I(1), I(2), I(1)}, "block: block of 2×1 at (2, 1) out of range for a 2×2 matrix"},
		{"col", []arg{sq, I(3)}, "col: column 3 out of range for a 2×2 matrix"},
		{"row", []arg{sq, I(0)}, "row: row 0 out of range for a 2×2 matrix"},
	} {
		tc := tcase{fn: c.fn, args: c.args}
		for _, constant := range []bool{true, false} {
			tape := autodiff.NewTape()
			x := autodiff.Value{}
			if !constant {
				var x0 []float64
				for _, a := range c.args {
					x0 = append(x0, a.reals()...)
				}
				x = tape.VarVec(x0)
			}
			_, err := tc.call(tape, x)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want %q", tc.name(), err, c.want)
			}
			if err := tape.Err(); err != nil {
				t.Errorf("%s: tape error %v", tc.name(), err)
			}
		}
	}
}

// TestOneNode checks that vectorized operations record one node (or none,
// for views), not one per element.
func TestOneNode(t *testing.T) {
	v := V(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
	m := M(2, 4, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
	spd := M(2, 2, 2, 0.5, 0.5, 1)
	for _, c := range []struct {
		fn    string
		args  []arg
		nodes int
	}{
		{"exp", []arg{v}, 1},
		{"log1p_exp", []arg{m}, 1},
		{"pow", []arg{v, R(2)}, 1},
		{"fmod", []arg{v, v}, 1},
		{"sum", []arg{m}, 1},
		{"prod", []arg{v}, 1},
		{"variance", []arg{v}, 1},
		{"max", []arg{v}, 1},
		{"log_sum_exp", []arg{v}, 1},
		{"reverse", []arg{v}, 1},
		{"sort_desc", []arg{v}, 1},
		{"head", []arg{v, I(3)}, 0},
		{"segment", []arg{v, I(2), I(3)}, 0},
		{"to_vector", []arg{m}, 1},
		{"to_matrix", []arg{v, I(4), I(2)}, 1},
		{"rep_matrix", []arg{v, I(3)}, 1},
		{"append_row", []arg{v, v}, 1},
		{"append_col", []arg{m, m}, 2},
		{"cumulative_sum", []arg{v}, 1},
		{"linspaced_vector", []arg{I(8), R(0), R(1)}, 1},
		{"squared_distance", []arg{v, v}, 1},
		{"columns_dot_self", []arg{m}, 1},
		{"diag_matrix", []arg{v}, 1},
		{"inverse", []arg{spd}, 1},
		{"log_determinant", []arg{spd}, 1},
		{"cholesky_decompose", []arg{spd}, 1},
		{"mdivide_left_tri_low", []arg{spd, V(1, 2)}, 1},
		{"block", []arg{m, I(1), I(2), I(2), I(2)}, 1},
	} {
		tc := tcase{fn: c.fn, args: c.args}
		var x0 []float64
		for _, a := range c.args {
			x0 = append(x0, a.reals()...)
		}
		tape := autodiff.NewTape()
		x := tape.VarVec(x0)
		if _, err := tc.call(tape, x); err != nil {
			t.Fatalf("%s: %v", tc.name(), err)
		}
		if n := tape.NumNodes(); n != c.nodes {
			t.Errorf("%s: %d nodes, want %d", tc.name(), n, c.nodes)
		}
	}
}

// TestRegisterTwice checks that Register adds each name once: a second
// registration into the same table panics (a programming error).
func TestRegisterTwice(t *testing.T) {
	m := stdlib.Impls{}
	Register(m)
	defer func() {
		if recover() == nil {
			t.Error("registering twice did not panic")
		}
	}()
	Register(m)
}

// TestResultSizeLimit checks that built-ins whose sizes are arguments
// refuse a result beyond half of the machine's memory before allocating it
// (rep_matrix(mu, 50000, 50000) used to reach the out-of-memory killer).
func TestResultSizeLimit(t *testing.T) {
	limit := sysmem.MaxElements()
	if limit <= 0 {
		t.Skip("the machine's memory is unknown")
	}
	side := int(math.Sqrt(float64(limit))) + 2 // side² > limit
	for _, c := range []struct {
		fn   string
		args []arg
	}{
		{"rep_matrix", []arg{R(1), I(side), I(side)}},
		{"rep_matrix", []arg{V(1, 2, 3), I(int(limit))}},
		{"rep_vector", []arg{R(1), I(int(limit) + 1)}},
		{"rep_array", []arg{R(1), I(side), I(side)}},
		{"rep_array", []arg{V(1, 2), I(int(limit))}},
		{"identity_matrix", []arg{I(side)}},
		{"zeros_vector", []arg{I(int(limit) + 1)}},
		{"linspaced_vector", []arg{I(int(limit) + 1), R(0), R(1)}},
	} {
		tc := tcase{fn: c.fn, args: c.args}
		_, err := tc.call(autodiff.NewTape(), autodiff.Value{})
		if err == nil || !strings.Contains(err.Error(), "more than half of this machine's memory") {
			t.Errorf("%s: error %v", tc.name(), err)
		}
	}
}
