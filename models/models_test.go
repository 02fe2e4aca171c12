// Package models_test checks the shipped example models.
package models_test

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/modeltest"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/runtime"
)

func bind(t testing.TB, model string, files []string, sets ...string) *runtime.Model {
	t.Helper()
	return modeltest.Bind(t, model, "", files, sets...)
}

// TestExpAPotentialMatchesReference evaluates Experiment A's potential
// with the noise given as data at the reference point and compares the
// log density and its gradient with shared/testdata/expA/reference.csv
// (an independent implementation) to 1e-8 relative.
func TestExpAPotentialMatchesReference(t *testing.T) {
	f, err := os.Open(shared.Path(t, "testdata", "expA", "reference.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	files := []string{
		shared.Path(t, "testdata", "expA", "data.csv"),
		shared.Path(t, "testdata", "expA", "crn_z.csv"),
		shared.Path(t, "testdata", "expA", "meta.csv"),
	}
	for _, row := range rows[1:] {
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(row[col[name]], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		k := row[col["K"]]
		t.Run("K="+k, func(t *testing.T) {
			bm := bind(t, "expA_noise_as_data.shm", files, "K="+k)
			d, err := bm.NewDensity()
			if err != nil {
				t.Fatal(err)
			}
			theta := []float64{num("mu"), math.Log(num("sigma"))}
			grad := make([]float64, 2)
			lp, err := d.LogDensityGrad(theta, grad)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"lp_jac", lp, num("lp_jac")},
				{"grad_mu", grad[0], num("grad_mu")},
				{"grad_log_sigma", grad[1], num("grad_log_sigma")},
			} {
				if math.Abs(c.got-c.want) > 1e-8*math.Abs(c.want) {
					t.Errorf("%s = %.15g, reference %.15g (rel. error %.2g)", c.name, c.got, c.want, math.Abs(c.got-c.want)/math.Abs(c.want))
				}
			}
			d.Jacobian = false
			lp0, err := d.LogDensity(theta)
			if err != nil {
				t.Fatal(err)
			}
			if want := num("lp_nojac"); math.Abs(lp0-want) > 1e-8*math.Abs(want) {
				t.Errorf("lp_nojac = %.15g, reference %.15g", lp0, want)
			}
		})
	}
}

// TestExpACRNEqualsNoiseAsData checks that Experiment A's model with
// crn(6, ... std_normal_rng(N) ...) gives the same log density and
// gradient as the same potential with the six noise vectors that crn drew
// passed as data.
func TestExpACRNEqualsNoiseAsData(t *testing.T) {
	y := shared.Path(t, "testdata", "expA", "data.csv")
	crnModel := bind(t, "expA.shm", []string{y}, "lambda=1")
	dc, err := crnModel.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	theta := []float64{1.9, math.Log(0.45)}
	noise, err := dc.CRNNoise(theta)
	if err != nil {
		t.Fatal(err)
	}
	if len(noise) != 1 || len(noise[0]) != 6 || len(noise[0][0]) != 120 {
		t.Fatalf("noise shape: %d calls", len(noise))
	}
	// Write the noise as columns z1 … z6.
	var b strings.Builder
	b.WriteString("z1,z2,z3,z4,z5,z6\n")
	for i := 0; i < 120; i++ {
		for k := 0; k < 6; k++ {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(noise[0][k][i], 'g', 17, 64))
		}
		b.WriteByte('\n')
	}
	zfile := filepath.Join(t.TempDir(), "z.csv")
	if err := os.WriteFile(zfile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dataModel := bind(t, "expA_noise_as_data.shm", []string{y, zfile}, "lambda=1", "K=6")
	dd, err := dataModel.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range [][]float64{theta, {2.2, math.Log(0.6)}} {
		g1, g2 := make([]float64, 2), make([]float64, 2)
		lp1, err := dc.LogDensityGrad(th, g1)
		if err != nil {
			t.Fatal(err)
		}
		lp2, err := dd.LogDensityGrad(th, g2)
		if err != nil {
			t.Fatal(err)
		}
		// The models differ only in the priors' constants, which ~ drops
		// and normal_lpdf keeps: −log 5 − log 2 − log 2π.
		dropped := -math.Log(5) - math.Log(2) - math.Log(2*math.Pi)
		if math.Abs((lp2-lp1)-dropped) > 1e-10 {
			t.Errorf("theta %v: log densities %.15g (crn) and %.15g (noise as data) differ by %.15g, want %.15g", th, lp1, lp2, lp2-lp1, dropped)
		}
		for i := range g1 {
			if math.Abs(g1[i]-g2[i]) > 1e-10*math.Max(1, math.Abs(g2[i])) {
				t.Errorf("theta %v: gradient %d: crn %.15g, noise as data %.15g", th, i, g1[i], g2[i])
			}
		}
	}
}

// BenchmarkExpAGradient measures one gradient of Experiment A's
// potential (T = 80, N = 120) with K = 6 replicates (the shipped model)
// and with K = 1: the cost of one leapfrog step.
func BenchmarkExpAGradient(b *testing.B) {
	y := filepath.Join("..", "..", "shared", "testdata", "expA", "data.csv")
	for _, k := range []int{6, 1} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			src := shared.EditedSource(b, "expA.shm", "crn(6,", fmt.Sprintf("crn(%d,", k))
			bm := modeltest.Bind(b, "expA.shm", src, []string{y}, "lambda=1")
			d, err := bm.NewDensity()
			if err != nil {
				b.Fatal(err)
			}
			theta := []float64{2, math.Log(0.5)}
			grad := make([]float64, 2)
			for b.Loop() {
				if _, err := d.LogDensityGrad(theta, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
