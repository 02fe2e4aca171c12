package dist

import (
	"testing"

	"github.com/shmlang/shm/stdlib"
)

// TestEveryDistributionImplemented enumerates the signature table: every
// density, cdf and RNG of every family has an implementation, and nothing
// else is registered.
func TestEveryDistributionImplemented(t *testing.T) {
	m := registered()
	table := stdlib.Builtins()
	want := 0
	for _, name := range table.Names() {
		f := table.Lookup(name)
		if f.Kind != stdlib.Density && f.Kind != stdlib.RNG {
			continue
		}
		want++
		if m[name] == nil {
			t.Errorf("%s (%s of %s) has no implementation", name, f.Suffix, f.Family.Name)
		}
	}
	if len(m) != want {
		t.Errorf("%d implementations registered, the table has %d densities and RNGs", len(m), want)
	}
	// Every family has its density pair and RNG.
	for _, name := range table.FamilyNames() {
		fam := table.Family(name)
		lp, lup := densityNames(fam.Discrete)
		for _, s := range []string{lp, lup, "_rng"} {
			if m[name+s] == nil {
				t.Errorf("%s%s missing", name, s)
			}
		}
	}
	if want < 28*3 {
		t.Errorf("only %d densities and RNGs in the table", want)
	}
}
