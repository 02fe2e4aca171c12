package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/chzyer/readline"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/nuts"
	"github.com/shmlang/shm/runtime/stancsv"
	"github.com/shmlang/shm/stdlib"
)

const replHelp = `Lines are statements or expressions of the language, evaluated with the
model's data and transformed data in scope:
  mean(y)    resolution(y)    m = mean(y)    print(m);
Commands:
  :load [model.shm [data...]]  load or reload a model (and replace its data files)
  :data [file...]              replace the data files (no file: list them)
  :set [name=value]            set a data value, as --set (no value: list them)
  :lp name=value,...           log density and gradient at a point (or :lp point.json)
  :sample [flags]              sample with NUTS; flags as "shm sample"
  :summary                     summary table of the last run
  :draws name                  quantiles and histogram of one column of the last run
  :write dir                   write the last run as Stan CSV files
  :plot kind [vars...]         a figure of the last run (trace, rank, dens,
                               pairs, energy) as a PNG file, shown inline in
                               kitty and iTerm2
  :names                       names in scope
  :help                        this help
  :quit                        leave (also Ctrl-D)
The last run is always of the current model and data: :load, :data, :set
and a failed :sample drop it. Ctrl-C stops a line or a command (:load,
:data, :set, :lp, :sample) and returns to the prompt, changing nothing.
`

// replCommands are the command names, for completion and help.
var replCommands = []string{":data", ":draws", ":help", ":load", ":lp", ":names", ":plot", ":quit", ":sample", ":set", ":summary", ":write"}

// errQuit is returned by :quit.
var errQuit = errors.New("quit")

// cmdRepl implements "shm repl [model.shm] [data...]". On a terminal it
// reads lines with readline (editing, history, completion); otherwise it
// reads commands line by line and prints only their results, and its exit
// status is 1 if any command failed.
func cmdRepl(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("repl", stderr)
	seed := fs.Uint64("seed", 1, "random seed of the session and of transformed data")
	var sets setList
	fs.Var(&sets, "set", "data value name=value (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	r := newRepl(stdout, stderr, *seed)
	for _, s := range sets {
		r.state.sets = append(r.state.sets, dataArg{"--set", s})
	}
	tty, _ := stdin.(*os.File)
	interactive := tty != nil && readline.IsTerminal(int(tty.Fd()))
	if interactive {
		r.color = os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
		r.images = detectImages(os.Getenv)
		fmt.Fprintln(stdout, `shm repl: ":help" lists the commands, Ctrl-D leaves`)
	}
	// SIGTERM stops the current line (its context is term's) and then
	// ends the session, with status 1: a line that writes files stops
	// and leaves none half-written.
	term, cancelTerm := context.WithCancel(context.Background())
	defer cancelTerm()
	sigterm := make(chan os.Signal, 1)
	signal.Notify(sigterm, syscall.SIGTERM)
	defer signal.Stop(sigterm)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		select {
		case <-quit:
			return
		case <-sigterm:
		}
		cancelTerm()
		r.busy.Lock() // the current line has stopped
		if r.rl != nil {
			r.rl.Close() // restores the terminal
		}
		r.sayTerminated()
		os.Exit(1)
	}()
	r.term = term
	failed := false
	if len(pos) > 0 {
		r.busy.Lock()
		err := r.load(term, pos[0], pos[1:])
		r.busy.Unlock()
		if err != nil {
			r.printError("", err)
			failed = true
		}
	} else if len(sets) > 0 {
		r.printError("", errors.New("--set needs a model"))
		failed = true
	}
	r.updateCompletions()
	if interactive {
		err := r.interactive(tty)
		if term.Err() != nil {
			r.sayTerminated()
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "shm repl: %v\n", err)
			return 1
		}
		return 0
	}
	ok := r.script(stdin)
	if term.Err() != nil {
		r.sayTerminated()
		return 1
	}
	if !ok || failed {
		return 1
	}
	return 0
}

// sayTerminated says, once, that SIGTERM ended the session.
func (r *repl) sayTerminated() {
	r.termSaid.Do(func() { fmt.Fprintln(r.stderr, "shm repl: terminated") })
}

// repl is the state of one session.
type repl struct {
	stdout, stderr io.Writer
	color          bool          // colour error messages
	progress       bool          // show a progress line while sampling
	images         imageProtocol // how the terminal shows :plot's figures
	plots          int           // figures written so far
	seed           uint64

	state     modelState
	session   *runtime.Session
	input     int // the input lines read, for "<line N>" in positions
	baseNames int // names in a fresh session: more are session variables
	// last is the last run, always of the current model and data: a
	// rebinding (:load, :data, :set) or a failed :sample drops it, and
	// dropped is then the error that says why there is none.
	last    *sampleRun
	dropped string

	mu          sync.Mutex // guards completions, read by readline's goroutine
	completions completions

	// term is done once SIGTERM came; busy is held while a line runs,
	// and rl is the terminal's line reader (nil in a script): on SIGTERM
	// the session ends once busy is free, closing rl.
	term     context.Context
	busy     sync.Mutex
	rl       *readline.Instance
	termSaid sync.Once
}

