package runtime

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// ODE solvers. The solution is differentiated by recording the accepted
// steps of the solver on the tape ("discretize, then differentiate"):
// every stage evaluates the user's right-hand side on the tape, and the
// step sizes, chosen from the values by the error control, are constants.
// The gradient is then the exact gradient of the computed solution, the
// function the sampler actually explores, whose error the tolerances
// control. Rejected steps and the finite-difference Jacobians of the stiff
// solver are rewound from the tape once their values are read.

// odeProblem is one solve: the right-hand side and its arguments.
type odeProblem struct {
	ev       *evaluator
	e        *ir.ODE
	args     []stdlib.Value
	n        int
	dims     []int // {n}: the state's sizes as an array (read only)
	rtol     float64
	atol     float64
	maxSteps int
}

// rhs evaluates F(t, y, args...) on the tape.
func (p *odeProblem) rhs(t float64, y autodiff.Value) (autodiff.Value, error) {
	ev := p.ev
	tp := ev.tape()
	state := stdlib.ADValue(y)
	if p.e.Arrays {
		state = stdlib.Value{Type: lang.ArrayOf(lang.RealType, 1), AD: y, Dims: p.dims}
	}
	base := len(ev.args)
	ev.args = append(ev.args, stdlib.RealValue(tp.Const(t)), state)
	ev.args = append(ev.args, p.args...)
	v, err := ev.invoke(p.e.F, p.e.Position(), ev.args[base:])
	ev.args = ev.args[:base]
	if err != nil {
		return autodiff.Value{}, err
	}
	dy := ev.toAD(v)
	if dy.Len() != p.n {
		return autodiff.Value{}, ev.errorf(p.e.Position(), "%s: %s returned %d values for a state of %d", p.e.Name, p.e.F.Name, dy.Len(), p.n)
	}
	for i, x := range tp.Val(dy) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return autodiff.Value{}, ev.domainf(p.e.Position(), "%s: the right-hand side %s is %g in component %d at t = %g", p.e.Name, p.e.F.Name, x, i+1, t)
		}
	}
	return tp.Reshape(dy, autodiff.VectorShape(p.n)), nil
}

