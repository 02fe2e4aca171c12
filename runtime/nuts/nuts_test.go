package nuts_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
)

// long reports whether the long runs were asked for (SHM_LONG=1).
func long() bool { return os.Getenv("SHM_LONG") == "1" }

// gaussian is a zero-mean normal with precision matrix prec (row-major) or,
// when prec is nil, independent coordinates with the given scales.
type gaussian struct {
	d      int
	scales []float64
	prec   []float64
}

func (g *gaussian) Dim() int { return g.d }

func (g *gaussian) LogDensityGrad(x, grad []float64) (float64, error) {
	lp := 0.0
	if g.prec == nil {
		for i, v := range x {
			s := 1.0
			if g.scales != nil {
				s = g.scales[i]
			}
			z := v / (s * s)
			grad[i] = -z
			lp -= 0.5 * v * z
		}
		return lp, nil
	}
	for i := 0; i < g.d; i++ {
		s := 0.0
		for j := 0; j < g.d; j++ {
			s += g.prec[i*g.d+j] * x[j]
		}
		grad[i] = -s
		lp -= 0.5 * x[i] * s
	}
	return lp, nil
}

// funnel is Neal's funnel, centered: v ~ N(0, 3), x_i ~ N(0, exp(v/2)).
type funnel struct{ d int }

func (f funnel) Dim() int { return f.d }

func (f funnel) LogDensityGrad(x, grad []float64) (float64, error) {
	v := x[0]
	lp := -v * v / 18
	grad[0] = -v / 9
	ev := math.Exp(-v)
	n := float64(f.d - 1)
	ss := 0.0
	for i := 1; i < f.d; i++ {
		ss += x[i] * x[i]
		grad[i] = -x[i] * ev
	}
	lp += -0.5*ss*ev - 0.5*n*v
	grad[0] += 0.5*ss*ev - 0.5*n
	return lp, nil
}

// runChains runs chains 1..n and returns draws[k][c][i] for coordinate k.
func runChains(t *testing.T, target nuts.Target, cfg nuts.Config, seed uint64, n int) ([][][]float64, []*nuts.Result) {
	t.Helper()
	d := target.Dim()
	draws := make([][][]float64, d)
	for k := range draws {
		draws[k] = make([][]float64, n)
	}
	var results []*nuts.Result
	for c := 0; c < n; c++ {
		res, err := nuts.Sample(context.Background(), target, cfg, seed, c+1)
		if err != nil {
			t.Fatal(err)
		}
		for _, dr := range res.Draws {
			for k, v := range dr.Theta {
				draws[k][c] = append(draws[k][c], v)
			}
		}
		results = append(results, res)
	}
	return draws, results
}

// checkMoments checks every coordinate's mean and standard deviation
// against the true values within z Monte Carlo standard errors.
func checkMoments(t *testing.T, draws [][][]float64, means, sds []float64, z float64) {
	t.Helper()
	for k, ch := range draws {
		var all []float64
		for _, c := range ch {
			all = append(all, c...)
		}
		m, sd := meanSD(all)
		mcse := diag.MCSEMean(ch)
		if math.Abs(m-means[k]) > z*mcse {
			t.Errorf("coordinate %d: mean %.4g, want %.4g ± %d·%.3g (MCSE)", k, m, means[k], int(z), mcse)
		}
		mcseSD := diag.MCSESD(ch)
		if math.Abs(sd-sds[k]) > z*mcseSD {
			t.Errorf("coordinate %d: sd %.4g, want %.4g ± %d·%.3g (MCSE)", k, sd, sds[k], int(z), mcseSD)
		}
		if r := diag.Rhat(ch); r > 1.05 {
			t.Errorf("coordinate %d: R-hat %.3f", k, r)
		}
	}
}

func meanSD(x []float64) (float64, float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, math.Sqrt(s / float64(len(x)-1))
}

