package main

import (
	"strings"
	"testing"
)

// TestDiagnoseSinkhornModels checks, through shm diagnose, that the
// gradients of models using the Sinkhorn primitives (balanced, unbalanced,
// envelope, points in R², crn) match finite differences.
func TestDiagnoseSinkhornModels(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "d.csv", "y,z.1,z.2\n0.1,0,1\n0.5,1,0\n-0.3,0.5,0.5\n0.9,1,1\n0.2,0,0\n")
	models := map[string]string{
		"balanced": `data { vector[5] y; }
parameters { real mu; real<lower=0> s; }
model { mu ~ normal(0, 1); s ~ normal(0, 1);
  target += -10 * sinkhorn(mu + s * y, y, eps = 0.05, iters = 30); }`,
		"unbalanced": `data { vector[5] y; }
parameters { real mu; }
model { target += -10 * sinkhorn(mu + y, y, eps = 0.05, iters = 30, rho = 2); }`,
		"envelope ot": `data { vector[5] y; }
parameters { real mu; }
model { target += -sinkhorn_ot(mu + y, y, eps = 0.5, iters = 200, grad = "envelope"); }`,
		"points in R2": `data { matrix[5, 2] z; }
parameters { vector[2] shift; }
model { shift ~ normal(0, 1);
  target += -sinkhorn(z + rep_matrix(shift', 5), z, eps = 0.1, iters = 40); }`,
		"crn": `data { vector[5] y; }
parameters { real mu; real<lower=0> s; }
model { mu ~ normal(0, 1); s ~ normal(0, 1);
  target += -5 * crn(3, sinkhorn(mu + s * std_normal_rng(5), y, eps = 0.05, iters = 30)); }`,
	}
	for name, src := range models {
		t.Run(name, func(t *testing.T) {
			model := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".shm", src)
			stdout, stderr, code := runCmd(t, "diagnose", model, data, "--seed", "3", "--error", "1e-5")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "Log probability=") {
				t.Errorf("unexpected output:\n%s", stdout)
			}
		})
	}
}
