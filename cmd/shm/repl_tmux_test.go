package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxSession drives a program in a detached tmux session on a private
// server.
type tmuxSession struct {
	t      *testing.T
	socket string
	env    []string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys types keys: literal text, or tmux key names such as Enter, Tab, Up
// and C-c.
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", "repl"}, keys...)...)
}

func (s *tmuxSession) screen() string {
	s.t.Helper()
	return s.tmux("capture-pane", "-p", "-t", "repl")
}

// waitFor polls the screen until ok accepts it, or fails after timeout.
func (s *tmuxSession) waitFor(what string, timeout time.Duration, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen := s.screen()
		if ok(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; screen:\n%s", what, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastLine returns the last non-empty line of a screen.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return strings.TrimRight(lines[len(lines)-1], " ")
}

// startTerminalRepl builds shm and runs "shm repl args..." in a 150×40
// terminal under tmux, in dir; it skips the test when tmux or go is
// missing.
func startTerminalRepl(t *testing.T, dir string, args ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build shm")
	}
	bin := filepath.Join(dir, "shm")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home := filepath.Join(dir, "home")
	cache := filepath.Join(dir, "cache")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + cache, "TERM=xterm", "NO_COLOR=1", "TMUX_TMPDIR=" + dir}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("shm-repl-test-%d-%s", os.Getpid(), t.Name()), env: env}
	s.tmux(append([]string{"new-session", "-d", "-s", "repl", "-x", "150", "-y", "40", bin, "repl"}, args...)...)
	t.Cleanup(func() {
		cmd := exec.Command("tmux", "-L", s.socket, "kill-server")
		cmd.Env = env
		cmd.Run()
	})
	return s
}