// modelState is the loaded model and the data it is bound to.
type modelState struct {
	path  string
	model *ir.Model // checked; nil before the first :load
	files []string
	sets  []dataArg      // --set of the command line, then :set
	bound *runtime.Model // nil while data are missing; bound without a context (each command gives its own)
}

// dataArg is a data value "name=value" given by source ("--set" on the
// command line, ":set"), which messages about the value name.
type dataArg struct{ source, text string }

// newRepl returns a session without a model; random draws use seed.
func newRepl(stdout, stderr io.Writer, seed uint64) *repl {
	r := &repl{stdout: stdout, stderr: stderr, seed: seed, progress: isTerminal(stderr), term: context.Background()}
	r.session = runtime.NewSession(nil, builtins(), seed, stdout)
	r.session.Workers = goruntime.GOMAXPROCS(0)
	r.baseNames = len(r.session.Names())
	r.updateCompletions()
	return r
}

// script runs commands read line by line from in, printing no prompt. It
// reports whether every command succeeded.
func (r *repl) script(in io.Reader) bool {
	ok := true
	br := bufio.NewReaderSize(in, 64*1024)
	for n := 1; ; n++ {
		line, size, readErr := readLine(br, maxLineBytes)
		if r.term.Err() != nil {
			return false
		}
		if errors.Is(readErr, errRunawayLine) {
			r.printError(fmt.Sprintf("input line %d: ", n), fmt.Errorf("no end of line after %d bytes (a line may have %d, 1 MiB): the input is not a script", size, maxLineBytes))
			return false
		}
		if readErr != nil && readErr != io.EOF {
			r.printError("", readErr)
			return false
		}
		if readErr == io.EOF && size == 0 {
			return ok
		}
		var err error
		if size > maxLineBytes {
			// Kept short: the line is not held, and not evaluated.
			r.input++
			err = lineTooLong(size)
		} else {
			if n == 1 {
				line = strings.TrimPrefix(line, "\uFEFF") // a script's byte order mark
			}
			r.busy.Lock()
			err = r.exec(r.term, line)
			r.busy.Unlock()
		}
		if errors.Is(err, errQuit) {
			return ok
		}
		if err != nil {
			r.printError(fmt.Sprintf("input line %d: ", n), err)
			ok = false
		}
		if readErr == io.EOF {
			return ok
		}
	}
}

// maxLineBytes is the longest line the REPL evaluates. Parsing is slow on
// long lines (a vector literal of 5×10^5 numbers, 1 MB, takes about 16 s
// and 1 GB, 10^6 numbers twice that): long values belong in data files.
const maxLineBytes = 1 << 20

// lineTooLong is the error of a line of size bytes, over maxLineBytes.
func lineTooLong(size int) error {
	return fmt.Errorf("the line has %d bytes, more than the %d (1 MiB) a line may have: long values belong in a data file (:data file.json)",
		size, maxLineBytes)
}

// runawayLine is how many times the longest line the reader reads
// without an end of line before it gives up on the input.
const runawayLine = 16

// errRunawayLine is readLine's error when no end of line comes.
var errRunawayLine = errors.New("no end of line")

// readLine reads one line from br and returns it without its end of line
// ("\n" or "\r\n"; a "\r" that ends the input too) with its size in
// bytes. A line longer than limit bytes is read to its end but not kept:
// only its size is returned; one without an end after runawayLine times
// limit is errRunawayLine. At the end of the input it returns io.EOF,
// with the last line when it has no end of line (size 0 when there is
// none).
func readLine(br *bufio.Reader, limit int) (line string, size int, err error) {
	var b []byte  // the line while it may be kept
	var prev byte // the byte before the chunk
	for {
		chunk, err := br.ReadSlice('\n')
		if size+len(chunk) <= limit+2 { // room for "\r\n"
			b = append(b, chunk...)
		} else {
			b = nil
		}
		size += len(chunk)
		if err == bufio.ErrBufferFull {
			if size > runawayLine*limit {
				// No end of line in sight (/dev/zero): not a script.
				return "", size, errRunawayLine
			}
			prev = chunk[len(chunk)-1]
			continue
		}
		// The end of line, and a carriage return before it or before
		// the end of the input, are not part of the line.
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			size--
			chunk = chunk[:n-1]
		}
		if n := len(chunk); n > 0 {
			prev = chunk[n-1]
		}
		if size > 0 && prev == '\r' {
			size--
		}
		if size > limit {
			return "", size, err
		}
		return string(b[:size]), size, err
	}
}

