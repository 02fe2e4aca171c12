package runtime

import (
	"math"
	"strings"
	"testing"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

// runFunctions runs a transformed data block with the given functions
// block and returns what it printed.
func runFunctions(t *testing.T, functions, body string) (string, error) {
	t.Helper()
	src := "functions {\n" + functions + "\n}\ntransformed data {\n" + body + "\n}\nmodel { }\n"
	m, errs := ir.CheckSource("fn.shm", src)
	if len(errs) > 0 {
		t.Fatalf("%v\nin\n%s", errs, src)
	}
	var out strings.Builder
	_, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), Print: &out})
	return out.String(), err
}

func TestUserFunctions(t *testing.T) {
	tests := []struct{ name, functions, body, want string }{
		{"recursion", `int fib(int n) { if (n <= 2) return 1; return fib(n - 1) + fib(n - 2); }`,
			`print(fib(1), " ", fib(10), " ", fib(20));`, "1 55 6765"},
		{"mutual recursion through a forward declaration",
			`int is_even(int n);
			 int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }
			 int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }`,
			`print(is_even(10), is_odd(10), is_even(7), is_odd(7));`, "1001"},
		{"each call has its own frame",
			// The locals of the outer call survive the inner calls.
			`real f(int n) { real a = n; if (n == 0) return 0; real b = f(n - 1); return a + b; }`,
			`print(f(4));`, "10"},
		{"overloads by argument type",
			`real g(real x) { return 1; } real g(int x) { return 2; } real g(vector x) { return 3; }
			 real h(real x, real y) { return 10; } real h(int x, real y) { return 20; }`,
			`print(g(1.5), g(1), g([1, 2]'), h(1.0, 1), h(1, 1));`, "1231020"},
		{"int arguments and results promote to real",
			`real half(real x) { return x / 2; } real one() { return 1; } array[] real arr(array[] real x) { return x; }`,
			`print(half(3), " ", one() / 2, " ", arr({1, 2}));`, "1.5 0.5 [1, 2]"},
		{"return from inside loops",
			`int first_above(array[] int xs, int k) {
			   for (i in 1:size(xs)) { int j = 0; while (1) { j += 1; if (xs[i] > k) return i; if (j > 2) break; } }
			   return 0;
			 }`,
			`print(first_above({1, 5, 9}, 4), first_above({1, 2}, 4));`, "20"},
		{"foreach returns",
			`real first_negative(vector v) { for (x in v) if (x < 0) return x; return 0; }`,
			`print(first_negative([3, -2, -5]'));`, "-2"},
		{"void functions return early",
			`void show(int n) { if (n > 1) { print("big"); return; } print("small"); }`,
			`show(1); show(2);`, "small\nbig"},
		{"containers built in the body",
			`vector cumsum_v(vector v) { vector[rows(v)] out; real s = 0; for (i in 1:rows(v)) { s += v[i]; out[i] = s; } return out; }
			 matrix outer(vector a) { return a * a'; }`,
			`vector[3] c = cumsum_v([1, 2, 3]'); print(c, outer([1, 2]'));`, "[1, 3, 6][[1, 2], [2, 4]]"},
		{"nested calls in arguments",
			`real add(real a, real b) { return a + b; } real sq(real a) { return a * a; }`,
			`print(add(sq(add(1, 2)), sq(add(sq(2), 1))));`, "34"},
		{"calls in a loop reuse their frames",
			`real inc(real s, int i) { real t = s + i; return t; }`,
			`real s = 0; for (i in 1:1000) s = inc(s, i); print(s);`, "500500"},
		{"arguments are not copied back",
			`vector twice(vector v) { vector[rows(v)] w = v; w[1] = 100; return 2 * w; }`,
			`vector[2] v = [1, 2]'; vector[2] w = twice(v); print(v, w);`, "[1, 2][200, 4]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runFunctions(t, tt.functions, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSuffix(got, "\n") != tt.want {
				t.Errorf("printed %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUserFunctionErrors(t *testing.T) {
	tests := []struct{ name, functions, body, want string }{
		{"runaway recursion", `int down(int n) { return down(n + 1); }`, `print(down(0));`,
			"fn.shm:2:26: down: calls nested more than 10000 deep"},
		{"reject inside a function", `real pos(real x) { if (x < 0) reject("negative: ", x); return x; }`, `print(pos(-1));`,
			"fn.shm:2:31: reject: negative: -1"},
		{"index out of range inside a function", `real at(vector v, int i) { return v[i]; }`, `print(at([1, 2]', 3));`,
			"fn.shm:2:37"},
		{"a loop that ends without returning", `real f(int n) { while (n > 0) return 1; reject("never"); }`, `print(f(0));`,
			"reject: never"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runFunctions(t, tt.functions, tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestUserFunctionGradient compares the log density and gradient of a
// model written with user-defined functions (a density used with ~ and
// with |, an _lp function, an int-to-real promotion, a container built
// in the body, and an _rng function inside crn) with the same model
// written inline: the two record the same operations.
func TestUserFunctionGradient(t *testing.T) {
	const data = `{"N": 4, "y": [1.2, -0.3, 2.5, 0.7]}`
	const withFunctions = `
functions {
  real centered_lpdf(vector y, real mu, real sigma) {
    vector[rows(y)] z;
    for (i in 1:rows(y)) z[i] = (y[i] - mu) / sigma;
    return -0.5 * dot_self(z) - rows(y) * log(sigma);
  }
  void priors_lp(real mu, real log_sigma) {
    mu ~ normal(0, 5);
    target += log_sigma;
  }
  real sim_rng(real mu) {
    real z = normal_rng(mu, 1);
    return z * z;
  }
}
data { int N; vector[N] y; }
parameters { real mu; real log_sigma; }
model {
  priors_lp(mu, log_sigma);
  y ~ centered(mu, exp(log_sigma));
  target += 0.1 * centered_lpdf(y | 1, exp(log_sigma));
  target += -0.01 * crn(6, sim_rng(mu));
}`
	const inline = `
data { int N; vector[N] y; }
parameters { real mu; real log_sigma; }
model {
  mu ~ normal(0, 5);
  target += log_sigma;
  {
    vector[N] z;
    for (i in 1:N) z[i] = (y[i] - mu) / exp(log_sigma);
    target += -0.5 * dot_self(z) - N * log(exp(log_sigma));
  }
  {
    vector[N] z;
    for (i in 1:N) z[i] = (y[i] - 1) / exp(log_sigma);
    target += 0.1 * (-0.5 * dot_self(z) - N * log(exp(log_sigma)));
  }
  target += -0.01 * crn(6, square(normal_rng(mu, 1)));
}`
	eval := func(src string, theta []float64) (float64, []float64) {
		d := newDensity(t, "t.shm", src, setFromJSON(t, data), Options{})
		grad := make([]float64, len(theta))
		lp, err := d.LogDensityGrad(theta, grad)
		if err != nil {
			t.Fatal(err)
		}
		return lp, grad
	}
	for _, theta := range [][]float64{{0.4, 0.3}, {-1.2, -0.5}} {
		lp, grad := eval(withFunctions, theta)
		wantLP, wantGrad := eval(inline, theta)
		if math.Abs(lp-wantLP) > 1e-12*math.Abs(wantLP) {
			t.Errorf("theta %v: log density %.17g, inline %.17g", theta, lp, wantLP)
		}
		for i := range grad {
			if math.Abs(grad[i]-wantGrad[i]) > 1e-12*(1+math.Abs(wantGrad[i])) {
				t.Errorf("theta %v: grad[%d] = %.17g, inline %.17g", theta, i, grad[i], wantGrad[i])
			}
		}
	}
}
