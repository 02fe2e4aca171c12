package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

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

// parseArgs parses flags that may come before or after the positional
// arguments, as language.md asks, and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
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
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // fs.Parse reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return pos, nil
}

// newFlagSet returns a flag set that reports errors to stderr without
// exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// checkModel reads and checks a model file, rendering every error.
func checkModel(path string) (*ir.Model, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, errs := ir.CheckSource(path, string(text))
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

// loadInit reads --init: a JSON file, or name=value pairs separated by
// commas ("mu=1,sigma=2").
func loadInit(arg string) (*data.Set, error) {
	set := &data.Set{}
	if arg == "" {
		return set, nil
	}
	if strings.HasSuffix(strings.ToLower(arg), ".json") {
		vals, err := data.ReadFile(arg)
		if err != nil {
			return nil, err
		}
		return set, set.AddFile(vals)
	}
	for _, part := range splitTopLevel(arg) {
		v, err := data.ParseSet(part)
		if err != nil {
			return nil, fmt.Errorf("--init: %w", err)
		}
		set.AddSet(v)
	}
	return set, nil
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
	m, err := checkModel(path)
	if err != nil {
		return nil, err
	}
	set, err := data.Load(files, sets)
	if err != nil {
		return nil, err
	}
	return runtime.Bind(m, set, runtime.Options{Impls: builtins(), Print: print, Seed: seed, DataFiles: files})
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