// ode evaluates an ODE solver call.
func (ev *evaluator) ode(e *ir.ODE) (stdlib.Value, error) {
	tp := ev.tape()
	y0v, err := ev.expr(e.Y0)
	if err != nil {
		return stdlib.Value{}, err
	}
	y0 := tp.Reshape(ev.toAD(y0v), autodiff.VectorShape(ev.toAD(y0v).Len()))
	t0v, err := ev.expr(e.T0)
	if err != nil {
		return stdlib.Value{}, err
	}
	t0 := ev.scalar(t0v)
	tsv, err := ev.expr(e.Ts)
	if err != nil {
		return stdlib.Value{}, err
	}
	ts := tp.Val(ev.toAD(tsv))
	p := &odeProblem{ev: ev, e: e, n: y0.Len(), dims: []int{y0.Len()}, rtol: ir.ODEDefaultRelTol, atol: ir.ODEDefaultAbsTol, maxSteps: ir.ODEDefaultMaxSteps}
	for _, tol := range []struct {
		x   ir.Expr
		dst *float64
	}{{e.RelTol, &p.rtol}, {e.AbsTol, &p.atol}} {
		if tol.x == nil {
			continue
		}
		v, err := ev.expr(tol.x)
		if err != nil {
			return stdlib.Value{}, err
		}
		if *tol.dst = ev.scalar(v); !(*tol.dst > 0) || math.IsInf(*tol.dst, 0) {
			return stdlib.Value{}, ev.errorf(tol.x.Position(), "%s: tolerances must be positive and finite, got %g", e.Name, *tol.dst)
		}
	}
	if e.MaxSteps != nil {
		v, err := ev.expr(e.MaxSteps)
		if err != nil {
			return stdlib.Value{}, err
		}
		n := ev.scalar(v)
		if !(n >= 1) || n != math.Trunc(n) || n > math.MaxInt32 {
			return stdlib.Value{}, ev.errorf(e.MaxSteps.Position(), "%s: the maximum number of steps must be a positive integer, got %g", e.Name, n)
		}
		p.maxSteps = int(n)
	}
	if (t0v.Type == lang.RealType && !t0v.AD.IsConst()) || !ev.toAD(tsv).IsConst() {
		return stdlib.Value{}, ev.errorf(e.Ts.Position(), "%s: initial and output times that depend on parameters are not supported", e.Name)
	}
	if err := checkODETimes(t0, ts); err != nil {
		return stdlib.Value{}, ev.errorf(e.Ts.Position(), "%s: %v", e.Name, err)
	}
	// The solution (len(ts) states of n values, each an element of an
	// array of vectors unless the result is an array of reals) is
	// checked before solving.
	resultType, resultDims := lang.ArrayOf(lang.VectorType, 1), []int{len(ts), p.n}
	if e.Arrays {
		resultType = lang.ArrayOf(lang.RealType, 2)
	}
	if words, over := stdlib.ExceedsFootprint(resultType, resultDims); over {
		return stdlib.Value{}, ev.errorf(e.Position(), "%s: the solution at %d times of %d states needs %s, %s; ask for fewer output times",
			e.Name, len(ts), p.n, stdlib.FootprintText(resultType, resultDims, words), sysmem.Beyond())
	}
	for i, x := range tp.Val(y0) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return stdlib.Value{}, ev.domainf(e.Y0.Position(), "%s: the initial state is %g in component %d", e.Name, x, i+1)
		}
	}
	for _, a := range e.Args {
		v, err := ev.expr(a)
		if err != nil {
			return stdlib.Value{}, err
		}
		p.args = append(p.args, v)
	}
	var ys []autodiff.Value
	if e.Solver == "rk45" {
		ys, err = p.solveRK45(t0, y0, ts)
	} else {
		ys, err = p.solveStiff(t0, y0, ts)
	}
	if err != nil {
		return stdlib.Value{}, err
	}
	if e.Arrays {
		return stdlib.Value{Type: e.Type(), AD: tp.Concat(autodiff.VectorShape(len(ts)*p.n), ys...), Dims: []int{len(ts), p.n}}, nil
	}
	out := stdlib.Value{Type: e.Type(), Dims: []int{len(ts)}, Elems: make([]stdlib.Value, len(ys))}
	for i, y := range ys {
		out.Elems[i] = stdlib.ADValue(y)
	}
	return out, nil
}

// checkODETimes checks that the output times are finite, increasing and
// after t0.
func checkODETimes(t0 float64, ts []float64) error {
	if math.IsNaN(t0) || math.IsInf(t0, 0) {
		return fmt.Errorf("the initial time is %g", t0)
	}
	prev := t0
	for i, t := range ts {
		switch {
		case math.IsNaN(t) || math.IsInf(t, 0):
			return fmt.Errorf("output time %d is %g", i+1, t)
		case i == 0 && !(t > t0):
			return fmt.Errorf("the output times must be after the initial time %g; the first is %g", t0, t)
		case t < prev:
			return fmt.Errorf("the output times must be increasing; time %d (%g) is before time %d (%g)", i+1, t, i, prev)
		}
		prev = t
	}
	return nil
}

// nextStep returns the next step from t toward tOut: h, or what is left
// when h would reach or nearly reach tOut (last). It counts the step
// against max_num_steps between output times and checks for interruption
// and memory (checkStep).
func (p *odeProblem) nextStep(t, tOut, h float64, steps *int) (step float64, last bool, err error) {
	if err := p.checkStep(t); err != nil {
		return 0, false, err
	}
	if *steps++; *steps > p.maxSteps {
		return 0, false, p.ev.domainf(p.e.Position(), "%s: more than %d steps between t = %g and t = %g (max_num_steps)", p.e.Name, p.maxSteps, t, tOut)
	}
	if t+h >= tOut || tOut-(t+h) < 1e-12*math.Abs(tOut) {
		return tOut - t, true, nil
	}
	return h, false, nil
}

// retry returns h, the step size after a rejected step at t, or a domain
// error when it has underflowed.
func (p *odeProblem) retry(t, h float64) (float64, error) {
	if h < 1e-14*math.Max(1, math.Abs(t)) {
		return h, p.ev.domainf(p.e.Position(), "%s: the step size fell below %g at t = %g", p.e.Name, h, t)
	}
	return h, nil
}

