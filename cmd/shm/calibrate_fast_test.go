package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/calibrate"
	"gonum.org/v1/gonum/stat/distuv"
)

// conjugateModel is a normal mean with a normal(0, 0.5) prior whose
// likelihood (known scale 1) is tempered by lambda: the posterior is
// normal with precision P = lambda N + 4 and mean lambda N ȳ / P, so that
// the 90% region's coverage of a truth mu0 has a closed form
// (conjugateCoverage).
const conjugateModel = `data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> lambda;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 0.5);
  target += lambda * normal_lpdf(y | mu, 1);
}
generated quantities {
  vector[N] y_rep;
  for (n in 1:N) y_rep[n] = normal_rng(mu, 1);
}
`

// conjugateCoverage is the probability that the 90% credible interval of
// conjugateModel covers mu0 over datasets of n draws from normal(mu0, 1):
// m − mu0 is normal with mean −4 mu0 / P and standard deviation
// lambda √n / P, and the interval is m ± z/√P.
func conjugateCoverage(lambda, mu0 float64, n int) float64 {
	p := lambda*float64(n) + 4
	z := distuv.UnitNormal.Quantile(0.95)
	b, v := -4*mu0/p, lambda*math.Sqrt(float64(n))/p
	return distuv.UnitNormal.CDF((z/math.Sqrt(p)-b)/v) - distuv.UnitNormal.CDF((-z/math.Sqrt(p)-b)/v)
}

// temperedCoverage is calibrationModel's: 2Φ(z/√lambda) − 1 (its prior
// is nearly flat).
func temperedCoverage(lambda, _ float64, _ int) float64 {
	return 2*distuv.UnitNormal.CDF(distuv.UnitNormal.Quantile(0.95)/math.Sqrt(lambda)) - 1
}

// coverageRow is one row of coverage.csv.
type coverageRow struct {
	covered, runs, reweighted int
}

func (c coverageRow) rate() float64 { return float64(c.covered) / float64(c.runs) }

// readCoverageRows reads coverage.csv by lambda.
func readCoverageRows(t *testing.T, dir string) map[float64]coverageRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "coverage.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[float64]coverageRow{}
	for _, r := range rows[1:] {
		l, _ := strconv.ParseFloat(r[0], 64)
		c, _ := strconv.Atoi(r[1])
		n, _ := strconv.Atoi(r[2])
		w, _ := strconv.Atoi(r[5])
		out[l] = coverageRow{c, n, w}
	}
	return out
}