// interactive runs the readline loop on the terminal tty until :quit or
// end of input.
func (r *repl) interactive(tty *os.File) error {
	cfg := &readline.Config{
		Prompt:            "shm> ",
		AutoComplete:      r,
		HistorySearchFold: true,
		Stdin:             readline.NewCancelableStdin(tty),
		Stdout:            r.stdout,
		Stderr:            r.stderr,
	}
	if r.color {
		cfg.Prompt = "\x1b[1;34mshm>\x1b[0m "
	}
	if dir, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(dir, "shm")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			cfg.HistoryFile = filepath.Join(dir, "repl_history")
		}
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return err
	}
	defer rl.Close()
	r.busy.Lock()
	r.rl = rl
	r.busy.Unlock()
	for {
		line, err := rl.Readline()
		if r.term.Err() != nil {
			return nil
		}
		if errors.Is(err, readline.ErrInterrupt) {
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// Ctrl-C stops the line's evaluation (its loops check ctx) and
		// returns to the prompt; in a script it ends the program.
		ctx, stop := signal.NotifyContext(r.term, os.Interrupt)
		r.busy.Lock()
		err = r.exec(ctx, line)
		r.busy.Unlock()
		stop()
		if errors.Is(err, errQuit) {
			return nil
		}
		if err != nil {
			r.printError("", err)
		}
	}
}

// exec runs one input line; ctx stops the evaluation of an expression or
// statement.
func (r *repl) exec(ctx context.Context, line string) error {
	defer r.updateCompletions()
	r.input++
	if len(line) > maxLineBytes {
		return lineTooLong(len(line))
	}
	text := strings.TrimSpace(line)
	if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "//") {
		return nil
	}
	if !strings.HasPrefix(text, ":") {
		out, err := r.session.EvalContext(ctx, fmt.Sprintf("<line %d>", r.input), line)
		if out != "" {
			fmt.Fprintln(r.stdout, out)
		}
		return err
	}
	name, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	switch name {
	case ":quit", ":q", ":exit":
		return errQuit
	case ":help", ":h", ":?":
		fmt.Fprint(r.stdout, replHelp)
		return nil
	case ":load":
		return r.cmdLoad(ctx, rest)
	case ":data":
		return r.cmdData(ctx, rest)
	case ":set":
		return r.cmdSet(ctx, rest)
	case ":lp":
		return r.cmdLP(ctx, rest)
	case ":sample":
		return r.cmdSample(ctx, rest)
	case ":summary":
		return r.cmdSummary(ctx)
	case ":draws":
		return r.cmdDraws(rest)
	case ":write":
		return r.cmdWrite(ctx, rest)
	case ":plot":
		return r.cmdPlot(ctx, rest)
	case ":names":
		names := slices.Clone(r.session.Names())
		sort.Strings(names)
		fmt.Fprintln(r.stdout, strings.Join(names, " "))
		return nil
	}
	return fmt.Errorf("unknown command %s (:help lists the commands)", shorten(name, 40))
}

// printError prints err to stderr after prefix: a list of errors (those
// of the checker, with their positions and source lines) one per line
// after a line of its own, another error on the same line as "error: ".
func (r *repl) printError(prefix string, err error) {
	var text string
	var list interface{ Unwrap() []error }
	if errors.As(err, &list) {
		var msgs []string
		if prefix != "" {
			msgs = append(msgs, strings.TrimSuffix(prefix, " "))
		}
		for _, e := range list.Unwrap() {
			msgs = append(msgs, e.Error())
		}
		text = strings.Join(msgs, "\n")
	} else {
		text = prefix + "error: " + err.Error()
	}
	text = shortenLines(text, maxMessageLine)
	if r.color {
		text = "\x1b[31m" + text + "\x1b[0m"
	}
	fmt.Fprintln(r.stderr, text)
}

// maxMessageLine is the most characters of an error message's line the
// REPL prints: an echo of a long input line (a name of megabytes) is cut.
const maxMessageLine = 200

// shortenLines cuts each line of text longer than n characters to its
// first n, followed by "…" and the line's length.
func shortenLines(text string, n int) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		lines[i] = shorten(line, n)
	}
	return strings.Join(lines, "\n")
}

// shorten cuts s, when longer than n characters, to its first n followed
// by "…" and its length.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count, cut := 0, len(s)
	for i := range s {
		if count == n {
			cut = i
		}
		count++
	}
	if count <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d characters)", s[:cut], count)
}

// load checks the model at path and binds it to the data files (the
// current ones when files is empty); ctx stops the check and the
// evaluation of transformed data, changing nothing.
func (r *repl) load(ctx context.Context, path string, files []string) error {
	m, err := checkModelContext(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return errors.New(":load interrupted; nothing changed")
		}
		return err
	}
	next := r.state
	next.path, next.model = path, m
	if len(files) > 0 {
		next.files = files
	}
	if err := r.rebind(ctx, ":load", next); err != nil {
		return err
	}
	r.describeModel()
	return nil
}

// rebind binds next's model to its data and makes it the current state,
// with a fresh session and without the last run (which is of the model
// and data before; cmd, the command, names the change). When a bound model
// is current and binding fails, nothing changes; when none is, next is
// kept unbound, so that data can be given one :data or :set at a time.
// When ctx stops the binding (Ctrl-C in transformed data), nothing
// changes.
func (r *repl) rebind(ctx context.Context, cmd string, next modelState) error {
	bm, err := r.bind(ctx, next, r.seed, nil, r.stdout)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s interrupted; nothing changed", cmd)
		}
		if r.state.bound == nil {
			next.bound = nil
			r.setState(next, cmd)
			return fmt.Errorf("%s is checked but not bound to data: %w", next.path, err)
		}
		return fmt.Errorf("%w (nothing changed)", err)
	}
	for _, w := range bm.Warnings {
		fmt.Fprintf(r.stderr, "warning: %s\n", w)
	}
	if len(r.session.Names()) > r.baseNames {
		fmt.Fprintln(r.stderr, "note: session variables cleared")
	}
	// Kept for later commands: its evaluations take their own context.
	next.bound = bm.WithContext(context.Background())
	r.setState(next, cmd)
	r.session = runtime.NewSession(next.bound, builtins(), r.seed, r.stdout)
	r.session.Workers = goruntime.GOMAXPROCS(0)
	r.baseNames = len(r.session.Names())
	return nil
}

