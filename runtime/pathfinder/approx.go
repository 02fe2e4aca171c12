package pathfinder

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// approximation is the normal approximation N(mu, H) of one L-BFGS iterate,
// with H the L-BFGS inverse Hessian built from the diagonal alpha and the
// stored update pairs (the paper's Algorithm 2 and its factored forms).
type approximation struct {
	mu []float64
	// logDetChol is log det of the factor: half the log det of H.
	logDetChol float64

	// Dense form (2J >= n): draws are mu + L u with L L' = H.
	l *mat.TriDense

	// Sparse form (2J < n): draws are mu + √α ⊙ (Q (Lk - I) Q'u + u) with
	// Lk Lk' = I + R̄ M̄ R̄' (the paper's Algorithm 4, "BK").
	sqrtAlpha []float64
	q         *mat.Dense // n×2J, orthonormal columns
	lk        *mat.TriDense
}

var errNotPositiveDefinite = errors.New("pathfinder: inverse Hessian approximation is not positive definite")

// newApproximation forms the approximation at the iterate x, where the
// objective -log p has gradient g, from the diagonal alpha and the update
// pairs s[j] = x_{j+1} - x_j, y[j] = g_{j+1} - g_j (oldest first), as
// Stan's pathfinder_impl and taylor_approximation.
//
// With R the upper triangle of S'Y, D its diagonal and N = -R⁻¹S', the
// inverse Hessian is H = A + A Y N + N'Y'A + N'(Y'AY + D)N, A = diag(alpha)
// (Byrd, Nocedal and Schnabel's compact form), and mu = x - H g.
func newApproximation(x, g, alpha []float64, s, y [][]float64) (*approximation, error) {
	n, j := len(x), len(s)
	// R = triu(S'Y).
	r := make([]float64, j*j)
	for a := range j {
		for b := a; b < j; b++ {
			r[a*j+b] = dotf(s[a], y[b])
		}
	}
	// N = -R⁻¹ S' by back substitution, J×n.
	nm := mat.NewDense(j, n, nil)
	for col := range n {
		for a := j - 1; a >= 0; a-- {
			v := s[a][col]
			for b := a + 1; b < j; b++ {
				v -= r[a*j+b] * nm.At(b, col)
			}
			nm.Set(a, col, v/r[a*j+a])
		}
	}
	nm.Scale(-1, nm)
	// YA = Y'A (J×n), T = Y'AY + D (J×J).
	ya := mat.NewDense(j, n, nil)
	for a := range j {
		for i := range n {
			ya.Set(a, i, y[a][i]*alpha[i])
		}
	}
	t := mat.NewSymDense(j, nil)
	for a := range j {
		for b := a; b < j; b++ {
			v := 0.0
			for i := range n {
				v += ya.At(a, i) * y[b][i]
			}
			if a == b {
				v += r[a*j+a]
			}
			t.SetSym(a, b, v)
		}
	}

	// H g = A g + A Y (N g) + N'(Y'A g + T N g).
	ng := make([]float64, j)
	for a := range j {
		ng[a] = dotf(nm.RawRowView(a), g)
	}
	w := make([]float64, j) // Y'A g + T N g
	for a := range j {
		w[a] = dotf(ya.RawRowView(a), g)
		for b := range j {
			w[a] += t.At(a, b) * ng[b]
		}
	}
	mu := make([]float64, n)
	for i := range n {
		hg := alpha[i] * g[i]
		for a := range j {
			hg += alpha[i]*y[a][i]*ng[a] + nm.At(a, i)*w[a]
		}
		mu[i] = x[i] - hg
	}
	for _, v := range mu {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("pathfinder: approximation mean is not finite")
		}
	}

	ap := &approximation{mu: mu}
	if 2*j >= n {
		// Dense: H = A + YA'N + N'YA + N'TN.
		var tn, h, tmp mat.Dense
		tn.Mul(t, nm)
		h.Mul(nm.T(), &tn)
		tmp.Mul(ya.T(), nm)
		h.Add(&h, &tmp)
		h.Add(&h, tmp.T())
		hs := mat.NewSymDense(n, nil)
		for a := range n {
			for b := a; b < n; b++ {
				v := 0.5 * (h.At(a, b) + h.At(b, a))
				if a == b {
					v += alpha[a]
				}
				hs.SetSym(a, b, v)
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(hs) {
			return nil, errNotPositiveDefinite
		}
		ap.l = mat.NewTriDense(n, mat.Lower, nil)
		chol.LTo(ap.l)
		ap.logDetChol = 0.5 * chol.LogDet()
		return ap, nil
	}

	// Sparse: W̄' = [√A Y, √A⁻¹ N'] (n×2J) = Q R̄.
	ap.sqrtAlpha = make([]float64, n)
	logDetA := 0.0
	for i, v := range alpha {
		ap.sqrtAlpha[i] = math.Sqrt(v)
		logDetA += math.Log(v)
	}
	wt := mat.NewDense(n, 2*j, nil)
	for i := range n {
		for a := range j {
			wt.Set(i, a, ap.sqrtAlpha[i]*y[a][i])
			wt.Set(i, j+a, nm.At(a, i)/ap.sqrtAlpha[i])
		}
	}
	// The thin factorization: Q is n×2J (a full Q would be n×n, 3.2 GB
	// for 20 000 parameters).
	a := wt.RawMatrix()
	tau := make([]float64, 2*j)
	work := make([]float64, 1)
	lapack64.Geqrf(a, tau, work, -1)
	work = make([]float64, max(int(work[0]), 2*j))
	lapack64.Geqrf(a, tau, work, len(work))
	rbar := mat.NewDense(2*j, 2*j, nil)
	for r := range 2 * j {
		for c := r; c < 2*j; c++ {
			rbar.Set(r, c, a.Data[r*a.Stride+c])
		}
	}
	lapack64.Orgqr(a, tau, work, -1)
	work = make([]float64, max(int(work[0]), 2*j))
	lapack64.Orgqr(a, tau, work, len(work))
	ap.q = wt // now the thin Q
	// M̄ = [[0, I], [I, T]].
	mbar := mat.NewDense(2*j, 2*j, nil)
	for a := range j {
		mbar.Set(a, j+a, 1)
		mbar.Set(j+a, a, 1)
		for b := range j {
			mbar.Set(j+a, j+b, t.At(a, b))
		}
	}
	var rm, k mat.Dense
	rm.Mul(rbar, mbar)
	k.Mul(&rm, rbar.T())
	ks := mat.NewSymDense(2*j, nil)
	for a := range 2 * j {
		for b := a; b < 2*j; b++ {
			v := 0.5 * (k.At(a, b) + k.At(b, a))
			if a == b {
				v++
			}
			ks.SetSym(a, b, v)
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(ks) {
		return nil, errNotPositiveDefinite
	}
	ap.lk = mat.NewTriDense(2*j, mat.Lower, nil)
	chol.LTo(ap.lk)
	ap.logDetChol = 0.5*chol.LogDet() + 0.5*logDetA
	return ap, nil
}

// draw sets out to the draw of the approximation for the standard normal
// vector u and returns its log density under the approximation (Stan's
// lp_approx__).
//
// Stan's sparse branch multiplies by the upper Cholesky factor, whose draws
// have covariance √A(Q Lk' Lk Q' + I - QQ')√A rather than H; the lower
// factor used here gives H exactly, as the dense branch does, and the same
// log density.
func (ap *approximation) draw(u, out []float64) float64 {
	n := len(u)
	if ap.l != nil {
		for i := range n {
			v := ap.mu[i]
			for k := 0; k <= i; k++ {
				v += ap.l.At(i, k) * u[k]
			}
			out[i] = v
		}
	} else {
		m, _ := ap.lk.Dims()
		qu := make([]float64, m) // Q'u
		for k := range m {
			s := 0.0
			for i := range n {
				s += ap.q.At(i, k) * u[i]
			}
			qu[k] = s
		}
		lq := make([]float64, m) // (Lk - I) Q'u
		for a := range m {
			s := -qu[a]
			for b := 0; b <= a; b++ {
				s += ap.lk.At(a, b) * qu[b]
			}
			lq[a] = s
		}
		for i := range n {
			v := u[i]
			for k := range m {
				v += ap.q.At(i, k) * lq[k]
			}
			out[i] = ap.mu[i] + ap.sqrtAlpha[i]*v
		}
	}
	return -ap.logDetChol - 0.5*(dotf(u, u)+float64(n)*math.Log(2*math.Pi))
}

// updateDiagonal returns the new diagonal of the initial inverse Hessian
// from the pair (y, s), as Stan's pathfinder (Gilbert and Lemaréchal 1989,
// eq. 4.9). It returns alpha unchanged when the update is not positive and
// finite (Stan keeps the result, which then fails every later iteration).
func updateDiagonal(alpha, y, s []float64) []float64 {
	yay, sy, sas := 0.0, 0.0, 0.0
	for i := range alpha {
		yay += y[i] * alpha[i] * y[i]
		sy += y[i] * s[i]
		sas += s[i] * s[i] / alpha[i]
	}
	next := make([]float64, len(alpha))
	for i, a := range alpha {
		r := s[i] / a
		v := sy / (yay/a + y[i]*y[i] - yay/sas*r*r)
		if !(v > 0) || math.IsInf(v, 1) {
			return alpha
		}
		next[i] = v
	}
	return next
}

// curvatureOK is Stan's check_curve: the pair is used when s'y > 0 and
// y'y / s'y <= 1e12.
func curvatureOK(y, s []float64) bool {
	sy := dotf(y, s)
	return sy > 0 && math.Abs(dotf(y, y)/sy) <= 1e12
}

func dotf(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
