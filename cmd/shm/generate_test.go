package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shmlang/shm/runtime/stancsv"
)

const generateModel = `data { int N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
transformed parameters { real prec = 1 / square(sigma); }
model { mu ~ normal(0, 10); sigma ~ exponential(1); y ~ normal(mu, sigma); }
generated quantities { real y_rep = normal_rng(mu, sigma); array[2] int k = {poisson_rng(3), 1}; }
`

// TestGenerateBitwise: shm generate on shm sample's chains (all digits
// kept, warmup saved, thinned) computes bit for bit the transformed
// parameters and generated quantities the run wrote, every column and
// row, from the seed and chain id of each file's header.
func TestGenerateBitwise(t *testing.T) {
	// The second model's transformed data are drawn from the seed: the
	// model is bound with each file's.
	tdModel := strings.Replace(generateModel, "parameters {", "transformed data { real c = normal_rng(0, 1); }\nparameters {", 1)
	tdModel = strings.Replace(tdModel, "real y_rep = normal_rng(mu, sigma);", "real y_rep = normal_rng(mu, sigma) + c;", 1)
	for name, src := range map[string]string{"plain": generateModel, "random transformed data": tdModel} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			model := writeFile(t, dir, "g.shm", src)
			y := writeFile(t, dir, "y.csv", "y\n1.2\n0.4\n2.5\n1.9\n")
			run := filepath.Join(dir, "run")
			if _, stderr, code := runCmd(t, "sample", model, y, "--chains", "2", "--chain-id", "3", "--warmup", "60", "--samples", "40", "--thin", "2",
				"--save-warmup", "--seed", "11", "--sig-figs", "18", "--output", run, "--refresh", "0"); code != 0 {
				t.Fatal(stderr)
			}
			out := filepath.Join(dir, "gq")
			chains := []string{filepath.Join(run, "g-3.csv"), filepath.Join(run, "g-4.csv")}
			stdout, stderr, code := runCmd(t, append(append([]string{"generate", model, y}, chains...), "--output", out, "--sig-figs", "18")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for i, c := range chains {
				want, err := stancsv.ReadFile(c)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(out, []string{"g-gq-3.csv", "g-gq-4.csv"}[i])
				if !strings.Contains(stdout, path) {
					t.Errorf("stdout %q does not name %s", stdout, path)
				}
				got, err := stancsv.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Columns, want.Columns) || len(got.Draws) != len(want.Draws) || got.Method() != "generate_quantities" {
					t.Fatalf("%s: columns %v, %d rows, method %s; want %v, %d rows", path, got.Columns, len(got.Draws), got.Method(), want.Columns, len(want.Draws))
				}
				for k := range want.Draws {
					for j, col := range want.Columns {
						if a, b := got.Draws[k][j], want.Draws[k][j]; math.Float64bits(a) != math.Float64bits(b) {
							t.Fatalf("%s: row %d, %s = %v, the run wrote %v", path, k+1, col, a, b)
						}
					}
				}
			}
		})
	}
}

// TestGenerateCmdStanFile: a CmdStan 2.32 file of the model (its header
// and sampler columns) is read, its seed and id taken from its header,
// and the transformed parameters computed again at its draws.
func TestGenerateCmdStanFile(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "g.shm", generateModel)
	y := writeFile(t, dir, "y.csv", "y\n1.2\n0.4\n2.5\n1.9\n")
	cmdstan := writeFile(t, dir, "g-cmdstan-1.csv", `# stan_version_major = 2
# stan_version_minor = 32
# stan_version_patch = 2
# model = g_model
# method = sample (Default)
#   sample
#     num_samples = 2
#     num_warmup = 1000 (Default)
# id = 2
# random
#   seed = 4242
lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,sigma,prec,y_rep,k.1,k.2
-3.1,0.9,0.7,2,3,0,4.2,1.5,0.8,0,0,0,0
-2.9,0.95,0.7,2,3,0,3.8,1.25,0.5,0,0,0,0
`)
	out := filepath.Join(dir, "gq")
	if _, stderr, code := runCmd(t, "generate", model, y, cmdstan, "--output", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := stancsv.ReadFile(filepath.Join(out, "g-gq-2.csv"))
	if err != nil {
		t.Fatal(err)
	}
	prec := slices.Index(got.Columns, "prec")
	if got.Config["random.seed"] != "4242" || got.Config["id"] != "2" || prec < 0 || len(got.Draws) != 2 ||
		got.Draws[0][prec] != 1/(0.8*0.8) || got.Draws[1][prec] != 4 || got.Draws[1][slices.Index(got.Columns, "k.2")] != 1 ||
		got.Draws[0][0] != -3.1 || got.Draws[0][slices.Index(got.Columns, "energy__")] != 4.2 {
		t.Errorf("seed %s, id %s, columns %v, draws %v", got.Config["random.seed"], got.Config["id"], got.Columns, got.Draws)
	}
}

