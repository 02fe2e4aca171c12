package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  gen expB --seed S --out DIR
  gen expC --seed S --out DIR [--jitter 0.05]
  gen expD --seed S --out DIR [--cifar FILE] [--first I] [--count N]
  gen gandk --seed S --out DIR [--count N]   (the g-and-k example of docs/sinkhorn.md)
  gen expD-eval --truth FILE RUNDIR...
  gen expD-sweep CALIBRATIONDIR...`

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(strings.TrimSuffix(usage, "\n"))
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", "", "output folder (created if missing)")
	cifar := fs.String("cifar", filepath.Join("..", "shared", "cifar10", "images.bin"), "CIFAR-10 binary file (expD)")
	first := fs.Int("first", 0, "first image index (expD)")
	count := fs.Int("count", 64, "number of images (expD) or of values (gandk: 100 unless given)")
	truth := fs.String("truth", "", "truth.csv written by expD (expD-eval)")
	jitter := fs.Float64("jitter", defaultPulse.Jitter, "timing jitter scale (expC; 0 gives the paper's jitter-free check)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch cmd {
	case "expB", "expC", "expD", "gandk":
		if *out == "" {
			return fmt.Errorf("%s: --out is required", cmd)
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	switch cmd {
	case "expB":
		pts := spiral(defaultSpiral, *seed)
		return writeFile(filepath.Join(*out, "data.csv"), func(w io.Writer) error {
			return writeColumns(w, []string{"y.1", "y.2"}, pts[0], pts[1])
		})
	case "expC":
		settings := defaultPulse
		settings.Jitter = *jitter
		t, y := pulse(settings, *seed)
		return writeFile(filepath.Join(*out, "data.csv"), func(w io.Writer) error {
			return writeColumns(w, []string{"t", "y"}, t, y)
		})
	case "expD":
		raw, err := os.ReadFile(*cifar)
		if err != nil {
			return err
		}
		imgs, err := decodeCIFAR(raw)
		if err != nil {
			return fmt.Errorf("%s: %v", *cifar, err)
		}
		if *first < 0 || *count < 1 || *first+*count > len(imgs) {
			return fmt.Errorf("expD: images %d..%d requested, the file has %d", *first, *first+*count-1, len(imgs))
		}
		var truthRows []string
		for idx := *first; idx < *first+*count; idx++ {
			p := windowProblem(imgs[idx], idx, defaultWindow, *seed)
			name := fmt.Sprintf("img%03d.json", idx)
			if err := writeFile(filepath.Join(*out, name), p.writeJSON); err != nil {
				return err
			}
			truthRows = append(truthRows, fmt.Sprintf("%d,%d,%s,%s,%s", idx, imgs[idx].Label, name, fmtFloat(p.DX), fmtFloat(p.DY)))
		}
		return writeFile(filepath.Join(*out, "truth.csv"), func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "index,label,file,dx,dy\n%s\n", strings.Join(truthRows, "\n"))
			return err
		})
	case "gandk":
		settings := defaultGandK
		fs.Visit(func(f *flag.Flag) { // --count's default is expD's
			if f.Name == "count" {
				settings.N = *count
			}
		})
		if settings.N < 1 {
			return fmt.Errorf("gandk: --count must be positive, got %d", settings.N)
		}
		return writeFile(filepath.Join(*out, "data.csv"), func(w io.Writer) error {
			return writeColumns(w, []string{"y"}, gandk(settings, *seed))
		})
	case "expD-eval":
		if *truth == "" || fs.NArg() == 0 {
			return errors.New("expD-eval: --truth FILE and at least one run folder are required")
		}
		return evalD(*truth, fs.Args(), stdout)
	case "expD-sweep":
		if fs.NArg() == 0 {
			return errors.New("expD-sweep: at least one calibration folder (shm calibrate --dir) is required")
		}
		return sweepD(fs.Args(), stdout)
	}
	return fmt.Errorf("unknown experiment %q\n%s", cmd, usage)
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", path, err)
	}
	return f.Close()
}

// fmtFloat formats x with the fewest digits that read back exactly.
func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// writeColumns writes a CSV file with the given header and equal-length
// columns.
func writeColumns(w io.Writer, header []string, cols ...[]float64) error {
	if _, err := fmt.Fprintln(w, strings.Join(header, ",")); err != nil {
		return err
	}
	cells := make([]string, len(cols))
	for i := range cols[0] {
		for j, c := range cols {
			cells[j] = fmtFloat(c[i])
		}
		if _, err := fmt.Fprintln(w, strings.Join(cells, ",")); err != nil {
			return err
		}
	}
	return nil
}
