package models_test

import (
	"math"
	"testing"

	"github.com/shmlang/shm/internal/modeltest"
	"github.com/shmlang/shm/runtime/diag"
)

// constrainedModel has a parameter of every constrained type, each with a
// distribution whose moments are known.
const constrainedModel = `parameters {
  simplex[3] theta;              // Dirichlet(2, 3, 5): means 0.2, 0.3, 0.5
  ordered[3] o;                  // order statistics of 3 standard normals
  positive_ordered[3] po;        // order statistics of 3 exponential(1)
  unit_vector[2] uv;             // uniform on the circle
  cholesky_factor_corr[3] Lc;    // uniform in the free entries: L[2,1] ~ U(-1, 1)
  corr_matrix[3] Om;             // uniform (LKJ(1)): Om[2,1] has variance 1/4
  corr_matrix[3] Om2;            // LKJ(2): variance 1/(2·2 + 3 − 1) = 1/6
  cov_matrix[2] S;               // Wishart(5, I): mean 5 I
  cholesky_factor_cov[3, 2] Lv;  // entries N(0, 1), diagonal half-normal
}
model {
  theta ~ dirichlet([2, 3, 5]');
  o ~ normal(0, 1);
  po ~ exponential(1);
  target += -0.5 * (S[1, 1] + S[2, 2]) + ((5 - 2 - 1) / 2.0) * log_determinant(S);
  to_vector(Lv) ~ normal(0, 1);
  Om2 ~ lkj_corr(2);
}
`

// TestConstrainedTypesSample samples a parameter of every constrained type
// and compares posterior moments with their exact values, within four
// Monte Carlo standard errors.
func TestConstrainedTypesSample(t *testing.T) {
	bm := modeltest.Bind(t, "constrained.shm", constrainedModel, nil)
	if got, want := bm.Dim(), 2+3+3+2+3+3+3+3+5; got != want {
		t.Fatalf("%d unconstrained coordinates, want %d (Stan's count)", got, want)
	}
	out := draws(t, bm, 4, 1000, 1000, 11)
	// E[max of 3 N(0,1)] = 3/(2√π).
	e3 := 3 / (2 * math.Sqrt(math.Pi))
	halfNormal := math.Sqrt(2 / math.Pi)
	means := map[string]float64{
		"theta.1": 0.2, "theta.2": 0.3, "theta.3": 0.5,
		"o.1": -e3, "o.2": 0, "o.3": e3,
		"po.1": 1.0 / 3, "po.2": 1.0/3 + 1.0/2, "po.3": 1.0/3 + 1.0/2 + 1,
		"uv.1": 0, "uv.2": 0,
		"Lc.2.1": 0, "Lc.1.1": 1, "Lc.1.2": 0,
		"Om.2.1": 0, "Om.1.2": 0, "Om.3.3": 1, "Om2.3.1": 0,
		"S.1.1": 5, "S.2.1": 0, "S.2.2": 5,
		"Lv.1.1": halfNormal, "Lv.2.2": halfNormal, "Lv.3.1": 0, "Lv.1.2": 0,
	}
	for col, want := range means {
		chains := out[col]
		if chains == nil {
			t.Fatalf("no column %s", col)
		}
		m, _ := meanSD(pooled(chains))
		se := diag.MCSEMean(chains)
		if math.IsNaN(se) || se == 0 {
			if m != want {
				t.Errorf("%s: constant %g, want %g", col, m, want)
			}
			continue
		}
		if math.Abs(m-want) > 4*se {
			t.Errorf("%s: mean %.4f, want %.4f (MCSE %.4f)", col, m, want, se)
		}
	}
	// Second moments: uv on the circle (E uv₁² = 1/2), Lc[2,1] uniform on
	// (−1, 1) (1/3), Om[2,1] under LKJ(1) in 3 dimensions (1/4), S[1,1]
	// Wishart (E S₁₁² = ν² + 2ν = 35).
	for col, want := range map[string]float64{"uv.1": 0.5, "Lc.2.1": 1.0 / 3, "Om.2.1": 0.25, "Om2.3.2": 1.0 / 6, "S.1.1": 35} {
		var sq [][]float64
		for _, c := range out[col] {
			s := make([]float64, len(c))
			for i, x := range c {
				s[i] = x * x
			}
			sq = append(sq, s)
		}
		m, _ := meanSD(pooled(sq))
		if se := diag.MCSEMean(sq); math.Abs(m-want) > 4*se {
			t.Errorf("E %s² = %.4f, want %.4f (MCSE %.4f)", col, m, want, se)
		}
	}
	// Every draw is of its type: simplex sums, ordering, unit diagonal.
	for i := range out["theta.1"][0] {
		s := out["theta.1"][0][i] + out["theta.2"][0][i] + out["theta.3"][0][i]
		if math.Abs(s-1) > 1e-12 || !(out["o.1"][0][i] < out["o.2"][0][i] && out["o.2"][0][i] < out["o.3"][0][i]) {
			t.Fatalf("draw %d: simplex sum %g, ordered %g %g %g", i, s, out["o.1"][0][i], out["o.2"][0][i], out["o.3"][0][i])
		}
	}
}
