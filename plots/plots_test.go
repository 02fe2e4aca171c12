package plots

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
	"gonum.org/v1/plot/vg"
)

// cmdstanCSV writes a Stan CSV file laid out as CmdStan 2.32 writes it:
// n draws of mu, sigma and theta.1..3, with every 50th draw divergent.
func cmdstanCSV(t testing.TB, dir string, model string, chain, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# stan_version_major = 2\n# model = %s\n# method = sample (Default)\n#   sample\n", model)
	fmt.Fprintf(&b, "#     num_samples = %d\n#     num_warmup = 1000 (Default)\n#     save_warmup = 0 (Default)\n#     thin = 1 (Default)\n", n)
	fmt.Fprintf(&b, "# id = %d\n# random\n#   seed = 12\n", chain)
	b.WriteString("lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,sigma,theta.1,theta.2,theta.3\n")
	b.WriteString("# Adaptation terminated\n# Step size = 0.8\n# Diagonal elements of inverse mass matrix:\n# 1, 1, 1, 1, 1\n")
	rng := rand.New(rand.NewPCG(uint64(chain), 7))
	energy := 10.0
	for i := range n {
		div := 0
		if i%50 == 49 {
			div = 1
		}
		energy = 0.5*energy + 5 + rng.NormFloat64()
		mu, sigma := rng.NormFloat64(), math.Exp(0.3*rng.NormFloat64())
		fmt.Fprintf(&b, "%g,0.9,0.8,3,7,%d,%g,%g,%g,%g,%g,%g\n", -energy, div, energy, mu, sigma,
			mu+rng.NormFloat64(), mu+rng.NormFloat64(), mu+rng.NormFloat64())
	}
	b.WriteString("# \n#  Elapsed Time: 0.1 seconds (Warm-up)\n#                0.1 seconds (Sampling)\n#                0.2 seconds (Total)\n# \n")
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.csv", model, chain))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readRun(t testing.TB, label string, paths ...string) *Run {
	fit, err := stancsv.ReadFit(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return &Run{Label: label, Fit: fit}
}

func fourChains(t testing.TB, dir, model string, n int) *Run {
	var paths []string
	for c := 1; c <= 4; c++ {
		paths = append(paths, cmdstanCSV(t, dir, model, c, n))
	}
	return readRun(t, model, paths...)
}

// seriesOf counts a panel's series of each kind.
func seriesOf(pn *Panel) (lines, points, marks int) {
	for _, s := range pn.Series {
		switch s.Kind {
		case Line:
			lines++
		case Points:
			points++
		case Marks:
			marks++
		}
	}
	return
}

// TestKinds builds every kind of figure from four CmdStan-written chains
// and checks its structure, then renders it to SVG (panel titles and axis
// labels in the output) and PNG (an image of the requested size).
func TestKinds(t *testing.T) {
	dir := t.TempDir()
	run := fourChains(t, dir, "normal", 200)
	other := fourChains(t, dir, "normal_other", 200)
	other.Label = "other run"
	vars := []string{"mu", "theta"}
	tests := []struct {
		name   string
		build  func() (*Figure, error)
		panels int
		check  func(t *testing.T, f *Figure)
	}{
		{"trace", func() (*Figure, error) { return Trace(run, vars, false) }, 4, func(t *testing.T, f *Figure) {
			for _, pn := range f.Panels {
				if l, _, m := seriesOf(pn); l != 4 || m != 1 || pn.XLabel != "iteration" {
					t.Errorf("panel %s: %d lines, %d mark series, x label %q; want 4 chains, divergences marked", pn.Title, l, m, pn.XLabel)
				}
			}
		}},
		{"rank", func() (*Figure, error) { return Rank(run, vars) }, 4, func(t *testing.T, f *Figure) {
			for _, pn := range f.Panels {
				total := 0.0
				for _, s := range pn.Series[:4] {
					for k := 0; k < len(s.Y); k += 2 {
						total += s.Y[k]
					}
				}
				if l, _, _ := seriesOf(pn); l != 5 || total != 800 {
					t.Errorf("panel %s: %d lines, %g ranks; want 4 chains and the uniform line, 800 ranks", pn.Title, l, total)
				}
			}
		}},
		{"dens", func() (*Figure, error) { return Dens([]*Run{run, other}, vars) }, 4, func(t *testing.T, f *Figure) {
			for _, pn := range f.Panels {
				if l, _, _ := seriesOf(pn); l != 2 || pn.Series[1].Label != "other run" {
					t.Errorf("panel %s: %d lines; want one per run, labelled", pn.Title, l)
				}
				// A density integrates to 1.
				s := pn.Series[0]
				area := 0.0
				for k := 1; k < len(s.X); k++ {
					area += (s.X[k] - s.X[k-1]) * (s.Y[k] + s.Y[k-1]) / 2
				}
				if math.Abs(area-1) > 0.02 {
					t.Errorf("panel %s: density integrates to %g", pn.Title, area)
				}
			}
		}},
		{"pairs", func() (*Figure, error) { return Pairs(run, []string{"mu", "sigma", "theta.1"}) }, 9, func(t *testing.T, f *Figure) {
			for k, pn := range f.Panels {
				l, p, m := seriesOf(pn)
				diagonal := k%3 == k/3
				if diagonal && l != 1 || !diagonal && (p != 1 || m != 1) {
					t.Errorf("panel %d: %d lines, %d point and %d mark series", k, l, p, m)
				}
			}
			if f.Panels[6].XLabel != "mu" || f.Panels[6].YLabel != "theta.1" {
				t.Errorf("bottom-left panel labels %q, %q", f.Panels[6].XLabel, f.Panels[6].YLabel)
			}
		}},
		{"energy", func() (*Figure, error) { return Energy(run) }, 1, func(t *testing.T, f *Figure) {
			if !strings.Contains(f.Panels[0].Title, "E-BFMI") || len(f.Panels[0].Series) != 2 {
				t.Errorf("energy panel %q with %d series", f.Panels[0].Title, len(f.Panels[0].Series))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.build()
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Panels) != tt.panels {
				t.Fatalf("%d panels, want %d", len(f.Panels), tt.panels)
			}
			tt.check(t, f)
			var svg bytes.Buffer
			if err := Render(f, &svg, "svg", 6*vg.Inch, 4*vg.Inch); err != nil {
				t.Fatal(err)
			}
			for _, pn := range f.Panels {
				for _, text := range []string{pn.Title, pn.XLabel, pn.YLabel} {
					if text != "" && !strings.Contains(svg.String(), text) {
						t.Errorf("SVG lacks %q", text)
					}
				}
			}
			var pngOut bytes.Buffer
			if err := Render(f, &pngOut, "png", 6*vg.Inch, 4*vg.Inch); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(&pngOut)
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != 576 || b.Dy() != 384 {
				t.Errorf("PNG of %d×%d pixels, want 576×384 (6×4 inches at 96 dpi)", b.Dx(), b.Dy())
			}
		})
	}
}

// TestShmWrittenFile draws a trace of a file written by shm's own writer.
func TestShmWrittenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m-1.csv")
	cfg := &stancsv.Config{Model: "m", NumSamples: 30, NumWarmup: 10, Thin: 1, MaxDepth: 10, Metric: "diag_e", StepSize: 1, NumChains: 1, ID: 1}
	w, err := stancsv.Create(path, cfg, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := w.WriteRow([]float64{-1, 0.9, 1, 2, 3, 0, 1.5, float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Trace(readRun(t, "m", path), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Panels) != 1 || f.Panels[0].Title != "x" || len(f.Panels[0].Series) != 1 {
		t.Errorf("trace of one chain of x: %+v", f.Panels)
	}
}

// TestBadInput checks the errors for a variable the files lack and an
// energy plot without energy__.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	run := fourChains(t, dir, "normal", 20)
	if _, err := Trace(run, []string{"nu"}, false); err == nil || !strings.Contains(err.Error(), "no variable nu") {
		t.Errorf("missing variable: %v", err)
	}
	if _, err := Pairs(run, []string{"mu"}); err == nil || !strings.Contains(err.Error(), "two variables") {
		t.Errorf("pairs of one variable: %v", err)
	}
	run.Fit.Columns = append([]string(nil), run.Fit.Columns...)
	run.Fit.Columns[6] = "other__"
	if _, err := Energy(run); err == nil || !strings.Contains(err.Error(), "energy__") {
		t.Errorf("no energy column: %v", err)
	}
	if err := Render(&Figure{}, &bytes.Buffer{}, "svg", vg.Inch, vg.Inch); err == nil {
		t.Error("empty figure rendered")
	}
	if err := Render(&Figure{Panels: []*Panel{{}}}, &bytes.Buffer{}, "gif", vg.Inch, vg.Inch); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestDegenerateDraws draws every kind from two chains of draws that are
// constant (small or huge: gonum's padding of an empty range does nothing
// beyond 2^53), hold NaN or ±Inf, number one or none, or are huge or
// subnormal: a figure or an error, never a panic, and draws spanning more
// than the largest double (which gonum's tick labelling never finishes)
// are an error naming the panel.
func TestDegenerateDraws(t *testing.T) {
	cols := []string{"lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__", "a", "b"}
	row := func(a, b float64) []float64 { return []float64{-1, 0.9, 0.5, 2, 3, 0, 1, a, b} }
	cases := []struct {
		name  string
		draws [][]float64
		err   string // the error of trace and pairs, which draw the values, or "" for none
	}{
		{"constant", [][]float64{row(1, 1), row(1, 1), row(1, 1)}, ""},
		{"constant huge", [][]float64{row(1e20, -3e300), row(1e20, -3e300)}, ""},
		{"nan", [][]float64{row(math.NaN(), 1), row(2, math.NaN()), row(3, 4)}, ""},
		{"inf", [][]float64{row(math.Inf(1), 1), row(2, math.Inf(-1)), row(3, 4)}, ""},
		{"one draw", [][]float64{row(1, 2)}, ""},
		{"no draws", nil, ""},
		{"huge", [][]float64{row(1e300, -1e300), row(-1e300, 1e300), row(1, 2)}, ""},
		{"subnormal", [][]float64{row(1e-320, 0), row(0, 1e-320), row(1, 2)}, ""},
		{"overflowing span", [][]float64{row(1.7e308, -1.7e308), row(-1.7e308, 1.7e308), row(1, 2)}, "too wide to draw"},
		{"constant at the largest double", [][]float64{row(math.MaxFloat64, 1), row(math.MaxFloat64, 2)}, "too wide to draw"},
	}
	for _, c := range cases {
		r := &Run{Label: "x", Fit: &diag.Fit{Columns: cols, Chains: []diag.Chain{{Draws: c.draws}, {Draws: c.draws}}}}
		kinds := []struct {
			name string
			make func() (*Figure, error)
		}{
			{"trace", func() (*Figure, error) { return Trace(r, nil, false) }},
			{"rank", func() (*Figure, error) { return Rank(r, nil) }},
			{"dens", func() (*Figure, error) { return Dens([]*Run{r}, nil) }},
			{"pairs", func() (*Figure, error) { return Pairs(r, nil) }},
			{"energy", func() (*Figure, error) { return Energy(r) }},
		}
		for _, k := range kinds {
			f, err := k.make()
			if err == nil {
				err = Render(f, io.Discard, "png", 4*vg.Inch, 3*vg.Inch)
			}
			if c.err != "" && (k.name == "trace" || k.name == "pairs") {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s/%s: error %v, want %q", c.name, k.name, err, c.err)
				}
			} else if err != nil {
				t.Logf("%s/%s: %v", c.name, k.name, err)
			}
		}
	}
}

// BenchmarkTrace measures a trace plot of 4 chains × 1000 draws of 10
// variables rendered to PNG (issue 20: under a second).
func BenchmarkTrace(b *testing.B) {
	dir := b.TempDir()
	run := fourChains(b, dir, "normal", 1000)
	names := []string{"mu", "sigma", "theta", "lp__", "energy__", "stepsize__", "treedepth__", "n_leapfrog__"}
	for b.Loop() {
		f, err := Trace(run, names, false)
		if err != nil {
			b.Fatal(err)
		}
		if err := Render(f, &bytes.Buffer{}, "png", 10*vg.Inch, 8*vg.Inch); err != nil {
			b.Fatal(err)
		}
	}
}

// ppcRun is a run with a generated quantity y_rep of n elements per draw
// (normal around the draw's mu), and observed data of the same size.
func ppcRun(t *testing.T, n, draws int) (*Run, *Observed) {
	cols := []string{"lp__", "mu"}
	for i := range n {
		cols = append(cols, fmt.Sprintf("y_rep.%d", i+1))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	fit := &Run{Label: "m"}
	fit.Fit = &diag.Fit{Model: "m", Columns: cols}
	ch := diag.Chain{}
	for range draws {
		mu := rng.NormFloat64()
		row := []float64{-1, mu}
		for range n {
			row = append(row, mu+rng.NormFloat64())
		}
		ch.Draws = append(ch.Draws, row)
	}
	fit.Fit.Chains = []diag.Chain{ch}
	obs := &Observed{Name: "y", Dims: []int{n}}
	for range n {
		obs.Data = append(obs.Data, rng.NormFloat64())
	}
	return fit, obs
}

// TestPPC checks the posterior predictive checks: a density overlay for a
// vector, point clouds for points in the plane, intervals over the index
// for a series, and their errors.
func TestPPC(t *testing.T) {
	// Replicates of more elements than a figure has panels (Experiment
	// A's 120): one panel, whatever their number.
	long, ly := ppcRun(t, 120, 20)
	if _, err := PPC(long, ly, "y_rep"); err != nil {
		t.Errorf("a replicate of 120 elements: %v", err)
	}
	if _, err := PPCSeries(long, ly, "y_rep", nil); err != nil {
		t.Errorf("a series of 120 elements: %v", err)
	}
	run, y := ppcRun(t, 30, 100)
	f, err := PPC(run, y, "y_rep")
	if err != nil {
		t.Fatal(err)
	}
	pn := f.Panels[0]
	if len(f.Panels) != 1 || len(pn.Series) != ppcDraws+2 || pn.Series[0].Kind != Band || pn.Series[ppcDraws+1].Label != "observed y" {
		t.Errorf("density overlay: %d panels, %d series", len(f.Panels), len(pn.Series))
	}
	for k := range pn.Series[0].X {
		if b := pn.Series[0]; !(b.Y[k] <= b.Y2[k]) {
			t.Fatalf("density band inverted at %g", b.X[k])
		}
	}
	f, err = PPCSeries(run, y, "y_rep", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Panels[0].Series
	if len(s) != 4 || s[0].Kind != Band || s[3].Kind != Points || len(s[0].Y2) != 30 {
		t.Fatalf("series check: %+v", s)
	}
	for i := range 30 {
		if !(s[0].Y[i] <= s[1].Y[i] && s[1].Y[i] <= s[2].Y[i] && s[2].Y[i] <= s[1].Y2[i] && s[1].Y2[i] <= s[0].Y2[i]) {
			t.Fatalf("index %d: quantiles out of order", i+1)
		}
	}
	var svg bytes.Buffer
	if err := Render(f, &svg, "svg", 5*vg.Inch, 3*vg.Inch); err != nil {
		t.Fatal(err)
	}
	// Over a covariate: the points in its order.
	cov := &Observed{Name: "t", Dims: []int{30}}
	for i := range 30 {
		cov.Data = append(cov.Data, float64((i*7)%30))
	}
	f, err = PPCSeries(run, y, "y_rep", cov)
	if err != nil {
		t.Fatal(err)
	}
	if xs := f.Panels[0].Series[3].X; !sort.Float64sAreSorted(xs) || f.Panels[0].XLabel != "t" {
		t.Errorf("series over a covariate: x %v, label %q", xs, f.Panels[0].XLabel)
	}
	if _, err := PPCSeries(run, y, "y_rep", &Observed{Name: "t", Data: make([]float64, 3)}); err == nil {
		t.Error("a covariate of another length accepted")
	}
	plane := &Observed{Name: "xy", Dims: []int{15, 2}, Data: y.Data}
	f, err = PPC(run, plane, "y_rep")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Panels) != 6 || len(f.Panels[0].Series) != 2 || len(f.Panels[0].Series[1].X) != 15 || f.Panels[0].Series[1].Label != "observed" {
		t.Errorf("point clouds: %d panels", len(f.Panels))
	}
	image := &Observed{Name: "img", Dims: []int{5, 6}, Data: y.Data}
	f, err = PPC(run, image, "y_rep")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Panels) != 4 || f.Panels[0].Series[0].Kind != Image || f.Panels[1].Title != "mean of y_rep" {
		t.Errorf("image check: %d panels", len(f.Panels))
	}
	var pngOut bytes.Buffer
	if err := Render(f, &pngOut, "png", 6*vg.Inch, 2*vg.Inch); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&pngOut); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		obs  *Observed
		yrep string
		want string
	}{
		{y, "z_rep", "needs the generated quantity z_rep"},
		{&Observed{Name: "y", Dims: []int{10}, Data: make([]float64, 10)}, "y_rep", "30 elements per draw, the observed y 10"},
		{&Observed{Name: "cube", Dims: []int{2, 3, 5}, Data: make([]float64, 30)}, "y_rep", "no posterior predictive check for cube"},
	} {
		if _, err := PPC(run, tt.obs, tt.yrep); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("PPC(%s, %s): %v, want %q", tt.obs.Name, tt.yrep, err, tt.want)
		}
	}
}

