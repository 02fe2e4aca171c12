package ir

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmlang/shm/lang"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/invalid")

// TestValidPrograms checks that every program under testdata/valid, and
// every shipped model under models/, parses and checks without error.
func TestValidPrograms(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.shm")
	models, _ := filepath.Glob("../models/*.shm")
	files = append(files, models...)
	if len(files) < 6 {
		t.Fatalf("found only %d valid programs", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, errs := CheckSource(f, string(text))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors:\n%v", errs)
			}
			if m == nil {
				t.Fatal("nil model without errors")
			}
		})
	}
}

// TestInvalidPrograms compares the errors of every program under
// testdata/invalid with its golden file: one "line:col: message" line per
// error. Run with -update to rewrite the golden files after checking the
// new messages by eye.
func TestInvalidPrograms(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.shm")
	if len(files) < 40 {
		t.Fatalf("found only %d invalid programs, want at least 40", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, errs := CheckSource(filepath.Base(f), string(text))
			if len(errs) == 0 {
				t.Fatalf("no error reported (model %v)", m != nil)
			}
			got := renderHeaders(errs)
			golden := strings.TrimSuffix(f, ".shm") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden file (run go test ./ir -update): %v", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func renderHeaders(errs lang.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Header())
		b.WriteByte('\n')
	}
	return b.String()
}