// setState makes next the current state; cmd, the command that changed
// the model or its data, drops the last run.
func (r *repl) setState(next modelState, cmd string) {
	r.state = next
	if r.last == nil {
		return
	}
	fmt.Fprintf(r.stderr, "note: the last run (model %s) is dropped: %s changed the model or its data\n", r.last.model, cmd)
	r.dropped = fmt.Sprintf("no run of the current model and data (%s dropped the run of model %s): :sample first", cmd, r.last.model)
	r.last = nil
}

// bind binds st's model to its data files and values plus extra values
// (--set of :sample); print() in transformed data writes to print, and
// ctx stops transformed data and the model's density evaluations.
func (r *repl) bind(ctx context.Context, st modelState, seed uint64, extra []string, print io.Writer) (*runtime.Model, error) {
	set, err := interruptible(ctx, func() (*data.Set, error) { return data.Load(st.files, nil) })
	if err != nil {
		return nil, err
	}
	args := slices.Clone(st.sets)
	for _, s := range extra {
		args = append(args, dataArg{"--set", s})
	}
	for _, a := range args {
		v, err := data.ParseFlag(a.source, a.text)
		if err != nil {
			return nil, err
		}
		set.AddSet(v)
	}
	return runtime.Bind(st.model, set, runtime.Options{Impls: builtins(), Print: print, Seed: seed, DataFiles: st.files, Context: ctx})
}

// describeModel prints the loaded model's parameters.
func (r *repl) describeModel() {
	m := r.state.model
	fmt.Fprintf(r.stdout, "model %s: %d parameter(s), %d unconstrained coordinate(s)\n", m.Name, len(m.Params), r.state.bound.Dim())
	tw := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
	for _, d := range m.Params {
		constraint := d.ConstraintText
		if constraint == "" {
			constraint = "unconstrained"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Var.Name, d.ShapeText, constraint)
	}
	tw.Flush()
}

func (r *repl) cmdLoad(ctx context.Context, rest string) error {
	args := splitFields(rest)
	if len(args) == 0 {
		if r.state.model == nil {
			return errors.New("usage: :load model.shm [data...]")
		}
		return r.load(ctx, r.state.path, nil)
	}
	return r.load(ctx, args[0], args[1:])
}

func (r *repl) cmdData(ctx context.Context, rest string) error {
	files := splitFields(rest)
	if len(files) == 0 {
		fmt.Fprintf(r.stdout, "data files: %s\n", strings.Join(r.state.files, " "))
		return nil
	}
	if r.state.model == nil {
		return errors.New("no model loaded (:load model.shm)")
	}
	next := r.state
	next.files = files
	return r.rebind(ctx, ":data", next)
}

func (r *repl) cmdSet(ctx context.Context, rest string) error {
	if rest == "" {
		for _, s := range r.state.sets {
			fmt.Fprintln(r.stdout, s.text)
		}
		return nil
	}
	if _, err := data.ParseFlag(":set", rest); err != nil {
		return err
	}
	if r.state.model == nil {
		return errors.New("no model loaded (:load model.shm)")
	}
	next := r.state
	next.sets = append(slices.Clone(next.sets), dataArg{":set", rest})
	return r.rebind(ctx, ":set", next)
}

// boundModel returns the current bound model or explains why there is
// none.
func (r *repl) boundModel() (*runtime.Model, error) {
	switch {
	case r.state.model == nil:
		return nil, errors.New("no model loaded (:load model.shm [data...])")
	case r.state.bound == nil:
		return nil, fmt.Errorf("%s is not bound to data (:data file..., :set name=value)", r.state.path)
	}
	return r.state.bound, nil
}

// cmdLP prints the log density and its gradient on the unconstrained
// scale at a point given as name=value pairs or a JSON file, as "shm
// diagnose" does; ctx stops the evaluation.
func (r *repl) cmdLP(ctx context.Context, rest string) error {
	bm, err := r.boundModel()
	if err != nil {
		return err
	}
	if rest == "" && bm.Dim() > 0 {
		return fmt.Errorf("usage: :lp name=value,... or :lp point.json (parameters: %s)", strings.Join(paramNames(bm), ", "))
	}
	point := &data.Set{}
	if rest != "" {
		if point, err = loadPoint(":lp", rest); err != nil {
			return err
		}
	}
	if err := checkPoint(":lp", point, bm, true); err != nil {
		return err
	}
	err = r.logDensity(bm.WithContext(ctx), point)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf(":lp interrupted (%v)", err)
	}
	return err
}

