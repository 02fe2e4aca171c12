//go:build cuda

package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/modeltest"
	"github.com/shmlang/shm/internal/shared"
	"github.com/shmlang/shm/runtime"
)

// The tests of this file need an NVIDIA GPU (see package cuda).

// expDDensity binds Experiment D's model of regime ("balanced" or
// "unbalanced") on the test image of c with the Sinkhorn backend set to
// backend.
func expDDensity(t testing.TB, c modelCase, backend string) *runtime.Density {
	src := shared.EditedSource(t, c.model, "iters = 64", fmt.Sprintf("iters = 64, backend = %q", backend))
	d, err := modeltest.Bind(t, c.model, src, c.data, c.sets...).NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// expDCases are the Experiment D cases of modelCases.
func expDCases(t testing.TB) []modelCase {
	var cs []modelCase
	for _, c := range modelCases(t) {
		if strings.HasPrefix(c.name, "D-") {
			cs = append(cs, c)
		}
	}
	return cs
}

// TestExpDGradientGPU checks Experiment D's log density and gradient with
// backend = "cuda" (the GPU's grid path, three channels) against "cpu"
// (package ot's grid path) to 1e-9 relative, in both regimes.
func TestExpDGradientGPU(t *testing.T) {
	for _, c := range expDCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var lp [2]float64
			var g [2][]float64
			for i, backend := range []string{"cpu", "cuda"} {
				g[i] = make([]float64, len(c.theta))
				var err error
				if lp[i], err = expDDensity(t, c, backend).LogDensityGrad(c.theta, g[i]); err != nil {
					t.Fatal(err)
				}
			}
			if math.Abs(lp[1]-lp[0]) > 1e-9*math.Abs(lp[0]) {
				t.Errorf("log density cuda %.17g, cpu %.17g", lp[1], lp[0])
			}
			for k := range g[0] {
				if math.Abs(g[1][k]-g[0][k]) > 1e-9*math.Max(1, math.Abs(g[0][k])) {
					t.Errorf("gradient %d: cuda %.17g, cpu %.17g", k, g[1][k], g[0][k])
				}
			}
		})
	}
}

// BenchmarkExpDGradientGPU measures one gradient of Experiment D's
// potential (three channels, 16×16 grid, T = 64) with backend = "cuda" and
// "cpu", in both regimes: the cost of one leapfrog step of a chain.
func BenchmarkExpDGradientGPU(b *testing.B) {
	for _, c := range expDCases(b) {
		for _, backend := range []string{"cuda", "cpu"} {
			b.Run(c.name+"/"+backend, func(b *testing.B) {
				d := expDDensity(b, c, backend)
				grad := make([]float64, len(c.theta))
				if _, err := d.LogDensityGrad(c.theta, grad); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := d.LogDensityGrad(c.theta, grad); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
