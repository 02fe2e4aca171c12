package main

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSampleFlagBounds checks that every numeric flag of sample is
// refused up front, naming it, when NaN, negative, zero or too large.
func TestSampleFlagBounds(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for none
	}{
		{nil, ""},
		{[]string{"--adapt-delta", "NaN"}, "--adapt-delta must be in (0, 1), got NaN"},
		{[]string{"--adapt-delta", "Inf"}, "--adapt-delta must be in (0, 1), got +Inf"},
		{[]string{"--adapt-delta", "0"}, "--adapt-delta must be in (0, 1), got 0"},
		{[]string{"--refresh", "-1"}, "--refresh must not be negative (0: no progress lines), got -1"},
		{[]string{"--refresh", "0"}, ""},
		{[]string{"--refresh", "9223372036854775807"}, "--refresh is 9223372036854775807, at most 2147483647"},
		{[]string{"--chain-id", "9223372036854775807"}, "--chain-id is 9223372036854775807, at most 2147483647"},
		{[]string{"--chain-id", "2147483647", "--chains", "2"}, "--chain-id 2147483647 with --chains 2 would number the last chain 2147483648, more than 2147483647"},
		{[]string{"--chain-id", "2147483646", "--chains", "2"}, ""},
		{[]string{"--warmup", "-1"}, "--warmup must not be negative, got -1"},
		{[]string{"--samples", "-1"}, "--samples must not be negative, got -1"},
		{[]string{"--samples", "9223372036854775807"}, "--samples is 9223372036854775807, at most 2147483647"},
		{[]string{"--warmup", "4294967296"}, "--warmup is 4294967296, at most 2147483647"},
		{[]string{"--thin", "0"}, "--thin must be at least 1, got 0"},
		{[]string{"--thin", "9223372036854775807"}, "--thin is 9223372036854775807, at most 2147483647"},
		{[]string{"--max-depth", "0"}, "--max-depth must be at least 1, got 0"},
		{[]string{"--max-depth", "1000000000"}, "--max-depth is 1000000000, at most 30 (a tree of 2^30 leapfrog steps)"},
		{[]string{"--max-depth", "30"}, ""},
		{[]string{"--parallel", "0"}, "--parallel must be at least 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := newFlagSet("sample", &strings.Builder{})
			var f sampleFlags
			f.register(fs)
			if _, err := parseArgs(fs, append([]string{"m.shm"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			err := f.validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("validate() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSampleEmptyOutput checks that sample refuses an empty --output
// (the REPL's :sample, which keeps its draws, has none).
func TestSampleEmptyOutput(t *testing.T) {
	_, stderr, code := runCmd(t, "sample", "nothere.shm", "--output", "")
	if code != 2 || stderr != "shm sample: --output is empty: give a directory (default: output)\n" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestDiagnoseFlagBounds checks diagnose's --epsilon and --error, and
// that the command refuses them before reading the model.
func TestDiagnoseFlagBounds(t *testing.T) {
	tests := []struct {
		eps, tol float64
		want     string
	}{
		{1e-6, 1e-6, ""},
		{1, 0, ""},
		{0, 1e-6, "--epsilon must be in (0, 1], got 0"},
		{-1, 1e-6, "--epsilon must be in (0, 1], got -1"},
		{math.NaN(), 1e-6, "--epsilon must be in (0, 1], got NaN"},
		{1e300, 1e-6, "--epsilon must be in (0, 1], got 1e+300"},
		{1e-6, math.NaN(), "--error must be a finite number at least 0, got NaN"},
		{1e-6, -1, "--error must be a finite number at least 0, got -1"},
		{1e-6, math.Inf(1), "--error must be a finite number at least 0, got +Inf"},
	}
	for _, tt := range tests {
		err := checkDiagnoseFlags(tt.eps, tt.tol)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("checkDiagnoseFlags(%g, %g) = %q, want %q", tt.eps, tt.tol, got, tt.want)
		}
	}
	_, stderr, code := runCmd(t, "diagnose", "nothere.shm", "--epsilon", "NaN")
	if code != 2 || stderr != "shm diagnose: --epsilon must be in (0, 1], got NaN\n" {
		t.Errorf("diagnose --epsilon NaN: exit %d, stderr %q", code, stderr)
	}
}

// TestSplitList checks the comma-separated lists of plot's flags: commas
// inside brackets do not split, an empty name is refused.
func TestSplitList(t *testing.T) {
	tests := []struct {
		flag, in string
		want     []string
		err      string
	}{
		{"--vars", "mu,sigma", []string{"mu", "sigma"}, ""},
		{"--vars", "y_rep[1,2], mu", []string{"y_rep[1,2]", "mu"}, ""},
		{"--vars", "mu,", nil, `--vars "mu,": name 2 of 2 is empty (names are separated by single commas)`},
		{"--vars", "mu,,sigma", nil, `--vars "mu,,sigma": name 2 of 3 is empty (names are separated by single commas)`},
		{"--vars", "", nil, "--vars is empty: give a comma-separated list of names"},
		{"--vars", "y[1", nil, `--vars "y[1": unbalanced brackets`},
		{"--y", "t,y", []string{"t", "y"}, ""},
		{"--data", "a[1.csv,b.csv", []string{"a[1.csv", "b.csv"}, ""},
		{"--data", "a.csv,", nil, `--data "a.csv,": name 2 of 2 is empty (names are separated by single commas)`},
	}
	for _, tt := range tests {
		got, err := splitList(tt.flag, tt.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("splitList(%s, %q) = %q, %q; want %q, %q", tt.flag, tt.in, got, msg, tt.want, tt.err)
		}
	}
}

// TestWriteAtomicNamesFlag checks that a file that cannot be written is
// named by its flag and the path given, never by the temporary file.
func TestWriteAtomicNamesFlag(t *testing.T) {
	dir := t.TempDir()
	nodir := filepath.Join(dir, "nodir", "t.png")
	tests := []struct {
		path, want string
	}{
		{"", "--out is empty: give a file name"},
		{nodir, "--out " + nodir + ": no such file or directory (the folder " + filepath.Dir(nodir) + ")"},
		{dir, "--out " + dir + ": is a directory: give a file name"},
		{filepath.Join(dir, "ok.png"), ""},
	}
	for _, tt := range tests {
		err := writeAtomic("--out", tt.path, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err })
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want || strings.Contains(got, ".tmp-") {
			t.Errorf("writeAtomic(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ok.png")); err != nil || string(b) != "x" {
		t.Errorf("ok.png: %q, %v", b, err)
	}
}

// TestPlotFlagErrors checks plot's refusals of an empty --out and of
// --vars lists with an empty name, before any file is read.
func TestPlotFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "trace", "x.csv", "--out", ""}, "shm plot: --out is empty: give a file name ending in .png or .svg (default: MODEL-KIND.png)\n"},
		{[]string{"plot", "trace", "x.csv", "--vars", "mu,"}, "shm plot: --vars \"mu,\": name 2 of 2 is empty (names are separated by single commas)\n"},
		{[]string{"plot", "trace", "x.csv", "--vars", ""}, "shm plot: --vars is empty: give a comma-separated list of names\n"},
		{[]string{"plot", "ppc", "x.csv", "--y", "y,"}, "shm plot: --y \"y,\": name 2 of 2 is empty (names are separated by single commas)\n"},
	} {
		_, stderr, code := runCmd(t, tt.args...)
		if code != 2 || stderr != tt.want {
			t.Errorf("%q: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestJoinDistinct checks that chains failing alike report one error.
func TestJoinDistinct(t *testing.T) {
	a, b := errors.New("bad init"), errors.New("other")
	tests := []struct {
		errs []error
		want string
	}{
		{[]error{nil, nil}, ""},
		{[]error{a, errors.New("bad init"), nil}, "bad init"},
		{[]error{a, b, a}, "bad init\nother"},
	}
	for _, tt := range tests {
		err := joinDistinct(tt.errs)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("joinDistinct(%v) = %q, want %q", tt.errs, got, tt.want)
		}
	}
}

// TestInitErrorsOnce checks --init: a number out of range or not decimal
// is said to be one, and a value outside its constraint is reported
// once, with the shm: prefix, however many chains.
func TestInitErrorsOnce(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "norm.shm", "data { int<lower=0> N; vector[N] y; }\nparameters { real mu; real<lower=0> sigma; }\nmodel { y ~ normal(mu, sigma); }\n")
	data := writeFile(t, dir, "y.csv", "y\n1\n2\n3\n")
	bad := writeFile(t, dir, "i3.json", `{"mu": 0, "sigma": -2}`)
	for _, tt := range []struct{ init, want string }{
		{"1e400", "shm: --init 1e400: the number is out of range (the radius of the random initial values must be finite and at least 0)\n"},
		{"0x10", "shm: --init 0x10: not a decimal number (a radius such as 2 or 0.5), nor name=value,... or a JSON file\n"},
		{bad, "shm: " + bad + ": key \"sigma\": initial value of sigma (real<lower=0>): element 1 = -2 is not above the lower bound 0\n"},
		{"mu=0,sigma=-2", "shm: --init sigma: initial value of sigma (real<lower=0>): element 1 = -2 is not above the lower bound 0\n"},
	} {
		_, stderr, code := runCmd(t, "sample", model, data, "--chains", "3", "--init", tt.init, "--output", filepath.Join(dir, "out"), "--refresh", "0")
		if code != 1 || stderr != tt.want {
			t.Errorf("--init %s: exit %d, stderr %q; want %q", tt.init, code, stderr, tt.want)
		}
	}
}

// TestSetFlagUsage checks that a wrong --set is a usage error (status 2)
// naming it, for every command that takes --set, before any file is read.
func TestSetFlagUsage(t *testing.T) {
	commands := [][]string{
		{"sample", "nothere.shm"},
		{"diagnose", "nothere.shm"},
		{"calibrate", "lambda", "nothere.shm"},
		{"calibrate", "iters", "nothere.shm"},
		{"calibrate", "eps", "--y", "y"},
	}
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"N=1", "N=2"}, "--set N is given twice (--set N=1 and --set N=2)"},
		{[]string{"N=1", " N = [1] "}, "--set N is given twice (--set N=1 and --set N = [1])"},
		{[]string{"N"}, `--set "N": expected name=value`},
		{[]string{"y=[1,x]"}, "--set y[2]: x is not a number"},
	} {
		for _, cmd := range commands {
			args := slices.Clone(cmd)
			for _, s := range c.sets {
				args = append(args, "--set", s)
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				_, stderr, code := runCmd(t, args...)
				if code != 2 || !strings.Contains(stderr, c.want) {
					t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
				}
			})
		}
	}
}
