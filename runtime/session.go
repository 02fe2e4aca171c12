package runtime

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/parser"
	"github.com/shmlang/shm/stdlib"
)

// Session evaluates expressions and statements one line at a time with a
// bound model's data and transformed data in scope, for the REPL.
type Session struct {
	// Workers is the number of replicates of a crn(K, ...) call with a
	// scalar body evaluated at once (0 or 1: one after the other); the
	// values do not depend on it.
	Workers int

	parse *parser.Parser
	check *ir.Session
	ev    *evaluator
	line  int
}

// NewSession starts a session over m's data (m may be nil). Random draws
// use a stream seeded with seed; print output goes to out.
func NewSession(m *Model, impls stdlib.Impls, seed uint64, out io.Writer) *Session {
	tape := autodiff.NewTape()
	var irm *ir.Model
	file := "<session>"
	if m != nil {
		irm = m.IR
	}
	s := &Session{check: ir.NewSession(irm)}
	ev := newEvaluator(file, irm, impls, tape, out)
	ev.ctx.RNG = rand.New(rand.NewPCG(seed, 0x5e55))
	ev.crn.runSeed = seed
	if m != nil {
		for i, sl := range m.frame {
			if sl.set {
				ev.frame[i] = slot{v: copyValue(tape, m.tape, sl.v), dims: sl.dims, set: true}
			}
		}
	}
	s.ev = ev
	return s
}

// Names returns the variables in scope.
func (s *Session) Names() []string { return s.check.Names() }

// Eval runs one line: statements ("x = mean(y);", "print(x);") or a bare
// expression, whose value it returns formatted compactly (6 significant
// digits). A line that defines a variable returns "name = value". Error
// positions name the line "<line K>", K counting the calls.
func (s *Session) Eval(line string) (string, error) {
	s.line++
	return s.EvalAt(fmt.Sprintf("<line %d>", s.line), line)
}

// EvalContext is EvalAt, stopped when ctx is done: the line's loops
// check ctx, and the line then fails with an "interrupted" error (what it
// assigned before stays assigned).
func (s *Session) EvalContext(ctx context.Context, file, line string) (string, error) {
	s.ev.setContext(ctx)
	defer s.ev.setContext(nil)
	return s.EvalAt(file, line)
}

// EvalAt is Eval with the name error positions use for the line, such as
// "session.txt:12" for line 12 of a script.
func (s *Session) EvalAt(file, line string) (string, error) {
	if s.parse == nil {
		p, err := parser.New()
		if err != nil {
			return "", err
		}
		s.parse = p
	}
	s.ev.crn.workers = s.Workers
	src := lang.NewSource(file, line)
	trimmed := strings.TrimSpace(line)
	if trimmed == "" {
		return "", nil
	}
	if e, errs := s.parse.ParseExpr(file, trimmed); len(errs) == 0 {
		x, errs := s.check.CheckExpr(e, src)
		if len(errs) > 0 {
			return "", errs
		}
		s.grow()
		v, err := s.ev.expr(x)
		if err != nil {
			return "", err
		}
		if err := s.ev.tape().Err(); err != nil {
			return "", err
		}
		return s.ev.formatCompact(v), nil
	}
	if !strings.HasSuffix(trimmed, ";") && !strings.HasSuffix(trimmed, "}") {
		trimmed += ";"
	}
	stmts, errs := s.parse.ParseStmts(file, trimmed)
	if len(errs) > 0 {
		return "", errs
	}
	checked, errs := s.check.CheckStmts(stmts, src)
	if len(errs) > 0 {
		return "", errs
	}
	s.grow()
	var out []string
	for _, st := range checked {
		if _, err := s.ev.exec(st); err != nil {
			return strings.Join(out, "\n"), err
		}
		if d, ok := st.(*ir.DeclStmt); ok && d.Decl.Init != nil {
			v, err := s.ev.read(d.Decl.Var, d.Decl.Pos)
			if err == nil {
				out = append(out, d.Decl.Var.Name+" = "+s.ev.formatCompact(v))
			}
		}
	}
	return strings.Join(out, "\n"), s.ev.tape().Err()
}

// grow extends the frame to the session's variables.
func (s *Session) grow() {
	if n := len(s.check.Vars()); n > len(s.ev.frame) {
		s.ev.frame = append(s.ev.frame, make([]slot, n-len(s.ev.frame))...)
	}
}

// formatCompact renders a value for the REPL: scalars as numbers, long
// containers as head … tail with their shape.
func (ev *evaluator) formatCompact(v stdlib.Value) string {
	switch {
	case v.Type == lang.RealType:
		return fmt.Sprintf("%.6g", ev.tape().Scalar(v.AD))
	case v.Type.Dims == 0 && v.Type.Base.IsScalar() || v.Type.Base == lang.String:
		return ev.format(v)
	}
	t := ev.tape()
	vals := ev.flatValues(v)
	dims := fullDims(t, v)
	shape := v.Type.Base.String()
	if v.Type.Dims > 0 {
		shape = "array " + shape
	}
	shape += dimsText(dims)
	const head = 5
	var parts []string
	for i, x := range vals {
		if len(vals) > 2*head && i == head {
			parts = append(parts, "…")
		}
		if len(vals) <= 2*head || i < head || i >= len(vals)-head {
			parts = append(parts, fmt.Sprintf("%.6g", x))
		}
	}
	return shape + " [" + strings.Join(parts, ", ") + "]"
}
