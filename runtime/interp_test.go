package runtime

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

// runTD checks and binds a program and returns what its transformed data
// printed.
func runTD(t *testing.T, body string) (string, error) {
	t.Helper()
	src := "transformed data {\n" + body + "\n}\nmodel { }\n"
	m, errs := ir.CheckSource("td.shm", src)
	if len(errs) > 0 {
		t.Fatalf("%v\nin\n%s", errs, src)
	}
	var out strings.Builder
	_, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), Print: &out})
	return out.String(), err
}

func TestInterpreter(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"int arithmetic", `print(7 / 2, " ", 7 % 3, " ", -7 %/% 2, " ", 2 * 3 + 1);`, "3 1 -3 7"},
		{"real arithmetic", `print(7.0 / 2, " ", 2 ^ 3, " ", -2 ^ 2);`, "3.5 8 -4"},
		{"logic", `print(1 && 0, 1 || 0, !0, 2 < 3, 2 >= 3, 1 == 1.0, 1 != 1);`, "0111010"},
		{"short circuit", `array[1] int a = {1}; print(0 && a[5] == 1, 1 || a[5] == 1);`, "01"},
		{"ternary", `print(1 ? 2 : 3, 0 ? 2.5 : 3);`, "23"},
		{"vector literal and transpose", `vector[3] v = [1, 2, 3]'; print(v, " ", v');`, "[1, 2, 3] [1, 2, 3]"},
		{"matrix literal and product", `matrix[2, 2] M = [[1, 2], [3, 4]]; vector[2] x = [1, 1]'; print(M * x, " ", x' * M, " ", x' * x);`, "[3, 7] [4, 6] 2"},
		{"elementwise", `vector[2] a = [1, 2]'; vector[2] b = [3, 4]'; print(a .* b, a ./ b, a + 1, 2 * a, a - b);`, "[3, 8][0.3333333333333333, 0.5][2, 3][2, 4][-2, -2]"},
		{"indexing", `matrix[2, 3] M = [[1, 2, 3], [4, 5, 6]]; print(M[2], M[1, 3], M[:, 2], M[2, 2:3], M[{2, 1}, 1]);`, "[4, 5, 6]3[2, 5][5, 6][4, 1]"},
		{"slices", `vector[5] v = [1, 2, 3, 4, 5]'; print(v[2:4], v[:2], v[4:], v[{5, 1, 5}]);`, "[2, 3, 4][1, 2][4, 5][5, 1, 5]"},
		{"loops", `int s = 0; for (i in 1:10) { if (i == 3) continue; if (i > 5) break; s += i; } print(s);`, "12"},
		{"while", `int n = 0; while (n < 5) n += 2; print(n);`, "6"},
		{"foreach", `real s = 0; vector[3] v = [1, 2, 3]'; for (x in v) s += x; array[2] int a = {10, 20}; for (k in a) s += k; print(s);`, "36"},
		{"array of vectors", `array[2] vector[2] av; av[1] = [1, 2]'; av[2] = [3, 4]'; av[2, 1] = 9; print(av, av[:, 2]);`, "[[1, 2], [9, 4]][2, 4]"},
		{"matrix assignment", `matrix[2, 2] M = [[0, 0], [0, 0]]; M[1] = [1, 2]; M[:, 2] = [7, 8]'; M[2, 1] = 5; print(M);`, "[[1, 7], [5, 8]]"},
		{"compound", `vector[2] v = [1, 2]'; v *= 3; v[1] += 1; real r = 2; r /= 4; int k = 7; k -= 2; print(v, r, k);`, "[4, 6]0.55"},
		{"compound on assigned elements", `vector[4] v; for (i in 1:4) { v[i] = i; v[i] += 10; v[i] *= v[i] - 10; } array[2] real a; a[1] = 1; a[1] -= 3; a[2] = a[1]; print(v, a);`, "[11, 24, 39, 56][-2, -2]"},
		{"2d arrays", `array[2, 3] real a; for (i in 1:2) for (j in 1:3) a[i, j] = 10 * i + j; print(a[2], a[1, 3], a[:, 2]);`, "[21, 22, 23]13[12, 22]"},
		{"int arrays", `array[3] int a = {3, 1, 2}; a[2] = 7; print(a, a[{3, 1}]);`, "[3, 7, 2][2, 3]"},
		{"int arrays do not alias", `array[3] int a = {1, 2, 3}; array[3] int b = a; b[1] = 9; a[3] = 0; array[2, 2] int m; for (i in 1:2) for (j in 1:2) m[i, j] = 10 * i + j; m[2] = {7, 8}; print(a, b, m);`, "[1, 2, 0][9, 2, 3][11, 12, 7, 8]"},
		{"division by matrices", `matrix[2, 2] M = [[2, 0], [0, 4]]; vector[2] b = [2, 4]'; print(M \ b, b' / M);`, "[1, 1][1, 1]"},
		{"array arithmetic through loops", `array[3] real a = {1, 2, 3}; real s = 0; for (i in 1:3) s += a[i] ^ 2; print(s);`, "14"},
		{"nested blocks", `real x = 1; { real y = x + 1; print(y); }`, "2"},
		{"vectorized draws stored as arrays, as in Stan", `array[3] real a = normal_rng([10, 20, 30]', 0.001); array[2] real b; b = uniform_rng([0, 5]', [1e-9, 5 + 1e-9]); print(size(a), " ", round(a[2]), " ", round(b[2]));`, "3 20 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runTD(t, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want+"\n" && strings.ReplaceAll(got, "\n", "") != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestElementAssignment(t *testing.T) {
	got, err := runTD(t, `vector[4] v; for (i in 1:4) v[i] = i * i; print(v); v[2:3] = [0, 0]'; print(v);`)
	if err != nil {
		t.Fatal(err)
	}
	if got != "[1, 4, 9, 16]\n[1, 0, 0, 16]\n" {
		t.Errorf("got %q", got)
	}
}

func TestRuntimeErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"index out of range", `vector[3] v = [1, 2, 3]'; print(v[4]);`, "td.shm:2:35: index 4 out of range: the size is 3"},
		{"size mismatch", `int n = 2; vector[n] w; vector[3] v = w;`, "size mismatch assigning to v: declared [3], value has [2]"},
		{"division by zero", `int a = 0; int b = 1 / a;`, "integer division by zero"},
		// Ints are 32-bit, as in Stan: every way of computing one checks.
		{"int overflow +", `int a = 2147483647; int b = a + 1;`, "td.shm:2:31: integer overflow: 2147483647 + 1 is 2147483648, outside the range of int (32-bit: -2147483648 to 2147483647)"},
		{"int overflow -", `int a = -2147483647; int b = a - 2;`, "integer overflow: -2147483647 - 2 is -2147483649"},
		{"int overflow *", `int a = 46341; int b = a * a;`, "integer overflow: 46341 * 46341 is 2147488281"},
		{"int overflow /", `int a = -2147483647 - 1; int b = a / -1;`, "integer overflow: -2147483648 / -1 is 2147483648"},
		{"int overflow %/%", `int a = -2147483647 - 1; int b = a %/% -1;`, "integer overflow: -2147483648 %/% -1 is 2147483648"},
		{"int overflow, unary minus", `int a = -2147483647 - 1; int b = -a;`, "integer overflow: -(-2147483648)"},
		{"int overflow +=", `int a = 2147483647; a += 1;`, "td.shm:2:21: integer overflow: 2147483647 + 1"},
		{"int overflow *=", `int a = 5; a *= 1000000000;`, "integer overflow: 5 * 1000000000 is 5000000000"},
		{"int overflow in a loop", `int a = 1; for (i in 1:40) a *= 2;`, "integer overflow: 1073741824 * 2"},
		{"int overflow, constant", `int b = 2147483647 + 1;`, "td.shm:2:20: integer overflow"},
		{"int overflow, sum", `int a = 2147483647; int b = sum({a, 1});`, "sum: integer overflow: the result is 2147483648"},
		{"int overflow, prod", `int b = prod({65536, 65536});`, "prod: integer overflow: the result is 4294967296"},
		{"int overflow, cumulative_sum", `int a = 2147483647; array[2] int b = cumulative_sum({a, a});`, "cumulative_sum: integer overflow"},
		{"int overflow, abs", `int a = -2147483647 - 1; int b = abs(a);`, "abs: integer overflow: the result is 2147483648"},
		{"int overflow, to_int", `int b = to_int(3e9);`, "to_int: 3e+09 is out of the range of int"},
		{"int at the limits", `int a = 2147483647; int b = -a - 1; int c = a + b; int d = b %/% 1; int e = sum({a, -1, 1}); print(c, d, e);`, ""},
		{"reject", `reject("bad value ", 3);`, "td.shm:2:1: reject: bad value 3"},
		{"unset", `real x; real y = x + 1; array[2] real a; print(a);`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runTD(t, tt.body)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	_, err := runTD(t, `reject("x");`)
	var rej *RejectError
	if !errors.As(err, &rej) {
		t.Errorf("reject gives %T, want *RejectError", err)
	}
}

