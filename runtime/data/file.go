package data

import (
	"io"

	"fmt"
	"github.com/shmlang/shm/internal/sysmem"
	"os"
	"path/filepath"
	"strings"
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
		return ReadJSON(path, r)
	}
	return ReadCSV(path, r)
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
