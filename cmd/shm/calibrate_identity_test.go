package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCalibrateDerivedFilesChecked: a rerun into a folder whose derived
// files were tampered with — draws swapped between datasets or copied
// from another loss scale, a dataset edited (with or without its results
// kept, with or without its recorded digest forged), a result of another
// dataset, draws edited or removed, a folder of an earlier version — is
// refused with an error naming the file and what differs, never a table
// of mixed results; an untouched folder, or one whose dataset file was
// removed (drawn again, the same), reuses everything and prints the same
// table.
func TestCalibrateDerivedFilesChecked(t *testing.T) {
	model, y := calibrationFiles(t)
	base := t.TempDir()
	args := func(dir string) []string {
		return []string{"calibrate", "lambda", model, y, "--dir", dir, "--truth", "mu=0.5", "--generate", "8",
			"--replicate", "y=y_rep", "--lambdas", "0.5,1,64", "--warmup", "100", "--samples", "100", "--workers", "1", "--refresh", "0"}
	}
	orig := filepath.Join(base, "cal")
	var stdout, stderr bytes.Buffer
	if code := run(args(orig), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	wantTable := withoutTimes(stdout.String())
	// The first run reweighted lambda 1 from the runs at 0.5 and ran 64:
	// draws at two scales.
	for _, f := range []string{"results/lambda=0.5/d005.draws", "results/lambda=64/d002.draws", "results/lambda=1/d000.json"} {
		if _, err := os.Stat(filepath.Join(orig, f)); err != nil {
			t.Fatalf("the calibration's files: %v", err)
		}
	}

	path := func(dir string, parts ...string) string { return filepath.Join(append([]string{dir}, parts...)...) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	swap := func(a, b string) {
		t.Helper()
		x, err := os.ReadFile(a)
		must(err)
		y, err := os.ReadFile(b)
		must(err)
		must(os.WriteFile(a, y, 0o644))
		must(os.WriteFile(b, x, 0o644))
	}
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		must(err)
		must(os.WriteFile(to, b, 0o644))
	}
	shiftY := func(file string) {
		t.Helper()
		b, err := os.ReadFile(file)
		must(err)
		var d map[string]any
		must(json.Unmarshal(b, &d))
		ys := d["y"].([]any)
		for i, v := range ys {
			ys[i] = v.(float64) + 5
		}
		b, err = json.Marshal(d)
		must(err)
		must(os.WriteFile(file, b, 0o644))
	}
	editJSON := func(file string, edit func(map[string]any)) {
		t.Helper()
		b, err := os.ReadFile(file)
		must(err)
		var m map[string]any
		must(json.Unmarshal(b, &m))
		edit(m)
		b, err = json.Marshal(m)
		must(err)
		must(os.WriteFile(file, b, 0o644))
	}
	for _, tc := range []struct {
		name string
		edit func(dir string)
		// want is in the error; "" for a rerun that succeeds with the
		// first run's table.
		want, file string
	}{
		{"untouched", func(string) {}, "", ""},
		{"a dataset file removed (drawn again)", func(dir string) {
			must(os.Remove(path(dir, "datasets", "d003.json")))
		}, "", ""},
		{"draws swapped between datasets (a)", func(dir string) {
			swap(path(dir, "results", "lambda=0.5", "d000.draws"), path(dir, "results", "lambda=0.5", "d005.draws"))
			must(os.RemoveAll(path(dir, "results", "lambda=1")))
			must(os.RemoveAll(path(dir, "results", "lambda=64")))
		}, "holds the draws of lambda 0.5, dataset 6, not of lambda 0.5, dataset 1", "results/lambda=0.5/d000.draws"},
		{"draws copied from another loss scale", func(dir string) {
			copyFile(path(dir, "results", "lambda=64", "d002.draws"), path(dir, "results", "lambda=0.5", "d002.draws"))
			must(os.RemoveAll(path(dir, "results", "lambda=1")))
		}, "holds the draws of lambda 64, dataset 3, not of lambda 0.5, dataset 3", "results/lambda=0.5/d002.draws"},
		{"draws edited", func(dir string) {
			file := path(dir, "results", "lambda=0.5", "d004.draws")
			b, err := os.ReadFile(file)
			must(err)
			b[len(b)-1] ^= 1
			must(os.WriteFile(file, b, 0o644))
			must(os.RemoveAll(path(dir, "results", "lambda=1")))
		}, "are not those its result records", "results/lambda=0.5/d004.draws"},
		{"draws removed, result kept", func(dir string) {
			must(os.Remove(path(dir, "results", "lambda=0.5", "d001.draws")))
			must(os.RemoveAll(path(dir, "results", "lambda=1")))
		}, "is missing: the result", "results/lambda=0.5/d001.draws"},
		{"a dataset edited, one scale's results removed (b)", func(dir string) {
			shiftY(path(dir, "datasets", "d000.json"))
			must(os.RemoveAll(path(dir, "results", "lambda=64")))
		}, "was edited since the calibration wrote it", "datasets/d000.json"},
		{"a dataset edited, every result kept", func(dir string) {
			shiftY(path(dir, "datasets", "d006.json"))
		}, "was edited since the calibration wrote it", "datasets/d006.json"},
		{"a dataset edited and its digest forged", func(dir string) {
			file := path(dir, "datasets", "d002.json")
			shiftY(file)
			b, err := os.ReadFile(file)
			must(err)
			h := sha256.Sum256(b)
			must(os.WriteFile(file+".sha256", []byte(hex.EncodeToString(h[:])+"  d002.json\n"), 0o644))
		}, "is the result of a run on another dataset", "results/lambda=0.5/d002.json"},
		{"a dataset and its digest copied from another", func(dir string) {
			copyFile(path(dir, "datasets", "d001.json"), path(dir, "datasets", "d000.json"))
			copyFile(path(dir, "datasets", "d001.json.sha256"), path(dir, "datasets", "d000.json.sha256"))
		}, "records the digest of d001.json, not of d000.json", "datasets/d000.json.sha256"},
		{"a result of another dataset", func(dir string) {
			other, err := os.ReadFile(path(dir, "datasets", "d005.json.sha256"))
			must(err)
			editJSON(path(dir, "results", "lambda=1", "d004.json"), func(m map[string]any) {
				m["dataset_sha256"] = strings.Fields(string(other))[0]
			})
		}, "is the result of a run on another dataset", "results/lambda=1/d004.json"},
		{"a folder of an earlier version", func(dir string) {
			must(filepath.WalkDir(path(dir, "results"), func(p string, e fs.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(p, ".json") {
					editJSON(p, func(m map[string]any) { delete(m, "dataset_sha256"); delete(m, "draws_sha256") })
				}
				return err
			}))
			names, _ := filepath.Glob(path(dir, "datasets", "*.sha256"))
			for _, n := range names {
				must(os.Remove(n))
			}
		}, "written by an earlier version of shm, which did not record the digest of its dataset", "results/lambda=0.5/d000.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cal")
			must(os.CopyFS(dir, os.DirFS(orig)))
			tc.edit(dir)
			var stdout, stderr bytes.Buffer
			code := run(args(dir), &stdout, &stderr)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				if got := withoutTimes(stdout.String()); got != wantTable {
					t.Errorf("rerun's table:\n%s\nwant:\n%s", got, wantTable)
				}
				if strings.Contains(stderr.String(), "running") || strings.Contains(stderr.String(), "decided by reweighting") {
					t.Errorf("the rerun decided tasks again:\n%s", stderr.String())
				}
				return
			}
			if code == 0 {
				t.Fatalf("accepted; want an error with %q\n%s", tc.want, stdout.String())
			}
			if msg := stderr.String(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, filepath.Join(dir, tc.file)) {
				t.Errorf("error:\n%s\nwant one naming %s and saying %q", msg, filepath.Join(dir, tc.file), tc.want)
			}
			if strings.Contains(stdout.String(), "lambda*") {
				t.Errorf("a table printed:\n%s", stdout.String())
			}
		})
	}
}
