package runtime

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/mat"
)

// The constrained types (Stan's reference manual, "Constraint
// transforms"): for each, the transform from its unconstrained values to
// one element with its log-Jacobian, the inverse for initial values, and
// the check of a value given as data or computed in transformed
// parameters or generated quantities. Elements are vectors ([K]) or
// row-major matrices ([M, N]); the unconstrained values are in Stan's
// order, so that their number (ir.FreeSize) and meaning match Stan's.
type specialType struct {
	constrain   func(t *autodiff.Tape, u autodiff.Value, sizes []int) (x, logJ autodiff.Value)
	unconstrain func(x []float64, sizes []int) []float64 // x valid (check)
	check       func(x []float64, sizes []int) error
}

// specialTol is the tolerance of the checks (Stan's CONSTRAINT_TOLERANCE).
const specialTol = 1e-8

var specialTypes = map[lang.Special]specialType{
	lang.Simplex:            {simplexConstrain, simplexFree, simplexCheck},
	lang.UnitVector:         {unitConstrain, func(x []float64, _ []int) []float64 { return append([]float64(nil), x...) }, unitCheck},
	lang.Ordered:            {orderedConstrain(false), orderedFree(false), orderedCheck(false)},
	lang.PositiveOrdered:    {orderedConstrain(true), orderedFree(true), orderedCheck(true)},
	lang.CholeskyFactorCorr: {cholCorrConstrain, cholCorrFree, cholCorrCheck},
	lang.CholeskyFactorCov:  {cholCovConstrain, cholCovFree, cholCovCheck},
	lang.CorrMatrix:         {corrConstrain, corrFree, corrCheck},
	lang.CovMatrix:          {covConstrain, covFree, covCheck},
}

// scalars returns the scalar views of a tape vector's elements.
func scalars(t *autodiff.Tape, u autodiff.Value) []autodiff.Value {
	out := make([]autodiff.Value, u.Len())
	for i := range out {
		out[i] = t.Index(u, i)
	}
	return out
}

// simplex: Stan's stick-breaking transform with the logistic centred on
// the uniform simplex.
func simplexConstrain(t *autodiff.Tape, u autodiff.Value, sizes []int) (autodiff.Value, autodiff.Value) {
	k := sizes[0]
	stick, lj := t.Const(1), t.Const(0)
	parts := make([]autodiff.Value, 0, k)
	for i, y := range scalars(t, u) {
		adj := t.Sub(y, t.Const(math.Log(float64(k-1-i))))
		x := t.Mul(stick, t.Unary(autodiff.InvLogit, adj))
		lj = t.Add(lj, t.Add(t.Log(stick), t.Add(t.Unary(autodiff.LogInvLogit, adj), t.Unary(autodiff.Log1mInvLogit, adj))))
		parts = append(parts, x)
		stick = t.Sub(stick, x)
	}
	parts = append(parts, stick)
	return t.Concat(autodiff.VectorShape(k), parts...), lj
}

func simplexFree(x []float64, sizes []int) []float64 {
	k := sizes[0]
	y := make([]float64, k-1)
	stick := x[k-1]
	for i := k - 2; i >= 0; i-- {
		stick += x[i]
		z := x[i] / stick
		y[i] = math.Log(z/(1-z)) + math.Log(float64(k-1-i))
	}
	return y
}

func simplexCheck(x []float64, _ []int) error {
	s := 0.0
	for i, v := range x {
		if !(v >= 0) {
			return fmt.Errorf("is not a simplex: element %d is %g (must be nonnegative)", i+1, v)
		}
		s += v
	}
	if math.Abs(s-1) > specialTol {
		return fmt.Errorf("is not a simplex: its elements sum to %.17g (must be 1)", s)
	}
	return nil
}

