package diag

import (
	"math"
	"testing"
)

// BenchmarkSummaryColumn computes mean, sd, quantiles, MCSE, bulk and tail
// ESS and R-hat of one quantity with 4 chains of 1000 draws.
func BenchmarkSummaryColumn(b *testing.B) {
	chains := make([][]float64, 4)
	for c := range chains {
		u := parkMiller(float64(100+c), 1000)
		x := 0.0
		for _, v := range u {
			x = 0.5*x + v - 0.5
			chains[c] = append(chains[c], x)
		}
	}
	f := &Fit{Columns: []string{"x"}}
	for _, ch := range chains {
		var rows [][]float64
		for _, v := range ch {
			rows = append(rows, []float64{v})
		}
		f.Chains = append(f.Chains, Chain{Draws: rows, SamplingSeconds: 1})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rows, err := Summarize(f)
		if err != nil || math.IsNaN(rows[0].Rhat) {
			b.Fatal(err)
		}
	}
}
