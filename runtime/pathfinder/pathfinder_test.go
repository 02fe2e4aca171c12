package pathfinder

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// funcTarget adapts a function to Target.
type funcTarget struct {
	n  int
	fn func(x, grad []float64) (float64, error)
}

func (f funcTarget) Dim() int                                          { return f.n }
func (f funcTarget) LogDensityGrad(x, grad []float64) (float64, error) { return f.fn(x, grad) }

// mvn is a multivariate normal with mean mu and covariance
// Σ_ij = σ_i σ_j ρ^|i-j|, σ_i from 0.5 to 3.
type mvn struct {
	mu    []float64
	cov   *mat.SymDense
	prec  *mat.SymDense
	lnorm float64
}

func newMVN(n int, rho float64) *mvn {
	mu := make([]float64, n)
	sd := make([]float64, n)
	for i := range n {
		mu[i] = float64(i%7) - 3
		sd[i] = 0.5
		if n > 1 {
			sd[i] += 2.5 * float64(i) / float64(n-1)
		}
	}
	cov := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			cov.SetSym(i, j, sd[i]*sd[j]*math.Pow(rho, float64(j-i)))
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(cov) {
		panic("covariance not positive definite")
	}
	prec := mat.NewSymDense(n, nil)
	if err := chol.InverseTo(prec); err != nil {
		panic(err)
	}
	return &mvn{mu: mu, cov: cov, prec: prec, lnorm: -0.5*chol.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi)}
}

func (m *mvn) target() Target {
	n := len(m.mu)
	d := make([]float64, n)
	return funcTarget{n, func(x, g []float64) (float64, error) {
		for i := range d {
			d[i] = x[i] - m.mu[i]
		}
		lp := m.lnorm
		for i := range n {
			s := 0.0
			for j := range n {
				s += m.prec.At(i, j) * d[j]
			}
			g[i] = -s
			lp -= 0.5 * d[i] * s
		}
		return lp, nil
	}}
}

// starts returns k starts for target-making function mk, with inits
// uniform on (-2, 2) as Stan's default init radius.
func starts(k, n int, seed uint64, mk func() Target) []Start {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([]Start, k)
	for i := range out {
		x := make([]float64, n)
		for j := range x {
			x[j] = 4*rng.Float64() - 2
		}
		out[i] = Start{Target: mk(), Init: x}
	}
	return out
}

// TestMultiNormal checks the multi-path draws' mean and covariance against
// the target's. The draws are resampled with replacement from importance
// weighted draws, so the Monte Carlo variance of a mean is about
// σ²(1/ESS + 1/M) (importance sampling, then resampling M draws); a sample
// covariance entry of a normal has variance (Σ_ij² + Σ_ii Σ_jj)/N. Every
// entry must be within 5 such standard errors.
func TestMultiNormal(t *testing.T) {
	for _, tc := range []struct {
		n   int
		rho float64
	}{{2, 0.8}, {10, 0.6}, {100, 0.5}} {
		t.Run(fmt.Sprint("n=", tc.n), func(t *testing.T) {
			m := newMVN(tc.n, tc.rho)
			opts := DefaultOptions()
			res, err := Multi(context.Background(), starts(4, tc.n, 1, m.target), opts, 42)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range res.PathErrors {
				if e != nil {
					t.Errorf("path %d failed: %v", i+1, e)
				}
			}
			if len(res.Draws) != opts.NumMultiDraws {
				t.Fatalf("%d draws, want %d", len(res.Draws), opts.NumMultiDraws)
			}
			t.Logf("k-hat %.3f, ESS %.0f, evals %d", res.ParetoK, res.ESS, res.Evals)
			if !(res.ParetoK < 0.7) {
				t.Errorf("k-hat %v for a normal target, want < 0.7", res.ParetoK)
			}
			checkMoments(t, res.Draws, m, 1/res.ESS+1/float64(len(res.Draws)))
		})
	}
}

// checkMoments checks the draws' mean and covariance against m's within 5
// standard errors, with variance factor v (1/N for independent draws).
func checkMoments(t *testing.T, draws [][]float64, m *mvn, v float64) {
	t.Helper()
	n := len(m.mu)
	mean := make([]float64, n)
	for _, d := range draws {
		for i, x := range d {
			mean[i] += x / float64(len(draws))
		}
	}
	worst := 0.0
	for i := range n {
		se := math.Sqrt(m.cov.At(i, i) * v)
		z := (mean[i] - m.mu[i]) / se
		worst = math.Max(worst, math.Abs(z))
		if math.Abs(z) > 5 {
			t.Errorf("mean[%d] = %.4f, want %.4f (z = %.1f)", i, mean[i], m.mu[i], z)
		}
	}
	worstCov := 0.0
	for i := range n {
		for j := i; j < n; j++ {
			c := 0.0
			for _, d := range draws {
				c += (d[i] - mean[i]) * (d[j] - mean[j])
			}
			c /= float64(len(draws) - 1)
			want := m.cov.At(i, j)
			se := math.Sqrt((want*want + m.cov.At(i, i)*m.cov.At(j, j)) * v)
			z := (c - want) / se
			worstCov = math.Max(worstCov, math.Abs(z))
			if math.Abs(z) > 5 {
				t.Errorf("cov[%d][%d] = %.4f, want %.4f (z = %.1f)", i, j, c, want, z)
			}
		}
	}
	t.Logf("largest |z|: mean %.2f, covariance %.2f", worst, worstCov)
}

