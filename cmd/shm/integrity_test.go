package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shmlang/shm/runtime/stancsv"
)

// fakeOutput is a chainOutput that records what happens to it; fail makes
// its WriteRow fail.
type fakeOutput struct {
	id                        int
	fail                      bool
	finished, committed, gone bool
}

func (o *fakeOutput) WriteAdaptation(float64, bool, int, []float64) error { return nil }
func (o *fakeOutput) WriteTiming(time.Duration, time.Duration) error      { return nil }
func (o *fakeOutput) WriteRow([]float64) error {
	if o.fail {
		return errors.New("disk full")
	}
	return nil
}
func (o *fakeOutput) Finish() error { o.finished = true; return nil }
func (o *fakeOutput) Commit() error { o.committed = true; return nil }
func (o *fakeOutput) Abort()        { o.gone = true }

// TestChainsCommitTogether checks that the outputs of a run are published
// only when every chain has finished: one failing chain discards them all.
func TestChainsCommitTogether(t *testing.T) {
	dir := t.TempDir()
	bm, err := bindModel(writeFile(t, dir, "op.shm", operatorModel), nil, nil, 1, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, failing := range []int{0, 3} {
		var mu sync.Mutex
		var outs []*fakeOutput
		open := func(h *stancsv.Config, _ []string) (chainOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			o := &fakeOutput{id: h.ID, fail: h.ID == failing}
			outs = append(outs, o)
			return o, nil
		}
		f := sampleFlags{chains: 4, chainID: 1, warmup: 20, samples: 20, thin: 1, maxDepth: 5, delta: 0.8, metric: "diag", parallel: 2, seed: 1, sigFigs: 6}
		err := runChains(context.Background(), bm, f.nutsConfig(), &f, nil, nil, open)
		if (err != nil) != (failing > 0) {
			t.Fatalf("chain %d failing: error %v", failing, err)
		}
		for _, o := range outs {
			switch {
			case failing == 0 && (!o.finished || !o.committed || o.gone):
				t.Errorf("no failure: chain %d finished %v, committed %v, aborted %v", o.id, o.finished, o.committed, o.gone)
			case failing > 0 && (o.committed || !o.gone):
				t.Errorf("chain %d failing: chain %d committed %v, aborted %v", failing, o.id, o.committed, o.gone)
			}
		}
	}
}

// TestSampleOutputFolder checks the chain files' locks (a second run
// writing the same chain is refused while one holds it, other chains may
// be written) and that a run removes the temporary files that a killed run
// of the same chains left behind.
func TestSampleOutputFolder(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockOutput([]string{filepath.Join(out, "op-3.csv")})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"sample", model, "--warmup", "30", "--samples", "30", "--seed", "2", "--output", out, "--refresh", "0"}
	_, stderr, code := runCmd(t, args...)
	if code != 1 || !strings.Contains(stderr, "op-3.csv is being written by another shm run") {
		t.Errorf("second run: exit %d, stderr %q", code, stderr)
	}
	// Other chains of the model may be written meanwhile.
	if _, stderr, code := runCmd(t, "sample", model, "--chains", "2", "--chain-id", "5", "--warmup", "30", "--samples", "30", "--output", out, "--refresh", "0"); code != 0 {
		t.Errorf("chains 5 and 6 beside a run of chain 3: exit %d: %s", code, stderr)
	}
	os.Remove(filepath.Join(out, "op-5.csv"))
	os.Remove(filepath.Join(out, "op-6.csv"))
	unlock()
	stale := filepath.Join(out, ".op-1.csv.tmp-12345")
	if err := os.WriteFile(stale, []byte("lp__\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCmd(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file left: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".*"))
	csvs, _ := filepath.Glob(filepath.Join(out, "*.csv"))
	if len(left) != 0 || len(csvs) != 4 {
		t.Errorf("output folder holds %v and %v, want the 4 chain files only", left, csvs)
	}
}

// TestMain lets the tests run this binary as the shm command (for the
// signal tests): with SHM_TEST_MAIN=1 it runs main's command line.
func TestMain(m *testing.M) {
	if os.Getenv("SHM_TEST_MAIN") == "1" {
		main() // the test binary as shm itself
	}
	os.Exit(m.Run())
}

// TestSampleSignals stops a running "shm sample" with SIGTERM (what timeout
// and batch schedulers send) and with SIGINT (Ctrl-C), between sampler
// iterations, inside a long loop of transformed data and inside a long
// loop of one density evaluation: it must end within seconds, say that it
// was interrupted, exit non-zero and leave no output.
func TestSampleSignals(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	tdLoop := writeFile(t, dir, "td.shm", `transformed data {
  real x = 0;
  for (i in 1:2000000000) { x += 1; }
}
parameters { real mu; }
model { mu ~ normal(0, 1); }
`)
	modelLoop := writeFile(t, dir, "ml.shm", `parameters { real mu; }
model {
  real s = 0;
  for (i in 1:2000000000) { s += mu; }
  target += -mu^2;
}
`)
	// One long built-in call: a Sinkhorn problem of 10^5 points a side
	// (tens of seconds) in transformed data.
	longCall := writeFile(t, dir, "sk.shm", `transformed data {
  int N = 100000;
  matrix[N, 2] x = append_col(std_normal_rng(N), std_normal_rng(N));
  matrix[N, 2] y = append_col(std_normal_rng(N), std_normal_rng(N)) + 0.5;
  real s = sinkhorn(x, y, eps = 1e-4, iters = 80);
}
parameters { real mu; }
model { mu ~ normal(0, 1); }
`)
	// A program of 25 000 lines (within the parser's limits), which takes seconds to parse.
	huge := writeFile(t, dir, "huge.shm", hugeModel(25000))
	cases := []struct {
		name, model string
		progress    bool // wait for the first progress line
	}{{"iterations", model, true}, {"transformed data", tdLoop, false}, {"density", modelLoop, false},
		{"sinkhorn call", longCall, false}, {"checking", huge, false}}
	for _, tc := range cases {
		for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
			t.Run(tc.name+"/"+sig.String(), func(t *testing.T) {
				out := filepath.Join(dir, "out-"+filepath.Base(tc.model)+"-"+sig.String())
				signalRun(t, out, tc.progress, sig, "sample", tc.model, "--warmup", "100000000", "--samples", "10",
					"--seed", "1", "--refresh", "1000", "--output", out)
			})
		}
	}
}

// TestCheckSignals stops "shm check" of a file that takes seconds to
// parse with SIGTERM and SIGINT.
func TestCheckSignals(t *testing.T) {
	dir := t.TempDir()
	huge := writeFile(t, dir, "huge.shm", hugeModel(25000))
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			signalRun(t, filepath.Join(dir, "none"), false, sig, "check", huge)
		})
	}
}