// TestReplTerminal drives the real program in a terminal under tmux:
// completion, history recall, and Ctrl-C during :sample and during a
// line that does not end.
func TestReplTerminal(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	cache := filepath.Join(dir, "cache")
	out := filepath.Join(dir, "out")
	s := startTerminalRepl(t, dir, model, dataFile)
	env := s.env
	const wait = 10 * time.Second
	prompt := func(screen string) bool { return lastLine(screen) == "shm>" }
	s.waitFor("the prompt", wait, prompt)

	// Completion of a built-in.
	s.keys("resol", "Tab")
	s.waitFor("completion of resolution", wait, func(sc string) bool { return lastLine(sc) == "shm> resolution" })
	s.keys("(y)", "Enter")
	s.waitFor("resolution(y)", wait, func(sc string) bool {
		return strings.Contains(sc, "shm> resolution(y)\n2\n") && prompt(sc)
	})

	// History recall with the Up arrow.
	s.keys("1 + 41", "Enter")
	s.waitFor("42", wait, func(sc string) bool { return strings.Count(sc, "\n42\n") == 1 && prompt(sc) })
	s.keys("Up")
	s.waitFor("the recalled line", wait, func(sc string) bool { return lastLine(sc) == "shm> 1 + 41" })
	s.keys("Enter")
	s.waitFor("42 twice", wait, func(sc string) bool { return strings.Count(sc, "\n42\n") == 2 && prompt(sc) })
	hist, err := os.ReadFile(filepath.Join(cache, "shm", "repl_history"))
	if err != nil || !strings.Contains(string(hist), "1 + 41\n") {
		t.Errorf("history file: %v\n%s", err, hist)
	}

	// Ctrl-C during a long run returns to the prompt and writes nothing.
	s.keys(":sample --chains 2 --warmup 1000000 --samples 1000000 --seed 1 --output "+out, "Enter")
	s.waitFor("the progress line", wait, func(sc string) bool { return strings.Contains(sc, "chain(s):") })
	s.keys("C-c")
	s.waitFor("the interruption", wait, func(sc string) bool {
		return strings.Contains(sc, "error: sampling interrupted") && prompt(sc)
	})
	s.keys("2 * 21", "Enter")
	s.waitFor("the session after Ctrl-C", wait, func(sc string) bool { return strings.Count(sc, "\n42\n") == 3 && prompt(sc) })
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		t.Errorf("files left in %s after Ctrl-C: %v", out, entries)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.csv")); len(left) > 0 {
		t.Errorf("files left behind: %v", left)
	}
	// Ctrl-C during a line that does not end stops it and keeps the
	// session.
	s.keys("real s = 0; while (1) { s += 1; }", "Enter")
	time.Sleep(300 * time.Millisecond)
	s.keys("C-c")
	s.waitFor("the line's interruption", wait, func(sc string) bool {
		return strings.Contains(sc, "interrupted") && prompt(sc)
	})
	s.keys("(s > 0) * 42", "Enter")
	s.waitFor("the session after the line's interruption", wait, func(sc string) bool {
		return strings.Count(sc, "\n42\n") == 4 && prompt(sc)
	})
	s.keys(":quit", "Enter")
	deadline := time.Now().Add(wait)
	for {
		cmd := exec.Command("tmux", "-L", s.socket, "has-session", "-t", "repl")
		cmd.Env = env
		if cmd.Run() != nil {
			break // the program ended and its session with it
		}
		if time.Now().After(deadline) {
			t.Fatalf(":quit did not end the program; screen:\n%s", s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loopModel runs K iterations in transformed data and M in the model
// block: with K or M at 10^9, binding or one evaluation takes minutes.
const loopModel = `data { int K; int M; }
transformed data { real s = 0; for (i in 1:K) s += 1; }
parameters { real mu; }
model { real t = 0; for (i in 1:M) t += 1; mu ~ normal(0, 1); }
`

// TestReplTerminalInterrupt checks that Ctrl-C stops every command that
// binds the model (evaluating transformed data) or evaluates its density,
// returns to the prompt with a message and leaves the session as it was.
func TestReplTerminalInterrupt(t *testing.T) {
	dir := t.TempDir()
	model := writeFile(t, dir, "loop.shm", loopModel)
	long := writeFile(t, dir, "long.shm", strings.Replace(loopModel, "1:K", "1:1000000000", 1))
	longData := writeFile(t, dir, "long.json", `{"K": 1000000000, "M": 1}`)
	shortData := writeFile(t, dir, "short.json", `{"K": 1, "M": 1}`)
	s := startTerminalRepl(t, dir, model, shortData)
	const wait = 10 * time.Second
	prompt := func(screen string) bool { return lastLine(screen) == "shm>" }
	s.waitFor("the prompt", wait, prompt)
	answers := 0
	for _, tt := range []struct{ line, want string }{
		{":load " + long, ":load interrupted; nothing changed"},
		{":data " + longData, ":data interrupted; nothing changed"},
		{":set K=1000000000", ":set interrupted; nothing changed"},
		{":sample --set K=1000000000", "sampling interrupted"},
		{":set M=1000000000", ""}, // binds at once: the loop is the model's
		{":lp mu=0", ":lp interrupted"},
	} {
		s.keys(tt.line, "Enter")
		if tt.want == "" {
			s.waitFor(tt.line, wait, func(sc string) bool { return strings.Contains(sc, tt.line+"\n") && prompt(sc) })
			continue
		}
		time.Sleep(500 * time.Millisecond) // the command is running
		start := time.Now()
		s.keys("C-c")
		s.waitFor(tt.line+" interrupted", wait, func(sc string) bool {
			return strings.Contains(sc, "error: "+tt.want) && prompt(sc)
		})
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: the prompt came back %v after Ctrl-C", tt.line, d)
		}
		// The session goes on, with the model as it was.
		answers++
		s.keys("K + 41", "Enter")
		s.waitFor("the session after "+tt.line, wait, func(sc string) bool {
			return strings.Count(sc, "\n42\n") == answers && prompt(sc)
		})
		s.keys("C-l")
		answers = 0
		s.waitFor("a clear screen", wait, func(sc string) bool { return !strings.Contains(sc, "\n42\n") && prompt(sc) })
	}
}
