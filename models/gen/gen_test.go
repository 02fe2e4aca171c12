package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/diag"
)

// cifarPath is the shared CIFAR-10 sample, beside the repository.
func cifarPath(t testing.TB) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "cifar10", "images.bin")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared/ must sit beside the repository: %v", err)
	}
	return p
}

// TestGeneratorsDeterministic runs each generator twice with the same
// seed into two folders and compares every file byte for byte; a third
// run with another seed must differ.
func TestGeneratorsDeterministic(t *testing.T) {
	cifar := cifarPath(t)
	for _, exp := range []string{"expB", "expC", "expD", "gandk"} {
		t.Run(exp, func(t *testing.T) {
			gen := func(seed string) map[string][]byte {
				dir := t.TempDir()
				args := []string{exp, "--seed", seed, "--out", dir}
				if exp == "expD" {
					args = append(args, "--cifar", cifar, "--first", "30", "--count", "3")
				}
				if err := run(args, os.Stdout); err != nil {
					t.Fatal(err)
				}
				files := map[string][]byte{}
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					b, err := os.ReadFile(filepath.Join(dir, e.Name()))
					if err != nil {
						t.Fatal(err)
					}
					files[e.Name()] = b
				}
				return files
			}
			a, b, c := gen("7"), gen("7"), gen("8")
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("runs wrote %d and %d files", len(a), len(b))
			}
			differs := false
			for name, content := range a {
				if !bytes.Equal(content, b[name]) {
					t.Errorf("%s differs between two runs with the same seed", name)
				}
				if !bytes.Equal(content, c[name]) {
					differs = true
				}
			}
			if !differs {
				t.Error("seeds 7 and 8 gave identical files")
			}
		})
	}
}

// TestSpiralSizeAndMoments checks Experiment B's size and that the mean
// radius matches E[c] = c0 + kappa pi turns (sd of c over the sample is
// kappa 2 pi turns / sqrt(12); the noise adds a bias of order sigma²/c).
func TestSpiralSizeAndMoments(t *testing.T) {
	s := defaultSpiral
	if s.N != 160 || s.C0 != 0.30 || s.Kappa != 0.15 || s.Sigma != 0.08 || s.Turns != 3 {
		t.Fatalf("settings %+v are not the paper's", s)
	}
	y := spiral(s, 1)
	if len(y[0]) != 160 || len(y[1]) != 160 {
		t.Fatalf("sizes %d, %d, want 160", len(y[0]), len(y[1]))
	}
	var r float64
	for i := range y[0] {
		r += math.Hypot(y[0][i], y[1][i])
	}
	r /= 160
	want := s.C0 + s.Kappa*math.Pi*s.Turns
	se := s.Kappa * 2 * math.Pi * s.Turns / math.Sqrt(12) / math.Sqrt(160)
	if math.Abs(r-want) > 4*se {
		t.Errorf("mean radius %.4f, want %.4f ± %.4f", r, want, 4*se)
	}
}

// TestGandKQuantiles checks the g-and-k draws against the distribution's
// quantile function: the empirical quantiles of a large sample at levels
// p are within four standard errors of Q(p) = A + B (1 + 0.8 tanh(g z /
// 2)) (1 + z²)^k z, z = Φ⁻¹(p) (the standard error of a sample quantile,
// sqrt(p (1 − p) / n) / density, with the density from Q's slope).
func TestGandKQuantiles(t *testing.T) {
	s := defaultGandK
	if s.N != 100 || s.A != 3 || s.B != 1 || s.G != 2 || s.K != 0.5 {
		t.Fatalf("settings %+v are not the classic ones", s)
	}
	if y := gandk(s, 1); len(y) != 100 {
		t.Fatalf("%d values, want 100", len(y))
	}
	s.N = 200000
	y := gandk(s, 3)
	sort.Float64s(y)
	q := func(z float64) float64 {
		return s.A + s.B*(1+0.8*math.Tanh(s.G*z/2))*math.Pow(1+z*z, s.K)*z
	}
	for _, p := range []float64{0.05, 0.25, 0.5, 0.75, 0.95} {
		z := math.Sqrt2 * math.Erfinv(2*p-1)
		const h = 1e-6
		slope := (q(z+h) - q(z-h)) / (2 * h) * math.Sqrt(2*math.Pi) * math.Exp(z*z/2) // dQ/dp
		se := math.Sqrt(p*(1-p)/float64(s.N)) * slope
		got := y[int(p*float64(s.N))]
		if math.Abs(got-q(z)) > 4*se {
			t.Errorf("quantile %g: %.5f, want %.5f ± %.5f", p, got, q(z), 4*se)
		}
	}
}

