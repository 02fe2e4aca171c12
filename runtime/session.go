package runtime

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"unicode"

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
	// live is the size of the tape after its last renewal (renew).
	live int
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
	tape.SetLimit(ev.maxValues)
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
	s.live = tape.Size()
	return s
}

// renew moves the session's variables onto a fresh tape. A session never
// resets its tape, which keeps every value each line records and, after an
// operation that failed, its error, which every later line would report:
// EvalAt renews the tape after a line that failed, and after one that left
// it more than twice as large as the variables (and 2^20 values more); a
// line that failed before it recorded anything leaves the tape as it was.
func (s *Session) renew() {
	old := s.ev.tape()
	t := autodiff.NewTape()
	t.SetLimit(s.ev.maxValues)
	for i := range s.ev.frame {
		sl := &s.ev.frame[i]
		if !sl.set {
			continue
		}
		if sl.dirty {
			// Packed straight onto the new tape: the old one may be full.
			vals := make([]float64, len(sl.cells))
			for k, c := range sl.cells {
				vals[k] = old.Scalar(c)
			}
			sl.v.AD = t.NewConst(sl.packedShape(), vals)
			sl.dirty = false
		} else {
			sl.v = copyValue(t, old, sl.v)
		}
		sl.cells = nil
	}
	s.ev.ctx.Tape = t
	s.ev.cellMem.reset()
	s.live = t.Size()
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
	prev := s.ev.ctx0
	s.ev.setContext(ctx)
	defer s.ev.setContext(prev)
	return s.EvalAt(file, line)
}

// EvalAt is Eval with the name error positions use for the line, such as
// "session.txt:12" for line 12 of a script.
func (s *Session) EvalAt(file, line string) (out string, err error) {
	// Runtime errors name the line as the checker's do.
	prevFile := s.ev.file
	s.ev.file = file
	defer func() { s.ev.file = prevFile }()
	start := s.ev.tape().Size()
	defer func() {
		if t := s.ev.tape(); t.Err() != nil || err != nil && t.Size() > start || t.Size() > 2*s.live+1<<20 {
			s.renew()
		}
	}()
	// A line whose values would overflow the tape's arena fails at its
	// statement.
	var at lang.Pos
	defer s.ev.recoverArena(&at, &err)
	if s.parse == nil {
		p, err := parser.New()
		if err != nil {
			return "", err
		}
		s.parse = p
	}
	s.ev.crn.workers = s.Workers
	src := lang.NewSource(file, line)
	if strings.TrimSpace(line) == "" {
		return "", nil
	}
	// Parse the line as typed, indentation included, so that the columns
	// of errors are those of line (the checker's errors show src).
	trimmed := strings.TrimRightFunc(line, unicode.IsSpace)
	if e, errs := s.parse.ParseExpr(file, trimmed); len(errs) == 0 {
		x, errs := s.check.CheckExpr(e, src)
		if len(errs) > 0 {
			return "", errs
		}
		at = x.Position()
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
	var lines []string
	for _, st := range checked {
		at = st.Position()
		if _, err := s.ev.exec(st); err != nil {
			return strings.Join(lines, "\n"), err
		}
		if d, ok := st.(*ir.DeclStmt); ok && d.Decl.Init != nil {
			v, err := s.ev.read(d.Decl.Var, d.Decl.Pos)
			if err == nil {
				lines = append(lines, d.Decl.Var.Name+" = "+s.ev.formatCompact(v))
			}
		}
	}
	return strings.Join(lines, "\n"), s.ev.tape().Err()
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
