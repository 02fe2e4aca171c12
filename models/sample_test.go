package models_test

import (
	"context"
	"github.com/shmlang/shm/internal/shared"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
)

// draws runs chains of a bound model in parallel and returns, for each
// output column, the draws of each chain.
func draws(t testing.TB, bm *runtime.Model, chains, warmup, samples int, seed uint64) map[string][][]float64 {
	t.Helper()
	cols := bm.Columns()
	out := make(map[string][][]float64, len(cols))
	for _, c := range cols {
		out[c] = make([][]float64, chains)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, chains)
	for ch := 0; ch < chains; ch++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := bm.NewDensity()
			if err != nil {
				errs[ch] = err
				return
			}
			cfg := nuts.DefaultConfig()
			cfg.NumWarmup, cfg.NumSamples = warmup, samples
			res, err := nuts.Sample(context.Background(), d, cfg, seed, ch+1)
			if err != nil {
				errs[ch] = err
				return
			}
			rng := rand.New(rand.NewPCG(seed, uint64(ch)))
			rows := make([][]float64, len(res.Draws))
			for i, dr := range res.Draws {
				if rows[i], err = d.Draw(nil, dr.Theta, rng); err != nil {
					errs[ch] = err
					return
				}
				if dr.Divergent {
					errs[ch] = errDivergent
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for j, c := range cols {
				col := make([]float64, len(rows))
				for i := range rows {
					col[i] = rows[i][j]
				}
				out[c][ch] = col
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

type divergentError struct{}

func (divergentError) Error() string { return "a transition diverged" }

var errDivergent error = divergentError{}

func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

func pooled(chains [][]float64) []float64 {
	var all []float64
	for _, c := range chains {
		all = append(all, c...)
	}
	return all
}

func readColumn(t *testing.T, path string) []float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ys []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		y, err := strconv.ParseFloat(line, 64)
		if err != nil {
			t.Fatal(err)
		}
		ys = append(ys, y)
	}
	return ys
}

// TestExpALikelihoodMatchesNumericalPosterior samples Experiment A's
// likelihood baseline and compares the posterior means and sds of mu and
// sigma with those of the exact posterior, computed by integrating the
// unnormalized density on a fine grid.
func TestExpALikelihoodMatchesNumericalPosterior(t *testing.T) {
	dataFile := shared.Path(t, "testdata", "expA", "data.csv")
	ys := readColumn(t, dataFile)
	ybar, s := meanSD(ys)
	n := float64(len(ys))
	se := s / math.Sqrt(n)
	// Grid integration of p(mu, sigma | y) ∝ N(mu|0,5) N⁺(sigma|0,2) Π N(y|mu,sigma).
	const g = 400
	var lps []float64
	mus := make([]float64, g)
	sigmas := make([]float64, g)
	for i := range mus {
		mus[i] = ybar - 8*se + 16*se*float64(i)/float64(g-1)
		sigmas[i] = s*(1-8/math.Sqrt(2*n)) + s*16/math.Sqrt(2*n)*float64(i)/float64(g-1)
	}
	maxLP := math.Inf(-1)
	for _, m := range mus {
		for _, sg := range sigmas {
			lp := -0.5*(m/5)*(m/5) - 0.5*(sg/2)*(sg/2) - n*math.Log(sg)
			for _, y := range ys {
				z := (y - m) / sg
				lp -= 0.5 * z * z
			}
			lps = append(lps, lp)
			maxLP = math.Max(maxLP, lp)
		}
	}
	var w, em, em2, es, es2 float64
	for i, m := range mus {
		for j, sg := range sigmas {
			p := math.Exp(lps[i*g+j] - maxLP)
			w += p
			em += p * m
			em2 += p * m * m
			es += p * sg
			es2 += p * sg * sg
		}
	}
	em, em2, es, es2 = em/w, em2/w, es/w, es2/w
	exact := map[string][2]float64{
		"mu":    {em, math.Sqrt(em2 - em*em)},
		"sigma": {es, math.Sqrt(es2 - es*es)},
	}
	bm := bind(t, "expA_likelihood.shm", []string{dataFile})
	dr := draws(t, bm, 4, 500, 500, 3)
	for name, want := range exact {
		m, sd := meanSD(pooled(dr[name]))
		mcse := diag.MCSEMean(dr[name])
		if math.Abs(m-want[0]) > 4*mcse {
			t.Errorf("%s: posterior mean %.5f, exact %.5f (MCSE %.2g)", name, m, want[0], mcse)
		}
		ess := diag.ESSBulk(dr[name])
		if math.Abs(sd-want[1]) > 4*want[1]/math.Sqrt(2*ess) {
			t.Errorf("%s: posterior sd %.5f, exact %.5f (ESS %.0f)", name, sd, want[1], ess)
		}
		if r := diag.Rhat(dr[name]); r > 1.01 {
			t.Errorf("%s: R-hat %.3f", name, r)
		}
	}
}
