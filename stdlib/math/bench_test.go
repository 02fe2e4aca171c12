package mathlib

import (
	"math/rand/v2"
	"testing"

	"github.com/shmlang/shm/autodiff"
)

// benchCall measures one evaluation of fn on variable arguments plus the
// gradient of the sum of its result, on a reused tape.
func benchCall(b *testing.B, fn string, args ...arg) {
	c := tcase{fn: fn, args: args}
	var x0 []float64
	for _, a := range args {
		x0 = append(x0, a.reals()...)
	}
	tape := autodiff.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		tape.Reset()
		v, err := c.call(tape, tape.VarVec(x0))
		if err != nil {
			b.Fatal(err)
		}
		out := v.AD
		if out.Len() > 1 {
			out = tape.Sum(out)
		}
		if err := tape.Gradient(out); err != nil {
			b.Fatal(err)
		}
	}
}

func randVec(n int, r *rand.Rand) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = r.Float64() + 0.1
	}
	return xs
}

func BenchmarkExp1000(b *testing.B) {
	benchCall(b, "exp", V(randVec(1000, rand.New(rand.NewPCG(1, 2)))...))
}

func BenchmarkPow1000(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	benchCall(b, "pow", V(randVec(1000, r)...), V(randVec(1000, r)...))
}

func BenchmarkVariance1000(b *testing.B) {
	benchCall(b, "variance", V(randVec(1000, rand.New(rand.NewPCG(1, 2)))...))
}

func BenchmarkSortAsc1000(b *testing.B) {
	benchCall(b, "sort_asc", V(randVec(1000, rand.New(rand.NewPCG(1, 2)))...))
}

// spdArg returns an n×n symmetric positive-definite matrix X Xᵀ + n I.
func spdArg(n int) arg {
	r := rand.New(rand.NewPCG(3, 4))
	x := randVec(n*n, r)
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			for k := range n {
				a[i*n+j] += x[i*n+k] * x[j*n+k]
			}
		}
		a[i*n+i] += float64(n)
	}
	return M(n, n, a...)
}

func BenchmarkCholesky10(b *testing.B)       { benchCall(b, "cholesky_decompose", spdArg(10)) }
func BenchmarkCholesky50(b *testing.B)       { benchCall(b, "cholesky_decompose", spdArg(50)) }
func BenchmarkInverse10(b *testing.B)        { benchCall(b, "inverse", spdArg(10)) }
func BenchmarkLogDeterminant10(b *testing.B) { benchCall(b, "log_determinant", spdArg(10)) }

func BenchmarkMdivideLeftTriLow50(b *testing.B) {
	benchCall(b, "mdivide_left_tri_low", spdArg(50), V(randVec(50, rand.New(rand.NewPCG(5, 6)))...))
}

func BenchmarkToVectorMatrix(b *testing.B) {
	benchCall(b, "to_vector", M(30, 30, randVec(900, rand.New(rand.NewPCG(1, 2)))...))
}