// accepted returns the time and the next step size after an accepted
// step from t, the error control's factor fac: a step shortened to land
// on tOut does not shrink the step size.
func accepted(t, tOut, h, step, fac float64, last bool) (float64, float64) {
	if last {
		return tOut, math.Max(h, step*fac)
	}
	return t + step, step * fac
}

// checkStep is called before every step: it stops on Ctrl-C or SIGTERM,
// and makes a solution whose recorded steps fill half of the evaluation's
// memory a domain error (the proposal is rejected, as Stan rejects one
// that exceeds max_num_steps) before the tape's limit would stop the run.
func (p *odeProblem) checkStep(t float64) error {
	ev := p.ev
	if n := int64(ev.tape().Size()); ev.maxValues > 0 && n > ev.maxValues/2 {
		return ev.domainf(p.e.Position(), "%s: the solution's steps up to t = %g fill %s, half of what one evaluation may hold; lower max_num_steps or the tolerances' demands",
			p.e.Name, t, sysmem.Bytes(8*float64(n)))
	}
	return ev.checkInterrupt(p.e.Position())
}

// errNorm is the weighted root-mean-square norm of an error estimate
// (Hairer, Nørsett and Wanner): each component relative to
// atol + rtol·max(|y|, |y_new|).
func (p *odeProblem) errNorm(err, y, yNew []float64) float64 {
	s := 0.0
	for i, e := range err {
		w := p.atol + p.rtol*math.Max(math.Abs(y[i]), math.Abs(yNew[i]))
		s += (e / w) * (e / w)
	}
	return math.Sqrt(s / float64(len(err)))
}

// initialStep chooses the first step size from the scale of y0 and of
// its derivative (Hairer, Nørsett and Wanner, Solving ODEs I, II.4), for a
// method of the given order; the probe evaluation is rewound.
func (p *odeProblem) initialStep(t0 float64, y0, f0 autodiff.Value, span float64, order int) (float64, error) {
	tp := p.ev.tape()
	y, f := tp.Val(y0), tp.Val(f0)
	zero := make([]float64, p.n)
	d0, d1 := p.errNorm(y, y, zero), p.errNorm(f, y, zero)
	h0 := 1e-6
	if d0 >= 1e-5 && d1 >= 1e-5 {
		h0 = 0.01 * d0 / d1
	}
	h0 = math.Min(h0, span)
	m := tp.Mark()
	y1 := tp.Add(y0, tp.Mul(tp.Const(h0), f0))
	f1, err := p.rhs(t0+h0, y1)
	if err != nil {
		return 0, err
	}
	diff := make([]float64, p.n)
	for i, x := range tp.Val(f1) {
		diff[i] = x - f[i]
	}
	d2 := p.errNorm(diff, y, zero) / h0
	tp.Rewind(m)
	h1 := math.Max(1e-6, h0*1e-3)
	if mx := math.Max(d1, d2); mx > 1e-15 {
		h1 = math.Pow(0.01/mx, 1/float64(order+1))
	}
	return math.Min(math.Min(100*h0, h1), span), nil
}

