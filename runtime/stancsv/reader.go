package stancsv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shmlang/shm/internal/sysmem"
)

// File is the content of one Stan CSV file.
type File struct {
	// Config maps each "key = value" of the header comments to its value,
	// with CmdStan's " (Default)" suffix removed. Keys are both the bare
	// key ("num_samples", first occurrence wins) and its path in the
	// argument tree ("method.sample.num_samples", "data.file",
	// "output.file").
	Config  map[string]string
	Columns []string
	// Draws holds every row, warmup rows first; the first NumWarmupRows
	// rows are warmup draws (saved with save_warmup = 1).
	Draws         [][]float64
	NumWarmupRows int

	HasAdaptation bool
	StepSize      float64
	// InvMetric is the adapted inverse metric: Dim values (diagonal) or
	// Dim*Dim values row-major (dense).
	InvMetric   []float64
	DenseMetric bool

	HasTiming       bool
	WarmupSeconds   float64
	SamplingSeconds float64
}

// Int returns the configuration value of key as an integer.
func (f *File) Int(key string) (int, bool) {
	v, ok := f.Config[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// Float returns the configuration value of key as a float.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Config[key]
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil
}

// SamplingDraws returns the post-warmup rows.
func (f *File) SamplingDraws() [][]float64 { return f.Draws[f.NumWarmupRows:] }

// ReadFile reads the Stan CSV file at path.
func ReadFile(path string) (*File, error) { return readFile(path, newBudget()) }

func readFile(path string, b *budget) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("stancsv: %w", err)
	}
	defer fh.Close()
	f, err := read(fh, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ReadFiles reads the Stan CSV files at paths, whose numbers together are
// bounded by MaxValues.
func ReadFiles(paths ...string) ([]*File, error) { return readFiles(newBudget(), paths) }

func readFiles(b *budget, paths []string) ([]*File, error) {
	files := make([]*File, 0, len(paths))
	for _, p := range paths {
		f, err := readFile(p, b)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// MaxValues is the most numbers (columns and draws' values) that the files
// read together (by ReadFit, or one Read) may hold: a quarter of the
// memory the process may use (sysmem.Total) in float64s, 0 (no bound)
// when that is unknown. Summaries and figures copy the draws once more,
// by column.
func MaxValues() int64 {
	total, _ := sysmem.Total()
	return int64(total / 4 / 8)
}

// maxLineBytes is the longest line read: a thirty-second of the memory
// the process may use, at most 1 GiB (a header of 10^8 columns).
func maxLineBytes() int {
	total, _ := sysmem.Total()
	if total == 0 || total/32 > 1<<30 {
		return 1 << 30
	}
	return int(max(total/32, 1<<20))
}

// budget counts the numbers read against MaxValues.
type budget struct{ left, max int64 } // max 0: no bound

func newBudget() *budget {
	m := MaxValues()
	return &budget{left: m, max: m}
}

// take counts n more numbers, or returns the error that says they are too
// many.
func (b *budget) take(n int) error {
	if b.max == 0 {
		return nil
	}
	b.left -= int64(n)
	if b.left < 0 {
		return fmt.Errorf("stancsv: the files hold more than %d numbers (%s), more than a quarter of %s: give fewer files, or draws thinned (--thin)",
			b.max, sysmem.Bytes(8*float64(b.max)), sysmem.Source())
	}
	return nil
}

// Read parses a Stan CSV file.
func Read(r io.Reader) (*File, error) { return read(r, newBudget()) }

func read(r io.Reader, b *budget) (*File, error) {
	f := &File{Config: map[string]string{}, StepSize: math.NaN()}
	end := &lastByte{r: r}
	sc := bufio.NewScanner(end)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes())
	var (
		stack       []string // argument path by level
		state       int      // 0 header, 1 after columns
		metricLines int      // rows of the metric still expected (dense)
		inMetric    bool
		adaptAt     = -1
	)
	const (
		header = iota
		body
	)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			continue
		}
		if line[0] == '#' {
			text := strings.TrimPrefix(line[1:], " ")
			if state == header {
				parseConfigLine(f.Config, &stack, line[1:])
				continue
			}
			trimmed := strings.TrimSpace(text)
			switch {
			case trimmed == "Adaptation terminated":
				f.HasAdaptation = true
				adaptAt = len(f.Draws)
			case strings.HasPrefix(trimmed, "Step size = "):
				v, err := strconv.ParseFloat(strings.TrimPrefix(trimmed, "Step size = "), 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: step size: %w", lineNo, err)
				}
				f.StepSize = v
			case trimmed == "Diagonal elements of inverse mass matrix:":
				inMetric, metricLines = true, 1
			case trimmed == "Elements of inverse mass matrix:":
				inMetric, metricLines, f.DenseMetric = true, -1, true
			case strings.HasPrefix(trimmed, "Elapsed Time:"):
				v, err := parseSeconds(strings.TrimPrefix(trimmed, "Elapsed Time:"))
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", lineNo, err)
				}
				f.WarmupSeconds, f.HasTiming = v, true
			case strings.HasSuffix(trimmed, "seconds (Sampling)"):
				v, err := parseSeconds(trimmed)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", lineNo, err)
				}
				f.SamplingSeconds = v
			case inMetric && trimmed != "" && metricLines != 0:
				if err := b.take(strings.Count(trimmed, ",") + 1); err != nil {
					return nil, fmt.Errorf("line %d: %w", lineNo, err)
				}
				row, err := parseRow(strings.ReplaceAll(trimmed, " ", ""))
				if err != nil {
					inMetric = false // not a metric row: some other comment
					break
				}
				f.InvMetric = append(f.InvMetric, row...)
				metricLines--
				if f.DenseMetric && metricLines < 0 && len(f.InvMetric) == len(row)*len(row) {
					metricLines = 0
				}
				if metricLines == 0 {
					inMetric = false
				}
			}
			continue
		}
		// Counted before they are split: a line of 10^8 commas.
		if err := b.take(strings.Count(line, ",") + 1); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if state == header {
			f.Columns = strings.Split(line, ",")
			seen := make(map[string]int, len(f.Columns))
			for i, c := range f.Columns {
				c = strings.TrimSpace(c)
				f.Columns[i] = c
				if j, ok := seen[c]; ok {
					return nil, fmt.Errorf("line %d: column %d is %q again (column %d): a column name is given once", lineNo, i+1, c, j+1)
				}
				seen[c] = i
			}
			state = body
			continue
		}
		row, err := parseRow(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if len(row) != len(f.Columns) {
			return nil, fmt.Errorf("line %d: %d values for %d columns", lineNo, len(row), len(f.Columns))
		}
		f.Draws = append(f.Draws, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("stancsv: line %d is longer than %s, the most a line may have (a thirty-second of %s)", lineNo+1, sysmem.Bytes(float64(maxLineBytes())), sysmem.Source())
		}
		return nil, fmt.Errorf("stancsv: %w", err)
	}
	if end.n > 0 && end.last != '\n' {
		// Every writer ends its lines: a last line without its end was
		// cut (a copy or a disk that stopped), perhaps inside a value.
		return nil, fmt.Errorf("stancsv: line %d, the last, has no end of line: the file was cut short or is still being written", lineNo)
	}
	if state == header {
		return nil, fmt.Errorf("stancsv: no column header line")
	}
	if len(f.Config) == 0 && !slices.Contains(f.Columns, "lp__") {
		// A CSV file of data (or anything else) read as draws would give
		// a summary of its columns as if they were a chain.
		return nil, fmt.Errorf("stancsv: not a file of draws: it has neither a Stan CSV header (its # lines) nor an lp__ column (columns %s)", columnList(f.Columns))
	}
	if f.Config["save_warmup"] == "1" || f.Config["save_warmup"] == "true" {
		if adaptAt >= 0 {
			f.NumWarmupRows = adaptAt
		} else if nw, ok := f.Int("num_warmup"); ok {
			if nw < 0 {
				return nil, fmt.Errorf("stancsv: the header's num_warmup = %d is negative", nw)
			}
			thin, ok := f.Int("thin")
			if !ok || thin < 1 {
				thin = 1
			}
			f.NumWarmupRows = min(thinned(nw, thin), len(f.Draws))
		}
	}
	return f, nil
}

