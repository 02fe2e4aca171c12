package nuts

import (
	"math"
	"math/rand/v2"
	"testing"
)

// windowEnds runs the schedule for its whole warmup and returns the 0-based
// iterations at which the metric is updated, and the first and last
// iterations that feed the estimator.
func windowEnds(w windows, numWarmup int) (ends []int, first, last int) {
	first, last = -1, -1
	for it := 0; it < numWarmup; it++ {
		if w.inWindow() {
			if first < 0 {
				first = it
			}
			last = it
		}
		if w.endOfWindow() {
			w.computeNextWindow()
			ends = append(ends, it)
		}
		w.counter++
	}
	return ends, first, last
}

func TestWindowSchedule(t *testing.T) {
	tests := []struct {
		warmup      int
		ends        []int
		first, last int
		reduced     bool
	}{
		// Stan's documented schedule for 1000 warmup iterations:
		// slow windows [75,100) [100,150) [150,250) [250,450) [450,950).
		{1000, []int{99, 149, 249, 449, 949}, 75, 949, false},
		{150, []int{99}, 75, 99, false},
		// 200: the second window (50) stretches to the end of the slow phase.
		{200, []int{99, 149}, 75, 149, false},
		// 300: windows 25, 50 then the remaining 100 ([150,250)).
		{300, []int{99, 149, 249}, 75, 249, false},
		// Too short for 75+25+50: 15%/75%/10%.
		{100, []int{89}, 15, 89, true},
		{149, []int{134}, 22, 134, true}, // init 22, term 14, window 113
		// Under 20 iterations: no metric adaptation.
		{19, nil, -1, -1, false},
	}
	for _, tt := range tests {
		w, reduced := newWindows(tt.warmup, 75, 50, 25)
		if reduced != tt.reduced {
			t.Errorf("warmup %d: reduced = %v, want %v", tt.warmup, reduced, tt.reduced)
		}
		ends, first, last := windowEnds(w, tt.warmup)
		if !equalInts(ends, tt.ends) || first != tt.first || last != tt.last {
			t.Errorf("warmup %d: window ends %v, estimator range [%d,%d]; want %v, [%d,%d]",
				tt.warmup, ends, first, last, tt.ends, tt.first, tt.last)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDualAveraging(t *testing.T) {
	// Closed forms of the recursions: sBar_t = Σ(δ-α_i)/(t+t0), and
	// x_t = mu - sqrt(t)/gamma·sBar_t; xBar is the weighted average with
	// weights t^-kappa applied recursively.
	rng := rand.New(rand.NewPCG(1, 2))
	a := dualAveraging{delta: 0.8, gamma: 0.05, kappa: 0.75, t0: 10, mu: math.Log(10 * 0.3)}
	sum := 0.0
	xBar := 0.0
	for i := 1; i <= 50; i++ {
		alpha := 1.2 * rng.Float64() // values above 1 are clipped
		eps := a.learn(alpha)
		sum += a.delta - math.Min(alpha, 1)
		sBar := sum / (float64(i) + a.t0)
		x := a.mu - math.Sqrt(float64(i))/a.gamma*sBar
		if got, want := eps, math.Exp(x); math.Abs(got-want) > 1e-12*want {
			t.Fatalf("step %d: step size %g, want %g", i, got, want)
		}
		w := math.Pow(float64(i), -a.kappa)
		xBar = w*x + (1-w)*xBar
	}
	if got, want := a.final(), math.Exp(xBar); math.Abs(got-want) > 1e-12*want {
		t.Errorf("final step size %g, want %g", got, want)
	}
}

func TestMetricEstimator(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const d, n = 3, 40
	draws := make([][]float64, n)
	for i := range draws {
		draws[i] = []float64{rng.NormFloat64(), 2 * rng.NormFloat64(), rng.NormFloat64()}
		draws[i][2] += draws[i][0]
	}
	// Two-pass sample covariance.
	mean := make([]float64, d)
	for _, x := range draws {
		for j, v := range x {
			mean[j] += v / n
		}
	}
	cov := make([]float64, d*d)
	for _, x := range draws {
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				cov[i*d+j] += (x[i] - mean[i]) * (x[j] - mean[j]) / (n - 1)
			}
		}
	}
	w := float64(n) / (n + 5)
	reg := 1e-3 * 5 / (n + 5)
	for _, kind := range []MetricKind{Diag, Dense} {
		e := newMetricEstimator(kind, d)
		for _, x := range draws {
			e.add(x)
		}
		var got []float64
		if kind == Diag {
			got = make([]float64, d)
		} else {
			got = make([]float64, d*d)
		}
		if err := e.update(got); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				var g float64
				if kind == Diag {
					if i != j {
						continue
					}
					g = got[i]
				} else {
					g = got[i*d+j]
				}
				want := w * cov[i*d+j]
				if i == j {
					want += reg
				}
				if math.Abs(g-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("%v: element (%d,%d) = %g, want %g", kind, i, j, g, want)
				}
			}
		}
	}
}

func TestMetricKinetic(t *testing.T) {
	// A = [[2, .5, 0], [.5, 1, .3], [0, .3, 1.5]].
	a := []float64{2, .5, 0, .5, 1, .3, 0, .3, 1.5}
	m, err := newMetric(Dense, 3, a)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{0.3, -1.2, 0.7}
	// dtau/dp against central finite differences of tau.
	g := make([]float64, 3)
	m.dtauDp(p, g)
	for i := range p {
		h := 1e-6
		pp := append([]float64(nil), p...)
		pp[i] += h
		up := m.tau(pp)
		pp[i] -= 2 * h
		down := m.tau(pp)
		if fd := (up - down) / (2 * h); math.Abs(fd-g[i]) > 1e-7 {
			t.Errorf("dtau/dp[%d] = %g, finite difference %g", i, g[i], fd)
		}
	}
	// sampleP has covariance A^{-1}: check E[p·p'] A = I by Monte Carlo.
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 200000
	s := make([]float64, 9)
	for k := 0; k < n; k++ {
		m.sampleP(rng, p)
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				s[i*3+j] += p[i] * p[j] / n
			}
		}
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			v := 0.0
			for k := 0; k < 3; k++ {
				v += s[i*3+k] * a[k*3+j]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(v-want) > 0.02 {
				t.Errorf("(Cov(p)·A)[%d,%d] = %.4f, want %g", i, j, v, want)
			}
		}
	}
	if _, err := newMetric(Dense, 2, []float64{1, 2, 2, 1}); err == nil {
		t.Error("indefinite dense metric accepted")
	}
	if _, err := newMetric(Diag, 2, []float64{1, -1}); err == nil {
		t.Error("negative diagonal metric accepted")
	}
}
