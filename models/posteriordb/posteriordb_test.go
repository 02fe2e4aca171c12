// Package posteriordb_test compares shm's posteriors with the posteriordb
// reference posteriors kept in ../shared/posteriordb (see README.md here).
//
// For every posterior, the model in this folder, written from the plain-math
// description model.md, is checked, bound to posteriordb's data.json and
// sampled in-process with NUTS; then every reference parameter is compared
// with reference.json:
//
//	|mean − mean_ref| ≤ 4·sqrt(mcse² + mcse_ref²) + 1e-3·sd_ref
//	|sd − sd_ref|     ≤ 4·sqrt(se² + se_ref²)
//
// where mcse is that of the shm run, measured by runtime/diag, and se is the
// standard error of an sd: sd/sqrt(2·ESS_bulk), or the delta-method MCSE of
// the sd (diag.MCSESD, computed from the draws, and for the reference from
// reference_draws.json) when that is larger — it is for heavy-tailed
// parameters and when NUTS draws are antithetic (bulk ESS above the number of
// draws, but not for the squared deviations that decide the sd).
//
// By default (go test) only the cheap posteriors run, with 4 chains of 500
// warmup and 500 sampling iterations; the tolerances come from the measured
// Monte Carlo errors of that short run, so they are wider but still those of
// the same test. With SHM_POSTERIORDB=full every posterior runs with 4 chains
// of 1000 warmup and 1000 sampling iterations, as issue 4 asks:
//
//	SHM_POSTERIORDB=full go test -v -run 'TestPosteriordb|TestRegression' -timeout 120m ./models/posteriordb/
//
// In the full mode a posterior's run stops after SHM_POSTERIORDB_TIMEOUT
// (default 30m), which fails the test unless the posterior is a known
// failure. SHM_POSTERIORDB_PROGRESS=1 logs every chain's progress every 100
// iterations (useful with -v for the slow ones).
//
// Posteriors known not to meet the check are listed in knownFailures; in the
// full mode they still run and their numbers are logged, and the test checks
// the symptom given as the reason (divergences for the centred eight schools).
package posteriordb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
	"github.com/shmlang/shm/runtime/stancsv"
)

// posterior is one posteriordb posterior and how this test treats it.
type posterior struct {
	name string
	// cheap posteriors also run in the default (short) mode.
	cheap bool
	// gradEdit, when set, replaces gradEdit[0] by gradEdit[1] in the
	// model that TestGradients checks: the solution of an adaptive ODE
	// solver is smooth in the parameters only to its tolerance (its step
	// sizes change with them), so finite differences check its gradient
	// only when the tolerances are far tighter than sampling needs.
	gradEdit [2]string
	// heavy lists the parameters (Stan names) whose tails are too heavy
	// for means and sds to be estimated from a few thousand draws (the
	// model.md says so): their median and 95% quantile are compared
	// instead, with the quantiles' Monte Carlo errors.
	heavy []string
	// adaptDelta, when set, is the target acceptance statistic, where
	// posteriordb's reference run used one above Stan's default 0.8.
	adaptDelta float64
}

var posteriors = []posterior{
	{name: "arK-arK"},
	{name: "arma-arma11"},
	{name: "diamonds-diamonds"},
	{name: "earnings-earn_height"},
	{name: "earnings-logearn_interaction_z", cheap: true},
	{name: "eight_schools-eight_schools_centered", cheap: true},
	{name: "eight_schools-eight_schools_noncentered", cheap: true},
	{name: "garch-garch11"},
	{name: "kidiq-kidscore_interaction"},
	{name: "kidiq-kidscore_momiq"},
	{name: "kidiq_with_mom_work-kidscore_interaction_z", cheap: true},
	{name: "kilpisjarvi_mod-kilpisjarvi"},
	{name: "mesquite-logmesquite", cheap: true},
	{name: "nes1972-nes"},
	{name: "sblrc-blr", cheap: true},
	// The second set: constrained types and built-ins (issue 17).
	{name: "low_dim_gauss_mix-low_dim_gauss_mix"},
	{name: "hmm_example-hmm_example", cheap: true},
	{name: "bball_drive_event_0-hmm_drive_0"},
	{name: "bball_drive_event_1-hmm_drive_1"},
	{name: "gp_pois_regr-gp_regr", cheap: true},
	{name: "gp_pois_regr-gp_pois_regr"},
	// User-defined functions and ODE solvers (issue 17).
	{name: "hudson_lynx_hare-lotka_volterra", gradEdit: [2]string{"1e-8, 1e-8, 100000", "1e-12, 1e-12, 10000000"}},
	{name: "one_comp_mm_elim_abs-one_comp_mm_elim_abs", gradEdit: [2]string{"x_r, x_i);", "x_r, x_i, 1e-12, 1e-12, 100000000);"},
		heavy: []string{"K_m", "V_m"}, adaptDelta: 0.99},
}

