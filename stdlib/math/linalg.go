package mathlib

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

func registerLinalg(m stdlib.Impls) {
	m.Add("dot_product", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		a, b := toAD(t, args[0]), toAD(t, args[1])
		if a.Len() != b.Len() {
			return value{}, errorf("dot_product", "sizes differ: %d and %d", a.Len(), b.Len())
		}
		return stdlib.RealValue(t.Dot(a, b)), nil
	})
	m.Add("dot_self", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.RealValue(c.Tape.DotSelf(toAD(c.Tape, args[0]))), nil
	})
	for _, name := range []string{"squared_distance", "distance"} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			t := c.Tape
			a, b := toAD(t, args[0]), toAD(t, args[1])
			if a.Len() != b.Len() {
				return value{}, errorf(name, "sizes differ: %d and %d", a.Len(), b.Len())
			}
			return stdlib.RealValue(distance(t, a, b, name == "distance")), nil
		})
	}
	m.Add("columns_dot_self", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(squareSums(c.Tape, args[0].AD, false)), nil
	})
	m.Add("rows_dot_self", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(squareSums(c.Tape, args[0].AD, true)), nil
	})
	m.Add("diag_matrix", func(c *ctx, args, _ []value) (value, error) {
		x := args[0].AD
		n := x.Len()
		src := make([]int, n*n)
		for k := range src {
			src[k] = -1
		}
		for i := range n {
			src[i*n+i] = i
		}
		return stdlib.ADValue(gatherZero(c.Tape, x, src, autodiff.MatrixShape(n, n))), nil
	})
	m.Add("quad_form_diag", func(c *ctx, args, _ []value) (value, error) {
		// diag(v)·m·diag(v): m_ij·v_i·v_j.
		t := c.Tape
		mx, v := args[0].AD, args[1].AD
		n := v.Len()
		if mx.Rows() != n || mx.Cols() != n {
			return value{}, errorf("quad_form_diag", "the matrix is %d×%d but the vector has %d elements", mx.Rows(), mx.Cols(), n)
		}
		col := t.Reshape(v, autodiff.VectorShape(n))
		outer := t.MatMul(col, t.Transpose(col))
		return stdlib.ADValue(t.Mul(mx, outer)), nil
	})
	for _, name := range []string{"sub_col", "sub_row"} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			// sub_col(m, i, j, n): m[i:(i+n−1), j]; sub_row(m, i, j, n):
			// m[i, j:(j+n−1)].
			t := c.Tape
			mx := args[0].AD
			i, j, n := args[1].Int, args[2].Int, args[3].Int
			rows, cols := mx.Rows(), mx.Cols()
			lastI, lastJ := i+n-1, j
			if name == "sub_row" {
				lastI, lastJ = i, j+n-1
			}
			if n < 0 || i < 1 || j < 1 || (n > 0 && (lastI > rows || lastJ > cols)) || (n == 0 && (i > rows+1 || j > cols+1)) {
				return value{}, errorf(name, "the block of %d from [%d, %d] is outside the %d×%d matrix", n, i, j, rows, cols)
			}
			idx := make([]int, n)
			for k := range idx {
				if name == "sub_col" {
					idx[k] = (i-1+k)*cols + j - 1
				} else {
					idx[k] = (i-1)*cols + j - 1 + k
				}
			}
			out := t.Gather(mx, idx)
			if name == "sub_row" {
				out = t.Reshape(out, autodiff.RowVectorShape(n))
			}
			return stdlib.ADValue(out), nil
		})
	}
	m.Add("gp_exp_quad_cov", gpExpQuadCov)
	for _, name := range []string{"eigenvalues_sym", "eigenvectors_sym"} {
		m.Add(name, func(c *ctx, args, _ []value) (value, error) {
			return eigenSym(c.Tape, name, args[0].AD)
		})
	}
	m.Add("diagonal", func(c *ctx, args, _ []value) (value, error) {
		x := args[0].AD
		n := min(x.Rows(), x.Cols())
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i*x.Cols() + i
		}
		return stdlib.ADValue(gather(c.Tape, x, idx, autodiff.VectorShape(n))), nil
	})
	m.Add("identity_matrix", func(c *ctx, args, _ []value) (value, error) {
		n := args[0].Int
		if err := count("identity_matrix", n, n); err != nil {
			return value{}, err
		}
		xs := make([]float64, n*n)
		for i := range n {
			xs[i*n+i] = 1
		}
		return stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(n, n), xs)), nil
	})
	m.Add("transpose", func(c *ctx, args, _ []value) (value, error) {
		return stdlib.ADValue(c.Tape.Transpose(args[0].AD)), nil
	})
	m.Add("inverse", func(c *ctx, args, _ []value) (value, error) {
		return inverse(c.Tape, args[0].AD)
	})
	m.Add("determinant", func(c *ctx, args, _ []value) (value, error) {
		return determinant(c.Tape, args[0].AD, false)
	})
	m.Add("log_determinant", func(c *ctx, args, _ []value) (value, error) {
		return determinant(c.Tape, args[0].AD, true)
	})
	m.Add("cholesky_decompose", func(c *ctx, args, _ []value) (value, error) {
		return cholesky(c.Tape, args[0].AD)
	})
	m.Add("mdivide_left_tri_low", func(c *ctx, args, _ []value) (value, error) {
		return triSolve(c.Tape, "mdivide_left_tri_low", args[0].AD, args[1].AD, true)
	})
	m.Add("mdivide_right_tri_low", func(c *ctx, args, _ []value) (value, error) {
		return triSolve(c.Tape, "mdivide_right_tri_low", args[1].AD, args[0].AD, false)
	})
	m.Add("crossprod", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		x := args[0].AD
		return stdlib.ADValue(t.MatMul(t.Transpose(x), x)), nil
	})
	m.Add("tcrossprod", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		x := args[0].AD
		return stdlib.ADValue(t.MatMul(x, t.Transpose(x))), nil
	})
	m.Add("quad_form", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		a, b := args[0].AD, args[1].AD
		if a.Rows() != a.Cols() {
			return value{}, errorf("quad_form", "matrix is not square: %d×%d", a.Rows(), a.Cols())
		}
		if a.Cols() != b.Rows() {
			return value{}, errorf("quad_form", "sizes differ: %d and %d", a.Cols(), b.Rows())
		}
		r := t.MatMul(t.Transpose(b), t.MatMul(a, b))
		if b.Kind() == autodiff.Vector {
			return stdlib.RealValue(r), nil
		}
		return stdlib.ADValue(r), nil
	})
	m.Add("quad_form_sym", func(c *ctx, args, _ []value) (value, error) {
		// Bᵀ A B with A symmetric; a matrix result is symmetrized.
		t := c.Tape
		if err := symmetricArg("quad_form_sym", t, args[0].AD); err != nil {
			return value{}, err
		}
		v, err := m["quad_form"](c, args, nil)
		if err != nil || v.Type == lang.RealType {
			return v, err
		}
		return stdlib.ADValue(t.Mul(t.Add(v.AD, t.Transpose(v.AD)), t.Const(0.5))), nil
	})
	m.Add("inverse_spd", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		inv, err := spdInverse(t, "inverse_spd", args[0].AD)
		if err != nil {
			return value{}, err
		}
		return stdlib.ADValue(t.Mul(t.Add(inv, t.Transpose(inv)), t.Const(0.5))), nil
	})
	m.Add("mdivide_left_spd", func(c *ctx, args, _ []value) (value, error) {
		// A⁻¹ b.
		t := c.Tape
		a, b := args[0].AD, args[1].AD
		if a.Cols() != b.Rows() {
			return value{}, errorf("mdivide_left_spd", "sizes differ: %d×%d and %d rows", a.Rows(), a.Cols(), b.Rows())
		}
		inv, err := spdInverse(t, "mdivide_left_spd", a)
		if err != nil {
			return value{}, err
		}
		return stdlib.ADValue(t.MatMul(inv, b)), nil
	})
	m.Add("mdivide_right_spd", func(c *ctx, args, _ []value) (value, error) {
		// b A⁻¹.
		t := c.Tape
		b, a := args[0].AD, args[1].AD
		if b.Cols() != a.Rows() {
			return value{}, errorf("mdivide_right_spd", "sizes differ: %d columns and %d×%d", b.Cols(), a.Rows(), a.Cols())
		}
		inv, err := spdInverse(t, "mdivide_right_spd", a)
		if err != nil {
			return value{}, err
		}
		return stdlib.ADValue(t.MatMul(b, inv)), nil
	})
	m.Add("diag_pre_multiply", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		v, x := args[0].AD, args[1].AD
		if v.Len() != x.Rows() {
			return value{}, errorf("diag_pre_multiply", "sizes differ: %d and %d", v.Len(), x.Rows())
		}
		idx := make([]int, 0, x.Len())
		for i := range x.Rows() {
			for range x.Cols() {
				idx = append(idx, i)
			}
		}
		return stdlib.ADValue(t.Mul(gather(t, v, idx, x.Shape()), x)), nil
	})
	m.Add("diag_post_multiply", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		x, v := args[0].AD, args[1].AD
		if v.Len() != x.Cols() {
			return value{}, errorf("diag_post_multiply", "sizes differ: %d and %d", x.Cols(), v.Len())
		}
		idx := make([]int, 0, x.Len())
		for range x.Rows() {
			for j := range x.Cols() {
				idx = append(idx, j)
			}
		}
		return stdlib.ADValue(t.Mul(x, gather(t, v, idx, x.Shape()))), nil
	})
	m.Add("multiply_lower_tri_self_transpose", func(c *ctx, args, _ []value) (value, error) {
		t := c.Tape
		l := lowerTri(t, args[0].AD)
		return stdlib.ADValue(t.MatMul(l, t.Transpose(l))), nil
	})
	m.Add("block", func(c *ctx, args, _ []value) (value, error) {
		x := args[0].AD
		i, j, nr, nc := args[1].Int, args[2].Int, args[3].Int, args[4].Int
		if i < 1 || j < 1 || nr < 0 || nc < 0 || i-1+nr > x.Rows() || j-1+nc > x.Cols() {
			return value{}, errorf("block", "block of %d×%d at (%d, %d) out of range for a %d×%d matrix", nr, nc, i, j, x.Rows(), x.Cols())
		}
		idx := make([]int, 0, nr*nc)
		for r := range nr {
			for k := range nc {
				idx = append(idx, (i-1+r)*x.Cols()+j-1+k)
			}
		}
		return stdlib.ADValue(gather(c.Tape, x, idx, autodiff.MatrixShape(nr, nc))), nil
	})
	m.Add("col", func(c *ctx, args, _ []value) (value, error) {
		x, j := args[0].AD, args[1].Int
		if j < 1 || j > x.Cols() {
			return value{}, errorf("col", "column %d out of range for a %d×%d matrix", j, x.Rows(), x.Cols())
		}
		return stdlib.ADValue(c.Tape.Col(x, j-1)), nil
	})
	m.Add("row", func(c *ctx, args, _ []value) (value, error) {
		x, i := args[0].AD, args[1].Int
		if i < 1 || i > x.Rows() {
			return value{}, errorf("row", "row %d out of range for a %d×%d matrix", i, x.Rows(), x.Cols())
		}
		return stdlib.ADValue(c.Tape.Row(x, i-1)), nil
	})
}

