package ir

import (
	"fmt"
	"strings"

	"github.com/shmlang/shm/lang"
)

// ODE is a call of an ODE solver: the solution of dy/dt = F(t, y, args...)
// from y(T0) = Y0 at the times Ts.
type ODE struct {
	info
	// Solver is "rk45" (explicit, adaptive Dormand–Prince 5(4)) or
	// "stiff" (ode_bdf, ode_adams: an adaptive L-stable Rosenbrock-W
	// method).
	Solver string
	Name   string // the built-in's name as written
	F      *Function
	Y0     Expr
	T0     Expr
	Ts     Expr
	// RelTol, AbsTol and MaxSteps are nil for the defaults.
	RelTol, AbsTol, MaxSteps Expr
	Args                     []Expr
	// Arrays is set for the integrate_ode_* spelling: y0, the state
	// passed to F and the rows of the result are array[] real, and the
	// result is array[,] real (else vector and array[] vector).
	Arrays bool
}

// ODE default tolerances and step budget, Stan's.
const (
	ODEDefaultRelTol   = 1e-6
	ODEDefaultAbsTol   = 1e-6
	ODEDefaultMaxSteps = 1000000
)

// odeSolver describes one spelling of an ODE solver.
type odeSolver struct {
	solver string
	tol    bool // takes rtol, atol, max_num_steps after ts
	arrays bool // integrate_ode_*: the old fixed signature
}

var odeSolvers = map[string]odeSolver{
	"ode_rk45": {solver: "rk45"}, "ode_rk45_tol": {solver: "rk45", tol: true},
	"ode_ckrk": {solver: "rk45"}, "ode_ckrk_tol": {solver: "rk45", tol: true},
	"ode_bdf": {solver: "stiff"}, "ode_bdf_tol": {solver: "stiff", tol: true},
	"ode_adams": {solver: "stiff"}, "ode_adams_tol": {solver: "stiff", tol: true},
	"integrate_ode_rk45":  {solver: "rk45", arrays: true},
	"integrate_ode_bdf":   {solver: "stiff", arrays: true},
	"integrate_ode_adams": {solver: "stiff", arrays: true},
}

// IsODESolver reports whether name is an ODE solver (for listings).
func IsODESolver(name string) bool { _, ok := odeSolvers[name]; return ok }

