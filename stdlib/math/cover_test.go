package mathlib

import (
	"fmt"
	"testing"

	"github.com/shmlang/shm/stdlib"
)

// covered records the signatures exercised by the table-driven tests, as
// "name/index". TestEverySignature runs last (Go runs tests in source
// order, files sorted by name: zz_cover_test.go).
var covered = map[string]bool{}

func TestEveryMathFuncImplemented(t *testing.T) {
	tab := stdlib.Builtins()
	for _, name := range tab.Names() {
		f := tab.Lookup(name)
		if f.Kind != stdlib.MathFunc || name == "target" {
			continue
		}
		if impls[name] == nil {
			t.Errorf("%s: no implementation", name)
		}
	}
	for name := range impls {
		if f := tab.Lookup(name); f == nil || f.Kind != stdlib.MathFunc {
			t.Errorf("%s: implemented but not a math function of the table", name)
		}
	}
}

func uncovered() []string {
	tab := stdlib.Builtins()
	var out []string
	for _, name := range tab.Names() {
		f := tab.Lookup(name)
		if f.Kind != stdlib.MathFunc || name == "target" {
			continue
		}
		for i, s := range f.Sigs {
			if !covered[fmt.Sprintf("%s/%d", name, i)] {
				out = append(out, fmt.Sprintf("%s/%d (%d params)", name, i, len(s.Params)))
			}
		}
	}
	return out
}