// distance returns the (squared) Euclidean distance between a and b, one
// partials node.
func distance(t *autodiff.Tape, a, b ad, root bool) ad {
	p := t.ScalarPartials(a, b)
	// Read the inputs after recording: the arena may have moved.
	av, bv := t.Val(a), t.Val(b)
	ss := 0.0
	for i := range av {
		d := av[i] - bv[i]
		ss += d * d
	}
	scale := 2.0
	if root {
		ss = math.Sqrt(ss)
		scale = 0
		if ss > 0 {
			scale = 1 / ss
		}
	}
	p.Out()[0] = ss
	da, db := p.D(0), p.D(1)
	for i := range av {
		d := scale * (av[i] - bv[i])
		if da != nil {
			da[i] = d
		}
		if db != nil {
			db[i] = -d
		}
	}
	return p.Value()
}

// dense returns a copy of the values of x as an r×c matrix.
func dense(t *autodiff.Tape, x ad) *mat.Dense {
	return mat.NewDense(x.Rows(), x.Cols(), slices.Clone(t.Val(x)))
}

// squareSums sums the squares of the elements of a matrix by row (a
// vector) or by column (a row vector): one custom node.
type squareSumsNode struct{ byRow bool }

func (n *squareSumsNode) Backward(t *autodiff.Tape, out ad, ins []ad) {
	x := ins[0]
	xs, dx, g := t.Val(x), t.Adj(x), t.Adj(out)
	c := x.Cols()
	for k, v := range xs {
		i, j := k/c, k%c
		if n.byRow {
			dx[k] += 2 * v * g[i]
		} else {
			dx[k] += 2 * v * g[j]
		}
	}
}

