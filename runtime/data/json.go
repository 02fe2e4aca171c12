package data

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shmlang/shm/stdlib"
)

// maxDepth bounds the nesting of arrays in a JSON value.
const maxDepth = 64

// jsonSource locates the entries of a value read from a JSON file.
type jsonSource struct {
	name string
	key  string
}

func (s *jsonSource) file() string                 { return s.name }
func (s *jsonSource) describe(v *Value) string     { return fmt.Sprintf("key %q", s.key) }
func (s *jsonSource) where(v *Value, k int) string { return s.describe(v) + indexSuffix(v.Index(k)) }

// ReadJSON reads a data file in CmdStan's JSON format. name is used in error
// messages and in the values' provenance. The values come in the order of
// their keys in the file. See the package documentation for the format.
func ReadJSON(name string, r io.Reader) ([]*Value, error) {
	return readJSON(name, r, MaxValueWords())
}

// readJSON is ReadJSON with the bound of its values' memory, in words
// (valueBudget; 0: none).
func readJSON(name string, r io.Reader, maxWords int64) ([]*Value, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	p := &jsonParser{b: string(b), file: name, budget: &valueBudget{file: name, limit: maxWords}}
	return p.parseFile()
}

// A jsonParser reads a CmdStan JSON file, or one JSON value of a --set
// argument. It keeps the text so that errors can give line numbers.
type jsonParser struct {
	b   string
	pos int

	file    string // the file name; "" for a --set argument
	setName string // the name in --set name=value
	setFlag string // the flag: --set or --init

	// The value being read.
	inValue   bool
	key       string
	path      []int   // 1-based indices of the element being read
	dims      []int   // size at each depth; -1 until the first array closes
	firstPath [][]int // where the first array at each depth was
	leafPath  []int   // where the first number was; nil before it
	data      []float64
	isInt     bool

	// budget counts the memory of the file's values (nil: no bound).
	budget *valueBudget
}

// parseFile reads the top-level object.
func (p *jsonParser) parseFile() ([]*Value, error) {
	p.b = strings.TrimPrefix(p.b, string(utf8BOM))
	p.skipSpace()
	if p.pos == len(p.b) {
		return nil, fmt.Errorf("%s: the file is empty: expected a JSON object { \"name\": value, ... }", p.file)
	}
	if p.b[p.pos] != '{' {
		return nil, p.errorf(p.pos, "expected a JSON object { \"name\": value, ... }, found %s", p.found())
	}
	p.pos++
	var values []*Value
	keyPos := map[string]int{} // byte offset of each key, for errors
	p.skipSpace()
	if p.pos < len(p.b) && p.b[p.pos] == '}' {
		p.pos++
	} else {
		for {
			p.skipSpace()
			if p.pos == len(p.b) || p.b[p.pos] != '"' {
				return nil, p.errorf(p.pos, "expected a key in double quotes, found %s", p.found())
			}
			pos := p.pos
			key, err := p.parseString()
			if err != nil {
				return nil, err
			}
			if first, dup := keyPos[key]; dup {
				return nil, p.errorf(pos, "key %q appears twice (first on line %d)", key, p.line(first))
			}
			keyPos[key] = pos
			p.skipSpace()
			if p.pos == len(p.b) || p.b[p.pos] != ':' {
				return nil, p.errorf(p.pos, "expected ':' after key %q, found %s", key, p.found())
			}
			p.pos++
			v, err := p.parseNamedValue(key)
			if err != nil {
				return nil, err
			}
			v.src = &jsonSource{name: p.file, key: key}
			values = append(values, v)
			p.skipSpace()
			if p.pos < len(p.b) && p.b[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.b) && p.b[p.pos] == '}' {
				p.pos++
				break
			}
			return nil, p.errorf(p.pos, "expected ',' or '}' after the value of key %q, found %s", key, p.found())
		}
	}
	p.skipSpace()
	if p.pos < len(p.b) {
		return nil, p.errorf(p.pos, "unexpected %s after the closing '}'", p.found())
	}
	return values, nil
}

