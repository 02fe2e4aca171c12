package dist

import (
	"math"
	"testing"

	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
	"gonum.org/v1/gonum/stat"
)

const nDraws = 20000

// moments checks the sample mean, variance and one cdf value of draws
// against a reference, each within 5 standard errors.
func moments(t *testing.T, name string, draws []float64, ref refDist, at float64) {
	t.Helper()
	n := float64(len(draws))
	mean, variance := stat.MeanVariance(draws, nil)
	if rm, rv := ref.Mean(), ref.Variance(); !math.IsNaN(rm) && !math.IsInf(rv, 0) && !math.IsNaN(rv) {
		if se := math.Sqrt(rv / n); math.Abs(mean-rm) > 5*se {
			t.Errorf("%s: sample mean %g, want %g ± %g", name, mean, rm, 5*se)
		}
		// The standard error of the sample variance from the sample fourth
		// central moment.
		m4 := 0.0
		for _, x := range draws {
			d := x - mean
			m4 += d * d * d * d
		}
		m4 /= n
		if se := math.Sqrt(math.Max(m4-variance*variance, 0) / n); math.Abs(variance-rv) > 5*se+1e-12 {
			t.Errorf("%s: sample variance %g, want %g ± %g", name, variance, rv, 5*se)
		}
	}
	below := 0.0
	for _, x := range draws {
		if x <= at {
			below++
		}
	}
	p := ref.CDF(at)
	if se := math.Sqrt(p * (1 - p) / n); math.Abs(below/n-p) > 5*se+1e-12 {
		t.Errorf("%s: P(X ≤ %g) = %g in the sample, want %g ± %g", name, at, below/n, p, 5*se)
	}
}

// drawsOf returns the draws of a vectorized _rng result.
func drawsOf(t *testing.T, c *stdlib.Context, v stdlib.Value, discrete bool, n int) []float64 {
	t.Helper()
	out := make([]float64, n)
	if discrete {
		if v.Type != lang.ArrayOf(lang.IntType, 1) || len(v.Ints) != n {
			t.Fatalf("discrete draws: type %v with %d ints, want array[] int of %d", v.Type, len(v.Ints), n)
		}
		for i, k := range v.Ints {
			out[i] = float64(k)
		}
		return out
	}
	if v.Type != lang.VectorType || v.AD.Len() != n || !v.AD.IsConst() {
		t.Fatalf("continuous draws: type %v of %d, want a constant vector of %d", v.Type, v.AD.Len(), n)
	}
	copy(out, c.Tape.Val(v.AD))
	return out
}

// TestUnivariateRNG draws from every univariate family with its first
// parameter a container of nDraws equal elements.
func TestUnivariateRNG(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	seen := map[string]bool{}
	for _, tc := range uniCases() {
		if seen[tc.fam] || tc.fam == "student_t" && tc.x[1] < 10 {
			continue
		}
		seen[tc.fam] = true
		fam := table.Family(tc.fam)
		c := newContext(3)
		var args []stdlib.Value
		var v stdlib.Value
		var err error
		if len(tc.x) == 1 {
			v, err = m["std_normal_rng"](c, []stdlib.Value{intV(nDraws)}, nil)
		} else {
			for k := 1; k < len(tc.x); k++ {
				switch {
				case k == 1 && isIntArg(fam, k):
					ns := make([]int, nDraws)
					for i := range ns {
						ns[i] = int(tc.x[k])
					}
					args = append(args, intsV(ns...))
				case k == 1:
					xs := make([]float64, nDraws)
					for i := range xs {
						xs[i] = tc.x[k]
					}
					args = append(args, vecV(c, xs...))
				case isIntArg(fam, k):
					args = append(args, intV(int(tc.x[k])))
				default:
					args = append(args, realV(c, tc.x[k]))
				}
			}
			v, err = m[tc.fam+"_rng"](c, args, nil)
		}
		if err != nil {
			t.Fatalf("%s_rng: %v", tc.fam, err)
		}
		moments(t, tc.fam+"_rng", drawsOf(t, c, v, fam.Discrete, nDraws), tc.ref, tc.x[0])
	}
	if len(seen) != 23 {
		t.Errorf("tested the RNGs of %d univariate families, want 23", len(seen))
	}
}

