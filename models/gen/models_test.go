package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/modeltest"
	"github.com/shmlang/shm/runtime/stancsv"
)

// modelCase is a shipped model, its data and an unconstrained point
// near the truth away from kinks (bilinear interpolation has kinks at
// integer offsets).
type modelCase struct {
	name  string
	model string
	data  []string
	sets  []string
	theta []float64
}

func modelCases(t testing.TB) []modelCase {
	dir := t.TempDir()
	if err := run([]string{"expD", "--seed", "1", "--out", dir, "--cifar", cifarPath(t), "--first", "0", "--count", "1"}, os.Stdout); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img000.json")
	logit := func(x, lo, hi float64) float64 { p := (x - lo) / (hi - lo); return math.Log(p / (1 - p)) }
	return []modelCase{
		{"B", "../expB/expB.shm", []string{"../expB/data/data.csv"}, []string{"lambda=2.4837"}, []float64{math.Log(0.3), math.Log(0.15)}},
		{"C-likelihood", "../expC/expC_likelihood.shm", []string{"../expC/data/data.csv"}, nil,
			[]float64{0.01, math.Log(0.9), logit(0.5, 0, 1), math.Log(0.06), math.Log(0.05)}},
		{"C-sinkhorn", "../expC/expC.shm", []string{"../expC/data/data.csv"}, []string{"lambda=1"},
			[]float64{0.01, math.Log(0.9), logit(0.5, 0, 1), math.Log(0.06), math.Log(0.03)}},
		{"D-balanced", "../expD/expD_balanced.shm", []string{img}, []string{"lambda=0.5"}, []float64{logit(6.3, -8, 8), logit(3.2, -8, 8)}},
		{"D-unbalanced", "../expD/expD_unbalanced.shm", []string{img}, []string{"lambda=0.5"}, []float64{logit(6.3, -8, 8), logit(3.2, -8, 8)}},
	}
}

// TestModelGradients compares each shipped model's gradient with central
// finite differences of its log density.
func TestModelGradients(t *testing.T) {
	for _, c := range modelCases(t) {
		t.Run(c.name, func(t *testing.T) {
			d, err := modeltest.Bind(t, c.model, "", c.data, c.sets...).NewDensity()
			if err != nil {
				t.Fatal(err)
			}
			grad := make([]float64, len(c.theta))
			if _, err := d.LogDensityGrad(c.theta, grad); err != nil {
				t.Fatal(err)
			}
			const h = 1e-5
			for i := range c.theta {
				up, down := append([]float64(nil), c.theta...), append([]float64(nil), c.theta...)
				up[i] += h
				down[i] -= h
				lu, err := d.LogDensity(up)
				if err != nil {
					t.Fatal(err)
				}
				ld, err := d.LogDensity(down)
				if err != nil {
					t.Fatal(err)
				}
				fd := (lu - ld) / (2 * h)
				if math.Abs(grad[i]-fd) > 1e-5*math.Max(1, math.Abs(fd)) {
					t.Errorf("coordinate %d: gradient %.10g, finite difference %.10g", i, grad[i], fd)
				}
			}
		})
	}
}

