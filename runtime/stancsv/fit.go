package stancsv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shmlang/shm/runtime/diag"
)

// ToFit gathers the post-warmup draws of several files of one model (one
// chain each) for the diagnostics of package diag. All files must have the
// same columns and model, and each must hold the draws its header declares
// (a file cut short is refused). Chains of different posteriors (their
// headers' model text, data contents, --set values, or, where the
// posterior depends on the seed, transformed data drawn with _rng or the
// noise of crn calls differ) are refused with a *MixedError; files whose
// runs differ otherwise (seed, data file names, sampler settings) are
// gathered with a warning in Fit.Warnings: chains of one posterior
// normally come from one run. A chain given twice is refused (see
// sameChain).
func ToFit(files []*File) (*diag.Fit, error) { return toFit(files, false) }

// ToMixedFit is ToFit for chains that may be of different posteriors,
// pooled on purpose: what ToFit refuses is a warning in Fit.Warnings.
func ToMixedFit(files []*File) (*diag.Fit, error) { return toFit(files, true) }

// MixedError is ToFit's refusal of files of different posteriors: File
// (1-based) differs from file 1 in the header's Key.
type MixedError struct {
	File       int
	Key        string
	Value      string // file File's
	FirstValue string // file 1's
}

func (e *MixedError) Error() string {
	differs, _ := posteriorKey(e.Key)
	return fmt.Sprintf("stancsv: file %d is of another posterior than file 1: %s = %s, and %s (%s): chains of one posterior come from one model text, data and --set values, and one seed where the posterior depends on it",
		e.File, e.Key, e.Value, e.FirstValue, differs)
}

// posteriorKeys are the header keys that make chains draws of different
// posteriors when they differ, with what each records. The last two are
// written only for models whose posterior depends on the seed: runs of
// other models with other seeds (chains run apart with --chain-id) are of
// one posterior.
var posteriorKeys = []struct{ key, differs string }{
	{"model_sha256", "the model's text differs"},
	{"data.sha256", "the data files' contents differ"},
	{"data.set", "the --set values differ"},
	{"data.transformed_sha256", "transformed data drawn with _rng from other seeds differ"},
	{"random.crn_seed", "the noise of crn(...) drawn from other seeds differs"},
}

// posteriorKey reports whether key is one of posteriorKeys, and what a
// difference in it means.
func posteriorKey(key string) (differs string, ok bool) {
	for _, k := range posteriorKeys {
		if k.key == key {
			return k.differs, true
		}
	}
	return "", false
}

// Posterior returns what the header says of the posterior the chain draws
// from beyond the model's name: "key = value" for each of the model's
// text digest, the data's digest and the --set values it records. Chains
// with other values are of other posteriors.
func (f *File) Posterior() []string {
	var out []string
	for _, k := range posteriorKeys {
		if v, ok := f.Config[k.key]; ok {
			out = append(out, k.key+" = "+v)
		}
	}
	return out
}

