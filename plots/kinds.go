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

// Run is the draws of one run: the chains of one model, with a label for
// legends (a density overlay compares several runs).
type Run struct {
	Label string
	Fit   *diag.Fit
}

// DefaultVars is the number of variables a figure shows when none are
// asked for: the first parameter columns.
const DefaultVars = 6

// MaxVars and MaxPairsVars bound the variables of one figure (ArviZ's
// plot.max_subplots is 40): beyond them panels are too small to read,
// and a pairs plot's panels grow as the square.
const (
	MaxVars      = 40
	MaxPairsVars = 12
)

// rankBins is the number of bins of a rank histogram.
const rankBins = 20

// vars resolves names to the variables of a figure's panels (columns),
// at most MaxVars of them.
func (r *Run) vars(names []string) ([]string, []int, error) {
	outNames, outIdx, err := r.columns(names)
	if err != nil {
		return nil, nil, err
	}
	if len(outIdx) > MaxVars {
		return nil, nil, fmt.Errorf("plots: %s selects %d variables (%s); a figure shows at most %d: name elements (x[1], x[2]) or fewer variables",
			strings.Join(names, ","), len(outIdx), columnList(outNames), MaxVars)
	}
	return outNames, outIdx, nil
}

// columns resolves names against the run's columns: a column name ("mu",
// "theta.2", or Stan's "theta[2]"), or a variable whose element columns
// it selects ("theta": theta.1, theta.2, ...). With no names, the first
// DefaultVars columns that are not sampler columns.
func (r *Run) columns(names []string) ([]string, []int, error) {
	cols := r.Fit.Columns
	index := map[string]int{}
	for j, c := range cols {
		index[c] = j
	}
	var outNames []string
	var outIdx []int
	add := func(j int) {
		if !slices.Contains(outIdx, j) {
			outNames, outIdx = append(outNames, cols[j]), append(outIdx, j)
		}
	}
	if len(names) == 0 {
		for j, c := range cols {
			if !strings.HasSuffix(c, "__") && len(outIdx) < DefaultVars {
				add(j)
			}
		}
		if len(outIdx) == 0 {
			return nil, nil, fmt.Errorf("plots: %s has no parameter columns", r.Label)
		}
		return outNames, outIdx, nil
	}
	for _, name := range names {
		name = strings.TrimSpace(name)
		// Stan's x[1,2] is the column x.1.2.
		flat := strings.NewReplacer("[", ".", "]", "", ",", ".", " ", "").Replace(name)
		if j, ok := index[flat]; ok {
			add(j)
			continue
		}
		found := false
		for j, c := range cols {
			if strings.HasPrefix(c, flat+".") {
				add(j)
				found = true
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("plots: %s has no variable %s (columns: %s)", r.Label, name, columnList(cols))
		}
	}
	return outNames, outIdx, nil
}

// columnList abbreviates a list of columns for messages.
func columnList(cols []string) string {
	if len(cols) > 12 {
		return strings.Join(cols[:12], ", ") + ", ..."
	}
	return strings.Join(cols, ", ")
}

// column returns column j of chain c.
func (r *Run) column(c, j int) []float64 {
	draws := r.Fit.Chains[c].Draws
	out := make([]float64, len(draws))
	for i, row := range draws {
		out[i] = row[j]
	}
	return out
}

// samplerColumn returns the index of a sampler column (−1 when absent).
func (r *Run) samplerColumn(name string) int { return slices.Index(r.Fit.Columns, name) }

// divergent returns, per chain, the draws marked divergent.
func (r *Run) divergent(c int) []bool {
	j := r.samplerColumn("divergent__")
	out := make([]bool, len(r.Fit.Chains[c].Draws))
	if j < 0 {
		return out
	}
	for i, row := range r.Fit.Chains[c].Draws {
		out[i] = row[j] != 0
	}
	return out
}

func chainLabel(c int) string { return "chain " + strconv.Itoa(c+1) }

// gridCols is the number of columns of a grid of n panels.
func gridCols(n int) int { return min(n, 3) }

// Trace plots each variable against the iteration, one line per chain,
// with the divergent draws marked. With warmup, the warmup draws the files
// kept (save_warmup) come first, and a vertical line marks the end of
// warmup; files without them are an error.
func Trace(r *Run, names []string, warmup bool) (*Figure, error) {
	vars, idx, err := r.vars(names)
	if err != nil {
		return nil, err
	}
	nw := 0
	if warmup {
		nw = len(r.Fit.Chains[0].WarmupDraws)
		if nw == 0 {
			return nil, fmt.Errorf("plots: %s has no warmup draws (sample with save_warmup)", r.Label)
		}
	}
	f := &Figure{Title: "trace: " + r.Label, Cols: gridCols(len(vars))}
	div := make([][]bool, len(r.Fit.Chains))
	for c := range div {
		div[c] = r.divergent(c)
	}
	for k, j := range idx {
		pn := &Panel{Title: vars[k], XLabel: "iteration", YLabel: vars[k]}
		var mx, my []float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for c, ch := range r.Fit.Chains {
			var y []float64
			if warmup {
				for _, row := range ch.WarmupDraws {
					y = append(y, row[j])
				}
			}
			y = append(y, r.column(c, j)...)
			x := make([]float64, len(y))
			for i := range x {
				x[i] = float64(i + 1)
				lo, hi = math.Min(lo, y[i]), math.Max(hi, y[i])
			}
			pn.Series = append(pn.Series, Series{Label: chainLabel(c), Kind: Line, X: x, Y: y, Color: c})
			for i, d := range div[c] {
				if d {
					mx, my = append(mx, x[nw+i]), append(my, y[nw+i])
				}
			}
		}
		if len(mx) > 0 {
			pn.Series = append(pn.Series, Series{Label: "divergent", Kind: Marks, X: mx, Y: my})
		}
		if warmup {
			e := float64(nw) + 0.5
			pn.Series = append(pn.Series, Series{Label: "end of warmup", Kind: Line, X: []float64{e, e}, Y: []float64{lo, hi}, Color: len(palette) - 1})
		}
		f.Panels = append(f.Panels, pn)
	}
	return f, nil
}

// Rank draws, for each variable, the histogram of the ranks of each
// chain's draws among all chains' draws (Vehtari et al. 2021): a step line
// per chain, and the uniform count every chain has when the chains mix.
func Rank(r *Run, names []string) (*Figure, error) {
	vars, idx, err := r.vars(names)
	if err != nil {
		return nil, err
	}
	f := &Figure{Title: "rank: " + r.Label, Cols: gridCols(len(vars))}
	for k, j := range idx {
		type draw struct {
			v float64
			c int
		}
		var all []draw
		for c := range r.Fit.Chains {
			for _, v := range r.column(c, j) {
				all = append(all, draw{v, c})
			}
		}
		sort.SliceStable(all, func(a, b int) bool { return all[a].v < all[b].v })
		n := len(all)
		counts := make([][]float64, len(r.Fit.Chains))
		for c := range counts {
			counts[c] = make([]float64, rankBins)
		}
		for rank, d := range all {
			counts[d.c][rank*rankBins/max(n, 1)]++
		}
		pn := &Panel{Title: vars[k], XLabel: "rank (all chains)", YLabel: "draws"}
		for c, cnt := range counts {
			x, y := steps(cnt, float64(n)/rankBins)
			pn.Series = append(pn.Series, Series{Label: chainLabel(c), Kind: Line, X: x, Y: y, Color: c})
		}
		if len(counts) > 0 && n > 0 {
			expect := float64(n) / float64(len(counts)) / rankBins
			pn.Series = append(pn.Series, Series{Label: "uniform", Kind: Line, X: []float64{0, float64(n)}, Y: []float64{expect, expect}, Color: len(palette) - 1})
		}
		f.Panels = append(f.Panels, pn)
	}
	return f, nil
}

// steps turns bin counts of width w into the corners of a step line.
func steps(counts []float64, w float64) (x, y []float64) {
	for b, c := range counts {
		x = append(x, float64(b)*w, float64(b+1)*w)
		y = append(y, c, c)
	}
	return x, y
}

// Dens overlays, for each variable, the density of its draws (all chains)
// in each run: a kernel density estimate per run, labelled with the run.
func Dens(runs []*Run, names []string) (*Figure, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("plots: no runs")
	}
	vars, _, err := runs[0].vars(names)
	if err != nil {
		return nil, err
	}
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = r.Label
	}
	f := &Figure{Title: "density: " + strings.Join(labels, " vs "), Cols: gridCols(len(vars))}
	for _, v := range vars {
		pn := &Panel{Title: v, XLabel: v, YLabel: "density"}
		for i, r := range runs {
			_, idx, err := r.columns([]string{v})
			if err != nil {
				return nil, err
			}
			var xs []float64
			for c := range r.Fit.Chains {
				xs = append(xs, r.column(c, idx[0])...)
			}
			gx, gy := kde(xs, 256)
			pn.Series = append(pn.Series, Series{Label: r.Label, Kind: Line, X: gx, Y: gy, Color: i})
		}
		f.Panels = append(f.Panels, pn)
	}
	return f, nil
}