// TestLocation checks the posterior of a position over a picture: the
// draws in the picture's coordinates, their median, and an ellipse that
// holds about 90% of normal draws.
func TestLocation(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	ch := diag.Chain{}
	for range 2000 {
		ch.Draws = append(ch.Draws, []float64{-1, 2 + 0.5*rng.NormFloat64(), -3 + rng.NormFloat64()})
	}
	run := &Run{Label: "m", Fit: &diag.Fit{Model: "m", Columns: []string{"lp__", "dx", "dy"}, Chains: []diag.Chain{ch}}}
	pic := &Picture{Name: "img", Rows: 20, Cols: 30, Z: make([]float64, 600)}
	f, err := Location(run, pic, [2]string{"dx", "dy"}, [2]float64{10, 8})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Panels[0].Series
	if len(s) != 4 || s[0].Kind != Image || s[3].Kind != Marks {
		t.Fatalf("series %+v", s)
	}
	// Offset (2, −3) from pixel (10, 8): column 12, row 5, i.e. (11, 15)
	// in plot coordinates.
	if mx, my := s[3].X[0], s[3].Y[0]; math.Abs(mx-11) > 0.1 || math.Abs(my-15) > 0.2 {
		t.Errorf("median at (%g, %g), want about (11, 15)", mx, my)
	}
	// The ellipse's extent along x is about ±sqrt(4.605)·0.5.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s[2].X {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if w := (hi - lo) / 2; math.Abs(w-math.Sqrt(4.605)*0.5) > 0.1 {
		t.Errorf("ellipse half-width %g, want %g", w, math.Sqrt(4.605)*0.5)
	}
	if _, err := Location(run, pic, [2]string{"dx", "nu"}, [2]float64{1, 1}); err == nil {
		t.Error("unknown variable accepted")
	}
}

