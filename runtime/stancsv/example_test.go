package stancsv_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
	"github.com/shmlang/shm/runtime/stancsv"
)

// normal2 is a 2-D normal with means 1 and -1 and standard deviation 2.
type normal2 struct{}

func (normal2) Dim() int { return 2 }

func (normal2) LogDensityGrad(x, g []float64) (float64, error) {
	mu := []float64{1, -1}
	lp := 0.0
	for i, v := range x {
		z := (v - mu[i]) / 4
		g[i] = -z
		lp -= 0.5 * (v - mu[i]) * z
	}
	return lp, nil
}

// Example runs four chains, writes one Stan CSV file per chain, reads the
// files back and prints the R-hat of each parameter.
func Example() {
	dir, err := os.MkdirTemp("", "stancsv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := nuts.DefaultConfig()
	var paths []string
	for chain := 1; chain <= 4; chain++ {
		path := filepath.Join(dir, fmt.Sprintf("normal2-%d.csv", chain))
		header := &stancsv.Config{
			Model: "normal2", NumSamples: cfg.NumSamples, NumWarmup: cfg.NumWarmup, Thin: cfg.Thin,
			AdaptEngaged: true, Gamma: cfg.Gamma, Delta: cfg.Delta, Kappa: cfg.Kappa, T0: cfg.T0,
			InitBuffer: cfg.InitBuffer, TermBuffer: cfg.TermBuffer, Window: cfg.BaseWindow,
			MaxDepth: cfg.MaxDepth, Metric: cfg.Metric.String(), StepSize: cfg.StepSize,
			NumChains: 4, ID: chain, Init: "2", Seed: 42, OutputFile: path, Refresh: 100,
		}
		if err := writeChain(path, header, cfg, chain); err != nil {
			log.Fatal(err)
		}
		paths = append(paths, path)
	}

	fit, err := stancsv.ReadFit(paths...)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := stancsv.ReadFit(paths[0], filepath.Join(dir, "missing.csv")); err == nil {
		log.Fatal("missing file read")
	}
	rows, err := diag.Summarize(fit)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows[len(stancsv.SamplerColumns()):] {
		fmt.Printf("%s: R-hat below 1.01: %v\n", r.Name, r.Rhat < 1.01)
	}
	// Output:
	// mu.1: R-hat below 1.01: true
	// mu.2: R-hat below 1.01: true
}

func writeChain(path string, header *stancsv.Config, cfg nuts.Config, chain int) (err error) {
	w, err := stancsv.Create(path, header, []string{"mu.1", "mu.2"})
	if err != nil {
		return err
	}
	defer w.Abort() // removes the partial file unless Close succeeded
	c, err := nuts.NewChain(normal2{}, cfg, header.Seed, chain)
	if err != nil {
		return err
	}
	row := make([]float64, 0, 9)
	err = c.Run(context.Background(), nuts.Callbacks{
		Adapted: func(a nuts.Adaptation) error {
			return w.WriteAdaptation(a.StepSize, a.Metric == nuts.Dense, a.Dim, a.InvMetric)
		},
		Draw: func(d *nuts.Draw) error {
			row = append(d.AppendSamplerValues(row[:0]), d.Theta...)
			return w.WriteRow(row)
		},
	})
	if err != nil {
		return err
	}
	t := c.Timing()
	if err := w.WriteTiming(t.Warmup, t.Sampling); err != nil {
		return err
	}
	return w.Close()
}
