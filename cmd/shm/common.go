package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// builtins returns the implementations of every built-in.
func builtins() stdlib.Impls { return runtime.Builtins() }

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// setList holds the --set flags of a command line: each is checked as it
// is parsed (name=value, a name given once), so that a wrong one is a
// usage error naming it, as any other flag's value.
type setList []string

func (s *setList) String() string { return strings.Join(*s, ",") }

func (s *setList) Set(arg string) error {
	v, err := data.ParseSet(arg)
	if err != nil {
		return err
	}
	for _, prev := range *s {
		if p, err := data.ParseSet(prev); err == nil && p.Name == v.Name {
			return fmt.Errorf("--set %s is given twice (--set %s and --set %s)", v.Name, shortArg(strings.TrimSpace(prev)), shortArg(strings.TrimSpace(arg)))
		}
	}
	*s = append(*s, arg)
	return nil
}

// parseArgs parses flags that may come before or after the positional
// arguments, as language.md asks, and returns the positional ones. A flag
// given twice (itself or by an alias) is an error naming it, unless it is
// repeatable (a stringList, such as --set), rather than the last value
// silently winning.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	aliases := addAliases(fs)
	var flags, pos []string
	var given []givenFlag
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		a = hyphenate(fs, a)
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if n, _, ok := strings.Cut(name, "="); ok {
			given = append(given, givenFlag{n, a})
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // fs.Parse reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			given = append(given, givenFlag{name, a})
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
			given = append(given, givenFlag{name, a + " " + args[i]})
		}
	}
	// The flag package prints its error and every flag's usage; a wrong
	// flag gets one line here (with the flag meant, when one is near), the
	// usage only --help.
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(flags)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs, aliases)
		return nil, err
	case err == nil:
		err = repeatedFlag(fs, given)
	}
	if err != nil {
		err = flagError(fs, err)
		fmt.Fprintf(out, "shm %s: %v (see shm %s --help)\n", fs.Name(), err, fs.Name())
		return nil, err
	}
	return pos, nil
}

// A givenFlag is a flag of the command line: its name as given and its
// text ("--chains 3", "--chains=3").
type givenFlag struct{ name, text string }

// repeatedFlag returns an error naming the first flag of fs given twice,
// itself or by an alias; a stringList (--set) may be repeated.
func repeatedFlag(fs *flag.FlagSet, given []givenFlag) error {
	first := map[string]string{} // flag name -> its first text
	for _, g := range given {
		f := fs.Lookup(g.name)
		if f == nil {
			continue
		}
		switch f.Value.(type) {
		case *stringList, *setList:
			continue
		}
		name := f.Name
		if target, ok := strings.CutPrefix(f.Usage, "alias of --"); ok {
			name = target
		}
		if prev, dup := first[name]; dup {
			return fmt.Errorf("--%s is given twice (%s, then %s): give it once", name, shortArg(prev), shortArg(g.text))
		}
		first[name] = g.text
	}
	return nil
}

// shortArg cuts a long command-line argument for a message.
func shortArg(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

// cmdstanAliases are CmdStan's and CmdStanPy's names of shm's flags,
// accepted by every command that has the flag they name.
var cmdstanAliases = map[string]string{
	"num-samples":     "samples",
	"iter-sampling":   "samples",
	"num-warmup":      "warmup",
	"iter-warmup":     "warmup",
	"num-chains":      "chains",
	"parallel-chains": "parallel",
	"max-treedepth":   "max-depth",
	"delta":           "adapt-delta",
	"id":              "chain-id",
	"inits":           "init",
	"output-dir":      "output",
	"random-seed":     "seed",
}

// addAliases defines on fs the aliases of its flags (cmdstanAliases),
// each sharing its flag's value, and returns them by the flag they name.
// Every alias names a flag with a value (a count, a seed, a folder): a
// switch of the same name means something else (plot --warmup draws the
// warmup) and takes none.
func addAliases(fs *flag.FlagSet) map[string][]string {
	byFlag := map[string][]string{}
	for alias, name := range cmdstanAliases {
		f := fs.Lookup(name)
		if f == nil || fs.Lookup(alias) != nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		fs.Var(f.Value, alias, "alias of --"+name)
		byFlag[name] = append(byFlag[name], alias)
	}
	for _, as := range byFlag {
		slices.Sort(as)
	}
	return byFlag
}

// setFlags returns the names of the flags given on fs's command line,
// an alias under the name of its flag.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if name, ok := strings.CutPrefix(f.Usage, "alias of --"); ok {
			set[name] = true
			return
		}
		set[f.Name] = true
	})
	return set
}

