package dist

import (
	"math"
	"math/rand/v2"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// Tolerances of the structural checks, as Stan's.
const (
	symmetryTol = 1e-8 // |Σij - Σji| relative to max(|Σij|, 1)
	simplexTol  = 1e-8 // |Σθ - 1|
	unitRowTol  = 1e-8 // |‖row‖² - 1| of a correlation Cholesky factor
)

// vectors returns the vectors held by a value of the class vectors: one
// vector or row vector, or an array of them; single reports the former.
func vectors(v stdlib.Value) (vs []autodiff.Value, single bool) {
	if v.Type.Dims == 0 {
		return []autodiff.Value{v.AD}, true
	}
	vs = make([]autodiff.Value, len(v.Elems))
	for i, e := range v.Elems {
		vs[i] = e.AD
	}
	return vs, false
}

// indexLabel renders name, or name[i] (1-based) for an array element.
func indexLabel(name string, single bool, i int) string {
	if single {
		return name
	}
	return name + "[" + itoa(i+1) + "]"
}

func itoa(i int) string { return fmtNum(float64(i)) }

// inputs collects the non-constant values among vs, remembering their
// positions: slot[i] is the input index of vs[i], or -1.
type inputs struct {
	ins []autodiff.Value
}

func (in *inputs) add(v autodiff.Value) int {
	if v.IsConst() {
		return -1
	}
	in.ins = append(in.ins, v)
	return len(in.ins) - 1
}

func (in *inputs) live() bool { return len(in.ins) > 0 }

// partials returns D(k), or nil for k < 0.
func partialsOf(p autodiff.Partials, k int) []float64 {
	if k < 0 {
		return nil
	}
	return p.D(k)
}

// checkVectorsFinite checks that every element of the vectors is finite
// (or, with allowInf, not NaN).
func checkVectorsFinite(t *autodiff.Tape, fn, role, name string, vs []autodiff.Value, single bool) error {
	for i, v := range vs {
		for j, x := range t.Val(v) {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return errorf(fn, "%s %s[%d] = %s must be finite", role, indexLabel(name, single, i), j+1, fmtNum(x))
			}
		}
	}
	return nil
}

// broadcastVectors checks that ys and mus can be paired (equal numbers of
// vectors, or one of them a single vector) and that every vector has K
// elements; it returns the number of pairs.
func broadcastVectors(fn string, ys []autodiff.Value, ySingle bool, mus []autodiff.Value, muSingle bool, k int, matName string) (int, error) {
	if !ySingle && !muSingle && len(ys) != len(mus) {
		return 0, errorf(fn, "size mismatch: y has %d vectors but mu has %d", len(ys), len(mus))
	}
	for i, v := range ys {
		if v.Len() != k {
			return 0, errorf(fn, "size mismatch: %s has %d elements but %s is %d×%d", indexLabel("y", ySingle, i), v.Len(), matName, k, k)
		}
	}
	for i, v := range mus {
		if v.Len() != k {
			return 0, errorf(fn, "size mismatch: %s has %d elements but %s is %d×%d", indexLabel("mu", muSingle, i), v.Len(), matName, k, k)
		}
	}
	n := len(ys)
	if ySingle {
		n = len(mus)
	}
	return n, nil
}

func squareMatrix(fn, name string, m autodiff.Value) (int, error) {
	if m.Rows() != m.Cols() {
		return 0, errorf(fn, "%s must be square, got %d×%d", name, m.Rows(), m.Cols())
	}
	return m.Rows(), nil
}