var (
	byRowNode = &squareSumsNode{byRow: true}
	byColNode = &squareSumsNode{byRow: false}
)

func squareSums(t *autodiff.Tape, x ad, byRow bool) ad {
	r, c := x.Rows(), x.Cols()
	s, node := autodiff.RowVectorShape(c), byColNode
	if byRow {
		s, node = autodiff.VectorShape(r), byRowNode
	}
	out := t.Custom(node, s, x)
	xs, ys := t.Val(x), t.Val(out)
	for k, v := range xs {
		if byRow {
			ys[k/c] += v * v
		} else {
			ys[k%c] += v * v
		}
	}
	return out
}

// gatherZeroNode copies element src[k] of its input into element k of its
// output, or 0 where src[k] < 0.
type gatherZeroNode struct{ src []int }

func (n *gatherZeroNode) Backward(t *autodiff.Tape, out ad, ins []ad) {
	dx, g := t.Adj(ins[0]), t.Adj(out)
	for k, i := range n.src {
		if i >= 0 {
			dx[i] += g[k]
		}
	}
}

func gatherZero(t *autodiff.Tape, x ad, src []int, s autodiff.Shape) ad {
	out := t.Custom(&gatherZeroNode{src: src}, s, x)
	xs, ys := t.Val(x), t.Val(out)
	for k, i := range src {
		if i >= 0 {
			ys[k] = xs[i]
		}
	}
	return out
}

