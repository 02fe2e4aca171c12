package posteriordb_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/shmlang/shm/runtime/diag"
)

// regressionData is a synthetic linear regression data set: N rows of D
// correlated standard-normal predictors (a shared factor gives every pair a
// correlation of 0.2) and y = 1 + X·beta + 2·noise with beta[j] = (j − D/2)/D.
type regressionData struct {
	N int         `json:"N"`
	D int         `json:"D"`
	X [][]float64 `json:"X"`
	Y []float64   `json:"y"`
}

func makeRegression(n, d int, seed uint64) *regressionData {
	rng := rand.New(rand.NewPCG(seed, 0x7e6))
	r := &regressionData{N: n, D: d, X: make([][]float64, n), Y: make([]float64, n)}
	for i := range n {
		common := rng.NormFloat64()
		row := make([]float64, d)
		mu := 1.0
		for j := range d {
			row[j] = math.Sqrt(0.8)*rng.NormFloat64() + math.Sqrt(0.2)*common
			mu += row[j] * (float64(j+1) - float64(d)/2) / float64(d)
		}
		r.X[i] = row
		r.Y[i] = mu + 2*rng.NormFloat64()
	}
	return r
}

func (r *regressionData) write(t testing.TB, path string) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// exactMoment is a posterior mean and sd known in closed form.
type exactMoment struct{ mean, sd float64 }

// exactPosterior returns the exact posterior moments of regression.shm
// (flat priors on alpha, beta and sigma > 0), by column name. With Z = [1 X]
// (p = D+1 columns), the least-squares fit b and its residual sum of squares
// S, and nu = N − p − 1: (alpha, beta) is multivariate t with nu degrees of
// freedom, mean b and covariance S/(nu−2)·(Z'Z)⁻¹; sigma² is scaled
// inverse-χ²(nu, S/nu), so E[sigma] = sqrt(S/2)·Γ((nu−1)/2)/Γ(nu/2) and
// E[sigma²] = S/(nu−2).
func exactPosterior(t testing.TB, r *regressionData) map[string]exactMoment {
	t.Helper()
	p := r.D + 1
	z := mat.NewDense(r.N, p, nil)
	for i, row := range r.X {
		z.Set(i, 0, 1)
		for j, v := range row {
			z.Set(i, j+1, v)
		}
	}
	y := mat.NewVecDense(r.N, r.Y)
	var ztz mat.SymDense
	ztz.SymOuterK(1, z.T())
	var chol mat.Cholesky
	if !chol.Factorize(&ztz) {
		t.Fatal("Z'Z is not positive definite")
	}
	var zty, b, resid mat.VecDense
	zty.MulVec(z.T(), y)
	if err := chol.SolveVecTo(&b, &zty); err != nil {
		t.Fatal(err)
	}
	resid.MulVec(z, &b)
	resid.SubVec(y, &resid)
	s := mat.Dot(&resid, &resid)
	nu := float64(r.N - p - 1)
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		t.Fatal(err)
	}
	out := map[string]exactMoment{}
	for j := range p {
		m := exactMoment{mean: b.AtVec(j), sd: math.Sqrt(s / (nu - 2) * inv.At(j, j))}
		if j == 0 {
			out["alpha"] = m
		} else {
			out["beta."+strconv.Itoa(j)] = m
		}
	}
	lg1, _ := math.Lgamma((nu - 1) / 2)
	lg2, _ := math.Lgamma(nu / 2)
	eSigma := math.Sqrt(s/2) * math.Exp(lg1-lg2)
	out["sigma"] = exactMoment{mean: eSigma, sd: math.Sqrt(s/(nu-2) - eSigma*eSigma)}
	return out
}

