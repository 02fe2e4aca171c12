package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestCalibrateLambdaModes: flags that conflict, that need another mode,
// or that repeat a name are refused before anything runs, with one line
// naming the flags, status 2 and no folder written.
func TestCalibrateLambdaModes(t *testing.T) {
	model, y := calibrationFiles(t)
	known := []string{"--truth", "mu=0.5", "--generate", "4", "--replicate", "y=y_rep"}
	boot := []string{"--bootstrap", "4", "--resample", "y"}
	with := func(base []string, extra ...string) []string { return append(append([]string{}, base...), extra...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{with(boot, "--generate", "3", "--replicate", "y=y_rep"), "--generate and --bootstrap are two ways of getting the datasets"},
		{with(boot, "--datasets", "a.json"), "--datasets and --bootstrap are two ways of getting the datasets"},
		{with(known, "--max-running", "2"), "--max-running needs --slurm"},
		{with(known, "--runs-per-task", "2"), "--runs-per-task needs --slurm"},
		{with(known, "--sbatch", "--partition=long"), "--sbatch needs --slurm"},
		{with(known, "--lambda0", "2"), "--lambda0 needs --bootstrap"},
		{with(known, "--resample", "y"), "--resample needs --bootstrap"},
		{with(boot, "--replicate", "y=y_rep"), "--replicate needs --generate"},
		{with(known, "--exact", "--warm-warmup", "50"), "--warm-warmup conflicts with --exact"},
		{with(known, "--set", "lambda=3"), "--set lambda=3: lambda is the loss scale"},
		{with(known, "--param", "s", "--set", "s=3"), "--set s=3: s is the loss scale"},
		{with(known, "--lambdas", "1,2", "--start", "0.5"), "--start is a setting of the search"},
		{with(known, "--lambdas", "1,2", "--max-temps", "3"), "--max-temps is a setting of the search"},
		{with(known, "--lambdas", "1,2,1"), "--lambdas: 1 is given twice"},
		{[]string{"--bootstrap", "4", "--resample", "y,y"}, `--resample "y,y": y is given twice`},
		{with(boot, "--resample", "y"), "--resample is given twice (--resample y, then --resample y): give it once"},
		{with(boot, "--hold", "h, h"), `--hold "h, h": h is given twice`},
		{with(boot, "--hold", "h,"), `--hold "h,": an empty name`},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--replicate", "y=y_rep,y=y_rep"}, "the data y is replaced twice"},
		{[]string{"--truth", "mu=0.5", "--generate", "4", "--replicate", "y=y_rep,N=y_rep"}, "the generated quantity y_rep is used twice"},
	} {
		dir := filepath.Join(t.TempDir(), "cal")
		var stdout, stderr bytes.Buffer
		args := append([]string{"calibrate", "lambda", model, y, "--dir", dir, "--refresh", "0"}, tc.args...)
		code := run(args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: the folder was created", tc.args)
		}
	}
}

// TestCalibrateLambdaRefusedBeforeRuns: settings the model makes
// impossible (a --param that is not a real scalar data variable, too few
// draws for the regions) and --collect on a folder without a calibration
// are refused before any run, naming the flag, with no folder written.
func TestCalibrateLambdaRefusedBeforeRuns(t *testing.T) {
	model, y := calibrationFiles(t)
	known := []string{"--truth", "mu=0.5", "--generate", "3", "--replicate", "y=y_rep"}
	with := func(extra ...string) []string { return append(append([]string{}, known...), extra...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{with("--param", "nope"), "--param nope: no real data variable of that name (the model's: lambda)"},
		{with("--param", "h"), "--param h: h is transformed data; the loss scale must be a real (scalar) data variable"},
		{with("--param", "N"), "--param N: the loss scale must be a real (scalar) data variable; N is declared int"},
		{with("--param", "y"), "--param y: the loss scale must be a real (scalar) data variable; y is declared vector"},
		{with("--samples", "1"), "--chains 1 × --samples 1 = 1 draws per run: the credible regions need more draws"},
		{with("--collect"), "holds no calibration (no plan.json): there are no results to collect"},
	} {
		dir := filepath.Join(t.TempDir(), "cal")
		var stdout, stderr bytes.Buffer
		args := append([]string{"calibrate", "lambda", model, y, "--dir", dir, "--refresh", "0"}, tc.args...)
		code := run(args, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "running") {
			t.Errorf("%v: exit %d, stderr %q; want a failure with %q and no run", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: the folder was created", tc.args)
		}
	}
}

// datasetFile writes a dataset of n values of y.
func datasetFile(t *testing.T, dir, name string, shift float64, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"y": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatFloat(shift+math.Sin(float64(3*i+1)), 'g', -1, 64))
	}
	b.WriteString("]}\n")
	return writeFile(t, dir, name, b.String())
}

// TestCalibrateInputsEdited: a rerun after any input file was edited
// (a --datasets file, a --truth CSV or JSON file, as the model and data in
// TestCalibrateEditedFiles) is refused, naming the file.
func TestCalibrateInputsEdited(t *testing.T) {
	model, y := calibrationFiles(t)
	for _, tc := range []struct {
		name  string
		truth func(dir string) string
		edit  func(dir string) string // edits a file, returns its name
	}{
		{"dataset", func(string) string { return "mu=0.5" },
			func(dir string) string { return datasetFile(t, dir, "d1.json", 0.9, 20) }},
		{"truth csv", func(dir string) string {
			return writeFile(t, dir, "truth.csv", "file,mu\nd1.json,0.5\nd2.json,0.5\n")
		}, func(dir string) string { return writeFile(t, dir, "truth.csv", "file,mu\nd1.json,0.5\nd2.json,0.6\n") }},
		{"truth json", func(dir string) string { return writeFile(t, dir, "truth.json", `{"mu": 0.5}`) },
			func(dir string) string { return writeFile(t, dir, "truth.json", `{"mu": 0.6}`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := t.TempDir()
			datasetFile(t, in, "d1.json", 0.5, 20)
			datasetFile(t, in, "d2.json", 0.4, 20)
			dir := filepath.Join(t.TempDir(), "cal")
			args := []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", tc.truth(in),
				"--datasets", filepath.Join(in, "d*.json"), "--lambdas", "1", "--warmup", "100", "--samples", "100", "--refresh", "0"}
			var stdout, stderr bytes.Buffer
			run(args, &stdout, &stderr) // coverage may miss the target: the folder is what counts
			if _, err := os.Stat(filepath.Join(dir, "plan.json")); err != nil {
				t.Fatalf("no plan: %s", stderr.String())
			}
			file := tc.edit(in)
			stderr.Reset()
			if code := run(args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), file+" was edited") {
				t.Errorf("rerun after editing %s: exit %d: %s", filepath.Base(file), code, stderr.String())
			}
		})
	}
}

