package parser

import (
	"errors"
	"io"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// The language's tokens, in the order in which they are tried: the first
// kind that matches at a position wins (as participle's simple lexer does
// with the same rules written as regular expressions; lexer_test.go keeps
// those as the reference this scanner is checked against).
//
//	Comment     // to the end of the line, or /* to the first */
//	Whitespace  spaces, tabs, carriage returns and newlines
//	String      "..." with backslash escapes, on one line
//	Real        1.5, 1., .5, 1e3, 1.5e-3
//	Int         digits
//	Ident       a letter, then letters, digits and underscores
//	Op          the operators and punctuation of operators and singleOps
const (
	tokComment lexer.TokenType = lexer.EOF - 1 - iota
	tokWhitespace
	tokString
	tokReal
	tokInt
	tokIdent
	tokOp
)

// operators are the multi-character operators, longest alternatives first
// where one is a prefix of another; singleOps are the one-character ones.
var operators = []string{".*=", "./=", "%/%", "||", "&&", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", ".*", "./", ".^"}

const singleOps = `-+*/%\^!<>=?:~|'(){}[],;`

// shmLexer is the lexer definition of the language, for participle.
var shmLexer lexer.Definition = lexDefinition{}

type lexDefinition struct{}

// Symbols implements lexer.Definition.
func (lexDefinition) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "Comment": tokComment, "Whitespace": tokWhitespace,
		"String": tokString, "Real": tokReal, "Int": tokInt, "Ident": tokIdent, "Op": tokOp,
	}
}

// Lex implements lexer.Definition.
func (d lexDefinition) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return d.LexString(filename, string(b))
}

// LexString implements lexer.StringDefinition.
func (lexDefinition) LexString(filename, src string) (lexer.Lexer, error) {
	return newScanner(filename, src), nil
}

// LexBytes implements lexer.BytesDefinition.
func (d lexDefinition) LexBytes(filename string, src []byte) (lexer.Lexer, error) {
	return d.LexString(filename, string(src))
}

// scanner produces the tokens of src, comments and whitespace included
// (the grammar elides them).
type scanner struct {
	src string
	pos lexer.Position
}

// bom is the UTF-8 encoding of the byte order mark U+FEFF, which some
// editors write at the start of a UTF-8 file.
const bom = "\uFEFF"

// newScanner returns a scanner of src that skips a byte order mark at its
// start, as Go's compiler does: the first token is at 1:1, and offsets
// stay offsets into src.
func newScanner(file, src string) *scanner {
	s := &scanner{src: src, pos: lexer.Position{Filename: file, Line: 1, Column: 1}}
	if strings.HasPrefix(src, bom) {
		s.pos.Offset = len(bom)
	}
	return s
}

// Next implements lexer.Lexer.
func (s *scanner) Next() (lexer.Token, error) {
	rest := s.src[s.pos.Offset:]
	if rest == "" {
		return lexer.EOFToken(s.pos), nil
	}
	kind, n := scanToken(rest)
	if n == 0 {
		return lexer.Token{}, badInput(rest, s.pos)
	}
	tok := lexer.Token{Type: kind, Value: rest[:n], Pos: s.pos}
	s.pos.Advance(tok.Value)
	return tok, nil
}

// scanToken returns the kind and length of the token at the start of s, or
// a length of 0 when no token starts there.
func scanToken(s string) (lexer.TokenType, int) {
	c := s[0]
	switch {
	case c == '/' && len(s) > 1 && s[1] == '/':
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return tokComment, i
		}
		return tokComment, len(s)
	case c == '/' && len(s) > 1 && s[1] == '*':
		if i := strings.Index(s[2:], "*/"); i >= 0 {
			return tokComment, i + 4
		}
		return tokComment, 0 // unterminated: an error (badInput)
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		n := 1
		for n < len(s) && (s[n] == ' ' || s[n] == '\t' || s[n] == '\r' || s[n] == '\n') {
			n++
		}
		return tokWhitespace, n
	case c == '"':
		return tokString, scanString(s)
	case isDigit(c) || c == '.':
		if n := scanReal(s); n > 0 {
			return tokReal, n
		}
		if n := digits(s); n > 0 {
			return tokInt, n
		}
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		n := 1
		for n < len(s) && (isLetter(s[n]) || isDigit(s[n]) || s[n] == '_') {
			n++
		}
		return tokIdent, n
	}
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return tokOp, len(op)
		}
	}
	if strings.IndexByte(singleOps, c) >= 0 {
		return tokOp, 1
	}
	return tokOp, 0
}