func TestIIDNormal100(t *testing.T) {
	const d = 100
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 300, 500
	chains := 2
	if long() {
		cfg.NumWarmup, cfg.NumSamples, chains = 1000, 1000, 4
	}
	draws, res := runChains(t, &gaussian{d: d}, cfg, 20261125, chains)
	means := make([]float64, d)
	sds := make([]float64, d)
	for i := range sds {
		sds[i] = 1
	}
	// 4.5 standard errors over 200 checks: a false alarm has probability
	// about 1e-3 for a correct sampler.
	checkMoments(t, draws, means, sds, 4.5)
	for _, r := range res {
		for _, dr := range r.Draws {
			if dr.Divergent {
				t.Fatal("divergent transition on an iid normal")
			}
		}
		if r.Adaptation.StepSize < 0.1 || r.Adaptation.StepSize > 1.5 {
			t.Errorf("adapted step size %g is implausible for a 100-D standard normal", r.Adaptation.StepSize)
		}
	}
}

func TestCorrelatedDense(t *testing.T) {
	// Covariance [[1, rho], [rho, 1]] with rho = 0.99.
	const rho = 0.99
	det := 1 - rho*rho
	target := &gaussian{d: 2, prec: []float64{1 / det, -rho / det, -rho / det, 1 / det}}
	cfg := nuts.DefaultConfig()
	cfg.Metric = nuts.Dense
	cfg.NumWarmup, cfg.NumSamples = 500, 1000
	chains := 2
	if long() {
		cfg.NumWarmup, cfg.NumSamples, chains = 1000, 1000, 4
	}
	draws, res := runChains(t, target, cfg, 7, chains)
	checkMoments(t, draws, []float64{0, 0}, []float64{1, 1}, 4)
	// Sample correlation.
	var x, y []float64
	for c := range draws[0] {
		x = append(x, draws[0][c]...)
		y = append(y, draws[1][c]...)
	}
	mx, sx := meanSD(x)
	my, sy := meanSD(y)
	cov := 0.0
	for i := range x {
		cov += (x[i] - mx) * (y[i] - my)
	}
	cov /= float64(len(x) - 1)
	if r := cov / (sx * sy); math.Abs(r-rho) > 0.005 {
		t.Errorf("sample correlation %.4f, want %.2f", r, rho)
	}
	// The adapted inverse metric approximates the covariance.
	want := []float64{1, rho, rho, 1}
	for _, r := range res {
		a := r.Adaptation
		if a.Metric != nuts.Dense || len(a.InvMetric) != 4 {
			t.Fatalf("adaptation %+v is not a 2x2 dense metric", a)
		}
		for i, v := range a.InvMetric {
			if math.Abs(v-want[i]) > 0.25 {
				t.Errorf("inverse metric %v, want about %v", a.InvMetric, want)
				break
			}
		}
		// Under a metric matched to the covariance, the trajectories are short.
		depth := 0.0
		for _, dr := range r.Draws {
			depth += float64(dr.TreeDepth)
		}
		if depth /= float64(len(r.Draws)); depth > 3.5 {
			t.Errorf("mean tree depth %.2f under the adapted dense metric", depth)
		}
	}
}

func TestScalesDiag(t *testing.T) {
	// Scales 0.01 ... 100, log-spaced.
	const d = 10
	scales := make([]float64, d)
	for i := range scales {
		scales[i] = math.Pow(10, -2+4*float64(i)/(d-1))
	}
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 500, 1000
	chains := 2
	if long() {
		cfg.NumWarmup, cfg.NumSamples, chains = 1000, 1000, 4
	}
	draws, res := runChains(t, &gaussian{d: d, scales: scales}, cfg, 11, chains)
	checkMoments(t, draws, make([]float64, d), scales, 4)
	for _, r := range res {
		for i, v := range r.Adaptation.InvMetric {
			if ratio := v / (scales[i] * scales[i]); ratio < 0.5 || ratio > 2 {
				t.Errorf("inverse metric element %d is %.3g, variance %.3g", i, v, scales[i]*scales[i])
			}
		}
	}
}