// TestCalibrateDatasetsAndTruthRefused: dataset files that replace none
// of the model's data, datasets given twice (by path or by contents) and
// truth CSV files with a column or a file named twice, or a value that is
// not a finite number, are refused before any run, naming the file (and
// row and column); names that are not the model's are warned about.
func TestCalibrateDatasetsAndTruthRefused(t *testing.T) {
	model, y := calibrationFiles(t)
	in := t.TempDir()
	d1 := datasetFile(t, in, "d1.json", 0.5, 20)
	d2 := datasetFile(t, in, "d2.json", 0.4, 20)
	copy1 := datasetFile(t, in, "copy1.json", 0.5, 20)
	empty := writeFile(t, in, "empty.json", "{}\n")
	other := writeFile(t, in, "other.json", `{"Y": [1, 2, 3]}`)
	truth := func(text string) string { return writeFile(t, t.TempDir(), "truth.csv", text) }
	both := d1 + "," + d2
	for _, tc := range []struct {
		truth, datasets, want string
	}{
		{"mu=0.5", empty, "--datasets " + empty + " holds none of the model's data (N, y)"},
		{"mu=0.5", other, "--datasets " + other + " holds none of the model's data (N, y)"},
		{"mu=0.5", d2 + "," + d2, "is given twice (as " + d2 + " and " + d2 + ")"},
		{"mu=0.5", d1 + "," + filepath.Join(in, "..", filepath.Base(in), "d1.json"), "d1.json is given twice"},
		{"mu=0.5", d1 + "," + copy1, d1 + " and " + copy1 + " have the same contents"},
		{truth("file,mu\nd1.json,0.5\nd2.json,0.5\nd1.json,0.7\n"), both, "rows 2 and 4 both give the truth of d1.json"},
		{truth("file,mu\nd1.json,0.5\nd2.json,NaN\n"), both, "row 3 (d2.json), column mu: NaN (a parameter's value must be finite)"},
		{truth("file,mu\nd1.json,Inf\nd2.json,0.5\n"), both, "row 2 (d1.json), column mu: +Inf (a parameter's value must be finite)"},
		{truth("mu\n0.5\nx\n"), both, `row 3 (d2.json), column mu: "x" is not a number`},
		{truth("mu,mu\n0.5,0.5\n0.5,0.5\n"), both, "the column mu is named twice"},
		{truth("file,mu\nd1.json,0.5\n"), both, "has no row for d2.json"},
	} {
		dir := filepath.Join(t.TempDir(), "cal")
		var stdout, stderr bytes.Buffer
		args := []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", tc.truth, "--datasets", tc.datasets,
			"--lambdas", "1", "--refresh", "0"}
		code := run(args, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "running") {
			t.Errorf("%s %s: exit %d, stderr %q; want a failure with %q before any run", tc.truth, tc.datasets, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s %s: the folder was created", tc.truth, tc.datasets)
		}
	}
	// Names the model does not use are warned about: a dataset's, a truth
	// file's columns (Experiment D's truth.csv describes its images).
	mixed := writeFile(t, in, "mixed.json", `{"Y": [1, 2], "y": [1, 2, 3], "N": 3, "lambda": 7}`)
	truthCSV := truth("index,file,mu,sigma\n1,mixed.json,0.5,1\n")
	var stdout, stderr bytes.Buffer
	run([]string{"calibrate", "lambda", model, y, "--dir", filepath.Join(t.TempDir(), "cal"), "--truth", truthCSV,
		"--datasets", mixed, "--lambdas", "1", "--warmup", "50", "--samples", "50", "--refresh", "0"}, &stdout, &stderr)
	for _, want := range []string{"--datasets " + mixed + ": Y is not a data variable of the model (ignored)",
		"--datasets " + mixed + ": its lambda is ignored: the loss scale (--param) is set by the calibration",
		"--truth " + truthCSV + ": the column(s) index, sigma are not parameters of the model (its parameters: mu): ignored"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no warning %q in %q", want, stderr.String())
		}
	}
}

