package main

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPlotCommand samples a small model twice and draws every kind of
// figure from the files: the file is written where --out says (PNG that
// decodes, or SVG), dens overlays the two runs, and bad input is refused.
func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	var runs [2][]string
	for i, seed := range []string{"1", "2"} {
		out := filepath.Join(dir, "run"+seed)
		if _, stderr, code := runCmd(t, "sample", model, "--seed", seed, "--warmup", "100", "--samples", "100", "--output", out, "--refresh", "0"); code != 0 {
			t.Fatalf("sample: %s", stderr)
		}
		runs[i], _ = filepath.Glob(filepath.Join(out, "op-*.csv"))
	}
	for _, kind := range []string{"trace", "rank", "pairs", "energy"} {
		out := filepath.Join(dir, kind+".png")
		stdout, stderr, code := runCmd(t, append([]string{"plot", kind, "--out", out}, runs[0]...)...)
		if code != 0 || strings.TrimSpace(stdout) != out {
			t.Fatalf("plot %s: exit %d, stdout %q, stderr %q", kind, code, stdout, stderr)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(f)
		f.Close()
		if err != nil {
			t.Errorf("plot %s: %v", kind, err)
		}
	}
	svg := filepath.Join(dir, "dens.svg")
	args := append(append([]string{"plot", "dens", "--vars", "mu", "--out", svg}, runs[0]...), runs[1]...)
	if _, stderr, code := runCmd(t, args...); code != 0 {
		t.Fatalf("plot dens: %s", stderr)
	}
	text, _ := os.ReadFile(svg)
	if !strings.Contains(string(text), "run1") || !strings.Contains(string(text), "run2") {
		t.Errorf("the density overlay does not label both runs")
	}
	// A run with a vector of 13 and one of 30 elements: too many for
	// one pairs plot, and together for any figure.
	var header, row []string
	header, row = append(header, "lp__"), append(row, "-1")
	for _, v := range []struct {
		name string
		n    int
	}{{"th", 13}, {"u", 30}} {
		for i := range v.n {
			header, row = append(header, fmt.Sprintf("%s.%d", v.name, i+1)), append(row, strconv.Itoa(i))
		}
	}
	wide := writeFile(t, dir, "wide-1.csv", strings.Join(header, ",")+"\n"+strings.Join(row, ",")+"\n"+strings.Join(row, ",")+"\n")
	chainAsPNG := filepath.Join(dir, "chain.png") // a chain file named as a figure
	if b, err := os.ReadFile(runs[0][0]); err != nil || os.WriteFile(chainAsPNG, b, 0o644) != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plot", "violin", runs[0][0]}, 2, `shm plot: unknown kind of figure "violin" (the kinds: trace, rank`},
		{[]string{"plot", "trcae", runs[0][0]}, 2, `unknown kind of figure "trcae"; did you mean "trace"?`},
		{[]string{"plot", "trace"}, 2, "usage: shm plot"},
		{[]string{"plot", "trace", "--vars", "nu", runs[0][0]}, 1, "no variable nu"},
		{[]string{"plot", "trace", "--out", filepath.Join(dir, "x.gif"), runs[0][0]}, 2, "must end in .png or .svg"},
		{[]string{"plot", "trace", filepath.Join(dir, "missing.csv")}, 1, "no such file"},
		{[]string{"plot", "trace", runs[0][0], writeFile(t, dir, "other-1.csv", "lp__,nu\n-1,2\n")}, 1, "columns different from file 1"},
		{[]string{"plot", "trace", "--width", "NaN", runs[0][0]}, 2, "--width must be a number of inches from 1 to 100"},
		{[]string{"plot", "trace", "--width", "Inf", runs[0][0]}, 2, "--width must be a number of inches from 1 to 100"},
		{[]string{"plot", "trace", "--width", "-5", runs[0][0]}, 2, "--width must be a number of inches from 1 to 100"},
		{[]string{"plot", "trace", "--width", "1e-9", runs[0][0]}, 2, "(0: by the number of panels), got 1e-09"},
		{[]string{"plot", "trace", "--height", "100000", runs[0][0]}, 2, "--height must be a number of inches from 1 to 100"},
		{[]string{"plot", "trace", "--width", "100", "--height", "100", "--out", filepath.Join(dir, "big.png"), runs[0][0]}, 2,
			"a PNG is at most 40 inches a side (3840 pixels at 96 dpi), got 100 × 100: give a smaller --width or --height, or --out FILE.svg"},
		{[]string{"plot", "trace", "--height", "41", "--out", filepath.Join(dir, "tall.png"), runs[0][0]}, 2, "got 9.6 × 41"},
		{[]string{"plot", "pairs", "--vars", "th", wide}, 1, "pairs of 13 variables (th.1, th.2,"},
		{[]string{"plot", "trace", chainAsPNG, "--out", chainAsPNG}, 2, "--out " + chainAsPNG + " is the input " + chainAsPNG + ": the figure would replace it"},
		{[]string{"plot", "trace", "--vars", "th,u", wide}, 1, "th,u selects 43 variables"},
	} {
		_, stderr, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestPlotPPC samples a model with replicated data and draws its
// posterior predictive checks (density overlay and series), and refuses a
// check without data, of a variable the data lack, or without the
// replicates.
func TestPlotPPC(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "rep.shm", `data { int N; vector[N] t; vector[N] y; }
parameters { real mu; }
model { y ~ normal(mu, 1); }
generated quantities {
  vector[N] y_rep;
  vector[N] t_rep = t;
  for (n in 1:N) y_rep[n] = normal_rng(mu, 1);
}
`)
	dataFile := writeFile(t, dir, "data.csv", "t,y\n1,0.1\n2,-0.4\n3,1.2\n4,0.8\n5,0.3\n6,-1.1\n7,0.5\n")
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCmd(t, "sample", model, dataFile, "--warmup", "100", "--samples", "100", "--output", out, "--refresh", "0"); code != 0 {
		t.Fatalf("sample: %s", stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "rep-*.csv"))
	for _, extra := range [][]string{{"--y", "y"}, {"--y", "y", "--series"}, {"--y", "t,y"}} {
		svg := filepath.Join(dir, "ppc.svg")
		args := append(append([]string{"plot", "ppc", "--data", dataFile, "--out", svg}, extra...), files...)
		if _, stderr, code := runCmd(t, args...); code != 0 || stderr != "" {
			t.Fatalf("plot ppc %v: exit %d, %s", extra, code, stderr)
		}
		text, _ := os.ReadFile(svg)
		if !strings.Contains(string(text), "y_rep") || !strings.Contains(string(text), "observed") {
			t.Errorf("plot ppc %v: the figure does not name y_rep and the observed data", extra)
		}
	}
	// Data other than the run's: drawn, with a warning.
	other := writeFile(t, dir, "other.csv", "t,y\n1,5\n2,5\n3,5\n4,5\n5,5\n6,5\n7,5\n")
	_, stderr, code := runCmd(t, append([]string{"plot", "ppc", "--data", other, "--y", "y", "--out", filepath.Join(dir, "o.png")}, files...)...)
	if code != 0 || !strings.Contains(stderr, "warning: --data "+other+" is not the data of the run in "+files[0]) {
		t.Errorf("ppc of other data: exit %d, %q", code, stderr)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--y", "y"}, "needs --data FILE and --y NAME"},
		{[]string{"--data", dataFile, "--y", "z"}, "the data files have no z"},
		{[]string{"--data", dataFile, "--y", "y", "--yrep", "mu_rep"}, "needs the generated quantity mu_rep"},
	} {
		args := append(append([]string{"plot", "ppc", "--out", filepath.Join(dir, "x.png")}, tt.args...), files...)
		_, stderr, code := runCmd(t, args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestReplPlot draws figures of the REPL's last run: the PNG file's path
// is printed and the file decodes, a new file in the temporary folder
// each time (never written through a file or link of a foreseeable
// name: the temporary folder is TMPDIR, where a link to a victim file
// waits at the name an earlier version used); a kind the REPL does not
// know, a plot before any run and one of a run without draws are errors.
func TestReplPlot(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	victim := writeFile(t, t.TempDir(), "victim", "keep")
	if err := os.Symlink(victim, filepath.Join(tmp, fmt.Sprintf("shm-op-trace-%d-1.png", os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if b, _ := os.ReadFile(victim); string(b) != "keep" {
			t.Error("the figure was written through the link")
		}
	}()
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	input := strings.Join([]string{":plot trace", ":sample --chains 2 --warmup 50 --samples 50 --seed 3", ":plot trace mu s", ":plot energy", ":plot violin",
		":sample --chains 1 --warmup 20 --samples 0 --seed 3", ":plot trace"}, "\n")
	stdout, stderr, code := runRepl(t, input, model)
	if code != 1 || !strings.Contains(stderr, "no run yet") || !strings.Contains(stderr, "usage: :plot") || !strings.Contains(stderr, "has no draws to plot") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	var paths []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasSuffix(line, ".png") {
			paths = append(paths, line)
		}
	}
	if len(paths) != 2 || paths[0] == paths[1] || filepath.Dir(paths[0]) != tmp {
		t.Fatalf("figure paths %v in\n%s", paths, stdout)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(f)
		f.Close()
		os.Remove(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestInlineImages checks the terminal detection (never assumed) and the
// escape sequences of kitty (chunks of at most 4096 base64 bytes) and
// iTerm2.
func TestInlineImages(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tt := range []struct {
		env  func(string) string
		want imageProtocol
	}{
		{env(), noImages}, {env("TERM", "xterm-256color"), noImages}, {env("KITTY_WINDOW_ID", "1"), kittyImages},
		{env("TERM", "xterm-kitty"), kittyImages}, {env("TERM_PROGRAM", "iTerm.app"), itermImages},
	} {
		if got := detectImages(tt.env); got != tt.want {
			t.Errorf("detectImages = %v, want %v", got, tt.want)
		}
	}
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 2000) // 8000 bytes: 10668 in base64
	var b bytes.Buffer
	if err := writeInlineImage(&b, kittyImages, img); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "\x1b_Gf=100,a=T,m=1;") || strings.Count(out, "\x1b_G") != 3 || !strings.Contains(out, "\x1b_Gm=0;") {
		t.Errorf("kitty sequence %q...", out[:min(40, len(out))])
	}
	b.Reset()
	if err := writeInlineImage(&b, itermImages, img); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "\x1b]1337;File=inline=1;size=8000:") {
		t.Errorf("iTerm2 sequence %q...", b.String()[:40])
	}
	b.Reset()
	if err := writeInlineImage(&b, noImages, img); err != nil || b.Len() != 0 {
		t.Errorf("no protocol wrote %d bytes", b.Len())
	}
}

// TestPlotLocationErrors checks the messages of shm plot location.
func TestPlotLocationErrors(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "m-1.csv")
	if err := os.WriteFile(csv, []byte("lp__,dx,dy\n-1,0.5,0.2\n-1,0.4,0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dataFile := writeFile(t, dir, "d.json", `{"img": [[1, 2, 3], [4, 5, 6]], "v": [1, 2]}`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--vars", "dx,dy"}, "needs --data FILE --image NAME --vars X,Y --at COLUMN,ROW"},
		{[]string{"--data", dataFile, "--image", "img", "--vars", "dx,dy", "--at", "a,b"}, "--at a,b: want COLUMN,ROW"},
		{[]string{"--data", dataFile, "--image", "img", "--vars", "dx,dy", "--at", "NaN,1"}, "--at NaN,1: want COLUMN,ROW, two finite numbers"},
		{[]string{"--data", dataFile, "--image", "img", "--vars", "dx,dy", "--at", "1,inf"}, "--at 1,inf: want COLUMN,ROW, two finite numbers"},
		{[]string{"--data", dataFile, "--image", "pic", "--vars", "dx,dy", "--at", "1,1"}, "the data files have no pic"},
		{[]string{"--data", dataFile, "--image", "v", "--vars", "dx,dy", "--at", "1,1"}, "want a matrix or an array of matrices"},
	} {
		args := append(append([]string{"plot", "location", "--out", filepath.Join(dir, "x.png")}, tt.args...), csv)
		_, stderr, code := runCmd(t, args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
	args := []string{"plot", "location", "--data", dataFile, "--image", "img", "--vars", "dx,dy", "--at", "2,1", "--out", filepath.Join(dir, "ok.svg"), csv}
	if _, stderr, code := runCmd(t, args...); code != 0 {
		t.Errorf("a valid location figure: %s", stderr)
	}
}

// TestNoDrawsAndNonFinite: plot and summary refuse files with no draws
// (a run of --samples 0, a header only) instead of drawing empty axes or
// a table of NaN, and say which columns have NaN or infinite draws
// (which a figure leaves out and a summary cannot describe).
func TestNoDrawsAndNonFinite(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.csv", "lp__,mu,sigma\n")
	nonFinite := writeFile(t, dir, "nan.csv", "lp__,mu,sigma\n-1,0.5,1\n-2,nan,inf\n-1.5,0.3,2\n-1.2,-inf,1\n")
	for _, kind := range []string{"trace", "rank", "dens", "pairs", "energy"} {
		_, stderr, code := runCmd(t, "plot", kind, empty, "--out", filepath.Join(dir, kind+".png"))
		if want := "shm: " + empty + " has no draws to plot (its chains saved no sampling iterations)\n"; code != 1 || stderr != want {
			t.Errorf("plot %s of no draws: exit %d, %q, want %q", kind, code, stderr, want)
		}
		if _, err := os.Stat(filepath.Join(dir, kind+".png")); err == nil {
			t.Errorf("plot %s of no draws wrote a figure", kind)
		}
	}
	if _, stderr, code := runCmd(t, "summary", empty); code != 1 || !strings.Contains(stderr, "no draws to summarize") {
		t.Errorf("summary of no draws: exit %d, %q", code, stderr)
	}

	_, stderr, code := runCmd(t, "plot", "trace", nonFinite, "--out", filepath.Join(dir, "nan.png"))
	if want := "warning: " + nonFinite + ": draws that are NaN or infinite in mu (2 of 4 draws), sigma (1 of 4 draws) are left out of the figure\n"; code != 0 || stderr != want {
		t.Errorf("plot of non-finite draws: exit %d, %q, want %q", code, stderr, want)
	}
	stdout, _, code := runCmd(t, "summary", nonFinite)
	if want := "Warning: draws that are NaN or infinite in mu (2 of 4 draws), sigma (1 of 4 draws): the statistics of those columns are not meaningful."; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("summary of non-finite draws: exit %d, %q", code, stdout)
	}
}

// TestPlotKindFlags: a flag of some kinds given to another is refused
// (the figure would silently ignore it), and --x needs --series.
func TestPlotKindFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dens", "--data", "d.csv"}, "shm plot: --data applies to plot ppc, location, not to plot dens\n"},
		{[]string{"energy", "--vars", "mu"}, "shm plot: --vars applies to plot trace, rank, dens, pairs, location, not to plot energy\n"},
		{[]string{"ppc", "--vars", "mu"}, "shm plot: --vars applies to plot trace, rank, dens, pairs, location, not to plot ppc\n"},
		{[]string{"trace", "--series"}, "shm plot: --series applies to plot ppc, not to plot trace\n"},
		{[]string{"rank", "--warmup"}, "shm plot: --warmup applies to plot trace, not to plot rank\n"},
		{[]string{"ppc", "--image", "img"}, "shm plot: --image applies to plot location, not to plot ppc\n"},
		{[]string{"ppc", "--data", "d.csv", "--y", "y", "--x", "t"}, "shm plot: --x is the covariate of ppc --series: give --series too\n"},
	} {
		args := append([]string{"plot", tc.args[0], "x.csv"}, tc.args[1:]...)
		if _, stderr, code := runCmd(t, args...); code != 2 || stderr != tc.want {
			t.Errorf("%v: exit %d, %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPlotPosteriors: chains of different posteriors (another --set
// value) in one folder are two runs in a density overlay, labelled by
// what differs; any other figure refuses to draw them as one run unless
// --mixed, which warns.
func TestPlotPosteriors(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "data {\n  real s;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, s);\n}\n")
	both := filepath.Join(dir, "both")
	if err := os.Mkdir(both, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, s := range []string{"1", "2"} {
		out := filepath.Join(dir, "s"+s)
		if _, stderr, code := runCmd(t, "sample", model, "--set", "s="+s, "--chains", "1", "--warmup", "30", "--samples", "30",
			"--seed", "1", "--output", out, "--refresh", "0"); code != 0 {
			t.Fatalf("sample: %s", stderr)
		}
		text, err := os.ReadFile(filepath.Join(out, "m-1.csv"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, writeFile(t, both, "m-s"+s+".csv", string(text)))
	}
	svg := filepath.Join(dir, "dens.svg")
	if _, stderr, code := runCmd(t, append([]string{"plot", "dens", "--out", svg}, files...)...); code != 0 {
		t.Fatalf("plot dens: %s", stderr)
	}
	text, _ := os.ReadFile(svg)
	for _, label := range []string{"m (data.set = s=1)", "m (data.set = s=2)"} {
		if !strings.Contains(string(text), label) {
			t.Errorf("the density overlay has no run labelled %q", label)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trace"}, 1, "file 2 is of another posterior than file 1: data.set = s=2, and s=1 (the --set values differ)"},
		{[]string{"pairs"}, 1, "--mixed pools them anyway"},
		{[]string{"trace", "--mixed"}, 0, "warning: file 2 is from another run than file 1: data.set = s=2, and s=1"},
	} {
		args := append(append([]string{"plot"}, tt.args...), "--out", filepath.Join(dir, "f.png"))
		_, stderr, code := runCmd(t, append(args, files...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
