package ot

import (
	"encoding/csv"
	"github.com/shmlang/shm/internal/shared"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// readCSV returns the columns of a CSV file with a header, as float64.
func readCSV(t *testing.T, path string) map[string][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string][]float64{}
	for _, row := range rows[1:] {
		for k, name := range rows[0] {
			v, err := strconv.ParseFloat(row[k], 64)
			if err != nil {
				continue // non-numeric
			}
			cols[name] = append(cols[name], v)
		}
	}
	return cols
}

// TestExperimentAPotential reproduces shared/testdata/expA: the CRN-averaged
// debiased Sinkhorn loss of Experiment A with the simulator noise given as
// data, the log density and its gradient on (mu, log sigma), computed by an
// independent implementation (rstan), to 1e-8 relative. It also checks
// Resolution against the file's h.
func TestExperimentAPotential(t *testing.T) {
	dir := shared.Path(t, "testdata", "expA")
	y := readCSV(t, filepath.Join(dir, "data.csv"))["y"]
	z := readCSV(t, filepath.Join(dir, "crn_z.csv"))
	ref := readCSV(t, filepath.Join(dir, "reference.csv"))
	metaRows := readCSV(t, filepath.Join(dir, "meta.csv"))["value"]
	// meta.csv rows: N, K, T, lambda, eta, alpha, h, eps, ...
	N, T, eta, hRef, epsRef := len(y), int(metaRows[2]), metaRows[4], metaRows[6], metaRows[7]

	h, err := Resolution(y, N, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(h-hRef) > 1e-15*hRef {
		t.Errorf("Resolution = %.17g, want %.17g", h, hRef)
	}
	eps := h * h
	if math.Abs(eps-epsRef) > 1e-15*epsRef {
		t.Errorf("eps = %.17g, want %.17g", eps, epsRef)
	}
	lw := make([]float64, N)
	for i := range lw {
		lw[i] = -math.Log(float64(N))
	}
	opt := Options{Eps: eps, Balanced: true, Iters: T}
	normalLpdf := func(x, mu, sd float64) float64 {
		r := (x - mu) / sd
		return -0.5*r*r - math.Log(sd) - 0.5*math.Log(2*math.Pi)
	}
	for row, K := range ref["K"] {
		mu, sigma := ref["mu"][row], ref["sigma"][row]
		for _, cfg := range []kernelConfig{{1, false}, {2, haveSIMD}} {
			w := NewWorkspaceWorkers(N, N, 1, cfg.workers)
			w.e.simd = cfg.simd
			yy, err := w.SelfTerm(y, lw, opt)
			if err != nil {
				t.Fatal(err)
			}
			var loss, dmu, dsigma float64
			x := make([]float64, N)
			gr := &Grad{X: make([]float64, N)}
			for k := 1; k <= int(K); k++ {
				zk := z["z"+strconv.Itoa(k)]
				for i := range x {
					x[i] = mu + sigma*zk[i]
				}
				res, err := w.Divergence(x, y, lw, lw, opt, yy, gr)
				if err != nil {
					t.Fatal(err)
				}
				loss += res.Divergence / K
				for i, g := range gr.X {
					dmu += g / K
					dsigma += g * zk[i] / K
				}
			}
			lp := normalLpdf(mu, 0, 5) + normalLpdf(sigma, 0, 2) - eta*loss
			gmu := -mu/25 - eta*dmu
			gs := sigma*(-sigma/4-eta*dsigma) + 1 // d/d log sigma, Jacobian included
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"loss", loss, ref["loss"][row]},
				{"lp_nojac", lp, ref["lp_nojac"][row]},
				{"lp_jac", lp + math.Log(sigma), ref["lp_jac"][row]},
				{"grad_mu", gmu, ref["grad_mu"][row]},
				{"grad_log_sigma", gs, ref["grad_log_sigma"][row]},
			} {
				if math.Abs(c.got-c.want) > 1e-8*math.Abs(c.want) {
					t.Errorf("K=%v %+v: %s = %.15g, want %.15g (rel %.2g)", K, cfg, c.name, c.got, c.want, math.Abs(c.got-c.want)/math.Abs(c.want))
				}
			}
			w.Close()
		}
	}
}