// Dormand–Prince 5(4) coefficients.
var (
	dpC = [7]float64{0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1}
	dpA = [7][6]float64{
		{},
		{1.0 / 5},
		{3.0 / 40, 9.0 / 40},
		{44.0 / 45, -56.0 / 15, 32.0 / 9},
		{19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
		{9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
		{35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
	}
	// dpE are the weights of the error estimate: the fifth-order solution
	// minus the embedded fourth-order one.
	dpE = [7]float64{71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525, -1.0 / 40}
)

// combine records y + h·Σ c_j k_j on the tape, skipping zero weights.
func combine(tp *autodiff.Tape, y autodiff.Value, h float64, c []float64, ks []autodiff.Value) autodiff.Value {
	out := y
	for j, cj := range c {
		if cj != 0 {
			out = tp.Add(out, tp.Mul(tp.Const(h*cj), ks[j]))
		}
	}
	return out
}

// scaledSum records Σ c_j k_j on the tape over the nonzero weights (at
// least one).
func scaledSum(tp *autodiff.Tape, c []float64, ks []autodiff.Value) autodiff.Value {
	var out autodiff.Value
	first := true
	for j, cj := range c {
		if cj == 0 {
			continue
		}
		term := tp.Mul(tp.Const(cj), ks[j])
		if first {
			out, first = term, false
		} else {
			out = tp.Add(out, term)
		}
	}
	return out
}

// solveRK45 integrates with the adaptive Dormand–Prince 5(4) pair
// (first same as last), stepping exactly onto each output time.
func (p *odeProblem) solveRK45(t0 float64, y0 autodiff.Value, ts []float64) ([]autodiff.Value, error) {
	tp := p.ev.tape()
	f0, err := p.rhs(t0, y0)
	if err != nil {
		return nil, err
	}
	h, err := p.initialStep(t0, y0, f0, ts[len(ts)-1]-t0, 5)
	if err != nil {
		return nil, err
	}
	t, y, k1 := t0, y0, f0
	out := make([]autodiff.Value, 0, len(ts))
	var ks [7]autodiff.Value
	errv := make([]float64, p.n)
	for _, tOut := range ts {
		steps := 0
		for t < tOut {
			step, last, err := p.nextStep(t, tOut, h, &steps)
			if err != nil {
				return nil, err
			}
			m := tp.Mark()
			ks[0] = k1
			var yNew autodiff.Value
			for s := 1; s < 7; s++ {
				ys := combine(tp, y, step, dpA[s][:s], ks[:s])
				if s == 6 {
					yNew = ys // the fifth-order solution, where the last stage is evaluated
				}
				if ks[s], err = p.rhs(t+dpC[s]*step, ys); err != nil {
					return nil, err
				}
			}
			for i := range errv {
				e := 0.0
				for s := 0; s < 7; s++ {
					if dpE[s] != 0 {
						e += dpE[s] * tp.Val(ks[s])[i]
					}
				}
				errv[i] = step * e
			}
			en := p.errNorm(errv, tp.Val(y), tp.Val(yNew))
			if math.IsNaN(en) {
				return nil, p.ev.domainf(p.e.Position(), "%s: the solution is not finite at t = %g", p.e.Name, t+step)
			}
			fac := math.Min(5, math.Max(0.2, 0.9*math.Pow(math.Max(en, 1e-10), -0.2)))
			if en > 1 {
				tp.Rewind(m) // a rejected step leaves nothing on the tape
				if h, err = p.retry(t, step*math.Min(1, fac)); err != nil {
					return nil, err
				}
				continue
			}
			y, k1 = yNew, ks[6]
			t, h = accepted(t, tOut, h, step, fac, last)
		}
		out = append(out, y)
	}
	return out, nil
}

// rosW is a Rosenbrock-W method: the stages solve
//
//	(I − hγJ) k_i = h F(t + c_i h, y + Σ_j a_ij k_j) + hJ Σ_j g_ij k_j
//
// for any matrix J (the order conditions hold whatever J is: here a
// finite-difference Jacobian at the start of the step, a constant on the
// tape, so the recorded step is exactly differentiable), and the solution
// is y + Σ b_i k_i, with the embedded solution y + Σ bhat_i k_i for error
// control.
type rosW struct {
	gamma   float64
	a, g    [][]float64
	b, bhat []float64
	order   int // of the solution; the embedded one has order − 1
}

// ros34pw2 is ROS34PW2 of Rang and Angermann (2005): four stages, order
// 3 (embedded 2), L-stable and stiffly accurate.
var ros34pw2 = rosW{
	gamma: 0.43586652150845900,
	a: [][]float64{
		{},
		{0.87173304301691801},
		{0.84457060015369423, -0.11299064236484185},
		{0, 0, 1},
	},
	g: [][]float64{
		{},
		{-0.87173304301691801},
		{-0.90338057013044082, 0.054180672388095326},
		{0.24212380706095346, -1.2232505839045147, 0.54526025533510214},
	},
	b:     []float64{0.24212380706095346, -1.2232505839045147, 1.5452602553351020, 0.43586652150845900},
	bhat:  []float64{0.37810903145819369, -0.096042292212423178, 0.5, 0.21793326075422950},
	order: 3,
}

// solveStiff integrates with ROS34PW2, stepping exactly onto each output
// time.
func (p *odeProblem) solveStiff(t0 float64, y0 autodiff.Value, ts []float64) ([]autodiff.Value, error) {
	tp := p.ev.tape()
	rw := &ros34pw2
	f0, err := p.rhs(t0, y0)
	if err != nil {
		return nil, err
	}
	h, err := p.initialStep(t0, y0, f0, ts[len(ts)-1]-t0, rw.order-1)
	if err != nil {
		return nil, err
	}
	n, stages := p.n, len(rw.b)
	t, y, fy := t0, y0, f0
	jac := mat.NewDense(n, n, nil)
	w := mat.NewDense(n, n, nil)
	var winv mat.Dense
	hj := make([]float64, n*n)
	out := make([]autodiff.Value, 0, len(ts))
	errv := make([]float64, n)
	ks := make([]autodiff.Value, stages)
	fresh := false // jac is the Jacobian at (t, y)
	for _, tOut := range ts {
		steps := 0
		for t < tOut {
			step, last, err := p.nextStep(t, tOut, h, &steps)
			if err != nil {
				return nil, err
			}
			if !fresh {
				if err := p.jacobian(t, y, fy, jac); err != nil {
					return nil, err
				}
				fresh = true
			}
			// W = I − γhJ, inverted once per step (n is small).
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					hj[i*n+j] = step * jac.At(i, j)
					v := -rw.gamma * hj[i*n+j]
					if i == j {
						v++
					}
					w.Set(i, j, v)
				}
			}
			if err := winv.Inverse(w); err != nil {
				h = step / 4
				continue
			}
			m := tp.Mark()
			wc := tp.NewConst(autodiff.MatrixShape(n, n), winv.RawMatrix().Data)
			hjc := tp.NewConst(autodiff.MatrixShape(n, n), hj)
			var failed error
			for i := 0; i < stages && failed == nil; i++ {
				f := fy
				if i > 0 {
					c := 0.0
					for _, a := range rw.a[i] {
						c += a
					}
					f, failed = p.rhs(t+c*step, combine(tp, y, 1, rw.a[i], ks[:i]))
				}
				rhs := tp.Mul(tp.Const(step), f)
				if i > 0 {
					rhs = tp.Add(rhs, tp.MatMul(hjc, scaledSum(tp, rw.g[i], ks[:i])))
				}
				ks[i] = tp.MatMul(wc, rhs)
			}
			if failed != nil {
				return nil, failed
			}
			yNew := combine(tp, y, 1, rw.b, ks)
			for i := range errv {
				e := 0.0
				for s := range ks {
					e += (rw.b[s] - rw.bhat[s]) * tp.Val(ks[s])[i]
				}
				errv[i] = e
			}
			en := p.errNorm(errv, tp.Val(y), tp.Val(yNew))
			fac := math.Min(5, math.Max(0.2, 0.9*math.Pow(math.Max(en, 1e-10), -1/float64(rw.order))))
			if math.IsNaN(en) || en > 1 {
				tp.Rewind(m)
				next := step * math.Min(1, fac)
				if math.IsNaN(en) {
					next = step / 4
				}
				if h, err = p.retry(t, next); err != nil {
					return nil, err
				}
				continue
			}
			fNew, err := p.rhs(t+step, yNew)
			if err != nil {
				return nil, err
			}
			y, fy, fresh = yNew, fNew, false
			t, h = accepted(t, tOut, h, step, fac, last)
		}
		out = append(out, y)
	}
	return out, nil
}

// jacobian sets jac to the forward-difference Jacobian ∂F/∂y at (t, y),
// given F(t, y) = fy; the evaluations are rewound.
func (p *odeProblem) jacobian(t float64, y, fy autodiff.Value, jac *mat.Dense) error {
	tp := p.ev.tape()
	m := tp.Mark()
	defer tp.Rewind(m)
	yv := append([]float64(nil), tp.Val(y)...)
	f := append([]float64(nil), tp.Val(fy)...)
	for j := range yv {
		d := math.Sqrt(2.2e-16) * math.Max(math.Abs(yv[j]), math.Max(p.atol, 1e-8))
		yp := append([]float64(nil), yv...)
		yp[j] += d
		fp, err := p.rhs(t, tp.ConstVec(yp))
		if err != nil {
			return err
		}
		for i, x := range tp.Val(fp) {
			jac.Set(i, j, (x-f[i])/d)
		}
	}
	return nil
}