// TestPulseSizeAndResiduals checks Experiment C's size and that the
// timing and vertical residuals have the paper's scales.
func TestPulseSizeAndResiduals(t *testing.T) {
	s := defaultPulse
	tt, y := pulse(s, 1)
	if len(tt) != s.N || len(y) != s.N || s.N != 128 {
		t.Fatalf("sizes %d, %d, want 128", len(tt), len(y))
	}
	var st, sy float64
	for i := range tt {
		u := float64(i) / float64(s.N-1)
		st += (tt[i] - u) * (tt[i] - u)
		// Residual from the pulse written out directly.
		f := 0 + 1*math.Exp(-0.5*math.Pow((u-0.5)/0.05, 2))
		sy += (y[i] - f) * (y[i] - f)
	}
	st, sy = math.Sqrt(st/float64(s.N)), math.Sqrt(sy/float64(s.N))
	// The sd estimate from 128 draws has relative sd 1/sqrt(256).
	if math.Abs(st/0.05-1) > 4/16.0 {
		t.Errorf("timing jitter sd %.4f, want 0.05", st)
	}
	if math.Abs(sy/0.02-1) > 4/16.0 {
		t.Errorf("vertical noise sd %.4f, want 0.02", sy)
	}
}

// TestTruncNormal checks the offsets' bound and their sd against the
// truncated normal's closed form: var = sd² (1 − 2 b φ(b) / (2Φ(b) − 1))
// with b = bound / sd.
func TestTruncNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	var s2 float64
	for range n {
		x := truncNormal(rng, 4, 8)
		if math.Abs(x) > 8 {
			t.Fatalf("draw %g outside [-8, 8]", x)
		}
		s2 += x * x
	}
	b := 2.0
	phi := math.Exp(-b*b/2) / math.Sqrt(2*math.Pi)
	Phi := 0.5 * math.Erfc(-b/math.Sqrt2)
	want := 16 * (1 - 2*b*phi/(2*Phi-1))
	if got := s2 / n; math.Abs(got/want-1) > 0.05 {
		t.Errorf("variance %.4f, want %.4f", got, want)
	}
}

// TestBilinearWindow checks the window against hand-computed cases: an
// integer centre shift is an exact crop, a half-pixel shift averages two
// pixels, and pixels outside the image count as 0.
func TestBilinearWindow(t *testing.T) {
	const H, W = 5, 6
	img := make([]float64, H*W)
	for i := range img {
		img[i] = float64(i*i%17) + 1
	}
	at := func(r, c int) float64 { return img[(r-1)*W+c-1] } // 1-based
	// A 2×2 window centred at (2.5, 3.5) covers rows 2..3 and cols 3..4.
	got := bilinearWindow(img, H, W, 2.5, 3.5, 2, 2)
	want := []float64{at(2, 3), at(2, 4), at(3, 3), at(3, 4)}
	if !slices.Equal(got, want) {
		t.Errorf("integer crop %v, want %v", got, want)
	}
	// Shift right by half a pixel: each entry averages two columns.
	got = bilinearWindow(img, H, W, 2.5, 4, 2, 2)
	want = []float64{(at(2, 3) + at(2, 4)) / 2, (at(2, 4) + at(2, 5)) / 2, (at(3, 3) + at(3, 4)) / 2, (at(3, 4) + at(3, 5)) / 2}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("half shift [%d] = %g, want %g", i, got[i], want[i])
		}
	}
	// A 1×1 window at (0.5, 1): between row 0 (outside) and row 1.
	got = bilinearWindow(img, H, W, 0.5, 1, 1, 1)
	if w := at(1, 1) / 2; math.Abs(got[0]-w) > 1e-12 {
		t.Errorf("edge pixel %g, want %g", got[0], w)
	}
}

