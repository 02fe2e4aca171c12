package diag

import (
	"math"
	"testing"
)

// parkMiller returns n uniforms in (0,1) from the minimal standard generator
// s <- 16807·s mod (2^31-1), exact in float64 (and so reproducible in R).
func parkMiller(seed float64, n int) []float64 {
	const m = 2147483647
	out := make([]float64, n)
	s := seed
	for i := range out {
		s = math.Mod(16807*s, m)
		out[i] = s / m
	}
	return out
}

// fixture returns 4 chains of 101 draws: AR(1) chains
// x[t] = phi·x[t-1] + (u[t] - 0.5) with phi = 0.2, 0.5, 0.7, 0.9, the last
// chain shifted by 0.5, rounded to 2 decimals so that there are ties.
func fixture() [][]float64 {
	phis := []float64{0.2, 0.5, 0.7, 0.9}
	chains := make([][]float64, 4)
	for c, phi := range phis {
		u := parkMiller(float64(12345+c), 101)
		x := 0.0
		chains[c] = make([]float64, 101)
		for t, v := range u {
			x = phi*x + (v - 0.5)
			y := x
			if c == 3 {
				y += 0.5
			}
			chains[c][t] = math.Round(y*100) / 100
		}
	}
	return chains
}

func TestAutocovarianceDirect(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100, 101} {
		x := parkMiller(7, n)
		for i := range x {
			x[i] = x[i]*x[i] + float64(i%3)
		}
		got := Autocovariance(x)
		m := 0.0
		for _, v := range x {
			m += v / float64(n)
		}
		for k := 0; k < n; k++ {
			want := 0.0
			for i := 0; i+k < n; i++ {
				want += (x[i] - m) * (x[i+k] - m)
			}
			want /= float64(n)
			if math.Abs(got[k]-want) > 1e-12 {
				t.Fatalf("n=%d lag %d: %g, want %g", n, k, got[k], want)
			}
		}
	}
}

func TestZScaleDirect(t *testing.T) {
	chains := fixture()
	z := zScale(chains)
	all := pool(chains)
	s := float64(len(all))
	k := 0
	for c := range chains {
		for i, v := range chains[c] {
			// Average rank: number below plus half the number of ties
			// (itself included) plus one half.
			less, equal := 0, 0
			for _, w := range all {
				if w < v {
					less++
				} else if w == v {
					equal++
				}
			}
			r := float64(less) + float64(equal+1)/2
			u := (r - 0.375) / (s + 0.25)
			want := math.Sqrt2 * math.Erfinv(2*u-1)
			if math.Abs(z[c][i]-want) > 1e-9 {
				t.Fatalf("draw %d: z %g, want %g", k, z[c][i], want)
			}
			k++
		}
	}
}

func TestRhatBasicDirect(t *testing.T) {
	chains := fixture()
	// Split by hand: 101 draws, halves [0,50) and [51,101).
	var split [][]float64
	for _, c := range chains {
		split = append(split, c[:50])
	}
	for _, c := range chains {
		split = append(split, c[51:])
	}
	// BDA3: B = n·var(chain means), W = mean of chain variances,
	// var+ = (n-1)/n·W + B/n, R = sqrt(var+/W).
	n := 50.0
	var means, vars []float64
	for _, c := range split {
		m := 0.0
		for _, v := range c {
			m += v / n
		}
		s := 0.0
		for _, v := range c {
			s += (v - m) * (v - m)
		}
		means = append(means, m)
		vars = append(vars, s/(n-1))
	}
	gm := 0.0
	for _, m := range means {
		gm += m / 8
	}
	b := 0.0
	for _, m := range means {
		b += (m - gm) * (m - gm)
	}
	b *= n / 7
	w := 0.0
	for _, v := range vars {
		w += v / 8
	}
	want := math.Sqrt(((n-1)/n*w + b/n) / w)
	if got := RhatBasic(chains); math.Abs(got-want) > 1e-12 {
		t.Errorf("split R-hat %g, want %g", got, want)
	}
}

func TestQuantileType7(t *testing.T) {
	x := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	// Sorted: 1 1 2 3 4 5 6 9; h = 7p.
	tests := []struct{ p, want float64 }{
		{0, 1}, {1, 9}, {0.5, 3.5}, {0.05, 1}, {0.25, 1.75}, {0.95, 6 + 0.65*3},
	}
	for _, tt := range tests {
		if got := Quantile(x, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Quantile(%g) = %g, want %g", tt.p, got, tt.want)
		}
	}
}

