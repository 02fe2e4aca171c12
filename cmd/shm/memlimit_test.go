package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shmlang/shm/internal/sysmem"
)

// TestMemoryUnderRlimit: under an address-space limit (ulimit -v 4 GB,
// below this machine's memory), a matrix beyond half of it and a
// recursion whose locals together exceed it, and a data file without end
// are refused with an error naming the statement or file and the limit,
// not a crash of the runtime. The test runs itself again in a shell that
// lowers the limit.
func TestMemoryUnderRlimit(t *testing.T) {
	if args := os.Getenv("SHM_RLIMIT_ARGS"); args != "" {
		var stdout, stderr bytes.Buffer
		code := run(strings.Split(args, "\x1f"), &stdout, &stderr)
		fmt.Printf("exit %d\n%s", code, stderr.String())
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -v and the limits' reading are Linux's")
	}
	if total, _ := sysmem.Total(); total <= 4000000*1024 {
		t.Skipf("this process may use %s, not more than the test's limit", sysmem.Bytes(float64(total)))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  y ~ normal(mu, 1);\n}\n"
	for _, tc := range []struct {
		name, src, want string
		args            []string // data files
	}{
		{"matrix", "transformed data {\n  matrix[20000, 20000] m = rep_matrix(0, 20000, 20000);\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n",
			"m.shm:2:3: matrix[20000, 20000] m needs 4e+08 elements (3.0 GiB), more than half of the address-space limit (ulimit -v) (3.8 GiB)", nil},
		{"recursion", "functions {\n  real f(int n) {\n    vector[200000] v = rep_vector(1, 200000);\n    if (n == 0) return 0;\n    return sum(v) * 0 + f(n - 1);\n  }\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(f(2000), 1);\n}\n",
			"one evaluation may hold (an eighth of the address-space limit (ulimit -v) (3.8 GiB))", nil},
		{"data from /dev/zero", plain, "/dev/zero: more than the 244 MiB a data file may have (a sixteenth of the address-space limit (ulimit -v) (3.8 GiB))",
			[]string{"/dev/zero"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := writeFile(t, dir, "m.shm", tc.src)
			out := filepath.Join(dir, "out-"+tc.name)
			cmd := exec.Command("sh", "-c", "ulimit -v 4000000 && exec \"$0\" -test.run '^TestMemoryUnderRlimit$'", exe)
			args := append(append([]string{"sample", model}, tc.args...), "--chains", "1", "--warmup", "10", "--samples", "10", "--refresh", "0", "--output", out)
			cmd.Env = append(os.Environ(), "SHM_RLIMIT_ARGS="+strings.Join(args, "\x1f"))
			b, err := cmd.CombinedOutput()
			text := string(b)
			if err != nil || !strings.Contains(text, "exit 1\n") || !strings.Contains(text, tc.want) || strings.Contains(text, "fatal error") {
				t.Errorf("%v:\n%s\nwant exit 1 and %q", err, text, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the failed run left %s", out)
			}
		})
	}
}

// TestModelSourceBounded: a model file beyond maxSourceBytes, or a device
// without end, is refused after reading that much.
func TestModelSourceBounded(t *testing.T) {
	big := writeFile(t, t.TempDir(), "big.shm", "// "+strings.Repeat("x", maxSourceBytes)+"\n")
	for _, path := range []string{big, "/dev/zero"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"check", path}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), path+": more than 1.0 MiB: a model file may have at most that") {
			t.Errorf("%s: exit %d, stderr %q", path, code, stderr.String())
		}
	}
}
