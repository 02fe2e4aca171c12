package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shmlang/shm/calibrate"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
	"github.com/shmlang/shm/runtime/pathfinder"
	"github.com/shmlang/shm/runtime/stancsv"
	"github.com/shmlang/shm/stdlib/sinkhorn"
)

// sampleFlags are the options of "shm sample".
type sampleFlags struct {
	chains, chainID, warmup, samples, thin, maxDepth, parallel, sigFigs, refresh int
	seed                                                                         uint64
	delta                                                                        float64
	metric, init, output                                                         string
	sets                                                                         setList
	saveWarmup                                                                   bool
	// dataDigest is not a flag: the digest of the data files' contents,
	// for the chains' headers (set by sample).
	dataDigest string
	// pathfinderInits are not a flag: with --init pathfinder, the initial
	// points of the chains (unconstrained), set by runChains.
	pathfinderInits [][]float64
}

func (f *sampleFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.chains, "chains", 4, "number of chains")
	fs.IntVar(&f.chainID, "chain-id", 1, "number of the first chain: chains are numbered from it, which names their files and picks their random streams (CmdStan's id)")
	fs.IntVar(&f.warmup, "warmup", 1000, "warmup iterations per chain")
	fs.IntVar(&f.samples, "samples", 1000, "sampling iterations per chain")
	fs.IntVar(&f.thin, "thin", 1, "keep every thin-th draw")
	fs.IntVar(&f.maxDepth, "max-depth", 10, "maximum tree depth")
	fs.IntVar(&f.parallel, "parallel", goruntime.NumCPU(), "chains run at once")
	fs.IntVar(&f.sigFigs, "sig-figs", 6, "significant digits in the output (up to 18)")
	fs.IntVar(&f.refresh, "refresh", 100, "progress every refresh iterations (0: none)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (default: from the clock, printed in the output)")
	fs.Float64Var(&f.delta, "adapt-delta", 0.8, "target acceptance statistic")
	fs.StringVar(&f.metric, "metric", "diag", "metric: diag or dense")
	fs.StringVar(&f.init, "init", "", "initial values: name=value,..., a JSON file, a number x: uniform(-x, x) unconstrained, 0: all zero, or pathfinder: draws of Pathfinder (default: 2)")
	fs.StringVar(&f.output, "output", "output", "directory for the Stan CSV files")
	fs.Var(&f.sets, "set", "data value name=value (repeatable)")
	fs.BoolVar(&f.saveWarmup, "save-warmup", false, "also write the warmup draws")
}

// cmdSample implements "shm sample model.shm data...".
func cmdSample(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sample", stderr)
	var f sampleFlags
	f.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	seedGiven := setFlags(fs)["seed"]
	if len(pos) < 1 {
		fmt.Fprintln(stderr, "usage: shm sample model.shm [data...] [--chains 4 --warmup 1000 --samples 1000 --seed N --output DIR ...]")
		return 2
	}
	err = f.validate()
	if err == nil && f.output == "" {
		err = errors.New("--output is empty: give a directory (default: output)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "shm sample: %v\n", err)
		return 2
	}
	if !seedGiven {
		f.seed = uint64(time.Now().UnixNano()) & (1<<31 - 1)
	}
	// SIGTERM (what timeout and batch schedulers send) stops the run like
	// Ctrl-C: the chains stop, and nothing of this run is left.
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	paths, err := sample(ctx, pos[0], pos[1:], &f, stderr)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "shm sample: interrupted; no output written")
		return 1
	}
	if err != nil {
		return report(stderr, err)
	}
	// The run is complete and its files are in place: from here Ctrl-C
	// and SIGTERM end the process at once, saying so (the summary and the
	// reports write nothing that a signal could leave half-written).
	// The handler is installed before the run's is released: a signal
	// between the two would otherwise end the process silently.
	after := fmt.Sprintf("shm sample: interrupted after the run: its files are complete (%s)", strings.Join(paths, ", "))
	defer exitOnSignal(stderr, after, os.Interrupt, syscall.SIGTERM)()
	if release() {
		fmt.Fprintln(stderr, after)
		return 1
	}
	ctx = context.Background()
	noteOtherChains(stderr, f.output, paths)
	fit, err := stancsv.ReadFit(paths...)
	if err != nil {
		return report(stderr, err)
	}
	if err := diag.WriteSummary(stdout, fit); err != nil {
		return report(stderr, err)
	}
	// The reports evaluate the model bound again as the run was (its data
	// and seed). The run and its output are complete: a report that
	// fails at a point (a domain error there, a loss that does not
	// converge) says so and does not make the run fail.
	bind := newBudgetBinder(ctx, pos[0], pos[1:], &budgetFlags{sets: f.sets, seed: f.seed})
	bm, bindErr := bind(runtime.Options{})
	for _, r := range []struct {
		failed string
		write  func() error
	}{
		{"Common random numbers: not reported", func() error { return crnReport(stdout, bm, &f, fit) }},
		{"Sinkhorn iterations: not checked", func() error { return sinkhornReport(stdout, bind, bm, fit) }},
	} {
		err := bindErr
		if err == nil {
			err = r.write()
		}
		if err != nil {
			if ctx.Err() != nil {
				return report(stderr, err)
			}
			fmt.Fprintf(stdout, "\n%s: %v\n", r.failed, err)
		}
	}
	return 0
}

