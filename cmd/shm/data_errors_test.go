package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadDataExitsOne checks that each kind of bad data gives exit status
// 1 and one clear error naming the file, the column or key, and the row,
// and that no output file is left behind.
func TestBadDataExitsOne(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", `data {
  int N;
  vector<lower=0>[N] y;
  matrix[N, 2] x;
}
parameters { real mu; }
model { mu ~ normal(0, 1); }
`)
	tests := []struct {
		name, file, text, want string
	}{
		{"missing variable", "d.csv", "x.1,x.2\n1,2\n", `data variable y (vector<lower=0>[N]) is missing: not found in`},
		{"wrong length", "d.json", `{"N": 3, "y": [1, 2], "x": [[1, 2], [3, 4], [5, 6]]}`, `d.json: key "y": y is declared vector<lower=0>[N] with sizes [3], but the data has sizes [2]`},
		{"non-numeric cell", "d.csv", "y,x.1,x.2\n1,2,3\nabc,4,5\n", `d.csv: column "y", row 3`},
		{"NaN", "d.csv", "y,x.1,x.2\n1,2,3\nNaN,4,5\n", `d.csv: column "y", row 3: y[2] is NaN`},
		{"violated constraint", "d.csv", "y,x.1,x.2\n1,2,3\n-1,4,5\n", `d.csv: column "y", row 3: y[2] = -1 violates the constraint lower=0`},
		{"matrix column missing", "d.csv", "y,x.1\n1,2\n3,4\n", `x is declared matrix[N, 2] with sizes [2, 2], but the data has sizes [2, 1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := writeFile(t, dir, tt.file, tt.text)
			out := filepath.Join(dir, "out")
			_, stderr, code := runCmd(t, "sample", model, data, "--output", out, "--refresh", "0", "--seed", "1")
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q\nwant it to contain %q", stderr, tt.want)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("more than one line of error: %q", stderr)
			}
			if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) > 0 {
				t.Errorf("files left behind: %v", files)
			}
			os.Remove(data)
		})
	}
}

// TestInfiniteDataNamed: an infinite data value is allowed (as in Stan)
// but named with its element when it is read, so that the zero density
// it causes later is traced to it; diagnose refuses to test a gradient
// at a point of zero density. Many unused columns give one line.
func TestInfiniteDataNamed(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "data {\n  int N;\n  vector[N] y;\n}\nparameters {\n  real mu;\n}\nmodel {\n  y ~ normal(mu, 1);\n}\n")
	for _, tc := range []struct{ file, text, want string }{
		{"d.csv", "y\n1\ninf\n2\n", `d.csv: column "y", row 3: y[2] is +Inf`},
		{"d.json", `{"N": 3, "y": [1, 2, "-Inf"]}`, `d.json: key "y"[3]: y[3] is -Inf`},
	} {
		data := writeFile(t, dir, tc.file, tc.text)
		_, stderr, code := runCmd(t, "sample", model, data, "--output", filepath.Join(dir, "out"), "--refresh", "0", "--chains", "1")
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("sample %s: exit %d, stderr %q; want 1 and %q", tc.file, code, stderr, tc.want)
		}
		_, stderr, code = runCmd(t, "diagnose", model, data)
		if code != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "the log density at the initial point is -Inf (") {
			t.Errorf("diagnose %s: exit %d, stderr %q", tc.file, code, stderr)
		}
	}
	var wide strings.Builder
	wide.WriteString("y")
	for i := range 1000 {
		fmt.Fprintf(&wide, ",u%d", i)
	}
	wide.WriteString("\n1" + strings.Repeat(",0", 1000) + "\n")
	data := writeFile(t, dir, "wide.csv", wide.String())
	_, stderr, code := runCmd(t, "sample", model, data, "--output", filepath.Join(dir, "out"), "--refresh", "0", "--chains", "1", "--warmup", "10", "--samples", "10")
	if code != 0 || strings.Count(stderr, "warning:") != 1 || !strings.Contains(stderr, "wide.csv: 1000 values are not used by the model: u0, u1, u2, u3, u4, ... (995 more)") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	} // JSON keys that no model could declare are named quoted, with
	// their control characters escaped (a NUL was echoed raw).
	odd := writeFile(t, dir, "odd.json", `{"y": [1], "\u0000": 1, "a\u001bb c": 2}`)
	_, stderr, code = runCmd(t, "sample", model, odd, "--output", filepath.Join(dir, "out2"), "--refresh", "0", "--chains", "1", "--warmup", "10", "--samples", "10")
	for _, want := range []string{`odd.json: key "\x00": "\x00" is not used by the model`, `odd.json: key "a\x1bb c": "a\x1bb c" is not used by the model`} {
		if code != 0 || !strings.Contains(stderr, want) || strings.ContainsAny(stderr, "\x00\x1b") {
			t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
		}
	}
}

// TestDataWarningsWithBindError: when transformed data fails, the data's
// warnings (an infinite value, which often explains it) come with the
// error instead of being lost.
func TestDataWarningsWithBindError(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "res.shm", "data { int N; vector[N] y; }\ntransformed data { real h = resolution(y); }\nparameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n")
	y := writeFile(t, dir, "inf.csv", "y\n1\ninf\n3\n")
	_, stderr, code := runCmd(t, "sample", model, y, "--output", filepath.Join(dir, "out"))
	want := "shm: transformed data: " + model + ":2:29: resolution: ot: resolution: coordinate 1 of point 2 is +Inf\n  after the warning: " + y + `: column "y", row 3: y[2] is +Inf`
	if code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("exit %d, %q, want it to start %q", code, stderr, want)
	}
}

// TestDiagnoseCRNNoiseWithoutCRN: --crn-noise of a model without a crn
// call is refused (it wrote a file holding an empty line, status 0).
func TestDiagnoseCRNNoiseWithoutCRN(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "m.shm", "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n")
	noise := filepath.Join(dir, "noise.csv")
	_, stderr, code := runCmd(t, "diagnose", model, "--crn-noise", noise)
	if want := "shm diagnose: --crn-noise: " + model + " has no crn(K, ...) call: there is no noise to write\n"; code != 2 || stderr != want {
		t.Errorf("exit %d, %q, want %q", code, stderr, want)
	}
	if _, err := os.Stat(noise); err == nil {
		t.Error("a noise file was written")
	}
}
