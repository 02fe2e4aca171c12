package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The documents a newcomer reads: README.md, a landing page, and docs/.
const (
	readmeFile    = "../../README.md"
	readmeMaxLine = 250
)

// docFiles returns README.md and every docs/*.md file.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	return append([]string{readmeFile}, docs...)
}

// TestReadmeLanding checks that README.md stays a landing page: at most
// readmeMaxLine lines, and a row of its command table for every command
// of shm's usage and of shm calibrate's.
func TestReadmeLanding(t *testing.T) {
	text, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(text, []byte("\n")); n > readmeMaxLine {
		t.Errorf("README.md has %d lines, at most %d: move the details into docs/ and link them", n, readmeMaxLine)
	}
	for _, cmd := range shmCommands(t) {
		if !strings.Contains(string(text), "\n| `shm "+strings.Join(cmd, " ")) {
			t.Errorf("README.md's command table has no row for shm %s", strings.Join(cmd, " "))
		}
	}
}

// shmCommands returns shm's commands as the program's usage lists them,
// a procedure of calibrate as two words ("calibrate lambda").
func shmCommands(t *testing.T) [][]string {
	t.Helper()
	var cmds [][]string
	seen := map[string]bool{}
	for _, u := range []struct{ text, prefix string }{{usage, "  shm "}, {calibrateUsage, "  shm calibrate "}} {
		for line := range strings.Lines(u.text) {
			rest, ok := strings.CutPrefix(line, u.prefix)
			if !ok {
				continue
			}
			name := strings.Fields(rest)[0]
			cmd := strings.Fields(u.prefix[len("  shm "):] + name)
			if key := strings.Join(cmd, " "); !seen[key] && key != "calibrate" {
				seen[key] = true
				cmds = append(cmds, cmd)
			}
		}
	}
	if len(cmds) < 8 {
		t.Fatalf("the usage lists only %v", cmds)
	}
	return cmds
}

// commandFlags returns the flag set of shm's command cmd ("sample", or
// "calibrate lambda" as two words), aliases included, as the command
// itself defines it: the command runs with --help, which defines its
// flags and returns before the command does anything. ok is false when
// cmd is not a command; fs is nil for a command without flags (check).
func commandFlags(cmd []string) (fs *flag.FlagSet, ok bool) {
	var made []*flag.FlagSet
	testHookFlagSet = func(fs *flag.FlagSet) { made = append(made, fs) }
	defer func() { testHookFlagSet = nil }()
	var stdout, stderr bytes.Buffer
	if run(append(slices.Clone(cmd), "--help"), &stdout, &stderr) != 0 {
		return nil, false
	}
	name := strings.Join(cmd, " ")
	for _, fs := range made {
		if fs.Name() == name {
			return fs, true
		}
	}
	return nil, len(made) == 0
}

// TestDocCLIFlags checks that docs/cli.md, the command-line reference,
// names every flag of every command (aliases aside).
func TestDocCLIFlags(t *testing.T) {
	text, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range shmCommands(t) {
		fs, ok := commandFlags(cmd)
		if !ok {
			t.Errorf("shm %s --help fails", strings.Join(cmd, " "))
			continue
		}
		if fs == nil {
			continue
		}
		fs.VisitAll(func(f *flag.Flag) {
			if strings.HasPrefix(f.Usage, "alias of --") {
				return
			}
			if !strings.Contains(string(text), "`--"+f.Name+"`") {
				t.Errorf("docs/cli.md does not name shm %s's flag --%s (%s)", strings.Join(cmd, " "), f.Name, f.Usage)
			}
		})
	}
}

// TestDocShellCommands checks every shm command line of the ```sh blocks
// of README.md and docs/*.md: it names a command of shm, and gives only
// flags that command defines, each with a value it accepts, as the
// command's own flag parsing reads them.
func TestDocShellCommands(t *testing.T) {
	count := 0
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range shellBlocks(string(text)) {
			cmds, err := shellCommands(b.text)
			if err != nil {
				t.Errorf("%s, the sh block at line %d: %v", file, b.line, err)
				continue
			}
			for _, words := range cmds {
				args, ok := shmArgs(words)
				if !ok {
					continue
				}
				count++
				if err := checkShmArgs(args); err != nil {
					t.Errorf("%s, the sh block at line %d: %s: %v", file, b.line, strings.Join(words, " "), err)
				}
			}
		}
	}
	if count < 20 {
		t.Errorf("only %d shm command lines found in the docs' sh blocks", count)
	}
}

