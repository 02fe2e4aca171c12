package runtime

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSession(t *testing.T) {
	bm := bindSource(t, `functions { real twice(real x) { return 2 * x; } }
data { int N; vector[N] y; }
transformed data { real s = sum(y); }
parameters { real mu; }
model { }`, setFromJSON(t, `{"y": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}`))
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