// multiNormal is multi_normal_lpdf(y | mu, Sigma) (cholesky false) or
// multi_normal_cholesky_lpdf(y | mu, L) (cholesky true).
func multiNormal(c *stdlib.Context, fn string, args []stdlib.Value, propto, cholesky bool) (stdlib.Value, error) {
	t := c.Tape
	ys, ySingle := vectors(args[0])
	mus, muSingle := vectors(args[1])
	sm := args[2].AD
	matName := "Sigma"
	if cholesky {
		matName = "L"
	}
	k, err := squareMatrix(fn, matName, sm)
	if err != nil {
		return stdlib.Value{}, err
	}
	n, err := broadcastVectors(fn, ys, ySingle, mus, muSingle, k, matName)
	if err != nil {
		return stdlib.Value{}, err
	}
	if err := checkVectorsFinite(t, fn, "random variable", "y", ys, ySingle); err != nil {
		return stdlib.Value{}, err
	}
	if err := checkVectorsFinite(t, fn, "location", "mu", mus, muSingle); err != nil {
		return stdlib.Value{}, err
	}
	if k == 0 || n == 0 {
		return stdlib.RealValue(t.Const(0)), nil // no elements, as Stan
	}
	// Factor: lower-triangular lf with Σ = lf lf'.
	sv := t.Val(sm)
	lf := make([]float64, k*k)
	if cholesky {
		for i := 0; i < k; i++ {
			for j := 0; j <= i; j++ {
				x := sv[i*k+j]
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return stdlib.Value{}, errorf(fn, "Cholesky factor L[%d,%d] = %s must be finite", i+1, j+1, fmtNum(x))
				}
				lf[i*k+j] = x
			}
			if !(lf[i*k+i] > 0) {
				return stdlib.Value{}, errorf(fn, "Cholesky factor L[%d,%d] = %s must be positive", i+1, i+1, fmtNum(lf[i*k+i]))
			}
		}
	} else if err := covarianceCholesky(fn, sv, k, lf); err != nil {
		return stdlib.Value{}, err
	}
	var in inputs
	ySlot := make([]int, len(ys))
	for i, v := range ys {
		ySlot[i] = in.add(v)
	}
	muSlot := make([]int, len(mus))
	for i, v := range mus {
		muSlot[i] = in.add(v)
	}
	sSlot := in.add(sm)
	if propto && !in.live() {
		return stdlib.RealValue(t.Const(0)), nil
	}
	p := t.ScalarPartials(in.ins...)
	logDiag := 0.0
	for i := 0; i < k; i++ {
		logDiag += math.Log(lf[i*k+i])
	}
	z := make([]float64, k)
	w := make([]float64, k)
	var gl []float64 // ∂/∂lf (lower triangle), accumulated over pairs
	if sSlot >= 0 {
		gl = make([]float64, k*k)
	}
	quad := 0.0
	for i := 0; i < n; i++ {
		yi, mi := i, i
		if ySingle {
			yi = 0
		}
		if muSingle {
			mi = 0
		}
		yv, mv := t.Val(ys[yi]), t.Val(mus[mi])
		// z = lf⁻¹ (y - mu) by forward substitution.
		for r := 0; r < k; r++ {
			s := yv[r] - mv[r]
			for q := 0; q < r; q++ {
				s -= lf[r*k+q] * z[q]
			}
			z[r] = s / lf[r*k+r]
		}
		// w = lf⁻ᵀ z = Σ⁻¹ (y - mu) by back substitution.
		for r := k - 1; r >= 0; r-- {
			s := z[r]
			for q := r + 1; q < k; q++ {
				s -= lf[q*k+r] * w[q]
			}
			w[r] = s / lf[r*k+r]
		}
		for r := 0; r < k; r++ {
			quad += z[r] * z[r]
		}
		if d := partialsOf(p, ySlot[yi]); d != nil {
			for r := range d {
				d[r] -= w[r]
			}
		}
		if d := partialsOf(p, muSlot[mi]); d != nil {
			for r := range d {
				d[r] += w[r]
			}
		}
		if gl != nil {
			if cholesky {
				for r := 0; r < k; r++ {
					for q := 0; q <= r; q++ {
						gl[r*k+q] += w[r] * z[q]
					}
				}
			} else {
				for r := 0; r < k; r++ {
					for q := 0; q < k; q++ {
						gl[r*k+q] += 0.5 * w[r] * w[q]
					}
				}
			}
		}
	}
	fn64 := float64(n)
	lp := 0.0
	if !propto || in.live() {
		lp -= 0.5 * quad
	}
	if !propto || sSlot >= 0 {
		lp -= fn64 * logDiag
	}
	if !propto {
		lp -= fn64 * float64(k) * logSqrt2Pi
	}
	if d := partialsOf(p, sSlot); d != nil {
		if cholesky {
			for r := 0; r < k; r++ {
				gl[r*k+r] -= fn64 / lf[r*k+r]
			}
		} else {
			// -n/2 Σ⁻¹ from the log determinant.
			var ch mat.Cholesky
			ch.Factorize(mat.NewSymDense(k, append([]float64(nil), sv...)))
			var inv mat.SymDense
			if err := ch.InverseTo(&inv); err != nil {
				return stdlib.Value{}, errorf(fn, "covariance matrix Sigma is singular")
			}
			for r := 0; r < k; r++ {
				for q := 0; q < k; q++ {
					gl[r*k+q] -= 0.5 * fn64 * inv.At(r, q)
				}
			}
		}
		copy(d, gl)
	}
	p.Out()[0] = lp
	return stdlib.RealValue(p.Value()), nil
}

