// Command shm checks, samples and explores .shm probabilistic models.
//
// Usage:
//
//	shm check model.shm                 check a model; print its parameters
//	shm sample model.shm data.csv       sample with NUTS (Stan CSV + summary)
//	shm diagnose model.shm data.csv     gradient against finite differences
//	shm repl model.shm data.csv         explore interactively
//
// Run "shm help" for the list of commands.
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"

	"github.com/shmlang/shm/internal/sysmem"
)

func main() {
	if err := enoughMemory(); err != nil {
		fmt.Fprintf(os.Stderr, "shm: %v\n", err)
		os.Exit(1)
	}
	limitHeap()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// minMemory is the least memory shm runs with: a model's parser and a
// small chain's tapes need tens of megabytes, and every bound derived
// from the memory would otherwise refuse the smallest input with
// nonsense ("more than 0 tokens").
const minMemory = 128 << 20

// enoughMemory refuses to start when the memory the process may use
// (sysmem.Total) is below minMemory, naming the limit.
func enoughMemory() error {
	total, source := sysmem.Total()
	if total == 0 || total >= minMemory {
		return nil
	}
	return fmt.Errorf("shm may use only %s (%s), less than the %s it needs: raise the limit (under ulimit -v, the Go runtime and the C library map over a gigabyte before shm starts)", sysmem.Bytes(float64(total)), source, sysmem.Bytes(minMemory))
}

// limitHeap sets the Go runtime's soft memory limit to three quarters of
// the memory the process may use (sysmem.Total: the machine's, or a
// smaller address-space or control-group limit). The sizes shm accepts
// are checked against that memory; without the limit the collector lets
// the heap grow to twice what is live before it collects, and a run that
// passed the checks could die of a fatal out-of-memory instead.
func limitHeap() {
	if total, _ := sysmem.Total(); total > 0 && total < math.MaxInt64/4 {
		debug.SetMemoryLimit(int64(total / 4 * 3))
	}
}

// run executes the command line args, reading os.Stdin, and returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runWithInput(args, os.Stdin, stdout, stderr)
}

const usage = `shm: probabilistic programming with Sinkhorn losses

Usage:
  shm check model.shm      check a model and list its parameters
  shm sample model.shm [data...] [flags]
                           sample with NUTS; write Stan CSV and a summary
  shm optimize model.shm [data...] [--algorithm lbfgs|bfgs|newton] [--jacobian]
                           a posterior mode (MAP) as CmdStan's optimize
  shm laplace model.shm [data...] [--mode FILE] [--draws 1000]
                           draws from the normal approximation at the mode
  shm pathfinder model.shm [data...] [--num-paths 4] [--draws 1000]
                           Pathfinder variational inference
  shm log_prob model.shm [data...] --constrained POINTS
                           the log density and its gradient at points
  shm generate model.shm [data...] DRAWS.csv...
                           generated quantities again at existing draws
  shm diagnose model.shm [data...] [--init ...]
                           compare the gradient with finite differences
  shm summary FILES...     summary table of Stan CSV files
  shm plot KIND FILES... [--vars a,b] [--out file.png|file.svg]
                           figures of Stan CSV files: trace, rank, dens
                           (several runs overlaid), pairs, energy, ppc
                           (--data FILE --y NAME [--series]), location
                           (--data FILE --image NAME --vars X,Y --at C,R)
  shm calibrate lambda model.shm [data...] --dir DIR [--truth ... | --bootstrap B ...]
                           choose the loss scale by frequentist coverage, on
                           this machine's cores or as Slurm job arrays (--slurm)
  shm repl [model.shm] [data...] [--seed N] [--set name=value]
                           interactive session (":help" lists its commands)
  shm help                 show this help
`

// runWithInput executes the command line args with the given standard
// input and returns the exit status.
func runWithInput(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "sample":
		return cmdSample(args[1:], stdout, stderr)
	case "diagnose":
		return cmdDiagnose(args[1:], stdout, stderr)
	case "optimize":
		return cmdOptimize(args[1:], stdout, stderr)
	case "generate":
		return cmdGenerate(args[1:], stdout, stderr)
	case "laplace":
		return cmdLaplace(args[1:], stdout, stderr)
	case "pathfinder":
		return cmdPathfinder(args[1:], stdout, stderr)
	case "log_prob", "log-prob":
		return cmdLogProb(args[1:], stdout, stderr)
	case "summary":
		return cmdSummary(args[1:], stdout, stderr)
	case "plot":
		return cmdPlot(args[1:], stdout, stderr)
	case "calibrate":
		return cmdCalibrate(args[1:], stdout, stderr)
	case "repl":
		return cmdRepl(args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "shm: unknown command %q\n\n%s", args[0], usage)
	return 2
}