// columnList names the first few columns for a message.
func columnList(cols []string) string {
	const most, long = 5, 40
	var names []string
	for _, c := range cols[:min(len(cols), most)] {
		if r := []rune(c); len(r) > long {
			c = string(r[:long]) + "…"
		}
		names = append(names, strconv.Quote(c))
	}
	list := strings.Join(names, ", ")
	if len(cols) > most {
		list += fmt.Sprintf(", … (%d in all)", len(cols))
	}
	return list
}

// thinned is the number of draws that n iterations thinned by thin ≥ 1
// keep, ⌈n/thin⌉ (without overflow).
func thinned(n, thin int) int {
	k := n / thin
	if n%thin > 0 {
		k++
	}
	return k
}

// parseConfigLine records one header comment (text after '#').
func parseConfigLine(cfg map[string]string, stack *[]string, text string) {
	// CmdStan indents by two spaces per level after "# ".
	body := strings.TrimPrefix(text, " ")
	indent := len(body) - len(strings.TrimLeft(body, " "))
	level := indent / 2
	body = strings.TrimSpace(body)
	if body == "" {
		return
	}
	key, value, isKV := strings.Cut(body, "=")
	key = strings.TrimSpace(key)
	if strings.ContainsAny(key, " \t") {
		return // prose, not an argument
	}
	if level > len(*stack) {
		level = len(*stack)
	}
	*stack = append((*stack)[:level], key)
	if !isKV {
		return
	}
	value = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "(Default)"))
	if _, ok := cfg[key]; !ok {
		cfg[key] = value
	}
	path := strings.Join(*stack, ".")
	if path != key {
		cfg[path] = value
	}
}

func parseSeconds(s string) (float64, error) {
	fields := strings.Fields(s)
	if len(fields) < 2 || fields[1] != "seconds" {
		return 0, fmt.Errorf("stancsv: cannot read elapsed time %q", s)
	}
	return strconv.ParseFloat(fields[0], 64)
}

// parseRow parses comma-separated numbers, accepting C++'s nan/inf spellings.
func parseRow(line string) ([]float64, error) {
	row := make([]float64, 0, strings.Count(line, ",")+1)
	for i, rest, more := 0, line, true; more; i++ {
		var s string
		s, rest, more = strings.Cut(rest, ",")
		s = strings.TrimSpace(s)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			switch strings.ToLower(s) {
			case "nan", "-nan":
				v = math.NaN()
			case "inf", "+inf":
				v = math.Inf(1)
			case "-inf":
				v = math.Inf(-1)
			default:
				return nil, fmt.Errorf("stancsv: value %d is %q, not a number", i+1, s)
			}
		}
		row = append(row, v)
	}
	return row, nil
}

// lastByte is a reader that remembers the last byte read through it.
type lastByte struct {
	r    io.Reader
	n    int64
	last byte
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.n += int64(n)
		l.last = p[n-1]
	}
	return n, err
}