// unit_vector: x = y/‖y‖ with the log-Jacobian −‖y‖²/2 (a standard normal
// on y makes x uniform on the sphere).
func unitConstrain(t *autodiff.Tape, u autodiff.Value, _ []int) (autodiff.Value, autodiff.Value) {
	r2 := t.DotSelf(u)
	return t.Div(u, t.Unary(autodiff.Sqrt, r2)), t.Mul(t.Const(-0.5), r2)
}

func unitCheck(x []float64, _ []int) error {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	if !(math.Abs(s-1) <= specialTol) {
		return fmt.Errorf("is not a unit vector: its squared norm is %.17g (must be 1)", s)
	}
	return nil
}

// ordered: x_1 = y_1, x_k = x_{k−1} + e^{y_k}; positive_ordered starts
// from e^{y_1}.
func orderedConstrain(positive bool) func(*autodiff.Tape, autodiff.Value, []int) (autodiff.Value, autodiff.Value) {
	return func(t *autodiff.Tape, u autodiff.Value, sizes []int) (autodiff.Value, autodiff.Value) {
		k := sizes[0]
		switch {
		case k == 0:
			return u, t.Const(0)
		case positive:
			return t.CumSum(t.Exp(u)), t.Sum(u)
		case k == 1:
			return u, t.Const(0)
		}
		rest := t.Slice(u, 1, k-1)
		return t.CumSum(t.Concat(autodiff.VectorShape(k), t.Index(u, 0), t.Exp(rest))), t.Sum(rest)
	}
}

func orderedFree(positive bool) func([]float64, []int) []float64 {
	return func(x []float64, _ []int) []float64 {
		y := make([]float64, len(x))
		for i := range x {
			switch {
			case i > 0:
				y[i] = math.Log(x[i] - x[i-1])
			case positive:
				y[i] = math.Log(x[0])
			default:
				y[i] = x[0]
			}
		}
		return y
	}
}

func orderedCheck(positive bool) func([]float64, []int) error {
	return func(x []float64, _ []int) error {
		for i, v := range x {
			switch {
			case math.IsNaN(v):
				return fmt.Errorf("element %d is NaN", i+1)
			case i == 0 && positive && !(v > 0):
				return fmt.Errorf("is not positive_ordered: element 1 is %g (must be positive)", v)
			case i > 0 && !(v > x[i-1]):
				return fmt.Errorf("is not ordered: element %d (%g) is not above element %d (%g)", i+1, v, i, x[i-1])
			}
		}
		return nil
	}
}

// cpcFactor builds the Cholesky factor of a correlation matrix from
// canonical partial correlations z[r][c] (r > c, in (−1, 1)):
// L_rc = z_rc·√(1 − Σ_{c'<c} L_rc'²), L_rr = √(1 − Σ_{c<r} L_rc²). rowTerm,
// when set, receives log(1 − Σ_{c'<c} L_rc'²) for every c ≥ 1 (the
// Jacobian of cholesky_factor_corr).
func cpcFactor(t *autodiff.Tape, k int, z func(r, c int) autodiff.Value, rowTerm func(autodiff.Value)) []autodiff.Value {
	l := make([]autodiff.Value, k*k)
	zero := t.Const(0)
	for i := range l {
		l[i] = zero
	}
	if k == 0 {
		return l
	}
	l[0] = t.Const(1)
	for r := 1; r < k; r++ {
		l[r*k] = z(r, 0)
		sumSq := t.Square(l[r*k])
		for c := 1; c < r; c++ {
			rest := t.Sub(t.Const(1), sumSq)
			if rowTerm != nil {
				rowTerm(t.Log(rest))
			}
			l[r*k+c] = t.Mul(z(r, c), t.Unary(autodiff.Sqrt, rest))
			sumSq = t.Add(sumSq, t.Square(l[r*k+c]))
		}
		l[r*k+r] = t.Unary(autodiff.Sqrt, t.Sub(t.Const(1), sumSq))
	}
	return l
}

