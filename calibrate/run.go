package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
)

// Binder binds the plan's model to its data, with extra values replacing
// those of the same names, and the given seed (which seeds transformed
// data's draws).
type Binder func(ctx context.Context, extra []*data.Value, seed uint64) (*runtime.Model, error)

// Result is the outcome of one task.
type Result struct {
	Task
	Seed uint64 `json:"seed"`
	// HPD: the log density (without Jacobian) at the truth, and the
	// region's threshold, the (1 − level) quantile of the draws' log
	// densities.
	HPDTruth     float64 `json:"hpd_truth"`
	HPDThreshold float64 `json:"hpd_threshold"`
	HPDCovered   bool    `json:"hpd_covered"`
	// Ellipse: the squared Mahalanobis distance of the truth from the
	// draws and the chi-square radius² of the Gaussian credible ellipse.
	EllipseDist2   float64 `json:"ellipse_dist2"`
	EllipseRadius2 float64 `json:"ellipse_radius2"`
	EllipseCovered bool    `json:"ellipse_covered"`
	// Summary of the run: the parameter columns' posterior means,
	// standard deviations, medians and R-hat (rank-normalized split R-hat
	// over the run's chains, as in shm's summary table). Results written
	// before the medians and R-hat were kept have neither.
	Columns   []string  `json:"columns"`
	Mean      []float64 `json:"mean"`
	SD        []float64 `json:"sd"`
	Median    []float64 `json:"median,omitempty"`
	Rhat      []float64 `json:"rhat,omitempty"`
	Draws     int       `json:"draws"`
	Divergent int       `json:"divergent"`
	Seconds   float64   `json:"seconds"`
}

// Covered reports whether the task's region ("hpd" or "ellipse") covers
// the truth.
func (r *Result) Covered(region string) bool {
	if region == "ellipse" {
		return r.EllipseCovered
	}
	return r.HPDCovered
}

// Seed of dataset i's tasks: the same at every loss scale, so that the
// scales are compared with common random numbers.
func (p *Plan) taskSeed(dataset int) uint64 { return p.Seed + uint64(dataset) + 1 }

// TruthOf returns the truth of dataset i.
func (p *Plan) TruthOf(i int) map[string]float64 {
	if p.DatasetTruth != nil {
		return p.DatasetTruth[i]
	}
	return p.Truth
}

// Posterior is the draws of one posterior run.
type Posterior struct {
	// Theta holds the unconstrained draws; Params their parameter
	// columns (constrained, in the model's column order), chain after
	// chain, Chains chains of equal length.
	Theta, Params [][]float64
	Chains        int
	Divergent     int
}

// Sample runs the plan's chains on bm with the given seed and returns the
// post-warmup draws; progress, when not nil, receives the chains'
// iterations.
func (p *Plan) Sample(ctx context.Context, bm *runtime.Model, seed uint64, progress func(nuts.Progress)) (*Posterior, error) {
	cfg := nuts.DefaultConfig()
	cfg.Progress = progress
	cfg.NumWarmup, cfg.NumSamples = p.Warmup, p.Samples
	if p.MaxDepth > 0 {
		cfg.MaxDepth = p.MaxDepth
	}
	if p.Delta > 0 {
		cfg.Delta = p.Delta
	}
	nParams := 0
	for _, e := range bm.Layout.Entries {
		nParams += len(e.Columns)
	}
	post := &Posterior{}
	gq := rand.New(rand.NewPCG(seed, 0x6a))
	var row []float64
	for chain := 1; chain <= max(p.Chains, 1); chain++ {
		d, err := bm.NewDensity()
		if err != nil {
			return nil, err
		}
		c, err := nuts.NewChain(d, cfg, seed, chain)
		if err != nil {
			return nil, fmt.Errorf("chain %d: %w", chain, err)
		}
		err = c.Run(ctx, nuts.Callbacks{Draw: func(dr *nuts.Draw) error {
			if dr.Divergent {
				post.Divergent++
			}
			post.Theta = append(post.Theta, append([]float64(nil), dr.Theta...))
			var err error
			if row, err = d.Draw(row[:0], dr.Theta, gq); err != nil {
				return err
			}
			post.Params = append(post.Params, append([]float64(nil), row[:nParams]...))
			return nil
		}})
		if err != nil {
			return nil, fmt.Errorf("chain %d: %w", chain, err)
		}
	}
	if len(post.Theta) == 0 {
		return nil, fmt.Errorf("no draws: --samples is 0")
	}
	post.Chains = max(p.Chains, 1)
	return post, nil
}

