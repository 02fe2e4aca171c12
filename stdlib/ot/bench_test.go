package ot

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Benchmarks. "ns/term" is nanoseconds per kernel term, a term being one
// (i, j) pair of one sweep over the n×m kernel. A forward OT evaluation has
// 2·T·n·m terms (two sweeps per iteration). A forward+backward (unrolled)
// evaluation sweeps 4·T·n·m terms (two more per iteration backward); its
// ns/term figure still divides by 2·T·n·m, i.e. it is the cost per forward
// term including that term's share of the backward pass.
//
//	go test -run '^$' -bench . ./stdlib/ot/
//	OT_BENCH_LARGE=1 go test -run '^$' -bench 'n=4096' -benchtime 1x ./stdlib/ot/
//
// The problems are deterministic (benchProblem) so that bench/pot_bench.py
// can build the same ones.

func largeBench() bool {
	v, _ := strconv.ParseBool(os.Getenv("OT_BENCH_LARGE"))
	return v
}

func benchWorkers() []int {
	ws := []int{1}
	if runtime.GOMAXPROCS(0) > 1 {
		ws = append(ws, runtime.GOMAXPROCS(0))
	}
	return ws
}

func benchSizes() []int {
	s := []int{120, 256, 1024}
	if largeBench() {
		s = append(s, 4096)
	}
	return s
}

// benchProblem returns the deterministic benchmark problem of size n = m,
// d = 2, uniform weights (the same formulas as bench/pot_bench.py).
func benchProblem(n int) (x, y, la, lb []float64) {
	x = make([]float64, 2*n)
	y = make([]float64, 2*n)
	la = make([]float64, n)
	lb = make([]float64, n)
	for i := range n {
		fi := float64(i)
		x[2*i] = math.Sin(1.3 * fi)
		x[2*i+1] = 1.1 * math.Cos(0.7*fi)
		y[2*i] = 0.8*math.Sin(0.9*fi+0.5) + 0.3
		y[2*i+1] = 0.9 * math.Cos(1.7*fi)
		la[i] = -math.Log(float64(n))
		lb[i] = -math.Log(float64(n))
	}
	return
}

const benchEps, benchIters = 0.05, 80

func benchOT(b *testing.B, n, workers int, simd, grad bool) {
	if n >= 4096 && !simd && haveSIMD {
		b.Skip("pure Go at n = 4096 takes minutes; see n ≤ 1024")
	}
	x, y, la, lb := benchProblem(n)
	w := NewWorkspaceWorkers(n, n, 2, workers)
	defer w.Close()
	w.e.simd = simd
	o := Options{Eps: benchEps, Balanced: true, Iters: benchIters}
	var gr *Grad
	if grad {
		gr = &Grad{X: make([]float64, 2*n), Y: make([]float64, 2*n), LogA: make([]float64, n), LogB: make([]float64, n)}
	}
	if _, err := w.OT(x, y, la, lb, o, gr); err != nil { // warm-up: buffers
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.OT(x, y, la, lb, o, gr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*benchIters*float64(n*n)), "ns/term")
}

func kernelNames() []bool {
	if haveSIMD {
		return []bool{false, true}
	}
	return []bool{false}
}

func kname(simd bool) string {
	if simd {
		return "avx2"
	}
	return "go"
}

func BenchmarkOTForward(b *testing.B) {
	for _, n := range benchSizes() {
		for _, simd := range kernelNames() {
			for _, workers := range benchWorkers() {
				b.Run(fmt.Sprintf("n=%d/%s/workers=%d", n, kname(simd), workers), func(b *testing.B) {
					benchOT(b, n, workers, simd, false)
				})
			}
		}
	}
}

func BenchmarkOTForwardBackward(b *testing.B) {
	for _, n := range benchSizes() {
		for _, simd := range kernelNames() {
			for _, workers := range benchWorkers() {
				b.Run(fmt.Sprintf("n=%d/%s/workers=%d", n, kname(simd), workers), func(b *testing.B) {
					benchOT(b, n, workers, simd, true)
				})
			}
		}
	}
}

