package data

import (
	"bytes"
	"fmt"
	"github.com/shmlang/shm/internal/shared"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReadJSONDiamonds reads posteriordb's largest data file (2.3 MB,
// a 5000×25 matrix and a 5000-vector).
func BenchmarkReadJSONDiamonds(b *testing.B) {
	path := filepath.Join(benchShared(b), "posteriordb", "diamonds-diamonds", "data.json")
	text, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ReadJSON("data.json", bytes.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadCSVMatrix reads a CSV file of a 5000-vector y and a 5000×25
// matrix x.1 … x.25 written with 17 significant digits.
func BenchmarkReadCSVMatrix(b *testing.B) {
	var buf strings.Builder
	buf.WriteString("y")
	for j := 1; j <= 25; j++ {
		fmt.Fprintf(&buf, ",x.%d", j)
	}
	buf.WriteByte('\n')
	for i := range 5000 {
		fmt.Fprintf(&buf, "%.17g", float64(i)*0.1234567)
		for j := 1; j <= 25; j++ {
			fmt.Fprintf(&buf, ",%.17g", float64(i*j)/7)
		}
		buf.WriteByte('\n')
	}
	text := []byte(buf.String())
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ReadCSV("data.csv", bytes.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchShared returns ../shared beside the repository root.
func benchShared(b *testing.B) string { return shared.Path(b) }
