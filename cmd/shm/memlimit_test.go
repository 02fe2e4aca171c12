package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

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
	// 8M pairs: 48 MB of JSON (under the sixteenth of the limit a data
	// file may have) that would be 1.1 GiB as an array of vectors.
	pairs := writeFile(t, dir, "pairs.json", `{"x": [`+strings.Repeat("[0,0],", 8000000-1)+"[0,0]]}")
	plain := "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  y ~ normal(mu, 1);\n}\n"
	// Four files of 1.5e6 numbers, each within a data file's bound (a
	// sixty-fourth of the memory), 6e6 together beyond it.
	var quarters []string
	column := strings.Repeat("1.5\n", 1500000)
	for i := range 4 {
		quarters = append(quarters, writeFile(t, dir, fmt.Sprintf("q%d.csv", i), fmt.Sprintf("y%d\n", i)+column))
	}
	for _, tc := range []struct {
		name, src, want string
		args            []string // data files and --set flags
	}{
		{"matrix", "transformed data {\n  matrix[20000, 20000] m = rep_matrix(0, 20000, 20000);\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n",
			"m.shm:2:3: matrix[20000, 20000] m needs 4e+08 elements (3.0 GiB), more than half of the address space left under ulimit -v ({SIZE})", nil},
		{"recursion", "functions {\n  real f(int n) {\n    vector[200000] v = rep_vector(1, 200000);\n    if (n == 0) return 0;\n    return sum(v) * 0 + f(n - 1);\n  }\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(f(2000), 1);\n}\n",
			"one evaluation may hold (an eighth of the address space left under ulimit -v ({SIZE}))", nil},
		// An array of vectors holds a Value header per element (about 16
		// words) beside its scalars: array[N] vector[2] of N = 2e7 needs
		// 2.7 GiB, not the 305 MiB of its 4e7 values.
		{"array of vectors in the model", "data {\n  int N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n  if (N > 0) {\n    array[N] vector[2] s;\n  }\n}\n",
			"m.shm:10:5: array[N] vector[2] s needs 4e+07 elements in 2e+07 vector elements (2.7 GiB with each element's header), more than half of the address space left under ulimit -v ({SIZE})",
			[]string{"--set", "N=20000000"}},
		// Declared at every evaluation, it must fit in what one
		// evaluation may hold, as the tape's values do.
		{"array of vectors in the model, within half", "data {\n  int N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n  if (N > 0) {\n    array[N] vector[2] s;\n  }\n}\n",
			"m.shm:10:5: array[N] vector[2] s needs 1.2e+07 elements in 6e+06 vector elements (824 MiB with each element's header), more than the {SIZE} one evaluation may hold (an eighth of the address space left under ulimit -v ({SIZE}))",
			[]string{"--set", "N=6000000"}},
		{"array of vectors in transformed data", "data {\n  int N;\n}\ntransformed data {\n  array[N] vector[2] s;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n",
			"m.shm:5:3: array[N] vector[2] s needs 8e+07 elements in 4e+07 vector elements", []string{"--set", "N=40000000"}},
		{"array of vectors in generated quantities", "data {\n  int N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\ngenerated quantities {\n  array[N] vector[1] s;\n}\n",
			"m.shm:11:3: array[N] vector[1] s needs 3e+07 elements in 3e+07 vector elements", []string{"--set", "N=30000000"}},
		{"ODE solution", "functions {\n  vector f(real t, vector y) {\n    return -y;\n  }\n}\ndata {\n  int T;\n}\ntransformed data {\n  real s = ode_rk45(f, [1, 1]', 0, linspaced_array(T, 1e-9, 1))[1][1];\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n",
			"ode_rk45: the solution at 20000000 times of 2 states needs 4e+07 elements in 2e+07 vector elements", []string{"--set", "T=20000000"}},
		{"JSON array of vectors", "data {\n  int N;\n  array[N] vector[2] x;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n",
			pairs + `: key "x"[{N}][{N}], line 1: more than {N} numbers in the file, more than a data file may give ({SIZE}, a sixty-fourth of the address space left under ulimit -v ({SIZE}))`,
			[]string{pairs}},
		// An unrolled gradient keeps every iteration's potentials.
		{"Sinkhorn history", "data {\n  vector[3] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n  target += -sinkhorn(mu + y, y, eps = 0.1, iters = 5000000);\n}\n",
			"m.shm:9:14: sinkhorn: the history of 5000000 iterations over 3 and 3 points kept for the exact gradient needs 1.5 GiB, more than the {SIZE} one evaluation may hold; give tol",
			[]string{"--set", "y=[1,2,3]"}},
		// The chain's vectors and the dense metric's matrices are
		// checked before anything is allocated.
		{"dense metric", "data {\n  int N;\n}\nparameters {\n  vector[N] z;\n}\nmodel {\n  z ~ normal(0, 1);\n}\n",
			"nuts: 30000 parameters with the dense metric need 26.9 GiB per chain (30000×30000 matrices: the metric, its factor, its estimate and the adapted copy), more than half of the address space left under ulimit -v ({SIZE}): the dense metric allows at most {N} parameters here; use the diagonal metric",
			[]string{"--set", "N=30000", "--metric", "dense"}},
		{"many parameters", "data {\n  int N;\n}\nparameters {\n  vector[N] z;\n}\nmodel {\n  z ~ normal(0, 1);\n}\n",
			"nuts: 3000000 parameters need 3.1 GiB per chain (the trajectory's and the tree's vectors), more than half of the address space left under ulimit -v ({SIZE}): at most {N} parameters fit here",
			[]string{"--set", "N=3000000"}},
		// The columns' names are counted before any is built (6e7 took
		// 23 s and then a fatal out-of-memory): 1e7 of them need about
		// 380 MiB, the vector 76 MiB.
		{"parameters' column names", "data {\n  int N;\n}\nparameters {\n  vector[N] z;\n}\nmodel {\n  z ~ normal(0, 1);\n}\n",
			"z (vector[N]): the parameters' draws would have 1e+07 columns, whose names need {SIZE}, more than an eighth of the address space left under ulimit -v ({SIZE})",
			[]string{"--set", "N=10000000"}},
		// Each of crn's replicates keeps its tape and Sinkhorn workspace.
		{"crn replicates", "data {\n  vector[3] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n  target += -crn(1048576, sinkhorn(mu + std_normal_rng(3), y, eps = 0.3, iters = 80));\n}\n",
			"m.shm:9:18: crn: 1048576 replicates, each holding",
			[]string{"--set", "y=[1,2,3]"}},
		{"data files together", plain, ": the data files up to this one give {N} numbers, more than the data may give together ({N}: {SIZE}, a sixty-fourth of the address space left under ulimit -v ({SIZE}))",
			quarters},
		// Refused at its first byte: a data file is text.
		{"data from /dev/zero", plain, "/dev/zero: byte 1 is NUL (0x00): a data file is text (CSV or JSON), not binary",
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
			if err != nil || !strings.Contains(text, "exit 1\n") || !limitPattern(tc.want).MatchString(text) || strings.Contains(text, "fatal error") {
				t.Errorf("%v:\n%s\nwant exit 1 and %q", err, text, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the failed run left %s", out)
			}
		})
	}
	// A model just below the chain's bound runs to its summary (1.5e6
	// parameters passed the check made against the whole limit, then
	// died in a fatal out-of-memory: the limit counts the runtime's
	// reservations too).
	t.Run("parameters just within the bound", func(t *testing.T) {
		model := writeFile(t, dir, "fit.shm", "data {\n  int N;\n}\nparameters {\n  vector[N] z;\n}\nmodel {\n  z ~ normal(0, 1);\n}\n")
		limited := func(args ...string) string {
			cmd := exec.Command("sh", "-c", "ulimit -v 4000000 && exec \"$0\" -test.run '^TestMemoryUnderRlimit$'", exe)
			cmd.Env = append(os.Environ(), "SHM_RLIMIT_ARGS="+strings.Join(args, "\x1f"))
			b, _ := cmd.CombinedOutput()
			return string(b)
		}
		out := filepath.Join(dir, "out-fit")
		refused := limited("sample", model, "--set", "N=3000000", "--chains", "1", "--output", out)
		m := regexp.MustCompile(`at most ([0-9]+) parameters fit here`).FindStringSubmatch(refused)
		if m == nil {
			t.Fatalf("no bound in %s", refused)
		}
		n, _ := strconv.Atoi(m[1])
		text := limited("sample", model, "--set", fmt.Sprintf("N=%d", n*9/10), "--chains", "1", "--warmup", "5", "--samples", "5", "--refresh", "0", "--output", out)
		chains, _ := filepath.Glob(filepath.Join(out, "*.csv"))
		if !strings.Contains(text, "exit 0\n") || strings.Contains(text, "fatal error") || len(chains) != 1 {
			t.Errorf("%d parameters (the bound %d): chains %v, %.2000s", n*9/10, n, chains, text)
		}
	})
	// A REPL session's values add up on its tape, bounded as one
	// evaluation: the lines beyond fail, the session goes on (the
	// second of these lines was a fatal out-of-memory).
	t.Run("REPL session values", func(t *testing.T) {
		var script strings.Builder
		for _, v := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			fmt.Fprintf(&script, "%s = rep_vector(1, 12000000)\n", v)
		}
		script.WriteString("1 + 1\n")
		cmd := exec.Command("sh", "-c", "ulimit -v 3000000 && exec \"$0\" -test.run '^TestMemoryUnderRlimit$'", exe)
		cmd.Env = append(os.Environ(), "SHM_RLIMIT_ARGS=repl")
		cmd.Stdin = strings.NewReader(script.String())
		b, _ := cmd.CombinedOutput()
		text := string(b)
		if !strings.Contains(text, "exit 1\n") || strings.Contains(text, "fatal error") || !limitPattern("one evaluation may hold (an eighth of the address space left under ulimit -v ({SIZE}))").MatchString(text) {
			t.Errorf("%.3000s", text)
		}
	})
	// The other commands that read or hash data files: an endless
	// device is refused once a data file's bound is read.
	model := writeFile(t, dir, "cal.shm", "data {\n  int<lower=1> N;\n  vector[N] y;\n  real<lower=0> lambda;\n}\nparameters {\n  real mu;\n}\nmodel {\n  target += lambda * normal_lpdf(y | mu, 1);\n}\ngenerated quantities {\n  vector[N] y_rep;\n  for (n in 1:N) y_rep[n] = normal_rng(mu, 1);\n}\n")
	y := writeFile(t, dir, "y.csv", "y\n0.1\n0.5\n0.9\n")
	chain := writeFile(t, dir, "cal-1.csv", "# model = cal\nlp__,mu\n-1,0.5\n")
	const zeroBound = "/dev/zero: more than the {SIZE} a data file may have (a sixteenth of the address space left under ulimit -v ({SIZE}))"
	zeroJSON := filepath.Join(dir, "z.json")
	if err := os.Symlink("/dev/zero", zeroJSON); err != nil {
		t.Fatal(err)
	}
	calDir := filepath.Join(dir, "cplan")
	if err := os.Mkdir(calDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(calDir, "plan.json")); err != nil {
		t.Fatal(err)
	}
	const zeroJSONBound = "more than the {SIZE} a data file may have (a sixteenth of the address space left under ulimit -v ({SIZE}))"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"calibrate datasets", []string{"calibrate", "lambda", model, y, "--truth", "mu=0.5", "--datasets", "/dev/zero", "--lambdas", "1", "--dir", filepath.Join(dir, "cz")}, zeroBound},
		{"calibrate data", []string{"calibrate", "lambda", model, "/dev/zero", "--truth", "mu=0.5", "--generate", "2", "--replicate", "y=y_rep", "--lambdas", "1", "--dir", filepath.Join(dir, "cz2")}, zeroBound},
		{"plot ppc data", []string{"plot", "ppc", chain, "--data", "/dev/zero", "--y", "y", "--out", filepath.Join(dir, "q.png")}, "/dev/zero: byte 1 is NUL (0x00)"},
		{"an initial point", []string{"sample", model, y, "--set", "lambda=1", "--init", zeroJSON, "--output", filepath.Join(dir, "oi")}, "--init: " + zeroJSON + ": " + zeroJSONBound},
		{"a calibration's plan", []string{"calibrate", "lambda", model, y, "--truth", "mu=0.5", "--generate", "2", "--replicate", "y=y_rep", "--lambdas", "1", "--dir", calDir}, zeroJSONBound},
		{"an array task's round", []string{"calibrate", "task", calDir, zeroJSON, "--index", "0"}, zeroJSONBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", "ulimit -v 4000000 && exec \"$0\" -test.run '^TestMemoryUnderRlimit$'", exe)
			cmd.Env = append(os.Environ(), "SHM_RLIMIT_ARGS="+strings.Join(tc.args, "\x1f"))
			done := make(chan struct{})
			timer := time.AfterFunc(60*time.Second, func() {
				select {
				case <-done:
				default:
					cmd.Process.Kill()
				}
			})
			b, err := cmd.CombinedOutput()
			close(done)
			timer.Stop()
			text := string(b)
			if err != nil || !strings.Contains(text, "exit 1\n") || !limitPattern(tc.want).MatchString(text) || strings.Contains(text, "fatal error") {
				t.Errorf("%v:\n%s\nwant exit 1 and %q", err, text, tc.want)
			}
		})
	}
}

