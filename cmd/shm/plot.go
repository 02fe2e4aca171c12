package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/plots"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
	"gonum.org/v1/plot/vg"
)

// plotKinds are the figures of "shm plot".
var plotKinds = []string{"trace", "rank", "dens", "pairs", "energy", "ppc", "location"}

// plotKindFlags are the flags that apply to some kinds only, with those
// kinds; the others (--out, --width, --height) apply to every kind.
var plotKindFlags = map[string][]string{
	"vars":   {"trace", "rank", "dens", "pairs", "location"},
	"data":   {"ppc", "location"},
	"y":      {"ppc"},
	"yrep":   {"ppc"},
	"series": {"ppc"},
	"x":      {"ppc"},
	"warmup": {"trace"},
	"image":  {"location"},
	"at":     {"location"},
}

// checkKindFlags refuses a flag given for a kind it does not apply to
// (the figure would silently ignore it).
func checkKindFlags(kind string, set map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if kinds, ok := plotKindFlags[name]; ok && !slices.Contains(kinds, kind) {
			return fmt.Errorf("--%s applies to plot %s, not to plot %s", name, strings.Join(kinds, ", "), kind)
		}
	}
	if set["x"] && !set["series"] {
		return errors.New("--x is the covariate of ppc --series: give --series too")
	}
	return nil
}

