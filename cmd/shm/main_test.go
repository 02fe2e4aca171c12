package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestCheckOK(t *testing.T) {
	out, errs, code := runCmd(t, "check", "../../models/expA.shm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "ok\nmu     real  unconstrained\nsigma  real  <lower=0>\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestCheckErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.shm")
	src := "parameters {\n  real mu;\n}\nmodel {\n  mu ~ nromal(0, 1);\n  mu ~ normal(0, 1, 2);\n}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCmd(t, "check", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("unexpected stdout %q", out)
	}
	for _, want := range []string{
		file + `:5:8: unknown distribution "nromal"; did you mean "normal"?`,
		"  mu ~ nromal(0, 1);\n         ^",
		file + ":6:8: normal takes 2 arguments, got 3",
		"2 error(s)",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestCheckHostileFiles checks the reports of "shm check" on files with
// bytes or structure the lexer does not expect: each names what is there,
// at its file:line:col.
func TestCheckHostileFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, src, want string }{
		{"bom.shm", "\ufeffparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n", ""},
		{"nul.shm", "data {\n  vector[3] y;  \x00\n}\n", ":2:17: invalid character NUL (0x00)"},
		{"utf8.shm", "data {\n  vector[3] y;\n  \xff\xfe\n}\n", ":3:3: invalid UTF-8 byte 0xff (the first of 2)"},
		{"unc.shm", "data {\n  int N;\n}\n/* foo\nmodel {\n}\n", ":4:1: unterminated comment: /* at 4:1 has no */"},
		{"op.shm", "data {\n  vector[3] y;\n}\nmodel {\n  target += mean(y) + * 2;\n}\n", `:5:23: expected an expression after "+", found "*"`},
	} {
		file := filepath.Join(dir, tc.name)
		if err := os.WriteFile(file, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code := runCmd(t, "check", file)
		if tc.want == "" {
			if code != 0 || !strings.HasPrefix(out, "ok\n") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.name, code, out, errs)
			}
			continue
		}
		if code != 1 || !strings.HasPrefix(errs, file+tc.want+"\n") || !strings.Contains(errs, "\n1 error(s)") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant first %s", tc.name, code, errs, file+tc.want)
		}
	}
}