// paramNames returns the names of bm's parameters.
func paramNames(bm *runtime.Model) []string {
	var names []string
	for _, e := range bm.Layout.Entries {
		names = append(names, e.Decl.Var.Name)
	}
	return names
}

// logDensity prints :lp's report at point.
func (r *repl) logDensity(bm *runtime.Model, point *data.Set) error {
	theta, err := bm.Unconstrain(point, rand.New(rand.NewPCG(r.seed, 0x1a17)), 2)
	if err != nil {
		return err
	}
	d, err := bm.NewDensity()
	if err != nil {
		return err
	}
	d.Workers = goruntime.GOMAXPROCS(0)
	grad := make([]float64, len(theta))
	start := time.Now()
	lp, err := d.LogDensityGrad(theta, grad)
	if err != nil {
		return err
	}
	// As CmdStan reports before sampling (the first evaluation includes
	// what the model computes once, such as a Sinkhorn term of the data).
	fmt.Fprintf(r.stdout, "Gradient evaluation took %.3g seconds\n", time.Since(start).Seconds())
	// The log density without the log-Jacobian, from the transforms
	// alone: evaluating the model again would double the command's time.
	lj, err := d.LogJacobian(theta)
	if err != nil {
		return err
	}
	lpConstrained := lp - lj
	fmt.Fprintf(r.stdout, "lp = %.6g (unconstrained, with the log-Jacobian; %.6g without)\n", lp, lpConstrained)
	tw := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  coordinate\tunconstrained\tgradient")
	for _, e := range bm.Layout.Entries {
		for k := range e.Size {
			label := fmt.Sprintf("%s.u%d", e.Decl.Var.Name, k+1)
			if len(e.Columns) == e.Size {
				label = e.Columns[k]
			}
			i := e.Offset + k
			fmt.Fprintf(tw, "  %s\t%.6g\t%.6g\n", label, theta[i], grad[i])
		}
	}
	return tw.Flush()
}

// sampleRun is a finished run kept in memory.
type sampleRun struct {
	model  string
	seed   uint64
	chains []*chainRecord
	fit    *diag.Fit
	// inputs are the session's model and data files when the run was
	// made: its files must not replace them.
	inputs []string
}

// chainRecord keeps one chain's output in memory; it is a chainOutput.
type chainRecord struct {
	header    stancsv.Config
	columns   []string
	adapted   bool
	adaptedAt int // the rows written before the adaptation (saved warmup draws)
	stepSize  float64
	dense     bool
	dim       int
	invMetric []float64
	rows      [][]float64
	timed     bool
	warmup    time.Duration
	sampling  time.Duration
}

func (c *chainRecord) WriteAdaptation(stepSize float64, dense bool, dim int, invMetric []float64) error {
	c.adapted, c.adaptedAt, c.stepSize, c.dense, c.dim = true, len(c.rows), stepSize, dense, dim
	c.invMetric = slices.Clone(invMetric)
	return nil
}

func (c *chainRecord) WriteRow(values []float64) error {
	c.rows = append(c.rows, slices.Clone(values))
	return nil
}

func (c *chainRecord) WriteTiming(warmup, sampling time.Duration) error {
	c.timed, c.warmup, c.sampling = true, warmup, sampling
	return nil
}

func (c *chainRecord) Finish() error { return nil }
func (c *chainRecord) Commit() error { return nil }
func (c *chainRecord) Abort()        {}

// replay writes the recorded chain to w, in the order it was written
// (saved warmup draws, the adaptation, the draws), and finishes it (the
// caller commits or aborts it); it stops with ctx's error once ctx is done.
func (c *chainRecord) replay(ctx context.Context, w *stancsv.Writer) error {
	for i, row := range c.rows {
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if c.adapted && i == c.adaptedAt {
			if err := w.WriteAdaptation(c.stepSize, c.dense, c.dim, c.invMetric); err != nil {
				return err
			}
		}
		if err := w.WriteRow(row); err != nil {
			return err
		}
	}
	if c.adapted && c.adaptedAt == len(c.rows) {
		if err := w.WriteAdaptation(c.stepSize, c.dense, c.dim, c.invMetric); err != nil {
			return err
		}
	}
	if c.timed {
		if err := w.WriteTiming(c.warmup, c.sampling); err != nil {
			return err
		}
	}
	return w.Finish()
}

// toFit gathers the chains as "shm summary" reads them from Stan CSV
// files, so that the summary is the one of the files :write writes.
func (s *sampleRun) toFit() (*diag.Fit, error) {
	files := make([]*stancsv.File, len(s.chains))
	for i, c := range s.chains {
		var buf bytes.Buffer
		w, err := stancsv.NewStream(&buf, &c.header, c.columns)
		if err != nil {
			return nil, err
		}
		if err := c.replay(context.Background(), w); err != nil {
			return nil, err
		}
		if files[i], err = stancsv.Read(&buf); err != nil {
			return nil, err
		}
	}
	return stancsv.ToFit(files)
}