// TestCalibrateBudgetFlags: calibrate iters' and crn's budgets given
// twice, a crn K without a spread, --ref 0 and --points without --draws
// are refused before the model is read, naming the flag.
func TestCalibrateBudgetFlags(t *testing.T) {
	model, y := calibrationFiles(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"iters", "--iters", "10,10", "--at", "mu=1"}, "--iters: 10 is given twice"},
		{[]string{"iters", "--iters", "10", "--ref", "0", "--at", "mu=1"}, "--ref must be a positive integer, got 0"},
		{[]string{"iters", "--iters", "10", "--ref", "-1", "--at", "mu=1"}, "--ref must be a positive integer, got -1"},
		{[]string{"iters", "--iters", "10", "--at", "mu=1", "--points", "5"}, "--points needs --draws"},
		{[]string{"crn", "--k", "2,2", "--at", "mu=1"}, "--k: 2 is given twice"},
		{[]string{"crn", "--k", "1", "--at", "mu=1"}, "--k: 1 is below 2: Var[S̄_K] is estimated from the spread of the K replicates"},
		{[]string{"crn", "--k", "4,1", "--at", "mu=1"}, "--k: 1 is below 2"},
		{[]string{"crn", "--k", "2", "--at", "mu=1", "--points", "3"}, "--points needs --draws"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"calibrate", tc.args[0], model, y, "--set", "lambda=1"}, tc.args[1:]...)
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestCalibrateDrawsOfAnotherModel: --draws whose columns are not the
// model's are refused (naming the header's model when it is another);
// the model's columns under another model name are taken with a warning.
func TestCalibrateDrawsOfAnotherModel(t *testing.T) {
	model, y := calibrationFiles(t)
	bm, err := bindModel(model, []string{y}, []string{"lambda=1"}, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sampler := []string{"lp__", "accept_stat__", "stepsize__"}
	own := append(append([]string{}, sampler...), bm.Columns()...)
	for _, tc := range []struct {
		name       string
		model      string
		columns    []string
		err, warns string
	}{
		{"own", "norm", own, "", ""},
		{"cmdstan's name", "norm_model", own, "", ""},
		{"no name", "", own, "", ""},
		{"renamed", "expA", own, "", "its header says model = expA; the model is norm"},
		{"other columns", "expA", append(append([]string{}, own...), "sigma"), "the column sigma is not an output of the model: the draws are not the model's (its header says model = expA; the model is norm)", ""},
		{"missing column", "other", append(append([]string{}, sampler...), "nu"), "no column mu: the draws are not the model's (its header says model = other", ""},
		{"reordered", "norm", append(append([]string{}, sampler...), append(bm.Columns()[1:], "mu")...), "its columns are not the model's, in its order", ""},
	} {
		var warn bytes.Buffer
		err := checkDrawsModel(bm, tc.model, tc.columns, "pilot.csv", &warn)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), "--draws pilot.csv: "+tc.err)):
			t.Errorf("%s: error %v; want %q", tc.name, err, tc.err)
		case tc.warns == "" && warn.Len() > 0, tc.warns != "" && !strings.Contains(warn.String(), tc.warns):
			t.Errorf("%s: warning %q; want %q", tc.name, warn.String(), tc.warns)
		}
	}
}

