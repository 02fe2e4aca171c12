package calibrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
)

// Reuse holds the settings of a calibration that reuses its runs (the
// fast path; --exact turns it off):
//
//   - Reweighting. A task whose dataset has a run at another loss scale
//     is decided from that run's draws, importance-reweighted to the
//     task's scale (the posteriors of one dataset at two scales differ by
//     a factor of the loss alone), when Pareto-smoothed importance
//     sampling trusts the weights: k̂ at most MaxParetoK (and at most
//     1 − 1/log10 S for S draws) and an effective sample size at least
//     MinEfficiency of the run's own. The nearest run is tried first.
//   - Warm starts. A run starts from the nearest run of its dataset at
//     another scale (or, for datasets that share a truth, from the pilot),
//     taking its step size, metric and last point, with WarmWarmup
//     iterations of warmup that adapt the step size only. A warm run whose
//     R-hat exceeds MaxRhat, or whose bulk ESS falls below MinESS of its
//     draws, is redone with full adaptation.
type Reuse struct {
	WarmWarmup    int     `json:"warm_warmup"`
	MaxRhat       float64 `json:"max_rhat"`
	MinESS        float64 `json:"min_ess"`
	MaxParetoK    float64 `json:"max_pareto_k"`
	MinEfficiency float64 `json:"min_efficiency"`
}

// DefaultReuse returns the fast path's settings: 150 warmup iterations
// for warm starts; R-hat at most 1.1 (Gelman and Rubin's threshold) and a
// bulk ESS of at least a twentieth of the draws — the checks are for a
// warm start that failed, not for a posterior that mixes slowly: on
// Experiment B single chains of 300 draws have R-hat up to 1.07 and bulk
// ESS 41–111 with full adaptation, 25–124 warm-started; k̂ at most 0.7
// (Vehtari et al. 2024) and a reweighted effective sample size of at
// least a quarter of the run's (Tanaka 2024).
func DefaultReuse() *Reuse {
	return &Reuse{WarmWarmup: 150, MaxRhat: 1.1, MinESS: 0.05, MaxParetoK: 0.7, MinEfficiency: 0.25}
}

// maxParetoK is the largest k̂ trusted for s draws: MaxParetoK, and no
// more than Vehtari et al.'s sample-size bound 1 − 1/log10(s) (0.60 for
// 300 draws).
func (u *Reuse) maxParetoK(s int) float64 {
	return min(u.MaxParetoK, 1-1/math.Log10(float64(s)))
}

// check returns why a warm-started run fails the checks, "" when it
// passes.
func (u *Reuse) check(post *Posterior) string {
	_, rhat := medianRhat(post)
	worst := 0.0
	for _, r := range rhat {
		if math.IsNaN(r) {
			worst = r
			break
		}
		worst = max(worst, r)
	}
	ess := minESS(post)
	if !(worst <= u.MaxRhat) || !(ess >= u.MinESS*float64(len(post.Params))) {
		return fmt.Sprintf("R-hat %.3f, bulk ESS %.0f", worst, ess)
	}
	return ""
}

// minESS returns the smallest bulk effective sample size of the
// posterior's parameter columns (0 where it is not finite).
func minESS(post *Posterior) float64 {
	n := len(post.Params) / post.Chains
	out := math.Inf(1)
	col := make([]float64, len(post.Params))
	for j := range post.Params[0] {
		for s, d := range post.Params {
			col[s] = d[j]
		}
		chains := make([][]float64, post.Chains)
		for c := range chains {
			chains[c] = col[c*n : (c+1)*n]
		}
		e := diag.ESSBulk(chains)
		if math.IsNaN(e) || math.IsInf(e, 0) {
			e = 0
		}
		out = min(out, e)
	}
	if math.IsInf(out, 1) {
		return 0
	}
	return out
}

