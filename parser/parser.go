package parser

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/shmlang/shm/lang"
)

// MaxErrors caps the number of errors one Parse (or check) reports.
const MaxErrors = 20

// recoveryBudget bounds the bytes parsed while recovering from syntax
// errors (each recovery parses the file again; the parser reads about
// 0.3–0.5 MB/s): a typical model recovers from all MaxErrors errors, a
// file of megabytes reports its first one or two.
const recoveryBudget = 4 << 20

// maxNesting bounds bracket nesting, so that adversarial input cannot
// exhaust the stack of the recursive-descent parser.
const maxNesting = 256

// Parser parses .shm programs. A Parser holds the compiled grammar and may
// be used from several goroutines.
type Parser struct {
	grammar *participle.Parser[pProgram]
	stmts   *participle.Parser[pStmtList]
	exprs   *participle.Parser[pExpr]
	funDef  *participle.Parser[pFunDef] // to recognize a definition typed in a session

	recoveryBudget int // recoveryBudget, smaller in tests
}

// New compiles the grammars (whole programs, statement lists and single
// expressions).
func New() (*Parser, error) {
	g, err := newGrammar[pProgram]()
	if err != nil {
		return nil, fmt.Errorf("parser: building grammar: %w", err)
	}
	sg, err := newGrammar[pStmtList]()
	if err != nil {
		return nil, fmt.Errorf("parser: building grammar: %w", err)
	}
	eg, err := newGrammar[pExpr]()
	if err != nil {
		return nil, fmt.Errorf("parser: building grammar: %w", err)
	}
	fg, err := newGrammar[pFunDef]()
	if err != nil {
		return nil, fmt.Errorf("parser: building grammar: %w", err)
	}
	return &Parser{grammar: g, stmts: sg, exprs: eg, funDef: fg, recoveryBudget: recoveryBudget}, nil
}

// Parse parses one .shm file. It returns the program built from the
// statements that parsed and the list of errors, sorted by position; the
// program is nil when the file could not be read as blocks at all.
func Parse(file, src string) (*lang.Program, lang.ErrorList) {
	p, err := shared()
	if err != nil {
		return nil, lang.ErrorList{{File: file, Msg: err.Error()}}
	}
	return p.Parse(file, src)
}

// shared is the Parser of the package function Parse, built once: building
// the grammars costs more than parsing a typical model.
var shared = sync.OnceValues(New)

// Parse parses one .shm file; see the package function Parse.
func (p *Parser) Parse(file, src string) (*lang.Program, lang.ErrorList) {
	source := lang.NewSource(file, src)
	var errs lang.ErrorList
	lx, deep, lexErr := lexChecked(source, file, src)
	if deep != nil {
		return nil, lang.ErrorList{deep}
	}
	text := []byte(src)
	parsed := 0 // bytes parsed so far, to bound the recovery's work
	for {
		if parsed > 0 { // a statement was blanked
			lx, _, lexErr = lexProgram(file, string(text))
		}
		parsed += len(text)
		tree, err := (*pProgram)(nil), lexErr
		if err == nil {
			tree, err = p.grammar.ParseFromLexer(lx)
		}
		if err == nil {
			c := &converter{src: source}
			prog := c.program(tree, file)
			errs = append(errs, c.errs...)
			errs.Sort()
			return prog, capErrors(errs)
		}
		e, at := syntaxError(source, err, text)
		errs = append(errs, e)
		// Each recovery parses the whole file again: stop after MaxErrors,
		// or once recoveryBudget bytes have been parsed (a huge file
		// reports its first errors, not minutes later).
		if len(errs) >= MaxErrors || parsed+len(text) > p.recoveryBudget || !blankStatement(text, at) {
			errs.Sort()
			return nil, capErrors(errs)
		}
	}
}

func capErrors(errs lang.ErrorList) lang.ErrorList {
	if len(errs) > MaxErrors {
		errs = errs[:MaxErrors]
	}
	return errs
}

// syntaxError converts a participle error into a lang error with a
// friendlier message, and returns the byte offset it points at.
func syntaxError(source *lang.Source, err error, text []byte) (*lang.Error, int) {
	var perr participle.Error
	if !errors.As(err, &perr) {
		return source.At(lang.Pos{}, err.Error()), -1
	}
	lp := perr.Position()
	at := lang.Pos{Line: lp.Line, Col: lp.Column}
	msg := perr.Message()
	var ut *participle.UnexpectedTokenError
	switch {
	case errors.As(err, &ut):
		if next, ok := danglingOperator(ut, text); ok {
			return source.At(lang.Pos{Line: next.Pos.Line, Col: next.Pos.Column},
				fmt.Sprintf("expected an expression after %q", ut.Unexpected.Value)), next.Pos.Offset
		}
		msg = unexpectedMessage(ut)
	case strings.Contains(msg, "invalid input text"):
		msg = invalidTextMessage(msg)
	}
	return source.At(at, msg), lp.Offset
}