// maxChains bounds --chains: every chain holds its own density and output,
// and a run of more chains is better split with --chain-id.
const maxChains = 10000

// maxCount bounds the counts of sample's flags (chain ids, iterations,
// --thin, --refresh): CmdStan's are 32-bit ints, and the chains' numbers
// must fit in their file names.
const maxCount = 1<<31 - 1

// maxMaxDepth bounds --max-depth: a tree of depth 30 is 2^30 leapfrog
// steps (the sampler keeps a level per depth).
const maxMaxDepth = 30

func (f *sampleFlags) validate() error {
	switch {
	case f.chains < 1:
		return fmt.Errorf("--chains must be at least 1, got %d", f.chains)
	case f.chains > maxChains:
		return fmt.Errorf("--chains is %d, at most %d", f.chains, maxChains)
	case f.chainID < 1:
		return fmt.Errorf("--chain-id must be at least 1, got %d", f.chainID)
	case f.chainID > maxCount:
		return fmt.Errorf("--chain-id is %d, at most %d", f.chainID, maxCount)
	case f.chainID > maxCount-(f.chains-1):
		return fmt.Errorf("--chain-id %d with --chains %d would number the last chain %d, more than %d", f.chainID, f.chains, f.chainID+f.chains-1, maxCount)
	case f.warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %d", f.warmup)
	case f.samples < 0:
		return fmt.Errorf("--samples must not be negative, got %d", f.samples)
	case f.warmup > maxCount:
		return fmt.Errorf("--warmup is %d, at most %d", f.warmup, maxCount)
	case f.samples > maxCount:
		return fmt.Errorf("--samples is %d, at most %d", f.samples, maxCount)
	case f.thin < 1:
		return fmt.Errorf("--thin must be at least 1, got %d", f.thin)
	case f.thin > maxCount:
		return fmt.Errorf("--thin is %d, at most %d", f.thin, maxCount)
	case f.maxDepth < 1:
		return fmt.Errorf("--max-depth must be at least 1, got %d", f.maxDepth)
	case f.maxDepth > maxMaxDepth:
		return fmt.Errorf("--max-depth is %d, at most %d (a tree of 2^%d leapfrog steps)", f.maxDepth, maxMaxDepth, maxMaxDepth)
	case f.refresh < 0:
		return fmt.Errorf("--refresh must not be negative (0: no progress lines), got %d", f.refresh)
	case f.refresh > maxCount:
		return fmt.Errorf("--refresh is %d, at most %d", f.refresh, maxCount)
	case !(f.delta > 0 && f.delta < 1):
		return fmt.Errorf("--adapt-delta must be in (0, 1), got %g", f.delta)
	case f.metric != "diag" && f.metric != "dense":
		return fmt.Errorf("--metric must be diag or dense, got %q", f.metric)
	case f.sigFigs < 1 || f.sigFigs > 18:
		return fmt.Errorf("--sig-figs must be between 1 and 18, got %d", f.sigFigs)
	case f.parallel < 1:
		return fmt.Errorf("--parallel must be at least 1, got %d", f.parallel)
	}
	return nil
}