// TestTooLittleMemory: under an address-space limit that leaves shm
// less than it needs (ulimit -v 2 GB: the Go runtime and the C library
// map most of it before main), shm refuses to start, naming the limit,
// instead of refusing every input with bounds of nothing.
func TestTooLittleMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -v and the limits' reading are Linux's")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	model := writeFile(t, t.TempDir(), "m.shm", "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n")
	cmd := exec.Command("sh", "-c", "ulimit -v 2000000 && exec \"$0\" check \"$1\"", exe, model)
	cmd.Env = append(os.Environ(), "SHM_TEST_MAIN=1")
	b, err := cmd.CombinedOutput()
	text := string(b)
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(text, "shm: shm may use only") || !strings.Contains(text, "raise the limit") {
		t.Errorf("%v: %s", err, text)
	}
}

// limitPattern matches the message want, whose sizes and counts that
// follow from the memory left under the limit (what the Go runtime and
// the threads map before main runs, which varies) are written {SIZE} and
// {N}.
func limitPattern(want string) *regexp.Regexp {
	p := regexp.QuoteMeta(want)
	p = strings.ReplaceAll(p, `\{SIZE\}`, `[0-9.]+ [KMG]iB`)
	p = strings.ReplaceAll(p, `\{N\}`, `[0-9]+`)
	return regexp.MustCompile(p)
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