// blockKeywords start top-level blocks.
var blockKeywords = map[string]bool{
	"functions": true, "data": true, "transformed": true, "parameters": true,
	"model": true, "generated": true,
}

// binaryOps are the operators that must be followed by an operand.
var binaryOps = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "%": true, "%/%": true, "\\": true,
	".*": true, "./": true, "^": true, ".^": true, "&&": true, "||": true, "==": true,
	"!=": true, "<": true, "<=": true, ">": true, ">=": true, "!": true, "?": true,
}

// danglingOperator recognizes an operator that is followed by something
// that cannot start an operand, such as "x = 3 +;". The grammar backtracks
// over the operator and complains about the operator itself; the useful
// report is the missing operand at the token after it.
func danglingOperator(ut *participle.UnexpectedTokenError, text []byte) (lexer.Token, bool) {
	if !binaryOps[ut.Unexpected.Value] {
		return lexer.Token{}, false
	}
	toks, err := lexAll("", string(text))
	if err != nil {
		return lexer.Token{}, false
	}
	for i, t := range toks {
		if t.Pos.Offset == ut.Unexpected.Pos.Offset && i+1 < len(toks) {
			switch next := toks[i+1]; next.Value {
			case ";", ")", "]", "}", ",":
				return next, true
			}
		}
	}
	return lexer.Token{}, false
}

func unexpectedMessage(ut *participle.UnexpectedTokenError) string {
	tok := ut.Unexpected
	found := fmt.Sprintf("%q", tok.Value)
	if tok.EOF() {
		found = "end of file"
	}
	msg := ut.Message()
	expected := ""
	if i := strings.Index(msg, "(expected "); i >= 0 {
		expected = strings.TrimSuffix(msg[i+len("(expected "):], ")")
	}
	switch {
	case tok.EOF() && strings.Contains(msg, `"}"`):
		return "unexpected end of file: a '}' is missing"
	case tok.EOF():
		return "unexpected end of file"
	case expected == `"}"` && blockKeywords[tok.Value]:
		return fmt.Sprintf("missing '}' before %s: braces are not balanced", found)
	case expected == `";"`:
		return fmt.Sprintf("missing ';' before %s", found)
	case tok.Value == "}" && expected == "":
		return "unexpected '}': braces are not balanced"
	case tok.Value == "#":
		return "'#' is not a comment: use // or /* */"
	case expressionRules[expected]:
		return fmt.Sprintf("unexpected %s: expected an expression", found)
	case isRuleName(expected):
		return fmt.Sprintf("unexpected %s", found)
	case expected != "" && !strings.ContainsAny(expected, "()|"):
		return fmt.Sprintf("unexpected %s (expected %s)", found, expected)
	}
	return fmt.Sprintf("unexpected %s", found)
}

// expressionRules are the grammar rules (types pX, which participle
// reports as PX) that parse an expression or one of its parts.
var expressionRules = map[string]bool{
	"PExpr": true, "PBinary": true, "PArith": true, "PUnary": true, "PPow": true,
	"PPostfix": true, "PPrimary": true, "PCall": true, "PArg": true, "PRowVec": true,
	"PIndexItem": true,
}

// isRuleName reports whether s names a grammar rule rather than a token:
// error messages name no rule.
func isRuleName(s string) bool {
	return len(s) > 1 && s[0] == 'P' && s[1] >= 'A' && s[1] <= 'Z' && !strings.ContainsAny(s, "\" ()|")
}

