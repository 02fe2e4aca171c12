package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"time"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
	"github.com/shmlang/shm/stdlib/sinkhorn"
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

	// Source says how the result was obtained: SourceRun, SourceWarm or
	// SourceReweighted (results of earlier versions have none: runs).
	Source string `json:"source,omitempty"`
	// A warm-started run: the run whose adaptation and last points
	// started it, its warmup iterations, and whether the warm start failed
	// its checks so that the run was redone with full adaptation (Source
	// is then SourceRun).
	WarmFrom *Task `json:"warm_from,omitempty"`
	Warmup   int   `json:"warmup,omitempty"`
	Redone   bool  `json:"redone,omitempty"`
	// Why a warm start was redone: its error, or its largest R-hat and
	// smallest bulk ESS.
	RedoneWhy string `json:"redone_why,omitempty"`
	// A reweighted result: the loss scale of the run whose draws were
	// reweighted, and the Pareto k̂ of the weights.
	FromLambda float64 `json:"from_lambda,omitempty"`
	ParetoK    float64 `json:"pareto_k,omitempty"`
	// ESS: of a run, the smallest bulk effective sample size of its
	// parameter columns; of a reweighted result, the effective sample
	// size of the weighted draws (PSIS's, with the run's relative
	// efficiency).
	ESS float64 `json:"ess,omitempty"`
	// Chains holds each chain's adaptation and last point (runs only):
	// what a warm start of another run takes.
	Chains []ChainState `json:"chains,omitempty"`

	// DatasetSHA256 is the SHA-256 of the dataset the result is of (its
	// file, hexadecimal): a result is refused when its dataset's recorded
	// digest differs. DrawsSHA256 is that of the run's draws file, when it
	// kept one (Dir.WriteResult).
	DatasetSHA256 string `json:"dataset_sha256"`
	DrawsSHA256   string `json:"draws_sha256,omitempty"`

	// draws are the run's draws, written beside the result by
	// Dir.WriteResult (runs of a calibration that reuses them).
	draws *Draws
}

// The sources of a result.
const (
	SourceRun        = "run"        // a run with full adaptation
	SourceWarm       = "warm"       // a run warm-started from another run's adaptation
	SourceReweighted = "reweighted" // another run's draws, importance-reweighted
)

// IsRun reports whether the result comes from a run of its own (not
// reweighted).
func (r *Result) IsRun() bool { return r.Source != SourceReweighted }

// ChainState is a chain's adaptation at the end of a run and its last
// point on the unconstrained scale.
type ChainState struct {
	StepSize  float64   `json:"step_size"`
	InvMetric []float64 `json:"inv_metric"` // diagonal, or dense (row-major)
	Last      []float64 `json:"last"`
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
	// States holds each chain's adaptation and last point.
	States []ChainState
}

// WarmStart starts a run from another run's chains: each chain takes the
// step size, inverse metric and last point of the other run's chain of
// the same number (cycling when it had fewer), and its warmup adapts the
// step size only, for Warmup iterations.
type WarmStart struct {
	States []ChainState
	Warmup int
}

// SampleOptions are a run's settings beyond the plan: a warm start, and
// what does not change its draws.
type SampleOptions struct {
	// Warm, when not nil, starts the run from another run's chains.
	Warm *WarmStart
	// Progress, when not nil, receives the chains' iterations.
	Progress func(nuts.Progress)
	// Activity, when not nil, receives the state of each chain's
	// iteration in progress (nuts.Config.Activity), for a heartbeat.
	Activity func(nuts.Activity)
	// Replicates is the number of goroutines that evaluate the
	// replicates of a crn call (0: GOMAXPROCS, which fills the cores
	// while a run is alone; runs side by side are faster with 1 each).
	Replicates int
	// MemoryShare, when above 1, is the number of runs side by side that
	// share the memory: a run whose chains and draws need more than its
	// share of half of it (sysmem.MaxElements) is refused before it
	// starts.
	MemoryShare int
}