// kde is a Gaussian kernel density estimate of xs on n grid points, with
// Silverman's bandwidth; non-finite draws are left out.
func kde(xs []float64, n int) (gx, gy []float64) {
	v, h := kdeSetup(xs)
	if len(v) == 0 {
		return nil, nil
	}
	lo, hi := v[0]-3*h, v[len(v)-1]+3*h
	gx = make([]float64, n)
	for k := range gx {
		gx[k] = lo + (hi-lo)*float64(k)/float64(n-1)
	}
	return gx, kdeOn(v, h, gx)
}

// kdeSetup returns the finite draws of xs, sorted, and Silverman's
// bandwidth.
func kdeSetup(xs []float64) ([]float64, float64) {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return nil, 0
	}
	sort.Float64s(v)
	mean, sd := stat.MeanStdDev(v, nil)
	iqr := v[len(v)*3/4] - v[len(v)/4]
	h := 0.9 * math.Min(sd, iqr/1.34) * math.Pow(float64(len(v)), -0.2)
	if !(h > 0) {
		h = math.Max(math.Abs(mean)*1e-3, 1e-3)
	}
	return v, h
}

// kdeOn evaluates the kernel density estimate of the sorted draws v with
// bandwidth h at the points gx.
func kdeOn(v []float64, h float64, gx []float64) []float64 {
	gy := make([]float64, len(gx))
	norm := 1 / (float64(len(v)) * h * math.Sqrt(2*math.Pi))
	for k, x := range gx {
		s := 0.0
		// Only the draws within 6 bandwidths matter.
		from := sort.SearchFloat64s(v, x-6*h)
		for _, xi := range v[from:] {
			if xi > x+6*h {
				break
			}
			z := (x - xi) / h
			s += math.Exp(-0.5 * z * z)
		}
		gy[k] = s * norm
	}
	return gy
}

