package diag

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Chain is one chain's output: a row of values per kept draw, one value per
// column of the enclosing [Fit].
type Chain struct {
	Draws           [][]float64 // [draw][column]
	WarmupDraws     [][]float64 // the warmup draws, when the file kept them (save_warmup)
	NumWarmup       int
	Thin            int
	MaxDepth        int // tree-depth limit of the sampler; 0: unknown (10 assumed)
	WarmupSeconds   float64
	SamplingSeconds float64
}

// Fit is the output of several chains of one model, with the same columns.
// Columns whose names end in "__" are Stan's sampler columns (lp__,
// accept_stat__, treedepth__, ...).
type Fit struct {
	Model   string
	Columns []string
	Chains  []Chain
	// Warnings are about the inputs of the fit (files of different runs),
	// for the caller to show.
	Warnings []string
}

// Column returns the draws of column j as chains[c][i].
func (f *Fit) Column(j int) [][]float64 {
	out := make([][]float64, len(f.Chains))
	for c, ch := range f.Chains {
		out[c] = make([]float64, len(ch.Draws))
		for i, row := range ch.Draws {
			out[c][i] = row[j]
		}
	}
	return out
}

func (f *Fit) check() error {
	if len(f.Chains) == 0 {
		return errors.New("diag: no chains")
	}
	for c, ch := range f.Chains {
		for i, row := range ch.Draws {
			if len(row) != len(f.Columns) {
				return fmt.Errorf("diag: chain %d, draw %d has %d values for %d columns", c+1, i+1, len(row), len(f.Columns))
			}
		}
	}
	return nil
}

// Summary is one row of the summary table.
type Summary struct {
	Name          string
	Mean, MCSE    float64
	SD            float64
	Q5, Q50, Q95  float64
	ESSBulk       float64
	ESSTail       float64
	ESSBulkPerSec float64 // bulk ESS per second of sampling (all chains)
	Rhat          float64 // rank-normalized split R-hat
}

// Summarize computes a Summary for every column.
func Summarize(f *Fit) ([]Summary, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	secs := 0.0
	for _, ch := range f.Chains {
		secs += ch.SamplingSeconds
	}
	out := make([]Summary, len(f.Columns))
	for j, name := range f.Columns {
		x := f.Column(j)
		all := pool(trim(x))
		s := Summary{Name: name, Mean: math.NaN(), SD: math.NaN(), Q5: math.NaN(), Q50: math.NaN(), Q95: math.NaN()}
		if len(all) > 0 {
			s.Mean = mean(all)
			s.SD = math.Sqrt(variance(all))
			sorted := slices.Clone(all)
			slices.Sort(sorted)
			s.Q5 = quantileSorted(sorted, 0.05)
			s.Q50 = quantileSorted(sorted, 0.5)
			s.Q95 = quantileSorted(sorted, 0.95)
		}
		s.MCSE = MCSEMean(x)
		s.ESSBulk = ESSBulk(x)
		s.ESSTail = ESSTail(x)
		s.ESSBulkPerSec = math.NaN()
		if secs > 0 {
			s.ESSBulkPerSec = s.ESSBulk / secs
		}
		s.Rhat = Rhat(x)
		out[j] = s
	}
	return out, nil
}

// SamplerDiagnostics are the sampler's warning signs over all chains.
type SamplerDiagnostics struct {
	Draws         int       // post-warmup draws in all chains
	Divergent     int       // draws whose divergent__ is set
	MaxDepthHits  int       // draws whose treedepth__ reached the limit
	MaxDepth      int       // the limit (of the first chain)
	EBFMI         []float64 // per chain; NaN without an energy__ column
	HasNUTSColumn bool      // the fit has treedepth__/divergent__ columns
}