// parseNamedValue reads one value (a number, a special string or a nested
// array) of the given name.
func (p *jsonParser) parseNamedValue(key string) (*Value, error) {
	p.inValue = true
	p.key = key
	p.path = p.path[:0]
	p.dims = nil
	p.firstPath = nil
	p.leafPath = nil
	p.data = nil
	p.isInt = true
	if err := p.parseValue(0); err != nil {
		return nil, err
	}
	p.inValue = false
	data := p.data
	if data == nil {
		data = []float64{}
	}
	return &Value{Name: key, Dims: p.dims, Data: data, IsInt: p.isInt}, nil
}

// parseValue reads a value at the given array depth, appending its numbers
// to p.data and checking that its shape agrees with what came before.
func (p *jsonParser) parseValue(depth int) error {
	p.skipSpace()
	if p.pos == len(p.b) {
		return p.errorf(p.pos, "unexpected end of the text: expected a value")
	}
	start := p.pos
	switch c := p.b[p.pos]; {
	case c == '[':
		return p.parseArray(depth)
	case c == '{':
		return p.errorf(start, "an object is not a number or an array of numbers")
	case c == '"':
		s, err := p.parseString()
		if err != nil {
			return err
		}
		f, ok := parseSpecialWord(s)
		if !ok {
			return p.errorf(start, "the string %s is not a number (the strings allowed are \"NaN\", \"Inf\", \"-Inf\", \"Infinity\" and \"-Infinity\")", quoteText(s))
		}
		return p.leaf(start, depth, f, false)
	}
	// A number or a bare word: take the whole token.
	for p.pos < len(p.b) && isTokenByte(p.b[p.pos]) {
		p.pos++
	}
	tok := p.b[start:p.pos]
	if tok == "" {
		return p.errorf(start, "expected a value, found %s", p.foundAt(start))
	}
	if f, ok := parseSpecialWord(tok); ok {
		return p.leaf(start, depth, f, false)
	}
	isInt, ok := scanJSONNumber(tok)
	if !ok {
		return p.errorf(start, "%s is not a number", shorten(tok))
	}
	f, err := parseFloat(tok)
	if err != nil {
		return p.errorf(start, "%s %v", shorten(tok), err)
	}
	return p.leaf(start, depth, f, isInt)
}

func isTokenByte(b byte) bool {
	return isDigit(b) || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '.' || b == '+' || b == '-' || b == '_'
}

// parseArray reads an array whose '[' is at p.pos.
func (p *jsonParser) parseArray(depth int) error {
	start := p.pos
	if depth >= maxDepth {
		return p.errorf(start, "arrays nested deeper than %d levels", maxDepth)
	}
	if depth == len(p.dims) {
		if p.leafPath != nil {
			return p.errorf(start, "an array where a number was expected (%s is a number)", p.pathString(p.leafPath))
		}
		p.dims = append(p.dims, -1)
		p.firstPath = append(p.firstPath, append([]int(nil), p.path...))
	}
	if depth > 0 && p.budget != nil {
		// A nested array may become an element of an array of vectors
		// or matrices, with its Value header.
		if p.budget.add(int64(stdlib.ElementWords)) {
			return p.budget.err(fmt.Sprintf("key %q, line %d", p.key, p.line(start)))
		}
	}
	p.pos++
	count := 0
	p.skipSpace()
	if p.pos < len(p.b) && p.b[p.pos] == ']' {
		p.pos++
	} else {
		for {
			p.path = append(p.path, count+1)
			if err := p.parseValue(depth + 1); err != nil {
				return err
			}
			p.path = p.path[:len(p.path)-1]
			count++
			p.skipSpace()
			if p.pos < len(p.b) && p.b[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.b) && p.b[p.pos] == ']' {
				p.pos++
				break
			}
			return p.errorf(p.pos, "expected ',' or ']' in the array, found %s", p.found())
		}
	}
	switch want := p.dims[depth]; {
	case want < 0:
		p.dims[depth] = count
	case want != count:
		return p.errorf(start, "ragged array: it has %s but %s has %d", plural(count, "element", "elements"), p.pathString(p.firstPath[depth]), want)
	}
	return nil
}

