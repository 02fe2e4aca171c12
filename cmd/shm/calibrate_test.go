package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmlang/shm/calibrate"
	"github.com/shmlang/shm/runtime/data"
)

// calibrationModel is a normal mean whose likelihood is tempered by the
// loss scale lambda: the posterior is N(ȳ, 1/(lambda N)) for a flat
// prior, so the 90% region covers the truth with probability
// 2Φ(1.645/√lambda) − 1 (0.9 at lambda = 1, 0.589 at 4, 0.999 at 0.25).
const calibrationModel = `data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> lambda;
}
transformed data {
  real h = resolution(y);   // held in the bootstrap test
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 100);
  target += lambda * normal_lpdf(y | mu, 1);
}
generated quantities {
  vector[N] y_rep;
  for (n in 1:N) y_rep[n] = normal_rng(mu, 1);
}
`

func calibrationFiles(t *testing.T) (model, dataFile string) {
	dir := t.TempDir()
	model = writeFile(t, dir, "norm.shm", calibrationModel)
	var y strings.Builder
	y.WriteString("y\n")
	for i := 0; i < 20; i++ {
		y.WriteString(strconv.FormatFloat(0.5+math.Sin(float64(7*i)), 'g', -1, 64) + "\n")
	}
	return model, writeFile(t, dir, "y.csv", y.String())
}

// readCoverage reads coverage.csv: covered runs by lambda.
func readCoverage(t *testing.T, dir string) map[string][2]int {
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
	out := map[string][2]int{}
	for _, r := range rows[1:] {
		c, _ := strconv.Atoi(r[1])
		n, _ := strconv.Atoi(r[2])
		out[r[0]] = [2]int{c, n}
	}
	return out
}

// TestCalibrateKnownTruth checks the coverage of a known truth against its
// analytic value at three loss scales, and lambda*.
func TestCalibrateKnownTruth(t *testing.T) {
	model, y := calibrationFiles(t)
	dir := filepath.Join(t.TempDir(), "cal")
	var stdout, stderr bytes.Buffer
	code := run([]string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "200",
		"--replicate", "y=y_rep", "--lambdas", "0.25,1,4", "--warmup", "150", "--samples", "200", "--seed", "5"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cov := readCoverage(t, dir)
	for lambda, want := range map[string]float64{"0.25": 0.99900, "1": 0.9, "4": 0.58900} {
		c := cov[lambda]
		if c[1] != 200 {
			t.Fatalf("lambda %s: %d runs, want 200", lambda, c[1])
		}
		got := float64(c[0]) / float64(c[1])
		se := math.Sqrt(want * (1 - want) / float64(c[1]))
		// Three standard errors, and one run for the draws' own Monte
		// Carlo error at coverage near 1.
		if math.Abs(got-want) > 3*se+1.0/float64(c[1]) {
			t.Errorf("lambda %s: coverage %.3f, want %.3f (s.e. %.3f)", lambda, got, want, se)
		}
	}
	if !strings.Contains(stdout.String(), "lambda* = ") {
		t.Errorf("no lambda* in the output:\n%s", stdout.String())
	}
	runs, err := os.ReadFile(filepath.Join(dir, "runs.csv"))
	if err != nil || strings.Count(string(runs), "\n") != 601 {
		t.Errorf("runs.csv: %d lines, %v; want a header and 600 runs", strings.Count(string(runs), "\n"), err)
	}
}

// calibrationArgs is a small search (a few loss scales × 12 datasets).
func calibrationArgs(model, y, dir string) []string {
	return []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "12",
		"--replicate", "y=y_rep", "--start", "0.5", "--max-temps", "4", "--warmup", "100", "--samples", "100",
		"--seed", "9", "--workers", "2"}
}

