package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// Benchmarks. Report "ns/term": nanoseconds per kernel term, a term being
// one (i, j) pair of one sweep. A forward OT evaluation has 2·T·n·m terms;
// a forward+backward (unrolled) evaluation has 4·T·n·m (the backward pass
// sweeps twice per iteration). The 4096 cases run only with
// OT_BENCH_LARGE=1 (seconds per evaluation).
//
//	go test -run '^$' -bench . -benchtime 3x ./stdlib/ot/

func benchWorkers() []int {
	ws := []int{1}
	if runtime.GOMAXPROCS(0) > 1 {
		ws = append(ws, runtime.GOMAXPROCS(0))
	}
	return ws
}

func benchSizes() []int {
	s := []int{120, 256, 1024}
	if v, _ := strconv.ParseBool(os.Getenv("OT_BENCH_LARGE")); v {
		s = append(s, 4096)
	}
	return s
}

func BenchmarkOTForward(b *testing.B) {
	for _, n := range benchSizes() {
		for _, workers := range benchWorkers() {
			b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				x, y, la, lb := randProblem(rng, n, n, 2, true)
				w := NewWorkspaceWorkers(n, n, 2, workers)
				defer w.Close()
				o := Options{Eps: 0.05, Balanced: true, Iters: 80}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := w.OT(x, y, la, lb, o, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*80*float64(n*n)), "ns/term")
			})
		}
	}
}

func BenchmarkOTForwardBackward(b *testing.B) {
	for _, n := range benchSizes() {
		for _, workers := range benchWorkers() {
			b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				x, y, la, lb := randProblem(rng, n, n, 2, true)
				w := NewWorkspaceWorkers(n, n, 2, workers)
				defer w.Close()
				o := Options{Eps: 0.05, Balanced: true, Iters: 80}
				gr := &Grad{X: make([]float64, 2*n), Y: make([]float64, 2*n), LogA: make([]float64, n), LogB: make([]float64, n)}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := w.OT(x, y, la, lb, o, gr); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(4*80*float64(n*n)), "ns/term")
			})
		}
	}
}

// BenchmarkHalfStep times one forward half-iteration (one sweep).
func BenchmarkHalfStep(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, uint64(n)))
			x, y, _, lb := randProblem(rng, n, n, 2, true)
			w := NewWorkspaceWorkers(n, n, 2, 1)
			defer w.Close()
			e := w.e
			u := make([]float64, n)
			for j := range u {
				u[j] = lb[j] + 0.01*rng.NormFloat64()
			}
			out := make([]float64, n)
			for b.Loop() {
				e.sweep(sweepJob{rows: x, cols: y, nr: n, nc: n, u: u, invEps: 1 / 0.05, outScale: -0.05, out: out})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*n), "ns/term")
		})
	}
}

// BenchmarkSumExp times the exponential-sum kernel alone.
func BenchmarkSumExp(b *testing.B) {
	buf := make([]float64, 1024)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range buf {
		buf[i] = -30 * rng.Float64()
	}
	var s float64
	for b.Loop() {
		s += sumExpShift(buf, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/term")
	if math.IsNaN(s) {
		b.Fatal("NaN")
	}
}
