package runtime

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

const regressionVectorized = `
data { int N; int D; matrix[N, D] X; vector[N] y; }
parameters { real alpha; vector[D] beta; real<lower=0> sigma; }
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  sigma ~ normal(0, 5);
  y ~ normal(alpha + X * beta, sigma);
}`

const regressionLoop = `
data { int N; int D; matrix[N, D] X; vector[N] y; }
parameters { real alpha; vector[D] beta; real<lower=0> sigma; }
model {
  alpha ~ normal(0, 10);
  for (d in 1:D) beta[d] ~ normal(0, 10);
  sigma ~ normal(0, 5);
  for (n in 1:N) {
    real mu = alpha;
    for (d in 1:D) mu += X[n, d] * beta[d];
    y[n] ~ normal(mu, sigma);
  }
}`

const eightSchools = `
data { int<lower=0> J; array[J] real y; array[J] real<lower=0> sigma; }
parameters { real mu; real<lower=0> tau; vector[J] theta_tilde; }
transformed parameters { vector[J] theta = mu + tau * theta_tilde; }
model {
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  theta_tilde ~ normal(0, 1);
  y ~ normal(theta, sigma);
}`

// regressionData returns N = 1000, D = 10 synthetic data as JSON.
func regressionData() string {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, d = 1000, 10
	var b strings.Builder
	fmt.Fprintf(&b, `{"N": %d, "D": %d, "X": [`, n, d)
	ys := make([]float64, n)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("[")
		mu := 1.0
		for j := 0; j < d; j++ {
			x := rng.NormFloat64()
			mu += float64(j%3-1) * x
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%.17g", x)
		}
		b.WriteString("]")
		ys[i] = mu + 0.5*rng.NormFloat64()
	}
	b.WriteString(`], "y": [`)
	for i, y := range ys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%.17g", y)
	}
	b.WriteString("]}")
	return b.String()
}

func benchGradient(b *testing.B, src, js string) {
	m, errs := ir.CheckSource("bench.shm", src)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	vals, err := data.ReadJSON("bench.json", strings.NewReader(js))
	if err != nil {
		b.Fatal(err)
	}
	set := &data.Set{}
	if err := set.AddFile(vals); err != nil {
		b.Fatal(err)
	}
	bm, err := Bind(m, set, Options{Impls: Builtins()})
	if err != nil {
		b.Fatal(err)
	}
	d, err := bm.NewDensity()
	if err != nil {
		b.Fatal(err)
	}
	theta := make([]float64, d.Dim())
	for i := range theta {
		theta[i] = 0.1 * float64(i%5)
	}
	grad := make([]float64, len(theta))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.LogDensityGrad(theta, grad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGradientRegressionVectorized(b *testing.B) {
	benchGradient(b, regressionVectorized, regressionData())
}

func BenchmarkGradientRegressionScalarLoop(b *testing.B) {
	benchGradient(b, regressionLoop, regressionData())
}

func BenchmarkGradientEightSchools(b *testing.B) {
	benchGradient(b, eightSchools, `{"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}`)
}

// TestBenchmarkModelsAgree checks that the two regression programs define
// the same log density and gradient, so that the benchmarks compare like
// with like.
func TestBenchmarkModelsAgree(t *testing.T) {
	js := regressionData()
	var lps [2]float64
	var grads [2][]float64
	for k, src := range []string{regressionVectorized, regressionLoop} {
		m, errs := ir.CheckSource("r.shm", src)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		vals, err := data.ReadJSON("r.json", strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		set := &data.Set{}
		if err := set.AddFile(vals); err != nil {
			t.Fatal(err)
		}
		bm, err := Bind(m, set, Options{Impls: Builtins()})
		if err != nil {
			t.Fatal(err)
		}
		d, err := bm.NewDensity()
		if err != nil {
			t.Fatal(err)
		}
		theta := make([]float64, d.Dim())
		for i := range theta {
			theta[i] = 0.1 * float64(i%5)
		}
		grads[k] = make([]float64, len(theta))
		if lps[k], err = d.LogDensityGrad(theta, grads[k]); err != nil {
			t.Fatal(err)
		}
	}
	if d := lps[0] - lps[1]; d > 1e-8 || d < -1e-8 {
		t.Errorf("log densities differ: %g and %g", lps[0], lps[1])
	}
	for i := range grads[0] {
		if d := grads[0][i] - grads[1][i]; d > 1e-8 || d < -1e-8 {
			t.Errorf("gradient %d differs: %g and %g", i, grads[0][i], grads[1][i])
		}
	}
}
