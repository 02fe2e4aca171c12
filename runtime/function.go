package runtime

import (
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// maxCallDepth bounds the nesting of user-defined function calls, so
// that runaway recursion stops with an error instead of exhausting the
// stack.
const maxCallDepth = 10000

// userCall calls a user-defined function: its arguments are evaluated in
// the caller's frame, then its body runs in a frame of its own (invoke).
func (ev *evaluator) userCall(e *ir.UserCall) (stdlib.Value, error) {
	base := len(ev.args)
	defer func() { ev.args = ev.args[:base] }()
	for _, a := range e.Args {
		v, err := ev.expr(a)
		if err != nil {
			return stdlib.Value{}, err
		}
		ev.args = append(ev.args, v)
	}
	return ev.invoke(e.Func, e.Position(), ev.args[base:])
}

// invoke runs the body of fn with the given arguments in a frame of its
// own (the arguments in the first slots), which is cleared and reused by
// the next call at the same depth. at is the position of the call.
func (ev *evaluator) invoke(fn *ir.Function, at lang.Pos, args []stdlib.Value) (stdlib.Value, error) {
	if ev.depth >= maxCallDepth {
		return stdlib.Value{}, ev.errorf(at, "%s: calls nested more than %d deep (runaway recursion?)", fn.Name, maxCallDepth)
	}
	for len(ev.frames) <= ev.depth {
		ev.frames = append(ev.frames, nil)
	}
	fr := ev.frames[ev.depth]
	if cap(fr) < len(fn.Vars) {
		fr = make([]slot, len(fn.Vars))
	}
	fr = fr[:len(fn.Vars)]
	clear(fr)
	ev.frames[ev.depth] = fr
	t := ev.tape()
	for i, v := range args {
		v = ev.convert(v, fn.Params[i].Type)
		fr[i] = slot{v: v, dims: fullDims(t, v), set: true}
	}
	caller := ev.frame
	ev.frame = fr
	ev.depth++
	c, err := ev.execAll(fn.Body)
	ev.depth--
	ev.frame = caller
	ret := ev.ret
	ev.ret = stdlib.Value{}
	clear(fr) // drop the references to this call's values
	if err != nil {
		return stdlib.Value{}, err
	}
	if fn.Void() {
		return stdlib.Value{Type: lang.VoidType}, nil
	}
	if c != ctlReturn {
		// The checker requires a return on every path; a loop whose body
		// returns can still end.
		return stdlib.Value{}, ev.errorf(fn.Pos, "%s ended without returning a value", fn.Name)
	}
	return ev.convert(ret, fn.Return), nil
}

// execReturn executes return value;: the value waits in ev.ret for
// userCall.
func (ev *evaluator) execReturn(s *ir.Return) (control, error) {
	if s.Value != nil {
		v, err := ev.expr(s.Value)
		if err != nil {
			return ctlNext, err
		}
		ev.ret = v
	}
	return ctlReturn, nil
}