// simplexError checks that theta is a simplex.
func simplexError(fn, name string, th []float64) error {
	sum := 0.0
	for i, x := range th {
		if !(x >= 0 && x <= 1) {
			return errorf(fn, "simplex %s[%d] = %s must be in [0, 1]", name, i+1, fmtNum(x))
		}
		sum += x
	}
	if math.Abs(sum-1) > simplexTol {
		return errorf(fn, "%s is not a valid simplex: its elements sum to %s", name, fmtNum(sum))
	}
	return nil
}

func dirichletLpdf(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
	t := c.Tape
	thV, alV := args[0].AD, args[1].AD
	if thV.Len() != alV.Len() {
		return stdlib.Value{}, errorf(fn, "size mismatch: theta has %d elements but alpha has %d", thV.Len(), alV.Len())
	}
	if err := simplexError(fn, "theta", t.Val(thV)); err != nil {
		return stdlib.Value{}, err
	}
	for i, a := range t.Val(alV) {
		if why := positiveFinite.violation(a); why != "" {
			return stdlib.Value{}, errorf(fn, "prior sample size alpha[%d] = %s %s", i+1, fmtNum(a), why)
		}
	}
	thLive, alLive := !thV.IsConst(), !alV.IsConst()
	if propto && !thLive && !alLive {
		return stdlib.RealValue(t.Const(0)), nil
	}
	p := t.ScalarPartials(thV, alV)
	th, al := t.Val(thV), t.Val(alV)
	dth, dal := p.D(0), p.D(1)
	sumA := 0.0
	for _, a := range al {
		sumA += a
	}
	psiSum := digamma(sumA)
	lp := 0.0
	if !propto || alLive {
		lp += lgamma(sumA)
	}
	for i := range th {
		if !propto || alLive {
			lp -= lgamma(al[i])
		}
		lp += multiplyLog(al[i]-1, th[i])
		if dth != nil {
			dth[i] = (al[i] - 1) / th[i]
		}
		if dal != nil {
			dal[i] = psiSum - digamma(al[i]) + math.Log(th[i])
		}
	}
	p.Out()[0] = lp
	return stdlib.RealValue(p.Value()), nil
}

