package diag

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// testFit builds a 4-chain fit from the fixture: theta is the fixture, the
// sampler columns are made up so that the counts are known.
func testFit() *Fit {
	x := fixture()
	f := &Fit{Model: "test_model", Columns: []string{"lp__", "accept_stat__", "treedepth__", "divergent__", "energy__", "theta"}}
	for c, ch := range x {
		chain := Chain{NumWarmup: 1000, Thin: 1, MaxDepth: 10, WarmupSeconds: 0.5, SamplingSeconds: 0.25}
		for i, v := range ch {
			depth, div := 3.0, 0.0
			if c == 1 && i%25 == 0 { // 5 draws at the limit
				depth = 10
			}
			if c == 2 && i < 3 { // 3 divergences
				div = 1
			}
			// Chain 4's energy is a slow random walk: low E-BFMI.
			e := -v + 2
			if c == 3 {
				e = float64(i) / 10
			}
			chain.Draws = append(chain.Draws, []float64{-v * v, 0.9, depth, div, e, v})
		}
		f.Chains = append(f.Chains, chain)
	}
	return f
}

func TestSummarize(t *testing.T) {
	f := testFit()
	rows, err := Summarize(f)
	if err != nil {
		t.Fatal(err)
	}
	x := fixture()
	th := rows[5]
	all := pool(x)
	m := 0.0
	for _, v := range all {
		m += v / float64(len(all))
	}
	if th.Name != "theta" || math.Abs(th.Mean-m) > 1e-12 || th.Rhat != Rhat(x) || th.ESSBulk != ESSBulk(x) ||
		th.ESSTail != ESSTail(x) || th.MCSE != MCSEMean(x) || th.Q5 != -0.56 || th.Q50 != 0.04 {
		t.Errorf("theta row %+v", th)
	}
	if want := th.ESSBulk / 1.0; math.Abs(th.ESSBulkPerSec-want) > 1e-9 {
		t.Errorf("ESS/s %g, want %g", th.ESSBulkPerSec, want)
	}
	if !math.IsNaN(rows[1].Rhat) || !math.IsNaN(rows[1].ESSBulk) {
		t.Errorf("constant accept_stat__: R-hat %g, ESS %g; want NaN", rows[1].Rhat, rows[1].ESSBulk)
	}
	sd, err := Sampler(f)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Draws != 404 || sd.Divergent != 3 || sd.MaxDepthHits != 5 || len(sd.EBFMI) != 4 {
		t.Errorf("sampler diagnostics %+v", sd)
	}
	// A linear trend: diffs all 0.1, so E-BFMI = 101·0.01/Σ(i/10 - 5)².
	den := 0.0
	for i := 0; i <= 100; i++ {
		den += (float64(i)/10 - 5) * (float64(i)/10 - 5)
	}
	if want := 100 * 0.01 / den; math.Abs(sd.EBFMI[3]-want) > 1e-12 {
		t.Errorf("E-BFMI of chain 4 %g, want %g", sd.EBFMI[3], want)
	}
}

func TestWriteSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummary(&buf, testFit()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"Inference for Stan model: test_model\n",
		"4 chains: each with iter=(101,101,101,101); warmup=(1000,1000,1000,1000); thin=(1,1,1,1); 404 iterations saved.",
		"Sampling took (0.250, 0.250, 0.250, 0.250) seconds, 1.00 seconds total",
		"Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "ESS_bulk/s", "R_hat",
		"Warning: 3 of 404 (0.74%) transitions ended with a divergence",
		"Warning: 5 of 404 (1.2%) transitions hit the maximum tree depth of 10.",
		"Warning: chain 4: E-BFMI = ",
		"Warning: R-hat above 1.01 for lp__, theta.",
		"Warning: bulk or tail ESS below 100 per chain for lp__, theta.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// The theta row: name, then the mean with 3 significant digits.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "theta ") {
			fields := strings.Fields(line)
			if len(fields) != 11 || fields[5] != "0.0400" || fields[10] != "1.041" {
				t.Errorf("theta row %q", line)
			}
		}
	}
	if strings.Contains(out, "chain 1: E-BFMI") {
		t.Error("E-BFMI warning for a chain with white-noise energy")
	}
}

func TestFmtNum(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {1, "1.00"}, {-7.345, "-7.34"}, {0.0123456, "0.0123"}, {123.456, "123"},
		{12345.6, "12346"}, {1.5e-5, "1.50e-05"}, {2.5e7, "2.50e+07"}, {math.NaN(), "nan"},
	}
	for _, tt := range tests {
		if got := fmtNum(tt.v); got != tt.want {
			t.Errorf("fmtNum(%g) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestSummaryDegenerate(t *testing.T) {
	for n := 0; n <= 4; n++ {
		f := &Fit{Columns: []string{"lp__", "x"}}
		for c := 0; c < 2; c++ {
			ch := Chain{}
			for i := 0; i < n; i++ {
				ch.Draws = append(ch.Draws, []float64{float64(i), float64(i * c)})
			}
			f.Chains = append(f.Chains, ch)
		}
		var buf bytes.Buffer
		if err := WriteSummary(&buf, f); err != nil {
			t.Errorf("%d draws: %v", n, err)
		}
	}
	if err := WriteSummary(&bytes.Buffer{}, &Fit{}); err == nil {
		t.Error("no error for a fit without chains")
	}
	bad := &Fit{Columns: []string{"a", "b"}, Chains: []Chain{{Draws: [][]float64{{1}}}}}
	if _, err := Summarize(bad); err == nil {
		t.Error("no error for a short row")
	}
}

func TestFmtRate(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{{0.1703, "0.17"}, {2.456, "2.46"}, {933.6, "934"}, {10, "10"}}
	for _, tt := range tests {
		if got := fmtRate(tt.v); got != tt.want {
			t.Errorf("fmtRate(%g) = %q, want %q", tt.v, got, tt.want)
		}
	}
	if got := fmtRate(math.NaN()); got != fmtNum(math.NaN()) {
		t.Errorf("fmtRate(NaN) = %q", got)
	}
}

func TestPercentText(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{100, "100"}, {99.6, "100"}, {12.34, "12"}, {7.44, "7.4"}, {0.74, "0.74"}, {0.0012345, "0.0012"}, {0, "0"}} {
		if got := percentText(tc.v); got != tc.want {
			t.Errorf("percentText(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