// lowerTri returns the lower triangle of a matrix (zeros above the
// diagonal).
func lowerTri(t *autodiff.Tape, x ad) ad {
	r, c := x.Rows(), x.Cols()
	src := make([]int, r*c)
	for i := range r {
		for j := range c {
			src[i*c+j] = -1
			if j <= i {
				src[i*c+j] = i*c + j
			}
		}
	}
	return gatherZero(t, x, src, x.Shape())
}

// inverseNode is the matrix inverse Y = A⁻¹, with adjoint Ā -= Yᵀ Ȳ Yᵀ.
type inverseNode struct{}

func (inverseNode) Backward(t *autodiff.Tape, out ad, ins []ad) {
	n := out.Rows()
	y := mat.NewDense(n, n, slices.Clone(t.Val(out)))
	g := mat.NewDense(n, n, slices.Clone(t.Adj(out)))
	var tmp, da mat.Dense
	tmp.Mul(y.T(), g)
	da.Mul(&tmp, y.T())
	addInto(t.Adj(ins[0]), &da, -1)
}

// addInto adds s·m (row-major) into dst.
func addInto(dst []float64, m *mat.Dense, s float64) {
	r, c := m.Dims()
	for i := range r {
		for j := range c {
			dst[i*c+j] += s * m.At(i, j)
		}
	}
}

func square(name string, x ad) error {
	if x.Rows() != x.Cols() {
		return errorf(name, "matrix is not square: %d×%d", x.Rows(), x.Cols())
	}
	return nil
}

func inverse(t *autodiff.Tape, x ad) (value, error) {
	if err := square("inverse", x); err != nil {
		return value{}, err
	}
	var inv mat.Dense
	if x.Len() == 0 {
		return stdlib.ADValue(x), nil
	}
	if !invert(&inv, dense(t, x)) {
		return value{}, errorf("inverse", "matrix is singular")
	}
	out := t.Custom(inverseNode{}, x.Shape(), x)
	copy(t.Val(out), inv.RawMatrix().Data)
	return stdlib.ADValue(out), nil
}

