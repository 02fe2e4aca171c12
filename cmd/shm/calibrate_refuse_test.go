package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		{with(boot, "--resample", "y,y"), `--resample "y,y": y is given twice`},
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
