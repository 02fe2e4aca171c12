package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/shmlang/shm/ir"
)

// cmdCheck implements "shm check model.shm": it prints "ok" and one line
// per parameter, or every error found, and exits 1 on error.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: shm check model.shm")
		return 2
	}
	file := args[0]
	text, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "shm: %v\n", err)
		return 1
	}
	m, errs := ir.CheckSource(file, string(text))
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "%d error(s)\n", len(errs))
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, d := range m.Params {
		constraint := d.ConstraintText
		if constraint == "" {
			constraint = "unconstrained"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Var.Name, d.ShapeText, constraint)
	}
	tw.Flush()
	return 0
}