// checkShmArgs checks the arguments of one shm command line.
func checkShmArgs(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command")
	}
	cmd, rest := args[:1], args[1:]
	if args[0] == "calibrate" && len(args) > 1 {
		cmd, rest = args[:2], args[2:]
	}
	fs, ok := commandFlags(cmd)
	if !ok {
		return fmt.Errorf("shm has no command %q", strings.Join(cmd, " "))
	}
	if fs == nil {
		for _, a := range rest {
			if strings.HasPrefix(a, "-") && a != "-" {
				return fmt.Errorf("shm %s takes no flags, got %s", strings.Join(cmd, " "), a)
			}
		}
		return nil
	}
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	if _, err := parseArgs(fs, rest); err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(msg.String()))
	}
	return nil
}

// shmArgs returns the arguments of a command line that runs shm
// (shm, ./shm, path/to/shm or go run ./cmd/shm), and whether it does.
func shmArgs(words []string) ([]string, bool) {
	switch {
	case len(words) == 0:
		return nil, false
	case words[0] == "shm" || strings.HasSuffix(words[0], "/shm"):
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.HasSuffix(words[2], "cmd/shm"):
		return words[3:], true
	}
	return nil, false
}

// A shellBlock is the text of a ```sh block and the line of its fence.
type shellBlock struct {
	text string
	line int
}

// fence matches the line that opens or closes a fenced code block (in a
// list item it may be indented), and its info string.
var fence = regexp.MustCompile("^\\s*```\\s*(\\S*)")

// shellBlocks returns the ```sh blocks of a Markdown text.
func shellBlocks(text string) []shellBlock {
	var blocks []shellBlock
	var cur strings.Builder
	inBlock, isSh, start := false, false, 0
	for i, line := range strings.Split(text, "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case m != nil && !inBlock:
			inBlock, isSh, start = true, m[1] == "sh", i+1
			cur.Reset()
		case m != nil:
			if isSh {
				blocks = append(blocks, shellBlock{cur.String(), start})
			}
			inBlock = false
		case inBlock:
			cur.WriteString(strings.TrimSpace(line))
			cur.WriteString("\n")
		}
	}
	return blocks
}

// shellCommands splits a shell script into its simple commands, each as
// its words with the quotes removed: lines joined at a trailing
// backslash, comments dropped, commands split at newlines, ;, &, &&, ||
// and |, redirections and leading variable assignments dropped, and
// loop and conditional keywords (for ...; do ...; done) read around the
// commands they hold.
func shellCommands(script string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord, skipWord := false, false
	endWord := func() {
		if inWord {
			if skipWord {
				skipWord = false
			} else {
				words = append(words, word.String())
			}
		}
		word.Reset()
		inWord = false
	}
	endCommand := func() {
		endWord()
		if c := simpleCommand(words); len(c) > 0 {
			cmds = append(cmds, c)
		}
		words = nil
	}
	rs := []rune(script)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			i++
		case r == '\\' && i+1 < len(rs):
			i++
			word.WriteRune(rs[i])
			inWord = true
		case r == '\'':
			j := slices.Index(rs[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '")
			}
			word.WriteString(string(rs[i+1 : i+1+j]))
			i += j + 1
			inWord = true
		case r == '"':
			i++
			for ; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[i+1]) {
					i++
				}
				word.WriteRune(rs[i])
			}
			if i == len(rs) {
				return nil, fmt.Errorf("unclosed \"")
			}
			inWord = true
		case r == '#' && !inWord:
			for i+1 < len(rs) && rs[i+1] != '\n' {
				i++
			}
		case r == '\n' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')':
			if (r == '&' || r == '|') && i+1 < len(rs) && rs[i+1] == r {
				i++
			}
			endCommand()
		case r == '<' || r == '>':
			// A redirection: a file descriptor before it ("2>") and its
			// target after it are not words of the command.
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset()
				inWord = false
			}
			endWord()
			if i+1 < len(rs) && rs[i+1] == r {
				i++
			}
			if i+1 < len(rs) && rs[i+1] == '&' {
				i++
				for i+1 < len(rs) && unicode.IsDigit(rs[i+1]) {
					i++
				}
				continue
			}
			skipWord = true
		case r == ' ' || r == '\t':
			endWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	endCommand()
	return cmds, nil
}

// assignment matches a variable assignment before a command (SEED=1).
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// simpleCommand returns the command of words without the keywords and
// assignments before it; nil for a loop's head or end.
func simpleCommand(words []string) []string {
	for len(words) > 0 {
		switch w := words[0]; {
		case w == "for" || w == "case" || w == "done" || w == "fi" || w == "esac" || w == "{" || w == "}":
			return nil
		case w == "do" || w == "then" || w == "else" || w == "elif" || w == "if" || w == "while" || w == "until" || w == "time" || w == "!" || assignment.MatchString(w):
			words = words[1:]
		default:
			return words
		}
	}
	return nil
}