// invert sets dst to the inverse of a and reports whether a is
// invertible: an ill-conditioned matrix is inverted all the same (gonum
// reports a finite Condition), an exactly singular one is not.
func invert(dst *mat.Dense, a *mat.Dense) bool {
	err := dst.Inverse(a)
	if err == nil {
		return true
	}
	var cond mat.Condition
	if errors.As(err, &cond) && !math.IsInf(float64(cond), 0) {
		return true
	}
	return false
}

// determinant returns det A or log |det A| (one partials node): the
// partials are det A · A⁻ᵀ and A⁻ᵀ; for a singular A the partials of det
// are its cofactors, and log_determinant is an error.
func determinant(t *autodiff.Tape, x ad, logAbs bool) (value, error) {
	name := "determinant"
	if logAbs {
		name = "log_determinant"
	}
	if err := square(name, x); err != nil {
		return value{}, err
	}
	n := x.Rows()
	if n == 0 {
		return stdlib.RealValue(t.Const(map[bool]float64{false: 1, true: 0}[logAbs])), nil
	}
	a := dense(t, x)
	var lu mat.LU
	lu.Factorize(a)
	logDet, sign := lu.LogDet()
	var inv mat.Dense
	singular := math.IsInf(logDet, -1) || !invert(&inv, a)
	if singular && logAbs {
		return value{}, errorf(name, "matrix is singular")
	}
	p := t.ScalarPartials(x)
	det := sign * math.Exp(logDet)
	if n == 0 {
		det, logDet = 1, 0
	}
	if logAbs {
		p.Out()[0] = logDet
	} else {
		p.Out()[0] = det
	}
	d := p.D(0)
	if d == nil || n == 0 {
		return stdlib.RealValue(p.Value()), nil
	}
	if singular {
		cof := cofactors(a)
		copy(d, cof)
		return stdlib.RealValue(p.Value()), nil
	}
	s := det
	if logAbs {
		s = 1
	}
	for i := range n {
		for j := range n {
			d[i*n+j] = s * inv.At(j, i)
		}
	}
	return stdlib.RealValue(p.Value()), nil
}

// cofactors returns the cofactor matrix of a (row-major), the gradient of
// det a, by determinants of minors.
func cofactors(a *mat.Dense) []float64 {
	n, _ := a.Dims()
	out := make([]float64, n*n)
	if n == 1 {
		out[0] = 1
		return out
	}
	minor := mat.NewDense(n-1, n-1, nil)
	for i := range n {
		for j := range n {
			for r, rr := 0, 0; r < n; r++ {
				if r == i {
					continue
				}
				for k, cc := 0, 0; k < n; k++ {
					if k == j {
						continue
					}
					minor.Set(rr, cc, a.At(r, k))
					cc++
				}
				rr++
			}
			sgn := 1.0
			if (i+j)%2 == 1 {
				sgn = -1
			}
			out[i*n+j] = sgn * mat.Det(minor)
		}
	}
	return out
}

// choleskyNode is L = chol(A); its adjoint (Murray 2016, symmetric form)
// is Ā = ½(S + Sᵀ) with S = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹, where Φ keeps the lower
// triangle and halves the diagonal.
type choleskyNode struct{}

func (choleskyNode) Backward(t *autodiff.Tape, out ad, ins []ad) {
	n := out.Rows()
	l := mat.NewDense(n, n, slices.Clone(t.Val(out)))
	g := mat.NewDense(n, n, slices.Clone(t.Adj(out)))
	for i := range n {
		for j := i + 1; j < n; j++ {
			g.Set(i, j, 0) // the upper triangle of L is constant
		}
	}
	var p mat.Dense
	p.Mul(l.T(), g)
	for i := range n {
		p.Set(i, i, p.At(i, i)/2)
		for j := i + 1; j < n; j++ {
			p.Set(i, j, 0)
		}
	}
	// S = L⁻ᵀ P L⁻¹: two triangular solves.
	tri := blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: n, Data: l.RawMatrix().Data}
	pm := p.RawMatrix()
	bm := blas64.General{Rows: n, Cols: n, Stride: pm.Stride, Data: pm.Data}
	blas64.Trsm(blas.Left, blas.Trans, 1, tri, bm)    // L⁻ᵀ P
	blas64.Trsm(blas.Right, blas.NoTrans, 1, tri, bm) // (L⁻ᵀ P) L⁻¹
	da := t.Adj(ins[0])
	for i := range n {
		for j := range n {
			da[i*n+j] += (p.At(i, j) + p.At(j, i)) / 2
		}
	}
}

