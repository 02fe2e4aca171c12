package parser

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/lang"
)

// MaxErrors caps the number of errors one Parse (or check) reports.
const MaxErrors = 20

// recoveryBudget bounds the tokens parsed while recovering from syntax
// errors (each recovery parses the file again; the parser takes about
// 10 µs per token): a typical model (a few thousand tokens) recovers from
// all MaxErrors errors, a file near maxTokens reports its first one or
// two.
const recoveryBudget = 500_000

// maxTokens bounds the tokens of one file or session line: the parser
// takes about 10 µs and holds about 1 kB per token, so that a file of
// this many is answered within seconds in a few hundred megabytes (the
// largest posteriordb program has under 1 000). Less memory lowers it
// (tokenLimit).
const maxTokens = 250_000

// bytesPerToken is about what the parser holds per token, for tokenLimit.
const bytesPerToken = 1 << 10

// tokenLimit returns the tokens a file may have: maxTokens, or fewer
// where a sixteenth of the memory this process may use (sysmem.Total)
// would not hold them.
func tokenLimit() int {
	total, _ := sysmem.Total()
	if total == 0 {
		return maxTokens
	}
	return int(min(uint64(maxTokens), total/16/bytesPerToken))
}

// maxNesting bounds bracket nesting, so that adversarial input cannot
// exhaust the stack of the recursive-descent parser.
const maxNesting = 256

// maxListElements bounds the elements of one bracketed list (an array
// or vector literal, arguments, indices): the parser takes about 10 µs
// and a few hundred bytes per element, and large values belong in data
// files.
const maxListElements = 100_000

// Parser parses .shm programs. A Parser holds the compiled grammar and may
// be used from several goroutines.
type Parser struct {
	grammar *participle.Parser[pProgram]
	stmts   *participle.Parser[pStmtList]
	exprs   *participle.Parser[pExpr]
	funDef  *participle.Parser[pFunDef] // to recognize a definition typed in a session

	recoveryBudget int // recoveryBudget, smaller in tests
	maxTokens      int // tokenLimit(), smaller in tests
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
	return &Parser{grammar: g, stmts: sg, exprs: eg, funDef: fg, recoveryBudget: recoveryBudget, maxTokens: tokenLimit()}, nil
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
	lx, ntoks, deep, lexErr := lexChecked(source, file, src, p.maxTokens)
	if deep != nil {
		return nil, lang.ErrorList{deep}
	}
	if lexErr != nil {
		ntoks = len(src) // at most one token per byte
	}
	text := []byte(src)
	// cost is about the tokens of a text amended from src (blanked
	// statements keep its length; a cut shortens it).
	cost := func(t []byte) int { return ntoks * len(t) / max(len(src), 1) }
	parsed := 0 // tokens parsed so far, to bound the recovery's work
	// reparse parses an amended text to find an error's cause, within the
	// recovery's budget.
	reparse := func(t []byte) error {
		if parsed+cost(t) > p.recoveryBudget {
			return errNoReparse
		}
		parsed += cost(t)
		return parseText(p.grammar, file, t)
	}
	// After an unterminated comment, the text is cut before it (Prefix):
	// the errors up to the cut's last line are the file's.
	cutLine := 0
	for {
		if parsed > 0 { // a statement was blanked
			lx, _, lexErr = lexProgram(file, string(text))
		}
		parsed += max(cost(text), 1)
		tree, err := (*pProgram)(nil), lexErr
		if err == nil {
			tree, err = p.grammar.ParseFromLexer(lx)
		}
		if err == nil {
			c := &converter{src: source}
			prog := c.program(tree, file)
			if cutLine > 0 { // a part of the program
				for _, e := range c.errs {
					if e.Pos.Line <= cutLine {
						errs = append(errs, e)
					}
				}
				errs.Sort()
				return nil, capErrors(errs)
			}
			errs = append(errs, c.errs...)
			errs.Sort()
			return prog, capErrors(errs)
		}
		e, at := syntaxError(source, err, text, reparse)
		if cutLine > 0 && e.Pos.Line > cutLine {
			errs.Sort()
			return nil, capErrors(errs)
		}
		errs = append(errs, e)
		// Each recovery parses the whole file again: stop after MaxErrors,
		// or once recoveryBudget bytes have been parsed (a huge file
		// reports its first errors, not minutes later).
		more := len(errs) < MaxErrors && parsed+cost(text) <= p.recoveryBudget
		var le *lexError
		switch {
		case !more:
		case errors.As(err, &le) && le.comment:
			var cut Cut
			cut, more = Prefix(string(text), at)
			text, cutLine = []byte(cut.Text), cut.Line
		default:
			text, more = blankStatement(text, at, err)
		}
		if !more {
			errs.Sort()
			return nil, capErrors(errs)
		}
	}
}

