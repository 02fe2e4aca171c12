package calibrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shmlang/shm/runtime/data"
)

// Plan is everything a task needs, written once to the calibration's
// folder (plan.json) so that a task can run in another process (a Slurm
// array task) and a rerun can check that it resumes the same calibration.
type Plan struct {
	Model string   `json:"model"` // absolute path of the .shm file
	Data  []string `json:"data"`  // absolute paths of the data files
	Sets  []string `json:"sets"`  // --set name=value arguments
	// Param is the data variable that holds the loss scale.
	Param string `json:"param"`
	// Truth holds the point whose coverage is measured, by parameter
	// output column (c0, kappa, beta.2, ...): the known truth, or the
	// estimate of a bootstrap calibration. DatasetTruth, when set, gives
	// each dataset its own truth instead (datasets given as files, each
	// with its truth: Experiment D's images).
	Truth        map[string]float64   `json:"truth,omitempty"`
	DatasetTruth []map[string]float64 `json:"dataset_truth,omitempty"`
	// Hold gives transformed data variables the values they have on the
	// data as given, in every task (runtime.Options.Hold): the loss's
	// settings stay those of the data, whatever the dataset (eps from the
	// resolution of y, which a bootstrap resample's duplicates would make
	// 0).
	Hold []HeldValue `json:"hold,omitempty"`
	// Datasets is the number of datasets, files datasets/dNNN.json of the
	// folder whose values replace the data of the same names.
	Datasets int     `json:"datasets"`
	Level    float64 `json:"level"` // credibility of the regions (0.9)
	Chains   int     `json:"chains"`
	Warmup   int     `json:"warmup"`
	Samples  int     `json:"samples"`
	MaxDepth int     `json:"max_depth"`
	Delta    float64 `json:"adapt_delta"`
	// Metric is the sampler's metric: "diag" (the default when empty) or
	// "dense".
	Metric string `json:"metric,omitempty"`
	// EstimateBy is how a bootstrap calibration estimates the truth:
	// empty for the draw of highest density of a run (Plan.Estimate),
	// EstimateOptimize for the mode.
	EstimateBy string `json:"estimate,omitempty"`
	// Lambda0 is the loss scale at which a bootstrap calibration
	// estimates the truth (0 for a known truth).
	Lambda0 float64 `json:"lambda0,omitempty"`
	Seed    uint64  `json:"seed"`
	// Reuse, when set, lets the calibration reuse its runs (reweighting
	// and warm starts); nil is --exact: every task a run from nothing.
	Reuse *Reuse `json:"reuse,omitempty"`
	// Files are the contents (hashes) of the model and data files when
	// the calibration started: a rerun or an array task on files edited
	// since is refused, not resumed with the old results.
	Files []FileHash `json:"files,omitempty"`
}