// TestBlur checks the blur: a constant image stays constant (the kernel
// is renormalized at the edges), and an interior pixel is the weighted
// mean written out by hand.
func TestBlur(t *testing.T) {
	const h, w = 4, 5
	c := slices.Repeat([]float64{3}, h*w)
	for i, v := range blur(c, h, w, 3, 1.5) {
		if math.Abs(v-3) > 1e-12 {
			t.Fatalf("constant image: pixel %d = %g", i, v)
		}
	}
	img := make([]float64, h*w)
	img[1*w+2] = 1 // a single bright pixel at (1, 2), 0-based
	out := blur(img, h, w, 3, 1.5)
	e1, e2 := math.Exp(-1/4.5), math.Exp(-2/4.5)
	norm := 1 + 4*e1 + 4*e2
	for _, c := range []struct {
		i, j int
		want float64
	}{{1, 2, 1 / norm}, {1, 3, e1 / norm}, {2, 3, e2 / norm}, {3, 2, 0}} {
		if got := out[c.i*w+c.j]; math.Abs(got-c.want) > 1e-12 {
			t.Errorf("pixel (%d, %d) = %g, want %g", c.i, c.j, got, c.want)
		}
	}
	// At the corner (0, 0) only 4 kernel pixels are inside.
	img = make([]float64, h*w)
	img[0] = 1
	if got, want := blur(img, h, w, 3, 1.5)[0], 1/(1+2*e1+e2); math.Abs(got-want) > 1e-12 {
		t.Errorf("corner = %g, want %g", got, want)
	}
}

// cifarImages decodes the shared CIFAR-10 sample, returning the file's
// bytes and its images.
func cifarImages(t testing.TB) ([]byte, []rgbImage) {
	t.Helper()
	raw, err := os.ReadFile(cifarPath(t))
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := decodeCIFAR(raw)
	if err != nil {
		t.Fatal(err)
	}
	return raw, imgs
}

// TestDecodeCIFAR checks the decoder on the shared file: 200 records, the
// labels of the first images as listed in labels.csv, values in [0, 1].
func TestDecodeCIFAR(t *testing.T) {
	raw, imgs := cifarImages(t)
	if len(imgs) != 200 {
		t.Fatalf("%d images, want 200", len(imgs))
	}
	// Labels of the first rows of shared/cifar10/labels.csv.
	want := readLabels(t, 5)
	for i, l := range want {
		if imgs[i].Label != l {
			t.Errorf("image %d: label %d, labels.csv says %d", i, imgs[i].Label, l)
		}
	}
	if imgs[0].Pix[0][0] != float64(raw[1])/255 || imgs[0].Pix[2][1023] != float64(raw[cifarRecord-1])/255 {
		t.Errorf("first R pixel %g, want %d/255", imgs[0].Pix[0][0], raw[1])
	}
	if _, err := decodeCIFAR(raw[:100]); err == nil {
		t.Error("a truncated file decoded without error")
	}
}

func readLabels(t *testing.T, n int) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cifarPath(t)), "labels.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))[1:]
	out := make([]int, n)
	for i := range n {
		fields := bytes.Split(lines[i], []byte(","))
		out[i] = int(fields[1][0] - '0')
	}
	return out
}

// TestWindowProblemSizes checks Experiment D's problem: offsets inside
// [-8, 8], 16×16 targets per channel, and independence of an image's
// offset from the other images generated.
func TestWindowProblemSizes(t *testing.T) {
	_, imgs := cifarImages(t)
	for idx := range 64 {
		p := windowProblem(imgs[idx], idx, defaultWindow, 1)
		if math.Abs(p.DX) > 8 || math.Abs(p.DY) > 8 {
			t.Errorf("image %d: offset (%g, %g) outside [-8, 8]", idx, p.DX, p.DY)
		}
		for c := range 3 {
			if len(p.Target[c]) != 256 {
				t.Fatalf("image %d channel %d: %d target pixels, want 256", idx, c, len(p.Target[c]))
			}
		}
		q := windowProblem(imgs[idx], idx, defaultWindow, 1)
		if p.DX != q.DX || p.DY != q.DY {
			t.Errorf("image %d: offsets differ between two calls", idx)
		}
	}
}

