package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSampleReportsCRNVariance(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "d.csv", "y\n0.1\n0.5\n-0.3\n0.9\n0.2\n")
	model := writeFile(t, dir, "crn.shm", `data { vector[5] y; }
parameters { real mu; real<lower=0> s; }
model { mu ~ normal(0, 1); s ~ normal(0, 1);
  target += -5 * crn(3, sinkhorn(mu + s * std_normal_rng(5), y, eps = 0.05, iters = 30)); }
`)
	stdout, stderr, code := runCmd(t, "sample", model, data, "--seed", "2", "--chains", "2", "--warmup", "100",
		"--samples", "100", "--output", filepath.Join(dir, "out"), "--refresh", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Common random numbers") || !strings.Contains(stdout, "crn at 4:18 (K = 3):") ||
		!strings.Contains(stdout, "at the posterior mean") {
		t.Errorf("no crn report:\n%s", stdout)
	}
}
