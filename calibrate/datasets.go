package calibrate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
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
		return WriteDataset(dir.DatasetPath(i), values)
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
		if err := WriteDataset(dir.DatasetPath(i), out); err != nil {
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
// opts.Warm is ignored.
func (p *Plan) Estimate(ctx context.Context, bm *runtime.Model, opts SampleOptions) (map[string]float64, *Posterior, error) {
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
