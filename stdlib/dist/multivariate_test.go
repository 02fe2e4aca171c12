package dist

import (
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distmv"
)

var (
	sigma3 = []float64{2, 0.3, -0.4, 0.3, 1, 0.2, -0.4, 0.2, 1.5}
	mu3    = []float64{0.1, -0.2, 0.3}
	ys3    = [][]float64{{0.5, -1, 0.2}, {-0.3, 0.4, 1.1}}
)

func vecArr(tp *autodiff.Tape, vs ...autodiff.Value) stdlib.Value {
	el := make([]stdlib.Value, len(vs))
	for i, v := range vs {
		el[i] = stdlib.ADValue(v)
	}
	return stdlib.Value{Type: lang.ArrayOf(lang.VectorType, 1), Elems: el, Dims: []int{len(el)}}
}

func cholLower(sigma []float64, k int) []float64 {
	var ch mat.Cholesky
	ch.Factorize(mat.NewSymDense(k, append([]float64(nil), sigma...)))
	var l mat.TriDense
	ch.LTo(&l)
	out := make([]float64, k*k)
	for i := 0; i < k; i++ {
		for j := 0; j <= i; j++ {
			out[i*k+j] = l.At(i, j)
		}
	}
	return out
}

func TestMultiNormalValues(t *testing.T) {
	m := registered()
	// No elements: 0, as Stan.
	{
		c := newContext(1)
		empty := vecV(c)
		if got := call(t, m, c, "multi_normal_lpdf", empty, empty, stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(0, 0), nil))); got != 0 {
			t.Errorf("multi_normal_lpdf over K = 0: %g, want 0", got)
		}
		if got := call(t, m, c, "multi_normal_cholesky_lpdf", vecArr(c.Tape), vecV(c, 1, 2), matV(c, 2, 1, 0, 0, 1)); got != 0 {
			t.Errorf("multi_normal_cholesky_lpdf over no vectors: %g, want 0", got)
		}
	}
	ref, ok := distmv.NewNormal(mu3, mat.NewSymDense(3, append([]float64(nil), sigma3...)), nil)
	if !ok {
		t.Fatal("reference covariance not positive definite")
	}
	want1 := ref.LogProb(ys3[0])
	want2 := want1 + ref.LogProb(ys3[1])
	lchol := cholLower(sigma3, 3)
	for _, fam := range []string{"multi_normal", "multi_normal_cholesky"} {
		c := newContext(1)
		tp := c.Tape
		sm := matV(c, 3, sigma3...)
		if fam == "multi_normal_cholesky" {
			sm = matV(c, 3, lchol...)
		}
		mu := vecV(c, mu3...)
		y0, y1 := tp.ConstVec(ys3[0]), tp.ConstVec(ys3[1])
		if got := call(t, m, c, fam+"_lpdf", stdlib.ADValue(y0), mu, sm); !close(got, want1, 1e-12) {
			t.Errorf("%s one vector: %.15g, want %.15g", fam, got, want1)
		}
		// A row vector outcome.
		if got := call(t, m, c, fam+"_lpdf", stdlib.ADValue(tp.Transpose(y0)), mu, sm); !close(got, want1, 1e-12) {
			t.Errorf("%s row vector: %.15g, want %.15g", fam, got, want1)
		}
		if got := call(t, m, c, fam+"_lpdf", vecArr(tp, y0, y1), mu, sm); !close(got, want2, 1e-12) {
			t.Errorf("%s array of vectors, one location: %.15g, want %.15g", fam, got, want2)
		}
		mu0 := tp.ConstVec(mu3)
		if got := call(t, m, c, fam+"_lpdf", vecArr(tp, y0, y1), vecArr(tp, mu0, mu0), sm); !close(got, want2, 1e-12) {
			t.Errorf("%s arrays: %.15g, want %.15g", fam, got, want2)
		}
		// One outcome, two locations: the outcome is broadcast.
		if got := call(t, m, c, fam+"_lpdf", stdlib.ADValue(y0), vecArr(tp, mu0, mu0), sm); !close(got, 2*want1, 1e-12) {
			t.Errorf("%s broadcast outcome: %.15g, want %.15g", fam, got, 2*want1)
		}
	}
}

