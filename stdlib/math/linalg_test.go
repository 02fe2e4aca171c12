package mathlib

import (
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/mat"
)

// gm returns a matrix argument as a gonum matrix.
func gm(a arg) *mat.Dense { return mat.NewDense(a.r, a.c, append([]float64(nil), a.x...)) }

// fromDense returns a gonum matrix as an expected matrix result.
func fromDense(m mat.Matrix) arg {
	r, c := m.Dims()
	xs := make([]float64, 0, r*c)
	for i := range r {
		for j := range c {
			xs = append(xs, m.At(i, j))
		}
	}
	return M(r, c, xs...)
}

func TestLinalg(t *testing.T) {
	// Eigenvalues and eigenvectors of a 3×3 symmetric matrix by gonum (its
	// signs).
	var es mat.EigenSym
	es.Factorize(mat.NewSymDense(3, []float64{4, 1, -2, 1, 3, 0.5, -2, 0.5, 1}), true)
	eig3 := es.Values(nil)
	var v3 mat.Dense
	es.VectorsTo(&v3)
	vec3 := v3.RawMatrix().Data
	a := M(3, 3, 2, 0.5, -1, 0.3, 3, 0.2, -0.4, 1, 4)
	spd := M(3, 3, 4, 1, 0.5, 1, 3, -0.2, 0.5, -0.2, 2)
	low := M(3, 3, 2, 9, 9, 0.5, 1.5, 9, -1, 0.3, 3) // upper triangle ignored
	lowOnly := M(3, 3, 2, 0, 0, 0.5, 1.5, 0, -1, 0.3, 3)
	b := M(3, 2, 1, -2, 0.5, 3, 2, 0.7)
	rect := M(2, 3, 1, 2, 3, -4, 5, 0.5)

	var inv, ata, aat, btab, lb, bl, llt mat.Dense
	if err := inv.Inverse(gm(a)); err != nil {
		t.Fatal(err)
	}
	ata.Mul(gm(rect).T(), gm(rect))
	aat.Mul(gm(rect), gm(rect).T())
	var tmp mat.Dense
	tmp.Mul(gm(a), gm(b))
	btab.Mul(gm(b).T(), &tmp)
	var chol mat.Cholesky
	if !chol.Factorize(mat.NewSymDense(3, spd.x)) {
		t.Fatal("reference Cholesky failed")
	}
	var l mat.TriDense
	chol.LTo(&l)
	if err := lb.Solve(gm(lowOnly), gm(b)); err != nil {
		t.Fatal(err)
	}
	// X = B2 L⁻¹ for a 2×3 B2: Xᵀ solves Lᵀ Xᵀ = B2ᵀ.
	b2 := M(2, 3, 1, 0.5, 2, -2, 3, 0.7)
	if err := bl.Solve(gm(lowOnly).T(), gm(b2).T()); err != nil {
		t.Fatal(err)
	}
	var blT mat.Dense
	blT.CloneFrom(bl.T())
	llt.Mul(gm(lowOnly), gm(lowOnly).T())
	var lv mat.VecDense
	if err := lv.SolveVec(gm(lowOnly), mat.NewVecDense(3, []float64{1, -2, 0.5})); err != nil {
		t.Fatal(err)
	}
	var rl mat.VecDense // row vector r L⁻¹: solve Lᵀ x = rᵀ
	if err := rl.SolveVec(gm(lowOnly).T(), mat.NewVecDense(3, []float64{1, -2, 0.5})); err != nil {
		t.Fatal(err)
	}
	v := []float64{1, -2, 0.5}
	av := mat.NewVecDense(3, nil)
	av.MulVec(gm(a), mat.NewVecDense(3, v))
	vav := mat.Dot(mat.NewVecDense(3, v), av)
	det := mat.Det(gm(a))
	negDet := M(2, 2, 1, 2, 3, 4) // det -2

	for _, c := range []tcase{
		{fn: "dot_product", args: []arg{V(1, 2, 3), V(0.5, -1, 2)}, want: R(0.5 - 2 + 6)},
		{fn: "dot_product", args: []arg{RV(1, 2, 3), V(0.5, -1, 2)}, want: R(4.5)},
		{fn: "dot_product", args: []arg{A(1, 2), Is(3, -1)}, want: R(1)},
		{fn: "dot_product", args: []arg{Is(1, 2), Is(3, -1)}, want: R(1)},
		{fn: "dot_self", args: []arg{V(1, 2, 3)}, want: R(14)},
		{fn: "dot_self", args: []arg{RV(-1, 0.5)}, want: R(1.25)},
		{fn: "dot_self", args: []arg{Is(2, 3)}, want: R(13)},
		{fn: "squared_distance", args: []arg{V(1, 2, 3), V(0.5, -1, 2)}, want: R(0.25 + 9 + 1)},
		{fn: "squared_distance", args: []arg{RV(1, 2), A(3, 5)}, want: R(13)},
		{fn: "distance", args: []arg{V(1, 2, 3), RV(0.5, -1, 2)}, want: R(math.Sqrt(10.25))},
		{fn: "distance", args: []arg{Is(0, 0), A(3, 4)}, want: R(5)},
		{fn: "columns_dot_self", args: []arg{rect}, want: RV(17, 29, 9.25)},
		{fn: "rows_dot_self", args: []arg{rect}, want: V(14, 41.25)},
		{fn: "diag_matrix", args: []arg{V(1, 2, 3)}, want: M(3, 3, 1, 0, 0, 0, 2, 0, 0, 0, 3)},
		{fn: "diagonal", args: []arg{rect}, want: V(1, 5)},
		{fn: "identity_matrix", args: []arg{I(2)}, want: M(2, 2, 1, 0, 0, 1)},
		{fn: "transpose", args: []arg{V(1, 2)}, want: RV(1, 2)},
		{fn: "transpose", args: []arg{RV(1, 2)}, want: V(1, 2)},
		{fn: "transpose", args: []arg{rect}, want: M(3, 2, 1, -4, 2, 5, 3, 0.5)},
		{fn: "inverse", args: []arg{a}, want: fromDense(&inv), tol: 1e-9},
		{fn: "determinant", args: []arg{a}, want: R(det), tol: 1e-9},
		{fn: "determinant", args: []arg{M(2, 2, 1, 2, 2, 4)}, want: R(0), tol: 1e-9}, // singular
		{fn: "log_determinant", args: []arg{a}, want: R(math.Log(math.Abs(det))), tol: 1e-9},
		{fn: "log_determinant", args: []arg{negDet}, want: R(math.Log(2)), tol: 1e-9},
		{fn: "cholesky_decompose", args: []arg{spd}, want: fromDense(&l), symmetric: []int{0}, tol: 1e-9},
		{fn: "mdivide_left_tri_low", args: []arg{low, V(v...)}, want: V(lv.RawVector().Data...), tol: 1e-9},
		{fn: "mdivide_left_tri_low", args: []arg{low, b}, want: fromDense(&lb), tol: 1e-9},
		{fn: "mdivide_right_tri_low", args: []arg{RV(v...), low}, want: RV(rl.RawVector().Data...), tol: 1e-9},
		{fn: "mdivide_right_tri_low", args: []arg{b2, low}, want: fromDense(&blT), tol: 1e-9},
		{fn: "crossprod", args: []arg{rect}, want: fromDense(&ata)},
		{fn: "tcrossprod", args: []arg{rect}, want: fromDense(&aat)},
		{fn: "quad_form", args: []arg{a, V(v...)}, want: R(vav)},
		{fn: "quad_form", args: []arg{a, b}, want: fromDense(&btab)},
		{fn: "diag_pre_multiply", args: []arg{V(2, -1), rect}, want: M(2, 3, 2, 4, 6, 4, -5, -0.5)},
		{fn: "diag_post_multiply", args: []arg{rect, V(2, -1, 3)}, want: M(2, 3, 2, -2, 9, -8, -5, 1.5)},
		{fn: "multiply_lower_tri_self_transpose", args: []arg{low}, want: fromDense(&llt)},
		{fn: "block", args: []arg{a, I(2), I(1), I(2), I(2)}, want: M(2, 2, 0.3, 3, -0.4, 1)},
		{fn: "col", args: []arg{rect, I(3)}, want: V(3, 0.5)},
		{fn: "row", args: []arg{rect, I(2)}, want: RV(-4, 5, 0.5)},
		{fn: "quad_form_diag", args: []arg{M(2, 2, 1, 2, 3, 4), V(2, -1)}, want: M(2, 2, 4, -4, -6, 4)},
		{fn: "quad_form_diag", args: []arg{M(2, 2, 1, 2, 3, 4), RV(0.5, 3)}, want: M(2, 2, 0.25, 3, 4.5, 36)},
		{fn: "sub_col", args: []arg{rect, I(1), I(2), I(2)}, want: V(2, 5)},
		{fn: "sub_row", args: []arg{rect, I(2), I(2), I(2)}, want: RV(5, 0.5)},
		{fn: "sub_row", args: []arg{rect, I(1), I(1), I(0)}, want: RV()},
		// [[2, 1], [1, 2]]: eigenvalues 1 and 3.
		{fn: "eigenvalues_sym", args: []arg{M(2, 2, 2, 1, 1, 2)}, want: V(1, 3), symmetric: []int{0}},
		{fn: "eigenvalues_sym", args: []arg{M(3, 3, 4, 1, -2, 1, 3, 0.5, -2, 0.5, 1)}, want: V(eig3...), symmetric: []int{0}, tol: 1e-9},
		{fn: "eigenvectors_sym", args: []arg{M(3, 3, 4, 1, -2, 1, 3, 0.5, -2, 0.5, 1)}, want: M(3, 3, vec3...), symmetric: []int{0}, tol: 1e-9},
	} {
		c.run(t, covered)
	}
	// The SPD family against gonum's inverse.
	spdX := []float64{4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2}
	var sInv mat.Dense
	if err := sInv.Inverse(mat.NewDense(3, 3, spdX)); err != nil {
		t.Fatal(err)
	}
	bvec := mat.NewVecDense(3, []float64{1, -2, 0.5})
	var sb mat.VecDense
	sb.MulVec(&sInv, bvec)
	bmat := mat.NewDense(3, 2, []float64{1, 0, -1, 2, 0.5, 1})
	var sbm, bts mat.Dense
	sbm.Mul(&sInv, bmat)
	bts.Mul(bmat.T(), &sInv)
	var brow mat.VecDense
	brow.MulVec(sInv.T(), bvec)
	var bt, qf mat.Dense
	bt.Mul(bmat.T(), mat.NewDense(3, 3, spdX))
	qf.Mul(&bt, bmat)
	vsv := mat.Inner(bvec, mat.NewDense(3, 3, spdX), bvec)
	S := M(3, 3, spdX...)
	for _, c := range []tcase{
		{fn: "inverse_spd", args: []arg{S}, want: fromDense(&sInv), symmetric: []int{0}, tol: 1e-12},
		{fn: "mdivide_left_spd", args: []arg{S, V(1, -2, 0.5)}, want: V(sb.RawVector().Data...), symmetric: []int{0}, tol: 1e-12},
		{fn: "mdivide_left_spd", args: []arg{S, fromDense(bmat)}, want: fromDense(&sbm), symmetric: []int{0}, tol: 1e-12},
		{fn: "mdivide_right_spd", args: []arg{RV(1, -2, 0.5), S}, want: RV(brow.RawVector().Data...), symmetric: []int{1}, tol: 1e-12},
		{fn: "mdivide_right_spd", args: []arg{fromDense(mat.DenseCopyOf(bmat.T())), S}, want: fromDense(&bts), symmetric: []int{1}, tol: 1e-12},
		{fn: "quad_form_sym", args: []arg{S, V(1, -2, 0.5)}, want: R(vsv), symmetric: []int{0}, tol: 1e-12},
		{fn: "quad_form_sym", args: []arg{S, fromDense(bmat)}, want: fromDense(&qf), symmetric: []int{0}, tol: 1e-12},
	} {
		c.run(t, covered)
	}
	for _, name := range []string{"inverse_spd", "quad_form_sym"} {
		args := []stdlib.Value{stdlib.ADValue(autodiff.NewTape().NewConst(autodiff.MatrixShape(2, 2), []float64{1, 2, 0, 1}))}
		if name == "quad_form_sym" {
			args = append(args, stdlib.Value{})
		}
		tp := autodiff.NewTape()
		args[0] = stdlib.ADValue(tp.NewConst(autodiff.MatrixShape(2, 2), []float64{1, 2, 0, 1}))
		if name == "quad_form_sym" {
			args[1] = stdlib.ADValue(tp.ConstVec([]float64{1, 1}))
		}
		if _, err := impls[name](&stdlib.Context{Tape: tp}, args, nil); err == nil {
			t.Errorf("%s of a non-symmetric matrix: no error", name)
		}
	}
	tp := autodiff.NewTape()
	if _, err := impls["inverse_spd"](&stdlib.Context{Tape: tp}, []stdlib.Value{stdlib.ADValue(tp.NewConst(autodiff.MatrixShape(2, 2), []float64{1, 2, 2, 1}))}, nil); err == nil {
		t.Error("inverse_spd of an indefinite matrix: no error")
	}
	// gp_exp_quad_cov against the kernel written out.
	k := func(alpha, rho float64, x1, x2 [][]float64) arg {
		out := M(len(x1), len(x2), make([]float64, len(x1)*len(x2))...)
		for i := range x1 {
			for j := range x2 {
				d2 := 0.0
				for c := range x1[i] {
					d2 += (x1[i][c] - x2[j][c]) * (x1[i][c] - x2[j][c])
				}
				out.x[i*len(x2)+j] = alpha * alpha * math.Exp(-d2/(2*rho*rho))
			}
		}
		return out
	}
	pts := [][]float64{{0.1}, {-0.7}, {1.3}}
	other := [][]float64{{0.4}, {2}}
	vecs := [][]float64{{0.1, 1}, {-0.7, 0.2}, {1.3, -0.5}}
	vecs2 := [][]float64{{0, 0}, {1, 1}}
	for _, c := range []tcase{
		{fn: "gp_exp_quad_cov", args: []arg{A(0.1, -0.7, 1.3), R(1.5), R(0.8)}, want: k(1.5, 0.8, pts, pts)},
		{fn: "gp_exp_quad_cov", args: []arg{A(0.1, -0.7, 1.3), A(0.4, 2), R(1.5), R(0.8)}, want: k(1.5, 0.8, pts, other)},
		{fn: "gp_exp_quad_cov", args: []arg{AE(V(0.1, 1), V(-0.7, 0.2), V(1.3, -0.5)), R(0.9), I(2)}, want: k(0.9, 2, vecs, vecs)},
		{fn: "gp_exp_quad_cov", args: []arg{AE(V(0.1, 1), V(-0.7, 0.2), V(1.3, -0.5)), AE(V(0, 0), V(1, 1)), R(0.9), R(1.1)}, want: k(0.9, 1.1, vecs, vecs2)},
	} {
		c.run(t, covered)
	}
}