func toFit(files []*File, mixed bool) (*diag.Fit, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("stancsv: no files")
	}
	fit := &diag.Fit{Model: files[0].Config["model"], Columns: files[0].Columns}
	for i, f := range files {
		if !slices.Equal(f.Columns, fit.Columns) {
			return nil, fmt.Errorf("stancsv: file %d has columns different from file 1", i+1)
		}
		if m, first := f.Method(), files[0].Method(); m != first {
			return nil, fmt.Errorf("stancsv: file %d is the output of %s, file 1 of %s: their draws are not of one kind", i+1, m, first)
		}
		if m := f.Config["model"]; m != fit.Model {
			return nil, fmt.Errorf("stancsv: file %d is from model %q, file 1 from %q", i+1, m, fit.Model)
		}
		if err := f.complete(); err != nil {
			return nil, fmt.Errorf("stancsv: file %d: %w", i+1, err)
		}
		for j := range i {
			if sameDraws(files[j], f) {
				return nil, fmt.Errorf("stancsv: file %d is the chain of file %d again (the same draws; chain id %s and %s, seed %s and %s): give each chain once", i+1, j+1, f.Config["id"], files[j].Config["id"], f.Config["random.seed"], files[j].Config["random.seed"])
			}
			if sameOtherRun(files[j], f) {
				return nil, fmt.Errorf("stancsv: file %d is the output of file %d again (the same %s run of the same model, data and seed; the files differ at most in how many draws were written and their digits): give each run once", i+1, j+1, f.Method())
			}
			if sameRun(files[j], f) {
				return nil, fmt.Errorf("stancsv: file %d is the chain of file %d again (the same model, data, seed %s, chain id %s and sampler settings; the files differ at most in how the draws were written: %s): give each chain once",
					i+1, j+1, f.Config["random.seed"], f.Config["id"], strings.Join(writtenKeys, ", "))
			}
		}
		if i > 0 {
			for _, key := range runKeys {
				a, okA := files[0].Config[key]
				b, okB := f.Config[key]
				if !okA || !okB || a == b {
					continue
				}
				if _, ok := posteriorKey(key); ok && !mixed {
					return nil, &MixedError{File: i + 1, Key: key, Value: b, FirstValue: a}
				}
				fit.Warnings = append(fit.Warnings, fmt.Sprintf("file %d is from another run than file 1: %s = %s, and %s", i+1, key, b, a))
			}
		}
		nw, _ := f.Int("num_warmup")
		thin, _ := f.Int("thin")
		depth, _ := f.Int("max_depth")
		fit.Chains = append(fit.Chains, diag.Chain{
			Draws:           f.SamplingDraws(),
			WarmupDraws:     f.Draws[:f.NumWarmupRows],
			NumWarmup:       nw,
			Thin:            thin,
			MaxDepth:        depth,
			WarmupSeconds:   f.WarmupSeconds,
			SamplingSeconds: f.SamplingSeconds,
		})
	}
	return fit, nil
}

// Method returns the method that wrote the file (the header's method:
// sample, optimize, laplace, pathfinder, ...), "sample" when it does not
// say.
func (f *File) Method() string {
	m, _, _ := strings.Cut(f.Config["method"], " ")
	if m == "" {
		return "sample"
	}
	return m
}

// sameDraws reports whether a and b hold the same chain by their draws:
// the same draws (a file given twice, or a copy of it, whatever its
// header says).
func sameDraws(a, b *File) bool {
	if len(a.Draws) != len(b.Draws) || len(a.Draws) == 0 || constantDraws(a) {
		return false
	}
	for k := range a.Draws {
		if !slices.EqualFunc(a.Draws[k], b.Draws[k], sameValue) {
			return false
		}
	}
	return true
}

// constantDraws reports whether every column of f holds one value: the
// draws of a model without randomness (fixed_param, generated quantities
// computed from data), which every chain repeats, so that equal draws do
// not tell a chain given twice.
func constantDraws(f *File) bool {
	for _, row := range f.Draws[1:] {
		if !slices.EqualFunc(row, f.Draws[0], sameValue) {
			return false
		}
	}
	return true
}

// sameValue reports whether x and y are the same value as read: equal, or
// both NaN (a draw's generated quantity that is not a number).
func sameValue(x, y float64) bool { return x == y || x != x && y != y }

// chainKeys are the header keys that, with the model's name, determine a
// sampler's chain: its posterior, its seed and id, and the settings that
// change its draws. The data's digest stands for the data files' names
// where it is written (data.file is compared where it is not).
var chainKeys = []string{"model_sha256", "data.sha256", "data.set", "data.transformed_sha256", "random.crn_seed",
	"random.seed", "id", "init", "num_warmup",
	"engaged", "gamma", "delta", "kappa", "t0", "init_buffer", "term_buffer", "window",
	"algorithm", "engine", "max_depth", "metric", "metric_file", "stepsize", "stepsize_jitter"}

// writtenKeys are the sample settings that change how a chain's draws are
// written but not the chain: the digits, the thinning, the warmup draws
// kept, and the number of draws (a longer run of a chain repeats the
// draws of a shorter one, and goes on).
var writtenKeys = []string{"sig_figs", "thin", "save_warmup", "num_samples"}