// TestSizeLimits checks that sizes that cannot fit are refused with the
// declaration's position before anything is allocated, and that crn's K is
// bounded.
func TestSizeLimits(t *testing.T) {
	if sysmem.MaxElements() == 0 {
		t.Skip("the memory of this system is unknown")
	}
	for _, tt := range []struct{ body, want string }{
		{"vector[2000000000] v;", "td.shm:2:1: vector[2000000000] v needs 2e+09 elements"},
		{"matrix[1000000, 1000000] M;", "td.shm:2:1: matrix[1000000, 1000000] M needs 1e+12 elements"},
		{"array[1000000000, 1000000000, 1000000000] real a;", "needs 1e+27 elements"},
		{"real x = crn(1000000000, std_normal_rng());", "the K of crn is 1000000000, more than 1048576 replicates"},
	} {
		_, err := runTD(t, tt.body)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.body, err, tt.want)
		}
	}
}

// TestLoopMemoryLimit checks that a loop whose intermediate values grow
// without bound stops with its position once the tape holds more than
// Options.MaxValues values (an eighth of the memory the process may use by default), in
// transformed data and in the model block, instead of exhausting memory.
func TestLoopMemoryLimit(t *testing.T) {
	src := `transformed data {
  real s = 0;
  for (i in 1:1000000000) { s += sum(rep_vector(1.0, 1000)); }
}
parameters { real mu; }
model {
  for (i in 1:1000000000) { target += sum(rep_vector(mu, 1000)); }
}
`
	m, errs := ir.CheckSource("loop.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Transformed data's loops compact the tape (compact.go): this one
	// would then run its 10^9 iterations in constant memory. Without
	// compaction, it meets the bound.
	_, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), MaxValues: 1 << 20, compactEvery: -1})
	if err == nil || !strings.Contains(err.Error(), "loop.shm:3:") || !strings.Contains(err.Error(), "more than the 8.0 MiB one evaluation may hold") {
		t.Errorf("transformed data: %v", err)
	}
	// The default bound shared by runs side by side (MemoryShare): a
	// share of 8 MiB.
	if total := sysmem.MaxElements() / tapeCopies; total > 1<<20 {
		share := int(total / (1 << 20))
		_, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), MemoryShare: share, compactEvery: -1})
		if want := sysmem.Bytes(8 * float64(total/int64(share))); err == nil || !strings.Contains(err.Error(), "more than the "+want+" one evaluation may hold") {
			t.Errorf("transformed data, a share of %d runs: %v, want the bound %s", share, err, want)
		}
	}
	// The model block's loop, with transformed data that fits.
	m, errs = ir.CheckSource("loop.shm", strings.Replace(src, "1:1000000000) { s", "1:10) { s", 1))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	bm, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), MaxValues: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.LogDensityGrad([]float64{0.1}, make([]float64, 1)); err == nil || !strings.Contains(err.Error(), "loop.shm:7:") || !strings.Contains(err.Error(), "one evaluation may hold") {
		t.Errorf("model block: %v", err)
	}
}

