package runtime

import (
	"fmt"

	"github.com/shmlang/shm/lang"
)

// Error is a run-time error at a position of the model. A domain error (a
// built-in function's argument outside its domain, an integer division by
// zero) rejects the proposal during sampling, as Stan's std::domain_error
// does; any other error is a bug in the model (an index out of range, a
// variable used before it has a value, a size mismatch) and stops the run.
type Error struct {
	File   string
	Pos    lang.Pos
	Msg    string
	Domain bool
	cause  error // wrapped: the context's error of an interruption
}

// Unwrap returns the error's cause (context.Canceled for an interruption).
func (e *Error) Unwrap() error { return e.cause }

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%s: %s", e.File, e.Pos, e.Msg)
}

// Reject reports whether the error rejects a proposal rather than stopping
// the run (see nuts.Target).
func (e *Error) Reject() bool { return e.Domain }

// RejectError is raised by reject(...): the current evaluation fails and,
// during sampling, the proposal is rejected.
type RejectError struct {
	File string
	Pos  lang.Pos
	Msg  string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("%s:%s: %s", e.File, e.Pos, e.Msg)
}

// Reject reports true: reject(...) rejects the proposal.
func (e *RejectError) Reject() bool { return true }

// errorf builds an Error at p.
func (ev *evaluator) errorf(p lang.Pos, format string, args ...any) error {
	return &Error{File: ev.file, Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// domainf builds a domain Error at p.
func (ev *evaluator) domainf(p lang.Pos, format string, args ...any) error {
	return &Error{File: ev.file, Pos: p, Msg: fmt.Sprintf(format, args...), Domain: true}
}
