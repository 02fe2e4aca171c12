// Package shared locates the project's shared reference material (the
// folder ../shared beside the repository root: the paper, the Sinkhorn
// reference vectors, Experiment A's data, posteriordb) for tests and
// benchmarks.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// Path returns the path of ../shared/parts... beside the repository root
// (the folder holding go.mod), failing t if it does not exist: tests that
// need reference data must not pass silently without it.
func Path(t testing.TB, parts ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("shared: no go.mod above the test's directory")
		}
		dir = parent
	}
	p := filepath.Join(append([]string{dir, "..", "shared"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared: %v (the shared folder must sit beside the repository)", err)
	}
	return p
}
