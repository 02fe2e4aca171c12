package calibrate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/nuts"
)

func TestHPDThreshold(t *testing.T) {
	lp := []float64{5, 1, 4, 2, 3, 9, 8, 7, 6, 10}
	for _, tc := range []struct {
		level, want float64
	}{{0.9, 2}, {0.5, 6}, {0.95, 1}, {0.1, 10}} {
		got, err := HPDThreshold(lp, tc.level)
		if err != nil || got != tc.want {
			t.Errorf("level %g: %g, %v; want %g", tc.level, got, err, tc.want)
		}
		// At least level·S draws lie in the region.
		in := 0
		for _, x := range lp {
			if x >= got {
				in++
			}
		}
		if float64(in) < tc.level*float64(len(lp)) {
			t.Errorf("level %g: %d of %d draws in the region", tc.level, in, len(lp))
		}
	}
	for _, bad := range [][]float64{nil, {1, math.NaN()}} {
		if _, err := HPDThreshold(bad, 0.9); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := HPDThreshold(lp, 1); err == nil {
		t.Error("level 1: no error")
	}
}

func TestEllipseDistance(t *testing.T) {
	// One dimension: (x − mean)² / variance, and the chi-square(1)
	// quantile 1.6448536² at 0.9.
	draws := [][]float64{{1}, {2}, {3}, {4}}
	d2, r2, err := EllipseDistance([]float64{4}, draws, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	variance := (2.25 + 0.25 + 0.25 + 2.25) / 3
	if want := 1.5 * 1.5 / variance; math.Abs(d2-want) > 1e-12 {
		t.Errorf("distance %g, want %g", d2, want)
	}
	if want := 1.6448536269514722 * 1.6448536269514722; math.Abs(r2-want) > 1e-9 {
		t.Errorf("radius² %g, want %g", r2, want)
	}
	// Two dimensions, correlated: against the inverse written out.
	draws = [][]float64{{0, 0}, {1, 1}, {2, 1}, {3, 4}, {4, 3}}
	point := []float64{1, 3}
	d2, r2, err = EllipseDistance(point, draws, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	m := []float64{2, 1.8}
	var c [2][2]float64
	for _, d := range draws {
		for i := 0; i < 2; i++ {
			for j := 0; j < 2; j++ {
				c[i][j] += (d[i] - m[i]) * (d[j] - m[j]) / 4
			}
		}
	}
	det := c[0][0]*c[1][1] - c[0][1]*c[1][0]
	dx, dy := point[0]-m[0], point[1]-m[1]
	want := (c[1][1]*dx*dx - 2*c[0][1]*dx*dy + c[0][0]*dy*dy) / det
	if math.Abs(d2-want) > 1e-12*want {
		t.Errorf("distance %g, want %g", d2, want)
	}
	if want := -2 * math.Log(0.1); math.Abs(r2-want) > 1e-9 { // chi-square(2)
		t.Errorf("radius² %g, want %g", r2, want)
	}
	if _, _, err := EllipseDistance([]float64{0, 0}, [][]float64{{1, 1}, {2, 2}, {3, 3}}, 0.9); err == nil {
		t.Error("singular covariance: no error")
	}
}

// TestSearch runs the search against coverage curves and checks the
// scales it evaluates and lambda*.
func TestSearch(t *testing.T) {
	// The coverage of a well-specified normal mean: 2Φ(1.645/√λ) − 1.
	normal := func(l float64) float64 { return math.Erf(1.6448536269514722 / math.Sqrt(l) / math.Sqrt2) }
	cases := []struct {
		name   string
		s      Search
		cov    func(float64) float64
		best   float64 // 0: no lambda reaches the target
		evals  int
		within float64 // lambda* within this relative distance of 1
	}{
		{"from below", Search{Start: 0.25}, normal, -1, 8, 0.05},
		{"from above", Search{Start: 16}, normal, -1, 8, 0.05},
		{"from the answer", Search{Start: 1}, normal, -1, 7, 0.05},
		{"budget", Search{Start: 0.25, MaxEvals: 3}, normal, 1, 3, 0},
		{"grid", Search{Grid: []float64{0.5, 1, 2, 4}}, normal, 1, 4, 0},
		{"none reaches", Search{Start: 1, MaxEvals: 4}, func(float64) float64 { return 0.5 }, 0, 4, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			for rounds := 0; ; rounds++ {
				next := s.Next()
				if len(next) == 0 {
					break
				}
				if rounds > 20 {
					t.Fatal("the search does not end")
				}
				for _, l := range next {
					s.Record(l, Coverage{Covered: int(math.Round(1e6 * tc.cov(l))), Runs: 1e6})
				}
			}
			if n := len(s.Evals()); n != tc.evals {
				t.Errorf("%d scales evaluated, want %d: %v", n, tc.evals, s.Evals())
			}
			best, err := s.Best()
			switch {
			case tc.best == 0:
				if err == nil {
					t.Errorf("lambda* = %g, want an error", best)
				}
			case err != nil:
				t.Fatal(err)
			case tc.best > 0 && best != tc.best:
				t.Errorf("lambda* = %g, want %g", best, tc.best)
			case tc.best < 0 && (best > 1 || best < 1-tc.within):
				t.Errorf("lambda* = %g, want within %g below 1", best, tc.within)
			}
			for _, e := range s.Evals() {
				if e.Lambda > best && e.Rate() >= 0.9 && err == nil {
					t.Errorf("lambda %g reaches the target above lambda* %g", e.Lambda, best)
				}
			}
		})
	}
}

func TestDatasetsRoundTrip(t *testing.T) {
	dir := Dir(t.TempDir())
	y := &data.Value{Name: "y", Dims: []int{3, 2}, Data: []float64{1, 2, 3, 4, 5.5, -6e-300}}
	k := &data.Value{Name: "k", Dims: []int{3}, Data: []float64{7, 8, 9}, IsInt: true}
	n := &data.Value{Name: "n", Data: []float64{3}, IsInt: true}
	if err := WriteDataset(dir.DatasetPath(0), []*data.Value{y, k, n}); err != nil {
		t.Fatal(err)
	}
	got, err := data.ReadFile(dir.DatasetPath(0))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []*data.Value{y, k, n} {
		if got[i].Name != want.Name || !reflect.DeepEqual(got[i].Dims, want.Dims) || !reflect.DeepEqual(got[i].Data, want.Data) || got[i].IsInt != want.IsInt {
			t.Errorf("read back %+v, want %+v", got[i], want)
		}
	}
}

func TestBootstrap(t *testing.T) {
	set := &data.Set{}
	y := &data.Value{Name: "y", Dims: []int{5, 2}, Data: []float64{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5}}
	x := &data.Value{Name: "x", Dims: []int{5}, Data: []float64{0, 1, 2, 3, 4}}
	if err := set.AddFile([]*data.Value{y, x}); err != nil {
		t.Fatal(err)
	}
	a, b := Dir(t.TempDir()), Dir(t.TempDir())
	for _, d := range []Dir{a, b} {
		if err := Bootstrap(d, set, []string{"y", "x"}, 3, 7); err != nil {
			t.Fatal(err)
		}
	}
	differ := false
	for i := 0; i < 3; i++ {
		fa, _ := os.ReadFile(a.DatasetPath(i))
		fb, _ := os.ReadFile(b.DatasetPath(i))
		if string(fa) != string(fb) {
			t.Errorf("dataset %d differs between two runs with one seed", i)
		}
		vals, err := data.ReadFile(a.DatasetPath(i))
		if err != nil {
			t.Fatal(err)
		}
		// Rows move together: row r of y is (x_r, x_r + 0.5).
		for r := 0; r < 5; r++ {
			xr := vals[1].Data[r]
			if vals[0].Data[2*r] != xr || vals[0].Data[2*r+1] != xr+0.5 {
				t.Errorf("dataset %d row %d: y = %v, x = %v", i, r, vals[0].Data[2*r:2*r+2], xr)
			}
			if xr != 0 && xr != 1 && xr != 2 && xr != 3 && xr != 4 {
				t.Errorf("dataset %d: %g is not a row of the data", i, xr)
			}
		}
		fa0, _ := os.ReadFile(a.DatasetPath(0))
		differ = differ || string(fa) != string(fa0)
	}
	if !differ {
		t.Error("every bootstrap dataset is the same")
	}
	for _, bad := range [][]string{{"z"}, {"y", "short"}} {
		s := &data.Set{}
		s.AddFile([]*data.Value{y, {Name: "short", Dims: []int{4}, Data: make([]float64, 4)}})
		if err := Bootstrap(Dir(t.TempDir()), s, bad, 1, 1); err == nil {
			t.Errorf("--resample %v: no error", bad)
		}
	}
}

func TestPlanFolder(t *testing.T) {
	dir := Dir(t.TempDir())
	p := &Plan{Model: "/m.shm", Param: "lambda", Datasets: 2, Level: 0.9, Chains: 1, Samples: 10, Seed: 3,
		Truth: map[string]float64{"mu": 0.5}}
	if err := dir.WritePlan(p); err != nil {
		t.Fatal(err)
	}
	if err := dir.WritePlan(p); err != nil {
		t.Errorf("the same plan again: %v", err)
	}
	q := *p
	q.Seed = 4
	if err := dir.WritePlan(&q); err == nil {
		t.Error("another plan in the same folder: no error")
	}
	got, err := dir.ReadPlan()
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("read back %+v, %v", got, err)
	}
	task := Task{Lambda: 1.0905077326652577, Dataset: 1}
	if r, err := dir.ReadResult(task, nil); r != nil || err != nil {
		t.Errorf("unfinished task: %v, %v", r, err)
	}
	if err := dir.WriteResult(&Result{Task: task, HPDCovered: true, HPDTruth: -1, HPDThreshold: -2, Draws: 10, EllipseDist2: 5, EllipseRadius2: 4,
		Columns: []string{"mu"}, Mean: []float64{0}, SD: []float64{1}}); err != nil {
		t.Fatal(err)
	}
	r, err := dir.ReadResult(task, nil)
	if err != nil || r == nil || !r.Covered("hpd") || r.Covered("ellipse") || r.Lambda != task.Lambda {
		t.Errorf("read back %+v, %v", r, err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir.ResultPath(task)), ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestMedianRhat: the medians of the pooled draws, and R-hat near 1 for
// chains drawn from one distribution and far above it for chains around
// different values.
func TestMedianRhat(t *testing.T) {
	const n = 400
	post := &Posterior{Chains: 2}
	for c := range 2 {
		for s := range n {
			// Column 0: the same well-mixed sequence in both chains (the
			// golden-ratio sequence: no trend, so the split halves agree).
			// Column 1: chain 0 around 0.5, chain 1 around 10.5.
			_, u := math.Modf(float64(s+1) * 0.6180339887498949)
			post.Params = append(post.Params, []float64{u, 10*float64(c) + u})
		}
	}
	median, rhat := medianRhat(post)
	if math.Abs(median[0]-0.5) > 0.01 || math.Abs(median[1]-5.5) > 0.01 {
		t.Errorf("medians %v, want about 0.5 and 5.5", median)
	}
	if rhat[0] > 1.01 || !(rhat[1] > 1.5) {
		t.Errorf("R-hat %v, want at most 1.01 for identical chains and above 1.5 for separated ones", rhat)
	}
}

// TestReadResultRejects: a result file that is not the task's finished
// result of the plan is an error naming the file and what is wrong, not
// a result counted; non-finite values (a NaN R-hat of short chains, a
// truth outside the support) are kept.
func TestReadResultRejects(t *testing.T) {
	dir := Dir(t.TempDir())
	task := Task{Lambda: 2, Dataset: 3}
	plan := &Plan{Seed: 7, Chains: 2, Samples: 5, Warmup: 100, Truth: map[string]float64{"mu": 0.5}, Reuse: DefaultReuse()}
	if err := dir.StoreDataset(task.Dataset, []*data.Value{{Name: "y", Dims: []int{2}, Data: []float64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	digest, err := dir.DatasetDigest(task.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	good := Result{Task: task, Seed: 11, Draws: 10, Warmup: 100, Source: SourceRun, HPDTruth: -1, HPDThreshold: -2, HPDCovered: true,
		EllipseDist2: 1, EllipseRadius2: 4, EllipseCovered: true, Columns: []string{"mu"}, Mean: []float64{0}, SD: []float64{1},
		DatasetSHA256: digest}
	for name, tc := range map[string]struct {
		edit func(r *Result)
		want string
	}{
		"another task's":        {func(r *Result) { r.Dataset = 4 }, "holds the result of lambda 2, dataset 5"},
		"another scale's":       {func(r *Result) { r.Lambda = 3 }, "holds the result of lambda 3"},
		"no draws":              {func(r *Result) { r.Draws = 0 }, "no draws"},
		"HPD contradicted":      {func(r *Result) { r.HPDCovered = false }, "HPD coverage contradicts"},
		"ellipse contradicted":  {func(r *Result) { r.EllipseCovered = false }, "ellipse coverage contradicts"},
		"columns without means": {func(r *Result) { r.Mean = []float64{} }, "1 columns with 0 means"},
		"an unknown source":     {func(r *Result) { r.Source = "guess" }, `unknown source "guess"`},
		"no columns":            {func(r *Result) { r.Columns, r.Mean, r.SD = []string{}, []float64{}, []float64{} }, "no parameter columns"},
		"other columns":         {func(r *Result) { r.Columns = []string{"a"} }, "no column mu of the truth"},
		"a negative sd":         {func(r *Result) { r.SD = []float64{-1} }, "column mu has mean 0 and sd -1"},
		"another seed":          {func(r *Result) { r.Seed = 999 }, "seed 999, the plan's task has 11"},
		"other draws":           {func(r *Result) { r.Draws = 6 }, "6 draws, the plan's runs have 10"},
		"other warmup":          {func(r *Result) { r.Warmup = 7 }, "7 warmup iterations, the plan's runs have 100"},
		"a warm run unplanned":  {func(r *Result) { r.Source, r.Warmup = SourceWarm, 99 }, "a warm-started run of 99 warmup"},
		"reweighted from none":  {func(r *Result) { r.Source = SourceReweighted }, "a reweighted result from lambda 0"},
		"a run reweighted":      {func(r *Result) { r.FromLambda = 1 }, "says it was reweighted"},
		"another dataset's":     {func(r *Result) { r.DatasetSHA256 = strings.Repeat("ab", 32) }, "is the result of a run on another dataset (sha256 abababababab…) than"},
		"no dataset digest":     {func(r *Result) { r.DatasetSHA256 = "" }, "written by an earlier version of shm, which did not record the digest of its dataset"},
	} {
		r := good
		tc.edit(&r)
		b, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeAtomic(dir.ResultPath(task), b); err != nil {
			t.Fatal(err)
		}
		if got, err := dir.ReadResult(task, plan); err == nil || !strings.Contains(err.Error(), dir.ResultPath(task)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want an error naming the file and %q", name, got, err, tc.want)
		}
	}
	for _, text := range []string{"{}", `{"lambda": 2, "dataset": 3}`, "[1]", "null"} {
		if err := writeAtomic(dir.ResultPath(task), []byte(text)); err != nil {
			t.Fatal(err)
		}
		if got, err := dir.ReadResult(task, plan); err == nil || !strings.Contains(err.Error(), "not a") {
			t.Errorf("%s: read as %+v, %v", text, got, err)
		}
	}
	b, _ := json.Marshal(&good)
	if err := writeAtomic(dir.ResultPath(task), bytes.Replace(b, []byte(`"hpd_truth":-1`), []byte(`"hpd_truth":null`), 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.ReadResult(task, plan); err == nil || !strings.Contains(err.Error(), "no hpd_truth") {
		t.Errorf("a null hpd_truth: %v", err)
	}
	// Non-finite values survive the file.
	odd := good
	odd.Rhat, odd.HPDTruth, odd.HPDCovered, odd.ParetoK = []float64{math.NaN()}, math.Inf(-1), false, math.Inf(1)
	if err := dir.WriteResult(&odd); err != nil {
		t.Fatal(err)
	}
	got, err := dir.ReadResult(task, plan)
	if err != nil || !math.IsNaN(got.Rhat[0]) || !math.IsInf(got.HPDTruth, -1) || !math.IsInf(got.ParetoK, 1) || got.Mean[0] != 0 {
		t.Errorf("non-finite values read back as %+v, %v", got, err)
	}
	if err := dir.WriteResult(&good); err != nil {
		t.Fatal(err)
	}
	if got, err := dir.ReadResult(task, plan); err != nil || !reflect.DeepEqual(*got, good) {
		t.Errorf("a good result: %+v, %v", got, err)
	}
}

// TestWeightedRegions: with equal weights the weighted regions are the
// unweighted ones, bit for bit; zero weights drop draws; and normal draws
// weighted by the ratio of a narrower normal's density give that
// normal's regions (analytic: the variance 1/r, the 90% HPD threshold
// log φ at the quantile).
func TestWeightedRegions(t *testing.T) {
	lp := []float64{5, 1, 4, 2, 3, 9, 8, 7, 6, 10}
	ones := make([]float64, len(lp))
	for i := range ones {
		ones[i] = 0.1
	}
	for _, level := range []float64{0.5, 0.9, 0.95} {
		a, _ := HPDThreshold(lp, level)
		b, err := WeightedHPDThreshold(lp, ones, level)
		if err != nil || a != b {
			t.Errorf("level %g: equal weights give %v (%v), unweighted %v", level, b, err, a)
		}
	}
	// Weight only on the draws 1..5: the 80% region of those keeps 2..5.
	w := []float64{1, 1, 1, 1, 1, 0, 0, 0, 0, 0}
	if got, _ := WeightedHPDThreshold(lp, w, 0.8); got != 2 {
		t.Errorf("zero weights on the top five: threshold %v, want 2", got)
	}
	for _, bad := range [][]float64{{1}, {-1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, make([]float64, 10)} {
		if _, err := WeightedHPDThreshold(lp, bad, 0.9); err == nil {
			t.Errorf("weights %v: no error", bad)
		}
	}

	rng := rand.New(rand.NewPCG(1, 2))
	const n, r = 40000, 3.0
	draws := make([][]float64, n)
	logp := make([]float64, n)
	weights := make([]float64, n)
	for i := range draws {
		x, y := rng.NormFloat64(), rng.NormFloat64()
		draws[i] = []float64{x, y}
		// The target N(0, I/r): its log density, and its ratio to N(0, I).
		logp[i] = -r * (x*x + y*y) / 2
		weights[i] = math.Exp(-(r - 1) * (x*x + y*y) / 2)
	}
	// The target's 90% HPD region is the disc of radius² χ²₂(0.9)/r =
	// −2 ln(0.1)/r, its threshold −r·radius²/2 = ln 0.1.
	got, err := WeightedHPDThreshold(logp, weights, 0.9)
	if err != nil || math.Abs(got-math.Log(0.1)) > 0.05 {
		t.Errorf("weighted HPD threshold %v (%v), want ln 0.1 = %.4f", got, err, math.Log(0.1))
	}
	// A point at squared distance 1 from the mean has Mahalanobis
	// distance² r under the target's covariance I/r.
	d2, rad2, err := WeightedEllipseDistance([]float64{1, 0}, draws, weights, 0.9)
	if err != nil || math.Abs(d2-r) > 0.1 || math.Abs(rad2-(-2*math.Log(0.1))) > 1e-9 {
		t.Errorf("weighted ellipse: distance² %v, radius² %v (%v); want %v and %v", d2, rad2, err, r, -2*math.Log(0.1))
	}
	a, b, _ := EllipseDistance([]float64{1, 0}, draws, 0.9)
	c, e, _ := WeightedEllipseDistance([]float64{1, 0}, draws, nil, 0.9)
	if a != c || b != e {
		t.Errorf("nil weights: %v, %v; unweighted %v, %v", c, e, a, b)
	}
}

// TestDraws: a run's draws read back bit for bit, affine terms included,
// and a damaged or hostile file is an error naming it, never a panic or a
// huge allocation (counts whose product wraps around included).
func TestDraws(t *testing.T) {
	dir := Dir(t.TempDir())
	task := Task{Lambda: 0.5, Dataset: 2}
	dr := &Draws{Theta: [][]float64{{1, -2}, {math.Inf(-1), 5e-324}, {3, 4}}, Params: [][]float64{{0.1}, {0.2}, {0.3}},
		LP: []float64{-1, -2, math.NaN()}, Prior: []float64{1, 2, 3}, Loss: []float64{-4, -5, -6}, TruthPrior: 7, TruthLoss: -8,
		Task: task, Seed: 1<<63 + 5, DatasetSHA256: strings.Repeat("0f", 32)}
	for _, affine := range []bool{true, false} {
		want := *dr
		if !affine {
			want.Prior, want.Loss, want.TruthPrior, want.TruthLoss = nil, nil, 0, 0
		}
		if err := dir.WriteDraws(task, &want); err != nil {
			t.Fatal(err)
		}
		got, err := dir.ReadDraws(task)
		if err != nil || got.Affine() != affine || fmt.Sprint(got) != fmt.Sprint(&want) {
			t.Errorf("affine %v: read back %+v, %v; want %+v", affine, got, err, &want)
		}
	}
	good, _ := os.ReadFile(dir.DrawsPath(task))
	header := func(s, dim, cols, affine uint32, values int) []byte {
		b := []byte(drawsMagic)
		for _, x := range []uint32{drawsVersion, s, dim, cols, affine, 0} {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(1))
		b = binary.LittleEndian.AppendUint64(b, 1)
		b = append(b, make([]byte, 32)...)
		return append(b, make([]byte, 8*values)...)
	}
	withVersion := func(v byte) []byte { return append(append([]byte(drawsMagic), v, 0, 0, 0), good[12:]...) }
	withLambda := func(x float64) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint64(b[len(drawsMagic)+24:], math.Float64bits(x))
		return b
	}
	for name, b := range map[string][]byte{
		"empty":              {},
		"truncated":          good[:len(good)-3],
		"one value short":    good[:len(good)-8],
		"another magic":      append([]byte("SHMDRAWZ"), good[8:]...),
		"wrapping counts":    header(1<<31, 1<<32-1, 1<<32-2, 1, 2),
		"huge draw count":    header(1<<32-1, 0, 0, 0, 1),
		"affine flag 7":      header(1, 1, 1, 7, 3),
		"no draws":           header(0, 1, 1, 0, 0),
		"version 1":          withVersion(1),
		"version 3":          withVersion(3),
		"header truncated":   good[:drawsHead-1],
		"lambda 0":           withLambda(0),
		"lambda NaN":         withLambda(math.NaN()),
		"counts beyond size": header(10, 10, 10, 0, 5),
	} {
		if err := os.WriteFile(dir.DrawsPath(task), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := dir.ReadDraws(task); err == nil || !strings.Contains(err.Error(), dir.DrawsPath(task)) {
			t.Errorf("%s: %v, %v; want an error naming the file", name, got, err)
		}
	}
}

// TestResolutionCheck: a resolution is usable when some rule gives a
// scale and every rule's eps is positive and finite at alpha.
func TestResolutionCheck(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		r     Resolution
		alpha float64
		want  string // "" for no error
	}{
		{"every rule", Resolution{Noise: 0.1, NearestNeighbour: 0.2, Spacing: 0.5}, 1, ""},
		{"spacing only", Resolution{Noise: nan, NearestNeighbour: 0, Spacing: 1}, 1, ""},
		{"noise only", Resolution{Noise: 0.1, NearestNeighbour: 0, Spacing: math.Inf(1)}, 1, ""},
		{"all equal", Resolution{Noise: nan, NearestNeighbour: 0, Spacing: math.Inf(1)}, 1, "the points are all equal"},
		{"overflow", Resolution{Noise: nan, NearestNeighbour: 0.2, Spacing: 0.5}, 1e308, "is +Inf for the median nearest neighbour rule's h = 0.2"},
		{"underflow", Resolution{Noise: 1e-200, NearestNeighbour: 0.2, Spacing: 0.5}, 1, "is 0 for the known noise rule's h = 1e-200"},
	} {
		err := tc.r.Check(tc.alpha)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// TestPlanFilesUpgrade: a folder whose plan an earlier version wrote,
// hashing fewer input files, resumes with the plan that hashes them all;
// a plan that differs otherwise, or in a hash, is refused.
func TestPlanFilesUpgrade(t *testing.T) {
	in := t.TempDir()
	var paths []string
	for i, text := range []string{"model", "data", "dataset"} {
		paths = append(paths, filepath.Join(in, strconv.Itoa(i)))
		if err := os.WriteFile(paths[i], []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all, err := HashFiles(paths...)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(files []FileHash, seed uint64) *Plan {
		return &Plan{Model: paths[0], Data: paths[1:2], Param: "lambda", Datasets: 1, Level: 0.9, Chains: 1, Samples: 10,
			Seed: seed, Truth: map[string]float64{"mu": 0.5}, Files: files}
	}
	changed := append([]FileHash{}, all...)
	changed[1].SHA256 = "0"
	for _, tc := range []struct {
		name string
		now  *Plan
		ok   bool
	}{
		{"every input hashed now", plan(all, 3), true},
		{"another seed", plan(all, 4), false},
		{"another hash", plan(changed, 3), false},
		{"fewer hashes", plan(all[:1], 3), false},
	} {
		dir := Dir(t.TempDir())
		if err := dir.WritePlan(plan(all[:2], 3)); err != nil {
			t.Fatal(err)
		}
		if err := dir.CheckPlan(tc.now); (err == nil) != tc.ok {
			t.Errorf("%s: CheckPlan: %v", tc.name, err)
		}
		if got, _ := dir.ReadPlan(); !reflect.DeepEqual(got, plan(all[:2], 3)) {
			t.Errorf("%s: CheckPlan wrote the plan", tc.name)
		}
		err := dir.WritePlan(tc.now)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if got, _ := dir.ReadPlan(); tc.ok && !reflect.DeepEqual(got, tc.now) {
			t.Errorf("%s: plan %+v, want %+v", tc.name, got, tc.now)
		}
	}
}

// TestRunMemoryShare: a run whose chains and kept draws need more than
// its share of half of the memory (runs side by side) is refused, naming
// the runs at once; alone it fits, and its chains are bounded by the
// share.
func TestRunMemoryShare(t *testing.T) {
	limit := sysmem.MaxElements()
	if limit <= 0 {
		t.Skip("the memory is unknown")
	}
	plan := &Plan{Chains: 4, Samples: 1000}
	cfg := nuts.DefaultConfig()
	if err := plan.checkMemory(&cfg, 10, 10, 1); err != nil || cfg.MaxMemory != limit {
		t.Fatalf("alone: %v, chain bound %d (want %d)", err, cfg.MaxMemory, limit)
	}
	// A share that leaves the run 40 000 words: the draws alone need 80 000.
	share := int(limit / 40000)
	err := plan.checkMemory(&cfg, 10, 10, share)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("with %d runs at once", share)) || !strings.Contains(err.Error(), "its 4 chains' draws of 20 values each, 1000 samples") {
		t.Errorf("a share of %d: %v", share, err)
	}
}

// TestRemoveStaleTemps: the temporary files of writes older than the age
// are removed, at any depth; a fresh one (a live write) and the results
// stay.
func TestRemoveStaleTemps(t *testing.T) {
	dir := Dir(t.TempDir())
	stale := filepath.Join(string(dir), "results", "lambda=0.5", ".d093.json.tmp2197737256")
	staleCSV := filepath.Join(string(dir), ".csv.tmp456")
	other := filepath.Join(string(dir), "sub", ".index.tmp") // not a calibration's
	fresh := filepath.Join(string(dir), "results", "lambda=0.5", ".d094.json.tmp11")
	result := filepath.Join(string(dir), "results", "lambda=0.5", "d093.json")
	for _, p := range []string{stale, staleCSV, other, fresh, result} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{stale, staleCSV, other, result} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.RemoveStaleTemps(time.Minute); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, staleCSV: false, other: true, fresh: true, result: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	if err := Dir(filepath.Join(string(dir), "none")).RemoveStaleTemps(time.Minute); err != nil {
		t.Errorf("a folder not yet made: %v", err)
	}
}
