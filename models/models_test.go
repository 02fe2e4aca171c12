// Package models_test checks the shipped example models.
package models_test

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
)

func shared(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{"..", "..", "shared"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared/ must sit beside the repository: %v", err)
	}
	return p
}

func bind(t *testing.T, model string, files []string, sets ...string) *runtime.Model {
	t.Helper()
	text, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	m, errs := ir.CheckSource(model, string(text))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &data.Set{}
	for _, f := range files {
		vals, err := data.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := set.AddFile(vals); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sets {
		v, err := data.ParseSet(s)
		if err != nil {
			t.Fatal(err)
		}
		set.AddSet(v)
	}
	bm, err := runtime.Bind(m, set, runtime.Options{Impls: runtime.Builtins(), Seed: 1, DataFiles: files})
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// TestExpAPotentialMatchesReference evaluates Experiment A's potential
// with the noise given as data at the reference point and compares the
// log density and its gradient with shared/testdata/expA/reference.csv
// (an independent implementation) to 1e-8 relative.
func TestExpAPotentialMatchesReference(t *testing.T) {
	f, err := os.Open(shared(t, "testdata", "expA", "reference.csv"))
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
		shared(t, "testdata", "expA", "data.csv"),
		shared(t, "testdata", "expA", "crn_z.csv"),
		shared(t, "testdata", "expA", "meta.csv"),
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