// knownFailures are the posteriors that are not expected to pass the
// comparison with Stan's default settings, with the reason (see README.md).
var knownFailures = map[string]string{
	"arma-arma11": "with seed 20251125 chain 3 starts at theta = 1.39 (|theta| > 1: the MA recursion explodes, lp = -1.6e56) " +
		"and is trapped on a ridge where the adapted step size is 1e-28 and every iteration hits tree depth 10; see README.md",
	"diamonds-diamonds":                    "too slow for a 2-core machine: about 2.2 s per iteration per chain (4 chains on 2 loaded cores, trees of depth 9-10); see README.md",
	"eight_schools-eight_schools_centered": "funnel: divergent transitions with adapt_delta 0.8, small tau under-explored",
}

// expectDivergences lists the known failures whose symptom is divergences,
// which the sampler must report.
var expectDivergences = map[string]bool{
	"eight_schools-eight_schools_centered": true,
}

// runSettings are the chain lengths of one mode.
type runSettings struct {
	chains, warmup, samples int
	// timeout stops a posterior's run (0: no limit).
	timeout time.Duration
	// delta is the target acceptance statistic (0: the default).
	delta float64
}

// settings returns the mode's chain lengths; in the full mode each
// posterior's run stops after SHM_POSTERIORDB_TIMEOUT (a Go duration,
// default 30m).
func settings(t testing.TB) (runSettings, bool) {
	if os.Getenv("SHM_POSTERIORDB") != "full" {
		return runSettings{chains: 4, warmup: 500, samples: 500}, false
	}
	s := runSettings{chains: 4, warmup: 1000, samples: 1000, timeout: 30 * time.Minute}
	if v := os.Getenv("SHM_POSTERIORDB_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SHM_POSTERIORDB_TIMEOUT: %v", err)
		}
		s.timeout = d
	}
	return s, true
}

// sharedDir returns ../shared/posteriordb relative to the repository root.
func sharedDir(t testing.TB) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "posteriordb")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the posteriordb files must be in shared/ beside the repository: %v", err)
	}
	return p
}

// bind checks a model file and binds it to a JSON data file.
func bind(t testing.TB, model, dataFile string) *runtime.Model {
	t.Helper()
	text, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	return bindSource(t, model, string(text), dataFile)
}

// editedDensity returns the density of p's model with p.gradEdit applied.
func editedDensity(t testing.TB, p posterior, dir string) *runtime.Density {
	t.Helper()
	text, err := os.ReadFile(p.name + ".shm")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), p.gradEdit[0]) {
		t.Fatalf("%s.shm does not contain %q", p.name, p.gradEdit[0])
	}
	src := strings.Replace(string(text), p.gradEdit[0], p.gradEdit[1], 1)
	d, err := bindSource(t, p.name+".shm", src, filepath.Join(dir, p.name, "data.json")).NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bindSource checks and binds a model's source to a data file.