// sameRun reports whether the headers of a and b say they hold the same
// chain of the sampler: they agree on every one of chainKeys (each
// present in both or in neither; the seed and the id in both), whatever
// their draws look like after rounding or thinning. Files of other
// methods are not compared.
func sameRun(a, b *File) bool {
	if a.Method() != "sample" || b.Method() != "sample" || a.Config["model"] != b.Config["model"] {
		return false
	}
	for _, key := range []string{"random.seed", "id"} {
		if a.Config[key] == "" || b.Config[key] == "" {
			return false
		}
	}
	keys := chainKeys
	if _, ok := a.Config["data.sha256"]; !ok {
		keys = append(slices.Clone(keys), "data.file")
	}
	for _, key := range keys {
		va, okA := a.Config[key]
		vb, okB := b.Config[key]
		if okA != okB || va != vb {
			return false
		}
	}
	return true
}

// sameOtherRun reports whether a and b are the output of one run of a
// method other than sample (laplace, pathfinder, generate_quantities,
// ...) written twice: their headers agree on every key but those that
// say how many draws were written, their digits, the output's name and
// the progress lines (a run of more draws repeats one of fewer, and goes
// on); for generate_quantities, the same input chain is the same chain
// whatever the seed of the generated quantities (its parameters are the
// input's).
func sameOtherRun(a, b *File) bool {
	m := a.Method()
	if m == "sample" || m != b.Method() || a.Config["model"] != b.Config["model"] {
		return false
	}
	if m == "generate_quantities" && a.Config["fitted_params"] != "" && a.Config["fitted_params"] == b.Config["fitted_params"] && a.Config["id"] == b.Config["id"] {
		return true
	}
	for _, c := range [2]map[string]string{a.Config, b.Config} {
		for k := range c {
			if !writtenOtherKey(k) && a.Config[k] != b.Config[k] {
				return false
			}
		}
	}
	return true
}

// writtenOtherKey reports whether a header key of a method other than
// sample only says how its draws were written.
func writtenOtherKey(key string) bool {
	leaf := key[strings.LastIndex(key, ".")+1:]
	switch {
	case key == "output.file", key == "start_datetime":
		return true
	case strings.Contains(key, "."):
		return leaf == "draws" || leaf == "num_psis_draws" || leaf == "sig_figs" || leaf == "refresh"
	}
	return key == "draws" || key == "num_psis_draws" || key == "sig_figs" || key == "refresh"
}

// runKeys are the configuration keys that the chains of one run share.
var runKeys = []string{"model_sha256", "random.seed", "data.file", "data.set", "data.sha256", "data.transformed_sha256", "random.crn_seed",
	"num_samples", "num_warmup", "thin", "save_warmup", "max_depth", "delta", "metric", "algorithm"}

// complete checks that the file holds the draws its header declares:
// ceil(num_samples/thin) after warmup, and ceil(num_warmup/thin) warmup
// rows when save_warmup is set. Files without these keys are not checked.
func (f *File) complete() error {
	ns, ok1 := f.Int("num_samples")
	thin, ok2 := f.Int("thin")
	if !ok1 || !ok2 || thin < 1 {
		return nil
	}
	if got, want := len(f.SamplingDraws()), thinned(ns, thin); got != want {
		return fmt.Errorf("%d draws after warmup, but its header declares num_samples = %d, thin = %d (%d draws): the file is incomplete or was edited", got, ns, thin, want)
	}
	if sw, _ := f.Int("save_warmup"); sw == 1 {
		if nw, ok := f.Int("num_warmup"); ok {
			if want := thinned(nw, thin); f.NumWarmupRows != want {
				return fmt.Errorf("%d warmup draws, but its header declares num_warmup = %d, thin = %d (%d draws): the file is incomplete or was edited", f.NumWarmupRows, nw, thin, want)
			}
		}
	}
	return nil
}

// ReadFit reads one Stan CSV file per chain and gathers them with ToFit.
func ReadFit(paths ...string) (*diag.Fit, error) { return readFit(false, paths) }

// ReadMixedFit reads one Stan CSV file per chain and gathers them with
// ToMixedFit.
func ReadMixedFit(paths ...string) (*diag.Fit, error) { return readFit(true, paths) }

func readFit(mixed bool, paths []string) (*diag.Fit, error) {
	files, err := ReadFiles(paths...)
	if err != nil {
		return nil, err
	}
	fit, err := toFit(files, mixed)
	if err != nil {
		return nil, fmt.Errorf("%w (files %s)", err, strings.Join(paths, ", "))
	}
	return fit, nil
}