// sample runs the chains and returns the paths of their output files.
func sample(ctx context.Context, model string, files []string, f *sampleFlags, stderr io.Writer) ([]string, error) {
	ok := false
	// The chains running at once (and --init pathfinder's four paths)
	// share the memory of an evaluation.
	share := min(f.parallel, f.chains)
	if f.init == initPathfinder {
		share = max(share, pathfinder.DefaultOptions().NumPaths)
	}
	bm, err := bindModelShare(ctx, model, files, f.sets, f.seed, stderr, share)
	if err != nil {
		return nil, err
	}
	var initSet *data.Set
	if f.dataDigest, initSet, err = prepareRun(ctx, bm, files, f.init, stderr); err != nil {
		return nil, err
	}
	// The folders this run creates do not outlive its failure: a run
	// that wrote nothing leaves nothing (os.Remove keeps a folder that is
	// not empty).
	var created []string
	for dir := filepath.Clean(f.output); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); !os.IsNotExist(err) || dir == filepath.Dir(dir) {
			break
		}
		created = append(created, dir)
	}
	defer func() {
		for _, dir := range created {
			if !ok {
				os.Remove(dir)
			}
		}
	}()
	if err := os.MkdirAll(f.output, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--output %s: cannot make the folder %s: %v", f.output, pe.Path, pe.Err)
		}
		return nil, fmt.Errorf("--output %s: %v", f.output, err)
	}
	cfg := f.nutsConfig()
	var mu sync.Mutex // serializes progress lines
	ids := make([]int, f.chains)
	for i := range ids {
		ids[i] = f.chainID + i
	}
	progress := newChainProgress(stderr, &mu, f.refresh, cfg.MaxDepth, cfg.NumSamples, ids)
	progress.configure(&cfg)
	defer progress.start()()
	cfg.Rejected = rejectionMessages(stderr, &mu)
	paths := make([]string, f.chains)
	for i := range paths {
		paths[i] = chainPath(f.output, bm.IR.Name, f.chainID+i)
		if in, ok := sameFile(paths[i], append([]string{model}, files...)); ok {
			return nil, fmt.Errorf("--output %s: chain %d's file %s is the input %s: the run would replace it; give another folder", f.output, f.chainID+i, paths[i], in)
		}
	}
	unlock, err := lockOutput(paths)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, p := range paths {
		// The temporary files of an earlier run of these chains that was
		// killed: no other run writes them while we hold their locks.
		stale, _ := filepath.Glob(stancsv.TempPattern(p))
		for _, s := range stale {
			os.Remove(s)
		}
	}
	create := func(header *stancsv.Config, columns []string) (chainOutput, error) {
		header.OutputFile = paths[header.ID-f.chainID]
		w, err := stancsv.Create(header.OutputFile, header, columns)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
	if err := runChains(ctx, bm, cfg, f, files, initSet, create); err != nil {
		return nil, err
	}
	ok = true
	return paths, nil
}

// noteOtherChains notes the chain files of other runs of the model in the
// folder dir that the run wrote paths into.
func noteOtherChains(w io.Writer, dir string, paths []string) {
	if old := otherChains(paths); len(old) > 0 {
		fmt.Fprintf(w, "note: %s also holds %s of an earlier run, not of this one (a summary or plot of %s mixes them in)\n",
			dir, listFiles(old), filepath.Join(dir, "*.csv"))
	}
}