// TestStatementMemoryLimit: one statement whose values exceed the memory
// an evaluation may hold (an outer product, no loop) stops with its
// position instead of the tape's panic or the machine's out-of-memory
// killer: in transformed data, in the model block, and inside a crn body
// evaluated on other goroutines.
func TestStatementMemoryLimit(t *testing.T) {
	cases := []struct{ name, src, pos string }{
		{"transformed data", `transformed data {
  vector[3000] x = rep_vector(1, 3000);
  real s = sum(x * x');
}
parameters { real mu; }
model { mu ~ normal(0, 1); }
`, "big.shm:3:3"},
		{"model", `transformed data {
  vector[3000] x = rep_vector(1, 3000);
}
parameters { real mu; }
model {
  mu ~ normal(0, 1);
  target += sum((mu * x) * x');
}
`, "big.shm:7:3"},
		{"crn", `parameters { real mu; }
model {
  target += crn(4, sum((mu + std_normal_rng(3000)) * (mu + std_normal_rng(3000))'));
}
`, "big.shm:3:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, errs := ir.CheckSource("big.shm", tc.src)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			bm, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), MaxValues: 1 << 20})
			if err == nil {
				d, derr := bm.NewDensity()
				if derr != nil {
					t.Fatal(derr)
				}
				d.Workers = 2
				_, err = d.LogDensityGrad([]float64{0.1}, make([]float64, 1))
			}
			if err == nil || !strings.Contains(err.Error(), tc.pos) || !strings.Contains(err.Error(), "more than the 8.0 MiB one evaluation may hold") {
				t.Errorf("got %v, want an error at %s", err, tc.pos)
			}
		})
	}
}

// TestHoldTransformedData: held transformed data variables take the given
// values instead of their initializers', later statements see them, and
// TransformedData reads values back.
func TestHoldTransformedData(t *testing.T) {
	src := `data { vector[3] y; }
transformed data {
  real eps = square(resolution(y));
  real twice = 2 * eps;
  array[2] int k = {1, 2};
}
parameters { real mu; }
model { mu ~ normal(0, 1); }
`
	m, errs := ir.CheckSource("hold.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &data.Set{}
	set.AddSet(&data.Value{Name: "y", Dims: []int{3}, Data: []float64{0, 0, 5}}) // resolution 0
	bind := func(hold map[string]*data.Value) (*Model, error) {
		return Bind(m, set, Options{Impls: Builtins(), Hold: hold})
	}
	bm, err := bind(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := bm.TransformedData("eps"); err != nil || v.Data[0] != 0 {
		t.Errorf("eps = %v, %v; want 0", v, err)
	}
	bm, err = bind(map[string]*data.Value{"eps": {Name: "eps", Data: []float64{0.25}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float64{"eps": {0.25}, "twice": {0.5}, "k": {1, 2}} {
		v, err := bm.TransformedData(name)
		if err != nil || !slices.Equal(v.Data, want) {
			t.Errorf("%s = %v, %v; want %v", name, v, err, want)
		}
	}
	for _, bad := range []map[string]*data.Value{
		{"nope": {Name: "nope", Data: []float64{1}}},
		{"k": {Name: "k", Dims: []int{3}, Data: []float64{1, 2, 3}}},
		{"k": {Name: "k", Dims: []int{2}, Data: []float64{1, 2.5}}},
	} {
		if _, err := bind(bad); err == nil {
			t.Errorf("hold %v: no error", bad)
		}
	}
	if _, err := bm.TransformedData("mu"); err == nil {
		t.Error("TransformedData(mu): no error")
	}
}