// TestTargetMatchesRuntime checks that the generator's target window is
// what shm's window_bilinear and gaussian_blur compute from the same
// image and offset, so the models' simulator and the data agree.
func TestTargetMatchesRuntime(t *testing.T) {
	_, imgs := cifarImages(t)
	const idx = 5
	p := windowProblem(imgs[idx], idx, defaultWindow, 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "img.json")
	if err := writeFile(file, p.writeJSON); err != nil {
		t.Fatal(err)
	}
	const src = `
data {
  array[3] matrix[32, 32] img;
  array[3] matrix[16, 16] obs;
  real dx;
  real dy;
}
parameters { real a; }
model { a ~ normal(0, 1); }
generated quantities {
  matrix[16, 16] w1 = gaussian_blur(window_bilinear(img[1] / 255, 16.5 + dy, 16.5 + dx, 16, 16), 3, 1.5);
  matrix[16, 16] w3 = gaussian_blur(window_bilinear(img[3] / 255, 16.5 + dy, 16.5 + dx, 16, 16), 3, 1.5);
}`
	bm := modeltest.Bind(t, "target.shm", src, []string{file}, "dx="+fmtFloat(p.DX), "dy="+fmtFloat(p.DY))
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.Draw(nil, []float64{0}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	cols := bm.Columns()
	checked := 0
	for k, name := range cols {
		w, i, j, ok := splitColumn(name)
		if !ok {
			continue
		}
		var ch int
		switch w {
		case "w1":
			ch = 0
		case "w3":
			ch = 2
		default:
			continue
		}
		want := p.Target[ch][(i-1)*16+j-1]
		if math.Abs(row[k]-want) > 1e-12 {
			t.Errorf("%s = %.15g, generator %.15g", name, row[k], want)
		}
		checked++
	}
	if checked != 2*256 {
		t.Fatalf("checked %d pixels, want 512 (columns %v…)", checked, cols[:min(5, len(cols))])
	}
}

// splitColumn splits a Stan column name such as "w1.3.4" into its base
// and its two indices.
func splitColumn(name string) (base string, i, j int, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	i, err1 := strconv.Atoi(parts[1])
	j, err2 := strconv.Atoi(parts[2])
	return parts[0], i, j, err1 == nil && err2 == nil
}

// BenchmarkGradient measures one gradient (one leapfrog step) of each
// shipped model at its test point.
func BenchmarkGradient(b *testing.B) {
	for _, c := range modelCases(b) {
		b.Run(c.name, func(b *testing.B) {
			d, err := modeltest.Bind(b, c.model, "", c.data, c.sets...).NewDensity()
			if err != nil {
				b.Fatal(err)
			}
			grad := make([]float64, len(c.theta))
			for b.Loop() {
				if _, err := d.LogDensityGrad(c.theta, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGradientDraws measures the gradient where samplers evaluate it:
// at unconstrained points taken from real runs of the paper's
// configuration (testdata/draws_*.csv: every 40th iteration, warmup and
// sampling, of each chain), reported per gradient. The single point of
// BenchmarkGradient sits at the truth, where the Sinkhorn problems absorb
// their kernels least often.
func BenchmarkGradientDraws(b *testing.B) {
	for _, c := range []struct{ name, model, data, set, draws string }{
		{"B", "../expB/expB.shm", "../expB/data/data.csv", "lambda=2.4837", "testdata/draws_expB.csv"},
		{"C-sinkhorn", "../expC/expC.shm", "../expC/data/data.csv", "lambda=1", "testdata/draws_expC.csv"},
	} {
		b.Run(c.name, func(b *testing.B) {
			d, err := modeltest.Bind(b, c.model, "", []string{c.data}, c.set).NewDensity()
			if err != nil {
				b.Fatal(err)
			}
			points := readDraws(b, c.draws, d.Dim())
			grad := make([]float64, d.Dim())
			for b.Loop() {
				for _, theta := range points {
					if _, err := d.LogDensityGrad(theta, grad); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(points)), "ns/grad")
		})
	}
}

// readDraws returns the first dim columns of each row of a file of
// unconstrained points (comment lines, a header, numeric rows: a Stan CSV
// file's layout).
func readDraws(tb testing.TB, path string, dim int) [][]float64 {
	tb.Helper()
	f, err := stancsv.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if len(f.Columns) < dim || len(f.Draws) == 0 {
		tb.Fatalf("%s: %d columns and %d rows, want at least %d columns", path, len(f.Columns), len(f.Draws), dim)
	}
	points := make([][]float64, len(f.Draws))
	for k, row := range f.Draws {
		points[k] = row[:dim]
	}
	return points
}