// hugeModel returns a valid program of about n lines.
func hugeModel(n int) string {
	var b strings.Builder
	b.WriteString("parameters { real mu; }\nmodel {\n")
	for i := range n {
		fmt.Fprintf(&b, "  real x%d = mu + 2 * mu;\n", i)
	}
	b.WriteString("  mu ~ normal(0, 1);\n}\n")
	return b.String()
}

// signalRun runs shm with args, sends sig once it runs (after its first
// progress line, or half a second), and checks how it ends: within
// seconds, saying "interrupted", with a non-zero status and nothing in the
// folder out.
func signalRun(t *testing.T, out string, progress bool, sig os.Signal, args ...string) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SHM_TEST_MAIN=1")
	var stderr bytes.Buffer
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first progress line (the chains are running), or
	// for half a second. The reader owns stderr until the pipe's end
	// (the process's exit).
	started, eof := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(eof)
		buf := make([]byte, 4096)
		seen := false
		for {
			n, err := stderrPipe.Read(buf)
			stderr.Write(buf[:n])
			if !seen && strings.Contains(stderr.String(), "Iteration") {
				close(started)
				seen = true
			}
			if err != nil {
				if !seen {
					close(started)
				}
				return
			}
		}
	}()
	var wait <-chan struct{} = started
	if !progress {
		half := make(chan struct{})
		time.AfterFunc(500*time.Millisecond, func() { close(half) })
		wait = half
	}
	select {
	case <-wait:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%v: no progress after 30 s", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-eof:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-eof
		t.Errorf("%v: still running 5 s after the signal", sig)
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("%v: exit status 0", sig)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("%v: stderr %q does not say interrupted", sig, stderr.String())
	}
	left, _ := filepath.Glob(filepath.Join(out, "*"))
	hidden, _ := filepath.Glob(filepath.Join(out, ".*"))
	if len(left)+len(hidden) != 0 {
		t.Errorf("%v: left %v %v", sig, left, hidden)
	}
}