// TestDocShellCommandsParse checks the shell reading of the docs' test
// on a few lines.
func TestDocShellCommandsParse(t *testing.T) {
	script := `go build -o shm ./cmd/shm && ./shm sample m.shm d.csv --seed 1
for k in 1 2; do FIRST=32 CHAIN_ID=$k bash bench/expD.sh; done
./shm calibrate lambda m.shm --datasets 'a/img0[0-2].json,b.json' --sbatch "--partition=long --time=1:00:00" \
    --seed 1   # a comment
shm repl m.shm < session.txt > results.txt 2>&1
./shm plot trace out/*.csv 2> err.txt | tee log`
	want := [][]string{
		{"go", "build", "-o", "shm", "./cmd/shm"},
		{"./shm", "sample", "m.shm", "d.csv", "--seed", "1"},
		{"bash", "bench/expD.sh"},
		{"./shm", "calibrate", "lambda", "m.shm", "--datasets", "a/img0[0-2].json,b.json", "--sbatch", "--partition=long --time=1:00:00", "--seed", "1"},
		{"shm", "repl", "m.shm"},
		{"./shm", "plot", "trace", "out/*.csv"},
		{"tee", "log"},
	}
	got, err := shellCommands(script)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shellCommands:\n got %q\nwant %q", got, want)
	}
	for _, tt := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"sample", "m.shm", "--chains", "2", "--num_samples", "10", "--output-dir", "o"}, true},
		{[]string{"sample", "m.shm", "--chain", "2"}, false},
		{[]string{"sample", "m.shm", "--chains", "two"}, false},
		{[]string{"smaple", "m.shm"}, false},
		{[]string{"check", "m.shm"}, true},
		{[]string{"check", "m.shm", "--seed", "1"}, false},
		{[]string{"calibrate", "iters", "m.shm", "--iters", "20,40", "--at", "a=1", "--at", "a=2"}, true},
		{[]string{"calibrate", "iters", "m.shm", "--k", "2"}, false},
		{[]string{"calibrate", "lamda", "m.shm"}, false},
		{[]string{"plot", "dens", "a.csv", "--vars", "mu", "--vars", "sigma"}, false},
	} {
		if err := checkShmArgs(tt.args); (err == nil) != tt.ok {
			t.Errorf("checkShmArgs(%q) = %v, want ok %v", tt.args, err, tt.ok)
		}
	}
}

// TestDocLinks checks every relative link and image of README.md and
// docs/*.md: the file it names exists, and a #fragment names a heading
// of the Markdown file it points to.
func TestDocLinks(t *testing.T) {
	headings := map[string]map[string]bool{} // file -> its anchors
	anchors := func(file string) map[string]bool {
		if a, ok := headings[file]; ok {
			return a
		}
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		a := markdownAnchors(string(text))
		headings[file] = a
		return a
	}
	count := 0
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(text)) {
			if isURL(l.target) {
				continue
			}
			count++
			path, frag, _ := strings.Cut(l.target, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link %s: %v", file, l.line, l.target, err)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchors(target)[frag] {
				t.Errorf("%s:%d: link %s: %s has no heading #%s", file, l.line, l.target, target, frag)
			}
		}
	}
	if count < 30 {
		t.Errorf("only %d relative links found", count)
	}
}

// isURL reports whether a link target is an absolute URL (https:, mailto:).
func isURL(target string) bool { return urlScheme.MatchString(target) }

var urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// A markdownLink is the target of a link or image and its line.
type markdownLink struct {
	target string
	line   int
}

var (
	// inlineLink matches [text](target) and ![alt](target "title").
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink matches a reference definition: [name]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// codeSpan matches inline code, whose text is not Markdown.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
)

// markdownLinks returns the link and image targets of a Markdown text,
// outside code blocks and code spans.
func markdownLinks(text string) []markdownLink {
	var links []markdownLink
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			links = append(links, markdownLink{m[1], i + 1})
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			links = append(links, markdownLink{m[1], i + 1})
		}
	}
	return links
}

// headingLink matches a link in a heading, whose text makes the anchor.
var headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// markdownAnchors returns the anchors of a Markdown text's headings as
// GitHub makes them: lower case, punctuation dropped, spaces as hyphens,
// a repeated anchor numbered (-1, -2, …).
func markdownAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	inCode := false
	for line := range strings.Lines(text) {
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if inCode || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		// Links in a heading count by their text.
		title = headingLink.ReplaceAllString(strings.TrimSpace(title), "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		for n := 1; anchors[a]; n++ {
			a = fmt.Sprintf("%s-%d", b.String(), n)
		}
		anchors[a] = true
	}
	return anchors
}