// BenchmarkHalfStep times one forward half-iteration (one sweep) at several
// sizes and worker counts: it decides the parallel threshold.
func BenchmarkHalfStep(b *testing.B) {
	for _, n := range []int{16, 32, 64, 128, 256, 1024} {
		for _, simd := range kernelNames() {
			for _, workers := range benchWorkers() {
				b.Run(fmt.Sprintf("n=%d/%s/workers=%d", n, kname(simd), workers), func(b *testing.B) {
					x, y, _, lb := benchProblem(n)
					w := NewWorkspaceWorkers(n, n, 2, workers)
					defer w.Close()
					w.SetParallelThreshold(1)
					e := w.e
					e.simd = simd
					out := make([]float64, n)
					job := sweepJob{rows: x, cols: y, nr: n, nc: n, u: lb, invEps: 1 / benchEps, outScale: -benchEps, out: out}
					e.sweep(job)
					for b.Loop() {
						e.sweep(job)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*n), "ns/term")
				})
			}
		}
	}
}

// lseRowOnline is the one-pass alternative to argsRow + sumExpShift: a
// running maximum and sum (rescaled when the maximum grows), two lanes,
// d = 2, the same inline exponential. Kept for the measurement only.
func lseRowOnline(p, q, u []float64, invEps float64) float64 {
	p0, p1 := p[0], p[1]
	nc := len(u)
	q = q[:2*nc]
	m0, m1 := math.Inf(-1), math.Inf(-1)
	var s0, s1 float64
	j := 0
	for ; j+1 < nc; j += 2 {
		a0 := p0 - q[2*j]
		a1 := p1 - q[2*j+1]
		b0 := p0 - q[2*j+2]
		b1 := p1 - q[2*j+3]
		v0 := u[j] - (a0*a0+a1*a1)*invEps
		v1 := u[j+1] - (b0*b0+b1*b1)*invEps
		if v0 > m0 {
			s0 = s0*expNonPos(m0-v0) + 1
			m0 = v0
		} else {
			s0 += inlineExp(v0 - m0)
		}
		if v1 > m1 {
			s1 = s1*expNonPos(m1-v1) + 1
			m1 = v1
		} else {
			s1 += inlineExp(v1 - m1)
		}
	}
	for ; j < nc; j++ {
		a0 := p0 - q[2*j]
		a1 := p1 - q[2*j+1]
		v := u[j] - (a0*a0+a1*a1)*invEps
		if v > m0 {
			s0 = s0*expNonPos(m0-v) + 1
			m0 = v
		} else {
			s0 += expNonPos(v - m0)
		}
	}
	if m1 > m0 {
		m0, m1 = m1, m0
		s0, s1 = s1, s0
	}
	if !math.IsInf(m1, -1) {
		s0 += s1 * expNonPos(m1-m0)
	}
	return m0 + math.Log(s0)
}

// inlineExp is expCore with the clamp, small enough to be inlined in the
// measurement loop: x ≤ 0.
func inlineExp(x float64) float64 {
	x = max(x, expLow)
	t := x*log2e + roundC
	k := t - roundC
	r := x - k*ln2Hi - k*ln2Lo
	return poly13(r) * math.Float64frombits(uint64(int64(math.Float64bits(t)-math.Float64bits(roundC))+1023)<<52)
}