// Sampler computes divergence and tree-depth counts and E-BFMI per chain.
func Sampler(f *Fit) (SamplerDiagnostics, error) {
	if err := f.check(); err != nil {
		return SamplerDiagnostics{}, err
	}
	col := func(name string) int {
		for j, c := range f.Columns {
			if c == name {
				return j
			}
		}
		return -1
	}
	div, depth, energy := col("divergent__"), col("treedepth__"), col("energy__")
	d := SamplerDiagnostics{HasNUTSColumn: div >= 0 || depth >= 0}
	d.MaxDepth = f.Chains[0].MaxDepth
	if d.MaxDepth <= 0 {
		d.MaxDepth = 10
	}
	for _, ch := range f.Chains {
		limit := ch.MaxDepth
		if limit <= 0 {
			limit = 10
		}
		var e []float64
		for _, row := range ch.Draws {
			d.Draws++
			if div >= 0 && row[div] > 0 {
				d.Divergent++
			}
			if depth >= 0 && row[depth] >= float64(limit) {
				d.MaxDepthHits++
			}
			if energy >= 0 {
				e = append(e, row[energy])
			}
		}
		if energy >= 0 {
			d.EBFMI = append(d.EBFMI, EBFMI(e))
		} else {
			d.EBFMI = append(d.EBFMI, math.NaN())
		}
	}
	return d, nil
}

// Thresholds of the warnings of WriteSummary.
const (
	EBFMIThreshold       = 0.3
	RhatThreshold        = 1.01
	ESSPerChainThreshold = 100
)

