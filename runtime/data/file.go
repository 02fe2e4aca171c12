package data

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/shmlang/shm/internal/sysmem"
)

// ReadFile reads a data file by path: CmdStan JSON when the name ends in
// .json (in any letter case), CSV otherwise. The path, as given, names the
// file in error messages and provenance.
//
// A file larger than MaxFileBytes is refused (reading it would take
// about ten times its size in memory); a device or pipe is read up to
// that size.
func ReadFile(path string) ([]*Value, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data file: %w", err)
	}
	defer f.Close()
	limit := MaxFileBytes()
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && limit > 0 && info.Size() > limit {
		return nil, fmt.Errorf("data file %s: %s, more than the %s a data file may have (a sixteenth of %s)",
			path, sysmem.Bytes(float64(info.Size())), sysmem.Bytes(float64(limit)), sysmem.Source())
	}
	var r io.Reader = f
	if limit > 0 {
		r = &boundedReader{r: f, left: limit, err: fmt.Errorf("more than the %s a data file may have (a sixteenth of %s)",
			sysmem.Bytes(float64(limit)), sysmem.Source())}
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return readJSON(path, r, MaxValueWords())
	}
	return readCSV(path, r, MaxValueWords())
}

// MaxValueWords bounds the memory, in 8-byte words, that the values of one
// data file may hold once read and bound: a quarter of the memory the
// process may use (sysmem.Total), 0 (no bound) when that is unknown. A
// file within MaxFileBytes may hold more: two bytes of text ("0,") are a
// value of eight, and a short array ("[0,0]") may become a vector of an
// array, with a header of stdlib.ElementWords words.
func MaxValueWords() int64 {
	total, _ := sysmem.Total()
	return int64(total / 4 / 8)
}

// valueBudget counts the memory, in 8-byte words, that a file's values
// will hold, against a limit (0: none).
type valueBudget struct {
	file        string
	limit, used int64
}

// add counts n more words and reports whether they are beyond the limit.
func (b *valueBudget) add(n int64) bool {
	b.used += n
	return b.limit > 0 && b.used > b.limit
}

// err is the error of a file beyond the limit, naming what (a variable, a
// column) was being read.
func (b *valueBudget) err(what string) error {
	return fmt.Errorf("data file %s: %s: the values read so far need %s in memory (a word per number and a header per array that may become a vector, row vector or matrix), more than the %s a data file's values may hold (a quarter of %s)",
		b.file, what, sysmem.Bytes(8*float64(b.used)), sysmem.Bytes(8*float64(b.limit)), sysmem.Source())
}

// MaxFileBytes is the largest data file read: a sixteenth of the memory
// the process may use (sysmem.Total), 0 when that is unknown.
func MaxFileBytes() int64 {
	total, _ := sysmem.Total()
	return int64(total / 16)
}

// boundedReader reads at most left bytes of r, then fails with err.
type boundedReader struct {
	r    io.Reader
	left int64
	err  error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