// cmdPlot implements "shm plot KIND FILES... [--vars a,b] [--out F]": a
// figure of Stan CSV files (shm's or CmdStan's) written as PNG or SVG (by
// the extension of --out). For dens, the files are grouped into runs by
// posterior and folder, one density per run; other figures draw one run.
func cmdPlot(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plot", stderr)
	vars := fs.String("vars", "", "variables, comma-separated (default: the first parameters)")
	out := fs.String("out", "", "output file, .png or .svg (default: MODEL-KIND.png)")
	width := fs.Float64("width", 0, "width in inches (default: by the number of panels)")
	height := fs.Float64("height", 0, "height in inches (default: by the number of panels)")
	dataFiles := fs.String("data", "", "ppc: the data files, comma-separated")
	yName := fs.String("y", "", "ppc: the observed data variable")
	yrep := fs.String("yrep", "", "ppc: the generated quantity replicating it (default: Y_rep)")
	series := fs.Bool("series", false, "ppc: intervals of the replicates over the index (or --x), for a series")
	xName := fs.String("x", "", "ppc --series: a covariate of the data to draw the intervals over")
	warmup := fs.Bool("warmup", false, "trace: include the warmup draws the files kept (save_warmup)")
	image := fs.String("image", "", "location: the picture, a matrix (or an array of matrices, averaged) of the data")
	at := fs.String("at", "", "location: the pixel column,row from which the two --vars are offsets")
	mixed := fs.Bool("mixed", false, "draw chains of different posteriors (model text, data, --set values, or a seed the posterior depends on) as one run anyway")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	for _, d := range []struct {
		name string
		v    float64
	}{{"width", *width}, {"height", *height}} {
		if d.v != 0 && !(d.v >= minFigureInches && d.v <= maxFigureInches) {
			fmt.Fprintf(stderr, "shm plot: --%s must be a number of inches from %d to %d (0: by the number of panels), got %g\n", d.name, minFigureInches, maxFigureInches, d.v)
			return 2
		}
	}
	if len(pos) > 0 && !slices.Contains(plotKinds, pos[0]) {
		hint := ""
		if near := ir.Closest(pos[0], plotKinds); near != "" {
			hint = fmt.Sprintf("; did you mean %q?", near)
		}
		fmt.Fprintf(stderr, "shm plot: unknown kind of figure %q%s (the kinds: %s)\n", pos[0], hint, strings.Join(plotKinds, ", "))
		return 2
	}
	if len(pos) < 2 {
		fmt.Fprintf(stderr, "usage: shm plot %s FILES... [--vars a,b] [--out file.png|file.svg]\n", strings.Join(plotKinds, "|"))
		return 2
	}
	kind, files := pos[0], pos[1:]
	if err := checkKindFlags(kind, setFlags(fs)); err != nil {
		fmt.Fprintf(stderr, "shm plot: %v\n", err)
		return 2
	}
	given := setFlags(fs)
	var names []string
	if given["vars"] {
		if names, err = splitList("--vars", *vars); err != nil {
			fmt.Fprintf(stderr, "shm plot: %v\n", err)
			return 2
		}
	}
	if given["out"] && *out == "" {
		fmt.Fprintln(stderr, "shm plot: --out is empty: give a file name ending in .png or .svg (default: MODEL-KIND.png)")
		return 2
	}
	for _, l := range []struct{ flag, text string }{{"--y", *yName}, {"--data", *dataFiles}} {
		if given[strings.TrimPrefix(l.flag, "--")] {
			if _, err := splitList(l.flag, l.text); err != nil {
				fmt.Fprintf(stderr, "shm plot: %v\n", err)
				return 2
			}
		}
	}
	// Reading the files, building the figure and rendering it take
	// seconds for large runs: Ctrl-C and SIGTERM abandon them and say so
	// (the write of the finished image is writeAtomic's).
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fail := reportStop(ctx, stderr, "plot")
	runs, err := interruptible(ctx, func() ([]*plots.Run, error) { return plotRuns(files, kind == "dens", *mixed) })
	if err != nil {
		return fail(err)
	}
	for _, r := range runs {
		for _, w := range r.Fit.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		if err := hasDraws(r, kind == "trace" && *warmup); err != nil {
			return report(stderr, err)
		}
		if bad := r.Fit.NonFinite(); len(bad) > 0 {
			fmt.Fprintf(stderr, "warning: %s: draws that are NaN or infinite in %s are left out of the figure\n", r.Label, strings.Join(bad, ", "))
		}
	}
	if (kind == "ppc" || kind == "location") && *dataFiles != "" {
		if w := otherData(files[0], strings.Split(*dataFiles, ",")); w != "" {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	fig, err := interruptible(ctx, func() (*plots.Figure, error) {
		switch kind {
		case "ppc":
			return ppcFigure(runs[0], *dataFiles, *yName, *yrep, *series, *xName)
		case "location":
			return locationFigure(runs[0], *dataFiles, *image, names, *at)
		}
		return runFigure(kind, runs, names, *warmup)
	})
	if err != nil {
		return fail(err)
	}
	path := *out
	if path == "" {
		path = runs[0].Fit.Model + "-" + kind + ".png"
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "png" && format != "svg" {
		fmt.Fprintf(stderr, "shm plot: --out %s: the file must end in .png or .svg\n", path)
		return 2
	}
	inputs := slices.Clone(files)
	if *dataFiles != "" {
		inputs = append(inputs, strings.Split(*dataFiles, ",")...)
	}
	if in, ok := sameFile(path, inputs); ok {
		fmt.Fprintf(stderr, "shm plot: --out %s is the input %s: the figure would replace it; give another file\n", path, in)
		return 2
	}
	w, h := figureSize(fig, *width, *height)
	if format == "png" {
		if err := checkRaster(w, h); err != nil {
			fmt.Fprintf(stderr, "shm plot: %v\n", err)
			return 2
		}
	}
	// Rendered in memory first (the slow part: seconds for a pairs plot
	// of many draws), so that a signal then leaves no temporary file.
	img, err := interruptible(ctx, func() ([]byte, error) {
		var img bytes.Buffer
		if err := plots.Render(fig, &img, format, w, h); err != nil {
			return nil, fmt.Errorf("--out %s: %w", path, err)
		}
		return img.Bytes(), nil
	})
	if err != nil {
		return fail(err)
	}
	if err := writeAtomic("--out", path, func(out io.Writer) error {
		_, err := out.Write(img)
		return err
	}); err != nil {
		return report(stderr, err)
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// splitList splits the comma-separated list of a flag (--vars
// "mu,y_rep[1,2]") at the commas outside brackets (at every comma for a
// list of files, --data), trimming each name; an empty name or
// unbalanced brackets are an error naming the flag.
func splitList(flag, s string) ([]string, error) {
	parts := strings.Split(s, ",")
	if flag != "--data" {
		if strings.Count(s, "[") != strings.Count(s, "]") {
			return nil, fmt.Errorf("%s %q: unbalanced brackets", flag, s)
		}
		parts = splitTopLevel(s)
	}
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			if len(parts) == 1 {
				return nil, fmt.Errorf("%s is empty: give a comma-separated list of names", flag)
			}
			return nil, fmt.Errorf("%s %q: name %d of %d is empty (names are separated by single commas)", flag, s, i+1, len(parts))
		}
	}
	return parts, nil
}

// runFigure builds a figure of the draws alone (every kind but ppc).
func runFigure(kind string, runs []*plots.Run, names []string, warmup bool) (*plots.Figure, error) {
	switch kind {
	case "trace":
		return plots.Trace(runs[0], names, warmup)
	case "rank":
		return plots.Rank(runs[0], names)
	case "dens":
		return plots.Dens(runs, names)
	case "pairs":
		return plots.Pairs(runs[0], names)
	case "energy":
		return plots.Energy(runs[0])
	}
	return nil, fmt.Errorf("unknown figure %s", kind)
}

// locationFigure draws the posterior of a position (two offsets, in
// pixels from the pixel at) on a picture of the data files.
func locationFigure(run *plots.Run, files, image string, vars []string, at string) (*plots.Figure, error) {
	if files == "" || image == "" || len(vars) != 2 || at == "" {
		return nil, fmt.Errorf("shm plot location needs --data FILE --image NAME --vars X,Y --at COLUMN,ROW")
	}
	var origin [2]float64
	if _, err := fmt.Sscanf(strings.ReplaceAll(at, " ", ""), "%g,%g", &origin[0], &origin[1]); err != nil {
		return nil, fmt.Errorf("plot location: --at %s: want COLUMN,ROW", at)
	}
	if math.IsNaN(origin[0]+origin[1]) || math.IsInf(origin[0]+origin[1], 0) {
		return nil, fmt.Errorf("plot location: --at %s: want COLUMN,ROW, two finite numbers", at)
	}
	set, err := data.Load(strings.Split(files, ","), nil)
	if err != nil {
		return nil, err
	}
	v, ok := set.Lookup(image)
	if !ok {
		return nil, fmt.Errorf("plot location: the data files have no %s (they have %s)", image, strings.Join(set.Names(), ", "))
	}
	dims := v.Dims
	if len(dims) != 2 && len(dims) != 3 {
		return nil, fmt.Errorf("plot location: %s has sizes %v, want a matrix or an array of matrices", image, dims)
	}
	pic := &plots.Picture{Name: image, Rows: dims[len(dims)-2], Cols: dims[len(dims)-1]}
	layers := 1
	if len(dims) == 3 {
		layers = dims[0]
	}
	pic.Z = make([]float64, pic.Rows*pic.Cols)
	for k := range layers {
		for i := range pic.Z {
			pic.Z[i] += v.Data[k*len(pic.Z)+i] / float64(layers)
		}
	}
	return plots.Location(run, pic, [2]string{vars[0], vars[1]}, origin)
}

// ppcFigure is the posterior predictive check of the data variable y,
// read from the data files, against the generated quantity yrep.
func ppcFigure(run *plots.Run, files, y, yrep string, series bool, x string) (*plots.Figure, error) {
	if files == "" || y == "" {
		return nil, fmt.Errorf("shm plot ppc needs --data FILE and --y NAME (the observed data)")
	}
	set, err := data.Load(strings.Split(files, ","), nil)
	if err != nil {
		return nil, err
	}
	// One variable, or two vectors ("t,y") as points in the plane.
	names := splitTopLevel(y)
	if len(names) > 2 {
		return nil, fmt.Errorf("plot ppc: --y takes one variable or two vectors, got %s", y)
	}
	var cols []*data.Value
	for _, name := range names {
		v, ok := set.Lookup(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("plot ppc: the data files have no %s (they have %s)", name, strings.Join(set.Names(), ", "))
		}
		cols = append(cols, v)
	}
	obs := &plots.Observed{Name: y, Dims: cols[0].Dims, Data: cols[0].Data}
	if len(obs.Dims) == 0 {
		obs.Dims = []int{len(obs.Data)}
	}
	if len(cols) == 2 {
		a, b := cols[0].Data, cols[1].Data
		if len(a) != len(b) || len(cols[0].Dims) > 1 || len(cols[1].Dims) > 1 {
			return nil, fmt.Errorf("plot ppc: %s must be two vectors of one length", y)
		}
		obs = &plots.Observed{Name: "(" + y + ")", Dims: []int{len(a), 2}, Axes: [2]string{names[0], names[1]}}
		for i := range a {
			obs.Data = append(obs.Data, a[i], b[i])
		}
	}
	if yrep == "" {
		var reps []string
		for _, name := range names {
			reps = append(reps, plots.DefaultReplicate(name))
		}
		yrep = strings.Join(reps, ",")
	}
	if series {
		var cov *plots.Observed
		if x != "" {
			v, ok := set.Lookup(x)
			if !ok {
				return nil, fmt.Errorf("plot ppc: the data files have no %s (they have %s)", x, strings.Join(set.Names(), ", "))
			}
			cov = &plots.Observed{Name: x, Dims: v.Dims, Data: v.Data}
		}
		return plots.PPCSeries(run, obs, yrep, cov)
	}
	return plots.PPC(run, obs, yrep)
}

// plotRuns reads the files: one run, or with byRun one run per group of
// chains of one posterior (model, folder, and the model text, data and
// --set values their headers record), in the order of the files. Chains of
// different posteriors in one run are refused unless mixed.
func plotRuns(files []string, byRun, mixed bool) ([]*plots.Run, error) {
	gather := stancsv.ToFit
	if mixed {
		gather = stancsv.ToMixedFit
	}
	fit := func(files []string, read []*stancsv.File) (*diag.Fit, error) {
		fit, err := gather(read)
		if err != nil {
			return nil, mixedHint(fmt.Errorf("%w (files %s)", err, strings.Join(files, ", ")))
		}
		return fit, nil
	}
	read, err := stancsv.ReadFiles(files...)
	if err != nil {
		return nil, err
	}
	if !byRun {
		fit, err := fit(files, read)
		if err != nil {
			return nil, err
		}
		label := describeFiles(files)
		if fit.Model != "" {
			label = fit.Model + " (" + label + ")"
		}
		return []*plots.Run{{Label: label, Fit: fit}}, nil
	}
	var groups []*csvGroup
	find := map[string]*csvGroup{}
	for i, p := range files {
		g := &csvGroup{model: read[i].Config["model"], dir: filepath.Dir(p)}
		if !mixed {
			g.posterior = read[i].Posterior()
		}
		key := strings.Join(append([]string{g.model, g.dir}, g.posterior...), "\x00")
		if find[key] == nil {
			find[key] = g
			groups = append(groups, g)
		}
		find[key].files = append(find[key].files, p)
		find[key].read = append(find[key].read, read[i])
	}
	var runs []*plots.Run
	for _, g := range groups {
		fit, err := fit(g.files, g.read)
		if err != nil {
			return nil, err
		}
		runs = append(runs, &plots.Run{Label: g.label(groups), Fit: fit})
	}
	return runs, nil
}

// csvGroup is the files of one run: the chains of a posterior in a folder.
type csvGroup struct {
	model, dir string
	posterior  []string // stancsv.File.Posterior
	files      []string
	read       []*stancsv.File
}

// label names the group in a legend among groups: the model's name, then
// what tells it from the other groups of that name (the folder, the
// header's entries on model text, data and --set values that differ).
func (g *csvGroup) label(groups []*csvGroup) string {
	if g.model == "" {
		return describeFiles(g.files)
	}
	var parts []string
	addDir := false
	differs := map[string]bool{}
	for _, o := range groups {
		if o == g || o.model != g.model {
			continue
		}
		if o.dir != g.dir {
			addDir = true
			continue
		}
		for _, p := range g.posterior {
			if !slices.Contains(o.posterior, p) {
				differs[p] = true
			}
		}
	}
	if addDir {
		parts = append(parts, g.dir)
	}
	for _, p := range g.posterior {
		if differs[p] {
			parts = append(parts, shortDigest(p))
		}
	}
	if len(parts) == 0 {
		return g.model
	}
	return g.model + " (" + strings.Join(parts, ", ") + ")"
}

// shortDigest shortens the digest of a "key = value" header entry whose
// key ends in sha256 to its first 12 hexadecimal digits.
func shortDigest(entry string) string {
	key, value, _ := strings.Cut(entry, " = ")
	if strings.HasSuffix(key, "sha256") && len(value) > 12 {
		return key + " = " + value[:12]
	}
	return entry
}

// describeFiles names files for a title: "out/A, 4 files" or the file.
func describeFiles(files []string) string {
	if len(files) == 1 {
		return files[0]
	}
	dir := filepath.Dir(files[0])
	for _, f := range files[1:] {
		if filepath.Dir(f) != dir {
			return fmt.Sprintf("%d files", len(files))
		}
	}
	return fmt.Sprintf("%s, %d files", dir, len(files))
}

// minFigureInches and maxFigureInches bound --width and --height;
// maxPNGInches bounds them for a PNG: an inch is plots.PNGDPI (96) pixels,
// and rendering holds the image about rasterCopies times over (40 × 40
// inches: 3 840 pixels a side, 59 MB an image). Beyond it, the copies of
// the image by the drawing library cannot be stopped within a second (a
// 100 × 100 inch image, 370 MB, took 4 s to stop after Ctrl-C).
const (
	minFigureInches = 1
	maxFigureInches = 100
	maxPNGInches    = 40
	rasterCopies    = 4
)

// checkRaster refuses a PNG of w × h whose sides exceed maxPNGInches, or
// whose rendering would need more than half of the memory the process
// may use.
func checkRaster(w, h vg.Length) error {
	wi, hi := float64(w/vg.Inch), float64(h/vg.Inch)
	if max(wi, hi) > maxPNGInches {
		return fmt.Errorf("a PNG is at most %d inches a side (%d pixels at %d dpi), got %.4g × %.4g: give a smaller --width or --height, or --out FILE.svg (up to %d inches)",
			maxPNGInches, maxPNGInches*plots.PNGDPI, plots.PNGDPI, wi, hi, maxFigureInches)
	}
	pixels := math.Ceil(wi*plots.PNGDPI) * math.Ceil(hi*plots.PNGDPI)
	// Four bytes a pixel: half a float64.
	if n, over := sysmem.Exceeds(int(math.Ceil(rasterCopies * pixels / 2))); over {
		return fmt.Errorf("a PNG of %.4g × %.4g inches (%.0f pixels) needs %s to render, %s: give a smaller --width or --height, or --out FILE.svg",
			wi, hi, pixels, sysmem.Bytes(8*n), sysmem.Beyond())
	}
	return nil
}

// figureSize is the size of a figure in inches: about 3.2 × 2.4 per
// panel, at least 5 × 3.4, unless given.

func figureSize(f *plots.Figure, width, height float64) (vg.Length, vg.Length) {
	cols := max(f.Cols, 1)
	rows := (len(f.Panels) + cols - 1) / cols
	if width <= 0 {
		width = min(max(3.2*float64(cols), 5), 14)
	}
	if height <= 0 {
		height = min(max(2.4*float64(rows)+0.4, 3.4), 14)
	}
	return vg.Length(width) * vg.Inch, vg.Length(height) * vg.Inch
}

// hasDraws refuses a run with no draws to plot (a run of --samples 0, or
// a file with a header only): its figure would be empty axes. With
// warmup (a trace of the saved warmup), warmup draws count.
func hasDraws(r *plots.Run, warmup bool) error {
	for _, ch := range r.Fit.Chains {
		if len(ch.Draws) > 0 || (warmup && len(ch.WarmupDraws) > 0) {
			return nil
		}
	}
	return fmt.Errorf("%s has no draws to plot (its chains saved no sampling iterations)", r.Label)
}

// otherData says when the data files given to a figure are not those the
// run of the chain file csv saw (its header's data.sha256), or "".
func otherData(csv string, files []string) string {
	f, err := stancsv.ReadFile(csv)
	if err != nil {
		return ""
	}
	want := f.Config["data.sha256"]
	got, err := dataDigest(files)
	if want == "" || err != nil || got == want {
		return ""
	}
	return fmt.Sprintf("--data %s is not the data of the run in %s (its header's data.sha256 differs): the figure compares the draws with other data", strings.Join(files, ","), csv)
}
