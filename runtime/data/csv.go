package data

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/shmlang/shm/stdlib"
)

// maxIndex bounds the indices in CSV column names.
const maxIndex = 1<<31 - 1

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// csvSource locates the entries of a value read from a CSV file.
type csvSource struct {
	name    string
	columns []string // header names for the inner indices, row-major
	lines   []int    // line number of each row of the file
}

func (s *csvSource) file() string { return s.name }

func (s *csvSource) describe(v *Value) string {
	if len(s.columns) == 1 {
		return fmt.Sprintf("column %q", s.columns[0])
	}
	return fmt.Sprintf("columns %q … %q", s.columns[0], s.columns[len(s.columns)-1])
}

func (s *csvSource) where(v *Value, k int) string {
	inner := len(s.columns)
	return fmt.Sprintf("column %q, row %d", s.columns[k%inner], s.lines[k/inner])
}

// csvColumn accumulates one column of a CSV file.
type csvColumn struct {
	name     string
	data     []float64
	isInt    bool
	emptyRow int // first row with an empty cell, or -1
}

// ReadCSV reads a CSV data file. name is used in error messages and in the
// values' provenance; it is normally the path as the user gave it. The values
// come in the order of their first column in the header. See the package
// documentation for the format.
func ReadCSV(name string, r io.Reader) ([]*Value, error) {
	return readCSV(name, r, MaxValueWords())
}

// readCSV is ReadCSV with the bound of its values' memory, in words
// (valueBudget; 0: none): each row counts its cells, its line number, the
// cells' text while a key-value table's rows are kept, and a header for
// each indexed variable (x.1, x.2 or x[1], x[2]), whose row may become a
// vector, row vector or matrix of an array.
func readCSV(name string, r io.Reader, maxWords int64) ([]*Value, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'

	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: no header row: the file has no data", name)
	}
	if err != nil {
		return nil, csvReadError(name, err)
	}
	headerLine, _ := cr.FieldPos(0)
	for j, h := range header {
		header[j] = strings.TrimSpace(h)
		if _, ok := scanDecimal(header[j]); ok {
			return nil, fmt.Errorf("%s: row %d: header cell %s is a number: the first row must name the columns", name, headerLine, quoteText(header[j]))
		}
	}
	// A key-value table (its header "name,value" or alike) is told by its
	// rows, kept until the end; any other file is read row by row into
	// its columns, without keeping its text.
	kv := couldBeKeyValueTable(header)
	if !kv {
		cr.ReuseRecord = true
	}
	cols := newColumnReader(name, header)
	var records [][]string
	var lines []int
	budget := &valueBudget{file: name, limit: maxWords}
	rowWords := int64(1 + len(header) + indexedVariables(header)*int(stdlib.ElementWords))
	if kv {
		rowWords += int64(3 * len(header)) // each cell's string, and the row's slice
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvReadError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if budget.add(rowWords + int64(max(len(rec)-len(header), 0))) {
			return nil, budget.err(fmt.Sprintf("row %d", line))
		}
		for j, cell := range rec {
			rec[j] = strings.TrimSpace(cell)
		}
		if kv {
			records = append(records, rec)
			lines = append(lines, line)
			continue
		}
		if err := cols.add(rec, line); err != nil {
			return nil, err
		}
	}
	if kv && isKeyValueTable(header, records) {
		return readKeyValueTable(name, records, lines)
	}
	for i, rec := range records {
		if err := cols.add(rec, lines[i]); err != nil {
			return nil, err
		}
	}
	return cols.values()
}

// indexedVariables counts the variables of a header given by indexed
// columns (x.1, x.2, x[1, 1], ...).
func indexedVariables(header []string) int {
	seen := map[string]bool{}
	for _, h := range header {
		base, idx, _, err := parseColumnName(h)
		if err == nil && len(idx) > 0 {
			seen[base] = true
		}
	}
	return len(seen)
}

// columnReader reads the rows of a file of columns, one variable (or one
// column of one) each.
type columnReader struct {
	name  string
	cols  []csvColumn
	lines []int // the file's line of each row
}