func TestRNGShapes(t *testing.T) {
	m := registered()
	c := newContext(5)
	tp := c.Tape
	check := func(name string, args []stdlib.Value, want lang.Type, n int) stdlib.Value {
		t.Helper()
		v, err := m[name](c, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v.Type != want {
			t.Fatalf("%s: type %v, want %v", name, v.Type, want)
		}
		if want.Dims == 1 && want.Base == lang.Int && len(v.Ints) != n {
			t.Errorf("%s: %d ints, want %d", name, len(v.Ints), n)
		}
		if want.Dims == 0 && want.Base != lang.Int && v.AD.Len() != n {
			t.Errorf("%s: %d elements, want %d", name, v.AD.Len(), n)
		}
		return v
	}
	intArr := lang.ArrayOf(lang.IntType, 1)
	check("normal_rng", []stdlib.Value{realV(c, 1), intV(2)}, lang.RealType, 1)
	check("normal_rng", []stdlib.Value{realArrV(c, 1, 2, 3), realV(c, 2)}, lang.VectorType, 3)
	check("normal_rng", []stdlib.Value{intV(0), stdlib.ADValue(tp.Transpose(tp.ConstVec([]float64{1, 2})))}, lang.VectorType, 2)
	check("poisson_rng", []stdlib.Value{realV(c, 3)}, lang.IntType, 1)
	check("poisson_rng", []stdlib.Value{vecV(c, 1, 2, 3, 4)}, intArr, 4)
	check("binomial_rng", []stdlib.Value{intsV(5, 6), realV(c, 0.5)}, intArr, 2)
	check("bernoulli_rng", []stdlib.Value{realV(c, 0.5)}, lang.IntType, 1)
	check("std_normal_rng", nil, lang.RealType, 1)
	check("std_normal_rng", []stdlib.Value{intV(5)}, lang.VectorType, 5)
	check("std_normal_rng", []stdlib.Value{intV(0)}, lang.VectorType, 0)
	check("normal_rng", []stdlib.Value{vecV(c), realV(c, 1)}, lang.VectorType, 0)
	u := check("uniform_rng", []stdlib.Value{intV(nDraws)}, lang.VectorType, nDraws)
	for _, x := range tp.Val(u.AD) {
		if x < 0 || x >= 1 {
			t.Fatalf("uniform_rng(n) draw %g outside [0, 1)", x)
		}
	}
	unit := closedForm{cdf: func(x float64) float64 { return math.Max(0, math.Min(1, x)) }, mean: 0.5, variance: 1.0 / 12}
	moments(t, "uniform_rng(n)", append([]float64(nil), tp.Val(u.AD)...), unit, 0.3)
	w := check("uniform_rng", []stdlib.Value{realV(c, 2), realV(c, 3)}, lang.RealType, 1)
	if x := tp.Scalar(w.AD); x < 2 || x >= 3 {
		t.Errorf("uniform_rng(2, 3) = %g", x)
	}
	check("categorical_rng", []stdlib.Value{vecV(c, 0.5, 0.5)}, lang.IntType, 1)
	check("dirichlet_rng", []stdlib.Value{vecV(c, 1, 2, 3)}, lang.VectorType, 3)
	check("lkj_corr_cholesky_rng", []stdlib.Value{intV(3), realV(c, 2)}, lang.MatrixType, 9)
	mu := tp.ConstVec([]float64{1, 2})
	check("multi_normal_rng", []stdlib.Value{stdlib.ADValue(mu), matV(c, 2, 1, 0, 0, 1)}, lang.VectorType, 2)
	arr := check("multi_normal_cholesky_rng", []stdlib.Value{vecArr(tp, mu, mu, mu), matV(c, 2, 1, 0, 0, 1)}, lang.ArrayOf(lang.VectorType, 1), 0)
	if len(arr.Elems) != 3 || arr.Elems[2].AD.Len() != 2 {
		t.Errorf("multi_normal_cholesky_rng over 3 locations: %d elements", len(arr.Elems))
	}
}

// checkMeanCov checks the mean and covariance of vector draws.
func checkMeanCov(t *testing.T, name string, draws [][]float64, mean, cov []float64) {
	t.Helper()
	k := len(mean)
	n := float64(len(draws))
	for i := 0; i < k; i++ {
		col := make([]float64, len(draws))
		for d := range draws {
			col[d] = draws[d][i]
		}
		mu := stat.Mean(col, nil)
		if se := math.Sqrt(cov[i*k+i] / n); math.Abs(mu-mean[i]) > 5*se {
			t.Errorf("%s: mean[%d] = %g, want %g ± %g", name, i, mu, mean[i], 5*se)
		}
		for j := 0; j < k; j++ {
			colj := make([]float64, len(draws))
			for d := range draws {
				colj[d] = draws[d][j]
			}
			cv := stat.Covariance(col, colj, nil)
			// SE of a sample covariance of Gaussians: √((Σii Σjj + Σij²)/n).
			se := math.Sqrt((cov[i*k+i]*cov[j*k+j] + cov[i*k+j]*cov[i*k+j]) / n)
			if math.Abs(cv-cov[i*k+j]) > 5*se {
				t.Errorf("%s: cov[%d,%d] = %g, want %g ± %g", name, i, j, cv, cov[i*k+j], 5*se)
			}
		}
	}
}

func TestMultivariateRNG(t *testing.T) {
	m := registered()
	c := newContext(11)
	tp := c.Tape
	lchol := cholLower(sigma3, 3)
	for _, tc := range []struct {
		name string
		mat  []float64
	}{{"multi_normal_rng", sigma3}, {"multi_normal_cholesky_rng", lchol}} {
		draws := make([][]float64, nDraws)
		mu := stdlib.ADValue(tp.ConstVec(mu3))
		sm := matV(c, 3, tc.mat...)
		for i := range draws {
			v, err := m[tc.name](c, []stdlib.Value{mu, sm}, nil)
			if err != nil {
				t.Fatal(err)
			}
			draws[i] = append([]float64(nil), tp.Val(v.AD)...)
		}
		checkMeanCov(t, tc.name, draws, mu3, sigma3)
	}

	// Dirichlet: mean α/α0 and variance α(α0-α)/(α0²(α0+1)).
	alpha := []float64{1.5, 2, 0.7}
	a0 := 4.2
	sum := make([]float64, 3)
	for i := 0; i < nDraws; i++ {
		v, err := m["dirichlet_rng"](c, []stdlib.Value{vecV(c, alpha...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for k, x := range tp.Val(v.AD) {
			sum[k] += x
			s += x
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("dirichlet_rng draw sums to %g", s)
		}
	}
	for k := range alpha {
		want := alpha[k] / a0
		se := math.Sqrt(alpha[k] * (a0 - alpha[k]) / (a0 * a0 * (a0 + 1)) / nDraws)
		if got := sum[k] / nDraws; math.Abs(got-want) > 5*se {
			t.Errorf("dirichlet_rng: mean[%d] = %g, want %g ± %g", k, got, want, 5*se)
		}
	}

	// Categorical frequencies.
	theta := []float64{0.2, 0.5, 0.3}
	counts := make([]float64, 3)
	for i := 0; i < nDraws; i++ {
		v, err := m["categorical_rng"](c, []stdlib.Value{vecV(c, theta...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[v.Int-1]++
	}
	for k, p := range theta {
		if se := math.Sqrt(p * (1 - p) / nDraws); math.Abs(counts[k]/nDraws-p) > 5*se {
			t.Errorf("categorical_rng: frequency of %d = %g, want %g ± %g", k+1, counts[k]/nDraws, p, 5*se)
		}
	}

	// LKJ: every off-diagonal correlation of LKJ(η) in K dimensions is
	// 2 Beta(b, b) - 1 with b = η - 1 + K/2: mean 0, variance 1/(2η+K-1).
	const k = 3
	eta := 1.5
	wantVar := 1 / (2*eta + k - 1)
	var r [3][]float64
	for i := 0; i < nDraws; i++ {
		v, err := m["lkj_corr_cholesky_rng"](c, []stdlib.Value{intV(k), realV(c, eta)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := tp.Val(v.AD)
		omega := func(a, b int) float64 {
			s := 0.0
			for j := 0; j < k; j++ {
				s += l[a*k+j] * l[b*k+j]
			}
			return s
		}
		for d := 0; d < k; d++ {
			if math.Abs(omega(d, d)-1) > 1e-12 {
				t.Fatalf("lkj_corr_cholesky_rng: Ω[%d,%d] = %g", d, d, omega(d, d))
			}
		}
		r[0] = append(r[0], omega(1, 0))
		r[1] = append(r[1], omega(2, 0))
		r[2] = append(r[2], omega(2, 1))
	}
	for i, rs := range r {
		mean, variance := stat.MeanVariance(rs, nil)
		if se := math.Sqrt(wantVar / nDraws); math.Abs(mean) > 5*se {
			t.Errorf("lkj correlation %d: mean %g, want 0 ± %g", i, mean, 5*se)
		}
		m4 := 0.0
		for _, x := range rs {
			m4 += (x - mean) * (x - mean) * (x - mean) * (x - mean)
		}
		m4 /= nDraws
		if se := math.Sqrt((m4 - variance*variance) / nDraws); math.Abs(variance-wantVar) > 5*se {
			t.Errorf("lkj correlation %d: variance %g, want %g ± %g", i, variance, wantVar, 5*se)
		}
	}
}