func TestConstants(t *testing.T) {
	for _, c := range []tcase{
		{fn: "pi", want: R(math.Pi)},
		{fn: "e", want: R(math.Exp(1))},
		{fn: "sqrt2", want: R(math.Sqrt(2))},
		{fn: "log2", want: R(math.Log(2))},
		{fn: "log10", want: R(math.Log(10))},
		{fn: "not_a_number", want: R(math.NaN())},
		{fn: "positive_infinity", want: R(math.Inf(1))},
		{fn: "negative_infinity", want: R(math.Inf(-1))},
		{fn: "machine_precision", want: R(math.Nextafter(1, 2) - 1)},
	} {
		c.tol = 1e-15
		c.run(t, covered)
	}
}

// TestEigenSymProperties: A·v_k = λ_k·v_k, the eigenvalues ascending and
// the eigenvectors orthonormal, on a symmetric 4×4 matrix.
func TestEigenSymProperties(t *testing.T) {
	a := []float64{4, 1, -2, 0.3, 1, 3, 0.5, -1, -2, 0.5, 1, 0.2, 0.3, -1, 0.2, 2}
	tp := autodiff.NewTape()
	x := tp.NewConst(autodiff.MatrixShape(4, 4), a)
	c := &stdlib.Context{Tape: tp}
	vals, err := impls["eigenvalues_sym"](c, []stdlib.Value{stdlib.ADValue(x)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := impls["eigenvectors_sym"](c, []stdlib.Value{stdlib.ADValue(x)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, v := tp.Val(vals.AD), tp.Val(vecs.AD)
	for k := 0; k < 4; k++ {
		if k > 0 && !(l[k] >= l[k-1]) {
			t.Errorf("eigenvalues not ascending: %v", l)
		}
		for i := 0; i < 4; i++ {
			av := 0.0
			for j := 0; j < 4; j++ {
				av += a[i*4+j] * v[j*4+k]
			}
			if math.Abs(av-l[k]*v[i*4+k]) > 1e-12 {
				t.Errorf("(A v_%d)[%d] = %g, λ v = %g", k+1, i+1, av, l[k]*v[i*4+k])
			}
		}
		for m := 0; m < 4; m++ {
			d := 0.0
			for i := 0; i < 4; i++ {
				d += v[i*4+k] * v[i*4+m]
			}
			want := 0.0
			if k == m {
				want = 1
			}
			if math.Abs(d-want) > 1e-12 {
				t.Errorf("v_%d·v_%d = %g", k+1, m+1, d)
			}
		}
	}
	if _, err := impls["eigenvalues_sym"](c, []stdlib.Value{stdlib.ADValue(tp.NewConst(autodiff.MatrixShape(2, 2), []float64{1, 2, 3, 1}))}, nil); err == nil {
		t.Error("a non-symmetric matrix: no error")
	}
}