func TestFunnelDivergences(t *testing.T) {
	cfg := nuts.DefaultConfig()
	_, res := runChains(t, funnel{d: 10}, cfg, 3, 4)
	n := 0
	for _, r := range res {
		for _, dr := range r.Draws {
			if dr.Divergent {
				n++
				if dr.AcceptStat > 1 || dr.AcceptStat < 0 {
					t.Errorf("accept_stat %g out of [0,1]", dr.AcceptStat)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no divergences on the centered funnel")
	}
	t.Logf("funnel: %d divergent transitions of %d", n, 4*cfg.NumSamples)
}

// logGamma is the density of y = log(x) for x ~ Gamma(3, 1): skewed, with
// E[y] = digamma(3) and Var[y] = trigamma(3).
type logGamma struct{}

func (logGamma) Dim() int { return 1 }

func (logGamma) LogDensityGrad(y, grad []float64) (float64, error) {
	e := math.Exp(y[0])
	grad[0] = 3 - e
	return 3*y[0] - e, nil
}

func TestLogGamma(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumSamples = 2000
	if long() {
		cfg.NumSamples = 20000
	}
	draws, _ := runChains(t, logGamma{}, cfg, 99, 4)
	const eulerGamma = 0.5772156649015329
	mean := 1.5 - eulerGamma
	sd := math.Sqrt(math.Pi*math.Pi/6 - 1 - 0.25)
	checkMoments(t, draws, []float64{mean}, []float64{sd}, 4)
	// The 5% and 95% quantiles of log Gamma(3,1): log of 0.81769, 6.29579 (qgamma).
	for _, q := range []struct{ p, want float64 }{{0.05, math.Log(0.8176914)}, {0.95, math.Log(6.2957936)}} {
		got := diag.Quantile(append(append(append(append([]float64(nil), draws[0][0]...), draws[0][1]...), draws[0][2]...), draws[0][3]...), q.p)
		if se := diag.MCSEQuantile(draws[0], q.p); math.Abs(got-q.want) > 4*se {
			t.Errorf("%g quantile %.4f, want %.4f ± 4·%.3g", q.p, got, q.want, se)
		}
	}
}

func TestReproducible(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 150, 50
	target := &gaussian{d: 3, scales: []float64{1, 2, 3}}
	a, err := nuts.Sample(context.Background(), target, cfg, 42, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nuts.Sample(context.Background(), target, cfg, 42, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := nuts.Sample(context.Background(), target, cfg, 42, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Draws) != fmt.Sprint(b.Draws) || fmt.Sprint(a.Adaptation) != fmt.Sprint(b.Adaptation) {
		t.Error("same seed and chain gave different output")
	}
	if fmt.Sprint(a.Draws) == fmt.Sprint(c.Draws) {
		t.Error("chains 1 and 2 gave identical output")
	}
}

func TestSamplerColumns(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples, cfg.Thin, cfg.SaveWarmup = 100, 100, 3, true
	target := &gaussian{d: 2}
	var progress []nuts.Progress
	cfg.Progress = func(p nuts.Progress) { progress = append(progress, p) }
	res, err := nuts.Sample(context.Background(), target, cfg, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Iterations 0, 3, ..., 99 of each phase: 34 + 34.
	if len(res.Draws) != 68 {
		t.Fatalf("%d draws, want 68", len(res.Draws))
	}
	if len(progress) != 200 || progress[199].Iteration != 200 || progress[199].Total != 200 || !progress[99].Warmup || progress[100].Warmup {
		t.Errorf("progress calls: %d, last %+v", len(progress), progress[len(progress)-1])
	}
	g := make([]float64, 2)
	for i, dr := range res.Draws {
		if dr.Warmup != (i < 34) {
			t.Fatalf("draw %d: warmup flag %v", i, dr.Warmup)
		}
		lp, _ := target.LogDensityGrad(dr.Theta, g)
		if math.Abs(lp-dr.LP) > 1e-12 {
			t.Errorf("draw %d: lp__ %g, log density at theta %g", i, dr.LP, lp)
		}
		if dr.NLeapfrog < 1 || dr.NLeapfrog > 1<<cfg.MaxDepth || dr.TreeDepth < 0 || dr.TreeDepth > cfg.MaxDepth {
			t.Errorf("draw %d: n_leapfrog %d, treedepth %d", i, dr.NLeapfrog, dr.TreeDepth)
		}
		// A valid tree of depth j has 2^j - 1 leapfrog steps, plus at most
		// 2^j from a rejected last subtree.
		if lo, hi := 1<<dr.TreeDepth-1, 1<<(dr.TreeDepth+1)-1; dr.NLeapfrog < lo || dr.NLeapfrog > hi {
			t.Errorf("draw %d: %d leapfrog steps at tree depth %d", i, dr.NLeapfrog, dr.TreeDepth)
		}
		if dr.AcceptStat < 0 || dr.AcceptStat > 1 {
			t.Errorf("draw %d: accept_stat %g", i, dr.AcceptStat)
		}
		kin := dr.Energy + dr.LP // energy = -lp + p'Ap/2 >= -lp
		if kin < 0 {
			t.Errorf("draw %d: energy %g below -lp__ %g", i, dr.Energy, -dr.LP)
		}
		if !dr.Warmup && dr.StepSize != res.Adaptation.StepSize {
			t.Errorf("draw %d: step size %g, adapted %g", i, dr.StepSize, res.Adaptation.StepSize)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := nuts.DefaultConfig()
	n := 0
	cfg.Progress = func(p nuts.Progress) {
		if n++; n == 10 {
			cancel()
		}
	}
	_, err := nuts.Sample(ctx, &gaussian{d: 2}, cfg, 1, 1)
	if !errors.Is(err, context.Canceled) || n != 10 {
		t.Errorf("error %v after %d iterations, want context.Canceled after 10", err, n)
	}
}

// halfLine is a standard normal restricted to x > 0 in every coordinate
// (and the density is -Inf elsewhere), so that random inits often fail.
type halfLine struct{ d int }

func (h halfLine) Dim() int { return h.d }

func (h halfLine) LogDensityGrad(x, grad []float64) (float64, error) {
	lp := 0.0
	for i, v := range x {
		if v <= 0 {
			return math.Inf(-1), nil
		}
		lp -= 0.5 * v * v
		grad[i] = -v
	}
	return lp, nil
}

type failing struct{}

func (failing) Dim() int { return 1 }
func (failing) LogDensityGrad(x, grad []float64) (float64, error) {
	return 0, errors.New("cannot evaluate")
}

func TestInitialization(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 50, 50
	// Each try succeeds with probability 1/8: 100 tries nearly always do.
	res, err := nuts.Sample(context.Background(), halfLine{3}, cfg, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, dr := range res.Draws {
		for _, v := range dr.Theta {
			if v <= 0 {
				t.Fatalf("draw %v outside the support", dr.Theta)
			}
		}
	}
	if _, err := nuts.Sample(context.Background(), failing{}, cfg, 5, 1); err == nil {
		t.Error("no error when no initial point can be evaluated")
	}
	cfg.Init = []float64{-1, 1, 1}
	if _, err := nuts.Sample(context.Background(), halfLine{3}, cfg, 5, 1); err == nil {
		t.Error("no error for a user initial point outside the support")
	}
	cfg.Init = []float64{0.5, 1, 1}
	if _, err := nuts.Sample(context.Background(), halfLine{3}, cfg, 5, 1); err != nil {
		t.Error(err)
	}
	cfg.Init = []float64{1}
	if _, err := nuts.Sample(context.Background(), halfLine{3}, cfg, 5, 1); err == nil {
		t.Error("no error for an initial point of the wrong length")
	}
}

type empty struct{}

func (empty) Dim() int                                       { return 0 }
func (empty) LogDensityGrad(x, g []float64) (float64, error) { return 0, nil }

func TestFixedParam(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumSamples = 20
	res, err := nuts.Sample(context.Background(), empty{}, cfg, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Draws) != 20 {
		t.Fatalf("%d draws, want 20", len(res.Draws))
	}
	for _, dr := range res.Draws {
		if dr.LP != 0 || dr.AcceptStat != 0 || len(dr.Theta) != 0 {
			t.Fatalf("fixed_param draw %+v", dr)
		}
	}
}

// TestLargeStepSize runs without adaptation at step sizes where the energy
// error is large, so that the multinomial weights and the divergence-free
// rejection of subtrees decide the result, and checks the variance and the
// fourth moment of a 1-D standard normal and of a stretched 2-D normal.
func TestLargeStepSize(t *testing.T) {
	for _, tt := range []struct {
		eps    float64
		scales []float64
	}{
		{1.3, []float64{1}},
		{1.9, []float64{1}},
		{0.9, []float64{1, 0.5}},
	} {
		cfg := nuts.DefaultConfig()
		cfg.NoAdapt, cfg.StepSize = true, tt.eps
		cfg.NumWarmup, cfg.NumSamples = 100, 25000
		if long() {
			cfg.NumSamples = 400000
		}
		target := &gaussian{d: len(tt.scales), scales: tt.scales}
		draws, res := runChains(t, target, cfg, 17, 2)
		if got := res[0].Adaptation.StepSize; got != tt.eps || res[0].Draws[0].StepSize != tt.eps {
			t.Errorf("step size %g without adaptation, want %g", got, tt.eps)
		}
		for k, s := range tt.scales {
			// Second and fourth standardized moments: E[z²] = 1, E[z⁴] = 3.
			sq := make([][]float64, len(draws[k]))
			q4 := make([][]float64, len(draws[k]))
			for c, ch := range draws[k] {
				for _, v := range ch {
					z := v / s
					sq[c] = append(sq[c], z*z)
					q4[c] = append(q4[c], z*z*z*z)
				}
			}
			for _, m := range []struct {
				name string
				x    [][]float64
				want float64
			}{{"E[z²]", sq, 1}, {"E[z⁴]", q4, 3}} {
				var all []float64
				for _, c := range m.x {
					all = append(all, c...)
				}
				mean, _ := meanSD(all)
				se := diag.MCSEMean(m.x)
				if math.Abs(mean-m.want) > 4*se {
					t.Errorf("eps %g, coordinate %d: %s = %.4f, want %g ± 4·%.4f", tt.eps, k, m.name, mean, m.want, se)
				}
			}
		}
	}
}

// rejection is an error that rejects the point (see nuts.Target).
type rejection struct{ msg string }

func (e rejection) Error() string { return e.msg }
func (rejection) Reject() bool    { return true }

// errorOutside is a standard normal on x > 0 whose density fails with a
// rejection (instead of -Inf) outside.
type errorOutside struct{}

func (errorOutside) Dim() int { return 1 }

func (errorOutside) LogDensityGrad(x, grad []float64) (float64, error) {
	if x[0] <= 0 {
		return 0, rejection{"x must be positive"}
	}
	grad[0] = -x[0]
	return -0.5 * x[0] * x[0], nil
}

func TestRejectionIsDivergence(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 200, 2000
	cfg.Init = []float64{1}
	res, err := nuts.Sample(context.Background(), errorOutside{}, cfg, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	div := 0
	var x []float64
	for _, d := range res.Draws {
		if d.Theta[0] <= 0 {
			t.Fatalf("draw %g outside the support", d.Theta[0])
		}
		if d.Divergent {
			div++
		}
		x = append(x, d.Theta[0])
	}
	if div == 0 {
		t.Error("no divergent transitions although trajectories cross x = 0")
	}
	// The half-normal has mean sqrt(2/pi).
	m, _ := meanSD(x)
	if se := diag.MCSEMean([][]float64{x}); math.Abs(m-math.Sqrt(2/math.Pi)) > 4*se {
		t.Errorf("mean %.4f, want %.4f ± 4·%.4f", m, math.Sqrt(2/math.Pi), se)
	}
}

// bugBeyond is a standard normal whose density fails with an error that is
// not a rejection (a bug in the model) beyond x = 2.5, a point reached only
// inside some trajectories.
type bugBeyond struct{ err error }

func (bugBeyond) Dim() int { return 1 }

func (b bugBeyond) LogDensityGrad(x, grad []float64) (float64, error) {
	if x[0] > 2.5 {
		return 0, b.err
	}
	grad[0] = -x[0]
	return -0.5 * x[0] * x[0], nil
}

// TestFatalErrorStopsChain checks that an error that is not a rejection,
// met mid-trajectory, stops the chain with the error instead of being
// counted as a divergence.
func TestFatalErrorStopsChain(t *testing.T) {
	bug := errors.New("t.shm:3:5: index 4 out of range: the size is 3")
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 200, 2000
	cfg.Init = []float64{0.5}
	_, err := nuts.Sample(context.Background(), bugBeyond{bug}, cfg, 8, 1)
	if !errors.Is(err, bug) {
		t.Fatalf("Sample: %v, want the model's error", err)
	}
	if !strings.Contains(err.Error(), "iteration") {
		t.Errorf("error %q does not say at which iteration", err)
	}
	// At a random initial point, the same error stops the chain at once.
	cfg.Init = nil
	cfg.InitRadius = 10
	if _, err := nuts.Sample(context.Background(), bugBeyond{bug}, cfg, 8, 1); !errors.Is(err, bug) {
		t.Fatalf("Sample from random initial points: %v, want the model's error", err)
	}
}

func TestShortWarmup(t *testing.T) {
	target := &gaussian{d: 2, scales: []float64{0.1, 10}}
	cfg := nuts.DefaultConfig()
	cfg.NumSamples = 10
	// 100 iterations: windows reduced to 15/75/10, the metric adapted once.
	cfg.NumWarmup = 100
	res, err := nuts.Sample(context.Background(), target, cfg, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Adaptation
	if !a.ReducedWindows || a.InvMetric[0] > 0.1 || a.InvMetric[1] < 10 {
		t.Errorf("warmup 100: reduced %v, inverse metric %v (variances 0.01, 100)", a.ReducedWindows, a.InvMetric)
	}
	// Under 20 iterations: the metric stays the identity.
	cfg.NumWarmup = 19
	res, err = nuts.Sample(context.Background(), target, cfg, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Adaptation; a.ReducedWindows || a.InvMetric[0] != 1 || a.InvMetric[1] != 1 {
		t.Errorf("warmup 19: reduced %v, inverse metric %v, want the identity", a.ReducedWindows, a.InvMetric)
	}
}

func TestDenseUserMetric(t *testing.T) {
	// With the exact covariance as the inverse metric and no adaptation, a
	// strongly correlated Gaussian is as easy as an iid one.
	const rho = 0.999
	det := 1 - rho*rho
	target := &gaussian{d: 2, prec: []float64{1 / det, -rho / det, -rho / det, 1 / det}}
	cfg := nuts.DefaultConfig()
	cfg.Metric, cfg.InvMetric = nuts.Dense, []float64{1, rho, rho, 1}
	cfg.NoAdapt, cfg.StepSize = true, 0.9
	cfg.NumWarmup, cfg.NumSamples = 50, 2000
	draws, res := runChains(t, target, cfg, 4, 2)
	checkMoments(t, draws, []float64{0, 0}, []float64{1, 1}, 4)
	for _, dr := range res[0].Draws {
		if dr.TreeDepth > 3 {
			t.Fatalf("tree depth %d under the exact metric", dr.TreeDepth)
		}
	}
	cfg.InvMetric = []float64{1, 2, 2, 1}
	if _, err := nuts.NewChain(target, cfg, 1, 1); err == nil {
		t.Error("indefinite inverse metric accepted")
	}
}

// flat is an improper density: constant in x.
type flat struct{}

func (flat) Dim() int { return 1 }
func (flat) LogDensityGrad(_, grad []float64) (float64, error) {
	grad[0] = 0
	return 0, nil
}

// TestLargeScalesAndImproper checks that a proper posterior at scale 1e8
// samples (the step size heuristic grows the step to that scale) and that
// a flat density is reported as improper.
func TestLargeScalesAndImproper(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 300, 1000
	cfg.Init = []float64{1e7}
	res, err := nuts.Sample(context.Background(), &gaussian{d: 1, scales: []float64{1e8}}, cfg, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	var x []float64
	for _, d := range res.Draws {
		x = append(x, d.Theta[0])
	}
	if _, sd := meanSD(x); sd < 0.8e8 || sd > 1.2e8 {
		t.Errorf("sd %g, want about 1e8", sd)
	}
	cfg.Init = []float64{0}
	if _, err := nuts.Sample(context.Background(), flat{}, cfg, 4, 1); err == nil || !strings.Contains(err.Error(), "improper") {
		t.Errorf("flat density: %v, want the improper posterior's error", err)
	}
}

// nanBeyond has a NaN log density beyond 2.5 and a domain error below
// -2.5, and names its NaN term.
type nanBeyond struct{}

func (nanBeyond) Dim() int { return 1 }

func (nanBeyond) LogDensityGrad(x, grad []float64) (float64, error) {
	switch {
	case x[0] > 2.5:
		return math.NaN(), nil
	case x[0] < -2.5:
		return 0, rejection{"t.shm:4:3: normal_lpdf: scale is -1"}
	}
	grad[0] = -x[0]
	return -0.5 * x[0] * x[0], nil
}

func (nanBeyond) NonFiniteTerm() error {
	return errors.New("t.shm:5:3: this term of the log density is NaN")
}

// TestRejectedMessages checks that rejected points mid-trajectory are
// reported through Config.Rejected with their reason (the NaN term, the
// domain error), as Stan's informational messages.
func TestRejectedMessages(t *testing.T) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 100, 300
	cfg.Init = []float64{0.5}
	var nan, domain int
	cfg.Rejected = func(chain int, reason error) {
		if chain != 3 {
			t.Errorf("chain %d", chain)
		}
		switch msg := reason.Error(); {
		case strings.Contains(msg, "the log density is NaN: t.shm:5:3: this term of the log density is NaN"):
			nan++
		case strings.Contains(msg, "normal_lpdf: scale is -1"):
			domain++
		default:
			t.Errorf("reason %q", msg)
		}
	}
	if _, err := nuts.Sample(context.Background(), nanBeyond{}, cfg, 5, 3); err != nil {
		t.Fatal(err)
	}
	if nan == 0 || domain == 0 {
		t.Errorf("%d NaN and %d domain messages, want both", nan, domain)
	}
}

// TestFixedMetric is a warm start: the metric of an earlier run is kept
// through a short warmup that adapts the step size only, from the earlier
// run's step size and last point, and the draws have the target's moments.
func TestFixedMetric(t *testing.T) {
	const d = 4
	scales := []float64{0.1, 1, 3, 30}
	target := &gaussian{d: d, scales: scales}
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 500, 500
	pilot, err := nuts.Sample(context.Background(), target, cfg, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	warm := nuts.DefaultConfig()
	warm.NumWarmup, warm.NumSamples, warm.FixedMetric = 100, 2000, true
	warm.InvMetric = pilot.Adaptation.InvMetric
	// A step size far off: the warmup must adapt it.
	warm.StepSize = pilot.Adaptation.StepSize * 8
	warm.Init = pilot.Draws[len(pilot.Draws)-1].Theta
	draws, res := runChains(t, target, warm, 4, 2)
	checkMoments(t, draws, make([]float64, d), scales, 4)
	for _, r := range res {
		if !slices.Equal(r.Adaptation.InvMetric, pilot.Adaptation.InvMetric) {
			t.Errorf("inverse metric %v, want the pilot's %v", r.Adaptation.InvMetric, pilot.Adaptation.InvMetric)
		}
		if ratio := r.Adaptation.StepSize / pilot.Adaptation.StepSize; ratio < 0.5 || ratio > 2 {
			t.Errorf("step size %.3g after warmup, the pilot's %.3g: not adapted", r.Adaptation.StepSize, pilot.Adaptation.StepSize)
		}
	}
}
