package data

import (
	"bytes"
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
	r, err := Open(path)
	if err != nil {
		return nil, fmt.Errorf("data file: %w", err)
	}
	defer r.Close()
	text := &textReader{r: r}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return ReadJSON(path, text)
	}
	return ReadCSV(path, text)
}

// textReader fails at the first NUL byte: a data file is text, and a
// binary file or a device (/dev/zero) would otherwise be read up to the
// bound, slowly, as one endless value.
type textReader struct {
	r   io.Reader
	off int64
	err error // the NUL's, returned once the bytes before it are read
}

func (t *textReader) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.r.Read(p)
	if i := bytes.IndexByte(p[:n], 0); i >= 0 {
		t.err = fmt.Errorf("byte %d is NUL (0x00): a data file is text (CSV or JSON), not binary", t.off+int64(i)+1)
		n, err = i, nil
		if n == 0 {
			err = t.err
		}
	}
	t.off += int64(n)
	return n, err
}

// Open opens a file of data (or of results read as data) for reading
// at most MaxFileBytes: a regular file larger is refused at once, and a
// device or pipe fails once that much is read.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	limit := MaxFileBytes()
	if limit <= 0 {
		return f, nil
	}
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s: %s, more than the %s a data file may have (a sixteenth of %s)",
			path, sysmem.Bytes(float64(info.Size())), sysmem.Bytes(float64(limit)), sysmem.Source())
	}
	return &boundedFile{boundedReader{r: f, left: limit, err: fmt.Errorf("more than the %s a data file may have (a sixteenth of %s)",
		sysmem.Bytes(float64(limit)), sysmem.Source())}, f}, nil
}

// boundedFile is a boundedReader of a file, closed with it.
type boundedFile struct {
	boundedReader
	f *os.File
}

func (b *boundedFile) Close() error { return b.f.Close() }

// ReadAll reads the whole file at path, opened with Open.
func ReadAll(path string) ([]byte, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
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