// TestExactPosteriorSmall checks exactPosterior against a direct
// computation for a regression small enough to solve by hand: with one
// predictor, (Z'Z)⁻¹ and the least-squares fit have closed forms.
func TestExactPosteriorSmall(t *testing.T) {
	r := &regressionData{N: 6, D: 1, X: [][]float64{{0}, {1}, {2}, {3}, {4}, {5}}, Y: []float64{1, 3, 2, 5, 4, 6}}
	// x̄ = 2.5, Sxx = 17.5, Sxy = Σ(x−x̄)(y−ȳ) with ȳ = 3.5: 15.5.
	slope := 15.5 / 17.5
	icept := 3.5 - slope*2.5
	s := 0.0
	for i, row := range r.X {
		e := r.Y[i] - icept - slope*row[0]
		s += e * e
	}
	nu := 6.0 - 2 - 1
	got := exactPosterior(t, r)
	check := func(name string, want exactMoment) {
		g := got[name]
		if math.Abs(g.mean-want.mean) > 1e-12*math.Max(1, math.Abs(want.mean)) || math.Abs(g.sd-want.sd) > 1e-12*math.Max(1, want.sd) {
			t.Errorf("%s: got %+v, want %+v", name, g, want)
		}
	}
	check("alpha", exactMoment{icept, math.Sqrt(s / (nu - 2) * (1.0/6 + 2.5*2.5/17.5))})
	check("beta.1", exactMoment{slope, math.Sqrt(s / (nu - 2) / 17.5)})
	// nu = 3: E[sigma] = sqrt(S/2)·Γ(1)/Γ(3/2) = sqrt(S/2)·2/sqrt(pi).
	es := math.Sqrt(s/2) * 2 / math.Sqrt(math.Pi)
	check("sigma", exactMoment{es, math.Sqrt(s - es*es)})
}

// TestRegression samples regression.shm on the synthetic N = 1000, D = 10
// data set and compares every parameter with the exact posterior, with the
// same tolerances as TestPosteriordb (the reference's own error is zero).
// Its RESULT line gives the wall time and ESS/s asked for by issue 4.
func TestRegression(t *testing.T) {
	s, _ := settings(t)
	r := makeRegression(1000, 10, 20251125)
	path := filepath.Join(t.TempDir(), "regression.json")
	r.write(t, path)
	exact := exactPosterior(t, r)
	bm := bind(t, "regression.shm", path)
	fit, wall, err := run(t, bm, s, 20251125)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := diag.Summarize(fit)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := diag.Sampler(fit)
	if err != nil {
		t.Fatal(err)
	}
	maxZ, minESS, minESSps := 0.0, math.Inf(1), math.Inf(1)
	seen := 0
	for j, row := range rows {
		e, ok := exact[row.Name]
		if !ok {
			continue
		}
		seen++
		z := (row.Mean - e.mean) / row.MCSE
		maxZ = math.Max(maxZ, math.Abs(z))
		minESS = math.Min(minESS, row.ESSBulk)
		minESSps = math.Min(minESSps, row.ESSBulkPerSec)
		t.Logf("  %-8s mean %10.6g exact %10.6g (z %5.2f) sd %10.5g exact %10.5g (z %5.2f) ess %5.0f", row.Name, row.Mean, e.mean, z,
			row.SD, e.sd, (row.SD-e.sd)/sdError(row.SD, row.ESSBulk, fit.Column(j)), row.ESSBulk)
		if tol := 4*row.MCSE + 1e-3*e.sd; math.Abs(row.Mean-e.mean) > tol {
			t.Errorf("%s: mean %.6g, exact %.6g: difference exceeds %.3g (z = %.2f)", row.Name, row.Mean, e.mean, tol, z)
		}
		if tol := 4 * sdError(row.SD, row.ESSBulk, fit.Column(j)); math.Abs(row.SD-e.sd) > tol {
			t.Errorf("%s: sd %.6g, exact %.6g: difference exceeds %.3g", row.Name, row.SD, e.sd, tol)
		}
	}
	if seen != len(exact) {
		t.Errorf("compared %d parameters, want %d", seen, len(exact))
	}
	t.Logf("RESULT regression-N1000-D10 chains=%d warmup=%d samples=%d wall=%.2fs minESSbulk=%.0f minESSbulk/s=%.1f max|z_mean|=%.2f divergent=%d/%d treedepth_hits=%d",
		s.chains, s.warmup, s.samples, wall.Seconds(), minESS, minESSps, maxZ, sd.Divergent, sd.Draws, sd.MaxDepthHits)
}
