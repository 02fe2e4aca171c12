package calibrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/optimize"
)

// Replicate names a generated quantity whose draws replace a data
// variable: the known-truth datasets are the model's generated quantities
// at the truth (y = y_rep).
type Replicate struct{ Data, Generated string }

// Simulate writes n datasets drawn by the model's generated quantities at
// the plan's truth: dataset i replaces each reps[k].Data by a draw of
// reps[k].Generated, from a random stream that depends only on the seed
// and i. Each replicate must replace a data variable with its sizes
// (CheckReplicates).
func Simulate(dir Dir, bm *runtime.Model, truth map[string]float64, reps []Replicate, n int, seed uint64) error {
	return simulate(bm, truth, reps, n, seed, func(i int, values []*data.Value) error {
		return dir.StoreDataset(i, values)
	})
}

// CheckReplicates returns an error unless each replicate names a data
// variable of the model and a generated quantity of the same sizes at the
// truth (checked on the first dataset's draw): a name that is not data
// would leave the observed values in every dataset, and other sizes would
// change the sizes inferred from it (N). It writes nothing.
func CheckReplicates(bm *runtime.Model, truth map[string]float64, reps []Replicate, seed uint64) error {
	return simulate(bm, truth, reps, 1, seed, func(int, []*data.Value) error { return nil })
}

// simulate draws the datasets of Simulate and passes each to use.
func simulate(bm *runtime.Model, truth map[string]float64, reps []Replicate, n int, seed uint64, use func(int, []*data.Value) error) error {
	theta, err := bm.UnconstrainColumns(truth)
	if err != nil {
		return fmt.Errorf("truth: %w", err)
	}
	observed := make([]*data.Value, len(reps))
	for k, r := range reps {
		if observed[k], err = bm.DataValue(r.Data); err != nil {
			return fmt.Errorf("--replicate %s=%s: %w", r.Data, r.Generated, err)
		}
	}
	d, err := bm.NewDensity()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		row, err := d.Draw(nil, theta, rand.New(rand.NewPCG(seed, 0x5eed0000+uint64(i))))
		if err != nil {
			return fmt.Errorf("dataset %d: generated quantities: %w", i+1, err)
		}
		var values []*data.Value
		for k, r := range reps {
			v, err := bm.OutputValue(row, r.Generated)
			if err != nil {
				return fmt.Errorf("--replicate %s=%s: %w", r.Data, r.Generated, err)
			}
			if !slices.Equal(v.Dims, observed[k].Dims) {
				return fmt.Errorf("--replicate %s=%s: %s has sizes %v, the data %s %v", r.Data, r.Generated, r.Generated, v.Dims, r.Data, observed[k].Dims)
			}
			v.Name = r.Data
			values = append(values, v)
		}
		if err := use(i, values); err != nil {
			return err
		}
	}
	return nil
}

// Bootstrap writes n nonparametric bootstrap datasets: the rows of the
// named data values (their first index, which all must share) resampled
// with replacement, from a random stream that depends only on the seed
// and the dataset's index.
func Bootstrap(dir Dir, set *data.Set, names []string, n int, seed uint64) error {
	var values []*data.Value
	rows := -1
	for _, name := range names {
		v, ok := set.Lookup(name)
		if !ok {
			return fmt.Errorf("--resample: no data value %s", name)
		}
		if len(v.Dims) == 0 {
			return fmt.Errorf("--resample: %s is a scalar: it has no rows", name)
		}
		if rows >= 0 && v.Dims[0] != rows {
			return fmt.Errorf("--resample: %s has %d rows, %s %d", name, v.Dims[0], names[0], rows)
		}
		rows = v.Dims[0]
		values = append(values, v)
	}
	if rows <= 0 {
		return fmt.Errorf("--resample: no rows to resample")
	}
	for i := 0; i < n; i++ {
		rng := rand.New(rand.NewPCG(seed, 0xb0000000+uint64(i)))
		pick := make([]int, rows)
		for r := range pick {
			pick[r] = rng.IntN(rows)
		}
		out := make([]*data.Value, len(values))
		for k, v := range values {
			width := len(v.Data) / rows
			w := &data.Value{Name: v.Name, Dims: v.Dims, IsInt: v.IsInt, Data: make([]float64, 0, len(v.Data))}
			for _, r := range pick {
				w.Data = append(w.Data, v.Data[r*width:(r+1)*width]...)
			}
			out[k] = w
		}
		if err := dir.StoreDataset(i, out); err != nil {
			return err
		}
	}
	return nil
}

// Estimate returns the paper's estimate for a bootstrap calibration: the
// draw of a posterior run (at the default loss scale, on the data as
// given) with the highest log density without Jacobian, by parameter
// column, and the run's draws (whose adaptation is a pilot for the
// calibration's runs: Dir.WritePilot). The run reports to opts' hooks;
// opts.Warm is ignored. With p.EstimateBy EstimateOptimize the estimate is
// the mode instead (the paper's "approximate MAP"), and there is no run.
func (p *Plan) Estimate(ctx context.Context, bm *runtime.Model, opts SampleOptions) (map[string]float64, *Posterior, error) {
	if p.EstimateBy == EstimateOptimize {
		est, err := p.mode(ctx, bm)
		return est, nil, err
	}
	opts.Warm = nil
	post, err := p.Sample(ctx, bm, p.Seed, opts)
	if err != nil {
		return nil, nil, err
	}
	lp, err := LogDensities(bm, post.Theta...)
	if err != nil {
		return nil, nil, err
	}
	best := 0
	for i, x := range lp {
		if x > lp[best] {
			best = i
		}
	}
	est := map[string]float64{}
	j := 0
	for _, e := range bm.Layout.Entries {
		for _, c := range e.Columns {
			est[c] = post.Params[best][j]
			j++
		}
	}
	return est, post, nil
}

