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

// TestReparamsMatchTable checks that the families the signature table
// marks reparameterizable (which the checker lets draw from parameters
// inside crn) are exactly those with a reparameterized draw here: the
// univariate ones in reparams, and the two multivariate normals.
func TestReparamsMatchTable(t *testing.T) {
	table := stdlib.Builtins()
	uni := map[string]bool{}
	for _, f := range append(continuousFamilies(), discreteFamilies()...) {
		uni[f.name] = true
		fam := table.Family(f.name)
		if fam == nil {
			t.Errorf("%s: not in the signature table", f.name)
			continue
		}
		if fam.Reparam != (reparams[f.name] != nil) {
			t.Errorf("%s: marked reparameterizable %v in the table, reparameterized draw here %v", f.name, fam.Reparam, reparams[f.name] != nil)
		}
	}
	for name := range reparams {
		if !uni[name] {
			t.Errorf("reparams has %s, not a univariate family", name)
		}
	}
	for _, name := range []string{"multi_normal", "multi_normal_cholesky"} {
		if fam := table.Family(name); fam == nil || !fam.Reparam {
			t.Errorf("%s: not marked reparameterizable, but multiNormalRng draws it so", name)
		}
	}
}