// TestCalibrateResume kills a calibration midway and reruns it: the rerun
// runs only the tasks that have no result, and the outcome is that of an
// uninterrupted run.
func TestCalibrateResume(t *testing.T) {
	model, y := calibrationFiles(t)
	base := t.TempDir()
	whole := filepath.Join(base, "whole")
	var stdout, stderr bytes.Buffer
	if code := run(calibrationArgs(model, y, whole), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	wantTable := stdout.String()

	// The same calibration, killed (SIGKILL: no clean-up) once some
	// tasks have finished.
	dir := filepath.Join(base, "killed")
	args := calibrationArgs(model, y, dir)
	args[len(args)-1] = "1" // --workers 1
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SHM_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done, _ := filepath.Glob(filepath.Join(dir, "results", "*", "d*.json"))
		if len(done) >= 15 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	done, _ := filepath.Glob(filepath.Join(dir, "results", "*", "d*.json"))
	if len(done) < 15 {
		t.Fatalf("%d results before the kill, want at least 15", len(done))
	}
	total := strings.Count(wantTable, "\n") - 2 // the table's rows: scales evaluated
	total *= 12
	if len(done) >= total {
		t.Skipf("the run finished (%d tasks) before it was killed", len(done))
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(calibrationArgs(model, y, dir), &stdout, &stderr); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, stderr.String())
	}
	// Tasks decided by the rerun: finished runs ("lambda L, dataset D:
	// hpd covered, ... in 0.1 s") and reweighted ones ("lambda L: N of M
	// task(s) decided by reweighting ...").
	ran := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ", dataset ") && strings.HasSuffix(line, " s") {
			ran++
		}
		if _, rest, ok := strings.Cut(line, ": "); ok && strings.Contains(rest, "decided by reweighting") {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			ran += n
		}
	}
	if ran != total-len(done) {
		t.Errorf("the rerun decided %d tasks, want %d (%d of %d were done)", ran, total-len(done), len(done), total)
	}
	if got := withoutTimes(stdout.String()); got != withoutTimes(wantTable) {
		t.Errorf("resumed outcome:\n%s\nwant:\n%s", stdout.String(), wantTable)
	}
	for _, name := range []string{"coverage.csv"} {
		a, _ := os.ReadFile(filepath.Join(whole, name))
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if withoutTimes(string(a)) != withoutTimes(string(b)) {
			t.Errorf("%s differs:\n%s\nwant:\n%s", name, b, a)
		}
	}
}

// withoutTimes drops the time column of the coverage table and file (the
// one thing that may differ between runs).
func withoutTimes(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' })
		if len(f) >= 5 {
			f = f[:len(f)-1]
		}
		out = append(out, strings.Join(f, " "))
	}
	return strings.Join(out, "\n")
}

// requireSlurm skips the test when no Slurm cluster answers, or fails it
// when SHM_REQUIRE_SLURM=1 (CI, where .ci/slurm.sh starts one).
func requireSlurm(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sbatch"); err != nil {
		if os.Getenv("SHM_REQUIRE_SLURM") == "1" {
			t.Fatal("SHM_REQUIRE_SLURM=1 but sbatch is not on PATH")
		}
		t.Skip("no Slurm here (sbatch not on PATH)")
	}
	// Installed but not running (the controller is started by
	// .ci/slurm.sh): sinfo fails to reach it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "sinfo", "-h").CombinedOutput(); err != nil {
		if os.Getenv("SHM_REQUIRE_SLURM") == "1" {
			t.Fatalf("SHM_REQUIRE_SLURM=1 but the Slurm controller does not answer: %v: %s", err, out)
		}
		t.Skipf("Slurm is installed but its controller does not answer (start it with .ci/slurm.sh): %v", err)
	}
}

// sameResults reports the first difference between two calibration
// folders' results: every result file but for its run time, and every
// run's draws, bit for bit.
func sameResults(t *testing.T, a, b string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a, "results", "*", "*"))
	others, _ := filepath.Glob(filepath.Join(b, "results", "*", "*"))
	if len(files) == 0 || len(files) != len(others) {
		t.Fatalf("%d result files in %s, %d in %s", len(files), a, len(others), b)
	}
	seconds := regexp.MustCompile(`"seconds": [^,\n]*`)
	for _, f := range files {
		rel, _ := filepath.Rel(a, f)
		x, err1 := os.ReadFile(f)
		y, err2 := os.ReadFile(filepath.Join(b, rel))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", rel, err1, err2)
		}
		if !bytes.Equal(seconds.ReplaceAll(x, nil), seconds.ReplaceAll(y, nil)) {
			t.Fatalf("%s differs:\n%s\nwant:\n%s", rel, y, x)
		}
	}
}