// parseText parses text with grammar g, for its error only.
func parseText[T any](g *participle.Parser[T], file string, text []byte) error {
	lx, _, err := lexProgram(file, string(text))
	if err == nil {
		_, err = g.ParseFromLexer(lx)
	}
	return err
}

func capErrors(errs lang.ErrorList) lang.ErrorList {
	if len(errs) > MaxErrors {
		errs = errs[:MaxErrors]
	}
	return errs
}

// syntaxError converts a lexing or participle error into a lang error
// with a friendlier message, and returns the byte offset it points at.
//
// reparse parses an amended text for missingOperand; it may be nil.
func syntaxError(source *lang.Source, err error, text []byte, reparse func([]byte) error) (*lang.Error, int) {
	var le *lexError
	if errors.As(err, &le) {
		return source.At(langPos(le.pos), le.msg), le.pos.Offset
	}
	var perr participle.Error
	if !errors.As(err, &perr) {
		return source.At(lang.Pos{}, err.Error()), -1
	}
	lp := perr.Position()
	msg := perr.Message()
	var ut *participle.UnexpectedTokenError
	if errors.As(err, &ut) {
		if found, after, ok := missingOperand(ut, text, reparse); ok {
			return source.At(langPos(found.Pos), fmt.Sprintf("expected an expression after %q, found %s", after, describeToken(found))), found.Pos.Offset
		}
		msg = unexpectedMessage(ut)
	}
	return source.At(langPos(lp), msg), lp.Offset
}

// langPos returns the line and column of a lexer position.
func langPos(p lexer.Position) lang.Pos { return lang.Pos{Line: p.Line, Col: p.Column} }

// describeToken names a token in a message: quoted, or "end of file".
func describeToken(t lexer.Token) string {
	if t.EOF() {
		return "end of file"
	}
	return fmt.Sprintf("%q", t.Value)
}

// blockKeywords start top-level blocks.
var blockKeywords = map[string]bool{
	"functions": true, "data": true, "transformed": true, "parameters": true,
	"model": true, "generated": true,
}

// binaryOps are the operators that must be followed by an operand
// (binary, prefix and the ternary's '?').
var binaryOps = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "%": true, "%/%": true, "\\": true,
	".*": true, "./": true, "^": true, ".^": true, "&&": true, "||": true, "==": true,
	"!=": true, "<": true, "<=": true, ">": true, ">=": true, "!": true, "?": true,
}

// prefixOps are the operators that may start an operand.
var prefixOps = map[string]bool{"-": true, "+": true, "!": true}

// assignOps are the assignments, whose right-hand side is an expression.
var assignOps = map[string]bool{
	"=": true, "+=": true, "-=": true, "*=": true, "/=": true, ".*=": true, "./=": true,
}

// startsOperand reports whether an operand can start with token t.
func startsOperand(t lexer.Token) bool {
	switch t.Type {
	case tokIdent, tokInt, tokReal, tokString:
		return true
	}
	return prefixOps[t.Value] || t.Value == "(" || t.Value == "[" || t.Value == "{"
}