// otherChains returns the chain files of the run's model beside its
// files paths (model-N.csv, N an integer) that the run did not write: an
// earlier run's, with more chains or other chain ids.
func otherChains(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	base := filepath.Base(paths[0])
	model := base[:max(strings.LastIndex(base, "-"), 0)]
	found, err := filepath.Glob(filepath.Join(filepath.Dir(paths[0]), model+"-*.csv"))
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range found {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), model+"-"), ".csv")
		if _, err := strconv.Atoi(id); err == nil && !slices.Contains(paths, p) {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

// listFiles names files: all of up to four, else the first three and a
// count.
func listFiles(names []string) string {
	if len(names) <= 4 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// chainPath is the Stan CSV file of one chain in dir.
func chainPath(dir, model string, chain int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%d.csv", model, chain))
}

// nutsConfig returns the sampler configuration the flags ask for.
func (f *sampleFlags) nutsConfig() nuts.Config {
	cfg := nuts.DefaultConfig()
	cfg.NumWarmup, cfg.NumSamples, cfg.Thin = f.warmup, f.samples, f.thin
	cfg.MaxDepth, cfg.Delta, cfg.SaveWarmup = f.maxDepth, f.delta, f.saveWarmup
	if f.metric == "dense" {
		cfg.Metric = nuts.Dense
	}
	return cfg
}

// chainOutput receives one chain's output in the order runChain produces
// it; *stancsv.Writer is one. Abort after Close does nothing.
type chainOutput interface {
	WriteAdaptation(stepSize float64, dense bool, dim int, invMetric []float64) error
	WriteRow(values []float64) error
	WriteTiming(warmup, sampling time.Duration) error
	// Finish completes the output without publishing it; Commit publishes
	// it, Abort discards it (also after Finish).
	Finish() error
	Commit() error
	Abort()
}

// openChainOutput opens the output of the chain header.ID; it may set the
// header's OutputFile.
type openChainOutput func(header *stancsv.Config, columns []string) (chainOutput, error)

// runChains runs f.chains chains of bm, numbered from f.chainID, at most
// f.parallel at once, each into the output open gives it. Chain k's initial
// point, draws and generated quantities depend only on the seed and k, so
// "--chains 1 --chain-id k" reproduces chain k of a larger run.
func runChains(ctx context.Context, bm *runtime.Model, cfg nuts.Config, f *sampleFlags, files []string, initSet *data.Set, open openChainOutput) error {
	// The chains running at once share the memory; each is refused
	// before anything is allocated when its share does not hold it.
	if limit, at := sysmem.MaxElements(), min(f.parallel, f.chains); limit > 0 && at > 1 {
		cfg.MaxMemory = limit / int64(at)
	}
	if err := cfg.CheckMemory(bm.Dim(), false); err != nil {
		return err
	}
	if f.init == initPathfinder && bm.Dim() > 0 {
		ids := make([]int, f.chains)
		for i := range ids {
			ids[i] = f.chainID + i
		}
		inits, err := pathfinderInits(ctx, bm, f.seed, ids)
		if err != nil {
			return err
		}
		f.pathfinderInits = inits
	}
	errs := make([]error, f.chains)
	outs := make([]chainOutput, f.chains)
	sem := make(chan struct{}, f.parallel)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			outs[i], errs[i] = runChain(ctx, bm, cfg, f, files, initSet, f.chainID+i, open)
		}()
	}
	wg.Wait()
	// The outputs are published together, and only when every chain has
	// finished: a failed run leaves neither its own files nor half of
	// them over the previous run's.
	if err := joinDistinct(errs); err != nil {
		for _, o := range outs {
			if o != nil {
				o.Abort()
			}
		}
		return err
	}
	for i, o := range outs {
		if err := o.Commit(); err != nil {
			for _, rest := range outs[i+1:] {
				rest.Abort()
			}
			return err
		}
	}
	return nil
}

