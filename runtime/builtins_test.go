package runtime

import (
	"testing"

	"github.com/shmlang/shm/stdlib"
)

// TestEveryBuiltinImplemented checks that every function of the
// signature table has an implementation, except target() and crn(...),
// which the interpreter evaluates itself.
func TestEveryBuiltinImplemented(t *testing.T) {
	impls := Builtins()
	for _, name := range stdlib.Builtins().Names() {
		if name == "target" || name == "crn" {
			continue
		}
		if impls[name] == nil {
			t.Errorf("%s has a signature but no implementation", name)
		}
	}
}
