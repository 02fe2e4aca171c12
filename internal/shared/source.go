package shared

import (
	"os"
	"strings"
	"testing"
)

// EditedSource returns the text of the model file at path with each old
// string replaced by its new one (pairs old1, new1, old2, new2, ...), for
// tests that run a shipped model on a reduced configuration. It fails t
// when an old string is absent, so that a change to the model cannot
// silently turn a reduced run into a full one.
func EditedSource(t testing.TB, path string, pairs ...string) string {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatalf("EditedSource: %d strings, want old/new pairs", len(pairs))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			t.Fatalf("%s does not contain %q", path, pairs[i])
		}
		src = strings.ReplaceAll(src, pairs[i], pairs[i+1])
	}
	return src
}