// lambdaStar reads lambda* from the table on stdout.
func lambdaStar(t *testing.T, stdout string) float64 {
	t.Helper()
	_, rest, ok := strings.Cut(stdout, "lambda* = ")
	if !ok {
		t.Fatalf("no lambda* in:\n%s", stdout)
	}
	x, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// runSources counts runs.csv's rows by source.
func runSources(t *testing.T, dir string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for j, h := range rows[0] {
		if h == "source" {
			col = j
		}
	}
	out := map[string]int{}
	for _, r := range rows[1:] {
		out[r[col]]++
	}
	return out
}

// TestCalibrateFastMatchesExact: on two models whose coverage at every
// loss scale has a closed form, the fast path (reweighting and warm
// starts) gives, on the same datasets, the coverage of --exact within one
// standard error at every evaluated scale, both are within three of the
// closed form, and the searches agree on lambda* within the search's
// tolerance.
func TestCalibrateFastMatchesExact(t *testing.T) {
	const datasets = 200
	for _, tc := range []struct {
		name     string
		model    string
		coverage func(lambda, mu0 float64, n int) float64
	}{
		{"tempered normal", calibrationModel, temperedCoverage},
		{"conjugate normal", conjugateModel, conjugateCoverage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, y := calibrationFiles(t)
			model = writeFile(t, filepath.Dir(model), "model.shm", tc.model)
			base := t.TempDir()
			for _, mode := range []struct {
				name string
				args []string
			}{
				{"grid", []string{"--lambdas", "0.25,0.5,1,2,4"}},
				{"search", []string{"--start", "1", "--target", "0.8", "--factor", "4", "--tol", "0.1"}},
			} {
				var tables [2]string
				var covs [2]map[float64]coverageRow
				for k, exact := range []bool{false, true} {
					dir := filepath.Join(base, mode.name+strconv.FormatBool(exact))
					args := append([]string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5",
						"--generate", strconv.Itoa(datasets), "--replicate", "y=y_rep", "--warmup", "150", "--samples", "400",
						"--seed", "5", "--refresh", "0"}, mode.args...)
					if exact {
						args = append(args, "--exact")
					}
					var stdout, stderr bytes.Buffer
					if code := run(args, &stdout, &stderr); code != 0 {
						t.Fatalf("%s, exact %v: exit %d: %s", mode.name, exact, code, stderr.String())
					}
					tables[k], covs[k] = stdout.String(), readCoverageRows(t, dir)
					sources := runSources(t, dir)
					if exact && sources["run"] != len(covs[k])*datasets {
						t.Errorf("%s --exact: sources %v, want every task a run", mode.name, sources)
					}
					if !exact && (sources["reweighted"] == 0 || sources["warm"] == 0) {
						t.Errorf("%s fast: sources %v, want reweighted and warm-started tasks", mode.name, sources)
					}
				}
				fast, exact := covs[0], covs[1]
				for l, e := range exact {
					f, ok := fast[l]
					if !ok {
						if mode.name == "grid" {
							t.Errorf("%s: lambda %g evaluated by --exact only", mode.name, l)
						}
						continue
					}
					// One standard error of the exact coverage (at least
					// that of one dataset in either direction when it is
					// 0 or 1).
					c := min(max(e.rate(), 1.0/datasets), 1-1.0/datasets)
					se := math.Sqrt(c * (1 - c) / datasets)
					if math.Abs(f.rate()-e.rate()) > se {
						t.Errorf("%s, lambda %g: fast coverage %.3f, exact %.3f (s.e. %.3f)", mode.name, l, f.rate(), e.rate(), se)
					}
					want := tc.coverage(l, 0.5, 20)
					seWant := math.Sqrt(want * (1 - want) / datasets)
					for name, got := range map[string]float64{"fast": f.rate(), "exact": e.rate()} {
						if math.Abs(got-want) > 3*seWant+1.0/datasets {
							t.Errorf("%s, lambda %g: %s coverage %.3f, closed form %.3f (s.e. %.3f)", mode.name, l, name, got, want, seWant)
						}
					}
				}
				if mode.name == "search" {
					lf, le := lambdaStar(t, tables[0]), lambdaStar(t, tables[1])
					if math.Abs(math.Log(lf/le)) > math.Log(1.1) {
						t.Errorf("lambda*: fast %g, exact %g: further apart than the search's tolerance 0.1\nfast:\n%s\nexact:\n%s", lf, le, tables[0], tables[1])
					}
				}
			}
		})
	}
}

