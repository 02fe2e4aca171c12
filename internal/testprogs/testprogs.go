// Package testprogs reads the repository's .shm programs for tests: the
// valid and invalid test programs of package ir and the shipped models.
package testprogs

import (
	"os"
	"path/filepath"
	"testing"
)

// All returns the programs by path, read from the repository root root
// (relative to the calling test's package, such as ".."). It fails t when
// there are fewer than 100: the repository was not found.
func All(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pattern := range []string{"ir/testdata/valid/*.shm", "ir/testdata/invalid/*.shm", "models/*.shm", "models/*/*.shm"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			out[file] = string(b)
		}
	}
	if len(out) < 100 {
		t.Fatalf("only %d programs under %s: the repository's programs were not found", len(out), root)
	}
	return out
}