// lkjLogConstant returns the log normalizing constant of the LKJ density
// det(Ω)^(η-1) over K×K correlation matrices: minus the log of
// 2^(Σ_k (2η-2+K-k)(K-k)) Π_k B(η+(K-k-1)/2, η+(K-k-1)/2)^(K-k), k = 1..K-1
// (Lewandowski, Kurowicka and Joe 2009), and its derivative in η.
func lkjLogConstant(eta float64, k int) (v, deta float64) {
	kf := float64(k)
	for i := 1; i < k; i++ {
		m := kf - float64(i)
		b := eta + (m-1)/2
		v -= (2*eta - 2 + m) * m * ln2
		deta -= 2 * m * ln2
		v -= m * mathext.Lbeta(b, b)
		deta -= m * 2 * (digamma(b) - digamma(2*b))
	}
	return v, deta
}

// lkjArgs reads and checks the arguments of the LKJ densities: the square
// matrix (named name in messages), its size and the shape eta.
func lkjArgs(t *autodiff.Tape, fn, name string, args []stdlib.Value) (m, etaV autodiff.Value, k int, eta float64, err error) {
	m, etaV = args[0].AD, args[1].RealAD(t)
	if k, err = squareMatrix(fn, name, m); err != nil {
		return m, etaV, 0, 0, err
	}
	eta = t.Scalar(etaV)
	if why := positiveFinite.violation(eta); why != "" {
		return m, etaV, 0, 0, errorf(fn, "shape eta = %s %s", fmtNum(eta), why)
	}
	return m, etaV, k, eta, nil
}

func lkjCorrCholeskyLpdf(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
	t := c.Tape
	lv, etaV, k, eta, err := lkjArgs(t, fn, "L", args)
	if err != nil {
		return stdlib.Value{}, err
	}
	l := t.Val(lv)
	for i := 0; i < k; i++ {
		ss := 0.0
		for j := 0; j < k; j++ {
			x := l[i*k+j]
			if j > i && x != 0 {
				return stdlib.Value{}, errorf(fn, "L is not lower triangular: L[%d,%d] = %s", i+1, j+1, fmtNum(x))
			}
			ss += x * x
		}
		if !(l[i*k+i] > 0) {
			return stdlib.Value{}, errorf(fn, "L[%d,%d] = %s must be positive", i+1, i+1, fmtNum(l[i*k+i]))
		}
		if math.Abs(ss-1) > unitRowTol {
			return stdlib.Value{}, errorf(fn, "L is not the Cholesky factor of a correlation matrix: row %d has squared norm %s", i+1, fmtNum(ss))
		}
	}
	lLive, eLive := !lv.IsConst(), !etaV.IsConst()
	if propto && !lLive && !eLive {
		return stdlib.RealValue(t.Const(0)), nil
	}
	p := t.ScalarPartials(lv, etaV)
	l = t.Val(lv)
	dl, de := p.D(0), p.D(1)
	lp := 0.0
	if !propto || eLive {
		cst, dc := lkjLogConstant(eta, k)
		lp += cst
		if de != nil {
			de[0] += dc
		}
	}
	kf := float64(k)
	for i := 1; i < k; i++ {
		coef := kf - float64(i) + 2*eta - 3 // K - k + 2η - 2 with k = i+1
		ld := math.Log(l[i*k+i])
		lp += coef * ld
		if dl != nil {
			dl[i*k+i] = coef / l[i*k+i]
		}
		if de != nil {
			de[0] += 2 * ld
		}
	}
	p.Out()[0] = lp
	return stdlib.RealValue(p.Value()), nil
}

func categoricalLpmf(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
	t := c.Tape
	thV := args[1].AD
	ys := args[0].Ints
	if args[0].Type == lang.IntType {
		ys = []int{args[0].Int}
	}
	th := t.Val(thV)
	if err := simplexError(fn, "theta", th); err != nil {
		return stdlib.Value{}, err
	}
	for i, y := range ys {
		if y < 1 || y > len(th) {
			lab := "y"
			if args[0].Type != lang.IntType {
				lab = "y[" + itoa(i+1) + "]"
			}
			return stdlib.Value{}, errorf(fn, "outcome %s = %d must be in 1:%d", lab, y, len(th))
		}
	}
	if propto && thV.IsConst() {
		return stdlib.RealValue(t.Const(0)), nil
	}
	p := t.ScalarPartials(thV)
	th = t.Val(thV)
	d := p.D(0)
	lp := 0.0
	for _, y := range ys {
		lp += math.Log(th[y-1])
		if d != nil {
			d[y-1] += 1 / th[y-1]
		}
	}
	p.Out()[0] = lp
	return stdlib.RealValue(p.Value()), nil
}

