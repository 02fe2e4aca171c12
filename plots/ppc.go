package plots

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/shmlang/shm/runtime/diag"
	"gonum.org/v1/gonum/stat"
)

// ppcDraws is the number of replicated data sets a density overlay draws
// over the band of their densities.
const ppcDraws = 20

// Observed is the observed data of a posterior predictive check: values
// with their sizes ([N] for a vector, [N, 2] for points in the plane).
type Observed struct {
	Name string
	Dims []int
	Data []float64
	// Axes names the two coordinates of points in the plane (default:
	// NAME[, 1] and NAME[, 2]).
	Axes [2]string
}

// replicates returns the draws of the generated quantity yrep as rows of
// len(y) values each, in the observed data's row-major order. yrep may
// name two vectors ("t_rep,y_rep") replicating the two columns of points
// in the plane.
func (r *Run) replicates(yrep string, y *Observed) ([][]float64, error) {
	var idx []int
	parts := strings.Split(yrep, ",")
	for _, name := range parts {
		names, ix, err := r.columns([]string{name})
		if err != nil {
			return nil, fmt.Errorf("plots: the posterior predictive check needs the generated quantity %s: %w", name, err)
		}
		idx = append(idx, rowMajor(names, ix)...)
	}
	if len(parts) == 2 {
		// Interleave the two columns: point i is (a_i, b_i).
		n := len(idx) / 2
		inter := make([]int, 0, len(idx))
		for i := range n {
			inter = append(inter, idx[i], idx[n+i])
		}
		idx = inter
	}
	if len(idx) != len(y.Data) {
		return nil, fmt.Errorf("plots: %s has %d elements per draw, the observed %s %d", yrep, len(idx), y.Name, len(y.Data))
	}
	var out [][]float64
	for c := range r.Fit.Chains {
		for _, row := range r.Fit.Chains[c].Draws {
			rep := make([]float64, len(idx))
			for k, j := range idx {
				rep[k] = row[j]
			}
			out = append(out, rep)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("plots: %s has no draws", r.Label)
	}
	return out, nil
}

// rowMajor orders the element columns of one variable (Stan CSV writes a
// matrix column by column: y.1.1, y.2.1, ..., y.1.2, ...) by their
// indices in row-major order, the order of the data.
func rowMajor(names []string, idx []int) []int {
	key := func(name string) []int {
		var out []int
		for _, part := range strings.Split(name, ".")[1:] {
			n, err := strconv.Atoi(part)
			if err != nil {
				return nil
			}
			out = append(out, n)
		}
		return out
	}
	order := make([]int, len(idx))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slices.Compare(key(names[order[a]]), key(names[order[b]])) < 0 })
	out := make([]int, len(idx))
	for k, i := range order {
		out[k] = idx[i]
	}
	return out
}

// thin picks at most n of the draws, evenly spaced.
func thin(draws [][]float64, n int) [][]float64 {
	if len(draws) <= n {
		return draws
	}
	out := make([][]float64, n)
	for k := range out {
		out[k] = draws[k*len(draws)/n]
	}
	return out
}

// PPC is the posterior predictive check of observed data y against the
// generated quantity yrep (the same shape, one replicate per draw). For
// data on a line (dims [N]) it draws the 90% band of the replicated data
// sets' densities, 20 of them, and the observed density; for points in the plane (dims [N, 2]) it
// shows replicated point clouds beside the observed points; for an image
// (dims [H, W]) the observed image, the replicates' mean and two
// replicated images.
func PPC(r *Run, y *Observed, yrep string) (*Figure, error) {
	reps, err := r.replicates(yrep, y)
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("posterior predictive check: %s (%s)", y.Name, r.Label)
	switch {
	case len(y.Dims) == 1:
		pn := &Panel{Title: y.Name + " and " + yrep, XLabel: y.Name, YLabel: "density"}
		pn.Series = append(pn.Series, densityBand(reps, yrep))
		for k, rep := range thin(reps, ppcDraws) {
			gx, gy := kde(rep, 128)
			label := ""
			if k == 0 {
				label = yrep + " (" + fmt.Sprint(min(len(reps), ppcDraws)) + " draws)"
			}
			pn.Series = append(pn.Series, Series{Label: label, Kind: Line, X: gx, Y: gy, Color: 4})
		}
		gx, gy := kde(y.Data, 256)
		pn.Series = append(pn.Series, Series{Label: "observed " + y.Name, Kind: Line, X: gx, Y: gy, Color: 6})
		return &Figure{Title: title, Cols: 1, Panels: []*Panel{pn}}, nil
	case len(y.Dims) == 2 && y.Dims[1] == 2:
		// Four replicated clouds beside the observed one, in panels.
		f := &Figure{Title: title, Cols: 3}
		cloud := func(data []float64) (x, yy []float64) {
			for i := 0; i+1 < len(data); i += 2 {
				x, yy = append(x, data[i]), append(yy, data[i+1])
			}
			return
		}
		xl, yl := y.Axes[0], y.Axes[1]
		if xl == "" || yl == "" {
			xl, yl = y.Name+"[, 1]", y.Name+"[, 2]"
		}
		// The observed cloud with a replicated one overlaid, then more
		// replicated clouds alone.
		ox, oy := cloud(y.Data)
		some := thin(reps, 5)
		rx, ry := cloud(some[0])
		f.Panels = append(f.Panels, &Panel{Title: "observed " + y.Name + " and a replicate", XLabel: xl, YLabel: yl,
			Series: []Series{{Label: yrep, Kind: Points, X: rx, Y: ry, Color: 4}, {Label: "observed", Kind: Points, X: ox, Y: oy, Color: 6}}})
		for k, rep := range some {
			rx, ry := cloud(rep)
			f.Panels = append(f.Panels, &Panel{Title: fmt.Sprintf("%s, draw %d", yrep, k+1), XLabel: xl, YLabel: yl,
				Series: []Series{{Kind: Points, X: rx, Y: ry, Color: 0}}})
		}
		return f, nil
	case len(y.Dims) == 2:
		return ppcImages(y, yrep, reps, title), nil
	}
	return nil, fmt.Errorf("plots: no posterior predictive check for %s of sizes %v (a vector, points in the plane [N, 2], or an image [H, W])", y.Name, y.Dims)
}