// missingOperand recognizes an operator followed by something that
// cannot start its operand, such as "x = 3 +;" or "y + * 2", as the cause
// of the syntax error ut in text. It returns the token where the operand
// is missing and the operator before it, the place and the subject of the
// useful report ("expected an expression after"): the grammar backtracks
// over the operator and reports a token at or before it ("missing ';'
// before \"+\"", or the ',' before an argument "+ * b", or the '[' of
// "v[1 + * 2]").
//
// The candidate is the first such operator in the statement that holds
// the reported token. It is the cause only if an operand put after it
// moves the error past it: reparse parses text so amended, up to the end
// of the statement, and returns its error (nil when it parses), or
// errNoReparse when it may not parse again (or is nil), in which case the
// candidate is the cause only if it is right at the reported token.
func missingOperand(ut *participle.UnexpectedTokenError, text []byte, reparse func([]byte) error) (found lexer.Token, after string, ok bool) {
	_, toks, err := lexProgram("", string(text)) // ending with the end of file
	if err != nil {
		return lexer.Token{}, "", false
	}
	i := slices.IndexFunc(toks, func(t lexer.Token) bool { return t.Pos.Offset >= ut.Unexpected.Pos.Offset })
	if i < 0 {
		return lexer.Token{}, "", false
	}
	// The statement: after the last ';', '{' or '}' before the reported
	// token, to the first ';' at or after it.
	start := statementStart(toks, i)
	op, at := -1, -1 // the operator, and the token after it and its prefix operators
	for k := start; k < len(toks)-1 && (k <= i || toks[k-1].Value != ";"); k++ {
		if !binaryOps[toks[k].Value] && !assignOps[toks[k].Value] {
			continue
		}
		j := k + 1
		for j < len(toks) && prefixOps[toks[j].Value] {
			j++
		}
		if j < len(toks) && !startsOperand(toks[j]) {
			op, at = j-1, j
			break
		}
		k = j - 1
	}
	if at < 0 {
		return lexer.Token{}, "", false
	}
	found, after = toks[at], toks[op].Value
	if reparse == nil {
		reparse = func([]byte) error { return errNoReparse }
	}
	ins, end := found.Pos.Offset, len(text)
	if k := slices.IndexFunc(toks[at:], func(t lexer.Token) bool { return t.Value == ";" }); k >= 0 {
		end = toks[at+k].Pos.Offset + 1
	}
	amended := slices.Concat(text[:ins], []byte(" 0 "), text[ins:end])
	switch err := reparse(amended); {
	case err == nil:
		return found, after, true
	case errors.Is(err, errNoReparse):
		// The operator reported, or the token after the operator (when
		// an expression was expected there), is the cause.
		adjacent := at == i+1 && op == i || at == i && expectsExpression(ut)
		return found, after, adjacent
	default:
		var perr participle.Error
		moved := errors.As(err, &perr) && perr.Position().Offset > ins+1 // past the operand put in
		return found, after, moved
	}
}

// errNoReparse is the error of a reparse that may not parse.
var errNoReparse = errors.New("no reparse")