// Random draws of the multivariate families.

func categoricalRng(r *rand.Rand, th []float64) int {
	u := r.Float64()
	cum := 0.0
	for i, x := range th {
		cum += x
		if u < cum {
			return i + 1
		}
	}
	return len(th)
}

func dirichletRng(r *rand.Rand, al []float64) []float64 {
	out := make([]float64, len(al))
	sum := 0.0
	for i, a := range al {
		out[i] = stdGamma(r, a)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// lkjCorrCholeskyRng draws the Cholesky factor of a K×K correlation matrix
// from LKJ(eta) by the C-vine method: partial correlations at level i are
// 2 Beta(a_i, a_i) - 1 with a_i = eta + (K-2-i)/2.
func lkjCorrCholeskyRng(r *rand.Rand, k int, eta float64) []float64 {
	l := make([]float64, k*k)
	if k == 0 {
		return l
	}
	l[0] = 1
	// rem[j] = 1 - Σ_{m<i} L[j][m]², the unexplained variance of row j.
	rem := make([]float64, k)
	for j := range rem {
		rem[j] = 1
	}
	for i := 0; i < k-1; i++ {
		a := eta + float64(k-2-i)/2
		for j := i + 1; j < k; j++ {
			g1, g2 := stdGamma(r, a), stdGamma(r, a)
			pc := 2*g1/(g1+g2) - 1
			l[j*k+i] = pc * math.Sqrt(rem[j])
			rem[j] -= l[j*k+i] * l[j*k+i]
		}
		l[(i+1)*k+i+1] = math.Sqrt(math.Max(rem[i+1], 0))
	}
	return l
}

// multiNormalRng draws from N(mu, lf lf') for each location vector.
func multiNormalRng(c *stdlib.Context, fn string, args []stdlib.Value, cholesky bool) (stdlib.Value, error) {
	t := c.Tape
	if c.RNG == nil {
		return stdlib.Value{}, errorf(fn, "random draws are not allowed here")
	}
	mus, single := vectors(args[0])
	sm := args[1].AD
	matName := "Sigma"
	if cholesky {
		matName = "L"
	}
	k, err := squareMatrix(fn, matName, sm)
	if err != nil {
		return stdlib.Value{}, err
	}
	if _, err := broadcastVectors(fn, nil, true, mus, single, k, matName); err != nil {
		return stdlib.Value{}, err
	}
	if err := checkVectorsFinite(t, fn, "location", "mu", mus, single); err != nil {
		return stdlib.Value{}, err
	}
	if c.Noise != nil {
		return multiNormalReparam(c, fn, mus, single, sm, cholesky)
	}
	sv := t.Val(sm)
	lf := make([]float64, k*k)
	if cholesky {
		for i, x := range sv {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return stdlib.Value{}, errorf(fn, "%s[%d,%d] = %s must be finite", matName, i/k+1, i%k+1, fmtNum(x))
			}
		}
		for i := 0; i < k; i++ {
			for j := 0; j <= i; j++ {
				lf[i*k+j] = sv[i*k+j]
			}
		}
	} else if k > 0 {
		if err := covarianceCholesky(fn, sv, k, lf); err != nil {
			return stdlib.Value{}, err
		}
	}
	draw := func(mu []float64) autodiff.Value {
		z := make([]float64, k)
		for i := range z {
			z[i] = c.RNG.NormFloat64()
		}
		out := make([]float64, k)
		for i := 0; i < k; i++ {
			s := mu[i]
			for j := 0; j <= i; j++ {
				s += lf[i*k+j] * z[j]
			}
			out[i] = s
		}
		return t.ConstVec(out)
	}
	if single {
		return stdlib.ADValue(draw(t.Val(mus[0]))), nil
	}
	elems := make([]stdlib.Value, len(mus))
	for i, m := range mus {
		elems[i] = stdlib.ADValue(draw(t.Val(m)))
	}
	return stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Elems: elems, Dims: []int{len(elems)}}, nil
}