// tanhCPCs maps the unconstrained values to partial correlations with
// their log-Jacobian Σ log(1 − tanh²).
func tanhCPCs(t *autodiff.Tape, u autodiff.Value) (autodiff.Value, autodiff.Value) {
	z := t.Unary(autodiff.Tanh, u)
	return z, t.Sum(t.Unary(autodiff.Log1m, t.Square(z)))
}

// cholesky_factor_corr: the partial correlations in row-major order of the
// strict lower triangle (Stan's cholesky_corr_constrain).
func cholCorrConstrain(t *autodiff.Tape, u autodiff.Value, sizes []int) (autodiff.Value, autodiff.Value) {
	k := sizes[0]
	z, lj := tanhCPCs(t, u)
	l := cpcFactor(t, k, func(r, c int) autodiff.Value { return t.Index(z, r*(r-1)/2+c) },
		func(term autodiff.Value) { lj = t.Add(lj, t.Mul(t.Const(0.5), term)) })
	return t.Concat(autodiff.MatrixShape(k, k), l...), lj
}

// cpcFree returns the partial correlations of a correlation Cholesky
// factor (row-major k×k), z_rc = L_rc/√(1 − Σ_{c'<c} L_rc'²), through
// atanh, at the positions index gives.
func cpcFree(l []float64, k int, index func(r, c int) int) []float64 {
	y := make([]float64, k*(k-1)/2)
	for r := 1; r < k; r++ {
		sumSq := 0.0
		for c := 0; c < r; c++ {
			y[index(r, c)] = math.Atanh(l[r*k+c] / math.Sqrt(1-sumSq))
			sumSq += l[r*k+c] * l[r*k+c]
		}
	}
	return y
}

func rowMajorLower(r, c int) int { return r*(r-1)/2 + c }

// colMajorLower returns the position of (r, c), r > c, in the strict
// lower triangle of a k×k matrix read column by column.
func colMajorLower(k int) func(r, c int) int {
	return func(r, c int) int { return c*(2*k-c-1)/2 + (r - c - 1) }
}

func cholCorrFree(x []float64, sizes []int) []float64 {
	return cpcFree(x, sizes[0], rowMajorLower)
}

func cholCorrCheck(x []float64, sizes []int) error {
	k := sizes[0]
	if err := lowerTriangular(x, k, k); err != nil {
		return err
	}
	for r := 0; r < k; r++ {
		s := 0.0
		for c := 0; c <= r; c++ {
			s += x[r*k+c] * x[r*k+c]
		}
		if !(x[r*k+r] > 0) || math.Abs(s-1) > specialTol {
			return fmt.Errorf("is not the Cholesky factor of a correlation matrix: row %d has diagonal %g and squared norm %.17g (must be positive and 1)", r+1, x[r*k+r], s)
		}
	}
	return nil
}

// lowerTriangular checks that the entries above the diagonal of an m×n
// row-major matrix are 0 and those on it positive.
func lowerTriangular(x []float64, m, n int) error {
	for r := 0; r < m; r++ {
		for c := r + 1; c < n; c++ {
			if x[r*n+c] != 0 {
				return fmt.Errorf("is not lower triangular: element [%d, %d] is %g", r+1, c+1, x[r*n+c])
			}
		}
		if r < n && !(x[r*n+r] > 0) {
			return fmt.Errorf("has a diagonal element [%d, %d] = %g (must be positive)", r+1, r+1, x[r*n+r])
		}
	}
	return nil
}

// cholesky_factor_cov[M, N]: the lower triangle of the first N rows by
// rows, each diagonal through exp, then the other M − N rows.
func cholCovConstrain(t *autodiff.Tape, u autodiff.Value, sizes []int) (autodiff.Value, autodiff.Value) {
	l, diag := cholCovFactor(t, u, sizes[0], sizes[1])
	lj := t.Const(0)
	for _, y := range diag {
		lj = t.Add(lj, y)
	}
	return l, lj
}