// TestReplicatesRowMajor checks that a matrix-valued generated quantity,
// written column by column in Stan CSV, is read in the data's row-major
// order.
func TestReplicatesRowMajor(t *testing.T) {
	cols := []string{"lp__", "y_rep.1.1", "y_rep.2.1", "y_rep.3.1", "y_rep.1.2", "y_rep.2.2", "y_rep.3.2"}
	// Element (i, j) holds 10·i + j.
	row := []float64{-1, 11, 21, 31, 12, 22, 32}
	run := &Run{Label: "m", Fit: &diag.Fit{Model: "m", Columns: cols, Chains: []diag.Chain{{Draws: [][]float64{row}}}}}
	reps, err := run.replicates("y_rep", &Observed{Name: "y", Dims: []int{3, 2}, Data: make([]float64, 6)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{11, 12, 21, 22, 31, 32}; !slices.Equal(reps[0], want) {
		t.Errorf("replicate %v, want %v (row-major)", reps[0], want)
	}
}

// TestTraceWarmup draws the warmup draws a file kept before the sampling
// ones, with the end of warmup marked, and refuses when there are none.
func TestTraceWarmup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w-1.csv")
	cfg := &stancsv.Config{Model: "w", NumSamples: 30, NumWarmup: 10, SaveWarmup: true, Thin: 1, MaxDepth: 10, Metric: "diag_e", StepSize: 1, NumChains: 1, ID: 1}
	w, err := stancsv.Create(path, cfg, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if i == 10 {
			if err := w.WriteAdaptation(0.5, false, 1, []float64{1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteRow([]float64{-1, 0.9, 1, 2, 3, 0, 1.5, float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run := readRun(t, "w", path)
	f, err := Trace(run, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Panels[0].Series
	if len(s) != 2 || len(s[0].X) != 40 || s[0].Y[0] != 0 || s[1].Label != "end of warmup" || s[1].X[0] != 10.5 {
		t.Errorf("trace with warmup: %+v", s)
	}
	if f, err := Trace(run, nil, false); err != nil || len(f.Panels[0].Series[0].X) != 30 || f.Panels[0].Series[0].Y[0] != 10 {
		t.Errorf("trace without warmup: %v", err)
	}
	other := fourChains(t, dir, "normal", 20)
	if _, err := Trace(other, nil, true); err == nil || !strings.Contains(err.Error(), "no warmup draws") {
		t.Errorf("warmup asked of files without it: %v", err)
	}
}

// TestCmdStanFile draws a trace and a rank plot of a file written by
// CmdStan 2.32 (bernoulli example, four draws, a dense metric, CRLF in the
// first line, nan and inf values).
func TestCmdStanFile(t *testing.T) {
	run := readRun(t, "bernoulli", filepath.Join("testdata", "bernoulli-1.csv"))
	for _, build := range []func() (*Figure, error){
		func() (*Figure, error) { return Trace(run, nil, false) },
		func() (*Figure, error) { return Rank(run, []string{"theta"}) },
	} {
		f, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Panels) == 0 || f.Panels[0].Title != "theta" || len(f.Panels[0].Series) == 0 {
			t.Fatalf("figure of the CmdStan file: %+v", f.Panels)
		}
		var svg bytes.Buffer
		if err := Render(f, &svg, "svg", 4*vg.Inch, 3*vg.Inch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKDE compares the kernel density estimate of 20 000 standard normal
// draws with the normal density (the analytic reference) at several
// points; Silverman's bandwidth (about 0.12 here) biases the peak down by
// about h²/2 relative.
func TestKDE(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	xs := make([]float64, 20000)
	for i := range xs {
		xs[i] = rng.NormFloat64()
	}
	v, h := kdeSetup(xs)
	at := []float64{-2, -1, 0, 0.5, 1.5}
	got := kdeOn(v, h, at)
	for k, x := range at {
		want := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		if math.Abs(got[k]-want) > 0.02*want+0.003 {
			t.Errorf("density at %g: %.4f, normal %.4f (bandwidth %.3f)", x, got[k], want, h)
		}
	}
}

// TestPPCSeriesNonFinite: NaN and infinite replicates are left out of a
// series' intervals (they made the figure fail with "NaN data point"),
// and an index whose replicates are all non-finite has no band there.
func TestPPCSeriesNonFinite(t *testing.T) {
	run, y := ppcRun(t, 10, 50)
	ch := run.Fit.Chains[0]
	ch.Draws[3][2] = math.NaN()    // y_rep.1 of one draw
	ch.Draws[7][3] = math.Inf(1)   // y_rep.2 of another
	for _, row := range ch.Draws { // y_rep.5: no finite draw
		row[6] = math.NaN()
	}
	f, err := PPCSeries(run, y, "y_rep", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Panels[0].Series
	for _, i := range []int{0, 1} {
		if math.IsNaN(s[0].Y[i]) || math.IsInf(s[0].Y2[i], 0) {
			t.Errorf("index %d: band [%g, %g], want finite", i+1, s[0].Y[i], s[0].Y2[i])
		}
	}
	if !math.IsNaN(s[0].Y[4]) {
		t.Errorf("index 5: band from %g, want none (NaN)", s[0].Y[4])
	}
	var svg bytes.Buffer
	if err := Render(f, &svg, "svg", 5*vg.Inch, 3*vg.Inch); err != nil {
		t.Errorf("render: %v", err)
	}
}
