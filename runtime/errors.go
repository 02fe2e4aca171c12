package runtime

import (
	"fmt"

	"github.com/shmlang/shm/lang"
)

// Error is a run-time error at a position of the model.
type Error struct {
	File string
	Pos  lang.Pos
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%s: %s", e.File, e.Pos, e.Msg)
}

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

// errorf builds an Error at p.
func (ev *evaluator) errorf(p lang.Pos, format string, args ...any) error {
	return &Error{File: ev.file, Pos: p, Msg: fmt.Sprintf(format, args...)}
}