// LogDensities returns the log density without the Jacobian of the
// constraining transforms — log p(theta) − eta·S(theta) on the parameters'
// own scale, the paper's HPD criterion — at each unconstrained point.
func LogDensities(bm *runtime.Model, thetas ...[]float64) ([]float64, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return nil, err
	}
	d.Jacobian = false
	out := make([]float64, len(thetas))
	for i, th := range thetas {
		if out[i], err = d.LogDensity(th); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RunTask runs one task: the posterior of dataset t.Dataset at loss scale
// t.Lambda, and whether the regions of credibility p.Level cover p.Truth.
func RunTask(ctx context.Context, dir Dir, p *Plan, t Task, bind Binder, progress func(nuts.Progress)) (*Result, error) {
	start := time.Now()
	extra, err := readDataset(dir, p, t.Dataset)
	if err != nil {
		return nil, err
	}
	extra = append(extra, &data.Value{Name: p.Param, Data: []float64{t.Lambda}})
	seed := p.taskSeed(t.Dataset)
	bm, err := bind(ctx, extra, seed)
	if err != nil {
		return nil, err
	}
	post, err := p.Sample(ctx, bm, seed, progress)
	if err != nil {
		return nil, err
	}
	truthColumns := p.TruthOf(t.Dataset)
	truth, err := bm.UnconstrainColumns(truthColumns)
	if err != nil {
		return nil, fmt.Errorf("truth: %w", err)
	}
	lp, err := LogDensities(bm, append(post.Theta, truth)...)
	if err != nil {
		return nil, err
	}
	r := &Result{Task: t, Seed: seed, Draws: len(post.Theta), Divergent: post.Divergent}
	r.HPDTruth = lp[len(lp)-1]
	if r.HPDThreshold, err = HPDThreshold(lp[:len(lp)-1], p.Level); err != nil {
		return nil, err
	}
	r.HPDCovered = r.HPDTruth >= r.HPDThreshold
	for _, e := range bm.Layout.Entries {
		r.Columns = append(r.Columns, e.Columns...)
	}
	point := make([]float64, len(r.Columns))
	for j, c := range r.Columns {
		point[j] = truthColumns[c]
	}
	if r.EllipseDist2, r.EllipseRadius2, err = EllipseDistance(point, post.Params, p.Level); err != nil {
		return nil, err
	}
	r.EllipseCovered = r.EllipseDist2 <= r.EllipseRadius2
	r.Mean, r.SD = meanSD(post.Params)
	r.Median, r.Rhat = medianRhat(post)
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// readDataset returns the values of dataset i (none for i < 0: the data
// as given).
func readDataset(dir Dir, p *Plan, i int) ([]*data.Value, error) {
	if i < 0 {
		return nil, nil
	}
	if i >= p.Datasets {
		return nil, fmt.Errorf("dataset %d of %d", i, p.Datasets)
	}
	return data.ReadFile(dir.DatasetPath(i))
}

func meanSD(draws [][]float64) (mean, sd []float64) {
	p := len(draws[0])
	mean, sd = make([]float64, p), make([]float64, p)
	for _, d := range draws {
		for j := range mean {
			mean[j] += d[j]
		}
	}
	for j := range mean {
		mean[j] /= float64(len(draws))
	}
	for _, d := range draws {
		for j := range sd {
			sd[j] += (d[j] - mean[j]) * (d[j] - mean[j])
		}
	}
	for j := range sd {
		sd[j] = math.Sqrt(sd[j] / float64(max(len(draws)-1, 1)))
	}
	return mean, sd
}

// medianRhat returns each parameter column's median over all draws and its
// R-hat over the chains.
func medianRhat(post *Posterior) (median, rhat []float64) {
	p := len(post.Params[0])
	n := len(post.Params) / post.Chains
	median, rhat = make([]float64, p), make([]float64, p)
	col := make([]float64, len(post.Params))
	for j := range p {
		for s, d := range post.Params {
			col[s] = d[j]
		}
		chains := make([][]float64, post.Chains)
		for c := range chains {
			chains[c] = col[c*n : (c+1)*n]
		}
		rhat[j] = diag.Rhat(chains)
		median[j] = diag.Quantile(col, 0.5)
	}
	return median, rhat
}
