package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmlang/shm/calibrate"
	"github.com/shmlang/shm/runtime/nuts"
)

// TestChainProgressHeartbeat: a chain with no line for a heartbeat gets
// one saying what its iteration is doing; a chain that printed recently,
// has not started or has finished gets none.
func TestChainProgressHeartbeat(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	p := newChainProgress(&out, &mu, 100, 10, 50, []int{1, 2, 3, 4})
	p.activity(nuts.Activity{Chain: 1, Iteration: 37, Total: 100, Warmup: true, TreeDepth: 8, NLeapfrog: 340, StepSize: 0.0012})
	p.progress(nuts.Progress{Chain: 2, Iteration: 100, Total: 100, TreeDepth: 2, NLeapfrog: 3, StepSize: 0.5}) // finished
	p.progress(nuts.Progress{Chain: 4, Iteration: 50, Total: 100, Warmup: true, TreeDepth: 2, NLeapfrog: 3, StepSize: 0.5})
	out.Reset()
	p.beat(time.Now().Add(5 * time.Second))
	if out.Len() != 0 {
		t.Fatalf("a line before the heartbeat: %q", out.String())
	}
	p.beat(time.Now().Add(11 * time.Second))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want chains 1 and 4:\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		"Chain 1 Iteration:  37 / 100 [ 36%]  (Warmup) this one running for 11s: 340 leapfrog step(s) so far, tree depth 8, step size 0.0012",
		"Chain 4 Iteration:  51 / 100 [ 50%]  (Sampling) 0.22 s per iteration over the last 11s; this one running for 11s: 0 leapfrog step(s) so far, tree depth 0, step size 0.5",
	} {
		if lines[i] != want {
			t.Errorf("line %d\n got %q\nwant %q", i+1, lines[i], want)
		}
	}
	// The heartbeat counts as the chain's last line.
	out.Reset()
	p.beat(time.Now().Add(15 * time.Second))
	if out.Len() != 0 {
		t.Errorf("a second line within a heartbeat: %q", out.String())
	}
}

// TestChainProgressMaxDepth: the warning comes once, when most of the
// last warmup iterations hit the maximum tree depth, and not for
// sampling iterations or a depth below the limit.
func TestChainProgressMaxDepth(t *testing.T) {
	for _, tc := range []struct {
		name       string
		depth      int
		warmup     bool
		iterations int
		warn       bool
	}{
		{"warmup at the limit", 6, true, 40, true},
		{"below the limit", 5, true, 40, false},
		{"too few iterations", 6, true, depthWindow - 1, false},
		{"sampling", 6, false, 40, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var mu sync.Mutex
			p := newChainProgress(&out, &mu, 0, 6, 100, []int{3})
			for i := range tc.iterations {
				p.progress(nuts.Progress{Chain: 3, Iteration: i + 1, Total: 200, Warmup: tc.warmup, TreeDepth: tc.depth, NLeapfrog: 63, StepSize: 1e-4})
			}
			n := strings.Count(out.String(), "hit the maximum tree depth 6")
			if want := map[bool]int{true: 1, false: 0}[tc.warn]; n != want {
				t.Errorf("%d warnings, want %d:\n%s", n, want, out.String())
			}
		})
	}
}

// TestSampleWarnsMaxDepth: shm sample warns during warmup when its trees
// keep reaching --max-depth (1 here: every tree that does not diverge),
// naming the chain.
func TestSampleWarnsMaxDepth(t *testing.T) {
	model := writeFile(t, t.TempDir(), "m.shm", "parameters {\n  real x;\n}\nmodel {\n  x ~ normal(0, 1);\n}\n")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sample", model, "--chains", "1", "--warmup", "60", "--samples", "10", "--max-depth", "1", "--seed", "1",
		"--output", filepath.Join(t.TempDir(), "o"), "--refresh", "50"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "Chain 1: ") || !strings.Contains(stderr.String(), "hit the maximum tree depth 1") {
		t.Errorf("no warning:\n%s", stderr.String())
	}
}

// TestCalibrateProgress: a calibration's runs report as shm sample's
// chains do, each line labelled with its run: a line every --refresh
// iterations, and a heartbeat while an iteration is slow (here after
// 50 ms).
func TestCalibrateProgress(t *testing.T) {
	model, y := calibrationFiles(t)
	var stdout, stderr bytes.Buffer
	args := []string{"calibrate", "lambda", model, y, "--dir", filepath.Join(t.TempDir(), "cal"), "--truth", "mu=0.5", "--generate", "2",
		"--replicate", "y=y_rep", "--lambdas", "1", "--warmup", "100", "--samples", "100", "--seed", "3", "--refresh", "50", "--workers", "2"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		"lambda 1, dataset 1: Chain 1 Iteration:  50 / 200 [ 25%]  (Warmup)\n",
		"lambda 1, dataset 2: Chain 1 Iteration: 250 / 250 [100%]  (Sampling)\n", // a warm start: 150 warmup iterations
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no line %q in\n%s", want, stderr.String())
		}
	}

	var out syncBuffer
	plan := &calibrate.Plan{Chains: 2, Warmup: 100, Samples: 100}
	opts, stop := runMonitor(&out, 100, 50*time.Millisecond, plan)("lambda 2, dataset 7")
	opts.Activity(nuts.Activity{Chain: 1, Iteration: 3, Total: 200, Warmup: true, TreeDepth: 9, NLeapfrog: 700, StepSize: 0.01})
	time.Sleep(1500 * time.Millisecond)
	stop()
	want := "lambda 2, dataset 7: Chain 1 Iteration:   3 / 200 [  1%]  (Warmup) this one running for "
	if got := out.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, "700 leapfrog step(s) so far, tree depth 9, step size 0.01\n") {
		t.Errorf("heartbeat %q, want a line starting %q", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader on
// different goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
