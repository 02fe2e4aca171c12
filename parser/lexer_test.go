package parser

import (
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/shmlang/shm/internal/testprogs"
)

// referenceLexer is the language's token rules as regular expressions,
// lexed by participle's simple lexer: the independent reference for the
// hand-written scanner (rules are tried in order; the first match wins).
// An Unterminated comment is an error of the scanner.
var referenceLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Comment", Pattern: `//[^\n]*|/\*([^*]|\*+[^*/])*\*+/`},
	{Name: "Unterminated", Pattern: `/\*`},
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
	{Name: "String", Pattern: `"(\\.|[^"\\\n])*"`},
	{Name: "Real", Pattern: `(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+`},
	{Name: "Int", Pattern: `\d+`},
	{Name: "Ident", Pattern: `[a-zA-Z][a-zA-Z0-9_]*`},
	{Name: "Op", Pattern: `\.\*=|\./=|%/%|\|\||&&|==|!=|<=|>=|\+=|-=|\*=|/=|\.\*|\./|\.\^|[-+*/%\\^!<>=?:~|'(){}\[\],;]`},
})

// lexWith returns every token of src as "Kind value line:col:offset", up
// to and including EOF, or "error at line:col:offset" where it fails (the
// messages are parser_test.go's); shift is added to the offsets.
func lexWith(t *testing.T, def lexer.Definition, src string, shift int) []string {
	t.Helper()
	names := lexer.SymbolsByRune(def)
	lx, err := def.(lexer.StringDefinition).LexString("f.shm", src)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		tok, err := lx.Next()
		if names[tok.Type] == "Unterminated" {
			err = &lexer.Error{Pos: tok.Pos}
		}
		if err != nil {
			var pos lexer.Position
			switch e := err.(type) {
			case *lexer.Error:
				pos = e.Pos
			case *lexError:
				pos = e.pos
			default:
				t.Fatalf("%q: error %T %v", src, err, err)
			}
			return append(out, "error at "+pos.String()+":"+strconv.Itoa(pos.Offset+shift))
		}
		out = append(out, names[tok.Type]+" "+tok.Value+" "+tok.Pos.String()+":"+strconv.Itoa(tok.Pos.Offset+shift))
		if tok.EOF() {
			return out
		}
	}
}

// sameTokens fails t unless both lexers give the same tokens for src. The
// scanner skips a byte order mark at the start, which the rules do not:
// they lex the rest.
func sameTokens(t *testing.T, src string) {
	t.Helper()
	ref, shift := src, 0
	if strings.HasPrefix(src, bom) {
		ref, shift = src[len(bom):], len(bom)
	}
	want, got := lexWith(t, referenceLexer, ref, shift), lexWith(t, shmLexer, src, 0)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("%q: token %d is %q, want %q", src, i, g, w)
		}
	}
}

// TestLexerMatchesRules checks the scanner against the regular-expression
// rules on the repository's programs and on inputs at every rule's edges.
func TestLexerMatchesRules(t *testing.T) {
	srcs := []string{
		"", " ", "x", "_x", "x_1y", "1", "12", "1.", "1.5", ".5", ".", "..", "1..2", "1.e5", "1e", "1e+", "1e-3",
		"1E+30x", ".5e", ".5e2", "1.2.3", "3x", "x.5", "a.*b", "a.*=b", "a./=b", "a%/%b", "a%b", "a.^b", "a./b",
		"a||b|c", "a&&b&c", "a==b=c", "!=!", "<=<>=>", "+=-=*=/=", "x'", "{[()]},;:?~\\^", "#x", "@", "$", "`",
		`"abc"`, `"a\"b"`, `"a\\"`, `"a\`, `"abc`, "\"a\nb\"", "\"a\\\nb\"", `"é"`, "\"\xff\"", "é", "x\xffy",
		"// c", "// c\nx", "/* c */x", "/* c", "/*/", "/**/", "/* a **/ b */", "/* a * / */", "/*\n*\n*/", "a/b", "a//b",
		"\t\r\n  x\n\ny", "x\n  é y", "é\nx", "1.5e-3e4", "0x1F", "a\u00a0b", "x;#comment", "\"\xe9\x80\"",
		strings.Repeat("é", 20), "\"" + strings.Repeat("é", 20), strings.Repeat("\xff", 30),
		"\ufeffx", "\ufeff", "\ufeff\ufeffx", "x\ufeff", "\ufeff/* c", "x\x00y", "\x01", "x\x7f", "\xff\xfex", "\xef\xbb",
		"a /* b\n c", "/*", "/* /* */", "x\u0085", "x\u200b", "x\u202e", "x\u3000",
	}
	for _, src := range testprogs.All(t, "..") {
		srcs = append(srcs, src)
	}
	for _, src := range srcs {
		sameTokens(t, src)
	}
}

// FuzzLexer checks the scanner against the regular-expression rules.
func FuzzLexer(f *testing.F) {
	addSeeds(f)
	f.Add("1.e5 .5 x.*=y /* c */ \"s\\\"\" // e")
	f.Fuzz(func(t *testing.T, src string) {
		sameTokens(t, src)
	})
}
