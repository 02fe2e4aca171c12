//go:build cuda

package models_test

import (
	"fmt"
	"math"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/shmlang/shm/internal/modeltest"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/runtime"
)

// The tests of this file need an NVIDIA GPU (see package cuda).

// expADensity binds Experiment A's model with the Sinkhorn backend set to
// backend, and returns its density with the given number of replicate
// workers.
func expADensity(t testing.TB, backend string, workers int) *runtime.Density {
	y := filepath.Join("..", "..", "shared", "testdata", "expA", "data.csv")
	src := shared.EditedSource(t, "expA.shm", "iters = 80)", fmt.Sprintf("iters = 80, backend = %q)", backend))
	bm := modeltest.Bind(t, "expA.shm", src, []string{y}, "lambda=1")
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	d.Workers = workers
	return d
}

// TestExpAGradientGPU checks Experiment A's log density and gradient on
// the GPU (replicates batched into one launch) against the CPU to 1e-9
// relative.
func TestExpAGradientGPU(t *testing.T) {
	for _, theta := range [][]float64{{2, math.Log(0.5)}, {1.7, math.Log(0.8)}} {
		var lp [2]float64
		var g [2][]float64
		for i, backend := range []string{"cpu", "cuda"} {
			g[i] = make([]float64, 2)
			var err error
			if lp[i], err = expADensity(t, backend, 6).LogDensityGrad(theta, g[i]); err != nil {
				t.Fatal(err)
			}
		}
		if math.Abs(lp[1]-lp[0]) > 1e-9*math.Abs(lp[0]) {
			t.Errorf("theta %v: log density cuda %.17g, cpu %.17g", theta, lp[1], lp[0])
		}
		for k := range g[0] {
			if math.Abs(g[1][k]-g[0][k]) > 1e-9*math.Max(1, math.Abs(g[0][k])) {
				t.Errorf("theta %v: gradient %d cuda %.17g, cpu %.17g", theta, k, g[1][k], g[0][k])
			}
		}
	}
}

// BenchmarkExpAGradientGPU measures one gradient of Experiment A's
// potential (K = 6, T = 80, N = 120) on the GPU, with the six replicates
// in flight at once (one batched launch) or one after the other, and on
// the CPU with every core.
func BenchmarkExpAGradientGPU(b *testing.B) {
	theta := []float64{2, math.Log(0.5)}
	cores := goruntime.GOMAXPROCS(0)
	for _, c := range []struct {
		backend string
		workers int
	}{{"cuda", 6}, {"cuda", 1}, {"cpu", cores}} {
		b.Run(fmt.Sprintf("%s/workers=%d", c.backend, c.workers), func(b *testing.B) {
			d := expADensity(b, c.backend, c.workers)
			grad := make([]float64, 2)
			if _, err := d.LogDensityGrad(theta, grad); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := d.LogDensityGrad(theta, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
