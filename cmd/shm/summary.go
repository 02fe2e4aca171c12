package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
)

// cmdSummary implements "shm summary FILES...": the stansummary-style
// table of existing Stan CSV files (ours or CmdStan's).
func cmdSummary(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("summary", stderr)
	mixed := fs.Bool("mixed", false, "pool chains of different posteriors (model text, data, --set values, or a seed the posterior depends on) anyway, with a warning")
	files, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "usage: shm summary output-1.csv [output-2.csv ...]")
		return 2
	}
	read := stancsv.ReadFit
	if *mixed {
		read = stancsv.ReadMixedFit
	}
	// Reading and summarizing large files takes seconds: Ctrl-C and
	// SIGTERM abandon them and say so.
	ctx, release := signalContext(os.Interrupt, syscall.SIGTERM)
	defer release()
	fit, err := interruptible(ctx, func() (*diag.Fit, error) { return read(files...) })
	if ctx.Err() != nil {
		return stopStatus(stderr, "summary")
	}
	if err != nil {
		return report(stderr, mixedHint(err))
	}
	for _, w := range fit.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if !slices.ContainsFunc(fit.Chains, func(c diag.Chain) bool { return len(c.Draws) > 0 }) {
		fmt.Fprintf(stderr, "shm summary: %s: no draws to summarize (the chains saved no sampling iterations)\n", strings.Join(files, ", "))
		return 1
	}
	table, err := interruptible(ctx, func() ([]byte, error) {
		var b bytes.Buffer
		err := diag.WriteSummary(&b, fit)
		return b.Bytes(), err
	})
	if ctx.Err() != nil {
		return stopStatus(stderr, "summary")
	}
	if err != nil {
		return report(stderr, err)
	}
	if _, err := stdout.Write(table); err != nil {
		return report(stderr, err)
	}
	return 0
}

// mixedHint adds to stancsv's refusal of chains of different posteriors
// the flag that pools them anyway.
func mixedHint(err error) error {
	var mixed *stancsv.MixedError
	if errors.As(err, &mixed) {
		return fmt.Errorf("%w; --mixed pools them anyway", err)
	}
	return err
}