func newColumnReader(name string, header []string) *columnReader {
	cols := make([]csvColumn, len(header))
	for j, h := range header {
		cols[j] = csvColumn{name: h, isInt: true, emptyRow: -1}
	}
	return &columnReader{name: name, cols: cols}
}

// add reads one row, from line of the file.
func (r *columnReader) add(rec []string, line int) error {
	name, cols, row := r.name, r.cols, len(r.lines)
	r.lines = append(r.lines, line)
	for j, cell := range rec {
		if j >= len(cols) {
			if cell != "" {
				return fmt.Errorf("%s: row %d: value %s in column %d, but the header has %d columns", name, line, quoteText(cell), j+1, len(cols))
			}
			continue
		}
		c := &cols[j]
		if cell == "" {
			if c.emptyRow < 0 {
				c.emptyRow = row
			}
			continue
		}
		if c.name == "" {
			return fmt.Errorf("%s: row %d: value %s in column %d, which has no name in the header", name, line, quoteText(cell), j+1)
		}
		if c.emptyRow >= 0 {
			return fmt.Errorf("%s: column %q, row %d: empty cell above the value in row %d (only the cells at the end of a column may be empty)", name, c.name, r.lines[c.emptyRow], line)
		}
		f, isInt, err := parseCell(cell)
		if err != nil {
			return fmt.Errorf("%s: column %q, row %d: %v", name, c.name, line, err)
		}
		c.data = append(c.data, f)
		c.isInt = c.isInt && isInt
	}
	for j := len(rec); j < len(cols); j++ {
		if cols[j].emptyRow < 0 {
			cols[j].emptyRow = row
		}
	}
	return nil
}

// values groups the columns read into values.
func (r *columnReader) values() ([]*Value, error) {
	return groupColumns(r.name, r.cols, r.lines)
}

// couldBeKeyValueTable reports whether a header is that of a key-value
// table: two columns, key (or name, variable) and value.
func couldBeKeyValueTable(header []string) bool {
	if len(header) != 2 || !strings.EqualFold(header[1], "value") {
		return false
	}
	switch strings.ToLower(header[0]) {
	case "key", "name", "variable":
		return true
	}
	return false
}

// isKeyValueTable reports whether a file is a table of scalars, one per row:
// a header of two columns named key (or name, or variable) and value, and a
// first column that does not start with a number. Read as columns, such a
// file would be an error.
func isKeyValueTable(header []string, records [][]string) bool {
	if !couldBeKeyValueTable(header) {
		return false
	}
	for _, rec := range records {
		if rec[0] != "" {
			_, _, err := parseCell(rec[0])
			return err != nil
		}
	}
	return false
}

// kvSource locates a scalar read from a row of a key-value table.
type kvSource struct {
	name string
	key  string
	line int
}

func (s *kvSource) file() string                 { return s.name }
func (s *kvSource) describe(v *Value) string     { return fmt.Sprintf("key %q, row %d", s.key, s.line) }
func (s *kvSource) where(v *Value, k int) string { return s.describe(v) }

// readKeyValueTable reads a table of scalars: each row names a variable and
// gives its value.
func readKeyValueTable(name string, records [][]string, lines []int) ([]*Value, error) {
	var values []*Value
	rows := map[string]int{}
	for r, rec := range records {
		line := lines[r]
		for j := 2; j < len(rec); j++ {
			if rec[j] != "" {
				return nil, fmt.Errorf("%s: row %d: value %s in column %d, but the header has 2 columns", name, line, quoteText(rec[j]), j+1)
			}
		}
		key, text := rec[0], ""
		if len(rec) > 1 {
			text = rec[1]
		}
		switch {
		case key == "" && text == "":
			continue
		case key == "":
			return nil, fmt.Errorf("%s: row %d: value %s without a name", name, line, quoteText(text))
		case text == "":
			return nil, fmt.Errorf("%s: key %q, row %d: the value is missing", name, key, line)
		}
		if first, dup := rows[key]; dup {
			return nil, fmt.Errorf("%s: key %q appears twice (rows %d and %d)", name, key, first, line)
		}
		rows[key] = line
		f, isInt, err := parseCell(text)
		if err != nil {
			return nil, fmt.Errorf("%s: key %q, row %d: %v", name, key, line, err)
		}
		values = append(values, &Value{
			Name:  key,
			Data:  []float64{f},
			IsInt: isInt,
			src:   &kvSource{name: name, key: key, line: line},
		})
	}
	return values, nil
}

