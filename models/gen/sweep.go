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
// percentile of the distance from the posterior mean to the truth, the
// share of runs farther than 4 pixels, and the share of runs with a
// divergence. The paper measures the distance from the componentwise
// posterior median, which the calibration's summaries do not keep.
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
		fmt.Fprintf(w, "%s\nlambda,runs,cov2D,se,med_err,p90_err,err_gt_4_pct,divergent_runs_pct\n", dir)
		var lambdas []float64
		byLambda := map[float64][]sweepRun{}
		for _, r := range rows {
			if r.dataset < 1 || r.dataset > len(truth) {
				return fmt.Errorf("%s: dataset %d has no truth in plan.json", dir, r.dataset)
			}
			t := truth[r.dataset-1]
			r.err = math.Hypot(r.dx-t[0], r.dy-t[1])
			if _, ok := byLambda[r.lambda]; !ok {
				lambdas = append(lambdas, r.lambda)
			}
			byLambda[r.lambda] = append(byLambda[r.lambda], r)
		}
		slices.Sort(lambdas)
		for _, l := range lambdas {
			runs := byLambda[l]
			var cov, far, div float64
			var errs []float64
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
				errs = append(errs, r.err)
			}
			n := float64(len(runs))
			p := cov / n
			fmt.Fprintf(w, "%g,%d,%.3f,%.3f,%.3f,%.3f,%.1f,%.1f\n", l, len(runs), p, math.Sqrt(p*(1-p)/n),
				median(errs), quantile(errs, 0.9), 100*far/n, 100*div/n)
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
	dx, dy    float64 // posterior means
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
	var out []sweepRun
	for k, r := range rows[1:] {
		var s sweepRun
		var errs [6]error
		s.lambda, errs[0] = strconv.ParseFloat(r[col["lambda"]], 64)
		s.dataset, errs[1] = strconv.Atoi(r[col["dataset"]])
		s.covered, errs[2] = strconv.ParseBool(r[col["ellipse_covered"]])
		s.divergent, errs[3] = strconv.Atoi(r[col["divergent"]])
		s.dx, errs[4] = strconv.ParseFloat(r[col["mean_dx"]], 64)
		s.dy, errs[5] = strconv.ParseFloat(r[col["mean_dy"]], 64)
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("%s: row %d: %v", path, k+2, e)
			}
		}
		out = append(out, s)
	}
	return out, nil
}
