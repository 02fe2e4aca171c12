package ot

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// randProblem returns random points (n×d, m×d) and log-weights; with equal
// masses both weight vectors are normalized to mass 1, otherwise they are
// raw positive weights.
func randProblem(rng *rand.Rand, n, m, d int, equal bool) (x, y, la, lb []float64) {
	x = make([]float64, n*d)
	y = make([]float64, m*d)
	for k := range x {
		x[k] = rng.NormFloat64()
	}
	for k := range y {
		y[k] = 0.7*rng.NormFloat64() + 0.5
	}
	la = make([]float64, n)
	lb = make([]float64, m)
	for i := range la {
		la[i] = math.Log(0.2 + rng.Float64())
	}
	for j := range lb {
		lb[j] = math.Log(0.2 + rng.Float64())
	}
	if equal {
		normalize(la)
		normalize(lb)
	}
	return
}

func normalize(lw []float64) {
	s := math.Log(mass(lw))
	for i := range lw {
		lw[i] -= s
	}
}

// naiveOT is an independent implementation of SINKHORN_OT_VALUE straight
// from the README, with math.Exp, the cost matrix stored, and the
// divided form (g_j − C_ij)/eps; it returns the value with constants.
func naiveOT(x, y, la, lb []float64, d int, o Options) float64 {
	n, m := len(la), len(lb)
	C := make([][]float64, n)
	for i := range C {
		C[i] = make([]float64, m)
		for j := range C[i] {
			for k := 0; k < d; k++ {
				t := x[i*d+k] - y[j*d+k]
				C[i][j] += t * t
			}
		}
	}
	tau := 1.0
	if !o.Balanced {
		tau = o.Rho / (o.Rho + o.Eps)
	}
	f := make([]float64, n)
	g := make([]float64, m)
	lse := func(v []float64) float64 {
		mx := math.Inf(-1)
		for _, t := range v {
			mx = math.Max(mx, t)
		}
		s := 0.0
		for _, t := range v {
			s += math.Exp(t - mx)
		}
		return mx + math.Log(s)
	}
	row := make([]float64, m)
	col := make([]float64, n)
	for t := 0; t < o.Iters; t++ {
		for i := range f {
			for j := range row {
				row[j] = (g[j]-C[i][j])/o.Eps + lb[j]
			}
			f[i] = -tau * o.Eps * lse(row)
		}
		for j := range g {
			for i := range col {
				col[i] = (f[i]-C[i][j])/o.Eps + la[i]
			}
			g[j] = -tau * o.Eps * lse(col)
		}
	}
	var v float64
	if o.Balanced {
		for i := range f {
			v += math.Exp(la[i]) * f[i]
		}
		for j := range g {
			v += math.Exp(lb[j]) * g[j]
		}
		return v
	}
	var P float64
	for i := range f {
		for j := range g {
			P += math.Exp(la[i] + lb[j] + (f[i]+g[j]-C[i][j])/o.Eps)
		}
	}
	ma, mb := mass(la), mass(lb)
	for i := range f {
		v -= o.Rho * math.Exp(la[i]) * math.Expm1(-f[i]/o.Rho)
	}
	for j := range g {
		v -= o.Rho * math.Exp(lb[j]) * math.Expm1(-g[j]/o.Rho)
	}
	return v - o.Eps*(P-ma*mb)
}

func TestOTAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n, m, d int
		o       Options
	}{
		{5, 7, 1, Options{Eps: 0.3, Balanced: true, Iters: 10}},
		{13, 9, 2, Options{Eps: 0.05, Balanced: true, Iters: 40}},
		{13, 9, 2, Options{Eps: 0.2, Rho: 2, Iters: 25}},
		{6, 11, 3, Options{Eps: 1.5, Rho: 0.5, Iters: 3}},
		{40, 33, 4, Options{Eps: 0.5, Rho: 5, Iters: 12}},
	} {
		x, y, la, lb := randProblem(rng, tc.n, tc.m, tc.d, tc.o.Balanced)
		w := NewWorkspace(tc.n, tc.m, tc.d)
		got, err := w.OT(x, y, la, lb, tc.o, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveOT(x, y, la, lb, tc.d, tc.o)
		if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("%+v: OT = %.17g, naive %.17g", tc, got, want)
		}
	}
}

func TestSelfDivergenceIsZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, o := range []Options{
		{Eps: 0.1, Balanced: true, Iters: 7},
		{Eps: 0.01, Balanced: true, Iters: 50},
		{Eps: 0.3, Rho: 1, Iters: 20},
		{Eps: 2, Rho: 1e5, Iters: 3},
	} {
		for _, workers := range []int{1, 2} {
			x, _, la, _ := randProblem(rng, 30, 30, 2, true)
			if !o.Balanced {
				for i := range la {
					la[i] += 1.3 // mass ≠ 1
				}
			}
			w := NewWorkspaceWorkers(30, 30, 2, workers)
			w.SetParallelThreshold(1)
			res, err := w.Divergence(x, x, la, la, o, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Divergence != 0 {
				t.Errorf("%+v workers %d: S(mu, mu) = %g, want exactly 0", o, workers, res.Divergence)
			}
			w.Close()
		}
	}
}

func TestSymmetryAtConvergence(t *testing.T) {
	// At finite T the updates treat the sides asymmetrically; once converged
	// S(a, b) = S(b, a).
	rng := rand.New(rand.NewPCG(5, 6))
	for _, o := range []Options{
		{Eps: 0.5, Balanced: true, Iters: 400},
		{Eps: 0.5, Rho: 2, Iters: 400},
	} {
		x, y, la, lb := randProblem(rng, 12, 9, 2, o.Balanced)
		w := NewWorkspace(12, 9, 2)
		ab, err := w.Divergence(x, y, la, lb, o, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ba, err := w.Divergence(y, x, lb, la, o, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ab.Divergence-ba.Divergence) > 1e-12*math.Abs(ab.Divergence) {
			t.Errorf("%+v: S(a,b) = %.17g, S(b,a) = %.17g", o, ab.Divergence, ba.Divergence)
		}
		if ab.Divergence <= 0 {
			t.Errorf("%+v: S = %g, want > 0 for distinct measures", o, ab.Divergence)
		}
	}
}

func TestUnbalancedTendsToBalanced(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x, y, la, lb := randProblem(rng, 15, 11, 2, true)
	w := NewWorkspace(15, 11, 2)
	bal, err := w.Divergence(x, y, la, lb, Options{Eps: 0.1, Balanced: true, Iters: 30}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev := math.Inf(1)
	for _, rho := range []float64{1e1, 1e3, 1e5, 1e7} {
		unb, err := w.Divergence(x, y, la, lb, Options{Eps: 0.1, Rho: rho, Iters: 30}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		gap := math.Abs(unb.Divergence - bal.Divergence)
		t.Logf("rho %g: |S_unb − S_bal| = %.3g", rho, gap)
		if !(gap < prev) {
			t.Errorf("rho %g: gap %g did not decrease (previous %g)", rho, gap, prev)
		}
		prev = gap
	}
	if prev > 1e-6*math.Abs(bal.Divergence) {
		t.Errorf("at rho = 1e7 the gap %g is not O(1/rho)", prev)
	}
}

// divFunc evaluates S at perturbed inputs for finite differences.
type divFunc func(x, y, la, lb []float64) float64

// checkFD compares the directional derivative of fn along a random direction
// (separately per input array) with the analytic gradient.
func checkFD(t *testing.T, name string, fn divFunc, x, y, la, lb []float64, gr *Grad, rng *rand.Rand, balanced bool) {
	t.Helper()
	inputs := []struct {
		name string
		v, g []float64
	}{{"x", x, gr.X}, {"y", y, gr.Y}, {"log_a", la, gr.LogA}, {"log_b", lb, gr.LogB}}
	for k, in := range inputs {
		dir := make([]float64, len(in.v))
		for i := range dir {
			dir[i] = rng.NormFloat64()
		}
		if balanced && k >= 2 {
			// Keep the mass constant to first order: Σ w_i dir_i = 0.
			var s, sw float64
			for i := range dir {
				w := math.Exp(in.v[i])
				s += w * dir[i]
				sw += w * w
			}
			for i := range dir {
				dir[i] -= s * math.Exp(in.v[i]) / sw
			}
		}
		analytic := 0.0
		for i := range dir {
			analytic += in.g[i] * dir[i]
		}
		eval := func(h float64) float64 {
			saved := append([]float64(nil), in.v...)
			for i := range in.v {
				in.v[i] += h * dir[i]
			}
			v := fn(x, y, la, lb)
			copy(in.v, saved)
			return v
		}
		// Richardson-extrapolated central difference.
		h := 1e-4
		d1 := (eval(h) - eval(-h)) / (2 * h)
		d2 := (eval(h/2) - eval(-h/2)) / h
		fd := (4*d2 - d1) / 3
		if math.Abs(fd-analytic) > 1e-7*math.Max(1, math.Abs(analytic)) {
			t.Errorf("%s d/d%s: analytic %.12g, finite differences %.12g", name, in.name, analytic, fd)
		}
	}
}

func TestGradientsFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		n, m, d int
		o       Options
	}{
		{6, 5, 1, Options{Eps: 0.2, Balanced: true, Iters: 15}},
		{8, 7, 2, Options{Eps: 0.1, Balanced: true, Iters: 30}},
		{8, 7, 2, Options{Eps: 0.3, Rho: 1, Iters: 20}},
		{5, 9, 3, Options{Eps: 1, Rho: 0.3, Iters: 4}},
		{20, 17, 2, Options{Eps: 0.05, Rho: 3, Iters: 10}},
	} {
		x, y, la, lb := randProblem(rng, tc.n, tc.m, tc.d, tc.o.Balanced)
		for _, cfg := range kernelConfigs() {
			w := NewWorkspaceWorkers(tc.n, tc.m, tc.d, cfg.workers)
			w.e.simd = cfg.simd
			w.SetParallelThreshold(1)
			gr := &Grad{X: make([]float64, tc.n*tc.d), Y: make([]float64, tc.m*tc.d), LogA: make([]float64, tc.n), LogB: make([]float64, tc.m)}
			if _, err := w.Divergence(x, y, la, lb, tc.o, nil, gr); err != nil {
				t.Fatal(err)
			}
			div := func(x, y, la, lb []float64) float64 {
				r, err := w.Divergence(x, y, la, lb, tc.o, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return r.Divergence
			}
			checkFD(t, "divergence", div, x, y, la, lb, gr, rng, tc.o.Balanced)

			gro := &Grad{X: make([]float64, tc.n*tc.d), Y: make([]float64, tc.m*tc.d), LogA: make([]float64, tc.n), LogB: make([]float64, tc.m)}
			if _, err := w.OT(x, y, la, lb, tc.o, gro); err != nil {
				t.Fatal(err)
			}
			otf := func(x, y, la, lb []float64) float64 {
				v, err := w.OT(x, y, la, lb, tc.o, nil)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			checkFD(t, "ot", otf, x, y, la, lb, gro, rng, tc.o.Balanced)
			w.Close()
		}
	}
}

func TestEnvelopeEqualsUnrolledAtConvergence(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, o := range []Options{
		{Eps: 1, Balanced: true, Iters: 3000},
		{Eps: 0.5, Rho: 2, Iters: 600},
	} {
		x, y, la, lb := randProblem(rng, 10, 8, 2, o.Balanced)
		w := NewWorkspace(10, 8, 2)
		for _, which := range []string{"divergence", "ot"} {
			var g [2]*Grad
			for k, mode := range []GradMode{GradUnrolled, GradEnvelope} {
				o.Grad = mode
				g[k] = &Grad{X: make([]float64, 20), Y: make([]float64, 16)}
				var err error
				if which == "ot" {
					_, err = w.OT(x, y, la, lb, o, g[k])
				} else {
					_, err = w.Divergence(x, y, la, lb, o, nil, g[k])
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := range g[0].X {
				if math.Abs(g[0].X[i]-g[1].X[i]) > 1e-10 {
					t.Errorf("%s %+v: grad x[%d] unrolled %g envelope %g", which, o, i, g[0].X[i], g[1].X[i])
				}
			}
			for i := range g[0].Y {
				if math.Abs(g[0].Y[i]-g[1].Y[i]) > 1e-10 {
					t.Errorf("%s %+v: grad y[%d] unrolled %g envelope %g", which, o, i, g[0].Y[i], g[1].Y[i])
				}
			}
		}
	}
}

func TestBitwiseIndependentOfWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n, m, d := 53, 37, 2
	x, y, la, lb := randProblem(rng, n, m, d, false)
	o := Options{Eps: 0.1, Rho: 1, Iters: 9}
	for _, simd := range []bool{false, haveSIMD} {
		testBitwiseWorkers(t, x, y, la, lb, n, m, d, o, simd)
	}
}

func testBitwiseWorkers(t *testing.T, x, y, la, lb []float64, n, m, d int, o Options, simd bool) {
	var ref *Grad
	var refRes Result
	for _, workers := range []int{1, 2, 3, 5} {
		w := NewWorkspaceWorkers(n, m, d, workers)
		w.e.simd = simd
		w.SetParallelThreshold(1)
		for _, mode := range []GradMode{GradUnrolled, GradEnvelope} {
			o.Grad = mode
			gr := &Grad{X: make([]float64, n*d), Y: make([]float64, m*d), LogA: make([]float64, n), LogB: make([]float64, m)}
			res, err := w.Divergence(x, y, la, lb, o, nil, gr)
			if err != nil {
				t.Fatal(err)
			}
			if mode == GradEnvelope {
				continue
			}
			if ref == nil {
				ref, refRes = gr, res
				continue
			}
			if res != refRes {
				t.Errorf("workers %d: result %+v, with 1 worker %+v", workers, res, refRes)
			}
			for _, pair := range [][2][]float64{{gr.X, ref.X}, {gr.Y, ref.Y}, {gr.LogA, ref.LogA}, {gr.LogB, ref.LogB}} {
				for k := range pair[0] {
					if pair[0][k] != pair[1][k] {
						t.Fatalf("workers %d: gradient differs at %d: %v vs %v", workers, k, pair[0][k], pair[1][k])
					}
				}
			}
		}
		w.Close()
	}
}

func TestNoAllocationsInSteadyState(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	n, m, d := 40, 30, 2
	x, y, la, lb := randProblem(rng, n, m, d, true)
	gr := &Grad{X: make([]float64, n*d), Y: make([]float64, m*d), LogA: make([]float64, n), LogB: make([]float64, m)}
	for _, cfg := range kernelConfigs() {
		w := NewWorkspaceWorkers(n, m, d, cfg.workers)
		w.e.simd = cfg.simd
		w.SetParallelThreshold(1)
		st, err := w.SelfTerm(y, lb, Options{Eps: 0.1, Balanced: true, Iters: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []Options{
			{Eps: 0.1, Balanced: true, Iters: 5},
			{Eps: 0.1, Balanced: true, Iters: 5, Grad: GradEnvelope},
		} {
			run := func() {
				if _, err := w.Divergence(x, y, la, lb, o, nil, gr); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Divergence(x, y, la, lb, o, st, gr); err != nil {
					t.Fatal(err)
				}
				if _, err := w.OT(x, y, la, lb, o, gr); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if a := testing.AllocsPerRun(5, run); a != 0 {
				t.Errorf("%+v, %v: %v allocations per evaluation, want 0", cfg, o.Grad, a)
			}
		}
		w.Close()
	}
}

func TestErrors(t *testing.T) {
	x := []float64{0, 0, 1, 1}
	y := []float64{0, 1, 1, 0, 2, 2}
	la := []float64{math.Log(0.5), math.Log(0.5)}
	lb := []float64{math.Log(1.0 / 3), math.Log(1.0 / 3), math.Log(1.0 / 3)}
	ok := Options{Eps: 0.1, Balanced: true, Iters: 3}
	w := NewWorkspace(2, 3, 2)
	for _, tc := range []struct {
		name       string
		x, y       []float64
		la, lb     []float64
		o          Options
		gr         *Grad
		wantSubstr []string
	}{
		{"eps zero", x, y, la, lb, Options{Eps: 0, Balanced: true, Iters: 3}, nil, []string{"eps"}},
		{"eps negative", x, y, la, lb, Options{Eps: -1, Balanced: true, Iters: 3}, nil, []string{"eps"}},
		{"eps NaN", x, y, la, lb, Options{Eps: math.NaN(), Balanced: true, Iters: 3}, nil, []string{"eps"}},
		{"iters zero", x, y, la, lb, Options{Eps: 0.1, Balanced: true}, nil, []string{"iters"}},
		{"rho zero", x, y, la, lb, Options{Eps: 0.1, Iters: 3}, nil, []string{"rho"}},
		{"rho inf", x, y, la, lb, Options{Eps: 0.1, Rho: math.Inf(1), Iters: 3}, nil, []string{"rho"}},
		{"x length", x[:3], y, la, lb, ok, nil, []string{"measure a", "3 coordinates"}},
		{"y length", x, y[:5], la, lb, ok, nil, []string{"measure b", "5 coordinates"}},
		{"empty", nil, y, nil, lb, ok, nil, []string{"no points"}},
		{"unequal masses", x, y, la, []float64{0, 0, 0}, ok, nil, []string{"equal masses", "mass(a) = 1", "mass(b) = 3"}},
		{"grad length", x, y, la, lb, ok, &Grad{X: make([]float64, 3)}, []string{"gradient slice X", "length 3, want 4"}},
		{"NaN point", []float64{0, math.NaN(), 1, 1}, y, la, lb, ok, nil, []string{"coordinate 2 of point 1 is NaN"}},
		{"NaN log-weight", x, y, []float64{0, math.NaN()}, lb, ok, nil, []string{"log-weight 2 is NaN"}},
		{"+Inf log-weight", x, y, la, []float64{0, math.Inf(1), 0}, ok, nil, []string{"log-weight 2 is +Inf"}},
		{"no weight", x, y, []float64{math.Inf(-1), math.Inf(-1)}, lb, Options{Eps: 0.1, Rho: 1, Iters: 3}, nil, []string{"no positive weight"}},
	} {
		_, err := w.Divergence(tc.x, tc.y, tc.la, tc.lb, tc.o, nil, tc.gr)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, s := range tc.wantSubstr {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, s)
			}
		}
		if _, err2 := w.OT(tc.x, tc.y, tc.la, tc.lb, tc.o, tc.gr); err2 == nil {
			t.Errorf("%s: OT gave no error", tc.name)
		}
		if tc.gr == nil {
			if _, err2 := w.Plan(tc.x, tc.y, tc.la, tc.lb, tc.o, nil); err2 == nil {
				t.Errorf("%s: Plan gave no error", tc.name)
			}
		}
	}
	st, err := w.SelfTerm(y, lb, ok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Divergence(x, y, la, lb, Options{Eps: 0.2, Balanced: true, Iters: 3}, st, nil); err == nil {
		t.Error("a cached y–y term with another eps was accepted")
	}
}

func TestPlanMarginals(t *testing.T) {
	// Unbalanced: since g was updated last, Σ_i P_ij = b_j exp(−g_j/rho)
	// exactly in exact arithmetic; balanced: the column sums are b.
	rng := rand.New(rand.NewPCG(17, 18))
	for _, o := range []Options{{Eps: 0.2, Balanced: true, Iters: 7}, {Eps: 0.2, Rho: 1.5, Iters: 7}} {
		x, y, la, lb := randProblem(rng, 9, 6, 2, o.Balanced)
		w := NewWorkspace(9, 6, 2)
		P, err := w.Plan(x, y, la, lb, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, g := w.Potentials()
		for j := 0; j < 6; j++ {
			s := 0.0
			for i := 0; i < 9; i++ {
				s += P[i*6+j]
			}
			want := math.Exp(lb[j])
			if !o.Balanced {
				want *= math.Exp(-g[j] / o.Rho)
			}
			if math.Abs(s-want) > 1e-13 {
				t.Errorf("%+v: column %d sums to %.17g, want %.17g", o, j, s, want)
			}
		}
	}
}

func TestZeroWeightsGiveFiniteResults(t *testing.T) {
	// A log-weight of −Inf is a point of weight zero: the result equals the
	// problem without that point, and every gradient entry is finite.
	rng := rand.New(rand.NewPCG(19, 20))
	for _, o := range []Options{{Eps: 0.2, Balanced: true, Iters: 10}, {Eps: 0.2, Rho: 1, Iters: 10}} {
		x, y, la, lb := randProblem(rng, 7, 6, 2, o.Balanced)
		la[6] = math.Inf(-1)
		if o.Balanced {
			normalize(la)
		}
		w := NewWorkspace(7, 6, 2)
		gr := &Grad{X: make([]float64, 14), Y: make([]float64, 12), LogA: make([]float64, 7), LogB: make([]float64, 6)}
		full, err := w.Divergence(x, y, la, lb, o, nil, gr)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range [][]float64{gr.X, gr.Y, gr.LogA, gr.LogB} {
			for k, v := range g {
				if !isFinite(v) {
					t.Fatalf("%+v: gradient entry %d is %v", o, k, v)
				}
			}
		}
		gr6 := &Grad{X: make([]float64, 12), Y: make([]float64, 12), LogA: make([]float64, 6), LogB: make([]float64, 6)}
		red, err := w.Divergence(x[:12], y, la[:6], lb, o, nil, gr6)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(full.Divergence-red.Divergence) > 1e-14*math.Abs(red.Divergence) {
			t.Errorf("%+v: with a zero-weight point S = %.17g, without it %.17g", o, full.Divergence, red.Divergence)
		}
		checkArray(t, "grad_x without the zero-weight point", gr.X[:12], gr6.X, 1e-13)
		checkArray(t, "grad_log_b", gr.LogB, gr6.LogB, 1e-13)
	}
}

// TestSetContext checks that an evaluation stops once its context is done:
// an error wrapping the context's error, no result, on every entry point
// and path, within an iteration; and that the workspace works again after.
func TestSetContext(t *testing.T) {
	x, y, la, lb, opt := sparseBenchProblem(t, 300, 2)
	for _, path := range []Path{PathAuto, PathDense, PathSparse} {
		w := NewWorkspaceWorkers(300, 300, 2, 1)
		w.SetPath(path)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w.SetContext(ctx)
		gr := &Grad{X: make([]float64, len(x))}
		if _, err := w.Divergence(x, y, la, lb, opt, nil, gr); !errors.Is(err, context.Canceled) {
			t.Errorf("%v: Divergence: %v, want context.Canceled", path, err)
		}
		if _, err := w.OT(x, y, la, lb, opt, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("%v: OT: %v", path, err)
		}
		if st, err := w.SelfTerm(y, lb, opt); st != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("%v: SelfTerm: %v, %v", path, st, err)
		}
		if _, err := w.Plan(x, y, la, lb, opt, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("%v: Plan: %v", path, err)
		}
		w.SetContext(context.Background())
		got, err := w.Divergence(x, y, la, lb, opt, nil, gr)
		if err != nil {
			t.Fatal(err)
		}
		ref := NewWorkspaceWorkers(300, 300, 2, 1)
		ref.SetPath(path)
		want, _ := ref.Divergence(x, y, la, lb, opt, nil, &Grad{X: make([]float64, len(x))})
		if got != want {
			t.Errorf("%v: after the interruption %+v, want %+v", path, got, want)
		}
		w.Close()
		ref.Close()
	}
	// A context done during the evaluation (after a tenth of its time): it
	// stops within an iteration, before the whole evaluation's time (a
	// bound ten times loose, for noisy machines).
	w := NewWorkspaceWorkers(300, 300, 2, 1)
	w.SetPath(PathDense)
	start := time.Now()
	if _, err := w.Divergence(x, y, la, lb, opt, nil, &Grad{X: make([]float64, len(x))}); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), whole/10)
	defer cancel()
	w.SetContext(ctx)
	start = time.Now()
	_, err := w.Divergence(x, y, la, lb, opt, nil, &Grad{X: make([]float64, len(x))})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("interrupted evaluation: %v", err)
	}
	if took := time.Since(start); took > whole {
		t.Errorf("stopped after %v; the whole evaluation takes %v", took, whole)
	}
	w.Close()
}

// TestSetContextMidSweep: a context done during one long dense sweep
// (4 000 × 4 000 points, one iteration: an evaluation is a few sweeps)
// stops the sweep itself, well before its end, and the evaluation ends
// with the interruption, not a value of a partial sweep. Bounds are
// relative to the same evaluation uninterrupted, for noisy machines.
func TestSetContextMidSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("dense sweeps of 16 million terms")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 4000
	x, y := gaussPts(rng, n, 2, 0, 1), gaussPts(rng, n, 2, 0.5, 1)
	la, lb := uniformLogW(n), uniformLogW(n)
	opt := Options{Eps: 0.05, Balanced: true, Iters: 1}
	for _, workers := range []int{1, 2} {
		w := NewWorkspaceWorkers(n, n, 2, workers)
		w.SetPath(PathDense)
		start := time.Now()
		if _, err := w.Divergence(x, y, la, lb, opt, nil, nil); err != nil {
			t.Fatal(err)
		}
		whole := time.Since(start)
		// A fraction of the first sweep (the x–y forward sweep, one of at
		// least six). The machine may be busy with other work: the check
		// passes when one of a few tries stops in time (noise only ever
		// delays a stop).
		var took time.Duration
		for try := 0; try < 5; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), whole/30)
			w.SetContext(ctx)
			start = time.Now()
			_, err := w.Divergence(x, y, la, lb, opt, nil, nil)
			took = time.Since(start)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%d workers: interrupted evaluation: %v", workers, err)
			}
			if took <= whole/6 {
				break
			}
		}
		t.Logf("%d workers: stopped after %v of %v", workers, took, whole)
		if took > whole/6 {
			t.Errorf("%d workers: stopped after %v; the whole evaluation (about six sweeps) takes %v", workers, took, whole)
		}
		w.SetContext(context.Background())
		w.Close()
	}
}

