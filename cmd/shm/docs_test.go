package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
)

// docCommands returns the commands of the shell block that follows the
// marker <!-- test: name --> in a Markdown file, each split into words
// (the block's commands take no quoting).
func docCommands(t *testing.T, file, name string) [][]string {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- test: " + name + " -->\n```sh\n"
	_, block, ok := strings.Cut(string(text), marker)
	if !ok {
		t.Fatalf("%s has no block marked %q", file, marker)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s: the block after %q is not closed", file, marker)
	}
	var cmds [][]string
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(block, "\\\n", " ")))
	for sc.Scan() {
		if words := strings.Fields(sc.Text()); len(words) > 0 {
			cmds = append(cmds, words)
		}
	}
	return cmds
}

// TestSinkhornDocsGandK runs the worked example of docs/sinkhorn.md as
// written, in a folder where models/ is the repository's, and checks
// what the text says of each step: the recipe's report warns, more
// iterations hardly help, the corrected loss's report is quiet, the
// calibration's λ* is the λ of the last run, and at it all four
// parameters' 90% intervals cover the data's truth.
func TestSinkhornDocsGandK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the docs' g-and-k example: about 9 minutes on two cores")
	}
	const doc = "../../docs/sinkhorn.md"
	cmds := docCommands(t, doc, "TestSinkhornDocsGandK")
	models, err := filepath.Abs("../../models")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(models, filepath.Join(dir, "models")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	type step struct {
		name  string // the command's words after ./shm, as a prefix
		check func(t *testing.T, args []string, stdout string)
	}
	var lambdaStar string
	steps := []step{
		{"sample models/gandk/gandk_recipe.shm", func(t *testing.T, _ []string, out string) {
			if !regexp.MustCompile(`(?m)^warning: models/gandk/gandk_recipe\.shm:\d+:\d+: sinkhorn with T = 80 is not converged`).MatchString(out) {
				t.Errorf("the recipe's run does not warn:\n%s", out)
			}
		}},
		{"calibrate iters models/gandk/gandk_recipe.shm", func(t *testing.T, _ []string, out string) {
			// Every budget stays far from converged: Δ_lp above 1 at T = 2000.
			m := regexp.MustCompile(`(?m)^\s+2000\s+(\S+)\s`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no T = 2000 row:\n%s", out)
			}
			if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < 1 {
				t.Errorf("max Δ_lp %s at T = 2000, the docs say more iterations hardly help:\n%s", m[1], out)
			}
		}},
		{"sample models/gandk/gandk.shm", func(t *testing.T, _ []string, out string) {
			if !strings.Contains(out, "(tol = 0.001): max Δ_lp ") || strings.Contains(out, "is not converged") {
				t.Errorf("the corrected loss's report is missing or warns:\n%s", out)
			}
		}},
		{"calibrate lambda models/gandk/gandk.shm", func(t *testing.T, _ []string, out string) {
			m := regexp.MustCompile(`(?m)^lambda\* = (\S+) `).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no lambda*:\n%s", out)
			}
			lambdaStar = m[1]
		}},
		{"sample models/gandk/gandk.shm", func(t *testing.T, args []string, out string) {
			if want := "lambda=" + lambdaStar; !strings.Contains(strings.Join(args, " "), "--set "+want) {
				t.Errorf("the last run is not at the calibration's lambda* (%s): %v", want, args)
			}
			files, err := filepath.Glob(filepath.Join(flagValue(args, "--output"), "*.csv"))
			if err != nil || len(files) != 4 {
				t.Fatalf("chain files %v (%v)", files, err)
			}
			fit, err := stancsv.ReadFit(files...)
			if err != nil {
				t.Fatal(err)
			}
			for name, truth := range map[string]float64{"A": 3, "B": 1, "g": 2, "k": 0.5} {
				j := slices.Index(fit.Columns, name)
				if j < 0 {
					t.Fatalf("no column %s in %v", name, fit.Columns)
				}
				col := slices.Concat(fit.Column(j)...)
				lo, hi := diag.Quantile(col, 0.05), diag.Quantile(col, 0.95)
				if truth < lo || truth > hi {
					t.Errorf("%s: truth %g outside the 90%% interval [%g, %g]", name, truth, lo, hi)
				}
			}
		}},
	}
	if len(cmds) != len(steps) {
		t.Fatalf("%s's example has %d commands, the test knows %d: update both", doc, len(cmds), len(steps))
	}
	for i, cmd := range cmds {
		s := steps[i]
		if cmd[0] != "./shm" || !strings.HasPrefix(strings.Join(cmd[1:], " "), s.name) {
			t.Fatalf("command %d is %q, want ./shm %s ...", i+1, strings.Join(cmd, " "), s.name)
		}
		var stdout, stderr bytes.Buffer
		if code := run(cmd[1:], &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(cmd, " "), code, stderr.String())
		}
		s.check(t, cmd[1:], stdout.String())
		if t.Failed() {
			t.FailNow()
		}
	}
}

// flagValue returns the value after flag in args, or "".
func flagValue(args []string, flag string) string {
	for i, a := range args[:max(len(args)-1, 0)] {
		if a == flag {
			return args[i+1]
		}
	}
	return ""
}