// symmetric builds a 3×3 symmetric matrix from 6 variables (the lower
// triangle, row by row), so that finite differences keep it symmetric.
func symmetric(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
	e := func(i int) autodiff.Value { return tp.Index(x, i) }
	return tp.Concat(autodiff.MatrixShape(3, 3), e(0), e(1), e(3), e(1), e(2), e(4), e(3), e(4), e(5))
}

func lowerTriangle(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
	e := func(i int) autodiff.Value { return tp.Index(x, i) }
	z := tp.Const(0)
	return tp.Concat(autodiff.MatrixShape(3, 3), e(0), z, z, e(1), e(2), z, e(3), e(4), e(5))
}

func lowerOf(full []float64) []float64 {
	return []float64{full[0], full[3], full[4], full[6], full[7], full[8]}
}

func TestMultiNormalGradients(t *testing.T) {
	m := registered()
	for _, fam := range []string{"multi_normal", "multi_normal_cholesky"} {
		for _, propto := range []bool{false, true} {
			mat0 := lowerOf(sigma3)
			build := symmetric
			if fam == "multi_normal_cholesky" {
				mat0 = lowerOf(cholLower(sigma3, 3))
				build = lowerTriangle
			}
			// x = y1 (3), y2 (3), mu (3), matrix (6).
			x0 := append(append(append(append([]float64{}, ys3[0]...), ys3[1]...), mu3...), mat0...)
			var callErr error
			f := func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
				ys := vecArr(tp, tp.Slice(x, 0, 3), tp.Slice(x, 3, 3))
				mu := stdlib.ADValue(tp.Slice(x, 6, 3))
				sm := stdlib.ADValue(build(tp, tp.Slice(x, 9, 6)))
				v, err := m[fam+"_lpdf"](&stdlib.Context{Tape: tp, Propto: propto}, []stdlib.Value{ys, mu, sm}, nil)
				if err != nil {
					callErr = err
					return tp.Const(math.NaN())
				}
				return v.AD
			}
			if err := autodiff.CheckGradient(f, x0, 1e-6); err != nil {
				t.Errorf("%s propto=%v: %v (%v)", fam, propto, err, callErr)
			}
			// Array of locations, one outcome.
			x1 := append(append(append(append([]float64{}, ys3[0]...), mu3...), ys3[1]...), mat0...)
			g := func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
				y := stdlib.ADValue(tp.Slice(x, 0, 3))
				mus := vecArr(tp, tp.Slice(x, 3, 3), tp.Slice(x, 6, 3))
				sm := stdlib.ADValue(build(tp, tp.Slice(x, 9, 6)))
				v, err := m[fam+"_lpdf"](&stdlib.Context{Tape: tp, Propto: propto}, []stdlib.Value{y, mus, sm}, nil)
				if err != nil {
					callErr = err
					return tp.Const(math.NaN())
				}
				return v.AD
			}
			if err := autodiff.CheckGradient(g, x1, 1e-6); err != nil {
				t.Errorf("%s locations propto=%v: %v (%v)", fam, propto, err, callErr)
			}
		}
	}
}

func TestDirichletAndCategorical(t *testing.T) {
	m := registered()
	alpha := []float64{1.5, 2, 0.7}
	theta := []float64{0.2, 0.5, 0.3}
	c := newContext(1)
	got := call(t, m, c, "dirichlet_lpdf", vecV(c, theta...), vecV(c, alpha...))
	if want := distmv.NewDirichlet(alpha, nil).LogProb(theta); !close(got, want, 1e-12) {
		t.Errorf("dirichlet_lpdf = %.15g, want %.15g", got, want)
	}
	got = call(t, m, c, "categorical_lpmf", intsV(1, 3, 3), vecV(c, theta...))
	if want := math.Log(0.2) + 2*math.Log(0.3); !close(got, want, 1e-14) {
		t.Errorf("categorical_lpmf = %.15g, want %.15g", got, want)
	}
	got = call(t, m, c, "categorical_lpmf", intV(2), vecV(c, theta...))
	if want := math.Log(0.5); !close(got, want, 1e-14) {
		t.Errorf("categorical_lpmf(2) = %.15g, want %.15g", got, want)
	}
	// Gradients: theta = softmax(free) keeps it a simplex under finite
	// differences.
	x0 := []float64{0.1, -0.4, 0.3, 1.5, 2, 0.7}
	for _, name := range []string{"dirichlet_lpdf", "categorical_lpmf"} {
		var callErr error
		f := func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
			th := stdlib.ADValue(tp.Softmax(tp.Slice(x, 0, 3)))
			var args []stdlib.Value
			if name == "dirichlet_lpdf" {
				args = []stdlib.Value{th, stdlib.ADValue(tp.Slice(x, 3, 3))}
			} else {
				args = []stdlib.Value{intsV(1, 3, 3, 2), th}
			}
			v, err := m[name](&stdlib.Context{Tape: tp}, args, nil)
			if err != nil {
				callErr = err
				return tp.Const(math.NaN())
			}
			// Use the whole vector so that every variable is read.
			return tp.Add(v.AD, tp.Mul(tp.Const(0), tp.Sum(x)))
		}
		if err := autodiff.CheckGradient(f, x0, 1e-6); err != nil {
			t.Errorf("%s: %v (%v)", name, err, callErr)
		}
	}
}