// TestCalibrateSlurm runs calibrations through Slurm (a cluster on
// localhost: .ci/slurm.sh) and checks that they give, bit for bit, what
// the local runs give: 2 000 runs (--exact) with the default grouping of
// runs into array tasks, within three times the local wall time; the same
// with 20 runs per array task, more array tasks than the cluster's
// MaxArraySize (64 on the CI cluster) allows in one array; and a search
// on the fast path. Without sbatch it skips, unless SHM_REQUIRE_SLURM=1
// (CI).
func TestCalibrateSlurm(t *testing.T) {
	requireSlurm(t)
	model, y := calibrationFiles(t)
	base := t.TempDir()
	exact := func(dir string) []string {
		return []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "400",
			"--replicate", "y=y_rep", "--lambdas", "0.25,0.5,1,2,4", "--warmup", "100", "--samples", "100",
			"--seed", "9", "--refresh", "0", "--exact"}
	}
	fast := func(dir string) []string { return calibrationArgs(model, y, dir) }
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		extra []string
		timed bool // within three times the local wall time
	}{
		{"2000 runs", exact, nil, true},
		{"2000 runs, 100 per array task", exact, []string{"--runs-per-task", "100"}, false},
		{"fast search", fast, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local, viaSlurm := filepath.Join(base, tc.name, "local"), filepath.Join(base, tc.name, "slurm")
			var stdout, stderr bytes.Buffer
			start := time.Now()
			if code := run(tc.args(local), &stdout, &stderr); code != 0 {
				t.Fatalf("local: exit %d: %s", code, stderr.String())
			}
			localTime := time.Since(start)
			wantTable := stdout.String()
			// The array tasks run this test binary as shm (SHM_TEST_MAIN=1
			// is passed on by sbatch's default --export=ALL).
			t.Setenv("SHM_TEST_MAIN", "1")
			stdout.Reset()
			stderr.Reset()
			start = time.Now()
			if code := runWithInput(append(append(tc.args(viaSlurm), "--slurm"), tc.extra...), nil, &stdout, &stderr); code != 0 {
				t.Fatalf("slurm: exit %d: %s", code, stderr.String())
			}
			slurmTime := time.Since(start)
			t.Logf("local %.1f s, through Slurm %.1f s (%.2f×); %d sbatch submission(s)", localTime.Seconds(), slurmTime.Seconds(),
				slurmTime.Seconds()/localTime.Seconds(), strings.Count(stderr.String(), "sbatch "))
			if got := withoutTimes(stdout.String()); got != withoutTimes(wantTable) {
				t.Errorf("through Slurm:\n%s\nlocally:\n%s", stdout.String(), wantTable)
			}
			sameResults(t, local, viaSlurm)
			if tc.timed && slurmTime > 3*localTime {
				t.Errorf("through Slurm %.1f s, more than three times the local %.1f s", slurmTime.Seconds(), localTime.Seconds())
			}
			if len(tc.extra) > 0 {
				// 2 000 runs, 100 per array task: 20 array tasks, in arrays
				// of at most MaxArraySize.
				size := maxArraySize(t)
				if want := (20 + size - 1) / size; strings.Count(stderr.String(), "sbatch ") != want {
					t.Errorf("%d submissions for 20 array tasks with MaxArraySize %d, want %d:\n%s",
						strings.Count(stderr.String(), "sbatch "), size, want, stderr.String())
				}
			}
		})
	}
}

// maxArraySize returns the cluster's MaxArraySize.
func maxArraySize(t *testing.T) int {
	out, err := exec.Command("scontrol", "show", "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "MaxArraySize" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no MaxArraySize in scontrol show config")
	return 0
}

