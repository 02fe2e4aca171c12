package mathlib

import (
	"flag"
	"testing"
)

// TestEverySignature checks that the tests above (which run first: Go runs
// a package's tests in the order of their files' names and their source
// order) called every signature of every math function except target at
// least once. It can only judge a full run, not one filtered by -run.
func TestEverySignature(t *testing.T) {
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		t.Skip("coverage of signatures needs the whole suite (run without -run)")
	}
	for _, s := range uncovered() {
		t.Errorf("signature %s has no test", s)
	}
}
