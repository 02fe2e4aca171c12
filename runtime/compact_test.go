package runtime

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmlang/shm/internal/testprogs"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

// TestCompactedLoopsSameValues: compacting the tape at nearly every
// iteration of the loops of transformed data and generated quantities
// changes no value: every test program (and this package's test models)
// gives the same log density, gradient and output row, bit for bit, as
// without compaction.
func TestCompactedLoopsSameValues(t *testing.T) {
	srcs := testSources(t)
	progs := testprogs.All(t, "..")
	for _, name := range slices.Sorted(maps.Keys(progs)) {
		srcs = append(srcs, progs[name])
	}
	compared, compactions := 0, 0
	for i, src := range srcs {
		m, errs := ir.CheckSource("c.shm", src)
		if len(errs) > 0 {
			continue
		}
		set, ok := fuzzData(m, uint64(i))
		if !ok {
			continue
		}
		var rows [2][]float64
		var lps [2]float64
		var errsAt [2]error
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for k, every := range []int{1, -1} {
			bm, err := Bind(m, set, Options{Impls: Builtins(), Seed: 1, Context: ctx, MaxValues: 1 << 22, compactEvery: every})
			if err != nil {
				errsAt[k] = err
				continue
			}
			d, err := bm.NewDensity()
			if err != nil {
				errsAt[k] = err
				continue
			}
			theta := make([]float64, d.Dim())
			for j := range theta {
				theta[j] = 0.3 - 0.1*float64(j)
			}
			grad := make([]float64, len(theta))
			if lps[k], err = d.LogDensityGrad(theta, grad); err != nil {
				errsAt[k] = err
				continue
			}
			rows[k], errsAt[k] = d.Draw(nil, theta, rand.New(rand.NewPCG(1, 2)))
			compactions += d.ev.compacted
		}
		timedOut := ctx.Err() != nil
		cancel()
		// Too slow to compare, or beyond the memory an evaluation may
		// hold without compaction (with it, the loop fits).
		if timedOut || errsAt[1] != nil && strings.Contains(errsAt[1].Error(), "one evaluation may hold") {
			continue
		}
		if (errsAt[0] == nil) != (errsAt[1] == nil) || errsAt[0] != nil && errsAt[0].Error() != errsAt[1].Error() {
			t.Errorf("program %d: errors compacted %v, not %v", i, errsAt[0], errsAt[1])
			continue
		}
		if errsAt[0] != nil {
			continue
		}
		compared++
		if !sameBits(lps[0], lps[1]) {
			t.Errorf("program %d: log density compacted %.17g, not %.17g", i, lps[0], lps[1])
		}
		for j := range rows[0] {
			if !sameBits(rows[0][j], rows[1][j]) {
				t.Errorf("program %d: output column %d compacted %.17g, not %.17g", i, j, rows[0][j], rows[1][j])
			}
		}
	}
	if compared < 20 || compactions == 0 {
		t.Errorf("only %d programs compared, %d compactions in their generated quantities", compared, compactions)
	}
	t.Logf("%d programs compared, %d compactions in their generated quantities", compared, compactions)
}

// TestCompactedLoopMemory: a loop of transformed data of millions of
// iterations (scalars, elements of a vector and of an array, a local)
// leaves the tape at the size of its variables, not of its history, with
// the values of the loop as written.
func TestCompactedLoopMemory(t *testing.T) {
	src := `transformed data {
  real s = 0;
  vector[3] v = [1, 2, 3]';
  array[4] real a;
  for (k in 1:4) a[k] = 0;
  for (i in 1:3000000) {
    real u = i * 0.5;
    s += u;
    v[1 + i % 3] += 1e-7 * i;
    a[1 + i % 4] = a[1 + i % 4] + 1;
  }
}
parameters { real mu; }
model { mu ~ normal(s * 1e-12, 1); }
generated quantities {
  real g = 0;
  for (i in 1:3000000) { g += i; }
  real check_s = s;
  array[4] real check_a = a;
}
`
	m, errs := ir.CheckSource("c.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var sizes [2]int
	var rows [2][]float64
	for k, every := range []int{0, -1} {
		bm, err := Bind(m, &data.Set{}, Options{Impls: Builtins(), Seed: 1, compactEvery: every})
		if err != nil {
			t.Fatal(err)
		}
		sizes[k] = bm.tape.Size()
		d, err := bm.NewDensity()
		if err != nil {
			t.Fatal(err)
		}
		if rows[k], err = d.Draw(nil, []float64{0.1}, rand.New(rand.NewPCG(1, 2))); err != nil {
			t.Fatal(err)
		}
	}
	if sizes[0] > 2*compactMinValues || sizes[1] < 3000000 {
		t.Errorf("the tape after transformed data holds %d values compacted, %d not", sizes[0], sizes[1])
	}
	// mu, g, check_s, check_a: s = 0.5·n(n+1)/2, g = n(n+1)/2, a[k] = n/4.
	const n = 3000000.0
	want := []float64{0.1, n * (n + 1) / 2, 0.5 * n * (n + 1) / 2, n / 4, n / 4, n / 4, n / 4}
	for j, w := range want {
		if rows[0][j] != w || rows[1][j] != w {
			t.Errorf("column %d: %v compacted, %v not, want %v", j, rows[0][j], rows[1][j], w)
		}
	}
}

// TestInterruptedWhileCopying: a run stopped while a tape's storage grows
// outside any statement (copying a model's data of millions of values
// onto a new density's tape: the second matrix grows it past the first)
// ends with the interruption as an error, not
// a panic.
func TestInterruptedWhileCopying(t *testing.T) {
	if testing.Short() {
		t.Skip("binds 6 million values")
	}
	m, errs := ir.CheckSource("c.shm", "data {\n  int N;\n  matrix[N, 2] x;\n  matrix[N, 2] z;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const n = 3000000
	set := &data.Set{}
	set.AddSet(&data.Value{Name: "N", Data: []float64{n}, IsInt: true})
	set.AddSet(&data.Value{Name: "x", Dims: []int{n, 2}, Data: make([]float64, 2*n)})
	set.AddSet(&data.Value{Name: "z", Dims: []int{n, 2}, Data: make([]float64, 2*n)})
	ctx, cancel := context.WithCancel(context.Background())
	bm, err := Bind(m, set, Options{Impls: Builtins(), Seed: 1, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = bm.NewDensity()
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("NewDensity after the stop: %v, want the interruption", err)
	}
}