// runsOf returns the results of dataset i that are runs of their own, by
// increasing loss scale.
func (d Dir) runsOf(i int, p *Plan) ([]*Result, error) {
	scales, err := d.scales()
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, lambda := range scales {
		r, err := d.ReadResult(Task{Lambda: lambda, Dataset: i}, p)
		if err != nil {
			return nil, err
		}
		if r != nil && r.IsRun() {
			out = append(out, r)
		}
	}
	return out, nil
}

// scales returns the loss scales that have a folder of results, in
// increasing order. (The folder's name is not a glob pattern: it may
// hold any character.)
func (d Dir) scales() ([]float64, error) {
	entries, err := os.ReadDir(d.path("results"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, e := range entries {
		text, ok := strings.CutPrefix(e.Name(), "lambda=")
		lambda, err := strconv.ParseFloat(text, 64)
		if e.IsDir() && ok && err == nil && lambda > 0 && lambdaText(lambda) == text {
			out = append(out, lambda)
		}
	}
	slices.Sort(out)
	return out, nil
}

// byNearness orders results by the distance of their loss scale from
// lambda on the log scale, the lower scale first between two at the same
// distance.
func byNearness(rs []*Result, lambda float64) {
	slices.SortStableFunc(rs, func(a, b *Result) int {
		da, db := math.Abs(math.Log(a.Lambda/lambda)), math.Abs(math.Log(b.Lambda/lambda))
		if c := cmp.Compare(da, db); c != 0 {
			return c
		}
		return cmp.Compare(a.Lambda, b.Lambda)
	})
}

// warmSource returns the run whose chains start task t's, or nil for a
// run from nothing: the nearest run of the same dataset at another
// scale; for datasets that share a truth, otherwise the pilot (the run
// that estimated a bootstrap's truth) or the nearest run of the first
// dataset. Only runs that kept their chains' states qualify.
func (d Dir) warmSource(p *Plan, t Task) (*Result, error) {
	own, err := d.runsOf(t.Dataset, p)
	if err != nil {
		return nil, err
	}
	own = slices.DeleteFunc(own, func(r *Result) bool { return r.Lambda == t.Lambda || len(r.Chains) == 0 })
	if len(own) > 0 {
		byNearness(own, t.Lambda)
		return own[0], nil
	}
	if p.DatasetTruth != nil {
		return nil, nil
	}
	pilot, err := d.ReadPilot()
	if err != nil || pilot != nil {
		return pilot, err
	}
	if t.Dataset == 0 {
		return nil, nil
	}
	first, err := d.runsOf(0, p)
	if err != nil {
		return nil, err
	}
	first = slices.DeleteFunc(first, func(r *Result) bool { return len(r.Chains) == 0 })
	if len(first) == 0 {
		return nil, nil
	}
	byNearness(first, t.Lambda)
	return first[0], nil
}

// WritePilot stores the adaptation of the run that estimated a
// bootstrap's truth: warm starts of the first loss scale's runs take it.
func (d Dir) WritePilot(lambda float64, post *Posterior) error {
	r := &Result{Task: Task{Lambda: lambda, Dataset: -1}, Source: SourceRun, Chains: post.States, Draws: len(post.Theta)}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(d.PilotPath(), append(b, '\n'))
}

// ReadPilot returns the pilot run's adaptation, or nil when there is
// none.
func (d Dir) ReadPilot() (*Result, error) {
	b, err := data.ReadAll(d.PilotPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", d.PilotPath(), err)
	}
	if len(r.Chains) == 0 || !(r.Lambda > 0) {
		return nil, fmt.Errorf("%s: no chain states", d.PilotPath())
	}
	return &r, nil
}

// affineRelTol bounds the disagreement, relative to the log densities'
// magnitude, between a log density evaluated at a third loss scale and
// its value predicted from two others, below which the log density is
// taken for affine in the loss scale.
const affineRelTol = 1e-8

// affineChecks is the number of draws (evenly spaced, with the truth) at
// which affinity is checked at a third scale: a log density's form in
// the loss scale does not change from draw to draw, and each check costs
// an evaluation of the model.
const affineChecks = 20

// affineTerms sets dr.Prior and dr.Loss when the model's log density is
// affine in the loss scale: from the log densities at the run's scale λ
// and at 2λ, checked at λ/2 at the truth and affineChecks draws. lp1 are
// the draws' at λ, truthLP the truth's. A model that is not (or cannot
// be bound at the other scales) leaves them nil.
func (p *Plan) affineTerms(ctx context.Context, dir Dir, t Task, bind Binder, dr *Draws, truth []float64, truthLP float64) error {
	n := len(dr.Theta)
	points := append(slices.Clone(dr.Theta), truth)
	lp1 := append(slices.Clone(dr.LP), truthLP)
	checked := []int{n}
	for k := range min(affineChecks, n) {
		checked = append(checked, k*n/min(affineChecks, n))
	}
	at := func(lambda float64, idx []int) ([]float64, error) {
		bm, _, err := p.bindTask(ctx, dir, t, lambda, bind)
		if err != nil {
			return nil, err
		}
		pts := points
		if idx != nil {
			pts = make([][]float64, len(idx))
			for j, i := range idx {
				pts[j] = points[i]
			}
		}
		return LogDensities(bm, pts...)
	}
	lambda := t.Lambda
	lp2, err := at(2*lambda, nil)
	var lp3 []float64
	if err == nil {
		lp3, err = at(lambda/2, checked)
	}
	if err != nil {
		// Not bound or evaluated at the other scales: not affine, as far
		// as reweighting knows.
		return ctx.Err()
	}
	prior, loss := make([]float64, len(points)), make([]float64, len(points))
	for s := range points {
		loss[s] = (lp2[s] - lp1[s]) / lambda
		prior[s] = lp1[s] - lambda*loss[s]
		if math.IsNaN(loss[s]) || math.IsInf(loss[s], 0) || math.IsNaN(prior[s]) || math.IsInf(prior[s], 0) {
			return nil
		}
	}
	for j, s := range checked {
		pred := prior[s] + lambda/2*loss[s]
		scale := 1 + math.Abs(lp1[s]) + math.Abs(lp2[s]) + math.Abs(lp3[j])
		if !(math.Abs(pred-lp3[j]) <= affineRelTol*scale) {
			return nil // not affine at this draw
		}
	}
	dr.Prior, dr.Loss = prior[:n], loss[:n]
	dr.TruthPrior, dr.TruthLoss = prior[n], loss[n]
	return nil
}

// Reweight decides task t from the draws of a run of the same dataset at
// another loss scale, importance-reweighted to t.Lambda, when the weights
// can be trusted (p.Reuse); it returns nil when no run qualifies. The
// runs are tried nearest first.
func Reweight(ctx context.Context, dir Dir, p *Plan, t Task, bind Binder) (*Result, error) {
	if p.Reuse == nil {
		return nil, nil
	}
	start := time.Now()
	runs, err := dir.runsOf(t.Dataset, p)
	if err != nil {
		return nil, err
	}
	runs = slices.DeleteFunc(runs, func(r *Result) bool { return r.Lambda == t.Lambda })
	byNearness(runs, t.Lambda)
	truthColumns := p.TruthOf(t.Dataset)
	var (
		bm    *runtime.Model // the model at t.Lambda, for runs that are not affine
		truth []float64
	)
	for _, run := range runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dr, err := dir.runDraws(run)
		if err != nil {
			return nil, err
		}
		if dr == nil {
			continue
		}
		var lp []float64
		var truthLP float64
		if dr.Affine() {
			lp, truthLP = dr.LogDensityAt(t.Lambda)
		}
		if bm == nil {
			// The model at the task's scale: for runs whose draws are not
			// affine in λ, and to check those that are at this scale (they
			// were checked between λ/2 and 2λ of their own).
			if bm, _, err = p.bindTask(ctx, dir, t, t.Lambda, bind); err != nil {
				return nil, err
			}
			if truth, err = bm.UnconstrainColumns(truthColumns); err != nil {
				return nil, fmt.Errorf("truth: %w", err)
			}
		}
		if dr.Affine() {
			mid := len(dr.Theta) / 2
			direct, err := logDensitiesOrZero(bm, truth, dr.Theta[0], dr.Theta[mid])
			if err != nil {
				return nil, err
			}
			for j, pred := range []float64{truthLP, lp[0], lp[mid]} {
				if !(math.Abs(pred-direct[j]) <= affineRelTol*(1+math.Abs(pred)+math.Abs(direct[j]))) {
					lp = nil // not affine this far from the run's scale
					break
				}
			}
		}
		if lp == nil {
			all, err := logDensitiesOrZero(bm, append(slices.Clone(dr.Theta), truth)...)
			if err != nil {
				return nil, err
			}
			lp, truthLP = all[:len(all)-1], all[len(all)-1]
		}
		if math.IsNaN(truthLP) || math.IsInf(truthLP, 0) {
			return nil, fmt.Errorf("the truth's log density at lambda %s is %g", lambdaText(t.Lambda), truthLP)
		}
		logRatios := make([]float64, len(lp))
		for s := range lp {
			logRatios[s] = lp[s] - dr.LP[s]
		}
		rEff := 1.0
		if run.ESS > 0 && run.Draws > 0 {
			rEff = min(1, run.ESS/float64(run.Draws))
		}
		ps, err := diag.PSIS(logRatios, rEff)
		if err != nil {
			continue // weights that cannot be used (NaN or +Inf ratios)
		}
		w := make([]float64, len(ps.LogWeights))
		sq := 0.0
		for s, lw := range ps.LogWeights {
			w[s] = math.Exp(lw)
			sq += w[s] * w[s]
		}
		efficiency := 1 / sq / float64(len(w))
		if !(ps.K <= p.Reuse.maxParetoK(len(w))) || !(efficiency >= p.Reuse.MinEfficiency) {
			continue
		}
		r := &Result{Task: t, Seed: run.Seed, Source: SourceReweighted, FromLambda: run.Lambda, ParetoK: ps.K,
			ESS: ps.ESS, Draws: len(w), Divergent: run.Divergent, Columns: run.Columns, Rhat: run.Rhat,
			DatasetSHA256: run.DatasetSHA256}
		point := make([]float64, len(r.Columns))
		for j, c := range r.Columns {
			point[j] = truthColumns[c]
		}
		if err := r.decide(truthLP, lp, w, point, dr.Params, p.Level); err != nil {
			return nil, err
		}
		r.Mean, r.SD, r.Median = weightedSummary(dr.Params, w)
		r.Seconds = time.Since(start).Seconds()
		return r, nil
	}
	return nil, nil
}

// logDensitiesOrZero is LogDensities where a point the model rejects (a
// domain error, reject()) has zero density: log density −Inf, a weight of
// zero.
func logDensitiesOrZero(bm *runtime.Model, thetas ...[]float64) ([]float64, error) {
	return logDensities(bm, true, thetas)
}

// weightedSummary returns each column's weighted mean, standard deviation
// (with the unbiased weighted variance's denominator 1 − Σw²) and median,
// for normalized weights w.
func weightedSummary(draws [][]float64, w []float64) (mean, sd, median []float64) {
	p := len(draws[0])
	mean, sd, median = make([]float64, p), make([]float64, p), make([]float64, p)
	sq := 0.0
	for _, x := range w {
		sq += x * x
	}
	order := make([]int, len(draws))
	for j := range p {
		for s, d := range draws {
			mean[j] += w[s] * d[j]
		}
		v := 0.0
		for s, d := range draws {
			v += w[s] * (d[j] - mean[j]) * (d[j] - mean[j])
		}
		sd[j] = math.Sqrt(v / max(1-sq, 1e-300))
		for s := range order {
			order[s] = s
		}
		slices.SortFunc(order, func(a, b int) int {
			if c := cmp.Compare(draws[a][j], draws[b][j]); c != 0 {
				return c
			}
			return a - b
		})
		cum := 0.0
		for _, s := range order {
			cum += w[s]
			if cum >= 0.5 {
				median[j] = draws[s][j]
				break
			}
		}
	}
	return mean, sd, median
}