// TestCalibrateSlurmCancel stops a calibration by SIGINT and by SIGTERM
// while its job array runs: it must exit and leave no job of its array in
// squeue (which would go on starting tasks against its folder).
func TestCalibrateSlurmCancel(t *testing.T) {
	requireSlurm(t)
	model, y := calibrationFiles(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cal")
			// Runs long enough to be stopped in the middle: 6 array tasks
			// of one run each, on a cluster of a few CPUs.
			cmd := exec.Command(os.Args[0], "calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "6",
				"--replicate", "y=y_rep", "--lambdas", "1", "--warmup", "100", "--samples", "50000000", "--seed", "9",
				"--refresh", "0", "--exact", "--slurm", "--runs-per-task", "1")
			cmd.Env = append(os.Environ(), "SHM_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until an array task runs its first run (its log says
			// so): the middle of the array.
			var jobs string
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				b, _ := os.ReadFile(filepath.Join(dir, "slurm", "round01.jobs"))
				jobs = strings.TrimSpace(string(b))
				logs, _ := filepath.Glob(filepath.Join(dir, "slurm", "round01_*.log"))
				started := false
				for _, l := range logs {
					text, _ := os.ReadFile(l)
					started = started || strings.Contains(string(text), "array task ")
				}
				if jobs != "" && started {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if jobs == "" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no job array started within 60 s:\n%s", stderr.String())
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 30 s after %v", sig)
			}
			if cmd.ProcessState.ExitCode() == 0 {
				t.Errorf("exit status 0 after %v", sig)
			}
			// scancel returns before the jobs leave the queue (the array
			// tasks end on the SIGTERM Slurm sends them).
			var left string
			for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				out, err := exec.Command("squeue", "-h", "-j", jobs, "-o", "%i %T").CombinedOutput()
				if left = strings.TrimSpace(string(out)); left == "" || (err != nil && strings.Contains(left, "Invalid job id")) {
					left = ""
					break
				}
			}
			if left != "" {
				exec.Command("scancel", jobs).Run()
				t.Errorf("jobs left in squeue after %v:\n%s\n%s", sig, left, stderr.String())
			}
			if !strings.Contains(stderr.String(), "cancelled slurm job(s) "+jobs) {
				t.Errorf("no cancellation reported:\n%s", stderr.String())
			}
		})
	}
}

// TestCalibrateBootstrap runs the unknown-truth case: the estimate is a
// draw of the run at lambda0, the datasets resample y, and --hold keeps
// transformed data's h at its value on the data as given in every run.
func TestCalibrateBootstrap(t *testing.T) {
	model, y := calibrationFiles(t)
	dir := filepath.Join(t.TempDir(), "boot")
	var stdout, stderr bytes.Buffer
	code := run([]string{"calibrate", "lambda", model, y, "--dir", dir, "--bootstrap", "40", "--resample", "y",
		"--hold", "h", "--lambdas", "0.25,4", "--warmup", "150", "--samples", "200", "--seed", "3"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	plan, err := calibrate.Dir(dir).ReadPlan()
	if err != nil {
		t.Fatal(err)
	}
	bm, err := bindModel(model, []string{y}, []string{"lambda=1"}, 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h, err := bm.TransformedData("h")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Hold) != 1 || plan.Hold[0].Name != "h" || plan.Hold[0].Data[0] != h.Data[0] || !(h.Data[0] > 0) {
		t.Errorf("held %+v, want h = %v", plan.Hold, h.Data)
	}
	mu, ok := plan.Truth["mu"]
	if !ok || math.Abs(mu-0.5) > 1 {
		t.Errorf("estimate %v, want mu near the data's mean", plan.Truth)
	}
	// The bootstrap datasets are resamples: every value is one of y's.
	orig, err := data.ReadFile(y)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := data.ReadFile(calibrate.Dir(dir).DatasetPath(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range vals[0].Data {
		if !slices.Contains(orig[0].Data, x) {
			t.Errorf("dataset 8 holds %g, not a value of y", x)
		}
	}
	cov := readCoverage(t, dir)
	if c := cov["0.25"]; c[1] != 40 || c[0] < 38 {
		t.Errorf("lambda 0.25: %d of %d covered, want nearly all", c[0], c[1])
	}
	if c := cov["4"]; c[0] > 34 {
		t.Errorf("lambda 4: %d of %d covered, want about 0.59 of them", c[0], c[1])
	}
}