// categoricalLogitLpmf is categorical_logit: the categorical distribution
// with log-probabilities log_softmax(beta).
func categoricalLogitLpmf(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
	t := c.Tape
	beta := args[1].AD
	ys := args[0].Ints
	if args[0].Type == lang.IntType {
		ys = []int{args[0].Int}
	}
	if err := finiteVector(fn, "beta", t.Val(beta)); err != nil {
		return stdlib.Value{}, err
	}
	idx := make([]int, len(ys))
	for i, y := range ys {
		if y < 1 || y > beta.Len() {
			lab := "y"
			if args[0].Type != lang.IntType {
				lab = "y[" + itoa(i+1) + "]"
			}
			return stdlib.Value{}, errorf(fn, "outcome %s = %d must be in 1:%d", lab, y, beta.Len())
		}
		idx[i] = y - 1
	}
	if propto && beta.IsConst() {
		return stdlib.RealValue(t.Const(0)), nil
	}
	return stdlib.RealValue(t.Sum(t.Gather(t.LogSoftmax(beta), idx))), nil
}

// finiteVector checks that every element of a vector is finite.
func finiteVector(fn, name string, x []float64) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errorf(fn, "%s[%d] = %s must be finite", name, i+1, fmtNum(v))
		}
	}
	return nil
}

