package stancsv_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
	"github.com/shmlang/shm/runtime/stancsv"
)

// rScript reads Stan CSV files with rstan::read_stan_csv and prints, for
// each parameter, posterior's rhat, ess_bulk, ess_tail and mcse_mean.
const rScript = `
suppressMessages({library(rstan); library(posterior)})
fit <- read_stan_csv(commandArgs(TRUE))
d <- as_draws_array(as.array(fit))
s <- summarise_draws(d, rhat, ess_bulk, ess_tail, mcse_mean)
for (i in seq_len(nrow(s))) cat(s$variable[i], sprintf("%.15g", s$rhat[i]), sprintf("%.15g", s$ess_bulk[i]), sprintf("%.15g", s$ess_tail[i]), sprintf("%.15g", s$mcse_mean[i]), "\n")
`

// TestReadByRstan checks that rstan reads our files unchanged and that
// posterior's diagnostics of what it read equal ours. It is skipped when
// Rscript, rstan or posterior is missing (Debian: r-cran-rstan,
// r-cran-posterior).
func TestReadByRstan(t *testing.T) {
	if _, err := exec.LookPath("Rscript"); err != nil {
		t.Skip("Rscript not found")
	}
	if err := exec.Command("Rscript", "-e", "library(rstan); library(posterior)").Run(); err != nil {
		t.Skip("R packages rstan and posterior not installed")
	}
	dir := t.TempDir()
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 300, 400
	var paths []string
	for chain := 1; chain <= 4; chain++ {
		path := filepath.Join(dir, fmt.Sprintf("normal2-%d.csv", chain))
		header := &stancsv.Config{
			Model: "normal2", NumSamples: cfg.NumSamples, NumWarmup: cfg.NumWarmup, Thin: 1,
			AdaptEngaged: true, Gamma: 0.05, Delta: 0.8, Kappa: 0.75, T0: 10, InitBuffer: 75, TermBuffer: 50, Window: 25,
			MaxDepth: 10, Metric: "diag_e", StepSize: 1, NumChains: 4, ID: chain, Init: "2", Seed: 7, OutputFile: path,
		}
		if err := writeChain(path, header, cfg, chain); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	script := filepath.Join(dir, "check.R")
	if err := os.WriteFile(script, []byte(rScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("Rscript", append([]string{script}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("Rscript: %v\n%s", err, out)
	}
	var files []*stancsv.File
	for _, p := range paths {
		f, err := stancsv.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	fit, err := stancsv.ToFit(files)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := diag.Summarize(fit)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]diag.Summary{}
	for _, r := range rows {
		ours[strings.ReplaceAll(r.Name, ".", "[")] = r // rstan names mu.1 mu[1
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		name := f[0]
		if strings.HasPrefix(name, "mu[") {
			name = strings.TrimSuffix(name, "]")
		}
		r, ok := ours[name]
		if !ok {
			t.Errorf("R reports %q, which we do not have", f[0])
			continue
		}
		n++
		for i, want := range []float64{r.Rhat, r.ESSBulk, r.ESSTail, r.MCSE} {
			got, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				t.Fatalf("R output %q", line)
			}
			if math.Abs(got-want) > 1e-9*math.Abs(want) {
				t.Errorf("%s: statistic %d is %.12g in R, %.12g here", f[0], i, got, want)
			}
		}
	}
	if n != 3 {
		t.Errorf("compared %d quantities, want 3 (mu[1], mu[2], lp__):\n%s", n, out)
	}
}