// odeCall checks a call of an ODE solver. Its first argument names a
// user-defined function: F(real t, vector y, args...) returning vector,
// or for integrate_ode_* F(real t, array[] real y, array[] real theta,
// data array[] real x_r, data array[] int x_i) returning array[] real.
func (c *checker) odeCall(e *lang.Call, sv odeSolver) Expr {
	out := &ODE{info: info{pos: e.Pos, typ: lang.BadType}, Solver: sv.solver, Name: e.Name, Arrays: sv.arrays}
	if len(e.Named) > 0 || e.Conditional {
		c.errorf(e.Pos, "%s takes its arguments separated by commas, without names", e.Name)
	}
	fixed := 4 // f, y0, t0, ts
	if sv.tol {
		fixed = 7
	}
	if sv.arrays {
		fixed = 7 // f, y0, t0, ts, theta, x_r, x_i
		if len(e.Args) == 10 {
			fixed = 10 // with rtol, atol, max_num_steps
		}
	}
	if len(e.Args) < fixed || (sv.arrays && len(e.Args) != fixed) {
		want := fmt.Sprintf("at least %d", fixed)
		if sv.arrays {
			want = "7 or 10"
		}
		c.errorf(e.Pos, "%s takes %s arguments (%s), got %d", e.Name, want, odeUsage(e.Name, sv), len(e.Args))
		for _, a := range e.Args {
			if _, ok := a.(*lang.Ident); !ok {
				c.expr(a)
			}
		}
		return out
	}
	id, ok := e.Args[0].(*lang.Ident)
	if !ok || len(c.funcs[id.Name]) == 0 {
		c.errorf(e.Args[0].Position(), "the first argument of %s must name a user-defined function (the right-hand side of the ODE)", e.Name)
		for _, a := range e.Args[1:] {
			c.expr(a)
		}
		return out
	}
	args := make([]Expr, len(e.Args)-1)
	for i, a := range e.Args[1:] {
		args[i] = c.expr(a)
	}
	for _, a := range args {
		if a.Type().IsBad() {
			return out
		}
	}
	out.Y0, out.T0, out.Ts = args[0], args[1], args[2]
	rest := args[3:]
	state := lang.VectorType
	if sv.arrays {
		state = lang.ArrayOf(lang.RealType, 1)
	}
	c.odeArg(e, "the initial state", out.Y0, state, false)
	// The times may be function arguments without the data qualifier;
	// the runtime requires their values not to depend on parameters.
	c.odeArg(e, "the initial time", out.T0, lang.RealType, false)
	c.odeArg(e, "the output times", out.Ts, lang.ArrayOf(lang.RealType, 1), false)
	if sv.tol || (sv.arrays && fixed == 10) {
		var tol []Expr
		if sv.arrays {
			tol, rest = rest[3:], rest[:3]
		} else {
			tol, rest = rest[:3], rest[3:]
		}
		out.RelTol, out.AbsTol, out.MaxSteps = tol[0], tol[1], tol[2]
		c.odeArg(e, "the relative tolerance", out.RelTol, lang.RealType, true)
		c.odeArg(e, "the absolute tolerance", out.AbsTol, lang.RealType, true)
		steps := lang.IntType
		if sv.arrays {
			steps = lang.RealType // the old spelling took a real (5e2)
		}
		c.odeArg(e, "the maximum number of steps", out.MaxSteps, steps, true)
	}
	out.Args = rest
	if sv.arrays {
		c.odeArg(e, "theta", rest[0], lang.ArrayOf(lang.RealType, 1), false)
		c.odeArg(e, "x_r", rest[1], lang.ArrayOf(lang.RealType, 1), true)
		c.odeArg(e, "x_i", rest[2], lang.ArrayOf(lang.IntType, 1), true)
	}
	// The right-hand side: F(real t, state y, args...) -> state.
	want := append([]lang.Type{lang.RealType, state}, argTypes(rest)...)
	for _, fn := range c.funcs[id.Name] {
		if len(fn.Params) != len(want) {
			continue
		}
		match := true
		for i, p := range fn.Params {
			if !p.Type.AssignableFrom(want[i]) {
				match = false
			}
		}
		if match {
			out.F = fn
			break
		}
	}
	if out.F == nil {
		names := make([]string, len(want))
		for i, t := range want {
			names[i] = t.String()
		}
		c.errorf(e.Args[0].Position(), "%s has no definition %s %s(%s) for %s", id.Name, state, id.Name, strings.Join(names, ", "), e.Name)
		return out
	}
	switch sfx := out.F.suffix(); {
	case out.F.Return != state:
		c.errorf(e.Args[0].Position(), "%s returns %s; the right-hand side of an ODE returns the derivative of the state, %s", id.Name, out.F.Return, state)
		return out
	case sfx == "_rng" || sfx == "_lp":
		c.errorf(e.Args[0].Position(), "the right-hand side of an ODE cannot be an %s function", sfx)
		return out
	}
	first := len(e.Args) - len(rest) + 1 // the first trailing argument's number
	if sv.arrays {
		first = 5 // theta, x_r, x_i come before the tolerances
	}
	for i, a := range rest {
		if p := out.F.Params[2+i]; p.Data && !a.IsData() {
			c.errorf(a.Position(), "argument %d of %s (%s of %s) must be data, but it depends on parameters", first+i, e.Name, p.Name, id.Name)
		}
	}
	out.typ = lang.ArrayOf(state, 1)
	if sv.arrays {
		out.typ = lang.ArrayOf(lang.RealType, 2)
	}
	out.data = allData(args)
	return out
}

// odeArg checks one argument of an ODE solver.
func (c *checker) odeArg(e *lang.Call, what string, x Expr, want lang.Type, data bool) {
	if !want.AssignableFrom(x.Type()) {
		c.errorf(x.Position(), "%s of %s must be %s, got %s", what, e.Name, want, x.Type())
	}
	if data && !x.IsData() {
		c.errorf(x.Position(), "%s of %s must be data, but it depends on parameters", what, e.Name)
	}
}

func odeUsage(name string, sv odeSolver) string {
	switch {
	case sv.arrays:
		return name + "(f, y0, t0, ts, theta, x_r, x_i[, rtol, atol, max_num_steps])"
	case sv.tol:
		return name + "(f, y0, t0, ts, rtol, atol, max_num_steps, ...)"
	}
	return name + "(f, y0, t0, ts, ...)"
}