// EstimateOptimize is Plan.EstimateBy for the mode as the estimate.
const EstimateOptimize = "optimize"

// mode returns the posterior mode of bm (without the Jacobian: the MAP)
// by parameter column, found by L-BFGS with Stan's defaults from the
// random initial point of the plan's seed.
func (p *Plan) mode(ctx context.Context, bm *runtime.Model) (map[string]float64, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return nil, err
	}
	d.Jacobian = false
	init, err := bm.Unconstrain(&data.Set{}, rand.New(rand.NewPCG(p.Seed, 1)), 2)
	if err != nil {
		return nil, err
	}
	res, err := optimize.Maximize(ctx, d, init, optimize.DefaultOptions())
	if err != nil {
		return nil, fmt.Errorf("the mode: %w", err)
	}
	row, err := d.Draw(nil, res.X, rand.New(rand.NewPCG(p.Seed, 2)))
	if err != nil {
		return nil, err
	}
	return bm.ParamValues(row), nil
}

// A dataset's digest is recorded beside it when it is written, in
// DatasetDigestPath (sha256sum's format: the hash, two spaces, the file's
// name), and every file derived from the dataset records it too: a
// task's result and a run's draws. A dataset read back is checked
// against its record, and a result or draws file against the dataset's
// record, by contents, so that a dataset edited after its runs, or a
// result or draws file of another dataset, is refused rather than mixed
// into the calibration.

// DatasetDigestPath is the file that records the digest of dataset i.
func (d Dir) DatasetDigestPath(i int) string { return d.DatasetPath(i) + ".sha256" }

// sha256Hex is the SHA-256 of b in hexadecimal.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// StoreDataset writes dataset i, then the record of its digest, unless
// both are there already (a dataset depends only on the plan, so that a
// rerun draws the same one; CheckDatasets checks those that are there).
// A dataset whose record is missing (its write was interrupted) is
// written again; one whose record is there but whose file is missing is
// written again, for CheckDatasets to check against the record.
func (d Dir) StoreDataset(i int, values []*data.Value) error {
	_, errData := os.Stat(d.DatasetPath(i))
	_, errDigest := os.Stat(d.DatasetDigestPath(i))
	if errData == nil && errDigest == nil {
		return nil
	}
	b := encodeDataset(values)
	if err := writeAtomic(d.DatasetPath(i), b); err != nil {
		return err
	}
	if errDigest == nil {
		return nil
	}
	return writeAtomic(d.DatasetDigestPath(i), []byte(sha256Hex(b)+"  "+filepath.Base(d.DatasetPath(i))+"\n"))
}

// DatasetsStored reports whether each of n datasets and the record of its
// digest are in the folder.
func (d Dir) DatasetsStored(n int) bool {
	for i := range n {
		for _, path := range []string{d.DatasetPath(i), d.DatasetDigestPath(i)} {
			if _, err := os.Stat(path); err != nil {
				return false
			}
		}
	}
	return true
}

// DatasetDigest returns the recorded digest of dataset i: an error when
// there is no record, or one that is not the record of this dataset.
func (d Dir) DatasetDigest(i int) (string, error) {
	path := d.DatasetDigestPath(i)
	b, err := data.ReadAll(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s has no record of its digest (%s): the folder was started by an earlier version of shm, which did not record its datasets' digests, or its datasets are not all written; start a new --dir for this calibration",
			d.DatasetPath(i), path)
	}
	if err != nil {
		return "", err
	}
	fields := strings.Fields(string(b))
	name := filepath.Base(d.DatasetPath(i))
	switch {
	case len(fields) != 2 || !isSHA256(fields[0]):
		return "", fmt.Errorf("%s: not the record of a digest (want the SHA-256 and the name %s)", path, name)
	case fields[1] != name:
		return "", fmt.Errorf("%s records the digest of %s, not of %s", path, fields[1], name)
	}
	return fields[0], nil
}

// isSHA256 reports whether s is a SHA-256 in lowercase hexadecimal.
func isSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readDatasetFile returns the values of dataset i and its digest,
// checked against the record written with it.
func (d Dir) readDatasetFile(i int) ([]*data.Value, string, error) {
	b, digest, err := d.checkedDataset(i)
	if err != nil {
		return nil, "", err
	}
	values, err := data.ReadJSON(d.DatasetPath(i), bytes.NewReader(b))
	if err != nil {
		return nil, "", err
	}
	return values, digest, nil
}

// checkedDataset returns the contents of dataset i's file and its digest,
// an error unless it is the digest recorded when the file was written.
func (d Dir) checkedDataset(i int) ([]byte, string, error) {
	want, err := d.DatasetDigest(i)
	if err != nil {
		return nil, "", err
	}
	path := d.DatasetPath(i)
	b, err := data.ReadAll(path)
	if err != nil {
		return nil, "", err
	}
	if got := sha256Hex(b); got != want {
		return nil, "", fmt.Errorf("%s was edited since the calibration wrote it: its contents (sha256 %s…) are not those recorded in %s (sha256 %s…), on which its runs were made; restore it, or start a new --dir",
			path, short(got), filepath.Base(d.DatasetDigestPath(i)), short(want))
	}
	return b, want, nil
}

// CheckDatasets checks each of the plan's datasets against the record
// of its digest: a calibration resumed on a dataset edited since its
// runs, whose results would mix two datasets, is refused.
func (d Dir) CheckDatasets(p *Plan) error {
	for i := range p.Datasets {
		if _, _, err := d.checkedDataset(i); err != nil {
			return err
		}
	}
	return nil
}