// Cholesky is cholesky_decompose(x) on the tape: the lower Cholesky factor
// of the symmetric positive-definite matrix x, differentiable. (Package
// dist draws multi_normal's reparameterized noise with it.)
func Cholesky(t *autodiff.Tape, x autodiff.Value) (stdlib.Value, error) { return cholesky(t, x) }

func cholesky(t *autodiff.Tape, x ad) (value, error) {
	const name = "cholesky_decompose"
	if err := symmetricArg(name, t, x); err != nil {
		return value{}, err
	}
	n := x.Rows()
	if n == 0 {
		return stdlib.ADValue(x), nil
	}
	a := dense(t, x)
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(n, a.RawMatrix().Data)) {
		return value{}, errorf(name, "matrix is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	out := t.Custom(choleskyNode{}, x.Shape(), x)
	ys := t.Val(out)
	for i := range n {
		for j := 0; j <= i; j++ {
			ys[i*n+j] = l.At(i, j)
		}
	}
	return stdlib.ADValue(out), nil
}

// triSolveNode solves with the lower triangle of L: X = L⁻¹ B (left) or
// X = B L⁻¹ (right). Adjoints: left B̄ = L⁻ᵀ X̄, L̄ = -tril(B̄ Xᵀ); right
// B̄ = X̄ L⁻ᵀ, L̄ = -tril(Xᵀ B̄).
type triSolveNode struct{ left bool }

var (
	leftSolve  = &triSolveNode{left: true}
	rightSolve = &triSolveNode{left: false}
)

func (n *triSolveNode) Backward(t *autodiff.Tape, out ad, ins []ad) {
	lv, bv := ins[0], ins[1]
	k := lv.Rows()
	l := lowerData(t.Val(lv), k)
	x := mat.NewDense(out.Rows(), out.Cols(), slices.Clone(t.Val(out)))
	gb := blas64.General{Rows: out.Rows(), Cols: out.Cols(), Stride: out.Cols(), Data: slices.Clone(t.Adj(out))}
	tri := blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: k, Stride: k, Data: l}
	var dl mat.Dense
	bbar := mat.NewDense(gb.Rows, gb.Cols, gb.Data)
	if n.left {
		blas64.Trsm(blas.Left, blas.Trans, 1, tri, gb)
		dl.Mul(bbar, x.T())
	} else {
		blas64.Trsm(blas.Right, blas.Trans, 1, tri, gb)
		dl.Mul(x.T(), bbar)
	}
	if !bv.IsConst() {
		db := t.Adj(bv)
		for i, v := range gb.Data {
			db[i] += v
		}
	}
	if !lv.IsConst() {
		da := t.Adj(lv)
		for i := range k {
			for j := 0; j <= i; j++ {
				da[i*k+j] -= dl.At(i, j)
			}
		}
	}
}

// lowerData returns a copy of the lower triangle of the k×k row-major xs.
func lowerData(xs []float64, k int) []float64 {
	l := make([]float64, k*k)
	for i := range k {
		copy(l[i*k:i*k+i+1], xs[i*k:i*k+i+1])
	}
	return l
}

func triSolve(t *autodiff.Tape, name string, l, b ad, left bool) (value, error) {
	if err := square(name, l); err != nil {
		return value{}, err
	}
	k := l.Rows()
	if left && b.Rows() != k {
		return value{}, errorf(name, "sizes differ: %d and %d", k, b.Rows())
	}
	if !left && b.Cols() != k {
		return value{}, errorf(name, "sizes differ: %d and %d", b.Cols(), k)
	}
	ld := lowerData(t.Val(l), k)
	for i := range k {
		if ld[i*k+i] == 0 {
			return value{}, errorf(name, "matrix is singular: diagonal element %d is 0", i+1)
		}
	}
	x := blas64.General{Rows: b.Rows(), Cols: b.Cols(), Stride: max(1, b.Cols()), Data: slices.Clone(t.Val(b))}
	if b.Len() == 0 {
		return stdlib.ADValue(t.NewConst(b.Shape(), nil)), nil
	}
	tri := blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: k, Stride: k, Data: ld}
	node := leftSolve
	if left {
		blas64.Trsm(blas.Left, blas.NoTrans, 1, tri, x)
	} else {
		node = rightSolve
		blas64.Trsm(blas.Right, blas.NoTrans, 1, tri, x)
	}
	out := t.Custom(node, b.Shape(), l, b)
	copy(t.Val(out), x.Data)
	return stdlib.ADValue(out), nil
}