func invalidTextMessage(msg string) string {
	const marker = `invalid input text "`
	i := strings.Index(msg, marker)
	if i < 0 {
		return msg
	}
	rest := msg[i+len(marker):]
	switch {
	case strings.HasPrefix(rest, "#"):
		return "'#' is not a comment: use // or /* */"
	case strings.HasPrefix(rest, "/*"):
		return "unterminated /* comment"
	case strings.HasPrefix(rest, `\"`):
		return "unterminated string literal"
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return fmt.Sprintf("invalid character %q", r)
}

// checkDepth rejects input that would nest the parser deeper than
// maxNesting: brackets (checkNesting), and operators the grammar nests
// rather than repeats (checkChains). Deeper input would overflow the
// parser's stack, a fatal error, not a panic.
func checkDepth(source *lang.Source, src string, toks []lexer.Token) *lang.Error {
	if e := checkNesting(source, src); e != nil {
		return e
	}
	return checkChains(source, toks)
}

// lexChecked lexes src once for both the depth checks and the parser. A
// lexing error is returned as err, for the parser's error report; deep is
// the error of input nested too deep to parse.
func lexChecked(source *lang.Source, file, src string) (lx *lexer.PeekingLexer, deep *lang.Error, err error) {
	lx, toks, err := lexProgram(file, src)
	return lx, checkDepth(source, src, toks), err
}

// checkChains rejects runs of more than maxNesting prefix operators
// (- - - x) and chains of more than maxNesting ^ or .^ at one bracket
// depth (x^x^...^x is right-associative) in toks, which is nil for input
// that does not lex (left to the parser's error).
func checkChains(source *lang.Source, toks []lexer.Token) *lang.Error {
	run := 0        // consecutive prefix operators
	pow := []int{0} // per open bracket: the ^ of the current chain
	for _, t := range toks {
		v := t.Value
		if v == "-" || v == "+" || v == "!" {
			run++
		} else {
			run = 0
		}
		top := len(pow) - 1
		switch v {
		case "(", "[", "{":
			pow = append(pow, 0)
		case ")", "]", "}":
			if top > 0 {
				pow = pow[:top]
			}
		case "^", ".^":
			pow[top]++
		case "'":
		default:
			if !isOperand(v) {
				pow[top] = 0
			}
		}
		if run > maxNesting || pow[len(pow)-1] > maxNesting {
			return source.At(lang.Pos{Line: t.Pos.Line, Col: t.Pos.Column}, fmt.Sprintf("operators chained more than %d deep", maxNesting))
		}
	}
	return nil
}

// isOperand reports whether a token is an identifier or a number.
func isOperand(v string) bool {
	r, _ := utf8.DecodeRuneInString(v)
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || (r == '.' && len(v) > 1 && v[1] >= '0' && v[1] <= '9')
}

// checkNesting rejects input whose brackets nest deeper than maxNesting.
func checkNesting(source *lang.Source, src string) *lang.Error {
	depth, line, col := 0, 1, 0
	for _, r := range src {
		col++
		switch r {
		case '\n':
			line, col = line+1, 0
		case '(', '[', '{':
			depth++
			if depth > maxNesting {
				return source.At(lang.Pos{Line: line, Col: col}, fmt.Sprintf("brackets nested more than %d deep", maxNesting))
			}
		case ')', ']', '}':
			depth--
		}
	}
	return nil
}

// blankStatement recovers from a syntax error at byte offset at: it
// replaces the statement containing it with spaces (keeping newlines, so
// that positions stay valid) and reports whether parsing should go on.
// Recovery happens only inside a block: an error between blocks, or at the
// end of the file, ends parsing.
func blankStatement(text []byte, at int) bool {
	if at < 0 || at >= len(text) {
		return false
	}
	toks, err := lexAll("", string(text))
	if err != nil {
		// A lexing error: blank the offending character, or the rest of
		// the line after a '#' (meant as a comment).
		if text[at] == '\n' {
			return false
		}
		_, size := utf8.DecodeRune(text[at:])
		end := at + size
		if text[at] == '#' {
			for end < len(text) && text[end] != '\n' {
				end++
			}
		}
		for i := at; i < end; i++ {
			text[i] = ' '
		}
		return true
	}
	// Find the token at the error and the brace depth there.
	idx, depth := -1, 0
	for i, t := range toks {
		if t.Pos.Offset >= at {
			idx = i
			break
		}
		switch t.Value {
		case "{":
			depth++
		case "}":
			depth--
		}
	}
	if idx < 0 || depth < 1 || blockKeywords[toks[idx].Value] {
		// Outside any block, or a block keyword inside one (a '}' is
		// missing): there is no statement to skip.
		return false
	}
	// The statement starts after the last ';', '{' or '}' before the error
	// and ends with the first ';' at or after it (or just before a '}' that
	// would close the enclosing braces).
	start := 0
	for i := idx - 1; i >= 0; i-- {
		if v := toks[i].Value; v == ";" || v == "{" || v == "}" {
			start = i + 1
			break
		}
	}
	end := idx
	nest := 0
scan:
	for ; end < len(toks); end++ {
		switch toks[end].Value {
		case "{", "(", "[":
			nest++
		case ")", "]":
			nest--
		case "}":
			if nest == 0 {
				if end == idx && start == idx {
					break scan // a stray '}' after a complete statement: blank it
				}
				end-- // keep the '}' that closes the enclosing block
				break scan
			}
			nest--
		case ";":
			if nest <= 0 {
				break scan
			}
		}
	}
	if end >= len(toks) {
		end = len(toks) - 1
	}
	if start > end {
		start = end
	}
	from := toks[start].Pos.Offset
	to := toks[end].Pos.Offset + len(toks[end].Value)
	for i := from; i < to && i < len(text); i++ {
		if text[i] != '\n' {
			text[i] = ' '
		}
	}
	return true
}