// TestLKJCorrCholesky checks the density against closed forms: for K = 2
// the normalizing constant ∫ (1-r²)^(η-1) dr = 2^(2η-1) B(η, η).
func TestLKJCorrCholesky(t *testing.T) {
	m := registered()
	c := newContext(1)
	r, eta := 0.6, 2.5
	l2 := matV(c, 2, 1, 0, r, math.Sqrt(1-r*r))
	got := call(t, m, c, "lkj_corr_cholesky_lpdf", l2, realV(c, eta))
	want := (eta-1)*math.Log(1-r*r) - ((2*eta-1)*math.Log(2) + mathext.Lbeta(eta, eta))
	if !close(got, want, 1e-12) {
		t.Errorf("K=2: %.15g, want %.15g", got, want)
	}
	// K = 3, eta = 1: the uniform density over correlation matrices is one
	// over the volume π²/2 of the 3×3 elliptope; in terms of L it carries
	// the log Jacobian Σ_k (K-k) log L_kk of L ↦ LLᵀ, here log L22.
	l3 := lkjCorrCholeskyRng(c.RNG, 3, 1.3)
	got = call(t, m, c, "lkj_corr_cholesky_lpdf", matV(c, 3, l3...), realV(c, 1))
	want = -math.Log(math.Pi*math.Pi/2) + 1*math.Log(l3[4])
	if !close(got, want, 1e-12) {
		t.Errorf("K=3 eta=1: %.15g, want %.15g", got, want)
	}
	// Gradients in L (through its free elements) and eta, K = 3.
	var callErr error
	f := func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
		e := func(i int) autodiff.Value { return tp.Index(x, i) }
		one, zero := tp.Const(1), tp.Const(0)
		sq := func(v autodiff.Value) autodiff.Value { return tp.Unary(autodiff.Sqrt, v) }
		l21, l31, l32 := e(0), e(1), e(2)
		l22 := sq(tp.Sub(one, tp.Square(l21)))
		l33 := sq(tp.Sub(tp.Sub(one, tp.Square(l31)), tp.Square(l32)))
		lm := tp.Concat(autodiff.MatrixShape(3, 3), one, zero, zero, l21, l22, zero, l31, l32, l33)
		v, err := m["lkj_corr_cholesky_lpdf"](&stdlib.Context{Tape: tp}, []stdlib.Value{stdlib.ADValue(lm), stdlib.RealValue(e(3))}, nil)
		if err != nil {
			callErr = err
			return tp.Const(math.NaN())
		}
		return v.AD
	}
	if err := autodiff.CheckGradient(f, []float64{0.3, -0.2, 0.5, 1.7}, 1e-6); err != nil {
		t.Errorf("lkj_corr_cholesky_lpdf gradient: %v (%v)", err, callErr)
	}
}