// write writes one Stan CSV file per chain into dir and returns their
// paths; it stops with ctx's error once ctx is done.
func (s *sampleRun) write(ctx context.Context, dir string) ([]string, error) {
	for _, c := range s.chains {
		path := chainPath(dir, s.model, c.header.ID)
		if in, ok := sameFile(path, s.inputs); ok {
			return nil, fmt.Errorf("%s: chain %d's file %s is the input %s: writing would replace it; give another folder", dir, c.header.ID, path, in)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: cannot make the folder %s: %v", dir, pe.Path, pe.Err)
		}
		return nil, fmt.Errorf("%s: %v", dir, err)
	}
	// Every chain is written under a temporary name, and all are moved
	// into place together once complete: a failure or a stop (Ctrl-C,
	// SIGTERM) leaves no file of this run, as with "shm sample".
	writers := make([]*stancsv.Writer, 0, len(s.chains))
	defer func() {
		for _, w := range writers {
			w.Abort()
		}
	}()
	var paths []string
	for _, c := range s.chains {
		h := c.header
		h.OutputFile = chainPath(dir, s.model, h.ID)
		w, err := stancsv.Create(h.OutputFile, &h, c.columns)
		if err != nil {
			return nil, err
		}
		writers = append(writers, w)
		if err := c.replay(ctx, w); err != nil {
			return nil, err
		}
		paths = append(paths, h.OutputFile)
	}
	for _, w := range writers {
		if err := w.Commit(); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// cmdSample runs NUTS in memory with the flags of "shm sample" (except
// that --output, off by default, writes the files once the run is
// complete). A :sample that fails, or that Ctrl-C stops, leaves no run:
// the previous one is dropped.
func (r *repl) cmdSample(ctx context.Context, rest string) error {
	prev := r.last
	r.last = nil
	err := r.sample(ctx, rest)
	if err != nil && prev != nil {
		r.dropped = fmt.Sprintf("no run (the failed :sample dropped the run of model %s): :sample first", prev.model)
		note := fmt.Sprintf("the previous run (model %s) is dropped", prev.model)
		var list interface{ Unwrap() []error }
		if errors.As(err, &list) { // printed one error a line
			return errors.Join(err, errors.New(note))
		}
		return fmt.Errorf("%w; %s", err, note)
	}
	return err
}

// sample runs :sample and makes its run the last one.
func (r *repl) sample(ctx context.Context, rest string) error {
	if _, err := r.boundModel(); err != nil {
		return err
	}
	fs := flag.NewFlagSet(":sample", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f sampleFlags
	f.register(fs)
	f.output = ""
	fs.Lookup("output").DefValue = ""
	pos, err := parseArgs(fs, splitFields(rest))
	if err != nil {
		return fmt.Errorf(":sample: %v", err)
	}
	if len(pos) > 0 {
		return fmt.Errorf(":sample: unexpected argument %q (the model and data are those loaded)", shorten(pos[0], 40))
	}
	seedGiven := setFlags(fs)["seed"]
	if err := f.validate(); err != nil {
		return fmt.Errorf(":sample: %v", err)
	}
	if !seedGiven {
		f.seed = uint64(time.Now().UnixNano()) & (1<<31 - 1)
	}
	// Ctrl-C stops the run, transformed data included (in a script too).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	interrupted := errors.New("sampling interrupted; no draws kept from this run")
	bm, err := r.bind(ctx, r.state, f.seed, f.sets, r.stderr)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted
		}
		return err
	}
	initSet, err := loadInit(f.init)
	if err != nil {
		return err
	}
	if err := checkInit(f.init, initSet, bm, r.stderr); err != nil {
		return err
	}
	if f.output != "" {
		// Refused before the run, as shm sample refuses it.
		inputs := append([]string{r.state.path}, r.state.files...)
		for id := f.chainID; id < f.chainID+f.chains; id++ {
			if in, ok := sameFile(chainPath(f.output, bm.IR.Name, id), inputs); ok {
				return fmt.Errorf(":sample: --output %s: chain %d's file %s is the input %s: the run would replace it; give another folder", f.output, id, chainPath(f.output, bm.IR.Name, id), in)
			}
		}
	}
	cfg := f.nutsConfig()
	var bar *progressLine
	if r.progress {
		bar = newProgressLine(r.stderr, f.chainID, f.chains)
		cfg.Progress = bar.update
	}
	cfg.Rejected = rejectionMessages(r.stderr, new(sync.Mutex))
	run := &sampleRun{model: bm.IR.Name, seed: f.seed, chains: make([]*chainRecord, f.chains), inputs: append([]string{r.state.path}, r.state.files...)}
	record := func(header *stancsv.Config, columns []string) (chainOutput, error) {
		c := &chainRecord{header: *header, columns: columns}
		run.chains[header.ID-f.chainID] = c
		return c, nil
	}
	// The chains' headers say what data they saw, as shm sample's: the
	// files' digest and every value set (the session's, then the run's).
	if f.dataDigest, err = dataDigest(r.state.files); err != nil {
		return err
	}
	var sets setList
	for _, a := range r.state.sets {
		sets = append(sets, a.text)
	}
	f.sets = append(sets, f.sets...)
	err = runChains(ctx, bm, cfg, &f, r.state.files, initSet, record)
	if bar != nil {
		bar.clear()
	}
	if ctx.Err() != nil {
		return interrupted
	}
	if err != nil {
		return err
	}
	if run.fit, err = run.toFit(); err != nil {
		return err
	}
	r.last, r.dropped = run, ""
	fmt.Fprintf(r.stdout, "%d chain(s) × %d draws (seed %d); :summary, :draws name, :write dir\n", f.chains, len(run.fit.Chains[0].Draws), f.seed)
	if f.output != "" {
		return r.writeRun(ctx, f.output)
	}
	return nil
}

// lastRun returns the last run, which is of the current model and data,
// or explains why there is none.
func (r *repl) lastRun() (*sampleRun, error) {
	switch {
	case r.last != nil:
		return r.last, nil
	case r.dropped != "":
		return nil, errors.New(r.dropped)
	}
	return nil, errors.New("no run yet: :sample first")
}

// cmdSummary prints the last run's summary; Ctrl-C while it is computed
// (seconds for thousands of columns) prints nothing.
func (r *repl) cmdSummary(ctx context.Context) error {
	run, err := r.lastRun()
	if err != nil {
		return err
	}
	text, err := interruptible(ctx, func() (string, error) {
		var b strings.Builder
		err := diag.WriteSummary(&b, run.fit)
		return b.String(), err
	})
	if ctx.Err() != nil {
		return errors.New(":summary interrupted")
	}
	fmt.Fprint(r.stdout, text)
	return err
}

func (r *repl) cmdWrite(ctx context.Context, rest string) error {
	args := splitFields(rest)
	if len(args) != 1 {
		return errors.New("usage: :write dir")
	}
	if _, err := r.lastRun(); err != nil {
		return err
	}
	return r.writeRun(ctx, args[0])
}

func (r *repl) writeRun(ctx context.Context, dir string) error {
	paths, err := r.last.write(ctx, dir)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("writing %s interrupted; no file of the run written", dir)
	}
	noteOtherChains(r.stderr, dir, paths)
	for _, p := range paths {
		fmt.Fprintf(r.stdout, "wrote %s\n", p)
	}
	return err
}

