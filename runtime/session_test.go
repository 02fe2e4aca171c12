package runtime

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// sessionModel and sessionData are the model and data of the session
// tests.
const (
	sessionModel = `functions { real twice(real x) { return 2 * x; } }
data { int N; vector[N] y; }
transformed data { real s = sum(y); }
parameters { real mu; }
model { }`
	sessionData = `{"y": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}`
)

func TestSession(t *testing.T) {
	bm := bindSource(t, sessionModel, setFromJSON(t, sessionData))
	var out strings.Builder
	s := NewSession(bm, Builtins(), 1, &out)
	steps := []struct{ line, want string }{
		{"s", "78"},
		{"N * 2", "24"},
		{"y", "vector[12] [1, 2, 3, 4, 5, …, 8, 9, 10, 11, 12]"},
		{"x = mean(y)", "x = 6.5"},
		{"x + 1", "7.5"},
		{"vector[3] v = [1, 2, 3]';", "v = vector[3] [1, 2, 3]"},
		{"v .* v", "vector[3] [1, 4, 9]"},
		{"print(\"x is \", x);", ""},
		{"resolution(y)", "1"},
		{"twice(s)", "156"},
	}
	for _, st := range steps {
		got, err := s.Eval(st.line)
		if err != nil {
			t.Fatalf("%q: %v", st.line, err)
		}
		if got != st.want {
			t.Errorf("%q: got %q, want %q", st.line, got, st.want)
		}
	}
	if out.String() != "x is 6.5\n" {
		t.Errorf("print output %q", out.String())
	}
	for _, bad := range []string{"nromal(1)", "mu + 1", "x = ", "y[20]"} {
		if _, err := s.Eval(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// The session survives errors.
	if got, err := s.Eval("x * 2"); err != nil || got != "13" {
		t.Errorf("after errors: %q %v", got, err)
	}
	// Without a model.
	s2 := NewSession(nil, Builtins(), 1, &out)
	if got, err := s2.Eval("exp(0) + 1"); err != nil || got != "2" {
		t.Errorf("no model: %q %v", got, err)
	}
}

// TestSessionInterrupt checks that EvalContext stops a line whose loop
// does not end once its context is done, with an "interrupted" error,
// and that the session goes on.
func TestSessionInterrupt(t *testing.T) {
	s := NewSession(nil, Builtins(), 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.EvalContext(ctx, "<line 1>", "real s = 0; while (1) { s += 1; }")
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("error %v, want an interruption", err)
	}
	if got, err := s.Eval("s > 0"); err != nil || got != "1" {
		t.Errorf("after the interruption: %q %v", got, err)
	}
}

// TestInterruptEveryIteration: a loop stops at its first iteration once
// the context is done, not after a batch of iterations (a loop whose
// iterations each allocate a large vector took 10 s to stop).
func TestInterruptEveryIteration(t *testing.T) {
	s := NewSession(nil, Builtins(), 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, line := range []string{
		"int n = 0; while (1) { n += 1; }",
		"int m = 0; for (i in 1:1000000) { m += 1; }",
	} {
		if _, err := s.EvalContext(ctx, "<line>", line); err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("%s: error %v, want an interruption", line, err)
		}
	}
	if got, err := s.Eval("n + m"); err != nil || got != "0" {
		t.Errorf("iterations run after the interruption: %q %v, want 0", got, err)
	}
}

// TestSessionArenaFull checks that a line whose values would overflow the
// tape's arena fails with an error naming the limit, expression and
// statement lines alike, and that the session goes on. The limit is
// lowered here; a REPL meets it on a machine of more than 32 GiB, whose
// half is more than the arena's 2^31 − 1 values.
func TestSessionArenaFull(t *testing.T) {
	s := NewSession(nil, Builtins(), 1, nil)
	limitValues(s, 1000)
	for _, line := range []string{"rep_vector(0, 100000)", "vector[100000] v = rep_vector(1, 100000);",
		"real z = 0; for (i in 1:100000) { z += i; }"} {
		_, err := s.Eval(line)
		if err == nil || !strings.Contains(err.Error(), "one evaluation may hold") {
			t.Errorf("%q: error %v, want the arena's limit", line, err)
		}
	}
	if got, err := s.Eval("sum(rep_vector(1, 3))"); err != nil || got != "3" {
		t.Errorf("after the errors: %q %v", got, err)
	}
}

// TestSessionRenew checks that a line that failed in a tape operation
// leaves no error behind for the lines after it, and that a line that
// leaves many intermediate values on the tape has them dropped, with the
// session's variables kept.
func TestSessionRenew(t *testing.T) {
	s := NewSession(nil, Builtins(), 1, nil)
	steps := []struct{ line, want, err string }{
		{"vector[3] a = [1, 2, 3]';", "a = vector[3] [1, 2, 3]", ""},
		{"rep_vector(1, 3) + rep_vector(1, 2)", "", "operands have shapes vector[3] and vector[2]"},
		{"1 + 1", "2", ""},
		{"real z = 0; for (i in 1:1500000) { z += i; }", "z = 0", ""},
		{"z", "1.125e+12", ""},
		{"a[2] = 5;", "", ""},
		{"a[4]", "", "index 4 out of range"},
		{"sum(a)", "9", ""},
	}
	for _, st := range steps {
		got, err := s.Eval(st.line)
		if st.err != "" {
			if err == nil || !strings.Contains(err.Error(), st.err) {
				t.Errorf("%q: error %v, want %q", st.line, err, st.err)
			}
			continue
		}
		if err != nil || got != st.want {
			t.Errorf("%q: %q %v, want %q", st.line, got, err, st.want)
		}
		if n := s.ev.tape().Size(); n > 1<<21 {
			t.Errorf("%q: the tape holds %d values", st.line, n)
		}
	}
}

// FuzzSession checks that no lines make a REPL session panic, and that
// after any lines (errors, interruptions, lines that fill the tape) the
// session still evaluates an expression. Each line gets half a second,
// and the tape 2^22 values.
func FuzzSession(f *testing.F) {
	bm := bindSource(f, sessionModel, setFromJSON(f, sessionData))
	for _, script := range []string{
		"s\nN * 2\ny\nx = mean(y)\nx + 1\nvector[3] v = [1, 2, 3]';\nv .* v\nprint(\"x is \", x);\nresolution(y)\ntwice(s)",
		"nromal(1)\nmu + 1\nx = \ny[20]\nx * 2",
		"rep_vector(1, 3) + rep_vector(1, 2)\n1 + 1\nvector[3] a = [1, 2, 3]';\na[2] = 5;\na[4]\nsum(a)",
		"real z = 0; while (1) { z += 1; }\nz > 0\nfor (i in 1:3) { print(i); }\nreal w = normal_rng(0, 1);\nw",
		"matrix[2, 2] m = [[1, 2], [3, 4]];\nm * m'\ninverse(m)\ncrn(4, normal_rng(0, 1))\nsort_asc(y)[1:3]",
	} {
		f.Add(script)
	}
	f.Fuzz(func(t *testing.T, script string) {
		s := NewSession(bm, Builtins(), 1, io.Discard)
		limitValues(s, 1<<22)
		lines := strings.Split(script, "\n")
		for _, line := range lines[:min(len(lines), 16)] {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			s.EvalContext(ctx, "<fuzz>", line)
			cancel()
		}
		if got, err := s.Eval("1 + 1"); err != nil || got != "2" {
			t.Fatalf("1 + 1 after the lines: %q %v", got, err)
		}
	})
}

// TestSessionRenewFullTape checks that a line that fills the tape while a
// variable has elements assigned one by one (its cells not yet packed)
// fails with an error and keeps that variable: the renewal packs it onto
// the new tape, as the old one has no room left.
func TestSessionRenewFullTape(t *testing.T) {
	s := NewSession(nil, Builtins(), 1, nil)
	limitValues(s, 100000)
	for _, line := range []string{"vector[2000] v = rep_vector(0, 2000);", "v[1] = 1;"} {
		if _, err := s.Eval(line); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	if _, err := s.Eval("real z = 0; for (i in 1:200000) { z += i; }"); err == nil || !strings.HasPrefix(err.Error(), "<line 3>:") {
		t.Fatalf("a line that fills the tape: error %v, want one at <line 3>", err)
	}
	if got, err := s.Eval("sum(v)"); err != nil || got != "1" {
		t.Errorf("sum(v) after the full tape: %q %v", got, err)
	}
}

// TestSessionCRNContext checks that the replicates of a crn call evaluated
// in parallel take each line's context: a line after one whose context
// ended (as the REPL's does when the line is done) is not interrupted.
func TestSessionCRNContext(t *testing.T) {
	bm := bindSource(t, `functions {
  real loopsum(real x) {
    real s = 0;
    for (i in 1:2000) {
      s += x;
    }
    return s;
  }
}
model { }`, nil)
	s := NewSession(bm, Builtins(), 1, nil)
	s.Workers = 2
	for k := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := s.EvalContext(ctx, "<line>", "crn(4, loopsum(normal_rng(0, 1)))"); err != nil {
			t.Errorf("line %d: %v", k+1, err)
		}
		cancel()
	}
}

// limitValues lowers the values one line of s may hold to n, the memory
// guard of its loops and its tape's arena alike (renew keeps it).
func limitValues(s *Session, n int64) {
	s.ev.maxValues = n
	s.ev.tape().SetLimit(n)
}
