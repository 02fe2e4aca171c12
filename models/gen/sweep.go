package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// sweepD prints the paper's Experiment D sweep table from the folders of
// `shm calibrate lambda` runs (one per regime): per loss scale, the
// coverage of the true offset by the Gaussian credible ellipse (the
// calibration's level), its standard error, the median and 90th
// percentile of the distance from the componentwise posterior median to
// the truth, the share of runs farther than 4 pixels, the share of runs
// with a divergence, and the share whose R-hat is at most 1.1 for both
// offsets (a NaN R-hat, a stuck chain, counts as above it). Results of
// calibrations that kept no medians or R-hat (older versions) use the
// posterior mean (the column "center" says which: median, mean or mixed)
// and print NaN for the R-hat share.
func sweepD(dirs []string, w io.Writer) error {
	for _, dir := range dirs {
		truth, err := planTruth(filepath.Join(dir, "plan.json"))
		if err != nil {
			return err
		}
		rows, err := readRuns(filepath.Join(dir, "runs.csv"))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\nlambda,runs,cov2D,se,center,med_err,p90_err,err_gt_4_pct,divergent_runs_pct,rhat_ok_pct\n", dir)
		var lambdas []float64
		byLambda := map[float64][]sweepRun{}
		for _, r := range rows {
			if r.dataset < 1 || r.dataset > len(truth) {
				return fmt.Errorf("%s: dataset %d has no truth in plan.json", dir, r.dataset)
			}
			t := truth[r.dataset-1]
			r.err = math.Hypot(r.center[0]-t[0], r.center[1]-t[1])
			if _, ok := byLambda[r.lambda]; !ok {
				lambdas = append(lambdas, r.lambda)
			}
			byLambda[r.lambda] = append(byLambda[r.lambda], r)
		}
		slices.Sort(lambdas)
		for _, l := range lambdas {
			runs := byLambda[l]
			var cov, far, div, rhatOK float64
			var errs []float64
			medians, means := 0, 0
			for _, r := range runs {
				if r.covered {
					cov++
				}
				if r.err > 4 {
					far++
				}
				if r.divergent > 0 {
					div++
				}
				switch {
				case !r.hasRhat:
					rhatOK = math.NaN() // not kept: unknown
				case r.rhat[0] <= 1.1 && r.rhat[1] <= 1.1:
					rhatOK++ // a NaN R-hat (a stuck chain) is not
				}
				if r.fromMean {
					means++
				} else {
					medians++
				}
				errs = append(errs, r.err)
			}
			center := "median"
			switch {
			case means > 0 && medians > 0:
				center = "mixed"
			case means > 0:
				center = "mean"
			}
			n := float64(len(runs))
			p := cov / n
			fmt.Fprintf(w, "%g,%d,%.3f,%.3f,%s,%.3f,%.3f,%.1f,%.1f,%.1f\n", l, len(runs), p, math.Sqrt(p*(1-p)/n),
				center, median(errs), quantile(errs, 0.9), 100*far/n, 100*div/n, 100*rhatOK/n)
		}
	}
	return nil
}

// sweepRun is one row of a calibration's runs.csv.
type sweepRun struct {
	lambda    float64
	dataset   int // 1-based, as runs.csv writes it
	covered   bool
	divergent int
	center    [2]float64 // posterior medians of dx, dy (means when fromMean)
	fromMean  bool
	rhat      [2]float64
	hasRhat   bool // runs.csv has the R-hat columns
	err       float64
}

// planTruth reads the datasets' true offsets (dx, dy) from a calibration's
// plan.json.
func planTruth(path string) ([][2]float64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var plan struct {
		Truth []map[string]float64 `json:"dataset_truth"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	out := make([][2]float64, len(plan.Truth))
	for i, t := range plan.Truth {
		dx, okx := t["dx"]
		dy, oky := t["dy"]
		if !okx || !oky {
			return nil, fmt.Errorf("%s: dataset %d has no truth for dx and dy", path, i+1)
		}
		out[i] = [2]float64{dx, dy}
	}
	return out, nil
}

// readRuns reads the columns of runs.csv that sweepD needs.
func readRuns(path string) ([]sweepRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("%s: no runs", path)
	}
	col := map[string]int{}
	for i, n := range rows[0] {
		col[n] = i
	}
	for _, n := range []string{"lambda", "dataset", "ellipse_covered", "divergent", "mean_dx", "mean_dy"} {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("%s: no column %s", path, n)
		}
	}
	// optional returns the row's value of a column that older runs.csv
	// files lack, or NaN.
	optional := func(r []string, name string) (float64, error) {
		i, ok := col[name]
		if !ok {
			return math.NaN(), nil
		}
		return strconv.ParseFloat(r[i], 64)
	}
	_, hasX := col["rhat_dx"]
	_, hasY := col["rhat_dy"]
	hasRhat := hasX && hasY
	var out []sweepRun
	for k, r := range rows[1:] {
		var s sweepRun
		var errs [10]error
		var mean, med [2]float64
		s.lambda, errs[0] = strconv.ParseFloat(r[col["lambda"]], 64)
		s.dataset, errs[1] = strconv.Atoi(r[col["dataset"]])
		s.covered, errs[2] = strconv.ParseBool(r[col["ellipse_covered"]])
		s.divergent, errs[3] = strconv.Atoi(r[col["divergent"]])
		mean[0], errs[4] = strconv.ParseFloat(r[col["mean_dx"]], 64)
		mean[1], errs[5] = strconv.ParseFloat(r[col["mean_dy"]], 64)
		med[0], errs[6] = optional(r, "median_dx")
		med[1], errs[7] = optional(r, "median_dy")
		s.rhat[0], errs[8] = optional(r, "rhat_dx")
		s.rhat[1], errs[9] = optional(r, "rhat_dy")
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("%s: row %d: %v", path, k+2, e)
			}
		}
		s.center = med
		if math.IsNaN(med[0]) || math.IsNaN(med[1]) {
			s.center, s.fromMean = mean, true
		}
		s.hasRhat = hasRhat
		out = append(out, s)
	}
	return out, nil
}