// leaf records a number read at the given depth.
func (p *jsonParser) leaf(pos, depth int, f float64, isInt bool) error {
	if depth < len(p.dims) {
		return p.errorf(pos, "a number where an array was expected (%s is an array)", p.pathString(p.firstPath[depth]))
	}
	if p.leafPath == nil {
		p.leafPath = append([]int{}, p.path...)
	}
	if p.budget != nil {
		// The number, and its share of the slice's growth.
		if p.budget.add(1) {
			return p.budget.err(fmt.Sprintf("key %q, line %d", p.key, p.line(pos)))
		}
	}
	p.data = append(p.data, f)
	p.isInt = p.isInt && isInt
	return nil
}

// scanJSONNumber checks the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and reports whether the
// number has neither a fraction nor an exponent.
func scanJSONNumber(s string) (isInt, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && isDigit(s[i]):
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false, false
	}
	isInt = true
	if i < len(s) && s[i] == '.' {
		isInt = false
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false, false
		}
	}
	return isInt, i == len(s)
}

// parseString reads a JSON string whose opening quote is at p.pos.
func (p *jsonParser) parseString() (string, error) {
	start := p.pos
	i := start + 1
	escaped := false
	for ; i < len(p.b); i++ {
		c := p.b[i]
		if c == '"' {
			break
		}
		if c < 0x20 {
			return "", p.errorf(i, "control character %s in a string", strconv.QuoteRune(rune(c)))
		}
		if c == '\\' {
			escaped = true
			i++
		}
	}
	if i >= len(p.b) {
		return "", p.errorf(start, "string without its closing quote")
	}
	p.pos = i + 1
	raw := p.b[start:p.pos]
	if !escaped && utf8.ValidString(raw) {
		return raw[1 : len(raw)-1], nil
	}
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return "", p.errorf(start, "bad string: %s", jsonErrorText(err))
	}
	return s, nil
}

// jsonErrorText strips encoding/json's prefix from an error.
func jsonErrorText(err error) string {
	const prefix = "json: "
	s := err.Error()
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// found describes the text at p.pos for an error message.
func (p *jsonParser) found() string { return p.foundAt(p.pos) }

func (p *jsonParser) foundAt(pos int) string {
	if pos >= len(p.b) {
		return "the end of the text"
	}
	r, _ := utf8.DecodeRuneInString(p.b[pos:])
	return strconv.QuoteRune(r)
}

// line returns the 1-based line of a byte offset.
func (p *jsonParser) line(pos int) int {
	return strings.Count(p.b[:min(pos, len(p.b))], "\n") + 1
}

// pathString formats the key and a 1-based path: "y"[3][2], or y[3][2] for
// --set.
func (p *jsonParser) pathString(path []int) string {
	var b []byte
	if p.file == "" {
		b = append(b, p.setName...)
	} else {
		b = strconv.AppendQuote(b, p.key)
	}
	for _, i := range path {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ']')
	}
	return string(b)
}

// errorf makes an error at a byte offset, naming the file, the key and index
// path when inside a value, and the line.
func (p *jsonParser) errorf(pos int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	switch {
	case p.file == "":
		return fmt.Errorf("%s %s: %s", p.setFlag, p.pathString(p.path), msg)
	case p.inValue:
		return fmt.Errorf("%s: key %s, line %d: %s", p.file, p.pathString(p.path), p.line(pos), msg)
	default:
		return fmt.Errorf("%s: line %d: %s", p.file, p.line(pos), msg)
	}
}