// TestCalibrateEdges: a grid whose every scale reaches the target says
// that lambda* is only a lower bound; one whose every scale falls short
// says so and exits non-zero; a grid that crosses the target says
// neither. A search extends its bracket from a start far from lambda*
// until the target is crossed, and says so when --max-temps stops it
// first.
func TestCalibrateEdges(t *testing.T) {
	model, y := calibrationFiles(t)
	for _, tc := range []struct {
		scales []string
		want   string
		code   int
		evals  int // scales evaluated, 0: not checked
	}{
		{[]string{"--lambdas", "0.01,0.02"}, "lambda* is a lower bound", 0, 2},
		{[]string{"--lambdas", "50,100"}, "no evaluated loss scale reaches coverage 0.9", 1, 2},
		{[]string{"--lambdas", "0.25,4"}, "", 0, 2},
		{[]string{"--start", "0.001", "--factor", "4", "--max-temps", "3"}, "lambda* is a lower bound", 0, 3},
		{[]string{"--start", "1000", "--factor", "4", "--max-temps", "3"}, "no evaluated loss scale reaches coverage 0.9", 1, 3},
		{[]string{"--start", "0.001", "--factor", "10", "--tol", "0.5"}, "", 0, 0},
	} {
		var stdout, stderr bytes.Buffer
		dir := filepath.Join(t.TempDir(), "cal")
		args := append([]string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5",
			"--generate", "40", "--replicate", "y=y_rep", "--warmup", "100", "--samples", "200",
			"--seed", "3", "--refresh", "0"}, tc.scales...)
		code := run(args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != tc.code || (tc.want != "" && !strings.Contains(out, tc.want)) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.scales, code, tc.code, tc.want, out)
		}
		if tc.want == "" && (strings.Contains(out, "lower bound") || strings.Contains(out, "no evaluated")) {
			t.Errorf("%v: a warning where the target is crossed:\n%s", tc.scales, out)
		}
		cov := readCoverage(t, dir)
		if tc.evals > 0 && len(cov) != tc.evals {
			t.Errorf("%v: %d scales evaluated, want %d", tc.scales, len(cov), tc.evals)
		}
		if tc.want == "" {
			// The target crossed: a scale reaching it and one above not.
			best, above := 0.0, false
			for l, c := range cov {
				lambda, _ := strconv.ParseFloat(l, 64)
				if float64(c[0]) >= 0.9*float64(c[1]) {
					best = max(best, lambda)
				}
			}
			for l, c := range cov {
				lambda, _ := strconv.ParseFloat(l, 64)
				above = above || (lambda > best && float64(c[0]) < 0.9*float64(c[1]))
			}
			if best == 0 || !above {
				t.Errorf("%v: the target is not bracketed: %v", tc.scales, cov)
			}
		}
	}
}

// TestCalibrateEditedFiles: a calibration rerun into its folder after its
// model or data file was edited in place is refused, naming the file,
// where it would have reused every old result; the unedited rerun
// resumes.
func TestCalibrateEditedFiles(t *testing.T) {
	model, y := calibrationFiles(t)
	dir := filepath.Join(t.TempDir(), "cal")
	args := []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "10",
		"--replicate", "y=y_rep", "--lambdas", "1", "--warmup", "100", "--samples", "100", "--seed", "3", "--refresh", "0"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("the unedited rerun: exit %d: %s", code, stderr.String())
	}
	for _, file := range []string{model, y} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(text), "normal(0, 100)", "normal(0, 10)", 1)
		if file == y {
			edited = strings.Replace(string(text), "\n", "\n3\n", 1)
		}
		if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		stderr.Reset()
		if code := run(args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), file+" was edited") {
			t.Errorf("rerun after editing %s: exit %d: %s", filepath.Base(file), code, stderr.String())
		}
		os.WriteFile(file, text, 0o644)
	}
}

// sqrtModel tempers the likelihood by sqrt(lambda): its log density is
// not affine in lambda, so reweighting evaluates the model at each new
// scale instead of combining a draw's prior and loss terms. The posterior
// is N(ȳ, 1/(sqrt(lambda) N)) for its nearly flat prior: the 90% region
// covers the truth with probability 2Φ(1.645 lambda^(-1/4)) − 1.
const sqrtModel = `data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> lambda;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 100);
  target += sqrt(lambda) * normal_lpdf(y | mu, 1);
}
generated quantities {
  vector[N] y_rep;
  for (n in 1:N) y_rep[n] = normal_rng(mu, 1);
}
`

