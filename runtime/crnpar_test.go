package runtime

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// crnCase is a model with crn calls and a point at which to evaluate it.
type crnCase struct {
	name   string
	src    string
	data   string // JSON
	theta  []float64
	inline bool // the model's first crn call stays on the chain's tape
}

// crnSinkhornData returns N = 30 draws of normal(2, 0.5) as JSON.
func crnSinkhornData() string {
	rng := rand.New(rand.NewPCG(3, 4))
	ys := make([]string, 30)
	for i := range ys {
		ys[i] = fmt.Sprint(2 + 0.5*rng.NormFloat64())
	}
	return `{"N": 30, "y": [` + strings.Join(ys, ", ") + `]}`
}

var crnCases = []crnCase{
	{
		name: "sinkhorn",
		src: `
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model {
  mu ~ normal(0, 5);
  sigma ~ normal(0, 2);
  target += -N * crn(6, sinkhorn(mu + sigma * std_normal_rng(N), y, eps = 0.3, iters = 20), seed = 11);
}`,
		data:  crnSinkhornData(),
		theta: []float64{1.7, math.Log(0.6)},
	},
	{
		name: "mean-exp",
		src: `
parameters { real a; real b; }
model {
  a ~ normal(0, 1);
  target += -crn(5, mean(exp(a + b * std_normal_rng(10))), seed = 2);
}`,
		theta: []float64{0.3, -0.4},
	},
	{
		// Loop variables, a container assigned element by element
		// (unpacked cells, read whole and by element), an array of
		// vectors, int data, two calls in one expression, and crn values
		// used by ~, so that dropping constants depends on whether they
		// are constant.
		name: "slots",
		src: `
data { int M; array[2] vector[3] A; }
parameters { real a; vector[3] v; }
model {
  vector[3] w;
  array[2] vector[3] B;
  for (i in 1:3) w[i] = a * i;
  B[1] = v;
  B[2] = exp(v);
  for (j in 1:2) {
    target += -crn(4, square(sum(w .* std_normal_rng(3))) + w[2] * M
                      + dot_self(B[j] - A[j] + normal_rng(0, 1)))
              + crn(3, normal_rng(a, 1)^2, seed = j);
  }
  1.5 ~ normal(crn(3, mean(A[1] + std_normal_rng(3))), 1);
  0.5 ~ normal(crn(2, a + normal_rng(0, 1)), 2);
}`,
		data:  `{"M": 2, "A": [[0.1, 0.2, 0.3], [1, -1, 0.5]]}`,
		theta: []float64{0.4, 0.1, -0.2, 0.3},
	},
	{
		// A vector body stays on the chain's tape.
		name: "vector-body",
		src: `
parameters { real a; vector[2] v; }
model {
  target += -dot_self(crn(3, v * normal_rng(a, 1) + std_normal_rng(2)));
}`,
		theta:  []float64{0.2, 0.5, -1},
		inline: true,
	},
}

