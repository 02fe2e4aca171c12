package data

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileText: a data file with a NUL byte is refused at that byte
// (a binary file, /dev/zero), after the text before it.
func TestReadFileText(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"nul.csv", "y\n1\n\x002\n", "nul.csv: byte 5 is NUL (0x00): a data file is text (CSV or JSON), not binary"},
		{"nul.json", "{\"y\": [1, \x00 2]}", "nul.json: byte 11 is NUL (0x00)"},
		{"first.csv", "\x00", "first.csv: byte 1 is NUL"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero: byte 1 is NUL") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}

// TestBoundedReader: at most the bound is read, then the error.
func TestBoundedReader(t *testing.T) {
	b := &boundedReader{r: strings.NewReader(strings.Repeat("1\n", 100)), left: 10, err: io.ErrShortBuffer}
	got, err := io.ReadAll(b)
	if len(got) != 10 || err != io.ErrShortBuffer {
		t.Errorf("read %d bytes, %v; want 10 and the bound's error", len(got), err)
	}
}