// TestCalibrateNotAffine: the fast path on a model whose log density is
// not affine in lambda keeps no prior and loss terms, reweights by
// evaluating the model, and agrees with --exact and the closed form.
func TestCalibrateNotAffine(t *testing.T) {
	const datasets = 100
	_, y := calibrationFiles(t)
	model := writeFile(t, t.TempDir(), "sqrt.shm", sqrtModel)
	base := t.TempDir()
	var covs [2]map[float64]coverageRow
	for k, exact := range []bool{false, true} {
		dir := filepath.Join(base, strconv.FormatBool(exact))
		args := []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", strconv.Itoa(datasets),
			"--replicate", "y=y_rep", "--lambdas", "0.25,1,4,16", "--warmup", "150", "--samples", "400", "--seed", "2", "--refresh", "0"}
		if exact {
			args = append(args, "--exact")
		}
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("exact %v: exit %d: %s", exact, code, stderr.String())
		}
		covs[k] = readCoverageRows(t, dir)
		if !exact {
			dr, err := calibrate.Dir(dir).ReadDraws(calibrate.Task{Lambda: 0.25, Dataset: 0})
			if err != nil || dr == nil || dr.Affine() {
				t.Errorf("the run's draws: %v, %v; want draws without prior and loss terms", dr, err)
			}
			if covs[k][4].reweighted == 0 {
				t.Errorf("no task reweighted: %+v", covs[k])
			}
		}
	}
	for l, e := range covs[1] {
		f := covs[0][l]
		c := min(max(e.rate(), 1.0/datasets), 1-1.0/datasets)
		se := math.Sqrt(c * (1 - c) / datasets)
		if math.Abs(f.rate()-e.rate()) > se {
			t.Errorf("lambda %g: fast coverage %.3f, exact %.3f (s.e. %.3f)", l, f.rate(), e.rate(), se)
		}
		want := 2*distuv.UnitNormal.CDF(distuv.UnitNormal.Quantile(0.95)*math.Pow(l, -0.25)) - 1
		seWant := math.Sqrt(want * (1 - want) / datasets)
		if math.Abs(e.rate()-want) > 3*seWant+1.0/datasets {
			t.Errorf("lambda %g: exact coverage %.3f, closed form %.3f", l, e.rate(), want)
		}
	}
}

// TestCalibrateLambdaFlags: out-of-range settings are refused before
// anything runs, naming the flag, with status 2 and no folder written.
func TestCalibrateLambdaFlags(t *testing.T) {
	model, y := calibrationFiles(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--lambdas", "1,Inf"}, `--lambdas: "Inf" is not a positive finite number`},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--lambdas", "NaN"}, `--lambdas: "NaN" is not a positive finite number`},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--workers", "0"}, "--workers must be at least 1, got 0"},
		{[]string{"--bootstrap", "0", "--resample", "y"}, "--bootstrap must be at least 1, got 0"},
		{[]string{"--bootstrap", "-3", "--resample", "y"}, "--bootstrap must be at least 1, got -3"},
		{[]string{"--truth", "mu=0.5", "--generate", "-2"}, "--generate must be at least 1, got -2"},
		{[]string{"--truth", "mu=0.5", "--generate", "0"}, "--generate must be at least 1, got 0"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--start", "Inf"}, "--start must be positive and finite, got +Inf"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--start", "-1"}, "--start must be positive and finite, got -1"},
		{[]string{"--bootstrap", "4", "--resample", "y", "--lambda0", "0"}, "--lambda0 must be positive and finite, got 0"},
		{[]string{"--bootstrap", "4", "--resample", "y", "--estimate", "map"}, `--estimate must be draw or optimize, got "map"`},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--estimate", "optimize"}, "--estimate needs --bootstrap"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--factor", "Inf"}, "--factor must be above 1 and finite, got +Inf"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--factor", "1"}, "--factor must be above 1 and finite, got 1"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--tol", "0"}, "--tol must be positive and finite, got 0"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--max-temps", "0"}, "--max-temps must be at least 1, got 0"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--max-depth", "0"}, "--max-depth must be at least 1, got 0"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--adapt-delta", "1"}, "--adapt-delta must be in (0, 1), got 1"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--level", "1"}, "--level must be in (0, 1), got 1"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--target", "0"}, "--target must be in (0, 1], got 0"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--warmup", "-1"}, "--warmup must be at least 0, got -1"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--max-running", "-1"}, "--max-running must be at least 1 (or 0: no limit), got -1"},
	} {
		dir := filepath.Join(t.TempDir(), "cal")
		var stdout, stderr bytes.Buffer
		args := append([]string{"calibrate", "lambda", model, y, "--dir", dir, "--replicate", "y=y_rep"}, tc.args...)
		code := run(args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: the folder was created", tc.args)
		}
	}
}