// hyphenate returns the argument a with its flag name's "_" read as "-"
// (CmdStanPy's spelling, --iter_sampling) when only that name is a flag
// of fs.
func hyphenate(fs *flag.FlagSet, a string) string {
	dashes := len(a) - len(strings.TrimLeft(a, "-"))
	name, value, hasValue := strings.Cut(a[dashes:], "=")
	if fs.Lookup(name) != nil || !strings.Contains(name, "_") {
		return a
	}
	if h := strings.ReplaceAll(name, "_", "-"); fs.Lookup(h) != nil {
		a = a[:dashes] + h
		if hasValue {
			a += "=" + value
		}
	}
	return a
}

// printUsage prints fs's flags (as --help asks), an alias on the line of
// the flag it names.
func printUsage(fs *flag.FlagSet, aliases map[string][]string) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage of shm %s:\n", fs.Name())
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "alias of --") {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(out, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(out, " %s", name)
		}
		fmt.Fprintf(out, "\n    \t%s", strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(out, " (default %s)", f.DefValue)
		}
		if as := aliases[f.Name]; len(as) > 0 {
			fmt.Fprintf(out, " (also --%s)", strings.Join(as, ", --"))
		}
		fmt.Fprintln(out)
	})
}

// flagError rewrites the flag package's errors to name flags as they are
// documented (--name), and an unknown flag with the flag of fs nearest to
// it, if one is near.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if near := nearestFlag(fs, name); near != "" {
			return fmt.Errorf("unknown flag --%s: did you mean --%s?", name, near)
		}
		return fmt.Errorf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name)
	}
	if m := invalidFlagValue.FindStringSubmatch(msg); m != nil {
		if m[2] == "set" {
			return errors.New(m[3]) // data.ParseSet's message names the --set
		}
		return fmt.Errorf("--%s: invalid value %s: %s", m[2], m[1], m[3])
	}
	return err
}