func csvReadError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: row %d: %v", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// A csvMember is one column of a group: its position in the header and its
// 1-based indices.
type csvMember struct {
	col int
	idx []int
}

// A csvGroup gathers the columns that give one value.
type csvGroup struct {
	base    string
	plain   int // header position of the plain column, or -1
	bracket bool
	members []csvMember
	seen    map[string]int // indices key -> header position
}

// groupColumns turns the columns of a file into values.
func groupColumns(name string, cols []csvColumn, lines []int) ([]*Value, error) {
	groups := map[string]*csvGroup{}
	var order []*csvGroup
	for j := range cols {
		c := &cols[j]
		if c.name == "" {
			continue
		}
		base, idx, bracket, err := parseColumnName(c.name)
		if err != nil {
			return nil, fmt.Errorf("%s: column %q: %v", name, c.name, err)
		}
		g := groups[base]
		if g == nil {
			g = &csvGroup{base: base, plain: -1, bracket: bracket, seen: map[string]int{}}
			groups[base] = g
			order = append(order, g)
		}
		if idx == nil {
			switch {
			case g.plain >= 0:
				return nil, fmt.Errorf("%s: column %q appears twice in the header (columns %d and %d)", name, c.name, g.plain+1, j+1)
			case len(g.members) > 0:
				return nil, fmt.Errorf("%s: columns %q and %q both give %s", name, cols[g.members[0].col].name, c.name, base)
			}
			g.plain = j
			continue
		}
		if g.plain >= 0 {
			return nil, fmt.Errorf("%s: columns %q and %q both give %s", name, cols[g.plain].name, c.name, base)
		}
		if len(g.members) > 0 && len(g.members[0].idx) != len(idx) {
			first := cols[g.members[0].col].name
			return nil, fmt.Errorf("%s: column %q has %s but column %q has %s", name, c.name, plural(len(idx), "index", "indices"), first, plural(len(g.members[0].idx), "index", "indices"))
		}
		key := indicesKey(idx)
		if k, dup := g.seen[key]; dup {
			if cols[k].name == c.name {
				return nil, fmt.Errorf("%s: column %q appears twice in the header (columns %d and %d)", name, c.name, k+1, j+1)
			}
			return nil, fmt.Errorf("%s: columns %q and %q are the same column of %s", name, cols[k].name, c.name, base)
		}
		g.seen[key] = j
		g.members = append(g.members, csvMember{col: j, idx: idx})
	}

	values := make([]*Value, 0, len(order))
	for _, g := range order {
		v, err := g.value(name, cols, lines)
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	return values, nil
}

// value builds the group's value, checking that the columns fill the
// rectangle given by the largest indices and have equal lengths.
func (g *csvGroup) value(name string, cols []csvColumn, lines []int) (*Value, error) {
	if g.plain >= 0 {
		c := &cols[g.plain]
		return &Value{
			Name:  g.base,
			Dims:  []int{len(c.data)},
			Data:  c.data,
			IsInt: c.isInt,
			src:   &csvSource{name: name, columns: []string{c.name}, lines: lines},
		}, nil
	}

	rank := len(g.members[0].idx)
	inner := make([]int, rank)
	for _, m := range g.members {
		for d, i := range m.idx {
			inner[d] = max(inner[d], i)
		}
	}
	// The product of the sizes, capped past the number of columns so that
	// it cannot overflow.
	size := 1
	for _, n := range inner {
		size *= n
		if size > len(g.members) {
			size = len(g.members) + 1
		}
	}

	// Walk the rectangle in row-major order; the first absent column is
	// reported, otherwise columns lists the header names in that order.
	columns := make([]int, 0, len(g.members))
	idx := make([]int, rank)
	for d := range idx {
		idx[d] = 1
	}
	for range size {
		j, ok := g.seen[indicesKey(idx)]
		if !ok {
			return nil, fmt.Errorf("%s: column %q is missing: the columns of %s run from %q to %q", name, g.columnName(idx), g.base, g.columnName(ones(rank)), g.columnName(inner))
		}
		columns = append(columns, j)
		for d := rank - 1; d >= 0; d-- {
			if idx[d] < inner[d] {
				idx[d]++
				break
			}
			idx[d] = 1
		}
	}

	n := len(cols[columns[0]].data)
	isInt := true
	names := make([]string, len(columns))
	for i, j := range columns {
		c := &cols[j]
		if len(c.data) != n {
			first := &cols[columns[0]]
			return nil, fmt.Errorf("%s: column %q has %s but column %q has %d (the columns of %s must have equal lengths)", name, c.name, plural(len(c.data), "value", "values"), first.name, n, g.base)
		}
		isInt = isInt && c.isInt
		names[i] = c.name
	}
	data := make([]float64, n*len(columns))
	for i, j := range columns {
		for r, f := range cols[j].data {
			data[r*len(columns)+i] = f
		}
	}
	return &Value{
		Name:  g.base,
		Dims:  append([]int{n}, inner...),
		Data:  data,
		IsInt: isInt,
		src:   &csvSource{name: name, columns: names, lines: lines},
	}, nil
}

// columnName writes the column for 1-based indices idx in the group's
// notation.
func (g *csvGroup) columnName(idx []int) string {
	parts := make([]string, len(idx))
	for d, i := range idx {
		parts[d] = strconv.Itoa(i)
	}
	if g.bracket {
		return g.base + "[" + strings.Join(parts, ",") + "]"
	}
	return g.base + "." + strings.Join(parts, ".")
}

// parseColumnName splits a header name into a base name and 1-based indices:
// x.1.2 and x[1,2] give x and [1 2]; a name without indices gives a nil idx.
// Index notation is recognized only after an identifier and with nothing
// but digits (and dots, or commas and spaces, inside brackets) after it;
// other names are kept whole, so a header such as "weight [kg]" or "mom.iq"
// is a plain name.
func parseColumnName(s string) (base string, idx []int, bracket bool, err error) {
	if strings.Count(s, "[") != strings.Count(s, "]") {
		return "", nil, false, errors.New(`unbalanced brackets in the column name (a name with a comma, such as "x[1,2]", must be in double quotes)`)
	}
	if i := strings.IndexByte(s, '['); i > 0 && strings.HasSuffix(s, "]") && isIdentifier(s[:i]) &&
		onlyBytes(s[i+1:len(s)-1], "0123456789, ") {
		idx, err := parseIndices(strings.Split(s[i+1:len(s)-1], ","))
		return s[:i], idx, true, err
	}
	if i := strings.IndexByte(s, '.'); i > 0 && isIdentifier(s[:i]) && onlyBytes(s[i+1:], "0123456789.") {
		idx, err := parseIndices(strings.Split(s[i+1:], "."))
		return s[:i], idx, false, err
	}
	return s, nil, false, nil
}

func parseIndices(parts []string) ([]int, error) {
	idx := make([]int, len(parts))
	for d, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errors.New("empty index in the column name")
		}
		if !onlyBytes(p, "0123456789") {
			return nil, fmt.Errorf("bad index %q in the column name", p)
		}
		i, err := strconv.Atoi(p)
		if err != nil || i > maxIndex {
			return nil, fmt.Errorf("index %s is too large", p)
		}
		if i == 0 {
			return nil, errors.New("index 0: indices start at 1")
		}
		idx[d] = i
	}
	return idx, nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		letter := b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
		if !letter && (i == 0 || !isDigit(b)) {
			return false
		}
	}
	return true
}

func onlyBytes(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

func indicesKey(idx []int) string {
	parts := make([]string, len(idx))
	for d, i := range idx {
		parts[d] = strconv.Itoa(i)
	}
	return strings.Join(parts, ",")
}

func ones(n int) []int {
	out := make([]int, n)
	for d := range out {
		out[d] = 1
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