// scanString returns the length of the string literal at the start of s,
// or 0 when it is not closed on its line. Bytes of multi-byte characters
// are never '"', '\\' or '\n', so scanning bytes is scanning characters.
func scanString(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i + 1
		case '\n':
			return 0
		case '\\':
			if i+1 >= len(s) || s[i+1] == '\n' {
				return 0
			}
			i++
		}
	}
	return 0
}

// scanReal returns the length of the real literal at the start of s, or 0.
func scanReal(s string) int {
	d := digits(s)
	switch {
	case d > 0 && d < len(s) && s[d] == '.':
		n := d + 1 + digits(s[d+1:])
		return n + exponent(s[n:])
	case d == 0 && len(s) > 1 && s[0] == '.' && isDigit(s[1]):
		n := 1 + digits(s[1:])
		return n + exponent(s[n:])
	case d > 0:
		if e := exponent(s[d:]); e > 0 {
			return d + e
		}
	}
	return 0
}

// exponent returns the length of an exponent (e-12) at the start of s, or 0.
func exponent(s string) int {
	if s == "" || s[0] != 'e' && s[0] != 'E' {
		return 0
	}
	i := 1
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if k := digits(s[i:]); k > 0 {
		return i + k
	}
	return 0
}

// digits returns the number of ASCII digits at the start of s.
func digits(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// lexAll returns the tokens of src without comments, whitespace and the
// end of file, or the first lexing error.
func lexAll(file, src string) ([]lexer.Token, error) {
	_, toks, err := lexProgram(file, src)
	if err != nil {
		return nil, err
	}
	return toks[:len(toks)-1], nil
}

// lexProgram lexes src for the parser: the tokens without comments and
// whitespace, ending with the end of file, as a participle lexer and as a
// slice (the same tokens).
func lexProgram(file, src string) (*lexer.PeekingLexer, []lexer.Token, error) {
	s := &significant{scanner: *newScanner(file, src)}
	lx, err := lexer.Upgrade(s)
	if err != nil {
		return nil, nil, err
	}
	return lx, lx.Range(0, lexer.RawCursor(s.n)), nil
}

// significant is a scanner that skips comments and whitespace and counts
// the tokens it returns.
type significant struct {
	scanner
	n int
}

func (s *significant) Next() (lexer.Token, error) {
	for {
		t, err := s.scanner.Next()
		if err != nil || t.Type != tokComment && t.Type != tokWhitespace {
			if err == nil {
				s.n++
			}
			return t, err
		}
	}
}

// A Cut is a prefix of a program that ends with a complete statement,
// closed into a program of its own.
type Cut struct {
	Text string // the prefix, then the closing braces it needs
	Line int    // the prefix's last line: later lines hold only the braces
}

// Prefix returns the longest prefix of src of at most size bytes that ends
// with a statement at the top level of a block other than functions (whose
// definitions may refer to later ones), the last token on its line, and
// closes the braces left open. ok is false when there is no such prefix.
//
// Checking such a prefix gives the program's errors up to its last line:
// the language is checked in order, and nothing before a statement depends
// on what follows it (ir.CheckSource relies on this; its tests compare the
// two on every test program).
func Prefix(src string, size int) (cut Cut, ok bool) {
	type candidate struct{ end, line int }
	var best, pending *candidate
	s := newScanner("", src)
	var open []byte    // the brackets open at the token
	functions := false // inside the functions block
	prev := ""         // the previous token
scan:
	for {
		t, err := s.Next()
		if err != nil || t.EOF() {
			// Text that does not lex (an unterminated comment) on a
			// later line ends the statement's line.
			if le := (*lexError)(nil); pending != nil && errors.As(err, &le) && le.pos.Line > pending.line {
				best = pending
			}
			break
		}
		if t.Type == tokComment || t.Type == tokWhitespace {
			continue
		}
		if pending != nil && t.Pos.Line > pending.line {
			best = pending // the statement ended its line
		}
		pending = nil
		if t.Pos.Offset >= size {
			break
		}
		switch v := t.Value; v {
		case "{", "(", "[":
			if v == "{" && len(open) == 0 {
				functions = prev == "functions"
			}
			open = append(open, v[0])
		case "}", ")", "]":
			if len(open) == 0 || open[len(open)-1] != opening(v[0]) {
				// Brackets that do not nest: the cuts so far are before.
				break scan
			}
			open = open[:len(open)-1]
		case ";":
			if len(open) == 1 && open[0] == '{' && !functions {
				pending = &candidate{t.Pos.Offset + 1, t.Pos.Line}
			}
		}
		prev = t.Value
	}
	if best == nil {
		return Cut{}, false
	}
	return Cut{Text: src[:best.end] + "\n}\n", Line: best.line}, true
}

// opening returns the bracket that the closing bracket c closes.
func opening(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}