// TestSampleSignalAfterRun: SIGTERM once the chain files are in place,
// while the summary of 5 000 columns is computed (seconds), ends the
// process at once with status 1, saying so and leaving the files
// complete (it was ignored until the summary and the reports were done,
// with status 0; then it ended the process silently).
func TestSampleSignalAfterRun(t *testing.T) {
	if testing.Short() {
		t.Skip("samples 5 000 parameters")
	}
	dir := t.TempDir()
	model := writeFile(t, dir, "wide.shm", "parameters {\n  vector[5000] z;\n}\nmodel {\n  z ~ std_normal();\n}\n")
	out := filepath.Join(dir, "out")
	cmd := exec.Command(os.Args[0], "sample", model, "--chains", "2", "--warmup", "50", "--samples", "600", "--seed", "1",
		"--refresh", "0", "--output", out)
	cmd.Env = append(os.Environ(), "SHM_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(out, "wide-1.csv"), filepath.Join(out, "wide-2.csv")}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		_, err1 := os.Stat(files[0])
		_, err2 := os.Stat(files[1])
		if err1 == nil && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no chain files after 5 minutes")
		}
		time.Sleep(2 * time.Millisecond)
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if took := time.Since(sent); cmd.ProcessState.ExitCode() != 1 || took > 5*time.Second || !strings.Contains(stderr.String(), "shm sample: interrupted after the run: its files are complete (") {
		t.Errorf("after SIGTERM: %v, %s later, stderr %q (want an exit at once, status 1, saying so)", err, took, stderr.String())
	}
	for _, f := range files {
		if _, err := stancsv.ReadFile(f); err != nil {
			t.Errorf("the run's file: %v", err)
		}
	}
}

// TestReplSigterm: SIGTERM ends a REPL session (a script on a pipe) within
// seconds with status 1 and "terminated", both while a :sample that
// writes files runs (stopped, no file left, hidden ones included) and
// while the session waits for its next line.
func TestReplSigterm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs shm repl")
	}
	dir := t.TempDir()
	model := writeFile(t, dir, "op.shm", operatorModel)
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name, line string
	}{
		{"sampling", ":sample --chains 2 --warmup 100000 --samples 100000 --output " + out + "\n"},
		{"waiting", "1 + 1\n"},
	} {
		cmd := exec.Command(os.Args[0], "repl", model)
		cmd.Env = append(os.Environ(), "SHM_TEST_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(stdin, c.line); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // the model loaded, the line running or done
		sent := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s: still running 10 s after SIGTERM", c.name)
		}
		stdin.Close()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "shm repl: terminated") {
			t.Errorf("%s: after SIGTERM (%s): %v, stderr %q, want status 1 and terminated", c.name, time.Since(sent), err, stderr.String())
		}
		if left, _ := os.ReadDir(out); len(left) != 0 {
			t.Errorf("%s: left %v in the output folder", c.name, left)
		}
	}
}

// TestReadCommandsSignals: summary, plot, diagnose and calibrate eps,
// stopped by SIGTERM or Ctrl-C while they read a large run or data file or
// evaluate a slow model, say
// interrupted and exit 1 within seconds, leaving no file (they died by
// the signal, silently).
func TestReadCommandsSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a run of 36 MB")
	}
	dir := t.TempDir()
	// One chain of 3 000 draws of 3 000 columns: seconds to read and
	// summarize.
	var b strings.Builder
	b.WriteString("# model = big\nlp__")
	for j := range 3000 {
		fmt.Fprintf(&b, ",x.%d", j+1)
	}
	b.WriteString("\n")
	row := strings.Repeat(",0.5", 3000)
	for i := range 3000 {
		fmt.Fprintf(&b, "%d%s\n", -i, row)
	}
	big := writeFile(t, dir, "big-1.csv", b.String())
	// Two million points in the plane: seconds to read and resolve.
	var pts strings.Builder
	pts.WriteString("x.1,x.2\n")
	for i := range 2000000 {
		fmt.Fprintf(&pts, "%d.25,%d.5\n", i%1999, i%2003)
	}
	points := writeFile(t, dir, "points.csv", pts.String())
	slow := writeFile(t, dir, "slow.shm", "transformed data {\n  real s = 0;\n  for (i in 1:2000000000) { s += 1; }\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n")
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"summary", []string{"summary", big}},
		{"plot", []string{"plot", "trace", big, "--out", filepath.Join(out, "t.png")}},
		{"diagnose", []string{"diagnose", slow}},
		{"calibrate eps", []string{"calibrate", "eps", points, "--y", "x"}},
	} {
		for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
			t.Run(tc.name+"/"+sig.String(), func(t *testing.T) {
				signalRun(t, out, false, sig, tc.args...)
			})
		}
	}
}
