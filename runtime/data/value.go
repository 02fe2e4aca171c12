package data

import (
	"fmt"
	"strconv"
	"strings"
)

// A Value is one named value read from a data source.
type Value struct {
	// Name is the variable name: a CSV column's base name, a JSON key or
	// the name in --set name=value.
	Name string

	// Dims are the sizes: none for a scalar, [N] for a one-dimensional
	// value, [N, D] for two dimensions, and so on. A value read from a CSV
	// file has at least one dimension, its number of rows.
	Dims []int

	// Data are the entries in row-major order; len(Data) is the product of
	// Dims (1 for a scalar).
	Data []float64

	// IsInt reports whether every entry was written as an integer literal:
	// no fraction, no exponent, not nan or inf.
	IsInt bool

	// real is the first entry written as a real (with a fraction, an
	// exponent, or as nan or inf), as a reader saw it; realAt is -1 when
	// none was or the value was not read from text.
	realAt   int
	realText string

	src source
}

// noteReal records that entry k was written as text, not an integer
// literal, unless an earlier entry was.
func (v *Value) noteReal(k int, text string) {
	if v.realText == "" || k < v.realAt {
		v.realAt, v.realText = k, text
	}
}

// WrittenAsReal returns the first entry (an index into Data) that a data
// file or flag wrote as a real number rather than an integer literal
// ("3.0", "1e3", "nan"), and its text. ok is false when every entry was
// an integer literal, or when the value was not read from text. CmdStan
// reads an int only from an integer literal.
func (v *Value) WrittenAsReal() (k int, text string, ok bool) {
	if v.realText == "" {
		return 0, "", false
	}
	return v.realAt, v.realText, true
}

// IsColumn reports whether the value is a column (or columns) of a CSV
// file, whose first size is its number of rows: a one-row column may give
// a scalar.
func (v *Value) IsColumn() bool {
	_, ok := v.src.(*csvSource)
	return ok
}

// A source describes where a value came from.
type source interface {
	// file is the file name, or "--set" for a --set argument.
	file() string
	// describe is the whole value's place within the file, such as
	// `column "y"` or `key "y"`.
	describe(v *Value) string
	// where is entry k's place within the file.
	where(v *Value, k int) string
}

// Len returns the number of entries, len(v.Data).
func (v *Value) Len() int { return len(v.Data) }

// File returns the name of the file the value came from, as given to the
// reader, or "--set".
func (v *Value) File() string {
	if v.src == nil {
		return ""
	}
	return v.src.file()
}

// PrintableName is the value's name for a message: as it is when it is
// a name a model could declare, quoted (control characters escaped, cut
// when long) otherwise, such as a JSON key of any text.
func (v *Value) PrintableName() string {
	if isIdentifier(v.Name) {
		return v.Name
	}
	name := v.Name
	if r := []rune(name); len(r) > 40 {
		name = string(r[:40]) + "…"
	}
	return strconv.Quote(name)
}

// Origin describes where the whole value came from, for example
// `data.csv: column "y"`, `data.csv: columns "x.1" … "x.3"`,
// `data.json: key "y"` or `--set lambda`.
func (v *Value) Origin() string {
	if v.src == nil {
		return v.PrintableName()
	}
	return joinPlace(v.src.file(), v.src.describe(v))
}

// Where describes where entry k (an index into v.Data) came from, for
// example `data.csv: column "x.2", row 14`, `data.json: key "y"[3][2]` or
// `--set y[2]`. JSON and --set indices are 1-based, as in the model; CSV rows
// are line numbers in the file.
func (v *Value) Where(k int) string {
	if k < 0 || k >= len(v.Data) {
		return fmt.Sprintf("%s: entry %d (out of range: the value has %d)", v.Origin(), k, len(v.Data))
	}
	if v.src == nil {
		return v.Name + indexSuffix(v.Index(k))
	}
	return joinPlace(v.src.file(), v.src.where(v, k))
}

// placeInFile describes the value's origin as file (place): `data.csv
// (column "y")`.
func (v *Value) placeInFile() string {
	if v.src == nil {
		return v.Name
	}
	if s, ok := v.src.(setSource); ok {
		return s.flag + " " + s.describe(v)
	}
	return v.src.file() + " (" + v.src.describe(v) + ")"
}

func joinPlace(file, place string) string {
	// A flag ("--set") or a REPL command (":lp") reads "--set y[2]".
	if strings.HasPrefix(file, "--") || strings.HasPrefix(file, ":") {
		return file + " " + place
	}
	return file + ": " + place
}

// Index returns the 0-based multi-index of entry k in row-major order: for
// Dims [N, D], entry k is [k / D, k % D]. It returns nil for a scalar or a k
// out of range.
func (v *Value) Index(k int) []int {
	if k < 0 || k >= len(v.Data) || len(v.Dims) == 0 {
		return nil
	}
	idx := make([]int, len(v.Dims))
	for d := len(v.Dims) - 1; d >= 0; d-- {
		idx[d] = k % v.Dims[d]
		k /= v.Dims[d]
	}
	return idx
}

// indexSuffix formats a 0-based multi-index as 1-based brackets: [3][2].
func indexSuffix(idx []int) string {
	var b strings.Builder
	for _, i := range idx {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteByte(']')
	}
	return b.String()
}

// String returns a short description: the name, the dims and the origin.
func (v *Value) String() string {
	dims := make([]string, len(v.Dims))
	for i, d := range v.Dims {
		dims[i] = strconv.Itoa(d)
	}
	return fmt.Sprintf("%s[%s] (%s)", v.Name, strings.Join(dims, ","), v.Origin())
}