// columnName turns "s[1,2]" into Stan's column name "s.1.2".
func columnName(s string) string {
	s = strings.TrimSpace(s)
	if name, idx, ok := strings.Cut(s, "["); ok {
		idx = strings.TrimSuffix(strings.TrimSpace(idx), "]")
		parts := strings.Split(idx, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return strings.TrimSpace(name) + "." + strings.Join(parts, ".")
	}
	return s
}

// cmdDraws prints the quantiles and a text histogram of one column.
func (r *repl) cmdDraws(rest string) error {
	run, err := r.lastRun()
	if err != nil {
		return err
	}
	if rest == "" {
		return errors.New("usage: :draws name (a column such as mu or s.1)")
	}
	name := columnName(rest)
	j := slices.Index(run.fit.Columns, name)
	if j < 0 {
		var cols []string
		for _, c := range run.fit.Columns {
			if strings.HasPrefix(c, name+".") {
				cols = append(cols, c)
			}
		}
		if len(cols) > 0 {
			return fmt.Errorf("%s has %d columns (%s): choose one", name, len(cols), strings.Join(head(cols, 6), ", "))
		}
		return fmt.Errorf("no column %s in the last run", name)
	}
	var x []float64
	chains := run.fit.Column(j)
	for _, c := range chains {
		for _, v := range c {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				x = append(x, v)
			}
		}
	}
	total := 0
	for _, c := range chains {
		total += len(c)
	}
	fmt.Fprintf(r.stdout, "%s: %d draws from %d chain(s)", name, total, len(chains))
	if n := total - len(x); n > 0 {
		fmt.Fprintf(r.stdout, ", %d not finite (left out)", n)
	}
	fmt.Fprintln(r.stdout)
	if len(x) == 0 {
		return nil
	}
	writeDraws(r.stdout, x)
	return nil
}

// head returns the first n elements of s, with "…" when there are more.
func head(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), "…")
}

// drawQuantiles are the probabilities :draws reports.
var drawQuantiles = []float64{0.05, 0.25, 0.5, 0.75, 0.95}