// gpExpQuadCov is the exponentiated quadratic kernel,
// K_ij = alpha²·exp(−‖x_i − x'_j‖² / (2 rho²)), between the points of one
// array (x' = x) or of two; points are reals or vectors.
func gpExpQuadCov(c *ctx, args, _ []value) (value, error) {
	const fn = "gp_exp_quad_cov"
	t := c.Tape
	x1, x2 := args[0], args[0]
	if len(args) == 4 {
		x2 = args[1]
	}
	alpha, rho := toAD(t, args[len(args)-2]), toAD(t, args[len(args)-1])
	if a := t.Scalar(alpha); !(a > 0) || math.IsInf(a, 1) {
		return value{}, errorf(fn, "magnitude alpha = %g must be positive and finite", a)
	}
	if r := t.Scalar(rho); !(r > 0) || math.IsInf(r, 1) {
		return value{}, errorf(fn, "length scale rho = %g must be positive and finite", r)
	}
	// The points as columns of coordinates: coords[k] is coordinate k of
	// every point, a vector.
	coords := func(x value) ([]ad, int, error) {
		if x.Type.Base == lang.Real {
			v := x.AD
			return []ad{t.Reshape(v, autodiff.VectorShape(v.Len()))}, v.Len(), nil
		}
		n := len(x.Elems)
		if n == 0 {
			return nil, 0, nil
		}
		d := x.Elems[0].AD.Len()
		for i, e := range x.Elems {
			if e.AD.Len() != d {
				return nil, 0, errorf(fn, "point %d has %d coordinates, point 1 has %d", i+1, e.AD.Len(), d)
			}
		}
		out := make([]ad, d)
		for k := range out {
			parts := make([]ad, n)
			for i, e := range x.Elems {
				parts[i] = t.Index(e.AD, k)
			}
			out[k] = t.Concat(autodiff.VectorShape(n), parts...)
		}
		return out, n, nil
	}
	c1, n1, err := coords(x1)
	if err != nil {
		return value{}, err
	}
	c2, n2, err := coords(x2)
	if err != nil {
		return value{}, err
	}
	if n1 == 0 || n2 == 0 {
		return stdlib.ADValue(t.NewConst(autodiff.MatrixShape(n1, n2), nil)), nil
	}
	if len(c1) != len(c2) {
		return value{}, errorf(fn, "the points have %d and %d coordinates", len(c1), len(c2))
	}
	ones1 := t.NewConst(autodiff.RowVectorShape(n2), onesOf(n2))
	ones2 := t.NewConst(autodiff.VectorShape(n1), onesOf(n1))
	var d2 ad
	if len(c1) == 0 { // points of no coordinates
		d2 = t.NewConst(autodiff.MatrixShape(n1, n2), make([]float64, n1*n2))
	}
	for k := range c1 {
		// (x1_i − x2_j)² as an n1×n2 matrix.
		diff := t.Sub(t.MatMul(c1[k], ones1), t.MatMul(ones2, t.Transpose(c2[k])))
		sq := t.Square(diff)
		if k == 0 {
			d2 = sq
		} else {
			d2 = t.Add(d2, sq)
		}
	}
	scale := t.Div(t.Const(-0.5), t.Square(rho))
	return stdlib.ADValue(t.Mul(t.Square(alpha), t.Exp(t.Mul(d2, scale)))), nil
}

func onesOf(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 1
	}
	return xs
}

// symEigen returns the eigenvalues (ascending) and the eigenvectors (as
// columns, in the same order) of the symmetric n×n row-major matrix a.
func symEigen(a []float64, n int) ([]float64, *mat.Dense, bool) {
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(n, slices.Clone(a)), true) {
		return nil, nil, false
	}
	var v mat.Dense
	es.VectorsTo(&v)
	return es.Values(nil), &v, true
}