// WriteSummary writes a stansummary-style table of the fit to w: the
// sampler columns first, then the others, followed by warnings about
// divergences, tree-depth saturation, E-BFMI below 0.3, R-hat above 1.01
// and bulk or tail ESS below 100 per chain.
func WriteSummary(w io.Writer, f *Fit) error {
	rows, err := Summarize(f)
	if err != nil {
		return err
	}
	sd, err := Sampler(f)
	if err != nil {
		return err
	}
	var b strings.Builder
	if f.Model != "" {
		fmt.Fprintf(&b, "Inference for Stan model: %s\n", f.Model)
	}
	iters, warm, thin := make([]string, len(f.Chains)), make([]string, len(f.Chains)), make([]string, len(f.Chains))
	total := 0
	wsec, ssec := make([]string, len(f.Chains)), make([]string, len(f.Chains))
	wtot, stot := 0.0, 0.0
	for c, ch := range f.Chains {
		iters[c] = strconv.Itoa(len(ch.Draws))
		warm[c] = strconv.Itoa(ch.NumWarmup)
		thin[c] = strconv.Itoa(max(ch.Thin, 1))
		total += len(ch.Draws)
		wsec[c] = fmtNum(ch.WarmupSeconds)
		ssec[c] = fmtNum(ch.SamplingSeconds)
		wtot += ch.WarmupSeconds
		stot += ch.SamplingSeconds
	}
	plural := "s"
	if len(f.Chains) == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "%d chain%s: each with iter=(%s); warmup=(%s); thin=(%s); %d iterations saved.\n\n",
		len(f.Chains), plural, strings.Join(iters, ","), strings.Join(warm, ","), strings.Join(thin, ","), total)
	fmt.Fprintf(&b, "Warmup took (%s) seconds, %s seconds total\n", strings.Join(wsec, ", "), fmtNum(wtot))
	fmt.Fprintf(&b, "Sampling took (%s) seconds, %s seconds total\n\n", strings.Join(ssec, ", "), fmtNum(stot))

	header := []string{"", "Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "ESS_bulk/s", "R_hat"}
	cells := [][]string{}
	var params []int
	var samplerRows []int
	for j, r := range rows {
		if strings.HasSuffix(r.Name, "__") {
			samplerRows = append(samplerRows, j)
		} else {
			params = append(params, j)
		}
	}
	row := func(r Summary) []string {
		return []string{r.Name, fmtNum(r.Mean), fmtNum(r.MCSE), fmtNum(r.SD), fmtNum(r.Q5), fmtNum(r.Q50), fmtNum(r.Q95),
			fmtCount(r.ESSBulk), fmtCount(r.ESSTail), fmtRate(r.ESSBulkPerSec), fmtRhat(r.Rhat)}
	}
	for _, j := range samplerRows {
		cells = append(cells, row(rows[j]))
	}
	split := len(cells)
	for _, j := range params {
		cells = append(cells, row(rows[j]))
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, r := range cells {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := func(r []string) {
		fmt.Fprintf(&b, "%-*s", widths[0], r[0])
		for i := 1; i < len(r); i++ {
			fmt.Fprintf(&b, "  %*s", widths[i], r[i])
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("\n")
	for i, r := range cells {
		if i == split && split > 0 {
			b.WriteString("\n")
		}
		line(r)
	}
	b.WriteString("\n")
	for _, msg := range warnings(f, rows, params, sd) {
		fmt.Fprintf(&b, "Warning: %s\n", msg)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// NonFinite lists the columns with NaN or infinite draws (post-warmup),
// each with its count ("mu (2 of 400 draws)"), or nil.
func (f *Fit) NonFinite() []string {
	counts := make([]int, len(f.Columns))
	total := 0
	for _, ch := range f.Chains {
		total += len(ch.Draws)
		for _, row := range ch.Draws { // row by row, as the draws are stored
			for j, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					counts[j]++
				}
			}
		}
	}
	var out []string
	for j, n := range counts {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s (%d of %d draws)", f.Columns[j], n, total))
		}
	}
	return out
}

func warnings(f *Fit, rows []Summary, params []int, sd SamplerDiagnostics) []string {
	var out []string
	if bad := f.NonFinite(); len(bad) > 0 {
		out = append(out, fmt.Sprintf("draws that are NaN or infinite in %s: the statistics of those columns are not meaningful.", listNames(bad)))
	}
	pct := func(n int) string { return percentText(100 * float64(n) / float64(max(sd.Draws, 1))) }
	if sd.Divergent > 0 {
		out = append(out, fmt.Sprintf("%d of %d (%s%%) transitions ended with a divergence; increase adapt delta or reparameterize the model.", sd.Divergent, sd.Draws, pct(sd.Divergent)))
	}
	if sd.MaxDepthHits > 0 {
		out = append(out, fmt.Sprintf("%d of %d (%s%%) transitions hit the maximum tree depth of %d.", sd.MaxDepthHits, sd.Draws, pct(sd.MaxDepthHits), sd.MaxDepth))
	}
	for c, e := range sd.EBFMI {
		if e < EBFMIThreshold {
			out = append(out, fmt.Sprintf("chain %d: E-BFMI = %.3g, below %g; the sampler may not explore the posterior well.", c+1, e, EBFMIThreshold))
		}
	}
	// R-hat and ESS for lp__ and the model's quantities.
	check := append([]int(nil), params...)
	for j, r := range rows {
		if r.Name == "lp__" {
			check = append([]int{j}, check...)
		}
	}
	var highRhat, lowESS []string
	minESS := float64(ESSPerChainThreshold * len(f.Chains))
	for _, j := range check {
		r := rows[j]
		if r.Rhat > RhatThreshold {
			highRhat = append(highRhat, r.Name)
		}
		if r.ESSBulk < minESS || r.ESSTail < minESS {
			lowESS = append(lowESS, r.Name)
		}
	}
	if len(highRhat) > 0 {
		out = append(out, fmt.Sprintf("R-hat above %g for %s.", RhatThreshold, listNames(highRhat)))
	}
	if len(lowESS) > 0 {
		out = append(out, fmt.Sprintf("bulk or tail ESS below %d per chain for %s.", ESSPerChainThreshold, listNames(lowESS)))
	}
	return out
}

func listNames(names []string) string {
	const most = 10
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}

// fmtNum formats with 3 significant digits, in fixed notation for moderate
// magnitudes and exponent notation otherwise.
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	if a >= 1e-3 && a < 1e6 {
		e := int(math.Floor(math.Log10(a)))
		dec := max(2-e, 0)
		return strconv.FormatFloat(v, 'f', dec, 64)
	}
	return strconv.FormatFloat(v, 'e', 2, 64)
}

func fmtCount(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmtNum(v)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// fmtRate prints a rate such as ESS per second: whole numbers from 10 up,
// three significant digits below (a slow model's 0.17 must not print as 0).
func fmtRate(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v >= 10 {
		return fmtCount(v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func fmtRhat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmtNum(v)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// percentText formats a percentage with two significant digits and never
// an exponent: 100, 7.4, 0.74, 0.0012 (%.2g wrote 100 as 1e+02).
func percentText(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	if err != nil {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