// ppcImages shows an image-valued check: the observed image, the mean of
// the replicates and two replicated images, on one gray scale (the
// observed range).
func ppcImages(y *Observed, yrep string, reps [][]float64, title string) *Figure {
	h, w := y.Dims[0], y.Dims[1]
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range y.Data {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	img := func(name string, z []float64) *Panel {
		return &Panel{Title: name, Series: []Series{{Kind: Image, Z: z, Rows: h, Cols: w, Lo: lo, Hi: hi}}}
	}
	mean := make([]float64, len(y.Data))
	for _, rep := range reps {
		for i, v := range rep {
			mean[i] += v / float64(len(reps))
		}
	}
	f := &Figure{Title: title, Cols: 4, Panels: []*Panel{img("observed "+y.Name, y.Data), img("mean of "+yrep, mean)}}
	for k, rep := range thin(reps, 2) {
		f.Panels = append(f.Panels, img(fmt.Sprintf("%s, draw %d", yrep, k+1), rep))
	}
	return f
}

// densityBand is the 5%–95% band of the densities of (at most 400 of)
// the replicated data sets, on one grid.
func densityBand(reps [][]float64, yrep string) Series {
	reps = thin(reps, 400)
	lo, hi := math.Inf(1), math.Inf(-1)
	type est struct {
		v []float64
		h float64
	}
	ests := make([]est, len(reps))
	for d, rep := range reps {
		v, h := kdeSetup(rep)
		ests[d] = est{v, h}
		if len(v) > 0 {
			lo, hi = math.Min(lo, v[0]-3*h), math.Max(hi, v[len(v)-1]+3*h)
		}
	}
	gx := make([]float64, 128)
	for k := range gx {
		gx[k] = lo + (hi-lo)*float64(k)/float64(len(gx)-1)
	}
	dens := make([][]float64, 0, len(ests))
	for _, e := range ests {
		if len(e.v) > 0 {
			dens = append(dens, kdeOn(e.v, e.h, gx))
		}
	}
	low, high := make([]float64, len(gx)), make([]float64, len(gx))
	col := make([]float64, len(dens))
	for k := range gx {
		for d := range dens {
			col[d] = dens[d][k]
		}
		low[k], high[k] = diag.Quantile(col, 0.05), diag.Quantile(col, 0.95)
	}
	return Series{Label: "90% band of " + yrep + " densities", Kind: Band, X: gx, Y: low, Y2: high, Color: 4}
}

// PPCSeries is the posterior predictive check of data over an index (a
// series) or, when x is not nil, over a covariate x of the same length:
// the 5%–95% and 25%–75% intervals of yrep at each point, its median, and
// the observed values, in the order of x.
func PPCSeries(r *Run, y *Observed, yrep string, x *Observed) (*Figure, error) {
	if len(y.Dims) != 1 {
		return nil, fmt.Errorf("plots: a series check needs a vector %s, got sizes %v", y.Name, y.Dims)
	}
	reps, err := r.replicates(yrep, y)
	if err != nil {
		return nil, err
	}
	n := len(y.Data)
	xs, xName := make([]float64, n), "index"
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	if x != nil {
		if len(x.Data) != n {
			return nil, fmt.Errorf("plots: the covariate %s has %d values, %s %d", x.Name, len(x.Data), y.Name, n)
		}
		xs, xName = x.Data, x.Name
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return xs[order[a]] < xs[order[b]] })
	// The quantiles of the finite replicates (a NaN or infinite draw is
	// left out, as in every figure).
	q := func(p float64) []float64 {
		out := make([]float64, n)
		col := make([]float64, 0, len(reps))
		for k, i := range order {
			col = col[:0]
			for _, rep := range reps {
				if !math.IsNaN(rep[i]) && !math.IsInf(rep[i], 0) {
					col = append(col, rep[i])
				}
			}
			out[k] = diag.Quantile(col, p)
		}
		return out
	}
	sx, sy := make([]float64, n), make([]float64, n)
	for k, i := range order {
		sx[k], sy[k] = xs[i], y.Data[i]
	}
	pn := &Panel{Title: y.Name + " and " + yrep + " by " + xName, XLabel: xName, YLabel: y.Name}
	pn.Series = []Series{
		{Label: "90% of " + yrep, Kind: Band, X: sx, Y: q(0.05), Y2: q(0.95), Color: 4},
		{Label: "50% of " + yrep, Kind: Band, X: sx, Y: q(0.25), Y2: q(0.75), Color: 0},
		{Label: "median", Kind: Line, X: sx, Y: q(0.5), Color: 0},
		{Label: "observed", Kind: Points, X: sx, Y: sy, Color: 6},
	}
	return &Figure{Title: "posterior predictive check: " + y.Name + " (" + r.Label + ")", Cols: 1, Panels: []*Panel{pn}}, nil
}