// cholCovFactor builds cholesky_factor_cov's M×N factor from u and
// returns it with the unconstrained values of its diagonal (their log).
func cholCovFactor(t *autodiff.Tape, u autodiff.Value, m, n int) (autodiff.Value, []autodiff.Value) {
	ys := scalars(t, u)
	l := make([]autodiff.Value, m*n)
	diag := make([]autodiff.Value, 0, n)
	zero := t.Const(0)
	pos := 0
	for r := 0; r < m; r++ {
		for c := 0; c < n; c++ {
			switch {
			case c > r:
				l[r*n+c] = zero
			case c == r:
				l[r*n+c] = t.Exp(ys[pos])
				diag = append(diag, ys[pos])
				pos++
			default:
				l[r*n+c] = ys[pos]
				pos++
			}
		}
	}
	return t.Concat(autodiff.MatrixShape(m, n), l...), diag
}

func cholCovFree(x []float64, sizes []int) []float64 {
	m, n := sizes[0], sizes[1]
	var y []float64
	for r := 0; r < m; r++ {
		for c := 0; c <= min(r, n-1); c++ {
			if c == r {
				y = append(y, math.Log(x[r*n+c]))
			} else {
				y = append(y, x[r*n+c])
			}
		}
	}
	return y
}

func cholCovCheck(x []float64, sizes []int) error {
	return lowerTriangular(x, sizes[0], sizes[1])
}

// corr_matrix: L L' with L built from partial correlations in column-major
// order, with the log-Jacobian of Stan's read_corr_L (Joe 2006).
func corrConstrain(t *autodiff.Tape, u autodiff.Value, sizes []int) (autodiff.Value, autodiff.Value) {
	k := sizes[0]
	z, lj := tanhCPCs(t, u)
	pos := colMajorLower(k)
	for c := 0; c+2 < k; c++ {
		for r := c + 1; r < k; r++ {
			w := float64(k - c - 2) // Stan's K − k − 1 with k = c + 1
			if w != 0 {
				zrc := t.Index(z, pos(r, c))
				lj = t.Add(lj, t.Mul(t.Const(0.5*w), t.Unary(autodiff.Log1m, t.Square(zrc))))
			}
		}
	}
	l := t.Concat(autodiff.MatrixShape(k, k), cpcFactor(t, k, func(r, c int) autodiff.Value { return t.Index(z, pos(r, c)) }, nil)...)
	return t.MatMul(l, t.Transpose(l)), lj
}

// choleskyOf returns the Cholesky factor (row-major) of a symmetric
// positive-definite k×k matrix, or false.
func choleskyOf(x []float64, k int) ([]float64, bool) {
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(k, append([]float64(nil), x...))) {
		return nil, false
	}
	var l mat.TriDense
	ch.LTo(&l)
	out := make([]float64, k*k)
	for r := 0; r < k; r++ {
		for c := 0; c <= r; c++ {
			out[r*k+c] = l.At(r, c)
		}
	}
	return out, true
}

func corrFree(x []float64, sizes []int) []float64 {
	k := sizes[0]
	l, _ := choleskyOf(x, k)
	return cpcFree(l, k, colMajorLower(k))
}

// symmetricPD checks a covariance matrix: symmetric and positive definite.
func symmetricPD(x []float64, k int) error {
	for r := 0; r < k; r++ {
		for c := 0; c < r; c++ {
			a, b := x[r*k+c], x[c*k+r]
			if math.Abs(a-b) > specialTol*math.Max(1, math.Max(math.Abs(a), math.Abs(b))) {
				return fmt.Errorf("is not symmetric: [%d, %d] = %g but [%d, %d] = %g", r+1, c+1, a, c+1, r+1, b)
			}
		}
	}
	if _, ok := choleskyOf(x, k); !ok {
		return fmt.Errorf("is not positive definite")
	}
	return nil
}

func corrCheck(x []float64, sizes []int) error {
	k := sizes[0]
	for i := 0; i < k; i++ {
		if math.Abs(x[i*k+i]-1) > specialTol {
			return fmt.Errorf("is not a correlation matrix: diagonal element [%d, %d] is %g (must be 1)", i+1, i+1, x[i*k+i])
		}
	}
	return symmetricPD(x, k)
}