// bfgsReference applies the BFGS inverse-Hessian updates
// H ← (I - ρ s y')H(I - ρ y s') + ρ s s' for the pairs in order to
// H0 = diag(alpha): the matrix the compact form must equal.
func bfgsReference(alpha []float64, s, y [][]float64) *mat.Dense {
	n := len(alpha)
	h := mat.NewDense(n, n, nil)
	for i, a := range alpha {
		h.Set(i, i, a)
	}
	for k := range s {
		sv, yv := mat.NewVecDense(n, s[k]), mat.NewVecDense(n, y[k])
		rho := 1 / mat.Dot(sv, yv)
		e := mat.NewDense(n, n, nil)
		e.Outer(-rho, sv, yv)
		for i := range n {
			e.Set(i, i, e.At(i, i)+1)
		}
		var t1, t2 mat.Dense
		t1.Mul(e, h)
		t2.Mul(&t1, e.T())
		var ss mat.Dense
		ss.Outer(rho, sv, sv)
		h.Add(&t2, &ss)
	}
	return h
}

// TestApproximationMatchesBFGS checks the dense (2J >= n) and sparse
// (2J < n) factored approximations against the BFGS recursion: the
// covariance of draws (B B' for the linear map B: u -> draw - mu), the mean
// x - H g, and lp_approx as the normal log density with that covariance.
func TestApproximationMatchesBFGS(t *testing.T) {
	for _, tc := range []struct{ n, j int }{{3, 2}, {6, 5}, {11, 5}, {40, 5}, {40, 1}} {
		t.Run(fmt.Sprintf("n=%d/J=%d", tc.n, tc.j), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.j)))
			n := tc.n
			// Pairs y = A s for a random SPD A, so s'y > 0.
			a := mat.NewSymDense(n, nil)
			for i := range n {
				for k := i; k < n; k++ {
					v := 0.3 * rng.NormFloat64()
					if i == k {
						v = 2 + rng.Float64()
					}
					a.SetSym(i, k, v)
				}
			}
			var s, y [][]float64
			for range tc.j {
				sv := make([]float64, n)
				for i := range sv {
					sv[i] = rng.NormFloat64()
				}
				var yv mat.VecDense
				yv.MulVec(a, mat.NewVecDense(n, sv))
				if mat.Dot(mat.NewVecDense(n, sv), &yv) <= 0 {
					t.Fatal("test pair without positive curvature")
				}
				s, y = append(s, sv), append(y, append([]float64(nil), yv.RawVector().Data...))
			}
			alpha := make([]float64, n)
			x, g := make([]float64, n), make([]float64, n)
			for i := range n {
				alpha[i] = 0.2 + rng.Float64()
				x[i], g[i] = rng.NormFloat64(), rng.NormFloat64()
			}
			ap, err := newApproximation(x, g, alpha, s, y)
			if err != nil {
				t.Fatal(err)
			}
			if dense := 2*tc.j >= n; dense != (ap.l != nil) {
				t.Fatalf("dense form %v, want %v", ap.l != nil, dense)
			}
			want := bfgsReference(alpha, s, y)
			// B column by column.
			b := mat.NewDense(n, n, nil)
			e, out := make([]float64, n), make([]float64, n)
			for k := range n {
				clear(e)
				e[k] = 1
				ap.draw(e, out)
				for i := range n {
					b.Set(i, k, out[i]-ap.mu[i])
				}
			}
			var cov mat.Dense
			cov.Mul(b, b.T())
			for i := range n {
				for k := range n {
					if d := math.Abs(cov.At(i, k) - want.At(i, k)); d > 1e-10*math.Max(1, math.Abs(want.At(i, k))) {
						t.Fatalf("cov[%d][%d] = %v, BFGS gives %v", i, k, cov.At(i, k), want.At(i, k))
					}
				}
			}
			var hg mat.VecDense
			hg.MulVec(want, mat.NewVecDense(n, g))
			for i := range n {
				if d := math.Abs(ap.mu[i] - (x[i] - hg.AtVec(i))); d > 1e-10 {
					t.Errorf("mu[%d] = %v, want %v", i, ap.mu[i], x[i]-hg.AtVec(i))
				}
			}
			// lp_approx of a draw = log N(draw | mu, H).
			u := make([]float64, n)
			for i := range u {
				u[i] = rng.NormFloat64()
			}
			lp := ap.draw(u, out)
			hs := mat.NewSymDense(n, nil)
			for i := range n {
				for k := i; k < n; k++ {
					hs.SetSym(i, k, 0.5*(want.At(i, k)+want.At(k, i)))
				}
			}
			var chol mat.Cholesky
			if !chol.Factorize(hs) {
				t.Fatal("reference H not positive definite")
			}
			d := make([]float64, n)
			for i := range d {
				d[i] = out[i] - ap.mu[i]
			}
			var sol mat.VecDense
			if err := chol.SolveVecTo(&sol, mat.NewVecDense(n, d)); err != nil {
				t.Fatal(err)
			}
			wantLP := -0.5*chol.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi) - 0.5*mat.Dot(mat.NewVecDense(n, d), &sol)
			if math.Abs(lp-wantLP) > 1e-9*math.Max(1, math.Abs(wantLP)) {
				t.Errorf("lp_approx %v, normal log density %v", lp, wantLP)
			}
		})
	}
}
