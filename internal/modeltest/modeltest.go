// Package modeltest checks and binds shipped models for tests and
// benchmarks of the example models.
package modeltest

import (
	"os"
	"testing"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
)

// Bind checks a model and binds it to data files and name=value settings,
// failing t on any error. The model is the source text src, or the file
// at path when src is empty; path names it in error messages. The run
// seed is 1.
func Bind(t testing.TB, path, src string, files []string, sets ...string) *runtime.Model {
	t.Helper()
	if src == "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src = string(b)
	}
	m, errs := ir.CheckSource(path, src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set, err := data.Load(files, sets)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := runtime.Bind(m, set, runtime.Options{Impls: runtime.Builtins(), Seed: 1, DataFiles: files})
	if err != nil {
		t.Fatal(err)
	}
	return bm
}
