package lang

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a message attached to a position in a source file.
type Error struct {
	File string // file name as given by the user
	Pos  Pos
	Msg  string
	// Line is the text of the source line at Pos (without its newline),
	// used to render a caret under the column. It may be empty.
	Line string
}

// Error renders the error as "file:line:col: message", followed by the
// source line and a caret under the column when the line is known.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Header())
	if e.Line != "" && e.Pos.IsValid() {
		line, col := excerpt(visible(e.Line), e.Pos.Col)
		b.WriteString("\n  ")
		b.WriteString(line)
		b.WriteString("\n  ")
		b.WriteString(caretPrefix(line, col))
		b.WriteString("^")
	}
	return b.String()
}

// visible returns line with each character a terminal would not show as
// itself replaced by one that it shows, so that the excerpt neither hides
// the character an error points at nor writes control characters to the
// terminal: an ASCII control character (tab aside) by its control picture
// (U+2400 NUL for 0x00, U+2421 DEL for 0x7f), a byte that is not UTF-8 and
// an invisible or control character such as U+FEFF by U+FFFD.
func visible(line string) string {
	clean := utf8.ValidString(line)
	for _, r := range line {
		if r < 0x20 && r != '\t' || r >= 0x7f && !unicode.IsGraphic(r) {
			clean = false
			break
		}
	}
	if clean {
		return line
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r >= 0x20 && r < 0x7f:
			return r
		case r < 0x20:
			return 0x2400 + r
		case r == 0x7f:
			return 0x2421
		case !unicode.IsGraphic(r):
			return utf8.RuneError
		}
		return r
	}, line)
}

// excerptWidth is the most characters of a source line an error shows:
// a longer line (a generated model, a 10^5-term sum) is cut to this many
// around the column, its cut ends marked with "…".
const excerptWidth = 100

// excerpt returns the part of line an error shows and the column of col in
// it (columns count characters from 1).
func excerpt(line string, col int) (string, int) {
	r := []rune(line)
	if len(r) <= excerptWidth {
		return line, col
	}
	start := max(0, col-1-excerptWidth/2)
	end := min(len(r), start+excerptWidth)
	start = max(0, end-excerptWidth)
	text := string(r[start:end])
	col -= start
	if start > 0 {
		text = "…" + text
		col++
	}
	if end < len(r) {
		text += "…"
	}
	return text, col
}

// Header renders the first line of the error: "file:line:col: message".
func (e *Error) Header() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Pos.IsValid() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	} else if e.File != "" {
		b.WriteString(" ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// caretPrefix returns the whitespace that puts a caret under column col of
// line, keeping tabs as tabs so that the caret lines up in a terminal.
func caretPrefix(line string, col int) string {
	var b strings.Builder
	i := 1
	for _, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		i++
	}
	for ; i < col; i++ {
		b.WriteByte(' ')
	}
	return b.String()
}

// ErrorList is a list of errors; as an error it renders all of them, one
// after another.
type ErrorList []*Error

// Error renders every error in the list, separated by newlines.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap returns the errors of the list, for errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Sort orders the errors by position, keeping the order of errors at the
// same position.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos.Before(l[j].Pos) })
}

// Err returns the list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Source is the text of one source file, used to attach source lines to
// errors.
type Source struct {
	Name  string
	lines []string
}

// NewSource splits text into lines for error rendering. A byte order mark
// at the start of text is no part of its first line (the parser skips it).
func NewSource(name, text string) *Source {
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return &Source{Name: name, lines: strings.Split(text, "\n")}
}

// LineText returns the text of 1-based line n, or "" when out of range.
func (s *Source) LineText(n int) string {
	if s == nil || n < 1 || n > len(s.lines) {
		return ""
	}
	return s.lines[n-1]
}

// At builds an error with message msg at pos, with the source line attached.
func (s *Source) At(pos Pos, msg string) *Error {
	e := &Error{Pos: pos, Msg: msg}
	if s != nil {
		e.File = s.Name
		e.Line = s.LineText(pos.Line)
	}
	return e
}
