package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"

	"github.com/shmlang/shm/lang"
)

// cmdCheck implements "shm check model.shm": it prints "ok" and one line
// per parameter, or every error found, and exits 1 on error.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fmt.Fprintln(stderr, "usage: shm check model.shm")
		return 0
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: shm check model.shm")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, err := checkModelContext(ctx, args[0])
	var errs lang.ErrorList
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "shm check: interrupted")
		return 1
	case errors.As(err, &errs):
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "%d error(s)\n", len(errs))
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "shm: %v\n", err)
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