func bindCase(t testing.TB, c crnCase) *Model {
	t.Helper()
	m, errs := ir.CheckSource("t.shm", c.src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &data.Set{}
	if c.data != "" {
		vals, err := data.ReadJSON("data.json", strings.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if err := set.AddFile(vals); err != nil {
			t.Fatal(err)
		}
	}
	bm, err := Bind(m, set, Options{Impls: Builtins(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// newCRNDensity returns a density with the given number of crn workers;
// inline evaluates crn calls as before replicates had their own tapes.
func newCRNDensity(t testing.TB, bm *Model, workers int, inline bool) *Density {
	t.Helper()
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	d.Workers = workers
	d.ev.crn.forceInline = inline
	return d
}

func gradAt(t testing.TB, d *Density, theta []float64) (float64, []float64) {
	t.Helper()
	grad := make([]float64, len(theta))
	lp, err := d.LogDensityGrad(theta, grad)
	if err != nil {
		t.Fatal(err)
	}
	return lp, grad
}

// TestCRNWorkersBitwise checks that the value and the gradient do not
// depend on the number of workers, bit for bit, that a second evaluation
// on the same density (reusing its replicates) gives the same bits, and
// that LogDensity gives the value of LogDensityGrad.
func TestCRNWorkersBitwise(t *testing.T) {
	for _, c := range crnCases {
		t.Run(c.name, func(t *testing.T) {
			bm := bindCase(t, c)
			lp1, g1 := gradAt(t, newCRNDensity(t, bm, 1, false), c.theta)
			for _, w := range []int{0, 1, 2, 4, 7} {
				d := newCRNDensity(t, bm, w, false)
				for round := range 2 {
					lp, g := gradAt(t, d, c.theta)
					if math.Float64bits(lp) != math.Float64bits(lp1) {
						t.Errorf("workers %d, round %d: log density %.17g, with 1 worker %.17g", w, round, lp, lp1)
					}
					for i := range g {
						if math.Float64bits(g[i]) != math.Float64bits(g1[i]) {
							t.Errorf("workers %d, round %d: grad[%d] = %.17g, with 1 worker %.17g", w, round, i, g[i], g1[i])
						}
					}
				}
				lp, err := d.LogDensity(c.theta)
				if err != nil {
					t.Fatal(err)
				}
				if math.Float64bits(lp) != math.Float64bits(lp1) {
					t.Errorf("workers %d: LogDensity %.17g, LogDensityGrad %.17g", w, lp, lp1)
				}
			}
		})
	}
}

// TestCRNReplicatesMatchInline compares the replicate path with the
// evaluation of every replicate on the chain's tape: the same value bit
// for bit (the same operations on the same numbers, summed in the same
// order) and the same gradient up to rounding (accumulated in another
// order).
func TestCRNReplicatesMatchInline(t *testing.T) {
	for _, c := range crnCases {
		t.Run(c.name, func(t *testing.T) {
			bm := bindCase(t, c)
			lpIn, gIn := gradAt(t, newCRNDensity(t, bm, 1, true), c.theta)
			for _, w := range []int{1, 4} {
				lp, g := gradAt(t, newCRNDensity(t, bm, w, false), c.theta)
				if lp != lpIn {
					t.Errorf("workers %d: log density %.17g, inline %.17g", w, lp, lpIn)
				}
				for i := range g {
					if math.Abs(g[i]-gIn[i]) > 1e-12*math.Max(1, math.Abs(gIn[i])) {
						t.Errorf("workers %d: grad[%d] = %.17g, inline %.17g", w, i, g[i], gIn[i])
					}
				}
			}
		})
	}
}

// TestCRNGradientFiniteDifferences checks the gradient of the replicate
// path against central differences of the log density.
func TestCRNGradientFiniteDifferences(t *testing.T) {
	for _, c := range crnCases {
		t.Run(c.name, func(t *testing.T) {
			bm := bindCase(t, c)
			d := newCRNDensity(t, bm, 3, false)
			_, g := gradAt(t, d, c.theta)
			f := func(th []float64) float64 {
				lp, err := d.LogDensity(th)
				if err != nil {
					t.Fatal(err)
				}
				return lp
			}
			num := make([]float64, len(c.theta))
			autodiff.NumericGradient(f, c.theta, num)
			for i := range g {
				if math.Abs(g[i]-num[i]) > 1e-6*(1+math.Abs(num[i])) {
					t.Errorf("grad[%d] = %.12g, finite differences %.12g", i, g[i], num[i])
				}
			}
		})
	}
}

// TestCRNSites checks which calls take the replicate path: scalar bodies
// do; vector bodies and bodies that read target() stay on the chain's
// tape.
func TestCRNSites(t *testing.T) {
	for _, c := range crnCases {
		bm := bindCase(t, c)
		ev := &evaluator{}
		if got := ev.crnSite(bm.IR.CRNs[0]).inline; got != c.inline {
			t.Errorf("%s: first crn call inline = %v, want %v", c.name, got, c.inline)
		}
	}
	bm := bindCase(t, crnCase{src: `
parameters { real a; }
model {
  a ~ normal(0, 1);
  target += crn(3, normal_rng(a, 1) * target());
}`})
	ev := &evaluator{}
	if site := ev.crnSite(bm.IR.CRNs[0]); !site.inline {
		t.Errorf("a body that reads target() takes the replicate path")
	}
	// It still gives the same result for every number of workers.
	theta := []float64{0.7}
	lp1, g1 := gradAt(t, newCRNDensity(t, bm, 1, false), theta)
	lp4, g4 := gradAt(t, newCRNDensity(t, bm, 4, false), theta)
	if lp1 != lp4 || g1[0] != g4[0] {
		t.Errorf("target() body: %g %g with 1 worker, %g %g with 4", lp1, g1[0], lp4, g4[0])
	}
	// The reads of the slots case's first call, by slot.
	c := crnCases[2]
	bm = bindCase(t, c)
	site := ev.crnSite(bm.IR.CRNs[0])
	var names []string
	for _, s := range site.slots {
		names = append(names, bm.IR.Vars[s].Name)
	}
	slots := map[string]bool{}
	for _, n := range names {
		slots[n] = true
	}
	for _, want := range []string{"w", "M", "B", "A", "j"} {
		if !slots[want] {
			t.Errorf("slots read %v lack %s", names, want)
		}
	}
	if slots["v"] || slots["a"] {
		t.Errorf("slots read %v include v or a, which the body does not read", names)
	}
}

// TestCRNRecordsIndependentOfWorkers checks that the crn noise log
// (Density.CRNNoise) and the replicate values behind Var̂[S̄_K]
// (CRNStats) are the same for every number of workers and for the
// inline evaluation, and that the noise is what the streams produce.
func TestCRNRecordsIndependentOfWorkers(t *testing.T) {
	for _, c := range crnCases {
		t.Run(c.name, func(t *testing.T) {
			bm := bindCase(t, c)
			type records struct {
				noise  [][][]float64
				values [][]float64
			}
			get := func(workers int, inline bool) records {
				d := newCRNDensity(t, bm, workers, inline)
				noise, err := d.CRNNoise(c.theta)
				if err != nil {
					t.Fatal(err)
				}
				d.ev.crn.values = make([][]float64, len(bm.IR.CRNs))
				if _, err := d.LogDensity(c.theta); err != nil {
					t.Fatal(err)
				}
				return records{noise, d.ev.crn.values}
			}
			want := get(1, true)
			for _, w := range []int{1, 4} {
				if got := get(w, false); !reflect.DeepEqual(got, want) {
					t.Errorf("workers %d: records differ from the inline evaluation's:\n%v\n%v", w, got, want)
				}
			}
			if c.name == "mean-exp" {
				// Replicate k's noise is the first ten normal draws of
				// stream k of seed 2.
				if len(want.noise[0]) != 5 {
					t.Fatalf("%d replicates logged, want 5", len(want.noise[0]))
				}
				for k, xs := range want.noise[0] {
					rng := crnStream(2, k)
					for i, x := range xs {
						if z := rng.NormFloat64(); x != z || len(xs) != 10 {
							t.Fatalf("replicate %d draw %d (of %d): %g, stream gives %g", k, i, len(xs), x, z)
						}
					}
				}
			}
			if c.name == "slots" {
				// The loop runs the first two calls twice each.
				if n := len(want.values[0]); n != 8 {
					t.Errorf("first call: %d replicate values, want 8", n)
				}
				if n := len(want.values[1]); n != 6 {
					t.Errorf("second call: %d replicate values, want 6", n)
				}
				if n := len(want.noise[0][3]); n != 2*(3+1) {
					t.Errorf("first call, replicate 3: %d draws logged, want 8", n)
				}
			}
		})
	}
}

// TestCRNErrorsInReplicates checks that an error inside a replicate is
// reported with the message of the inline evaluation: the error of the
// first failing replicate, with its position.
func TestCRNErrorsInReplicates(t *testing.T) {
	cases := []struct {
		name, src, data, want string
	}{
		{
			name: "sinkhorn",
			src: `
data { int N; vector[N] y; real eps; }
parameters { real mu; }
model { target += crn(3, sinkhorn(mu + std_normal_rng(N), y, eps = eps, iters = 5)); }`,
			data: `{"N": 3, "y": [1, 2, 3], "eps": -1}`,
			want: "t.shm:4:26: sinkhorn: eps must be positive",
		},
		{
			// The scale is negative in replicates 2, 3, 4 and 6 of 8
			// (seed 34): the message names replicate 2's value.
			name: "first-failing-replicate",
			src: `
parameters { real mu; }
model { target += crn(8, normal_lpdf(mu | 0, normal_rng(0, 1)), seed = 34); }`,
			want: firstNegativeDraw(34, 8),
		},
		{
			name: "index",
			src: `
data { int i; vector[2] y; }
parameters { real mu; }
model { target += crn(2, y[i] * normal_rng(mu, 1)); }`,
			data: `{"i": 3, "y": [1, 2]}`,
			want: "index 3 out of range",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bm := bindCase(t, crnCase{src: c.src, data: c.data})
			theta := []float64{0.1}
			errOf := func(workers int, inline bool) string {
				d := newCRNDensity(t, bm, workers, inline)
				_, err := d.LogDensityGrad(theta, make([]float64, 1))
				if err == nil {
					t.Fatalf("workers %d inline %v: no error", workers, inline)
				}
				return err.Error()
			}
			want := errOf(1, true)
			if !strings.Contains(want, c.want) {
				t.Fatalf("inline error %q lacks %q", want, c.want)
			}
			for _, w := range []int{1, 4, 8} {
				if got := errOf(w, false); got != want {
					t.Errorf("workers %d: error %q, inline %q", w, got, want)
				}
			}
		})
	}
}

// firstNegativeDraw returns the error message of the first of k
// replicates of seed whose first normal draw is negative, or a message no
// error has when that is replicate 0 (which would not test the order of
// the reports) or none.
func firstNegativeDraw(seed uint64, k int) string {
	for r := range k {
		if z := crnStream(seed, r).NormFloat64(); z < 0 && r > 0 {
			return fmt.Sprintf("normal_lpdf: scale sigma = %v must be positive", z)
		} else if z < 0 {
			break
		}
	}
	return "(seed unsuitable for the test)"
}

// TestCRNSessionWorkers checks crn in the REPL session for several
// worker counts.
func TestCRNSessionWorkers(t *testing.T) {
	var first string
	for _, w := range []int{0, 1, 3} {
		s := NewSession(nil, Builtins(), 1, nil)
		s.Workers = w
		got, err := s.Eval("crn(4, mean(exp(0.5 + std_normal_rng(5))), seed = 3)")
		if err != nil {
			t.Fatal(err)
		}
		want := 0.0
		for k := 0; k < 4; k++ {
			rng := crnStream(3, k)
			m := 0.0
			for range 5 {
				m += math.Exp(0.5 + rng.NormFloat64())
			}
			want += m / 5
		}
		if wantText := fmt.Sprintf("%.6g", want/4); got != wantText {
			t.Errorf("workers %d: %s, want %s", w, got, wantText)
		}
		if first == "" {
			first = got
		}
	}
}

// TestCRNReplicatesReuseMemory checks that, once warm, an evaluation with
// one worker allocates no more than the inline evaluation does: the
// replicates' tapes, frames and Sinkhorn workspaces are reused.
func TestCRNReplicatesReuseMemory(t *testing.T) {
	bm := bindCase(t, crnCases[0])
	theta := crnCases[0].theta
	grad := make([]float64, len(theta))
	allocs := func(inline bool) float64 {
		d := newCRNDensity(t, bm, 1, inline)
		return testing.AllocsPerRun(5, func() {
			if _, err := d.LogDensityGrad(theta, grad); err != nil {
				t.Fatal(err)
			}
		})
	}
	if rep, in := allocs(false), allocs(true); rep > in {
		t.Errorf("%g allocations per gradient with replicates, %g inline", rep, in)
	}
}

// bindExpA binds Experiment A's model (models/expA.shm, K = 6, T = 80)
// to its data with lambda = 1.
func bindExpA(t testing.TB) *Model {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "models", "expA.shm"))
	if err != nil {
		t.Fatal(err)
	}
	m, errs := ir.CheckSource("expA.shm", string(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set, err := data.Load([]string{shared.Path(t, "testdata", "expA", "data.csv")}, []string{"lambda=1"})
	if err != nil {
		t.Fatal(err)
	}
	bm, err := Bind(m, set, Options{Impls: Builtins(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// TestCRNExpAWorkers checks Experiment A's gradient with 1 and 2 workers
// (bitwise) and against the inline evaluation.
func TestCRNExpAWorkers(t *testing.T) {
	bm := bindExpA(t)
	theta := []float64{2, math.Log(0.5)}
	lp1, g1 := gradAt(t, newCRNDensity(t, bm, 1, false), theta)
	lp2, g2 := gradAt(t, newCRNDensity(t, bm, 2, false), theta)
	lpIn, gIn := gradAt(t, newCRNDensity(t, bm, 1, true), theta)
	if lp1 != lp2 || lp1 != lpIn {
		t.Errorf("log density %.17g (1 worker), %.17g (2), %.17g (inline)", lp1, lp2, lpIn)
	}
	for i := range g1 {
		if math.Float64bits(g1[i]) != math.Float64bits(g2[i]) || math.Abs(g1[i]-gIn[i]) > 1e-12*math.Max(1, math.Abs(gIn[i])) {
			t.Errorf("grad[%d]: %.17g (1 worker), %.17g (2), %.17g (inline)", i, g1[i], g2[i], gIn[i])
		}
	}
}

// benchWorkers measures one gradient of bm at theta with the crn
// replicates evaluated inline on the chain's tape (the evaluation before
// replicates had their own tapes) and by 1, 2, 3 or 6 workers (6 is
// Experiment A's K; more workers than cores measure only overhead).
func benchWorkers(b *testing.B, bm *Model, theta []float64) {
	grad := make([]float64, len(theta))
	for _, c := range []struct {
		name    string
		workers int
		inline  bool
	}{{"inline", 1, true}, {"workers=1", 1, false}, {"workers=2", 2, false}, {"workers=3", 3, false}, {"workers=6", 6, false}} {
		b.Run(c.name, func(b *testing.B) {
			d := newCRNDensity(b, bm, c.workers, c.inline)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.LogDensityGrad(theta, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCRNExpAGradient measures one gradient of Experiment A's
// potential (K = 6, T = 80, N = 120).
func BenchmarkCRNExpAGradient(b *testing.B) {
	benchWorkers(b, bindExpA(b), []float64{2, math.Log(0.5)})
}

// BenchmarkCRNCheapBody measures the overhead of the replicate path on a
// body much cheaper than a Sinkhorn divergence: 100 replicates of
// mean(exp(a + b · z)) with z of size 10.
func BenchmarkCRNCheapBody(b *testing.B) {
	benchWorkers(b, bindCase(b, crnCase{src: `
parameters { real a; real b; }
model { target += -crn(100, mean(exp(a + b * std_normal_rng(10)))); }`}), []float64{0.3, -0.4})
}

// TestCRNCohort checks the cohort a crn call's replicates see in their
// built-ins' context: with several workers, one cohort shared by every
// replicate of the call, with the calling worker counted as computing,
// and none left computing after the call; with one worker, the chain's
// (none).
func TestCRNCohort(t *testing.T) {
	const src = `
parameters { real mu; }
model { target += crn(6, exp(mu)) + crn(6, exp(2 * mu)); }
`
	for _, w := range []int{1, 3} {
		var mu sync.Mutex
		var seen []*stdlib.Cohort
		impls := testImpls()
		exp := impls["exp"]
		impls["exp"] = func(c *stdlib.Context, args, named []stdlib.Value) (stdlib.Value, error) {
			mu.Lock()
			seen = append(seen, c.Cohort)
			if c.Cohort != nil && c.Cohort.Computing() < 1 {
				t.Errorf("workers %d: a replicate's built-in sees %d computing members", w, c.Cohort.Computing())
			}
			mu.Unlock()
			return exp(c, args, named)
		}
		m, errs := ir.CheckSource("t.shm", src)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		bm, err := Bind(m, &data.Set{}, Options{Impls: impls, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		d := newCRNDensity(t, bm, w, false)
		gradAt(t, d, []float64{0.3})
		if len(seen) != 12 {
			t.Fatalf("workers %d: exp called %d times, want 12", w, len(seen))
		}
		for i, c := range seen {
			switch {
			case w == 1 && c != nil:
				t.Errorf("workers 1: call %d has a cohort", i)
			case w > 1 && (c == nil || c != seen[0] && i < 6 || c != seen[6] && i >= 6):
				t.Errorf("workers %d: call %d has cohort %p, want the call's one", w, i, c)
			case w > 1 && c.Computing() != 0:
				t.Errorf("workers %d: %d members still computing after the call", w, c.Computing())
			}
		}
		if w > 1 && seen[0] == seen[6] {
			t.Errorf("workers %d: two crn calls share a cohort", w)
		}
	}
}