// DefaultReplicate is the name of the generated quantity a check of y
// reads when none is given: y_rep.
func DefaultReplicate(y string) string { return strings.TrimSpace(y) + "_rep" }

// Picture is an image from the data: Rows × Cols values in row-major
// order, row 1 at the top.
type Picture struct {
	Name       string
	Rows, Cols int
	Z          []float64
}

// Location draws the posterior of a position on a picture: the draws of
// the offsets (vars[0] along the columns, vars[1] along the rows, in
// pixels, from the 1-based pixel position at = (column, row)) as points
// over the picture in gray, their median, and the 90% ellipse of a normal
// with their mean and covariance (Experiment D's window).
func Location(r *Run, pic *Picture, vars [2]string, at [2]float64) (*Figure, error) {
	var cols [2][]float64
	for k, v := range vars {
		_, idx, err := r.columns([]string{v})
		if err != nil {
			return nil, err
		}
		if len(idx) != 1 {
			return nil, fmt.Errorf("plots: %s is not a scalar", v)
		}
		for c := range r.Fit.Chains {
			cols[k] = append(cols[k], r.column(c, idx[0])...)
		}
	}
	// Pixel (column j, row i), 1-based, is at (j − 1, Rows − i) in the
	// picture's plot coordinates.
	px := func(dx float64) float64 { return at[0] + dx - 1 }
	py := func(dy float64) float64 { return float64(pic.Rows) - (at[1] + dy) }
	n := len(cols[0])
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = px(cols[0][i]), py(cols[1][i])
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range pic.Z {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	mx, my := diag.Quantile(x, 0.5), diag.Quantile(y, 0.5)
	ex, ey := ellipse(x, y, 4.605) // the 0.9 quantile of chi-square(2)
	// No legend over the picture: the title says what is drawn.
	pn := &Panel{Title: fmt.Sprintf("%s: draws of (%s, %s), median (×), 90%% ellipse", pic.Name, vars[0], vars[1]),
		XLabel: "column − 1", YLabel: "rows from the bottom"}
	pn.Series = []Series{
		{Kind: Image, Z: pic.Z, Rows: pic.Rows, Cols: pic.Cols, Lo: lo, Hi: hi},
		{Kind: Points, X: x, Y: y, Color: 4},
		{Kind: Line, X: ex, Y: ey, Color: 1},
		{Kind: Marks, X: []float64{mx}, Y: []float64{my}},
	}
	return &Figure{Title: "location: " + r.Label, Cols: 1, Panels: []*Panel{pn}}, nil
}

// ellipse returns the closed curve {z : (z − m)ᵀ S⁻¹ (z − m) = c} of the
// sample mean m and covariance S of the points (x, y).
func ellipse(x, y []float64, c float64) (ex, ey []float64) {
	mx, sx := stat.MeanStdDev(x, nil)
	my, sy := stat.MeanStdDev(y, nil)
	cov := 0.0
	for i := range x {
		cov += (x[i] - mx) * (y[i] - my)
	}
	cov /= math.Max(float64(len(x)-1), 1)
	// S = L Lᵀ (Cholesky); the ellipse is m + sqrt(c)·L·(cos t, sin t).
	l11 := sx
	if l11 == 0 {
		l11 = 1e-12
	}
	l21 := cov / l11
	l22 := math.Sqrt(math.Max(sy*sy-l21*l21, 0))
	r := math.Sqrt(c)
	for k := 0; k <= 100; k++ {
		t := 2 * math.Pi * float64(k) / 100
		u, v := r*math.Cos(t), r*math.Sin(t)
		ex = append(ex, mx+l11*u)
		ey = append(ey, my+l21*u+l22*v)
	}
	return ex, ey
}
