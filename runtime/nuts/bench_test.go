package nuts_test

import (
	"context"
	"testing"

	"github.com/shmlang/shm/runtime/nuts"
)

// BenchmarkSample100 runs one chain (300 warmup + 300 sampling iterations)
// on a 100-dimensional standard normal.
func BenchmarkSample100(b *testing.B) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 300, 300
	target := &gaussian{d: 100}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c, err := nuts.NewChain(target, cfg, 1, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Run(context.Background(), nuts.Callbacks{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransition measures one transition after warmup, in allocations
// and time per gradient.
func BenchmarkTransitions(b *testing.B) {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples = 200, b.N
	target := &gaussian{d: 100}
	c, err := nuts.NewChain(target, cfg, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	leapfrogs := 0
	b.ReportAllocs()
	err = c.Run(context.Background(), nuts.Callbacks{
		Adapted: func(nuts.Adaptation) error { b.ResetTimer(); return nil },
		Draw:    func(d *nuts.Draw) error { leapfrogs += d.NLeapfrog; return nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(leapfrogs), "ns/leapfrog")
}