// checkMemory refuses a run whose chain (cfg.MemoryWords) and kept draws
// (every chain's unconstrained points and parameter columns) need more
// than its share of half of the memory, and bounds each chain by that
// share (cfg.MaxMemory).
func (p *Plan) checkMemory(cfg *nuts.Config, dim, nParams, share int) error {
	limit := sysmem.MaxElements() / int64(max(share, 1))
	if limit <= 0 {
		return nil
	}
	cfg.MaxMemory = limit
	kept := float64(max(p.Chains, 1)) * float64(p.Samples) * float64(dim+nParams)
	if words := cfg.MemoryWords(dim, false) + kept; words > float64(limit) {
		return fmt.Errorf("a run needs %s (its %d chains' draws of %d values each, %d samples), more than %s, its share of half of %s with %d runs at once: give fewer --samples or --chains, or fewer --workers",
			sysmem.Bytes(8*words), max(p.Chains, 1), dim+nParams, p.Samples, sysmem.Bytes(8*float64(limit)), sysmem.Source(), max(share, 1))
	}
	return nil
}

// Sample runs the plan's chains on bm with the given seed and returns the
// post-warmup draws.
func (p *Plan) Sample(ctx context.Context, bm *runtime.Model, seed uint64, opts SampleOptions) (*Posterior, error) {
	warm := opts.Warm
	cfg := nuts.DefaultConfig()
	cfg.Progress, cfg.Activity = opts.Progress, opts.Activity
	cfg.NumWarmup, cfg.NumSamples = p.Warmup, p.Samples
	if p.MaxDepth > 0 {
		cfg.MaxDepth = p.MaxDepth
	}
	if p.Delta > 0 {
		cfg.Delta = p.Delta
	}
	switch p.Metric {
	case "", "diag":
	case "dense":
		cfg.Metric = nuts.Dense
	default:
		return nil, fmt.Errorf("metric %q: want diag or dense", p.Metric)
	}
	nParams := 0
	for _, e := range bm.Layout.Entries {
		nParams += len(e.Columns)
	}
	if err := p.checkMemory(&cfg, bm.Dim(), nParams, opts.MemoryShare); err != nil {
		return nil, err
	}
	post := &Posterior{}
	gq := rand.New(rand.NewPCG(seed, 0x6a))
	var row []float64
	for chain := 1; chain <= max(p.Chains, 1); chain++ {
		d, err := bm.NewDensity()
		if err != nil {
			return nil, err
		}
		// The draws do not depend on the replicates' workers.
		d.Workers = opts.Replicates
		if d.Workers <= 0 {
			d.Workers = sinkhorn.ReplicateWorkers(goruntime.GOMAXPROCS(0))
		}
		ccfg := cfg
		if warm != nil && len(warm.States) > 0 {
			st := warm.States[(chain-1)%len(warm.States)]
			metricLen := d.Dim()
			if cfg.Metric == nuts.Dense {
				metricLen *= d.Dim()
			}
			if len(st.Last) != d.Dim() || len(st.InvMetric) != metricLen || !(st.StepSize > 0) {
				return nil, fmt.Errorf("warm start: a chain state of dimension %d (metric of %d entries) for a model of dimension %d", len(st.Last), len(st.InvMetric), d.Dim())
			}
			ccfg.NumWarmup, ccfg.FixedMetric = warm.Warmup, true
			ccfg.StepSize, ccfg.InvMetric, ccfg.Init = st.StepSize, st.InvMetric, st.Last
		}
		c, err := nuts.NewChain(d, ccfg, seed, chain)
		if err != nil {
			return nil, fmt.Errorf("chain %d: %w", chain, err)
		}
		var last []float64
		err = c.Run(ctx, nuts.Callbacks{Draw: func(dr *nuts.Draw) error {
			if dr.Divergent {
				post.Divergent++
			}
			last = append([]float64(nil), dr.Theta...)
			post.Theta = append(post.Theta, last)
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
		a := c.Adaptation()
		post.States = append(post.States, ChainState{StepSize: a.StepSize, InvMetric: a.InvMetric, Last: last})
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
	return logDensities(bm, false, thetas)
}

// logDensities is LogDensities; with rejectedZero, a point the model
// rejects (a domain error, reject()) has zero density: log density −Inf,
// a weight of zero, where otherwise it is an error.
func logDensities(bm *runtime.Model, rejectedZero bool, thetas [][]float64) ([]float64, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return nil, err
	}
	d.Jacobian = false
	out := make([]float64, len(thetas))
	for i, th := range thetas {
		out[i], err = d.LogDensity(th)
		var r interface{ Reject() bool }
		switch {
		case err != nil && rejectedZero && errors.As(err, &r) && r.Reject():
			out[i] = math.Inf(-1)
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}

// RunTask runs one task: the posterior of dataset t.Dataset at loss scale
// t.Lambda, and whether the regions of credibility p.Level cover p.Truth.
// With p.Reuse, the run starts warm from the nearest run of the same
// dataset (or the pilot) and is redone with full adaptation when it fails
// the checks; it keeps its draws for reweighting to other scales.
// opts.Warm is ignored: the warm start is the task's own.
func RunTask(ctx context.Context, dir Dir, p *Plan, t Task, bind Binder, opts SampleOptions) (*Result, error) {
	start := time.Now()
	bm, digest, err := p.bindTask(ctx, dir, t, t.Lambda, bind)
	if err != nil {
		return nil, err
	}
	seed := p.taskSeed(t.Dataset)
	r := &Result{Task: t, Seed: seed, Source: SourceRun, Warmup: p.Warmup, DatasetSHA256: digest}
	var post *Posterior
	if p.Reuse != nil {
		from, err := dir.warmSource(p, t)
		if err != nil {
			return nil, err
		}
		if from != nil {
			warm := opts
			warm.Warm = &WarmStart{States: from.Chains, Warmup: p.Reuse.WarmWarmup}
			post, err = p.Sample(ctx, bm, seed, warm)
			var why string
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil:
				why = err.Error()
			default:
				why = p.Reuse.check(post)
			}
			if why == "" {
				ft := from.Task
				r.Source, r.WarmFrom, r.Warmup = SourceWarm, &ft, p.Reuse.WarmWarmup
			} else {
				// The warm start failed (an error, or R-hat or ESS off):
				// the run is redone from nothing.
				post, r.Redone, r.RedoneWhy = nil, true, why
			}
		}
	}
	if post == nil {
		opts.Warm = nil
		if post, err = p.Sample(ctx, bm, seed, opts); err != nil {
			return nil, err
		}
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
	r.Draws, r.Divergent, r.Chains = len(post.Theta), post.Divergent, post.States
	for _, e := range bm.Layout.Entries {
		r.Columns = append(r.Columns, e.Columns...)
	}
	point := make([]float64, len(r.Columns))
	for j, c := range r.Columns {
		point[j] = truthColumns[c]
	}
	if err := r.decide(lp[len(lp)-1], lp[:len(lp)-1], nil, point, post.Params, p.Level); err != nil {
		return nil, err
	}
	r.Mean, r.SD = meanSD(post.Params)
	r.Median, r.Rhat = medianRhat(post)
	r.ESS = minESS(post)
	if p.Reuse != nil {
		r.draws = &Draws{Theta: post.Theta, Params: post.Params, LP: lp[:len(lp)-1], Seed: seed, DatasetSHA256: digest}
		if err := p.affineTerms(ctx, dir, t, bind, r.draws, truth, lp[len(lp)-1]); err != nil {
			return nil, err
		}
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// bindTask binds the model to task t's dataset at the loss scale lambda,
// and returns the dataset's digest (checked against its record).
func (p *Plan) bindTask(ctx context.Context, dir Dir, t Task, lambda float64, bind Binder) (*runtime.Model, string, error) {
	extra, digest, err := readDataset(dir, p, t.Dataset)
	if err != nil {
		return nil, "", err
	}
	extra = append(extra, &data.Value{Name: p.Param, Data: []float64{lambda}})
	bm, err := bind(ctx, extra, p.taskSeed(t.Dataset))
	return bm, digest, err
}

// decide sets the regions' thresholds and whether they cover the truth,
// from the log densities (without Jacobian) of the truth and the draws,
// the truth's parameter columns and the draws', and the draws' weights
// (nil for equal weights).
func (r *Result) decide(truthLP float64, lp, weights, truth []float64, params [][]float64, level float64) error {
	var err error
	r.HPDTruth = truthLP
	if r.HPDThreshold, err = WeightedHPDThreshold(lp, weights, level); err != nil {
		return err
	}
	r.HPDCovered = r.HPDTruth >= r.HPDThreshold
	if r.EllipseDist2, r.EllipseRadius2, err = WeightedEllipseDistance(truth, params, weights, level); err != nil {
		return err
	}
	r.EllipseCovered = r.EllipseDist2 <= r.EllipseRadius2
	return nil
}

// readDataset returns the values of dataset i and its digest, checked
// against the record written with it (none for i < 0: the data as
// given).
func readDataset(dir Dir, p *Plan, i int) ([]*data.Value, string, error) {
	if i < 0 {
		return nil, "", nil
	}
	if i >= p.Datasets {
		return nil, "", fmt.Errorf("dataset %d of %d", i, p.Datasets)
	}
	return dir.readDatasetFile(i)
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
