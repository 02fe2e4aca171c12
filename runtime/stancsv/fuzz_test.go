package stancsv

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shmlang/shm/runtime/diag"
)

// FuzzRead checks that no input makes Read, ToFit or the summary of the
// draws (what shm summary and shm diagnose do with a file) panic. The seeds
// are files the writer makes, with a diagonal and a dense metric, and
// headers whose counts are out of range (a negative num_warmup once made
// ToFit slice the draws from −5).
func FuzzRead(f *testing.F) {
	for _, dense := range []bool{false, true} {
		f.Add(writtenFile(f, dense))
	}
	for _, src := range append(badCountHeaders, hugeWarmupHeader) {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		_ = file.SamplingDraws()
		fit, err := ToFit([]*File{file, file})
		if err != nil {
			return
		}
		_ = diag.WriteSummary(io.Discard, fit)
		_, _ = diag.Sampler(fit)
	})
}

// writtenFile returns a file of testRows (two of warmup) that the writer
// makes, with the adaptation's step size and metric and the timing.
func writtenFile(t testing.TB, dense bool) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.csv")
	cfg := testConfig()
	metric := []float64{0.591014, 2.5}
	if dense {
		cfg.Metric = "dense_e"
		metric = []float64{0.591014, 0.1, 0.1, 2.5}
	}
	w, err := Create(path, cfg, []string{"theta", "x.1.2"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range testRows {
		if i == 2 {
			if err := w.WriteAdaptation(0.932037, dense, 2, metric); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteTiming(1234*time.Millisecond, 2500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// badCountHeaders are files whose headers declare counts out of range.
var badCountHeaders = []string{
	"# save_warmup = 1\n# num_warmup = -5\na,b\n1,2\n",
	"# save_warmup = 1\n# num_warmup = 3\n# num_samples = -3\n# thin = 1\na,b\n1,2\n3,4\n",
	"# save_warmup = 1\n# num_warmup = 1\n# num_samples = 9223372036854775807\n# thin = 1\na,b\n1,2\n",
}

// hugeWarmupHeader declares more warmup iterations than an int holds
// once rounded up by thin; its one row is warmup (and, without
// num_samples, no count is checked).
const hugeWarmupHeader = "# save_warmup = 1\n# num_warmup = 9223372036854775807\n# thin = 2\na,b\n1,2\n"

// TestBadCounts checks that files whose headers declare counts out of
// range are refused, by Read or by ToFit, with an error.
func TestBadCounts(t *testing.T) {
	for _, src := range badCountHeaders {
		file, err := Read(strings.NewReader(src))
		if err == nil {
			_, err = ToFit([]*File{file})
		}
		if err == nil {
			t.Errorf("accepted:\n%s", src)
		}
	}
}