// eigenSym is eigenvalues_sym (a vector, ascending) or eigenvectors_sym
// (the matrix of eigenvectors as columns, in that order) of a symmetric
// matrix, one custom node each.
func eigenSym(t *autodiff.Tape, name string, x ad) (value, error) {
	if err := symmetricArg(name, t, x); err != nil {
		return value{}, err
	}
	n := x.Rows()
	a := t.Val(x)
	for k, v := range a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return value{}, errorf(name, "element (%d, %d) is %v", k/max(n, 1)+1, k%max(n, 1)+1, v)
		}
	}
	vals, vecs, ok := symEigen(a, n)
	if !ok {
		return value{}, errorf(name, "the eigendecomposition did not converge")
	}
	if name == "eigenvalues_sym" {
		out := t.Custom(eigenNode{}, autodiff.VectorShape(n), x)
		copy(t.Val(out), vals)
		return stdlib.ADValue(out), nil
	}
	out := t.Custom(eigenNode{vectors: true}, autodiff.MatrixShape(n, n), x)
	copy(t.Val(out), vecs.RawMatrix().Data)
	return stdlib.ADValue(out), nil
}

// eigenNode differentiates the eigendecomposition A = V Λ Vᵀ of a
// symmetric matrix: Ā = V diag(λ̄) Vᵀ for the eigenvalues, and
// Ā = V (F ∘ (Vᵀ V̄)) Vᵀ with F_ij = 1/(λ_j − λ_i) (0 on the diagonal) for
// the eigenvectors (as Stan), symmetrized like choleskyNode's.
type eigenNode struct{ vectors bool }

func (e eigenNode) Backward(t *autodiff.Tape, out ad, ins []ad) {
	x := ins[0]
	n := x.Rows()
	vals, v, ok := symEigen(t.Val(x), n)
	if !ok {
		return
	}
	var inner *mat.Dense
	if e.vectors {
		// Vectors as computed in the forward pass (their signs).
		vf := mat.NewDense(n, n, slices.Clone(t.Val(out)))
		var vtg mat.Dense
		vtg.Mul(vf.T(), mat.NewDense(n, n, slices.Clone(t.Adj(out))))
		for i := range n {
			for j := range n {
				if i == j {
					vtg.Set(i, j, 0)
				} else {
					vtg.Set(i, j, vtg.At(i, j)/(vals[j]-vals[i]))
				}
			}
		}
		inner, v = &vtg, vf
	} else {
		inner = mat.NewDense(n, n, nil)
		for k, g := range t.Adj(out) {
			inner.Set(k, k, g)
		}
	}
	var p mat.Dense
	p.Mul(v, inner)
	p.Mul(&p, v.T())
	da := t.Adj(x)
	for i := range n {
		for j := range n {
			da[i*n+j] += (p.At(i, j) + p.At(j, i)) / 2
		}
	}
}

// symmetricArg checks that a matrix argument is square and symmetric (to
// 1e-8 relative, as Stan).
func symmetricArg(name string, t *autodiff.Tape, x ad) error {
	if err := square(name, x); err != nil {
		return err
	}
	n, a := x.Rows(), t.Val(x)
	for i := range n {
		for j := range i {
			u, v := a[i*n+j], a[j*n+i]
			if math.Abs(u-v) > 1e-8*math.Max(1, math.Max(math.Abs(u), math.Abs(v))) {
				return errorf(name, "matrix is not symmetric: element (%d, %d) is %v, element (%d, %d) is %v", i+1, j+1, u, j+1, i+1, v)
			}
		}
	}
	return nil
}

// spdInverse returns the inverse of a symmetric positive-definite matrix
// on the tape (the inverse node), or an error naming the function.
func spdInverse(t *autodiff.Tape, name string, x ad) (ad, error) {
	if err := symmetricArg(name, t, x); err != nil {
		return ad{}, err
	}
	var ch mat.Cholesky
	if x.Len() > 0 && !ch.Factorize(mat.NewSymDense(x.Rows(), slices.Clone(t.Val(x)))) {
		return ad{}, errorf(name, "matrix is not positive definite")
	}
	v, err := inverse(t, x)
	if err != nil {
		return ad{}, errorf(name, "%v", err)
	}
	return v.AD, nil
}