// Pairs is the scatter matrix of the variables (all chains' draws), the
// divergent draws marked, with each variable's density on the diagonal.
func Pairs(r *Run, names []string) (*Figure, error) {
	vars, idx, err := r.vars(names)
	if err != nil {
		return nil, err
	}
	if len(vars) < 2 {
		return nil, fmt.Errorf("plots: pairs needs at least two variables, got %s", strings.Join(vars, ", "))
	}
	if len(vars) > MaxPairsVars {
		return nil, fmt.Errorf("plots: pairs of %d variables (%s) would be %d panels; choose at most %d with --vars",
			len(vars), columnList(vars), len(vars)*len(vars), MaxPairsVars)
	}
	// Every variable's draws of all chains, and the divergent ones.
	var div []bool
	for c := range r.Fit.Chains {
		div = append(div, r.divergent(c)...)
	}
	pooled := make([][]float64, len(idx))
	for k, j := range idx {
		for c := range r.Fit.Chains {
			pooled[k] = append(pooled[k], r.column(c, j)...)
		}
	}
	f := &Figure{Title: "pairs: " + r.Label, Cols: len(vars)}
	for a := range idx {
		ya := pooled[a]
		for b := range idx {
			pn := &Panel{}
			if a == len(vars)-1 {
				pn.XLabel = vars[b]
			}
			if b == 0 {
				pn.YLabel = vars[a]
			}
			if a == b {
				pn.Title = vars[a]
				gx, gy := kde(ya, 128)
				pn.Series = []Series{{Kind: Line, X: gx, Y: gy}}
				f.Panels = append(f.Panels, pn)
				continue
			}
			xb := pooled[b]
			var px, py, mx, my []float64
			for i := range ya {
				if div[i] {
					mx, my = append(mx, xb[i]), append(my, ya[i])
				} else {
					px, py = append(px, xb[i]), append(py, ya[i])
				}
			}
			pn.Series = []Series{{Kind: Points, X: px, Y: py}}
			if len(mx) > 0 {
				pn.Series = append(pn.Series, Series{Label: "divergent", Kind: Marks, X: mx, Y: my})
			}
			f.Panels = append(f.Panels, pn)
		}
	}
	return f, nil
}

// Energy compares the marginal energy distribution (energy__ centred per
// chain) with the distribution of the energy transitions (its differences
// between successive draws), as in Betancourt (2017); the title gives each
// chain's E-BFMI (below 0.3 suggests the sampler explores the tails
// poorly).
func Energy(r *Run) (*Figure, error) {
	j := r.samplerColumn("energy__")
	if j < 0 {
		return nil, fmt.Errorf("plots: %s has no energy__ column (not a NUTS run?)", r.Label)
	}
	var centred, trans []float64
	var bfmi []string
	for c := range r.Fit.Chains {
		e := r.column(c, j)
		m := stat.Mean(e, nil)
		for i, v := range e {
			centred = append(centred, v-m)
			if i > 0 {
				trans = append(trans, v-e[i-1])
			}
		}
		bfmi = append(bfmi, strconv.FormatFloat(diag.EBFMI(e), 'f', 2, 64))
	}
	pn := &Panel{Title: "E-BFMI by chain: " + strings.Join(bfmi, ", "), XLabel: "energy − mean", YLabel: "density"}
	cx, cy := kde(centred, 256)
	tx, ty := kde(trans, 256)
	pn.Series = []Series{
		{Label: "marginal energy", Kind: Line, X: cx, Y: cy, Color: 0},
		{Label: "energy transition", Kind: Line, X: tx, Y: ty, Color: 1},
	}
	return &Figure{Title: "energy: " + r.Label, Cols: 1, Panels: []*Panel{pn}}, nil
}