// cov_matrix: L L' with L lower triangular, its diagonal through exp, by
// rows; log-Jacobian K·log 2 + Σ_k (K − k + 1)·log L_kk (k from 1).
func covConstrain(t *autodiff.Tape, u autodiff.Value, sizes []int) (autodiff.Value, autodiff.Value) {
	k := sizes[0]
	l, diag := cholCovFactor(t, u, k, k)
	lj := t.Const(float64(k) * math.Ln2)
	for r, y := range diag {
		lj = t.Add(lj, t.Mul(t.Const(float64(k-r+1)), y))
	}
	return t.MatMul(l, t.Transpose(l)), lj
}

func covFree(x []float64, sizes []int) []float64 {
	k := sizes[0]
	l, _ := choleskyOf(x, k)
	return cholCovFree(l, []int{k, k})
}

func covCheck(x []float64, sizes []int) error { return symmetricPD(x, sizes[0]) }

// specialElements returns the number of elements of a declaration of a
// constrained type with the given sizes (array sizes, then the element's),
// the element's sizes and its number of unconstrained values.
func specialElements(d *ir.Decl, dims []int) (count int, sizes []int, free int) {
	count = 1
	for _, n := range dims[:d.Var.Type.Dims] {
		count *= n
	}
	sizes = dims[d.Var.Type.Dims:]
	free, _ = ir.FreeSize(d.Special, sizes) // sizes checked by the layout
	return count, sizes, free
}

// constrainSpecial constrains the unconstrained values u of a parameter of
// a constrained type: its value and the log-Jacobian of each element.
func constrainSpecial(t *autodiff.Tape, u autodiff.Value, d *ir.Decl, dims []int) (stdlib.Value, []autodiff.Value) {
	count, sizes, free := specialElements(d, dims)
	sp := specialTypes[d.Special]
	elemType := lang.Type{Base: d.Special.Base()}
	shape := adShape(elemType, sizes)
	elems := make([]stdlib.Value, count)
	lj := make([]autodiff.Value, count)
	for i := range elems {
		x, l := sp.constrain(t, t.Slice(u, i*free, free), sizes)
		elems[i] = stdlib.Value{Type: elemType, AD: t.Reshape(x, shape)}
		lj[i] = l
	}
	if d.Var.Type.Dims == 0 {
		return elems[0], lj
	}
	return stdlib.Value{Type: d.Var.Type, Elems: elems, Dims: dims[:d.Var.Type.Dims]}, lj
}

// checkSpecial checks every element of a value (row-major numbers, with
// the declaration's sizes) of a constrained type.
func checkSpecial(d *ir.Decl, dims []int, vals []float64) error {
	count, sizes, _ := specialElements(d, dims)
	n := len(vals) / max(count, 1)
	for i := 0; i < count; i++ {
		if err := specialTypes[d.Special].check(vals[i*n:(i+1)*n], sizes); err != nil {
			where := d.Var.Name
			if d.Var.Type.Dims > 0 {
				where += indexText(dims[:d.Var.Type.Dims], i)
			}
			return fmt.Errorf("%s (%s) %v", where, d.TypeText, err)
		}
	}
	return nil
}

// freeSpecial returns the unconstrained values of a valid value (row-major
// numbers) of a constrained type.
func freeSpecial(d *ir.Decl, dims []int, vals []float64) ([]float64, error) {
	if err := checkSpecial(d, dims, vals); err != nil {
		return nil, err
	}
	count, sizes, _ := specialElements(d, dims)
	n := len(vals) / max(count, 1)
	var u []float64
	for i := 0; i < count; i++ {
		u = append(u, specialTypes[d.Special].unconstrain(vals[i*n:(i+1)*n], sizes)...)
	}
	return u, nil
}
