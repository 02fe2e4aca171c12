package calibrate

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"
)

// Runner runs tasks; each writes its result into the calibration's folder.
type Runner interface {
	Run(ctx context.Context, tasks []Task) error
}

// Pool runs tasks on Workers goroutines of this process.
type Pool struct {
	Dir     Dir
	Plan    *Plan
	Bind    Binder
	Workers int
	Log     io.Writer // a line per finished task; nil for none
	// Monitor, when not nil, is called as each task starts, with the
	// task's label ("lambda 0.5, dataset 3"); the task's run reports to
	// the hooks it returns (Progress, Activity), and calls stop when it
	// ends.
	Monitor func(label string) (hooks SampleOptions, stop func())
}

// Run runs the tasks, at most p.Workers at once, in their order, and
// returns their errors joined. Finished tasks keep their results whatever
// happens to others.
func (p *Pool) Run(ctx context.Context, tasks []Task) error {
	workers := min(max(p.Workers, 1), len(tasks))
	// Runs side by side evaluate their crn replicates on the cores left
	// to each (one run alone: all of them).
	replicates := max(1, goruntime.GOMAXPROCS(0)/max(workers, 1))
	errs := make([]error, len(tasks))
	var mu sync.Mutex
	forEach(ctx, len(tasks), workers, func(i int) {
		t := tasks[i]
		var opts SampleOptions
		if p.Monitor != nil {
			var stop func()
			opts, stop = p.Monitor(fmt.Sprintf("lambda %s, dataset %d", lambdaText(t.Lambda), t.Dataset+1))
			defer stop()
		}
		opts.Warm, opts.Replicates, opts.MemoryShare = nil, replicates, workers
		r, err := RunTask(ctx, p.Dir, p.Plan, t, p.Bind, opts)
		if err == nil {
			err = p.Dir.WriteResult(r)
		}
		if err != nil {
			errs[i] = fmt.Errorf("lambda %s, dataset %d: %w", lambdaText(t.Lambda), t.Dataset+1, err)
			return
		}
		if p.Log != nil {
			mu.Lock()
			fmt.Fprintf(p.Log, "lambda %s, dataset %d: %s in %.1f s\n", lambdaText(t.Lambda), t.Dataset+1, coveredText(r), r.Seconds)
			mu.Unlock()
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// forEach calls f(i) for i = 0 … n−1 in order on the given number of
// goroutines, and returns when every call has returned; once ctx is done
// it starts no more.
func forEach(ctx context.Context, n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

func coveredText(r *Result) string {
	return fmt.Sprintf("hpd %s, ellipse %s", yesNo(r.HPDCovered), yesNo(r.EllipseCovered))
}

func yesNo(b bool) string {
	if b {
		return "covered"
	}
	return "not covered"
}

// Collector is a Runner for --collect: it runs nothing and reports the
// tasks that have no result.
type Collector struct{}

// Run returns an error naming the missing tasks.
func (Collector) Run(_ context.Context, tasks []Task) error {
	return fmt.Errorf("%d task(s) have no result yet (the first: lambda %s, dataset %d)", len(tasks), lambdaText(tasks[0].Lambda), tasks[0].Dataset+1)
}

// Calibration searches the loss scale of one plan.
type Calibration struct {
	Dir    Dir
	Plan   *Plan
	Search *Search
	Region string // "hpd" or "ellipse"
	Runner Runner
	Log    io.Writer // progress; nil for none
	// Bind and Workers serve the reweighting of runs (Plan.Reuse), which
	// the calibration does itself, on Workers goroutines.
	Bind    Binder
	Workers int
}

// Outcome is the result of a calibration.
type Outcome struct {
	Lambda  float64 // lambda*
	Evals   []Eval
	Seconds map[float64]float64 // summed run time per lambda
	// Reweighted counts the datasets decided by reweighting, per lambda.
	Reweighted map[float64]int
	Results    []*Result
}

// Run evaluates the loss scales the search asks for, running the tasks
// that have no result yet, and returns lambda* with every evaluation.
// With Plan.Reuse, the scales of one step are evaluated one at a time,
// from the lowest, so that each can reweight the runs of the scales
// before it.
func (c *Calibration) Run(ctx context.Context) (*Outcome, error) {
	out := &Outcome{Seconds: map[float64]float64{}, Reweighted: map[float64]int{}}
	for {
		lambdas := c.Search.Next()
		if len(lambdas) == 0 {
			break
		}
		rounds := [][]float64{lambdas}
		if c.Plan.Reuse != nil {
			rounds = nil
			for _, l := range slices.Sorted(slices.Values(lambdas)) {
				rounds = append(rounds, []float64{l})
			}
		}
		for _, round := range rounds {
			if err := c.runRound(ctx, round); err != nil {
				return nil, err
			}
		}
		for _, l := range lambdas {
			var cov Coverage
			for i := 0; i < c.Plan.Datasets; i++ {
				r, err := c.Dir.ReadResult(Task{Lambda: l, Dataset: i}, c.Plan)
				if err != nil {
					return nil, err
				}
				if r == nil {
					return nil, fmt.Errorf("lambda %s, dataset %d: no result after its run", lambdaText(l), i+1)
				}
				cov.Runs++
				if r.Covered(c.Region) {
					cov.Covered++
				}
				if !r.IsRun() {
					out.Reweighted[l]++
				}
				out.Seconds[l] += r.Seconds
				out.Results = append(out.Results, r)
			}
			c.Search.Record(l, cov)
			if c.Log != nil {
				fmt.Fprintf(c.Log, "lambda %s: coverage %.3f (s.e. %.3f, %d runs)\n", lambdaText(l), cov.Rate(), cov.SE(), cov.Runs)
			}
		}
	}
	out.Evals = c.Search.Evals()
	best, err := c.Search.Best()
	if err != nil {
		return out, err
	}
	out.Lambda = best
	return out, nil
}

// runRound decides the tasks of the given scales that have no result:
// with Plan.Reuse, by reweighting where the weights can be trusted, then
// by runs, the pilot first where the others' warm starts need it.
func (c *Calibration) runRound(ctx context.Context, lambdas []float64) error {
	var todo []Task
	for _, l := range lambdas {
		for i := 0; i < c.Plan.Datasets; i++ {
			t := Task{Lambda: l, Dataset: i}
			r, err := c.Dir.ReadResult(t, c.Plan)
			if err != nil {
				return err
			}
			if r == nil {
				todo = append(todo, t)
			}
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if _, collect := c.Runner.(Collector); c.Plan.Reuse != nil && !collect {
		var err error
		if todo, err = c.reweight(ctx, todo); err != nil {
			return err
		}
		if len(todo) == 0 {
			return nil
		}
		pilot, err := c.needsPilot(todo)
		if err != nil {
			return err
		}
		if pilot {
			if c.Log != nil {
				fmt.Fprintf(c.Log, "running the pilot: lambda %s, dataset 1 (the other datasets' runs start warm from it)\n", lambdaText(todo[0].Lambda))
			}
			if err := c.Runner.Run(ctx, todo[:1]); err != nil {
				return err
			}
			todo = todo[1:]
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if c.Log != nil {
		fmt.Fprintf(c.Log, "running %d task(s): lambda %s\n", len(todo), lambdaList(lambdas))
	}
	return c.Runner.Run(ctx, todo)
}

// needsPilot reports whether todo's first task must run alone before the
// others: the datasets share a truth, so that their runs can start warm
// from one of them, and no run is there yet to start from.
func (c *Calibration) needsPilot(todo []Task) (bool, error) {
	if c.Plan.DatasetTruth != nil || len(todo) < 2 || todo[0].Dataset != 0 {
		return false, nil
	}
	pilot, err := c.Dir.ReadPilot()
	if err != nil || pilot != nil {
		return false, err
	}
	runs, err := c.Dir.runsOf(0, c.Plan)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		if len(r.Chains) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// reweight decides the tasks it can by reweighting, on c.Workers
// goroutines, writes their results, and returns the others.
func (c *Calibration) reweight(ctx context.Context, todo []Task) ([]Task, error) {
	results := make([]*Result, len(todo))
	errs := make([]error, len(todo))
	forEach(ctx, len(todo), c.Workers, func(i int) {
		r, err := Reweight(ctx, c.Dir, c.Plan, todo[i], c.Bind)
		if err == nil && r != nil {
			err = c.Dir.WriteResult(r)
		}
		if err != nil {
			err = fmt.Errorf("lambda %s, dataset %d: reweighting: %w", lambdaText(todo[i].Lambda), todo[i].Dataset+1, err)
		}
		results[i], errs[i] = r, err
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var left []Task
	kMax, essMin, done := math.Inf(-1), math.Inf(1), 0
	for i, r := range results {
		if r == nil {
			left = append(left, todo[i])
			continue
		}
		done++
		kMax, essMin = max(kMax, r.ParetoK), min(essMin, r.ESS)
	}
	if c.Log != nil && done > 0 {
		fmt.Fprintf(c.Log, "lambda %s: %d of %d task(s) decided by reweighting runs at other scales (Pareto k at most %.2f, ESS at least %.0f); %d to run\n",
			lambdaList(uniqueLambdas(todo)), done, len(todo), kMax, essMin, len(left))
	}
	return left, nil
}

// uniqueLambdas returns the distinct loss scales of the tasks, in order.
func uniqueLambdas(tasks []Task) []float64 {
	var out []float64
	for _, t := range tasks {
		if !slices.Contains(out, t.Lambda) {
			out = append(out, t.Lambda)
		}
	}
	return out
}

func lambdaList(ls []float64) string {
	s := ""
	for i, l := range ls {
		if i > 0 {
			s += ", "
		}
		s += lambdaText(l)
	}
	return s
}

// WriteTable prints the coverage table and lambda*.
func (o *Outcome) WriteTable(w io.Writer, target float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "lambda\tcoverage\ts.e.\truns\treweighted\ttime (s)\t")
	for _, e := range o.Evals {
		fmt.Fprintf(tw, "%.6g\t%.3f\t%.3f\t%d\t%d\t%.1f\t\n", e.Lambda, e.Rate(), e.SE(), e.Runs, o.Reweighted[e.Lambda], o.Seconds[e.Lambda])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.Lambda > 0 {
		if _, err := fmt.Fprintf(w, "lambda* = %.6g (the highest evaluated loss scale with coverage >= %g)\n", o.Lambda, target); err != nil {
			return err
		}
		if !o.Bracketed(target) {
			_, err := fmt.Fprintf(w, "warning: lambda* is the highest scale evaluated, and every scale reaches the target: the target was not crossed, so lambda* is a lower bound (evaluate higher scales: a higher --lambdas grid, or a search with a larger --start or --max-temps)\n")
			return err
		}
	}
	return nil
}

// Bracketed reports whether a scale above lambda* was evaluated whose
// coverage falls below the target: whether the target was crossed.
func (o *Outcome) Bracketed(target float64) bool {
	for _, e := range o.Evals {
		if e.Lambda > o.Lambda && e.Rate() < target {
			return true
		}
	}
	return false
}

// WriteCSV writes the coverage table (coverage.csv) and every run's
// summary (runs.csv) into the folder.
func (o *Outcome) WriteCSV(dir Dir) error {
	cov := [][]string{{"lambda", "covered", "runs", "coverage", "se", "reweighted", "seconds"}}
	for _, e := range o.Evals {
		cov = append(cov, []string{lambdaText(e.Lambda), strconv.Itoa(e.Covered), strconv.Itoa(e.Runs),
			num(e.Rate()), num(e.SE()), strconv.Itoa(o.Reweighted[e.Lambda]), num(o.Seconds[e.Lambda])})
	}
	if err := writeCSV(dir.path("coverage.csv"), cov); err != nil {
		return err
	}
	if len(o.Results) == 0 {
		return nil
	}
	head := []string{"lambda", "dataset", "seed", "hpd_covered", "hpd_truth", "hpd_threshold",
		"ellipse_covered", "ellipse_dist2", "ellipse_radius2", "draws", "divergent",
		"source", "from_lambda", "pareto_k", "ess", "warmup", "warm_from", "redone", "redone_why", "seconds"}
	for _, c := range o.Results[0].Columns {
		head = append(head, "mean_"+c, "sd_"+c, "median_"+c, "rhat_"+c)
	}
	rows := [][]string{head}
	for _, r := range o.Results {
		row := []string{lambdaText(r.Lambda), strconv.Itoa(r.Dataset + 1), strconv.FormatUint(r.Seed, 10),
			strconv.FormatBool(r.HPDCovered), num(r.HPDTruth), num(r.HPDThreshold),
			strconv.FormatBool(r.EllipseCovered), num(r.EllipseDist2), num(r.EllipseRadius2),
			strconv.Itoa(r.Draws), strconv.Itoa(r.Divergent)}
		source, from, k, warmFrom := r.Source, "", "", ""
		if source == "" {
			source = SourceRun
		}
		if r.Source == SourceReweighted {
			from, k = lambdaText(r.FromLambda), num(r.ParetoK)
		}
		switch {
		case r.WarmFrom != nil && r.WarmFrom.Dataset < 0:
			warmFrom = "pilot"
		case r.WarmFrom != nil:
			warmFrom = fmt.Sprintf("lambda %s, dataset %d", lambdaText(r.WarmFrom.Lambda), r.WarmFrom.Dataset+1)
		}
		row = append(row, source, from, k, num(r.ESS), strconv.Itoa(r.Warmup), warmFrom, strconv.FormatBool(r.Redone), r.RedoneWhy,
			strconv.FormatFloat(r.Seconds, 'f', 2, 64))
		for j := range r.Columns {
			row = append(row, num(r.Mean[j]), num(r.SD[j]), num(orNaN(r.Median, j)), num(orNaN(r.Rhat, j)))
		}
		rows = append(rows, row)
	}
	return writeCSV(dir.path("runs.csv"), rows)
}

// orNaN returns xs[j], or NaN when xs is empty (a field that results of
// older versions do not have).
func orNaN(xs []float64, j int) float64 {
	if j < len(xs) {
		return xs[j]
	}
	return math.NaN()
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "nan"
	}
	return strconv.FormatFloat(x, 'g', 8, 64)
}

func writeCSV(path string, rows [][]string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".csv.tmp*")
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	werr := w.WriteAll(rows)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return werr
	}
	return os.Rename(f.Name(), path)
}