func bindSource(t testing.TB, model, text, dataFile string) *runtime.Model {
	t.Helper()
	m, errs := ir.CheckSource(model, text)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	vals, err := data.ReadFile(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	set := &data.Set{}
	if err := set.AddFile(vals); err != nil {
		t.Fatal(err)
	}
	bm, err := runtime.Bind(m, set, runtime.Options{Impls: runtime.Builtins(), Seed: 1, DataFiles: []string{dataFile}})
	if err != nil {
		t.Fatal(err)
	}
	return bm
}

// reference is the part of reference.json this test reads.
type reference struct {
	Parameters map[string]refParam `json:"parameters"`
	// draws are the raw reference draws by Stan name, chains[c][i], when
	// reference_draws.json is present (not for diamonds).
	draws map[string][][]float64
}

// refParam is one parameter's summary in reference.json.
type refParam struct {
	Mean     float64 `json:"mean"`
	SD       float64 `json:"sd"`
	Q50      float64 `json:"q50"`
	Q95      float64 `json:"q95"`
	ESSBulk  float64 `json:"ess_bulk"`
	MCSEMean float64 `json:"mcse_mean"`
}

func readReference(t testing.TB, path string) *reference {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(ref.Parameters) == 0 {
		t.Fatalf("%s: no parameters", path)
	}
	b, err = os.ReadFile(filepath.Join(filepath.Dir(path), "reference_draws.json"))
	if os.IsNotExist(err) {
		return &ref
	}
	if err != nil {
		t.Fatal(err)
	}
	var chains []map[string][]float64
	if err := json.Unmarshal(b, &chains); err != nil {
		t.Fatalf("reference draws: %v", err)
	}
	ref.draws = map[string][][]float64{}
	for _, c := range chains {
		for name, d := range c {
			ref.draws[name] = append(ref.draws[name], d)
		}
	}
	return &ref
}

// sdError is the standard error of a standard deviation estimate: the
// larger of sd/sqrt(2·ESS_bulk) (exact for independent normal draws) and
// the delta-method MCSE of the sd (diag.MCSESD), which accounts for the
// kurtosis and for the ESS of the squared draws, lower than the bulk ESS
// when NUTS is antithetic for the mean.
func sdError(sd, essBulk float64, chains [][]float64) float64 {
	se := sd / math.Sqrt(2*essBulk)
	if chains != nil {
		if m := diag.MCSESD(chains); m > se {
			se = m
		}
	}
	return se
}

var stanIndex = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\[([0-9, ]+)\]$`)

// csvName turns Stan's output name "b[2]" or "x[1,2]" into our CSV column
// name "b.2" or "x.1.2".
func csvName(stan string) string {
	m := stanIndex.FindStringSubmatch(stan)
	if m == nil {
		return stan
	}
	idx := strings.Split(strings.ReplaceAll(m[2], " ", ""), ",")
	return m[1] + "." + strings.Join(idx, ".")
}

func TestCSVName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sigma", "sigma"},
		{"beta[1]", "beta.1"},
		{"theta[10]", "theta.10"},
		{"x[1,2]", "x.1.2"},
		{"x[3, 4]", "x.3.4"},
		{"Intercept", "Intercept"},
	} {
		if got := csvName(c.in); got != c.want {
			t.Errorf("csvName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// run samples a bound model in memory and returns the fit (sampler columns
// then the model's columns) and the wall time of the whole run. When the
// run takes longer than s.timeout (if set) it is stopped and the error,
// a *timeoutError, tells how far every chain got.
func run(t testing.TB, bm *runtime.Model, s runSettings, seed uint64) (*diag.Fit, time.Duration, error) {
	t.Helper()
	start := time.Now()
	ctx := context.Background()
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = s.warmup, s.samples
	if s.delta > 0 {
		cfg.Delta = s.delta
	}
	logProgress := os.Getenv("SHM_POSTERIORDB_PROGRESS") != ""
	var mu sync.Mutex
	done := make([]int, s.chains+1) // iterations finished, by chain id
	cfg.Progress = func(p nuts.Progress) {
		mu.Lock()
		done[p.Chain] = p.Iteration
		mu.Unlock()
		if logProgress && p.Iteration%100 == 0 {
			t.Logf("chain %d: iteration %d / %d at %.0fs", p.Chain, p.Iteration, p.Total, time.Since(start).Seconds())
		}
	}
	cols := append(stancsv.SamplerColumns(), bm.Columns()...)
	fit := &diag.Fit{Model: bm.IR.Name, Columns: cols, Chains: make([]diag.Chain, s.chains)}
	errs := make([]error, s.chains)
	var wg sync.WaitGroup
	for i := range s.chains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fit.Chains[i], errs[i] = runChain(ctx, bm, cfg, seed, i+1)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if ctx.Err() != nil {
		return nil, wall, &timeoutError{after: wall, total: s.warmup + s.samples, done: done[1:]}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return fit, wall, nil
}

// timeoutError reports a run stopped at its time limit.
type timeoutError struct {
	after time.Duration
	total int   // iterations per chain
	done  []int // iterations finished by each chain
}

func (e *timeoutError) Error() string {
	parts := make([]string, len(e.done))
	for i, n := range e.done {
		parts[i] = fmt.Sprintf("chain %d: %d", i+1, n)
	}
	return fmt.Sprintf("stopped after %.0fs; iterations done of %d: %s", e.after.Seconds(), e.total, strings.Join(parts, ", "))
}

// runChain runs one chain and converts its draws to output rows.
func runChain(ctx context.Context, bm *runtime.Model, cfg nuts.Config, seed uint64, id int) (diag.Chain, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return diag.Chain{}, err
	}
	res, err := nuts.Sample(ctx, d, cfg, seed, id)
	if err != nil {
		return diag.Chain{}, fmt.Errorf("chain %d: %w", id, err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(id)<<32|0x6a))
	ch := diag.Chain{
		NumWarmup: cfg.NumWarmup, Thin: cfg.Thin, MaxDepth: cfg.MaxDepth,
		WarmupSeconds:   res.Timing.Warmup.Seconds(),
		SamplingSeconds: res.Timing.Sampling.Seconds(),
	}
	for k := range res.Draws {
		dr := &res.Draws[k]
		if dr.Warmup {
			continue
		}
		row := dr.AppendSamplerValues(nil)
		if row, err = d.Draw(row, dr.Theta, rng); err != nil {
			return diag.Chain{}, fmt.Errorf("chain %d: %w", id, err)
		}
		ch.Draws = append(ch.Draws, row)
	}
	return ch, nil
}

// comparison is the outcome of comparing one parameter with the reference.
type comparison struct {
	name                string
	stats               [2]string // "mean", "sd"; or "q50", "q95" for a heavy-tailed parameter
	mean, refMean, mcse float64
	sd, refSD           float64
	zMean, zSD          float64 // in units of the combined standard error
	meanTol, sdTol      float64
	meanOK, sdOK        bool
	essBulk, refESSBulk float64
	rhat                float64
}

// compare applies the check to every reference parameter.
func compare(t testing.TB, post posterior, ref *reference, fit *diag.Fit, rows []diag.Summary) []comparison {
	t.Helper()
	byName := map[string]diag.Summary{}
	column := map[string]int{}
	for j, r := range rows {
		byName[r.Name] = r
		column[r.Name] = j
	}
	names := make([]string, 0, len(ref.Parameters))
	for n := range ref.Parameters {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []comparison
	for _, n := range names {
		p := ref.Parameters[n]
		r, ok := byName[csvName(n)]
		if !ok {
			t.Errorf("reference parameter %s (%s) is not in the output", n, csvName(n))
			continue
		}
		if slices.Contains(post.heavy, n) {
			out = append(out, compareQuantiles(t, n, p, ref.draws[n], fit.Column(column[r.Name]), r))
			continue
		}
		c := comparison{name: csvName(n), stats: [2]string{"mean", "sd"}, mean: r.Mean, refMean: p.Mean, mcse: r.MCSE,
			sd: r.SD, refSD: p.SD, essBulk: r.ESSBulk, refESSBulk: p.ESSBulk, rhat: r.Rhat}
		seMean := math.Hypot(r.MCSE, p.MCSEMean)
		c.meanTol = 4*seMean + 1e-3*p.SD
		c.zMean = (r.Mean - p.Mean) / seMean
		seSD := math.Hypot(sdError(r.SD, r.ESSBulk, fit.Column(column[r.Name])), sdError(p.SD, p.ESSBulk, ref.draws[n]))
		c.sdTol = 4 * seSD
		c.zSD = (r.SD - p.SD) / seSD
		c.meanOK = math.Abs(r.Mean-p.Mean) <= c.meanTol
		c.sdOK = math.Abs(r.SD-p.SD) <= c.sdTol
		out = append(out, c)
	}
	return out
}

// compareQuantiles compares the median and the 95% quantile of a
// heavy-tailed parameter: |q − q_ref| ≤ 4·sqrt(mcse_q² + mcse_q,ref²), the
// Monte Carlo errors of the quantiles from both sets of draws.
func compareQuantiles(t testing.TB, n string, p refParam, refDraws, draws [][]float64, r diag.Summary) comparison {
	t.Helper()
	if refDraws == nil {
		t.Fatalf("%s: heavy-tailed parameters need the reference draws", n)
	}
	var pooled []float64
	for _, ch := range draws {
		pooled = append(pooled, ch...)
	}
	q50, q95 := diag.Quantile(pooled, 0.5), diag.Quantile(pooled, 0.95)
	se50 := math.Hypot(diag.MCSEQuantile(draws, 0.5), diag.MCSEQuantile(refDraws, 0.5))
	se95 := math.Hypot(diag.MCSEQuantile(draws, 0.95), diag.MCSEQuantile(refDraws, 0.95))
	c := comparison{name: csvName(n), stats: [2]string{"q50", "q95"}, mean: q50, refMean: p.Q50, sd: q95, refSD: p.Q95,
		essBulk: r.ESSBulk, refESSBulk: p.ESSBulk, rhat: r.Rhat}
	c.meanTol, c.sdTol = 4*se50, 4*se95
	c.zMean, c.zSD = (q50-p.Q50)/se50, (q95-p.Q95)/se95
	c.meanOK, c.sdOK = math.Abs(q50-p.Q50) <= c.meanTol, math.Abs(q95-p.Q95) <= c.sdTol
	return c
}

// TestPosteriordb samples every posterior (only the cheap ones unless
// SHM_POSTERIORDB=full) and compares it with the reference.
func TestPosteriordb(t *testing.T) {
	s, full := settings(t)
	dir := sharedDir(t)
	for _, p := range posteriors {
		t.Run(p.name, func(t *testing.T) {
			if !full && !p.cheap {
				t.Skipf("runs only with SHM_POSTERIORDB=full (expensive)")
			}
			bm := bind(t, p.name+".shm", filepath.Join(dir, p.name, "data.json"))
			ref := readReference(t, filepath.Join(dir, p.name, "reference.json"))
			rs := s
			rs.delta = p.adaptDelta
			fit, wall, err := run(t, bm, rs, 20251125)
			known, isKnown := knownFailures[p.name]
			if err != nil {
				t.Logf("RESULT %s chains=%d warmup=%d samples=%d wall=%.2fs status=timeout (%v)", p.name, s.chains, s.warmup, s.samples, wall.Seconds(), err)
				if !isKnown {
					t.Fatal(err)
				}
				t.Logf("known failure (%s)", known)
				return
			}
			rows, err := diag.Summarize(fit)
			if err != nil {
				t.Fatal(err)
			}
			sd, err := diag.Sampler(fit)
			if err != nil {
				t.Fatal(err)
			}
			cmps := compare(t, p, ref, fit, rows)
			maxZ, minESS, minESSps := 0.0, math.Inf(1), math.Inf(1)
			nFail := 0
			for _, c := range cmps {
				maxZ = math.Max(maxZ, math.Abs(c.zMean))
				minESS = math.Min(minESS, c.essBulk)
				if !c.meanOK || !c.sdOK {
					nFail++
				}
			}
			for _, r := range rows[len(stancsv.SamplerColumns()):] {
				if hasRef(ref, r.Name) {
					minESSps = math.Min(minESSps, r.ESSBulkPerSec)
				}
			}
			status := "pass"
			if nFail > 0 {
				status = "FAIL"
			}
			t.Logf("RESULT %s chains=%d warmup=%d samples=%d wall=%.2fs minESSbulk=%.0f minESSbulk/s=%.1f max|z_mean|=%.2f failed=%d/%d divergent=%d/%d treedepth_hits=%d status=%s",
				p.name, s.chains, s.warmup, s.samples, wall.Seconds(), minESS, minESSps, maxZ, nFail, len(cmps), sd.Divergent, sd.Draws, sd.MaxDepthHits, status)
			for _, c := range cmps {
				t.Logf("  %-12s %-4s %12.6g ref %12.6g (z %6.2f, tol %.3g) %-4s %11.5g ref %11.5g (z %6.2f) ess %6.0f rhat %.3f %s",
					c.name, c.stats[0], c.mean, c.refMean, c.zMean, c.meanTol, c.stats[1], c.sd, c.refSD, c.zSD, c.essBulk, c.rhat, okText(c.meanOK && c.sdOK))
			}
			if isKnown {
				t.Logf("known failure (%s): %d of %d parameters outside the tolerance", known, nFail, len(cmps))
				if expectDivergences[p.name] && sd.Divergent == 0 {
					t.Errorf("expected divergent transitions (%s), got none in %d draws", known, sd.Draws)
				}
				return
			}
			for _, c := range cmps {
				if !c.meanOK {
					t.Errorf("%s: %s %.6g, reference %.6g: difference %.3g exceeds %.3g (z = %.2f)",
						c.name, c.stats[0], c.mean, c.refMean, c.mean-c.refMean, c.meanTol, c.zMean)
				}
				if !c.sdOK {
					t.Errorf("%s: %s %.6g, reference %.6g: difference %.3g exceeds %.3g (z = %.2f)",
						c.name, c.stats[1], c.sd, c.refSD, c.sd-c.refSD, c.sdTol, c.zSD)
				}
			}
		})
	}
}

// hasRef reports whether the CSV column name is one of the reference's
// parameters.
func hasRef(ref *reference, column string) bool {
	for n := range ref.Parameters {
		if csvName(n) == column {
			return true
		}
	}
	return false
}

func okText(ok bool) string {
	if ok {
		return "ok"
	}
	return "OUTSIDE"
}

// TestGradients checks, for every posterior, the log density's gradient
// from the tape against finite differences (autodiff.NumericGradient) at
// three random points on the unconstrained scale, drawn as the sampler's
// initial points are (uniform(−2, 2)).
func TestGradients(t *testing.T) {
	dir := sharedDir(t)
	for _, p := range posteriors {
		t.Run(p.name, func(t *testing.T) {
			d := editedDensity(t, p, dir)
			rng := rand.New(rand.NewPCG(7, 11))
			n := d.Dim()
			theta, grad, num := make([]float64, n), make([]float64, n), make([]float64, n)
			for range 3 {
				for i := range theta {
					theta[i] = -2 + 4*rng.Float64()
				}
				lp, err := d.LogDensityGrad(theta, grad)
				if err != nil {
					t.Fatal(err)
				}
				if math.IsNaN(lp) || math.IsInf(lp, 0) {
					t.Fatalf("log density at %v is %v", theta, lp)
				}
				var evalErr error
				autodiff.NumericGradient(func(x []float64) float64 {
					v, err := d.LogDensity(x)
					if err != nil && evalErr == nil {
						evalErr = err
					}
					return v
				}, theta, num)
				if evalErr != nil {
					t.Fatal(evalErr)
				}
				scale := 1.0
				for _, g := range num {
					scale = math.Max(scale, math.Abs(g))
				}
				for i := range grad {
					if diff := math.Abs(grad[i] - num[i]); diff > 1e-6*scale {
						t.Errorf("at %v: d lp/d theta[%d] = %.10g, finite differences %.10g (difference %.3g, scale %.3g)",
							theta, i, grad[i], num[i], diff, scale)
					}
				}
			}
		})
	}
}