// TestMetrics checks the Experiment D metrics on draws with a known
// covariance: the χ²₂ quantiles, the ellipse area and the coverage test.
func TestMetrics(t *testing.T) {
	if got := chi2Quantile2(0.95); math.Abs(got-5.991464547107979) > 1e-12 {
		t.Errorf("chi2(0.95) = %.15g", got)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var d chainDraws
	for range 20000 {
		d.DX = append(d.DX, 1+0.5*rng.NormFloat64())
		d.DY = append(d.DY, -2+2*rng.NormFloat64())
	}
	// Truth at (1, -2 + 2·2.3): Mahalanobis² = 2.3² = 5.29 < 5.99.
	m := metrics(d, 1, -2+2*2.3)
	if !m.Covered95 {
		t.Error("a point at Mahalanobis distance 2.3 is outside the 95% ellipse")
	}
	if m2 := metrics(d, 1, -2+2*2.6); m2.Covered95 {
		t.Error("a point at Mahalanobis distance 2.6 is inside the 95% ellipse")
	}
	wantArea := math.Pi * chi2Quantile2(0.9) * 0.5 * 2
	if math.Abs(m.Area90/wantArea-1) > 0.03 {
		t.Errorf("area %.4f, want %.4f", m.Area90, wantArea)
	}
	if math.Abs(m.Err-2*2.3) > 0.05 {
		t.Errorf("median error %.4f, want about %.4f", m.Err, 2*2.3)
	}
	if got := quantile([]float64{4, 1, 3, 2}, 0.9); math.Abs(got-3.7) > 1e-12 {
		t.Errorf("quantile = %g, want 3.7", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median = %g, want 2.5", got)
	}
}

// TestEvalD runs expD-eval on two hand-written Stan CSV files (one image,
// two chains) and checks the per-chain rows and the summary line.
func TestEvalD(t *testing.T) {
	dir := t.TempDir()
	truth := "index,label,file,dx,dy\n40,3,img040.json,1.5,-2\n"
	if err := os.WriteFile(filepath.Join(dir, "truth.csv"), []byte(truth), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "img040")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	chain := func(name string, dx, dy []float64, div []int, warm, samp float64) {
		var b strings.Builder
		b.WriteString("# model = expD_unbalanced_model\nlp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,dx,dy\n")
		for i := range dx {
			fmt.Fprintf(&b, "-1,0.9,0.5,2,3,%d,1,%g,%g\n", div[i], dx[i], dy[i])
		}
		fmt.Fprintf(&b, "# \n#  Elapsed Time: %g seconds (Warm-up)\n#                %g seconds (Sampling)\n#                %g seconds (Total)\n# \n", warm, samp, warm+samp)
		if err := os.WriteFile(filepath.Join(run, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Chain 1 around the truth, chain 2 far away with one divergence.
	chain("c_1.csv", []float64{1.4, 1.6, 1.5, 1.3, 1.7}, []float64{-1.9, -2.2, -2, -1.8, -2.1}, []int{0, 0, 0, 0, 0}, 10, 5)
	chain("c_2.csv", []float64{7, 7.2, 6.9, 7.1, 6.8}, []float64{3, 3.1, 2.9, 3.2, 2.8}, []int{0, 1, 0, 0, 0}, 20, 10)
	var out strings.Builder
	if err := evalD(filepath.Join(dir, "truth.csv"), []string{run}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 9 {
		t.Fatalf("output:\n%s", out.String())
	}
	if want := "40,1,1.5000,-2.0000,true,0.0000,"; !strings.HasPrefix(lines[1], want) || !strings.HasSuffix(lines[1], ",0,15.0") {
		t.Errorf("chain 1 row %q, want prefix %q and suffix ,0,15.0", lines[1], want)
	}
	farErr := math.Hypot(7-1.5, 3+2)
	if want := fmt.Sprintf("40,2,1.5000,-2.0000,false,%.4f,", farErr); !strings.HasPrefix(lines[2], want) || !strings.HasSuffix(lines[2], ",1,30.0") {
		t.Errorf("chain 2 row %q, want prefix %q and suffix ,1,30.0", lines[2], want)
	}
	// The R-hat block: image 40, 2 chains, max over dx and dy of the
	// classic split R-hat (package diag's, tested there).
	rDX := diag.RhatBasic([][]float64{{1.4, 1.6, 1.5, 1.3, 1.7}, {7, 7.2, 6.9, 7.1, 6.8}})
	rDY := diag.RhatBasic([][]float64{{-1.9, -2.2, -2, -1.8, -2.1}, {3, 3.1, 2.9, 3.2, 2.8}})
	if want := fmt.Sprintf("40,2,%.3f", math.Max(rDX, rDY)); lines[4] != "image,chains,split_rhat_max" || lines[5] != want || !(math.Max(rDX, rDY) > 1.1) {
		t.Errorf("R-hat block %q, %q; want image,chains,split_rhat_max and %q (> 1.1)", lines[4], lines[5], want)
	}
	for _, want := range []string{"chains 2:", "cov2D(0.95) 0.500", fmt.Sprintf("med err %.3f", farErr/2), "err>4 50.0%", "chains with divergences 50.0% (10.00% of draws)", "median 22.5 s, max 30.0 s"} {
		if !strings.Contains(lines[7], want) {
			t.Errorf("summary %q lacks %q", lines[7], want)
		}
	}
	if want := "images with at least 2 chains 1: split R-hat max <= 1.1 for 0.0%"; lines[8] != want {
		t.Errorf("R-hat summary %q, want %q", lines[8], want)
	}
}

// TestSweepD runs expD-sweep on hand-written calibration folders: two
// loss scales, two datasets, from a version that kept only posterior
// means and from one that also keeps medians and R-hat.
func TestSweepD(t *testing.T) {
	plan := `{"param": "lambda", "dataset_truth": [{"dx": 1, "dy": 2}, {"dx": -3, "dy": 0.5}]}`
	folder := func(runs string) string {
		dir := t.TempDir()
		for name, text := range map[string]string{"plan.json": plan, "runs.csv": runs} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	means := folder("lambda,dataset,seed,hpd_covered,hpd_truth,hpd_threshold,ellipse_covered,ellipse_dist2,ellipse_radius2,draws,divergent,seconds,mean_dx,sd_dx,mean_dy,sd_dy\n" +
		"0.5,1,2,true,-1,-2,true,0.1,5.99,256,0,40.1,1.3,0.5,2.4,0.5\n" +
		"0.5,2,3,true,-1,-2,true,0.2,5.99,256,2,41.0,-3,0.5,0.5,0.5\n" +
		"2,1,2,false,-9,-2,false,9.1,5.99,256,0,39.0,6,0.2,2,0.2\n" +
		"2,2,3,true,-1,-2,true,0.3,5.99,256,0,38.2,-3.6,0.2,1.3,0.2\n")
	// The same runs with medians and R-hat.
	medians := folder("lambda,dataset,seed,hpd_covered,hpd_truth,hpd_threshold,ellipse_covered,ellipse_dist2,ellipse_radius2,draws,divergent,seconds,mean_dx,sd_dx,median_dx,rhat_dx,mean_dy,sd_dy,median_dy,rhat_dy\n" +
		"0.5,1,2,true,-1,-2,true,0.1,5.99,256,0,40.1,1.3,0.5,1.5,1.01,2.4,0.5,2,1.02\n" +
		"0.5,2,3,true,-1,-2,true,0.2,5.99,256,2,41.0,-3,0.5,-3.3,1.2,0.5,0.5,0.9,1.0\n" +
		"2,1,2,false,-9,-2,false,9.1,5.99,256,0,39.0,6,0.2,5,1.0,2,0.2,2,1.0\n" +
		"2,2,3,true,-1,-2,true,0.3,5.99,256,0,38.2,-3.6,0.2,-3.6,1.05,1.3,0.2,1.3,nan\n")
	var out strings.Builder
	if err := sweepD([]string{means, medians}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	head := "lambda,runs,cov2D,se,center,med_err,p90_err,err_gt_4_pct,divergent_runs_pct,rhat_ok_pct"
	want := []string{
		means, head,
		// Errors 0.5 and 0: median 0.25, P90 0.45; one run with divergences.
		"0.5,2,1.000,0.000,mean,0.250,0.450,0.0,50.0,NaN",
		// Errors 5 and 1: coverage 1/2 with s.e. 0.354, one run beyond 4.
		"2,2,0.500,0.354,mean,3.000,4.600,50.0,0.0,NaN",
		medians, head,
		// Errors 0.5 and 0.5; R-hat 1.2 fails in one run.
		"0.5,2,1.000,0.000,median,0.500,0.500,0.0,50.0,50.0",
		// Errors 4 and 1 (4 is not beyond 4); R-hat 1.0 passes, a NaN
		// R-hat (a stuck chain) does not.
		"2,2,0.500,0.354,median,2.500,3.700,0.0,0.0,50.0",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if err := sweepD([]string{t.TempDir()}, &out); err == nil {
		t.Error("a folder without plan.json: no error")
	}
}