// TestGenerateRefused: no file of draws, draws of another model (a
// parameter missing), no seed, a draw that is not finite: an error naming it and
// no output file, the first ones as usage errors.
func TestGenerateRefused(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "g.shm", generateModel)
	y := writeFile(t, dir, "y.csv", "y\n1.2\n0.4\n")
	other := writeFile(t, dir, "other-1.csv", "lp__,accept_stat__,nu\n-1,1,2\n")
	nan := writeFile(t, dir, "nan-1.csv", "lp__,mu,sigma\n-1,0.5,1\n-1,nan,1\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{model, y}, 2, "no Stan CSV file of draws among " + y},
		{[]string{model}, 2, "usage: shm generate"},
		{[]string{model, y, other, "--seed", "1"}, 1, other + " has no column mu, a parameter of " + model + " (its columns: lp__, accept_stat__, nu)"},
		{[]string{model, y, nan}, 1, nan + ": its header gives no random seed (random.seed) for the generated quantities' draws: give --seed"},
		{[]string{model, y, nan, "--seed", "1"}, 1, nan + ": draw 2: mu is NaN"},
		{[]string{model, y, nan, "--init", "0"}, 2, "unknown flag --init"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		_, stderr, code := runCmd(t, append(append([]string{"generate"}, c.args...), "--output", out)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
		if left, _ := os.ReadDir(out); len(left) > 0 {
			t.Errorf("%v: left %v", c.args, left)
		}
	}
}

// TestGenerateOutputs: generate refuses an output that is one of its
// inputs, two inputs that would give the same output, and draws of other
// data; a failed run leaves the previous run's files as they were (its
// own are written under temporary names, moved into place together).
func TestGenerateOutputs(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "g.shm", generateModel)
	y := writeFile(t, dir, "y.csv", "y\n1.2\n0.4\n2.5\n1.9\n")
	other := writeFile(t, dir, "y2.csv", "y\n12\n4\n25\n19\n")
	run := filepath.Join(dir, "run")
	if _, stderr, code := runCmd(t, "sample", model, y, "--chains", "2", "--warmup", "30", "--samples", "20", "--seed", "2", "--output", run, "--refresh", "0"); code != 0 {
		t.Fatal(stderr)
	}
	c1, c2 := filepath.Join(run, "g-1.csv"), filepath.Join(run, "g-2.csv")
	out := filepath.Join(dir, "gq")
	if _, stderr, code := runCmd(t, "generate", model, y, c1, c2, "--output", out); code != 0 {
		t.Fatal(stderr)
	}
	before := map[string][]byte{}
	for _, name := range []string{"g-gq-1.csv", "g-gq-2.csv"} {
		before[name], _ = os.ReadFile(filepath.Join(out, name))
	}
	nan := writeFile(t, dir, "g-3.csv", "# id = 3\n# random\n#   seed = 2\nlp__,mu,sigma\n-1,0.5,1\n-1,nan,1\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{model, y, filepath.Join(out, "g-gq-1.csv"), "--output", out}, "the file " + filepath.Join(out, "g-gq-1.csv") + " is the input"},
		{[]string{model, y, c1, c1, "--output", filepath.Join(dir, "o2")}, c1 + " and " + c1 + " would both give"},
		{[]string{model, other, c1, "--output", filepath.Join(dir, "o3")}, c1 + " is of other data files than these"},
		{[]string{model, y, c2, nan, "--output", out}, nan + ": draw 2: mu is NaN"},
	} {
		_, stderr, code := runCmd(t, append([]string{"generate"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, code, stderr, c.want)
		}
	}
	for name, b := range before {
		if now, _ := os.ReadFile(filepath.Join(out, name)); string(now) != string(b) {
			t.Errorf("%s changed by the failed runs", name)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(out, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