// BenchmarkRowSweep compares, in pure Go, the two-pass row (arguments and
// maximum, then the shifted sum) with the one-pass running maximum.
func BenchmarkRowSweep(b *testing.B) {
	const n = 1024
	x, y, _, lb := benchProblem(n)
	buf := make([]float64, n)
	var sink float64
	b.Run("two-pass", func(b *testing.B) {
		k := kern{}
		for b.Loop() {
			for i := 0; i < 64; i++ {
				sink += k.lseRow(buf, x[2*i:2*i+2], y, lb, 1/benchEps)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(64*n), "ns/term")
	})
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			for i := 0; i < 64; i++ {
				sink += lseRowOnline(x[2*i:2*i+2], y, lb, 1/benchEps)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(64*n), "ns/term")
	})
	b.Run("two-pass-avx2", func(b *testing.B) {
		if !haveSIMD {
			b.Skip("no AVX2")
		}
		k := kern{simd: true}
		for b.Loop() {
			for i := 0; i < 64; i++ {
				sink += k.lseRow(buf, x[2*i:2*i+2], y, lb, 1/benchEps)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(64*n), "ns/term")
	})
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

// BenchmarkGrid compares the dense and the separable path on h×h grids
// (divergence, forward and forward+backward with log-weight gradients).
func BenchmarkGrid(b *testing.B) {
	for _, h := range []int{16, 64} {
		g := Grid{h, h}
		n := g.N()
		pts := g.Points()
		la := make([]float64, n)
		lb := make([]float64, n)
		for i := range la {
			r, c := float64(i/h), float64(i%h)
			la[i] = -0.01 * ((r-0.4*float64(h))*(r-0.4*float64(h)) + (c-0.5*float64(h))*(c-0.5*float64(h)))
			lb[i] = -0.012 * ((r-0.6*float64(h))*(r-0.6*float64(h)) + (c-0.45*float64(h))*(c-0.45*float64(h)))
		}
		normalize(la)
		normalize(lb)
		o := Options{Eps: 1, Balanced: true, Iters: 64}
		for _, grad := range []bool{false, true} {
			for _, path := range []string{"dense", "separable"} {
				name := fmt.Sprintf("%dx%d/%s/grad=%v", h, h, path, grad)
				b.Run(name, func(b *testing.B) {
					if h == 64 && path == "dense" && grad && !largeBench() {
						b.Skip("OT_BENCH_LARGE=1 to run")
					}
					w := NewWorkspace(n, n, 2)
					defer w.Close()
					var gr *Grad
					if grad {
						gr = &Grad{LogA: make([]float64, n), LogB: make([]float64, n)}
					}
					run := func() {
						var err error
						if path == "dense" {
							_, err = w.Divergence(pts, pts, la, lb, o, nil, gr)
						} else {
							_, err = w.GridDivergence(g, la, lb, o, nil, gr)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					run()
					b.ReportAllocs()
					for b.Loop() {
						run()
					}
				})
			}
		}
	}
}

// BenchmarkUnrolledMemory reports the bytes allocated by one unrolled
// gradient of OT on a fresh workspace (all buffers included), for several
// T and n: it grows like T·(n+m), not T·n·m.
func BenchmarkUnrolledMemory(b *testing.B) {
	sizes := []int{256, 1024}
	if largeBench() {
		sizes = append(sizes, 4096)
	}
	for _, n := range sizes {
		for _, T := range []int{10, 20, 40, 80} {
			b.Run(fmt.Sprintf("n=%d/T=%d", n, T), func(b *testing.B) {
				x, y, la, lb := benchProblem(n)
				o := Options{Eps: benchEps, Balanced: true, Iters: T}
				var total uint64
				for b.Loop() {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					w := NewWorkspace(n, n, 2)
					gr := &Grad{X: make([]float64, 2*n), Y: make([]float64, 2*n), LogA: make([]float64, n), LogB: make([]float64, n)}
					if _, err := w.OT(x, y, la, lb, o, gr); err != nil {
						b.Fatal(err)
					}
					runtime.ReadMemStats(&after)
					total = after.TotalAlloc - before.TotalAlloc
					w.Close()
				}
				b.ReportMetric(float64(total), "bytes")
				// What is left after the potentials' history 8·T·(n+m): constant in T.
				b.ReportMetric(float64(total)-float64(8*T*2*n), "bytes-8T(n+m)")
			})
		}
	}
}

// BenchmarkPrune compares the forward row with and without pruning, on the
// benchmark problem (eps = 0.05) and with a small eps (1e-3, like the paper's
// Experiment A where most terms are far below each row's maximum).
func BenchmarkPrune(b *testing.B) {
	if !haveSIMD {
		b.Skip("pruning is in the SIMD kernel")
	}
	const n = 1024
	x, y, _, lb := benchProblem(n)
	buf := make([]float64, n)
	var sink float64
	for _, eps := range []float64{0.05, 1e-3} {
		for _, noPrune := range []bool{true, false} {
			b.Run(fmt.Sprintf("eps=%g/pruned=%v", eps, !noPrune), func(b *testing.B) {
				k := kern{simd: true, noPrune: noPrune}
				for b.Loop() {
					for i := 0; i < 64; i++ {
						sink += k.lseRow(buf, x[2*i:2*i+2], y, lb, 1/eps)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(64*n), "ns/term")
			})
		}
	}
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

// BenchmarkConverged compares the fixed T = 80 of the paper's experiments
// with the converged mode at tol = 1e-6 (cap 10000, the sinkhorn
// built-in's default) and at tol = 1e-3, on problems of Experiment A's
// size and scale (sparseBenchProblem: 1-D at n = m = 1024, and 2-D at
// n = m = 362), at eps = (alpha·h)², h the resolution of y, for the
// resolution heuristic's alpha = 1 and for alpha = 4, on the scaling and
// the sparse paths, one worker: one divergence with its gradient with
// respect to x (T = 80: unrolled and envelope; tol: envelope), the y–y
// term cached (with the same options). The converged mode runs as it does
// by default (auto: it anneals the x–y problem when eps_0/eps >
// annealMinRatio, every problem here but 2-D at alpha = 4), from the cold
// start (cold) and annealing (annealed; anneal.go). It reports the x–y
// problem's iterations (xy-iters), those of its annealing
// (anneal-iters), and whether the evaluation reached the cap first
// (notconv, 1: it returned ErrNotConverged after the cap's 10000
// iterations, what a rejected proposal costs).
//
//	go test -run '^$' -bench Converged -benchtime 3x ./stdlib/ot
func BenchmarkConverged(b *testing.B) {
	modes := map[string]annealMode{"auto": annealAuto, "cold": annealNever, "annealed": annealAlways}
	for _, c := range []struct{ n, d int }{{1024, 1}, {362, 2}} {
		x, y, la, lb, opt := sparseBenchProblem(b, c.n, c.d)
		for _, alpha := range []float64{1, 4} {
			for _, path := range []Path{PathScaling, PathSparse} {
				for _, mode := range []string{"T=80/unrolled", "T=80/envelope",
					"tol=1e-6/auto", "tol=1e-6/cold", "tol=1e-6/annealed", "tol=1e-3/auto", "tol=1e-3/cold", "tol=1e-3/annealed"} {
					o := opt
					o.Eps *= alpha * alpha
					budget, start, _ := strings.Cut(mode, "/")
					switch {
					case mode == "T=80/envelope":
						o.Grad = GradEnvelope
					case budget == "tol=1e-6":
						o.Tol, o.Iters, o.Grad = 1e-6, 10000, GradEnvelope
					case budget == "tol=1e-3":
						o.Tol, o.Iters, o.Grad = 1e-3, 10000, GradEnvelope
					}
					b.Run(fmt.Sprintf("d=%d/n=%d/alpha=%g/%v/%s", c.d, c.n, alpha, path, mode), func(b *testing.B) {
						w := NewWorkspaceWorkers(c.n, c.n, c.d, 1)
						defer w.Close()
						w.SetPath(path)
						w.e.annealing = modes[start]
						yy, err := w.SelfTerm(y, lb, o)
						if err != nil {
							b.Fatal(err)
						}
						gr := &Grad{X: make([]float64, c.n*c.d)}
						var notConv float64
						for b.Loop() {
							if _, err := w.Divergence(x, y, la, lb, o, yy, gr); errors.Is(err, ErrNotConverged) {
								notConv = 1
							} else if err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(w.Iterations().XY), "xy-iters")
						b.ReportMetric(float64(w.e.annealedXY), "anneal-iters")
						b.ReportMetric(notConv, "notconv")
					})
				}
			}
		}
	}
}
