package runtime

import (
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/sysmem"
)

// TestLiftedLoopsBounded: a loop whose lifted or hoisted form would need
// more than the evaluation's memory (Options.MaxValues) runs as written,
// which stops with the statement's position once its values fill that
// memory (the lifted form's index buffers were allocated unchecked: a
// fatal out-of-memory under ulimit -v), and the same loop within the
// bound is still lifted or hoisted.
func TestLiftedLoopsBounded(t *testing.T) {
	const maxValues = 1 << 17
	for _, c := range []struct {
		name, model string
		lifted      bool // lifted rather than hoisted
	}{
		{"hoisted", "data {\n  int N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  real s = 0;\n  for (i in 1:N) s += sqrt(i) * mu;\n  mu ~ normal(0, 1);\n}\n", false},
		{"lifted", "data {\n  int N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  for (i in 1:N) target += normal_lpdf(mu | i, 1);\n}\n", true},
	} {
		for _, n := range []int{maxValues / 16, 4 * maxValues} {
			d := newDensity(t, "m.shm", c.model, setFromJSON(t, `{"N": `+itoa(n)+`}`), Options{MaxValues: maxValues})
			_, err := d.LogDensityGrad([]float64{0.1}, make([]float64, 1))
			used := d.ev.hoisted
			if c.lifted {
				used = d.ev.lifted
			}
			switch {
			case n < maxValues && (err != nil || used == 0):
				t.Errorf("%s, N = %d: error %v, lifted or hoisted %d times; want both", c.name, n, err, used)
			case n > maxValues && (err == nil || !strings.Contains(err.Error(), "m.shm:") || !strings.Contains(err.Error(), "one evaluation may hold") || used != 0):
				t.Errorf("%s, N = %d: error %v, lifted or hoisted %d times; want the loop run as written and stopped at its statement", c.name, n, err, used)
			}
		}
	}
}

// TestLiftFitsIterations: loops beyond maxLiftedIterations are never
// lifted or hoisted, whatever the memory, so that Ctrl-C stops their
// evaluation within the second (their vector operations do not check
// the context); loops up to it are, when the memory holds them.
func TestLiftFitsIterations(t *testing.T) {
	d := newDensity(t, "m.shm", "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n", nil, Options{MaxValues: 1 << 40})
	for _, c := range []struct {
		n, k int
		want bool
	}{
		{maxLiftedIterations, 1, true},
		{maxLiftedIterations + 1, 1, false},
		{1 << 30, 0, false},
	} {
		if got := d.ev.liftFits(c.n, c.k); got != c.want {
			t.Errorf("liftFits(%d, %d) = %v, want %v", c.n, c.k, got, c.want)
		}
	}
}

// TestMemoryShareMessage: with evaluations sharing the memory
// (Options.MemoryShare, chains running at once), each holds its share of
// what one alone may, and a refusal says so.
func TestMemoryShareMessage(t *testing.T) {
	limit := sysmem.MaxElements()
	if limit <= 0 {
		t.Skip("the memory is unknown")
	}
	n := limit/tapeCopies/2 + 1 // within one evaluation's bound, beyond half of it
	d := newDensity(t, "m.shm", "data {\n  int N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  vector[N] v;\n  mu ~ normal(0, 1);\n}\n",
		setFromJSON(t, `{"N": `+itoa(int(n))+`}`), Options{MemoryShare: 2})
	_, err := d.LogDensityGrad([]float64{0.1}, make([]float64, 1))
	if err == nil || !strings.Contains(err.Error(), "m.shm:8:3: vector[N] v needs") || !strings.Contains(err.Error(), ", shared by 2 evaluations at once)") {
		t.Errorf("error %v", err)
	}
}
