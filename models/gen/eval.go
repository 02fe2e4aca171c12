package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
)

// chi2Quantile2 holds quantiles of the chi-square distribution with two
// degrees of freedom: -2 log(1 - p).
func chi2Quantile2(p float64) float64 { return -2 * math.Log1p(-p) }

// chainDraws are the chain id (the header's "id", 0 when absent), the
// (dx, dy) draws, the divergence count and the wall time (warmup +
// sampling, seconds; 0 when the file has none) of one chain.
type chainDraws struct {
	ID        int
	DX, DY    []float64
	Divergent int
	Seconds   float64
}

// readChain reads dx, dy, divergent__ and the elapsed times from a Stan
// CSV file.
func readChain(path string) (chainDraws, error) {
	f, err := stancsv.ReadFile(path)
	if err != nil {
		return chainDraws{}, err
	}
	col := map[string]int{}
	for i, n := range f.Columns {
		col[n] = i
	}
	for _, n := range []string{"dx", "dy", "divergent__"} {
		if _, ok := col[n]; !ok {
			return chainDraws{}, fmt.Errorf("%s: no column %s", path, n)
		}
	}
	rows := f.SamplingDraws()
	if len(rows) < 2 {
		return chainDraws{}, fmt.Errorf("%s: %d draws, need at least 2", path, len(rows))
	}
	var d chainDraws
	d.ID, _ = f.Int("id")
	for _, r := range rows {
		d.DX, d.DY = append(d.DX, r[col["dx"]]), append(d.DY, r[col["dy"]])
		if r[col["divergent__"]] == 1 {
			d.Divergent++
		}
	}
	if f.HasTiming {
		d.Seconds = f.WarmupSeconds + f.SamplingSeconds
	}
	return d, nil
}

// median returns the median of xs (the mean of the two middle values for
// an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantile returns the p-quantile of xs by linear interpolation between
// order statistics (numpy's default).
func quantile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	h := p * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// chainMetrics are the per-chain quantities behind the paper's table.
type chainMetrics struct {
	Covered95 bool    // truth inside the Gaussian 95% credible ellipse
	Err       float64 // ‖componentwise posterior median − truth‖
	Area90    float64 // area of the Gaussian 90% ellipse
	Divergent int
	Draws     int
	Seconds   float64 // wall time of the chain (warmup + sampling)
}

// metrics computes chainMetrics for one chain and the true offset.
func metrics(d chainDraws, dx, dy float64) chainMetrics {
	n := float64(len(d.DX))
	var mx, my float64
	for i := range d.DX {
		mx += d.DX[i]
		my += d.DY[i]
	}
	mx, my = mx/n, my/n
	var sxx, syy, sxy float64
	for i := range d.DX {
		a, b := d.DX[i]-mx, d.DY[i]-my
		sxx += a * a
		syy += b * b
		sxy += a * b
	}
	sxx, syy, sxy = sxx/(n-1), syy/(n-1), sxy/(n-1)
	det := sxx*syy - sxy*sxy
	a, b := dx-mx, dy-my
	maha := (syy*a*a - 2*sxy*a*b + sxx*b*b) / det
	return chainMetrics{
		Covered95: maha <= chi2Quantile2(0.95),
		Err:       math.Hypot(median(d.DX)-dx, median(d.DY)-dy),
		Area90:    math.Pi * chi2Quantile2(0.90) * math.Sqrt(math.Max(det, 0)),
		Divergent: d.Divergent,
		Draws:     len(d.DX),
		Seconds:   d.Seconds,
	}
}

// evalD prints the Experiment D metrics of the runs in dirs (each named
// img<index>, holding one Stan CSV file per chain): a row per chain, the
// classic split R-hat of each image with at least two chains (the maximum
// over dx and dy, as the paper's NumPyro summaries compute it), and the
// summary that the paper's table reports (its per-chain proportions and
// the share of images with R-hat at most 1.1).
func evalD(truthPath string, dirs []string, w io.Writer) error {
	f, err := os.Open(truthPath)
	if err != nil {
		return err
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %v", truthPath, err)
	}
	truth := map[int][2]float64{}
	for _, r := range rows[1:] {
		idx, _ := strconv.Atoi(r[0])
		dx, _ := strconv.ParseFloat(r[3], 64)
		dy, _ := strconv.ParseFloat(r[4], 64)
		truth[idx] = [2]float64{dx, dy}
	}
	var all []chainMetrics
	type imageRhat struct {
		idx, chains int
		rhat        float64
	}
	var rhats []imageRhat
	fmt.Fprintln(w, "image,chain,dx_true,dy_true,covered95,error,area90,divergent,seconds")
	for _, dir := range dirs {
		var idx int
		if _, err := fmt.Sscanf(filepath.Base(dir), "img%d", &idx); err != nil {
			return fmt.Errorf("%s: run folders must be named img<index>", dir)
		}
		tv, ok := truth[idx]
		if !ok {
			return fmt.Errorf("%s: image %d is not in %s", dir, idx, truthPath)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
		if len(files) == 0 {
			return fmt.Errorf("%s: no Stan CSV files", dir)
		}
		var dxs, dys [][]float64
		for k, file := range files {
			d, err := readChain(file)
			if err != nil {
				return err
			}
			if d.ID == 0 {
				d.ID = k + 1
			}
			m := metrics(d, tv[0], tv[1])
			all = append(all, m)
			dxs, dys = append(dxs, d.DX), append(dys, d.DY)
			fmt.Fprintf(w, "%d,%d,%.4f,%.4f,%t,%.4f,%.4f,%d,%.1f\n", idx, d.ID, tv[0], tv[1], m.Covered95, m.Err, m.Area90, m.Divergent, m.Seconds)
		}
		if len(files) > 1 {
			rhats = append(rhats, imageRhat{idx, len(files), math.Max(diag.RhatBasic(dxs), diag.RhatBasic(dys))})
		}
	}
	rhatOK := 0
	if len(rhats) > 0 {
		fmt.Fprintln(w, "\nimage,chains,split_rhat_max")
		for _, r := range rhats {
			fmt.Fprintf(w, "%d,%d,%.3f\n", r.idx, r.chains, r.rhat)
			if r.rhat <= 1.1 {
				rhatOK++
			}
		}
	}
	var cov, far, div, divChains, draws float64
	var errs, areas, secs []float64
	for _, m := range all {
		if m.Covered95 {
			cov++
		}
		if m.Err > 4 {
			far++
		}
		div += float64(m.Divergent)
		if m.Divergent > 0 {
			divChains++
		}
		draws += float64(m.Draws)
		errs = append(errs, m.Err)
		areas = append(areas, m.Area90)
		secs = append(secs, m.Seconds)
	}
	n := float64(len(all))
	fmt.Fprintf(w, "\nchains %d: cov2D(0.95) %.3f | med err %.3f | P90 err %.3f | err>4 %.1f%% | med A2D(0.90) %.2f | chains with divergences %.1f%% (%.2f%% of draws) | wall time per chain: median %.1f s, max %.1f s\n",
		len(all), cov/n, median(errs), quantile(errs, 0.9), 100*far/n, median(areas), 100*divChains/n, 100*div/draws, median(secs), slices.Max(secs))
	if len(rhats) > 0 {
		fmt.Fprintf(w, "images with at least 2 chains %d: split R-hat max <= 1.1 for %.1f%%\n", len(rhats), 100*float64(rhatOK)/float64(len(rhats)))
	}
	return nil
}