func TestEBFMIDirect(t *testing.T) {
	e := []float64{10, 12, 11, 15, 14, 13}
	// diffs: 2 -1 4 -1 -1: squares sum 23; mean 12.5, squares of deviations
	// 6.25 .25 2.25 6.25 2.25 .25 = 17.5.
	if got, want := EBFMI(e), 23/17.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("E-BFMI %g, want %g", got, want)
	}
}

func TestESSIndependent(t *testing.T) {
	// For independent draws, the ESS is close to the number of draws, and for
	// an AR(1) chain with coefficient phi it is close to n·(1-phi)/(1+phi).
	const n = 20000
	for _, phi := range []float64{0, 0.5, 0.9} {
		var chains [][]float64
		for c := 0; c < 4; c++ {
			u := parkMiller(float64(1000+c), n)
			x := 0.0
			ch := make([]float64, n)
			for i, v := range u {
				x = phi*x + (v - 0.5)
				ch[i] = x
			}
			chains = append(chains, ch)
		}
		want := 4 * n * (1 - phi) / (1 + phi)
		for name, f := range map[string]func([][]float64) float64{"basic": ESSBasic, "bulk": ESSBulk} {
			if got := f(chains); math.Abs(got/want-1) > 0.1 {
				t.Errorf("phi %g: %s ESS %.0f, want about %.0f", phi, name, got, want)
			}
		}
	}
}

func TestDegenerate(t *testing.T) {
	constant := [][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}}
	withNaN := [][]float64{{1, 2, math.NaN(), 4}, {1, 2, 3, 4}}
	for _, c := range [][][]float64{constant, withNaN} {
		for name, v := range map[string]float64{
			"Rhat": Rhat(c), "ESSBulk": ESSBulk(c), "ESSTail": ESSTail(c), "RhatBasic": RhatBasic(c),
		} {
			if !math.IsNaN(v) {
				t.Errorf("%s(%v) = %g, want NaN", name, c, v)
			}
		}
	}
}

// TestPosteriorReference compares with the R package posterior 1.4.0
// (Debian r-cran-posterior) on the fixture, written to a CSV file with %.17g
// and read with read.csv: rhat, rhat_basic, ess_bulk, ess_tail, ess_basic,
// ess_quantile, mcse_mean, mcse_sd, mcse_quantile and quantile.
func TestPosteriorReference(t *testing.T) {
	x := fixture()
	short := make([][]float64, len(x))
	for i, c := range x {
		short[i] = c[:9]
	}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"rhat", Rhat(x), 1.04068948139885},
		{"rhat_basic", RhatBasic(x), 1.04868685250298},
		{"ess_bulk", ESSBulk(x), 81.7144258651239},
		{"ess_tail", ESSTail(x), 62.9230470299204},
		{"ess_basic", ESSBasic(x), 73.5664662096157},
		{"ess_quantile 0.05", ESSQuantile(x, 0.05), 119.137399716541},
		{"mcse_mean", MCSEMean(x), 0.0482961636946289},
		{"mcse_sd", MCSESD(x), 0.0447334096150012},
		{"mcse_quantile 0.05", MCSEQuantile(x, 0.05), 0.125},
		{"mcse_quantile 0.95", MCSEQuantile(x, 0.95), 0.11},
		{"quantile 0.05", Quantile(pool(x), 0.05), -0.56},
		{"quantile 0.5", Quantile(pool(x), 0.5), 0.04},
		// 9 draws per chain: split chains of 4, where Geyer's sequence
		// stops at once (posterior then gives ESS = S/2).
		{"rhat (9 draws)", Rhat(short), 1.20914523732976},
		{"ess_bulk (9 draws)", ESSBulk(short), 16},
		{"ess_tail (9 draws)", ESSTail(short), 16},
		{"ess_basic (9 draws)", ESSBasic(short), 16},
		{"mcse_mean (9 draws)", MCSEMean(short), 0.101378005504153},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-12*math.Max(1, math.Abs(tt.want)) {
			t.Errorf("%s = %.15g, posterior gives %.15g", tt.name, tt.got, tt.want)
		}
	}
}

func TestRhatOfChainwiseConstantIsNaN(t *testing.T) {
	chains := [][]float64{{0.5, 0.5, 0.5, 0.5}, {0.7, 0.7, 0.7, 0.7}}
	if r := Rhat(chains); !math.IsNaN(r) {
		t.Errorf("R-hat of chains that are each constant: %g, want NaN", r)
	}
}