// expectsExpression reports whether the parser wanted an expression, or a
// part of one, where it failed.
func expectsExpression(ut *participle.UnexpectedTokenError) bool {
	msg := ut.Message()
	i := strings.Index(msg, "(expected ")
	return i >= 0 && expressionRules[strings.TrimSuffix(msg[i+len("(expected "):], ")")]
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

// checkDepth rejects input too large to parse in seconds (checkLists,
// maxTokens) or that would nest the parser deeper than maxNesting:
// brackets (checkNesting), and operators the grammar nests rather than
// repeats (checkChains). Deeper input would overflow the parser's stack,
// a fatal error, not a panic.
func checkDepth(source *lang.Source, src string, toks []lexer.Token, maxTokens int) *lang.Error {
	if e := checkLists(source, toks); e != nil {
		return e
	}
	if len(toks) > maxTokens {
		t := toks[maxTokens]
		return source.At(lang.Pos{Line: t.Pos.Line, Col: t.Pos.Column},
			fmt.Sprintf("more than %d tokens (names, numbers and symbols): put large values in a data file", maxTokens))
	}
	if e := checkNesting(source, src); e != nil {
		return e
	}
	return checkChains(source, toks)
}

// checkLists rejects a bracketed list of more than maxListElements
// elements, at the bracket that opens it, before the parser spends
// seconds on it.
func checkLists(source *lang.Source, toks []lexer.Token) *lang.Error {
	type list struct {
		open   lexer.Position
		commas int
	}
	stack := []list{{}}
	for _, t := range toks {
		switch t.Value {
		case "(", "[", "{":
			stack = append(stack, list{open: t.Pos})
		case ")", "]", "}":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case ",":
			top := &stack[len(stack)-1]
			top.commas++
			if top.commas >= maxListElements && len(stack) > 1 {
				return source.At(lang.Pos{Line: top.open.Line, Col: top.open.Column},
					fmt.Sprintf("a list of more than %d elements: put large values in a data file", maxListElements))
			}
		}
	}
	return nil
}

// lexChecked lexes src once for both the size checks and the parser. A
// lexing error is returned as err, for the parser's error report; deep is
// the error of input too large or nested too deep to parse; n is the
// number of tokens before the end of file (0 after a lexing error).
func lexChecked(source *lang.Source, file, src string, maxTokens int) (lx *lexer.PeekingLexer, n int, deep *lang.Error, err error) {
	lx, toks, err := lexProgram(file, src)
	return lx, max(len(toks)-1, 0), checkDepth(source, src, toks, maxTokens), err
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
	for _, r := range strings.TrimPrefix(src, bom) {
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

// blankStatement recovers from the error err at byte offset at of text:
// it returns text with the statement containing it replaced by spaces
// (keeping lines and columns, so that positions stay valid) and reports
// whether parsing should go on. Recovery from a syntax error happens only
// inside a block: an error between blocks, or at the end of the file,
// ends parsing. A lexing error blanks the text it names (a character, a
// run of bytes that are not UTF-8, the rest of the line after '#').
func blankStatement(text []byte, at int, err error) ([]byte, bool) {
	if at < 0 || at >= len(text) {
		return text, false
	}
	if le := (*lexError)(nil); errors.As(err, &le) {
		if le.stop {
			return text, false
		}
		from, to := at, min(at+le.size, len(text))
		if le.statement {
			// From the start of the statement (text lexes up to at).
			if toks, err := lexAll("", string(text[:at])); err == nil {
				if k := statementStart(toks, len(toks)); k < len(toks) {
					from = toks[k].Pos.Offset
				}
			}
		}
		if le.toEnd {
			to = statementEnd(text, to)
		}
		return blank(text, from, to), true
	}
	toks, err := lexAll("", string(text))
	if err != nil {
		return text, false
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
		return text, false
	}
	// The statement starts after the last ';', '{' or '}' before the error
	// and ends with the first ';' at or after it (or just before a '}' that
	// would close the enclosing braces).
	start := statementStart(toks, idx)
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
	return blank(text, from, min(to, len(text))), true
}

// statementStart returns the index of the first token of the statement
// that holds toks[i]: the token after the last ';', '{' or '}' before it.
func statementStart(toks []lexer.Token, i int) int {
	for k := i - 1; k >= 0; k-- {
		if v := toks[k].Value; v == ";" || v == "{" || v == "}" {
			return k + 1
		}
	}
	return 0
}

// statementEnd returns the offset after the first ';' of text at or after
// offset at, or at when a brace or text that does not lex comes first.
func statementEnd(text []byte, at int) int {
	s := newScanner("", string(text))
	s.pos.Offset = at
	for {
		t, err := s.Next()
		if err != nil || t.EOF() || t.Value == "{" || t.Value == "}" {
			return at
		}
		if t.Value == ";" {
			return t.Pos.Offset + 1
		}
	}
}

// blank returns text with text[from:to] replaced by a space for each
// character (each byte that is not UTF-8), newlines kept: the columns of
// what follows on the line stay those of the original.
func blank(text []byte, from, to int) []byte {
	out := make([]byte, 0, len(text))
	out = append(out, text[:from]...)
	for s := text[from:to]; len(s) > 0; {
		r, n := utf8.DecodeRune(s)
		if r == '\n' {
			out = append(out, '\n')
		} else {
			out = append(out, ' ')
		}
		s = s[n:]
	}
	return append(out, text[to:]...)
}