// TestGLMsAndCategoricalLogit checks the GLM densities against their
// family at the linear predictor alpha + x·beta written out, and
// categorical_logit against categorical at softmax(beta); the gradients
// against finite differences.
func TestGLMsAndCategoricalLogit(t *testing.T) {
	m := registered()
	x := []float64{0.5, -1.2, 2.0, 0.3, -0.7, 1.1} // 3×2
	beta := []float64{0.4, -0.9}
	alpha := 0.25
	eta := make([]float64, 3)
	for i := range eta {
		eta[i] = alpha + x[2*i]*beta[0] + x[2*i+1]*beta[1]
	}
	c := newContext(1)
	tape := c.Tape
	xv := stdlib.ADValue(tape.NewConst(autodiff.MatrixShape(3, 2), x))
	bv := vecV(c, beta...)
	av := realV(c, alpha)
	etaV := vecV(c, eta...)
	ints := stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: []int{1, 0, 3}, Dims: []int{3}}
	bin := stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: []int{1, 0, 1}, Dims: []int{3}}
	ys := vecV(c, 0.3, -1, 2.2)
	for _, tc := range []struct {
		glm, base string
		glmArgs   []stdlib.Value
		baseArgs  []stdlib.Value
	}{
		{"bernoulli_logit_glm_lpmf", "bernoulli_logit_lpmf", []stdlib.Value{bin, xv, av, bv}, []stdlib.Value{bin, etaV}},
		{"poisson_log_glm_lpmf", "poisson_log_lpmf", []stdlib.Value{ints, xv, av, bv}, []stdlib.Value{ints, etaV}},
		{"normal_id_glm_lpdf", "normal_lpdf", []stdlib.Value{ys, xv, av, bv, realV(c, 0.8)}, []stdlib.Value{ys, etaV, realV(c, 0.8)}},
		{"categorical_logit_lpmf", "categorical_lpmf", []stdlib.Value{stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: []int{2, 1, 2}, Dims: []int{3}}, vecV(c, 0.3, -0.4)},
			[]stdlib.Value{stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: []int{2, 1, 2}, Dims: []int{3}}, vecV(c, softmaxOf([]float64{0.3, -0.4})...)}},
	} {
		got := call(t, m, c, tc.glm, tc.glmArgs...)
		want := call(t, m, c, tc.base, tc.baseArgs...)
		if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %.15g, %s at the predictor %.15g", tc.glm, got, tc.base, want)
		}
	}
	// Gradients in (alpha, beta) and, for categorical_logit, beta.
	impl := m["bernoulli_logit_glm_lpmf"]
	err := autodiff.CheckGradient(func(tp *autodiff.Tape, p autodiff.Value) autodiff.Value {
		cc := &stdlib.Context{Tape: tp, State: map[string]any{}}
		args := []stdlib.Value{bin, stdlib.ADValue(tp.NewConst(autodiff.MatrixShape(3, 2), x)),
			stdlib.RealValue(tp.Index(p, 0)), stdlib.ADValue(tp.Slice(p, 1, 2))}
		v, err := impl(cc, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		return v.AD
	}, []float64{alpha, beta[0], beta[1]}, 1e-6)
	if err != nil {
		t.Error(err)
	}
	impl = m["categorical_logit_lpmf"]
	err = autodiff.CheckGradient(func(tp *autodiff.Tape, p autodiff.Value) autodiff.Value {
		cc := &stdlib.Context{Tape: tp, State: map[string]any{}}
		y := stdlib.Value{Type: lang.ArrayOf(lang.IntType, 1), Ints: []int{2, 3, 2}, Dims: []int{3}}
		v, err := impl(cc, []stdlib.Value{y, stdlib.ADValue(p)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return v.AD
	}, []float64{0.3, -0.4, 1.2}, 1e-6)
	if err != nil {
		t.Error(err)
	}
	// Mismatched sizes are errors.
	if _, err := m["bernoulli_logit_glm_lpmf"](c, []stdlib.Value{bin, xv, av, vecV(c, 1, 2, 3)}, nil); err == nil {
		t.Error("beta of the wrong length: no error")
	}
	if _, err := m["categorical_logit_lpmf"](c, []stdlib.Value{intV(3), vecV(c, 1, 2)}, nil); err == nil {
		t.Error("outcome out of range: no error")
	}
}

// TestLKJCorr checks lkj_corr: it integrates to 1 over the correlation
// matrices (K = 2 and 3, by quadrature), its gradient in y along symmetric
// directions and in eta against finite differences, and lkj_corr_rng
// gives correlation matrices.
func TestLKJCorr(t *testing.T) {
	m := registered()
	lpdf := func(y []float64, k int, eta float64) (float64, []float64, float64, error) {
		c := newContext(1)
		tp := c.Tape
		yv := tp.NewVar(autodiff.MatrixShape(k, k), y)
		ev := tp.Var(eta)
		v, err := m["lkj_corr_lpdf"](c, []stdlib.Value{stdlib.ADValue(yv), stdlib.RealValue(ev)}, nil)
		if err != nil {
			return 0, nil, 0, err
		}
		if err := tp.Gradient(v.AD); err != nil {
			t.Fatal(err)
		}
		return tp.Scalar(v.AD), append([]float64(nil), tp.Adj(yv)...), tp.Adj(ev)[0], nil
	}
	// K = 2: ∫ p(r) dr over (−1, 1).
	for _, eta := range []float64{0.7, 1, 2.5} {
		const n = 4000
		s := 0.0
		for i := 0; i < n; i++ {
			r := -1 + (float64(i)+0.5)*2/n
			lp, _, _, err := lpdf([]float64{1, r, r, 1}, 2, eta)
			if err != nil {
				t.Fatal(err)
			}
			s += math.Exp(lp) * 2 / n
		}
		tol := 1e-5
		if eta < 1 {
			tol = 5e-2 // an integrable singularity at ±1
		}
		if math.Abs(s-1) > tol {
			t.Errorf("K = 2, eta = %g: integral %g", eta, s)
		}
	}
	// K = 3: midpoint rule over (−1, 1)³, inside the positive-definite set.
	for _, eta := range []float64{1, 2} {
		const n = 40
		s := 0.0
		h := 2.0 / n
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				for c := 0; c < n; c++ {
					r12, r13, r23 := -1+(float64(a)+0.5)*h, -1+(float64(b)+0.5)*h, -1+(float64(c)+0.5)*h
					if 1+2*r12*r13*r23-r12*r12-r13*r13-r23*r23 <= 0 {
						continue
					}
					lp, _, _, err := lpdf([]float64{1, r12, r13, r12, 1, r23, r13, r23, 1}, 3, eta)
					if err != nil {
						continue // on the boundary
					}
					s += math.Exp(lp) * h * h * h
				}
			}
		}
		if math.Abs(s-1) > 0.03 {
			t.Errorf("K = 3, eta = %g: integral %g", eta, s)
		}
	}
	// Gradients.
	y := []float64{1, 0.3, -0.2, 0.3, 1, 0.4, -0.2, 0.4, 1}
	eta := 1.7
	lp0, dy, de, err := lpdf(y, 3, eta)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	for _, ij := range [][2]int{{0, 1}, {0, 2}, {1, 2}} {
		up, dn := append([]float64(nil), y...), append([]float64(nil), y...)
		for _, k := range []int{ij[0]*3 + ij[1], ij[1]*3 + ij[0]} {
			up[k] += h
			dn[k] -= h
		}
		lu, _, _, _ := lpdf(up, 3, eta)
		ld, _, _, _ := lpdf(dn, 3, eta)
		fd := (lu - ld) / (2 * h)
		if got := dy[ij[0]*3+ij[1]] + dy[ij[1]*3+ij[0]]; math.Abs(got-fd) > 1e-6 {
			t.Errorf("d/d y[%d,%d] (symmetric) = %g, finite differences %g", ij[0]+1, ij[1]+1, got, fd)
		}
	}
	lu, _, _, _ := lpdf(y, 3, eta+h)
	ld, _, _, _ := lpdf(y, 3, eta-h)
	if fd := (lu - ld) / (2 * h); math.Abs(de-fd) > 1e-6 {
		t.Errorf("d/d eta = %g, finite differences %g (lp %g)", de, fd, lp0)
	}
	// Not a correlation matrix.
	for _, bad := range [][]float64{{1, 0.3, 0.2, 1}, {1.1, 0, 0, 1}, {1, 2, 2, 1}} {
		if _, _, _, err := lpdf(bad, 2, 1); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	c := newContext(3)
	v, err := m["lkj_corr_rng"](c, []stdlib.Value{intV(4), realV(c, 2)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := lpdf(c.Tape.Val(v.AD), 4, 2); err != nil {
		t.Errorf("lkj_corr_rng: %v", err)
	}
}