// joinDistinct joins the errors of the chains, each message once: the
// chains failing alike (the same bad initial value) is one error.
func joinDistinct(errs []error) error {
	var distinct []error
	seen := map[string]bool{}
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			distinct = append(distinct, err)
		}
	}
	if len(distinct) == 1 {
		return distinct[0]
	}
	return errors.Join(distinct...)
}

// runChain runs one chain and writes its output, finished but not
// committed.
func runChain(ctx context.Context, bm *runtime.Model, cfg nuts.Config, f *sampleFlags, files []string, initSet *data.Set, chain int, open openChainOutput) (chainOutput, error) {
	d, err := bm.NewDensity()
	if err != nil {
		return nil, err
	}
	// The replicates of crn calls may use every core: while the chains
	// keep the cores busy the extra workers only wait their turn, and
	// when the last chains run alone (a run's tail, where one slow chain
	// would otherwise leave cores idle) their replicates fill the cores
	// (with a GPU, they wait for it together). The draws do not depend on
	// the number of workers.
	d.Workers = sinkhorn.ReplicateWorkers(goruntime.GOMAXPROCS(0))
	if f.init == initPathfinder {
		if f.pathfinderInits != nil { // nil: no parameters
			cfg.Init = f.pathfinderInits[chain-f.chainID]
		}
	} else if x, ok := initRadius(f.init); ok {
		// CmdStan's init=x: uniform(-x, x) unconstrained, or all 0.
		if x == 0 {
			cfg.Init = make([]float64, bm.Dim())
		} else {
			cfg.InitRadius = x
		}
	} else if f.init != "" {
		theta, err := bm.Unconstrain(initSet, rand.New(rand.NewPCG(f.seed, uint64(chain))), cfg.InitRadius)
		if err != nil {
			return nil, err
		}
		cfg.Init = theta
	}
	fixed := bm.Dim() == 0
	initText := "2"
	if f.init != "" {
		initText = f.init
	}
	header := &stancsv.Config{
		Model: bm.IR.Name, NumSamples: cfg.NumSamples, NumWarmup: cfg.NumWarmup, SaveWarmup: cfg.SaveWarmup,
		Thin: cfg.Thin, FixedParam: fixed, AdaptEngaged: !fixed, Gamma: cfg.Gamma, Delta: cfg.Delta,
		Kappa: cfg.Kappa, T0: cfg.T0, InitBuffer: cfg.InitBuffer, TermBuffer: cfg.TermBuffer,
		Window: cfg.BaseWindow, MaxDepth: cfg.MaxDepth, Metric: cfg.Metric.String(), StepSize: cfg.StepSize,
		NumChains: f.chains, ID: chain, DataFiles: files, Sets: f.sets, DataSHA256: f.dataDigest, ModelSHA256: bm.IR.SourceSHA256, Init: initText, Seed: f.seed,
		Refresh: f.refresh, SigFigs: f.sigFigs,
	}
	recordSeedDependence(header, bm)
	columns := bm.Columns()
	if err := checkHeader(columns, cfg.MaxMemory); err != nil {
		return nil, err
	}
	w, err := open(header, columns)
	if err != nil {
		return nil, err
	}
	if err := writeChain(ctx, w, d, cfg, f, chain, fixed); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// recordSeedDependence records in header what of bm's posterior depends
// on the seed it was bound with: the values of transformed data drawn with
// _rng, and the seed of the noise of crn calls without a seed argument.
// Chains whose headers differ in them are of other posteriors (summary
// and plot refuse to pool them); a model without either is one posterior
// whatever the seed, and its chains of other seeds (run apart with
// --chain-id) are pooled.
func recordSeedDependence(header *stancsv.Config, bm *runtime.Model) {
	header.TransformedDataSHA256, _ = bm.RandomTransformedDataSHA256()
	header.CRNSeed, header.HasCRNSeed = bm.CRNSeed()
}

// checkHeader refuses a CSV header of more columns than a chain's share of
// the memory (limit words, 0 for half of the memory the process may use)
// holds: the names, the header line and its writer's copy, and a row of
// values formatted.
func checkHeader(columns []string, limit int64) error {
	of := "the memory a chain may hold"
	if limit <= 0 {
		limit, of = sysmem.MaxElements(), "half of "+sysmem.Source()
	}
	words := 0.0
	for _, c := range columns {
		words += float64(3*len(c)+24)/8 + 4
	}
	if limit > 0 && words > float64(limit) {
		return fmt.Errorf("the output's %d columns need %s for the CSV header and a row, more than %s", len(columns), sysmem.Bytes(8*words), of)
	}
	return nil
}

// writeChain runs chain on d and writes it to w, finished.
func writeChain(ctx context.Context, w chainOutput, d *runtime.Density, cfg nuts.Config, f *sampleFlags, chain int, fixed bool) error {
	c, err := nuts.NewChain(d, cfg, f.seed, chain)
	if err != nil {
		return fmt.Errorf("chain %d: %w", chain, err)
	}
	gq := rand.New(rand.NewPCG(f.seed, uint64(chain)<<32|0x6a))
	var row []float64
	err = c.Run(ctx, nuts.Callbacks{
		Adapted: func(a nuts.Adaptation) error {
			if fixed {
				return nil
			}
			return w.WriteAdaptation(a.StepSize, a.Metric == nuts.Dense, a.Dim, a.InvMetric)
		},
		Draw: func(dr *nuts.Draw) error {
			row = dr.AppendSamplerValues(row[:0])
			if fixed {
				row = row[:2] // lp__, accept_stat__
			}
			var err error
			if row, err = d.Draw(row, dr.Theta, gq); err != nil {
				return fmt.Errorf("chain %d: generated quantities: %w", chain, err)
			}
			return w.WriteRow(row)
		},
	})
	if err != nil {
		return err
	}
	t := c.Timing()
	if err := w.WriteTiming(t.Warmup, t.Sampling); err != nil {
		return err
	}
	return w.Finish()
}

// maxRejectionMessages is the number of rejection messages shown per chain.
const maxRejectionMessages = 10

// rejectionMessages returns a nuts.Config.Rejected that writes, as Stan's
// informational messages, why a proposal is rejected (a domain error, a
// NaN density and its term), at most maxRejectionMessages per chain, and
// says when it stops showing them. mu serializes the lines with the
// progress lines.
func rejectionMessages(w io.Writer, mu *sync.Mutex) func(chain int, reason error) {
	shown := map[int]int{}
	return func(chain int, reason error) {
		mu.Lock()
		defer mu.Unlock()
		n := shown[chain]
		shown[chain] = n + 1
		switch {
		case n < maxRejectionMessages:
			fmt.Fprintf(w, "Chain %d: a proposal is rejected: %v\n", chain, reason)
			if n == 0 {
				fmt.Fprintf(w, "Chain %d: (now and then, as near constraints, this is harmless; often, the model may be ill-conditioned or misspecified)\n", chain)
			}
		case n == maxRejectionMessages:
			fmt.Fprintf(w, "Chain %d: further rejections are not shown\n", chain)
		}
	}
}

// dataDigest is the digest of the data files' contents, in order: one
// file's SHA-256 (calibrate.HashFiles), or the SHA-256 of several files'
// (the --set values are in the header as given).
func dataDigest(files []string) (string, error) {
	hashes, err := calibrate.HashFiles(files...)
	if err != nil || len(hashes) == 0 {
		return "", err
	}
	if len(hashes) == 1 {
		return hashes[0].SHA256, nil
	}
	h := sha256.New()
	for _, f := range hashes {
		h.Write([]byte(f.SHA256))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sameFile returns the input among inputs that out names (the same file,
// by any path), and whether there is one: an output there would replace
// it.
func sameFile(out string, inputs []string) (string, bool) {
	o, err := os.Stat(out)
	if err != nil {
		return "", false
	}
	for _, in := range inputs {
		if i, err := os.Stat(in); err == nil && os.SameFile(o, i) {
			return in, true
		}
	}
	return "", false
}