// TestScaleErrors checks that inputs the computation cannot evaluate
// accurately are errors naming the cause, not NaN or a quantized value:
// coordinates whose squared distances overflow, an eps so small that C/eps
// overflows, an eps so large that the value would keep fewer than 8
// digits (eps = 1e12 on points spread over a few units, 1e300); and that
// identical points accept any eps.
func TestScaleErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x, y := gaussPts(rng, 20, 2, 0, 1), gaussPts(rng, 30, 2, 0.5, 1)
	la, lb := uniformLogW(20), uniformLogW(30)
	far := append([]float64(nil), x...)
	far[0] = 1e200
	opt := func(eps float64) Options { return Options{Eps: eps, Balanced: true, Iters: 10} }
	for _, c := range []struct {
		name string
		x    []float64
		eps  float64
		want string
	}{
		{"coordinates of 1e200", far, 0.1, "squared distances overflow"},
		{"eps of 1e-310", x, 1e-310, "C/eps overflows"},
		{"eps of 1e12", x, 1e12, "more than 2^26 times the largest squared distance"},
		{"eps of 1e300", x, 1e300, "more than 2^26 times"},
	} {
		w := NewWorkspaceWorkers(20, 30, 2, 1)
		_, err := w.Divergence(c.x, y, la, lb, opt(c.eps), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Divergence: %v, want %q", c.name, err, c.want)
		}
		if _, err := w.OT(c.x, y, la, lb, opt(c.eps), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: OT: %v", c.name, err)
		}
		if _, err := w.SelfTerm(c.x, la, opt(c.eps)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: SelfTerm: %v", c.name, err)
		}
		w.Close()
	}
	// The largest accepted eps still gives a value that moves with the
	// points; identical points take any eps (their divergence is 0).
	w := NewWorkspaceWorkers(20, 30, 2, 1)
	if _, err := w.Divergence(x, y, la, lb, opt(1e3), nil, nil); err != nil {
		t.Errorf("eps 1e3: %v", err)
	}
	same := make([]float64, 40)
	if r, err := w.Divergence(same, same[:40], la, la, opt(1e300), nil, nil); err != nil || r.Divergence != 0 {
		t.Errorf("identical points: %v, %v", r.Divergence, err)
	}
	if _, err := w.GridDivergence(Grid{H: 16, W: 16}, uniformLogW(256), uniformLogW(256), opt(1e12), nil, nil); err == nil || !strings.Contains(err.Error(), "more than 2^26 times") {
		t.Errorf("grid, eps 1e12: %v", err)
	}
	w.Close()
}