// writeDraws prints the mean, sd, quantiles and a histogram of x (finite,
// not empty).
func writeDraws(w io.Writer, x []float64) {
	mean, sd := meanSD(x)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\tmean\tsd\t")
	for _, p := range drawQuantiles {
		fmt.Fprintf(tw, "%g%%\t", 100*p)
	}
	fmt.Fprintf(tw, "\n\t%.4g\t%.4g\t", mean, sd)
	for _, p := range drawQuantiles {
		fmt.Fprintf(tw, "%.4g\t", diag.Quantile(x, p))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	edges, counts := histogram(x, 12)
	most := slices.Max(counts)
	const width = 40
	tw = tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i, n := range counts {
		bar := strings.Repeat("#", int(math.Round(float64(width*n)/float64(most))))
		if n > 0 && bar == "" {
			bar = "."
		}
		fmt.Fprintf(tw, "  %.4g\t%s\t%d\n", edges[i], bar, n)
	}
	tw.Flush()
}

// meanSD returns the mean and sample standard deviation of x.
func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// histogram counts x in bins equal-width bins from its minimum to its
// maximum (the last bin includes the maximum) and returns each bin's
// lower edge and count. Constant x gives one bin.
func histogram(x []float64, bins int) (edges []float64, counts []int) {
	lo, hi := slices.Min(x), slices.Max(x)
	if lo == hi {
		return []float64{lo}, []int{len(x)}
	}
	width := (hi - lo) / float64(bins)
	counts = make([]int, bins)
	for _, v := range x {
		k := int((v - lo) / width)
		counts[min(max(k, 0), bins-1)]++
	}
	edges = make([]float64, bins)
	for i := range edges {
		edges[i] = lo + float64(i)*width
	}
	return edges, counts
}

// progressLine shows the progress of all chains on one terminal line.
type progressLine struct {
	mu      sync.Mutex
	w       io.Writer
	first   int // number of the first chain
	done    []int
	total   []int
	warmup  []bool
	percent int
}

// newProgressLine returns the progress line of chains chains numbered from
// first.
func newProgressLine(w io.Writer, first, chains int) *progressLine {
	return &progressLine{w: w, first: first, done: make([]int, chains), total: make([]int, chains), warmup: make([]bool, chains), percent: -1}
}

func (p *progressLine) update(pr nuts.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := pr.Chain - p.first
	p.done[i], p.total[i], p.warmup[i] = pr.Iteration, pr.Total, pr.Warmup
	done, total := 0, 0
	for k := range p.done {
		done += p.done[k]
		total += max(p.total[k], pr.Total)
	}
	percent := 100 * done / max(total, 1)
	if percent == p.percent {
		return
	}
	p.percent = percent
	phase := "sampling"
	if slices.Contains(p.warmup, true) {
		phase = "warmup"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%d chain(s): %3d%% (%s; Ctrl-C stops)", len(p.done), percent, phase)
}

func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
}

// splitFields splits a command's arguments at spaces outside single or
// double quotes, which are removed.
func splitFields(s string) []string {
	var fields []string
	var b strings.Builder
	inField := false
	var quote rune
	for _, c := range s {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(c)
		case c == '"' || c == '\'':
			quote, inField = c, true
		case c == ' ' || c == '\t':
			if inField {
				fields = append(fields, b.String())
				b.Reset()
				inField = false
			}
		default:
			b.WriteRune(c)
			inField = true
		}
	}
	if inField {
		fields = append(fields, b.String())
	}
	return fields
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// completions are the words offered by tab completion.
type completions struct {
	idents  []string // built-ins, distributions, names in scope, parameters
	columns []string // columns of the last run
	flags   []string // flags of :sample
}

// updateCompletions refreshes the words completion offers after a
// command.
func (r *repl) updateCompletions() {
	t := stdlib.Builtins()
	idents := append(t.Names(), t.FamilyNames()...)
	idents = append(idents, r.session.Names()...)
	if r.state.model != nil {
		for _, d := range r.state.model.Params {
			idents = append(idents, d.Var.Name)
		}
	}
	sort.Strings(idents)
	var c completions
	c.idents = slices.Compact(idents)
	if r.last != nil {
		c.columns = r.last.fit.Columns
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	new(sampleFlags).register(fs)
	fs.VisitAll(func(f *flag.Flag) { c.flags = append(c.flags, "--"+f.Name) })
	r.mu.Lock()
	r.completions = c
	r.mu.Unlock()
}

// Do implements readline.AutoCompleter: it completes the word before pos
// with commands, file names (after :load, :data, :write), columns (after
// :draws), flags (after :sample) or identifiers.
func (r *repl) Do(line []rune, pos int) ([][]rune, int) {
	r.mu.Lock()
	c := r.completions
	r.mu.Unlock()
	text := string(line[:pos])
	trimmed := strings.TrimLeft(text, " \t")
	if strings.HasPrefix(trimmed, ":") && !strings.ContainsAny(trimmed, " \t") {
		return complete(replCommands, trimmed)
	}
	cmd := ""
	if strings.HasPrefix(trimmed, ":") {
		cmd, _, _ = strings.Cut(trimmed, " ")
	}
	word := text[strings.LastIndexAny(text, " \t")+1:]
	switch cmd {
	case ":load", ":data", ":write":
		return completeFile(word)
	case ":draws":
		return complete(c.columns, word)
	case ":sample":
		if strings.HasPrefix(word, "-") {
			return complete(c.flags, "--"+strings.TrimLeft(word, "-"))
		}
		return nil, 0
	}
	start := len(text)
	for start > 0 && isIdentByte(text[start-1]) {
		start--
	}
	return complete(c.idents, text[start:])
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// complete returns the rest of each word that starts with prefix.
func complete(words []string, prefix string) ([][]rune, int) {
	var out [][]rune
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, []rune(w[len(prefix):]))
		}
	}
	return out, len([]rune(prefix))
}

// completeFile completes a file name; directories end in a slash.
func completeFile(word string) ([][]rune, int) {
	dir, base := filepath.Split(word)
	entries, err := os.ReadDir(orDefault(dir, "."))
	if err != nil {
		return nil, 0
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	return complete(names, base)
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
