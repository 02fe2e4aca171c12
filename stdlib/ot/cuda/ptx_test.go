package cuda

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPTXUpToDate checks that the committed PTX was generated from the
// current kernel sources (the hashes kernels/genptx.sh records) and that it
// defines every kernel of the table with its number of 8-byte parameters.
func TestPTXUpToDate(t *testing.T) {
	sums, err := os.ReadFile(filepath.Join("kernels", "sinkhorn.ptx.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for line := range strings.Lines(string(sums)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("malformed line %q in sinkhorn.ptx.sha256", line)
		}
		data, err := os.ReadFile(filepath.Join("kernels", f[1]))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != f[0] {
			t.Errorf("kernels/%s changed since the PTX was generated: run `go generate` (see kernels/genptx.sh)", f[1])
		}
		files++
	}
	if files != 3 {
		t.Errorf("sinkhorn.ptx.sha256 covers %d files, want sinkhorn.cu, fused.cuh and shim.h", files)
	}

	ptxFile, err := os.Open(filepath.Join("kernels", "sinkhorn.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	defer ptxFile.Close()
	entry := regexp.MustCompile(`^\.visible \.entry (\w+)\($`)
	param := regexp.MustCompile(`^\s*\.param \.(u64|f64) \w+,?$`)
	params := map[string]int{}
	current := ""
	sc := bufio.NewScanner(ptxFile)
	for sc.Scan() {
		line := sc.Text()
		if m := entry.FindStringSubmatch(line); m != nil {
			current = m[1]
			params[current] = 0
			continue
		}
		if current == "" {
			continue
		}
		switch {
		case param.MatchString(line):
			params[current]++
		case strings.HasPrefix(strings.TrimSpace(line), ")"):
			current = ""
		case strings.Contains(line, ".param"):
			t.Errorf("kernel %s: parameter %q is not 8 bytes wide", current, strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for k := range numKernels {
		n, ok := params[k.name()]
		switch {
		case !ok:
			t.Errorf("the PTX has no kernel %s", k.name())
		case n != k.arity():
			t.Errorf("kernel %s has %d parameters in the PTX, %d in kernels.go", k.name(), n, k.arity())
		}
		delete(params, k.name())
	}
	for name := range params {
		t.Errorf("the PTX has kernel %s, which kernels.go does not know", name)
	}
}
