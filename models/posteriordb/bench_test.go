package posteriordb_test

import (
	"path/filepath"
	"testing"
)

// BenchmarkGradient measures one gradient of the log density of the
// posteriordb models written with loops over observations (issue 18; the
// ones under speed/ have no reference posterior and are speed benchmarks
// only), at the unconstrained point 0.1 in every coordinate, with
// posteriordb's data.
func BenchmarkGradient(b *testing.B) {
	for _, name := range []string{"arK-arK", "arma-arma11", "garch-garch11", "eight_schools-eight_schools_noncentered",
		"speed/dogs-dogs", "speed/radon_mn-radon_hierarchical_intercept_noncentered", "speed/election88-election88_full"} {
		b.Run(name, func(b *testing.B) {
			bm := bind(b, name+".shm", filepath.Join(sharedDir(b), filepath.Base(name), "data.json"))
			d, err := bm.NewDensity()
			if err != nil {
				b.Fatal(err)
			}
			theta := make([]float64, d.Dim())
			for i := range theta {
				theta[i] = 0.1
			}
			g := make([]float64, len(theta))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.LogDensityGrad(theta, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