// invalidFlagValue matches the flag package's error for a value its flag
// does not accept.
var invalidFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^:]*): (.*)$`)

// nearestFlag returns the name of fs's flag nearest to name (ignoring
// case, and reading "_" as "-") in edit distance (ir.Closest, as for the
// model's names), or "" when none is near.
func nearestFlag(fs *flag.FlagSet, name string) string {
	if len(name) > 64 {
		return ""
	}
	typed := strings.ReplaceAll(strings.ToLower(name), "_", "-")
	if fs.Lookup(typed) != nil {
		return typed
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return ir.Closest(typed, names)
}

// flagStatus is the exit status of a command whose flags did not parse:
// 0 after --help or -h (the usage was asked for, as CmdStan answers it), 2
// for a flag error.
func flagStatus(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// newFlagSet returns a flag set that reports errors to stderr without
// exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if testHookFlagSet != nil {
		testHookFlagSet(fs)
	}
	return fs
}

// testHookFlagSet, when not nil, is called with every flag set newFlagSet
// makes. The documentation's tests set it to list a command's flags: a
// command run with --help defines its flags and returns before doing
// anything else.
var testHookFlagSet func(*flag.FlagSet)

// maxSourceBytes bounds a model file: the parser reads about 0.4 MB/s
// and holds about 300 bytes per byte of a long literal, so that a file
// of this size is answered within seconds in a few hundred megabytes;
// large values belong in data files (the largest posteriordb program is
// under 4 kB).
const maxSourceBytes = 1 << 20

// readSource reads a model file of at most maxSourceBytes (a device such
// as /dev/zero is read up to that size, not forever).
func readSource(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(text) > maxSourceBytes {
		return nil, fmt.Errorf("%s: more than %s: a model file may have at most that (put large values in a data file)", path, sysmem.Bytes(maxSourceBytes))
	}
	return text, nil
}

// checkModel reads and checks a model file, rendering every error.
func checkModel(path string) (*ir.Model, error) {
	return checkModelContext(context.Background(), path)
}

// checkModelContext is checkModel stopped by ctx. Checking a file of
// megabytes takes seconds (the parser reads about 0.4 MB/s) and cannot be
// stopped midway, so it runs on its own goroutine, which a stop abandons
// to end with the process.
func checkModelContext(ctx context.Context, path string) (*ir.Model, error) {
	text, err := readSource(path)
	if err != nil {
		return nil, err
	}
	return interruptible(ctx, func() (*ir.Model, error) {
		m, errs := ir.CheckSource(path, string(text))
		if len(errs) > 0 {
			return nil, errs
		}
		return m, nil
	})
}

// signalContext is signal.NotifyContext with a release that tells
// whether one of sigs came before it: release restores the signals'
// default (the process ends at once) and reports a signal that arrived
// before, even one still on its way to ctx (signal.NotifyContext's stop
// cancels its context and drops such a signal, so a SIGTERM just before
// it was ignored and the process went on to exit with status 0).
func signalContext(sigs ...os.Signal) (ctx context.Context, release func() (signaled bool)) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ch:
			cancel()
		case <-quit:
		}
	}()
	var once sync.Once
	var signaled bool
	release = func() bool {
		once.Do(func() {
			signal.Stop(ch) // no signal reaches ch after this
			close(quit)
			<-exited
			select {
			case <-ch:
				cancel()
			default:
			}
			signaled = ctx.Err() != nil
			cancel()
		})
		return signaled
	}
	return ctx, release
}

// exitOnSignal makes the signals sigs end the process with status 1 after
// printing msg on w, until stop is called: for the phase of a command
// after its output is complete (a summary, reports), which has nothing
// to clean up but must say why it ends.
func exitOnSignal(w io.Writer, msg string, sigs ...os.Signal) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	quit := make(chan struct{})
	go func() {
		select {
		case <-ch:
			fmt.Fprintln(w, msg)
			os.Exit(1)
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}

// stopStatus says that the command name was stopped (Ctrl-C, SIGTERM)
// and returns its exit status.
func stopStatus(stderr io.Writer, name string) int {
	fmt.Fprintf(stderr, "shm %s: interrupted\n", name)
	return 1
}

// reportStop is report for the command name, which ctx stops: once ctx
// is done, an error is the stop's, whatever it says.
func reportStop(ctx context.Context, stderr io.Writer, name string) func(error) int {
	return func(err error) int {
		if ctx.Err() != nil {
			return stopStatus(stderr, name)
		}
		return report(stderr, err)
	}
}

// interruptible returns f's result, or ctx's error as soon as ctx is done
// (Ctrl-C, SIGTERM) for work that cannot stop itself (parsing, reading a
// data file, a summary of large files): f then goes on in the background,
// and its result, which no one reads, is dropped. f must not change state
// that others see.
func interruptible[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// loadInit reads --init: a number (the radius of random initial values:
// an empty set), a JSON file, or name=value pairs separated by commas
// ("mu=1,sigma=2").
func loadInit(arg string) (*data.Set, error) {
	if _, ok := initRadius(arg); ok || arg == "" || arg == initPathfinder {
		return &data.Set{}, nil
	}
	if err := initNumberError(arg); err != nil {
		return nil, err
	}
	return loadPoint("--init", arg)
}

// initNumberError explains an --init that is meant as a number (it
// starts as one and has no '=' or .json) but does not parse as one: out
// of range (1e400) or not decimal (0x10), rather than "expected
// name=value".
func initNumberError(arg string) error {
	text := strings.TrimSpace(arg)
	if text == "" || strings.Contains(text, "=") || strings.HasSuffix(strings.ToLower(text), ".json") ||
		!strings.ContainsRune("0123456789+-.", rune(text[0])) {
		return nil
	}
	_, err := strconv.ParseFloat(text, 64)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("--init %s: the number is out of range (the radius of the random initial values must be finite and at least 0)", text)
	}
	return fmt.Errorf("--init %s: not a decimal number (a radius such as 2 or 0.5), nor name=value,... or a JSON file", text)
}

// loadPoint reads values of parameters given by source (the flag or
// command that gives them, such as "--init", "--at" or ":lp", which its
// messages and the values' provenance name): a JSON file (a name ending in
// .json), or name=value pairs separated by commas ("mu=1,sigma=[1,2]"). A
// name given twice is refused.
func loadPoint(source, arg string) (*data.Set, error) {
	set := &data.Set{}
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(arg)), ".json") {
		path := strings.TrimSpace(arg)
		f, err := data.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		defer f.Close()
		vals, err := data.ReadJSON(path, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if err := set.AddFile(vals); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		return set, nil
	}
	seen := map[string]bool{}
	for _, part := range splitTopLevel(arg) {
		v, err := data.ParseFlag(source, strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if seen[v.Name] {
			return nil, fmt.Errorf("%s: %s is given twice", source, v.Name)
		}
		seen[v.Name] = true
		set.AddSet(v)
	}
	return set, nil
}

// checkPoint checks the values set gives (read by loadPoint from source)
// for the parameters of bm: each must be finite. When whole, set must be a
// whole point: a value for every parameter and none for another name.
func checkPoint(source string, set *data.Set, bm *runtime.Model, whole bool) error {
	params := map[string]bool{}
	var names []string
	for _, e := range bm.Layout.Entries {
		params[e.Decl.Var.Name] = true
		names = append(names, e.Decl.Var.Name)
	}
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	if whole {
		for _, name := range set.Names() {
			if !params[name] {
				return fmt.Errorf("%s: %s is not a parameter of the model (parameters: %s)", source, name, list)
			}
		}
		var missing []string
		for _, name := range names {
			if _, ok := set.Lookup(name); !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s gives no value for the parameter %s (a point gives every parameter: %s)", source, strings.Join(missing, ", "), list)
		}
	}
	for _, name := range names {
		v, ok := set.Lookup(name)
		if !ok {
			continue
		}
		for k, x := range v.Data {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				label := source
				if file := v.File(); file != source && file != "" {
					label += " " + file
				}
				return fmt.Errorf("%s: the value given for %s is %v (a parameter's value must be finite)", label, name+indexText(v.Index(k)), x)
			}
		}
	}
	return nil
}

// indexText renders a 0-based multi-index as the model writes it,
// 1-based: "[2,3]"; nil gives "".
func indexText(idx []int) string {
	if len(idx) == 0 {
		return ""
	}
	parts := make([]string, len(idx))
	for i, j := range idx {
		parts[i] = strconv.Itoa(j + 1)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// initPathfinder is the --init of shm sample that starts each chain from a
// draw of Pathfinder.
const initPathfinder = "pathfinder"

// initRadius reports whether --init is a number, CmdStan's init=x: every
// unconstrained coordinate drawn from uniform(-x, x), or 0 for x = 0.
func initRadius(arg string) (float64, bool) {
	x, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
	return x, err == nil
}

// checkInit validates --init: a number must be finite and at least 0;
// the values of parameters must be finite; values given by name must name
// parameters (a misspelled name would otherwise be ignored: a warning on
// stderr, as CmdStan's).
func checkInit(arg string, set *data.Set, bm *runtime.Model, stderr io.Writer) error {
	if arg == initPathfinder {
		return nil
	}
	if x, ok := initRadius(arg); ok {
		if !(x >= 0) || math.IsInf(x, 1) {
			return fmt.Errorf("--init %s: a number must be finite and at least 0 (the radius of the random initial values on the unconstrained scale)", arg)
		}
		return nil
	}
	if err := checkPoint("--init", set, bm, false); err != nil {
		return err
	}
	// The given values' constraints, once here rather than once per
	// chain; their check does not depend on the random values of the
	// parameters not given.
	if len(set.Names()) > 0 {
		if _, err := bm.Unconstrain(set, rand.New(rand.NewPCG(1, 1)), 2); err != nil {
			return err
		}
	}
	params := map[string]bool{}
	var names []string
	for _, e := range bm.Layout.Entries {
		params[e.Decl.Var.Name] = true
		names = append(names, e.Decl.Var.Name)
	}
	for _, name := range set.Names() {
		if !params[name] {
			fmt.Fprintf(stderr, "warning: --init gives %s, which is not a parameter of the model (parameters: %s)\n", name, strings.Join(names, ", "))
		}
	}
	return nil
}

// splitTopLevel splits "a=1,b=[1,2]" at commas outside brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// bindModel checks the model and binds its data.
func bindModel(path string, files, sets []string, seed uint64, print io.Writer) (*runtime.Model, error) {
	return bindModelContext(context.Background(), path, files, sets, seed, print)
}

// bindModelContext is bindModel with a context that stops the loops of
// transformed data and of the model's density evaluations once done.
func bindModelContext(ctx context.Context, path string, files, sets []string, seed uint64, print io.Writer) (*runtime.Model, error) {
	return bindModelShare(ctx, path, files, sets, seed, print, 1)
}

// bindModelShare is bindModelContext for a run whose share evaluations go
// on at once (chains, Pathfinder's paths): each may hold a share-th of
// what one evaluation alone may (runtime.Options.MemoryShare).
func bindModelShare(ctx context.Context, path string, files, sets []string, seed uint64, print io.Writer, share int) (*runtime.Model, error) {
	m, err := checkModelContext(ctx, path)
	if err != nil {
		return nil, err
	}
	set, err := interruptible(ctx, func() (*data.Set, error) { return data.Load(files, sets) })
	if err != nil {
		return nil, err
	}
	return runtime.Bind(m, set, runtime.Options{Impls: builtins(), Print: print, Seed: seed, DataFiles: files, Context: ctx, MemoryShare: share})
}

// report prints an error (every error of a list) and returns exit status 1.
func report(stderr io.Writer, err error) int {
	var list interface{ Unwrap() []error }
	if errors.As(err, &list) {
		for _, e := range list.Unwrap() {
			fmt.Fprintln(stderr, e)
		}
		return 1
	}
	fmt.Fprintf(stderr, "shm: %v\n", err)
	return 1
}
