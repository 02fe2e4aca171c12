package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shmlang/shm/runtime/diag"
	"github.com/shmlang/shm/runtime/stancsv"
)

// cmdSummary implements "shm summary FILES...": the stansummary-style
// table of existing Stan CSV files (ours or CmdStan's).
func cmdSummary(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("summary", stderr)
	files, err := parseArgs(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "usage: shm summary output-1.csv [output-2.csv ...]")
		return 2
	}
	fit, err := stancsv.ReadFit(files...)
	if err != nil {
		return report(stderr, err)
	}
	for _, w := range fit.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if !slices.ContainsFunc(fit.Chains, func(c diag.Chain) bool { return len(c.Draws) > 0 }) {
		fmt.Fprintf(stderr, "shm summary: %s: no draws to summarize (the chains saved no sampling iterations)\n", strings.Join(files, ", "))
		return 1
	}
	if err := diag.WriteSummary(stdout, fit); err != nil {
		return report(stderr, err)
	}
	return 0
}
