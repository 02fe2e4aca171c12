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

// TestReplTerminal drives the real program in a terminal under tmux:
// completion, history recall, and Ctrl-C during :sample and during a
// line that does not end.
func TestReplTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build shm")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "shm")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	model := writeFile(t, dir, "nm.shm", normalModel)
	dataFile := writeFile(t, dir, "nm.json", normalData)
	home := filepath.Join(dir, "home")
	cache := filepath.Join(dir, "cache")
	out := filepath.Join(dir, "out")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + cache, "TERM=xterm", "NO_COLOR=1", "TMUX_TMPDIR=" + dir}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("shm-repl-test-%d", os.Getpid()), env: env}
	s.tmux("new-session", "-d", "-s", "repl", "-x", "150", "-y", "40", bin, "repl", model, dataFile)
	t.Cleanup(func() {
		cmd := exec.Command("tmux", "-L", s.socket, "kill-server")
		cmd.Env = env
		cmd.Run()
	})
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