func TestCheckUsage(t *testing.T) {
	if _, _, code := runCmd(t, "check"); code != 2 {
		t.Errorf("check without a file: exit %d, want 2", code)
	}
	if _, errs, code := runCmd(t, "check", "/nonexistent/model.shm"); code != 1 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
	if _, _, code := runCmd(t, "frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

// TestHelpStatus: every command answers --help with its usage and status
// 0, as CmdStan does; an unknown flag is still status 2.
func TestHelpStatus(t *testing.T) {
	for _, cmd := range [][]string{{"sample"}, {"plot"}, {"summary"}, {"diagnose"}, {"check"}, {"calibrate", "lambda"},
		{"calibrate", "iters"}, {"calibrate", "crn"}, {"calibrate", "eps"}} {
		var stdout, stderr bytes.Buffer
		for _, help := range [][]string{{"--help"}, {"-h"}, {"m.shm", "--help"}, {"--help", "m.shm"}} {
			stderr.Reset()
			if code := run(append(slices.Clone(cmd), help...), &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "sage") {
				t.Errorf("%v %v: exit %d, stderr %q", cmd, help, code, stderr.String())
			}
		}
		stderr.Reset()
		if code := run(append(slices.Clone(cmd), "--no-such-flag"), &stdout, &stderr); code != 2 && cmd[0] != "check" {
			t.Errorf("%v --no-such-flag: exit %d, want 2", cmd, code)
		}
	}
}

// TestFlagErrors: a wrong flag is answered with one line naming it as
// documented (--name), with the flag meant when one is near, not with
// every flag's usage; --help still lists them.
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sample", "m.shm", "--max-detph", "3"}, "shm sample: unknown flag --max-detph: did you mean --max-depth? (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--Chains", "3"}, "shm sample: unknown flag --Chains: did you mean --chains? (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--adapt_detla", "0.9"}, "shm sample: unknown flag --adapt_detla: did you mean --adapt-delta? (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--frobnicate"}, "shm sample: unknown flag --frobnicate (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--chains", "x"}, "shm sample: --chains: invalid value \"x\": parse error (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--save-warmup=maybe"}, "shm sample: --save-warmup: invalid value \"maybe\": parse error (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--chains"}, "shm sample: --chains needs a value (see shm sample --help)\n"},
		{[]string{"calibrate", "lambda", "m.shm", "--wrokers", "2"}, "shm calibrate lambda: unknown flag --wrokers: did you mean --workers? (see shm calibrate lambda --help)\n"},
		{[]string{"plot", "trace", "x.csv", "--widht", "3"}, "shm plot: unknown flag --widht: did you mean --width? (see shm plot --help)\n"},
		// A flag given twice is refused, not the last value kept.
		{[]string{"sample", "m.shm", "--chains", "2", "--chains", "3"}, "shm sample: --chains is given twice (--chains 2, then --chains 3): give it once (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--chains=2", "--num_chains", "3"}, "shm sample: --chains is given twice (--chains=2, then --num-chains 3): give it once (see shm sample --help)\n"},
		{[]string{"sample", "m.shm", "--save-warmup", "--save-warmup=false"}, "shm sample: --save-warmup is given twice (--save-warmup, then --save-warmup=false): give it once (see shm sample --help)\n"},
		{[]string{"diagnose", "m.shm", "--init", "a", "--inits", "b"}, "shm diagnose: --init is given twice (--init a, then --inits b): give it once (see shm diagnose --help)\n"},
		{[]string{"plot", "trace", "x.csv", "--vars", "a", "--vars", "b"}, "shm plot: --vars is given twice (--vars a, then --vars b): give it once (see shm plot --help)\n"},
		{[]string{"sample", "m.shm", "-seed", "2", "--random_seed=3"}, "shm sample: --seed is given twice (-seed 2, then --random-seed=3): give it once (see shm sample --help)\n"},
		{[]string{"calibrate", "lambda", "m.shm", "--workers", "2", "--workers", "3"}, "shm calibrate lambda: --workers is given twice (--workers 2, then --workers 3): give it once (see shm calibrate lambda --help)\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 || stderr.String() != tc.want {
			t.Errorf("%v: exit %d, stderr\n%q\nwant\n%q", tc.args, code, stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sample", "--help"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stderr.String(), "Usage of shm sample:\n") || !strings.Contains(stderr.String(), "-max-depth") {
		t.Errorf("--help: exit %d, %q", code, stderr.String())
	}
}

// TestCmdStanAliases: CmdStan's and CmdStanPy's flag names (also with
// "_") run what shm's names run, the seed included; --help lists them on
// their flag's line.
func TestCmdStanAliases(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "parameters {\n  real x;\n}\nmodel {\n  x ~ normal(0, 1);\n}\n")
	ours := filepath.Join(dir, "ours")
	theirs := filepath.Join(dir, "theirs")
	for _, args := range [][]string{
		{"--chains", "1", "--samples", "30", "--warmup", "40", "--seed", "5", "--max-depth", "4", "--output", ours},
		{"--num-chains", "1", "--iter_sampling", "30", "--num-warmup", "40", "--random-seed", "5", "--max_treedepth=4", "--output-dir", theirs},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"sample", model}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	a, err := os.ReadFile(filepath.Join(ours, "m-1.csv"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(theirs, "m-1.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// The headers differ in the output folder and the times.
	draws := func(csv []byte) []string {
		var rows []string
		for _, l := range strings.Split(string(csv), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				rows = append(rows, l)
			}
		}
		return rows
	}
	if da, db := draws(a), draws(b); len(da) != 31 || !slices.Equal(da, db) {
		t.Errorf("the aliases' run differs: %d and %d rows", len(da), len(db))
	}
	var stdout, stderr bytes.Buffer
	run([]string{"sample", "--help"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "(also --iter-sampling, --num-samples)") || strings.Contains(stderr.String(), "alias of") {
		t.Errorf("--help:\n%s", stderr.String())
	}
	// plot --warmup is a switch (draw the warmup), not a count: CmdStan's
	// names of the count are not its aliases.
	_, errs, code := runCmd(t, "plot", "trace", "--num-warmup", "x.csv")
	if code != 2 || !strings.Contains(errs, "shm plot: unknown flag --num-warmup") {
		t.Errorf("plot trace --num-warmup: exit %d, %q", code, errs)
	}
}

// TestInterruptible: work that cannot stop itself is abandoned as soon as
// the context is done, and its result returned otherwise.
func TestInterruptible(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := interruptible(ctx, func() (int, error) { <-release; return 1, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if v, err := interruptible(context.Background(), func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("finished: %d, %v", v, err)
	}
}

// TestSignalContextRelease: a signal that reached the process before
// release is reported by it, even when release comes before the
// context's own goroutine has seen the signal (signal.NotifyContext's stop
// dropped it: a SIGTERM as a run ended was ignored, exit status 0).
// SIGWINCH is ignored by default, so a late one cannot end the test.
func TestSignalContextRelease(t *testing.T) {
	ctx, release := signalContext(syscall.SIGWINCH)
	if release() || ctx.Err() == nil {
		t.Fatalf("no signal: release says signaled, or ctx not done after it (%v)", ctx.Err())
	}
	seen := make(chan os.Signal, 1)
	signal.Notify(seen, syscall.SIGWINCH)
	defer signal.Stop(seen)
	for i := range 300 {
		ctx, release := signalContext(syscall.SIGWINCH)
		if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
			t.Fatal(err)
		}
		<-seen // the runtime has handed the signal to every channel, ctx's included
		if !release() {
			t.Fatalf("try %d: a signal before release not reported", i)
		}
		if ctx.Err() == nil {
			t.Fatalf("try %d: ctx not done after release", i)
		}
	}
}

// TestWriteAtomicSignal: SIGTERM (or Ctrl-C) while writeAtomic writes
// leaves no file, hidden temporary included, and says interrupted; the
// same write without one puts the file in place.
func TestWriteAtomicSignal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.png")
	seen := make(chan os.Signal, 1)
	signal.Notify(seen, syscall.SIGTERM) // the test process survives the signal
	defer signal.Stop(seen)
	err := writeAtomic("--out", path, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		<-seen // delivered to every channel, writeAtomic's included
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "interrupted; --out "+path+" not written") {
		t.Errorf("SIGTERM during the write: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("SIGTERM during the write left %v", left)
	}
	if err := writeAtomic("--out", path, func(w io.Writer) error { _, err := io.WriteString(w, "whole"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "whole" {
		t.Errorf("the write: %q, %v", b, err)
	}
}