// TestCalibrateEpsRefused: calibrate eps without a data file, with a --y
// the files do not hold, with an alpha whose eps is not positive and
// finite, on points that are all equal, or on points whose differences
// overflow (they looked equal), is refused with the reason.
func TestCalibrateEpsRefused(t *testing.T) {
	_, y := calibrationFiles(t)
	same := writeFile(t, t.TempDir(), "same.csv", "y\n1\n1\n1\n")
	huge := writeFile(t, t.TempDir(), "huge.csv", "y\n1e308\n-1e308\n")
	huge2 := writeFile(t, t.TempDir(), "huge2.csv", "y.1,y.2\n0,1e308\n1,-1e308\n2,0\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--y", "y"}, 2, "no data file given: --y y names a value of the data files"},
		{[]string{y, "--y", "nope"}, 1, "--y nope: no data value nope in " + y + " (their values: y)"},
		{[]string{y, "--y", "y", "--alpha", "1e308"}, 1, "eps = (alpha h)^2 is +Inf for the median nearest neighbour rule's h"},
		{[]string{y, "--y", "y", "--alpha", "1e-300"}, 1, "eps = (alpha h)^2 is 0 for the median nearest neighbour rule's h"},
		{[]string{same, "--y", "y"}, 1, "the points are all equal: they have no scale"},
		{[]string{huge, "--y", "y"}, 1, "the points' values span -1e+308 to 1e+308: their differences overflow"},
		{[]string{huge2, "--y", "y"}, 1, "the points' coordinate 2 values span -1e+308 to 1e+308: their differences overflow"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"calibrate", "eps"}, tc.args...), &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
	}
	// With a known noise, equal points still have rule 1's eps.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"calibrate", "eps", same, "--y", "y", "--noise", "0.1"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "h = 0: at least half the points repeat another") {
		t.Errorf("equal points with --noise: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestCalibrateDirNotEmpty: a --dir that holds other files and no
// calibration is refused, naming them, and left as it was (a calibration
// writes, replaces and removes files in its folder).
func TestCalibrateDirNotEmpty(t *testing.T) {
	model, y := calibrationFiles(t)
	dir := filepath.Join(t.TempDir(), "mine")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := writeFile(t, dir, ".notes.tmp.txt", "keep")
	runs := writeFile(t, dir, "runs.csv", "mine")
	var stdout, stderr bytes.Buffer
	code := run([]string{"calibrate", "lambda", model, y, "--dir", dir, "--refresh", "0", "--truth", "mu=0.5", "--generate", "2", "--replicate", "y=y_rep", "--lambdas", "1"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--dir "+dir+" holds .notes.tmp.txt, runs.csv but no calibration (no plan.json)") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	for _, p := range []string{notes, runs} {
		if b, err := os.ReadFile(p); err != nil || (string(b) != "keep" && string(b) != "mine") {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}

// TestCalibrateDirLocked: a second calibration of a --dir another one is
// running in is refused with the first one's pid (both would run every
// task).
func TestCalibrateDirLocked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	model, y := calibrationFiles(t)
	dir := filepath.Join(t.TempDir(), "cal")
	args := []string{"calibrate", "lambda", model, y, "--dir", dir, "--refresh", "0", "--truth", "mu=0.5", "--generate", "2", "--replicate", "y=y_rep", "--lambdas", "1", "--warmup", "30", "--samples", "30"}
	var stdout, stderr bytes.Buffer
	run(args, &stdout, &stderr) // the first calibration, its plan in --dir
	if _, err := os.Stat(filepath.Join(dir, "plan.json")); err != nil {
		t.Fatalf("the first calibration: %v\n%s", err, stderr.String())
	}
	unlock, err := lockCalibration(dir)
	if err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code := run(args, &stdout, &stderr)
	unlock()
	if code != 1 || !strings.Contains(stderr.String(), "plan.json is being written by another shm run (pid "+strconv.Itoa(os.Getpid())+"): wait for it to end") {
		t.Errorf("a calibration of a locked --dir: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	run(args, &stdout, &stderr) // its outcome (coverage of two runs) is not the point
	if !strings.Contains(stderr.String(), "lambda 1: coverage") || strings.Contains(stderr.String(), "being written") {
		t.Errorf("once unlocked: %q", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.lock")); len(left) != 0 {
		t.Errorf("the lock file stays: %v", left)
	}
}