// softmaxOf returns softmax(x).
func softmaxOf(x []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	out := make([]float64, len(x))
	s := 0.0
	for i, v := range x {
		out[i] = math.Exp(v - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// glmDensity returns the density of a generalized linear model: the family
// base (bernoulli_logit, poisson_log, normal) of y given the linear
// predictor alpha + x·beta, and the remaining arguments (normal's sigma).
func glmDensity(base *univariate) func(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
	return func(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
		eta, err := glmPredictor(c.Tape, fn, &args[0], args[1:])
		if err != nil {
			return stdlib.Value{}, err
		}
		vals := append([]stdlib.Value{args[0], stdlib.ADValue(eta)}, args[4:]...)
		return base.density(c, fn, vals, modeLP, propto)
	}
}

// glmPredictor returns the linear predictor alpha + x·beta of the GLM
// arguments (x, alpha, beta, ...), checking their sizes against each
// other and against the outcome y when given.
func glmPredictor(t *autodiff.Tape, fn string, y *stdlib.Value, args []stdlib.Value) (autodiff.Value, error) {
	x, beta := args[0].AD, args[2].AD
	if x.Cols() != beta.Len() {
		return autodiff.Value{}, errorf(fn, "x has %d columns but beta %d elements", x.Cols(), beta.Len())
	}
	n := x.Rows()
	if y != nil && !y.Type.IsScalar() && y.Len() != n {
		return autodiff.Value{}, errorf(fn, "y has %d elements but x %d rows", y.Len(), n)
	}
	alpha := args[1].RealAD(t)
	if alpha.Kind() != autodiff.Scalar && alpha.Len() != n {
		return autodiff.Value{}, errorf(fn, "alpha has %d elements but x %d rows", alpha.Len(), n)
	}
	for _, v := range []struct {
		name string
		x    []float64
	}{{"x", t.Val(x)}, {"beta", t.Val(beta)}, {"alpha", t.Val(alpha)}} {
		if err := finiteVector(fn, v.name, v.x); err != nil {
			return autodiff.Value{}, err
		}
	}
	return t.Add(t.MatMul(x, t.Reshape(beta, autodiff.VectorShape(beta.Len()))), alpha), nil
}

// lkjCorrLpdf is the LKJ density of a correlation matrix y:
// (eta − 1)·log det y minus the log of the normalizing constant
// (lkjLogConstant). Its gradient in y is (eta − 1)·y⁻¹.
func lkjCorrLpdf(c *stdlib.Context, fn string, args []stdlib.Value, propto bool) (stdlib.Value, error) {
	t := c.Tape
	yv, etaV, k, eta, err := lkjArgs(t, fn, "y", args)
	if err != nil {
		return stdlib.Value{}, err
	}
	y := t.Val(yv)
	for i := 0; i < k; i++ {
		if math.Abs(y[i*k+i]-1) > unitRowTol {
			return stdlib.Value{}, errorf(fn, "y is not a correlation matrix: y[%d,%d] = %s (must be 1)", i+1, i+1, fmtNum(y[i*k+i]))
		}
		for j := 0; j < i; j++ {
			if a, b := y[i*k+j], y[j*k+i]; math.Abs(a-b) > unitRowTol {
				return stdlib.Value{}, errorf(fn, "y is not symmetric: y[%d,%d] = %s, y[%d,%d] = %s", i+1, j+1, fmtNum(a), j+1, i+1, fmtNum(b))
			}
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(k, append([]float64(nil), y...))) {
		return stdlib.Value{}, errorf(fn, "y is not positive definite")
	}
	yLive, eLive := !yv.IsConst(), !etaV.IsConst()
	if propto && !yLive && !eLive {
		return stdlib.RealValue(t.Const(0)), nil
	}
	logDet := ch.LogDet()
	p := t.ScalarPartials(yv, etaV)
	dy, de := p.D(0), p.D(1)
	lp := 0.0
	if !propto || eLive {
		cst, dc := lkjLogConstant(eta, k)
		lp += cst
		if de != nil {
			de[0] += dc
		}
	}
	lp += (eta - 1) * logDet // depends on y or eta: kept whenever propto is
	if de != nil {
		de[0] += logDet
	}
	if dy != nil {
		var inv mat.SymDense
		if err := ch.InverseTo(&inv); err != nil {
			return stdlib.Value{}, errorf(fn, "%v", err)
		}
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				dy[i*k+j] = (eta - 1) * inv.At(j, i)
			}
		}
	}
	p.Out()[0] = lp
	return stdlib.RealValue(p.Value()), nil
}

// covarianceCholesky writes into lf the lower-triangular Cholesky factor
// of the k×k covariance matrix sv (row-major, Σ = lf·lf'), after checking
// that its entries are finite and that it is symmetric (to symmetryTol)
// and positive definite; the errors name fn and the matrix Sigma.
func covarianceCholesky(fn string, sv []float64, k int, lf []float64) error {
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			a, b := sv[i*k+j], sv[j*k+i]
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return errorf(fn, "covariance matrix Sigma[%d,%d] = %s must be finite", i+1, j+1, fmtNum(a))
			}
			if math.Abs(a-b) > symmetryTol*math.Max(1, math.Abs(a)) {
				return errorf(fn, "covariance matrix Sigma is not symmetric: Sigma[%d,%d] = %s but Sigma[%d,%d] = %s",
					i+1, j+1, fmtNum(a), j+1, i+1, fmtNum(b))
			}
		}
	}
	var ch mat.Cholesky
	if ok := ch.Factorize(mat.NewSymDense(k, append([]float64(nil), sv...))); !ok {
		return errorf(fn, "covariance matrix Sigma is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	for i := 0; i < k; i++ {
		for j := 0; j <= i; j++ {
			lf[i*k+j] = l.At(i, j)
		}
	}
	return nil
}