// TestCalibrateHelpAndEpsFlags: calibrate's help exits 0 on stdout, as
// every command's; calibrate eps names a bad --alpha or --noise.
func TestCalibrateHelpAndEpsFlags(t *testing.T) {
	for _, h := range []string{"--help", "-h", "help"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"calibrate", h}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "shm calibrate lambda") {
			t.Errorf("calibrate %s: exit %d, stdout %q", h, code, stdout.String())
		}
	}
	_, y := calibrationFiles(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--alpha", "NaN"}, "--alpha must be positive and finite, got NaN"},
		{[]string{"--alpha", "0"}, "--alpha must be positive and finite, got 0"},
		{[]string{"--noise", "-1"}, "--noise must be positive and finite, got -1"},
		{[]string{"--noise", "NaN"}, "--noise must be positive and finite, got NaN"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"calibrate", "eps", y, "--y", "y"}, tc.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestCalibrateReplicates: a --replicate that names no data variable (the
// observed data would be every dataset) or a generated quantity of other
// sizes (N would change) is refused before anything is written.
func TestCalibrateReplicates(t *testing.T) {
	model, y := calibrationFiles(t)
	for _, tc := range []struct{ replicate, want string }{
		{"z=y_rep", "--replicate z=y_rep: the model has no data variable z"},
		{"y=mu", "--replicate y=mu: mu has sizes [], the data y [20]"},
		{"y=nothere", "--replicate y=nothere:"},
	} {
		dir := filepath.Join(t.TempDir(), "cal")
		var stdout, stderr bytes.Buffer
		code := run([]string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "4",
			"--replicate", tc.replicate, "--lambdas", "1", "--warmup", "50", "--samples", "50", "--refresh", "0"}, &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("--replicate %s: exit %d, stderr %q; want 1 and %q", tc.replicate, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("--replicate %s: the folder was created", tc.replicate)
		}
	}
}

// TestCalibrateSlurmMissing: --slurm where Slurm's commands are not on
// PATH is refused before anything runs or is written.
func TestCalibrateSlurmMissing(t *testing.T) {
	model, y := calibrationFiles(t)
	t.Setenv("PATH", t.TempDir())
	dir := filepath.Join(t.TempDir(), "cal")
	var stdout, stderr bytes.Buffer
	code := run([]string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "4", "--replicate", "y=y_rep", "--slurm"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--slurm: Slurm's sbatch is not on PATH") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("the folder was created")
	}
}

// TestCalibrateEstimateOptimize: a bootstrap calibration with --estimate
// optimize takes the mode as the truth: for calibrationModel at lambda0
// = 1, mu = Σy / (N + 1/100²), recorded in its plan.
func TestCalibrateEstimateOptimize(t *testing.T) {
	model, y := calibrationFiles(t)
	dir := filepath.Join(t.TempDir(), "cal")
	_, stderr, code := runCmd(t, "calibrate", "lambda", model, y, "--dir", dir, "--bootstrap", "2", "--resample", "y", "--estimate", "optimize",
		"--lambdas", "1", "--warmup", "50", "--samples", "50", "--chains", "1", "--refresh", "0", "--seed", "3")
	if code != 0 || !strings.Contains(stderr, "estimate (the mode by L-BFGS") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Truth    map[string]float64 `json:"truth"`
		Estimate string             `json:"estimate"`
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for i := 0; i < 20; i++ {
		sum += 0.5 + math.Sin(float64(7*i))
	}
	if want := sum / (20 + 1e-4); math.Abs(plan.Truth["mu"]-want) > 1e-6 || plan.Estimate != "optimize" {
		t.Errorf("truth %v, estimate %q; want mu = %v", plan.Truth, plan.Estimate, want)
	}
	// The same command resumes; another --lambda0 (another truth) or
	// --estimate is another calibration.
	common := []string{"calibrate", "lambda", model, y, "--dir", dir, "--bootstrap", "2", "--resample", "y",
		"--lambdas", "1", "--warmup", "50", "--samples", "50", "--chains", "1", "--refresh", "0", "--seed", "3"}
	for _, c := range []struct {
		extra []string
		code  int
	}{
		{[]string{"--estimate", "optimize"}, 0},
		{[]string{"--estimate", "optimize", "--lambda0", "20"}, 1},
		{nil, 1},
	} {
		_, stderr, code := runCmd(t, append(slices.Clone(common), c.extra...)...)
		if code != c.code || code == 1 && !strings.Contains(stderr, "holds a calibration with other settings") {
			t.Errorf("%v: exit %d, stderr %q", c.extra, code, stderr)
		}
	}
}