// FileHash is the SHA-256 of a file's contents.
type FileHash struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// HashFiles returns the hashes of the files' contents. A file (or a
// device, a pipe) larger than a data file may be (data.Open) is refused,
// as reading it as data would be.
func HashFiles(paths ...string) ([]FileHash, error) {
	var out []FileHash
	for _, p := range paths {
		f, err := data.Open(p)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, FileHash{Path: p, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return out, nil
}

// CheckFiles reports a model or data file of the plan whose contents
// differ from those the calibration started with.
func (p *Plan) CheckFiles() error {
	for _, f := range p.Files {
		now, err := HashFiles(f.Path)
		if err != nil {
			return fmt.Errorf("a file of the calibration: %w", err)
		}
		if now[0].SHA256 != f.SHA256 {
			return fmt.Errorf("%s was edited since the calibration started (its contents differ from the plan's): its results would mix two versions; use another --dir, or remove it", f.Path)
		}
	}
	return nil
}

// HeldValue is a transformed data variable's value.
type HeldValue struct {
	Name  string    `json:"name"`
	Dims  []int     `json:"dims,omitempty"`
	Data  []float64 `json:"data"`
	IsInt bool      `json:"int,omitempty"`
}

// HeldValues returns the held values as runtime.Options.Hold takes them.
func (p *Plan) HeldValues() map[string]*data.Value {
	if len(p.Hold) == 0 {
		return nil
	}
	m := map[string]*data.Value{}
	for _, h := range p.Hold {
		m[h.Name] = &data.Value{Name: h.Name, Dims: h.Dims, Data: h.Data, IsInt: h.IsInt}
	}
	return m
}

// Task is one posterior run: a loss scale and a dataset.
type Task struct {
	Lambda  float64 `json:"lambda"`
	Dataset int     `json:"dataset"`
}

// Dir is a calibration's folder: plan.json, datasets/, results/.
type Dir string

func (d Dir) path(parts ...string) string {
	return filepath.Join(append([]string{string(d)}, parts...)...)
}

// DatasetPath is the file of dataset i (0-based).
func (d Dir) DatasetPath(i int) string { return d.path("datasets", fmt.Sprintf("d%03d.json", i)) }

// lambdaText is a loss scale as it names folders: the shortest text that
// reads back as the same float64.
func lambdaText(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ResultPath is the file of a task's result.
func (d Dir) ResultPath(t Task) string {
	return d.path("results", "lambda="+lambdaText(t.Lambda), fmt.Sprintf("d%03d.json", t.Dataset))
}

// WritePlan writes p as the folder's plan, or checks that the plan already
// there is the same: a folder holds one calibration.
func (d Dir) WritePlan(p *Plan) error { return d.writePlan(p, true) }

// CheckPlan is WritePlan without writing: an error unless the folder
// holds p's calibration (a plan that hashes fewer of p's input files, an
// earlier version's, is p's).
func (d Dir) CheckPlan(p *Plan) error {
	if _, err := os.Stat(d.path("plan.json")); err != nil {
		return err
	}
	return d.writePlan(p, false)
}

func (d Dir) writePlan(p *Plan, write bool) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	old, err := data.ReadAll(d.path("plan.json"))
	switch {
	case err == nil && !bytes.Equal(old, b):
		var was Plan
		if json.Unmarshal(old, &was) == nil {
			if err := was.CheckFiles(); err != nil && was.Model == p.Model && slices.Equal(was.Data, p.Data) {
				return fmt.Errorf("%s: %w", d, err)
			}
			if fewerHashes(&was, p) {
				// An earlier version hashed fewer input files (the model
				// and data only): the same calibration, whose plan now
				// records every input file.
				if !write {
					return nil
				}
				return writeAtomic(d.path("plan.json"), b)
			}
		}
		return fmt.Errorf("%s holds a calibration with other settings (its plan.json differs): use another --dir, or remove it", d)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return writeAtomic(d.path("plan.json"), b)
}

// fewerHashes reports whether plan was differs from p only in hashing
// fewer of p's input files (the same contents for those it hashes).
func fewerHashes(was, p *Plan) bool {
	if len(was.Files) >= len(p.Files) {
		return false
	}
	for _, f := range was.Files {
		if !slices.Contains(p.Files, f) {
			return false
		}
	}
	upgraded := *was
	upgraded.Files = p.Files
	a, errA := json.Marshal(&upgraded)
	b, errB := json.Marshal(p)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// ReadPlan reads the folder's plan.
func (d Dir) ReadPlan() (*Plan, error) {
	b, err := data.ReadAll(d.path("plan.json"))
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", d.path("plan.json"), err)
	}
	return &p, nil
}

// DrawsPath is the file of a run's draws (beside its result).
func (d Dir) DrawsPath(t Task) string {
	return d.path("results", "lambda="+lambdaText(t.Lambda), fmt.Sprintf("d%03d.draws", t.Dataset))
}

// PilotPath is the file of the pilot run's adaptation: the run that
// estimated the truth of a bootstrap calibration.
func (d Dir) PilotPath() string { return d.path("pilot.json") }

// WriteResult stores a task's result (through a temporary file renamed
// when complete: a killed task leaves no result), after the run's draws
// when it kept them, whose digest the result records.
func (d Dir) WriteResult(r *Result) error {
	if r.draws != nil {
		b, err := encodeDraws(r.Task, r.draws)
		if err != nil {
			return err
		}
		if err := writeAtomic(d.DrawsPath(r.Task), b); err != nil {
			return err
		}
		r.DrawsSHA256 = sha256Hex(b)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(d.ResultPath(r.Task), append(b, '\n'))
}

// ReadResult returns a task's result, or nil when the task has not
// finished. A file that is not a finished result of this task of plan p
// (another task's, missing fields, values that contradict each other or
// the plan) is an error.
func (d Dir) ReadResult(t Task, p *Plan) (*Result, error) {
	b, err := data.ReadAll(d.ResultPath(t))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	err = checkResultFields(b)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err == nil {
		err = r.check(t, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w (remove it to run the task again)", d.ResultPath(t), err)
	}
	if p != nil {
		if err := d.checkResultDataset(&r); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// checkResultDataset reports a result whose dataset is not the folder's
// dataset of its task: its digest differs from the dataset's record.
func (d Dir) checkResultDataset(r *Result) error {
	if r.DatasetSHA256 == "" {
		return fmt.Errorf("%s was written by an earlier version of shm, which did not record the digest of its dataset: it cannot be checked against %s; start a new --dir for this calibration (or remove the file to run the task again)",
			d.ResultPath(r.Task), d.DatasetPath(r.Dataset))
	}
	want, err := d.DatasetDigest(r.Dataset)
	if err != nil {
		return err
	}
	if r.DatasetSHA256 != want {
		return fmt.Errorf("%s is the result of a run on another dataset (sha256 %s…) than %s (sha256 %s…): remove it to run the task again",
			d.ResultPath(r.Task), short(r.DatasetSHA256), d.DatasetPath(r.Dataset), short(want))
	}
	return nil
}

// resultRequired are the fields every result file has.
var resultRequired = []string{"lambda", "dataset", "seed", "hpd_truth", "hpd_threshold", "hpd_covered",
	"ellipse_dist2", "ellipse_radius2", "ellipse_covered", "columns", "mean", "sd", "draws"}

// checkResultFields reports a result file that is not a JSON object with
// every required field.
func checkResultFields(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("not a result: %w", err)
	}
	for _, name := range resultRequired {
		if v, ok := fields[name]; !ok || string(v) == "null" {
			return fmt.Errorf("not a finished result: no %s (empty or truncated?)", name)
		}
	}
	return nil
}

// check reports a result that is not task t's of plan p (nil: not
// checked against a plan), or whose values contradict each other.
func (r *Result) check(t Task, p *Plan) error {
	switch {
	case r.Lambda != t.Lambda || r.Dataset != t.Dataset:
		return fmt.Errorf("holds the result of lambda %s, dataset %d, not of lambda %s, dataset %d",
			lambdaText(r.Lambda), r.Dataset+1, lambdaText(t.Lambda), t.Dataset+1)
	case r.Draws < 1:
		return errors.New("not a finished result: no draws")
	case r.Source != "" && r.Source != SourceRun && r.Source != SourceWarm && r.Source != SourceReweighted:
		return fmt.Errorf("unknown source %q", r.Source)
	case r.Source == SourceReweighted && !(r.FromLambda > 0 && r.FromLambda != r.Lambda):
		return fmt.Errorf("a reweighted result from lambda %s", lambdaText(r.FromLambda))
	case r.Source != SourceReweighted && r.FromLambda != 0:
		return fmt.Errorf("a run (source %q) that says it was reweighted from lambda %s", r.Source, lambdaText(r.FromLambda))
	case len(r.Columns) == 0:
		return errors.New("no parameter columns")
	case len(r.Mean) != len(r.Columns) || len(r.SD) != len(r.Columns):
		return fmt.Errorf("%d columns with %d means and %d standard deviations", len(r.Columns), len(r.Mean), len(r.SD))
	case r.HPDCovered != (r.HPDTruth >= r.HPDThreshold):
		return errors.New("its HPD coverage contradicts its threshold")
	case r.EllipseCovered != (r.EllipseDist2 <= r.EllipseRadius2):
		return errors.New("its ellipse coverage contradicts its distance")
	}
	for j, c := range r.Columns {
		if math.IsNaN(r.Mean[j]) || math.IsInf(r.Mean[j], 0) || !(r.SD[j] >= 0) || math.IsInf(r.SD[j], 1) {
			return fmt.Errorf("column %s has mean %g and sd %g", c, r.Mean[j], r.SD[j])
		}
	}
	if p == nil {
		return nil
	}
	switch want := p.taskSeed(t.Dataset); {
	case r.Seed != want:
		return fmt.Errorf("seed %d, the plan's task has %d", r.Seed, want)
	case r.Draws != p.Chains*p.Samples:
		return fmt.Errorf("%d draws, the plan's runs have %d (%d chains × %d)", r.Draws, p.Chains*p.Samples, p.Chains, p.Samples)
	case r.Source == SourceRun && r.Warmup != 0 && r.Warmup != p.Warmup:
		return fmt.Errorf("%d warmup iterations, the plan's runs have %d", r.Warmup, p.Warmup)
	case r.Source == SourceWarm && (p.Reuse == nil || r.Warmup != p.Reuse.WarmWarmup):
		return fmt.Errorf("a warm-started run of %d warmup iterations, which the plan does not make", r.Warmup)
	}
	truth := p.Truth
	if p.DatasetTruth != nil && t.Dataset < len(p.DatasetTruth) {
		truth = p.DatasetTruth[t.Dataset]
	}
	for name := range truth {
		if !slices.Contains(r.Columns, name) {
			return fmt.Errorf("no column %s of the truth (columns %s)", name, strings.Join(r.Columns, ", "))
		}
	}
	return nil
}

// writeAtomic writes b to path through a temporary file in its folder.
// staleTemp matches the names of the temporary files the calibration's
// writes make: writeAtomic's ".d003.json.tmp123" (of .json, .csv and
// .draws files) and writeCSV's ".csv.tmp123".
var staleTemp = regexp.MustCompile(`^\.([A-Za-z0-9_=.-]+\.(json|csv|draws|sha256))?\.?(csv\.)?tmp[0-9]+$`)

// RemoveStaleTemps removes the temporary files of writes (writeAtomic's
// ".NAME.tmp…") in the folder that were last modified more than age ago:
// those a killed run left behind. A live write's temporary file lives for
// milliseconds, so that a calibration starting beside running array tasks
// leaves theirs alone.
func (d Dir) RemoveStaleTemps(age time.Duration) error {
	cutoff := time.Now().Add(-age)
	return filepath.WalkDir(string(d), func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() || !staleTemp.MatchString(e.Name()) {
			return nil
		}
		info, err := e.Info()
		if err != nil || info.ModTime().After(cutoff) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// WriteDataset writes values as a CmdStan JSON data file (nested arrays
// for values with sizes).
func WriteDataset(path string, values []*data.Value) error {
	return writeAtomic(path, encodeDataset(values))
}

// encodeDataset returns the CmdStan JSON data file of values.
func encodeDataset(values []*data.Value) []byte {
	var b strings.Builder
	b.WriteString("{\n")
	for i, v := range values {
		fmt.Fprintf(&b, "  %q: ", v.Name)
		writeNested(&b, v.Data, v.Dims, v.IsInt)
		if i < len(values)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

func writeNested(b *strings.Builder, x []float64, dims []int, isInt bool) {
	if len(dims) == 0 {
		if isInt {
			b.WriteString(strconv.FormatInt(int64(x[0]), 10))
		} else {
			b.WriteString(strconv.FormatFloat(x[0], 'g', -1, 64))
		}
		return
	}
	inner := 1
	for _, d := range dims[1:] {
		inner *= d
	}
	b.WriteString("[")
	for i := 0; i < dims[0]; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		writeNested(b, x[i*inner:(i+1)*inner], dims[1:], isInt)
	}
	b.WriteString("]")
}
