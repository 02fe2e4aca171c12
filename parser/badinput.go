package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// lexError is text where no token starts: a character outside the
// language, bytes that are not UTF-8, an unterminated comment or string.
// Its message names what is there, as the user would look for it.
type lexError struct {
	msg  string
	pos  lexer.Position
	size int // the bytes the problem spans, which recovery blanks

	statement bool // recovery blanks from the start of the statement
	toEnd     bool // and to its end (the ';' after it), not only the problem
	comment   bool // an unterminated comment: recovery cuts the text before it
	stop      bool // nothing after it can be read: recovery stops
}

// Error implements error.
func (e *lexError) Error() string { return e.pos.String() + ": " + e.msg }

// Message implements participle.Error.
func (e *lexError) Message() string { return e.msg }

// Position implements participle.Error.
func (e *lexError) Position() lexer.Position { return e.pos }

// badInput describes the text at the start of rest, at pos, where no
// token starts.
func badInput(rest string, pos lexer.Position) *lexError {
	e := &lexError{pos: pos, size: 1}
	r, size := utf8.DecodeRuneInString(rest)
	switch {
	case strings.HasPrefix(rest, "/*"):
		e.msg = fmt.Sprintf("unterminated comment: /* at %d:%d has no */", pos.Line, pos.Column)
		e.size, e.comment = len(rest), true
	case r == '"':
		// The rest of the line, and the statement before it.
		e.msg = "unterminated string literal"
		e.size, e.statement = lineEnd(rest), true
	case r == '#':
		e.msg = "'#' is not a comment: use // or /* */"
		e.size = lineEnd(rest)
	case r == 0xfeff:
		e.msg = "unexpected byte order mark (U+FEFF): allowed only at the start of a file"
		e.size = size
	case r == utf8.RuneError && size == 1:
		n := 1 // the run of bytes that are not UTF-8
		for n < len(rest) {
			if r, k := utf8.DecodeRuneInString(rest[n:]); r != utf8.RuneError || k != 1 {
				break
			}
			n++
		}
		e.msg = fmt.Sprintf("invalid UTF-8 byte 0x%02x", rest[0])
		if n > 1 {
			e.msg += fmt.Sprintf(" (the first of %d)", n)
		}
		e.size = n
		if pos.Offset == 0 && (strings.HasPrefix(rest, "\xff\xfe") || strings.HasPrefix(rest, "\xfe\xff")) {
			e.msg += ": the file looks like UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"
			e.size, e.stop = len(rest), true
		}
	case strings.HasPrefix(rest, "\x1b["):
		// A terminal escape sequence (CSI), copied from coloured output:
		// parameters, intermediates, then a final byte.
		n := 2
		for n < len(rest) && rest[n] >= 0x20 && rest[n] <= 0x3f {
			n++
		}
		if n < len(rest) && rest[n] >= 0x40 && rest[n] <= 0x7e {
			n++
		}
		e.msg = fmt.Sprintf("invalid character ESC (0x1b): a terminal escape sequence, %q", rest[:n])
		e.size = n
	default:
		e.msg = "invalid character " + describeRune(r)
		e.size = size
		// A letter outside ASCII is probably a part of a name: the
		// statement is skipped (blanking the letter alone would make
		// "real µ;" the statement "real;").
		if r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)) {
			e.statement, e.toEnd = true, true
		}
	}
	return e
}

// lineEnd returns the length of the first line of s, without its newline.
func lineEnd(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

// asciiControls are the names of the ASCII control characters 0x00-0x1f.
var asciiControls = [32]string{
	"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF", "CR", "SO", "SI",
	"DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
}

// describeRune names a character that cannot appear where it is: quoted
// when it is visible, else by its code (and what it is), so that the
// message itself shows no control or invisible character.
func describeRune(r rune) string {
	switch {
	case r < 0x20:
		return fmt.Sprintf("%s (0x%02x)", asciiControls[r], r)
	case r == 0x7f:
		return "DEL (0x7f)"
	case r == utf8.RuneError: // encoded as UTF-8, not an invalid byte
		return "U+FFFD (the replacement character)"
	case r >= 0x80 && r < 0xa0:
		return fmt.Sprintf("U+%04X (a control character)", r)
	case unicode.IsSpace(r):
		return fmt.Sprintf("U+%04X (a space other than ' ' and tab)", r)
	case unicode.Is(unicode.Bidi_Control, r):
		return fmt.Sprintf("U+%04X (a bidirectional text control)", r)
	case !unicode.IsPrint(r):
		return fmt.Sprintf("U+%04X (an invisible character)", r)
	}
	return fmt.Sprintf("%q", r)
}
