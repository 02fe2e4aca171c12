package optimize

import (
	"fmt"
	"math"
)

// quasiNewtonUpdate is an inverse-Hessian approximation H of the objective.
type quasiNewtonUpdate interface {
	// update adds the pair s = x_k - x_{k-1}, y = g_k - g_{k-1}. With reset
	// it forgets the history, starts from H0 = (s'y / y'y) I and returns
	// y'y / s'y, the scale of the initial Hessian.
	update(y, s []float64, reset bool) float64
	// direction sets p = -H g.
	direction(p, g []float64)
}

// quasiNewton runs BFGS or L-BFGS from res.X, whose objective gradient is g,
// as Stan's BFGSMinimizer.
func quasiNewton(ev *evaluator, res *Result, g []float64, o *Options) (*Result, error) {
	n := len(g)
	var qn quasiNewtonUpdate
	if o.Algorithm == BFGS {
		qn = &denseBFGS{h: make([]float64, n*n), tmp: make([]float64, n)}
	} else {
		qn = &limitedBFGS{m: o.HistorySize}
	}
	x, f := res.X, -res.LogDensity
	p := make([]float64, n)
	negate(p, g)
	var (
		x1, g1     = make([]float64, n), make([]float64, n)
		pPrev      = make([]float64, n)
		gPrev      = make([]float64, n)
		s, y       = make([]float64, n), make([]float64, n)
		fPrev      float64
		alphaPrev  float64
		alpha      float64
		alpha0     float64
		termReason Termination
	)
	stop := func(term Termination, err error) (*Result, error) {
		res.X, res.LogDensity = x, -f
		negate(res.Grad, g)
		return finish(res, ev, term), err
	}
	for k := 1; ; k++ {
		reset := k == 1
		note := ""
		for {
			if reset {
				negate(p, g)
			}
			if k > 1 && !reset {
				// Stan's guess: the minimizer of the cubic along the
				// previous direction, capped at 1.
				alpha0 = math.Min(1, 1.01*cubicMin(dot(gPrev, pPrev), alphaPrev, f-fPrev, dot(g, pPrev), lsMinAlpha, 1))
			} else {
				alpha0 = o.InitAlpha
			}
			var f1 float64
			var ok bool
			var err error
			alpha, f1, ok, err = ev.lineSearch(alpha0, x, f, g, p, x1, g1)
			if err != nil {
				return stop(NotTerminated, fmt.Errorf("optimize: iteration %d: %w", k, err))
			}
			if ok {
				fPrev, f = f, f1
				break
			}
			if reset {
				res.Iterations = k - 1
				return stop(LineSearchFailed, fmt.Errorf("%w (iteration %d, log density %v)", ErrLineSearch, k, -f))
			}
			reset = true
			note = "LS failed, Hessian reset"
		}
		// Accept: the previous point becomes k-1.
		for i := range x {
			s[i] = x1[i] - x[i]
			y[i] = g1[i] - g[i]
		}
		x, x1 = x1, x
		g, gPrev, g1 = g1, g, gPrev
		p, pPrev = pPrev, p
		res.Iterations = k
		if reset {
			b0 := qn.update(y, s, true)
			for i := range pPrev {
				pPrev[i] /= b0
			}
			alphaPrev = alpha * b0
		} else {
			qn.update(y, s, false)
			alphaPrev = alpha
		}
		qn.direction(p, g)

		gradNorm, stepNorm := norm(g), norm(s)
		switch {
		case math.Abs(fPrev-f) < o.TolObj:
			termReason = ConvergedObj
		case gradNorm < o.TolGrad:
			termReason = ConvergedGrad
		case stepNorm < o.TolParam:
			termReason = ConvergedParam
		case k >= o.Iter:
			termReason = MaxIterations
		case math.Abs(fPrev-f)/math.Max(math.Abs(fPrev), math.Max(math.Abs(f), 1)) < o.TolRelObj*epsilon:
			termReason = ConvergedRelObj
		case -dot(p, g)/math.Max(math.Abs(f), 1) < o.TolRelGrad*epsilon:
			termReason = ConvergedRelGrad
		default:
			termReason = NotTerminated
		}
		if o.Progress != nil {
			negate(res.Grad, g)
			err := o.Progress(Progress{Iter: k, LogDensity: -f, StepNorm: stepNorm, GradNorm: gradNorm,
				Alpha: alpha, Alpha0: alpha0, Evals: ev.evals, Note: note, X: x, Grad: res.Grad})
			if err != nil {
				return stop(NotTerminated, err)
			}
		}
		if termReason != NotTerminated {
			return stop(termReason, nil)
		}
	}
}

// epsilon is the machine epsilon of float64, the unit of TolRelObj and
// TolRelGrad.
const epsilon = 0x1p-52

// limitedBFGS is Stan's LBFGSUpdate: the last m pairs, applied by the
// two-loop recursion to H0 = γ I with γ = s'y / y'y of the newest pair.
type limitedBFGS struct {
	m     int
	pairs []lbfgsPair // oldest first
	gamma float64
	alpha []float64 // scratch for the two-loop recursion
}

type lbfgsPair struct {
	rho  float64 // 1 / s'y
	y, s []float64
}

func (l *limitedBFGS) update(y, s []float64, reset bool) float64 {
	sy, yy := dot(y, s), dot(y, y)
	b0 := 1.0
	if reset {
		b0 = yy / sy
		l.pairs = l.pairs[:0]
	}
	var pr lbfgsPair
	if len(l.pairs) == l.m {
		// Reuse the oldest pair's storage.
		pr = l.pairs[0]
		copy(l.pairs, l.pairs[1:])
		l.pairs = l.pairs[:l.m-1]
	} else {
		pr = lbfgsPair{y: make([]float64, len(y)), s: make([]float64, len(s))}
	}
	pr.rho = 1 / sy
	copy(pr.y, y)
	copy(pr.s, s)
	l.pairs = append(l.pairs, pr)
	l.gamma = sy / yy
	return b0
}

func (l *limitedBFGS) direction(p, g []float64) {
	if cap(l.alpha) < len(l.pairs) {
		l.alpha = make([]float64, l.m)
	}
	al := l.alpha[:len(l.pairs)]
	negate(p, g)
	for i := len(l.pairs) - 1; i >= 0; i-- {
		pr := &l.pairs[i]
		al[i] = pr.rho * dot(pr.s, p)
		axpy(p, p, -al[i], pr.y)
	}
	for i := range p {
		p[i] *= l.gamma
	}
	for i := range l.pairs {
		pr := &l.pairs[i]
		beta := pr.rho * dot(pr.y, p)
		axpy(p, p, al[i]-beta, pr.s)
	}
}

// denseBFGS is Stan's BFGSUpdate_HInv: the full inverse Hessian, updated by
// H ← (I - ρ s y') H (I - ρ y s') + ρ s s'.
type denseBFGS struct {
	h   []float64 // n×n, row major
	tmp []float64
}

func (d *denseBFGS) update(y, s []float64, reset bool) float64 {
	n := len(y)
	sy := dot(y, s)
	rho := 1 / sy
	b0 := 1.0
	if reset {
		b0 = dot(y, y) / sy
		clear(d.h)
		for i := range n {
			d.h[i*n+i] = 1 / b0
		}
	}
	// With u = H y (H symmetric): the update is
	// H - ρ (s u' + u s') + (ρ² y'u + ρ) s s'.
	u := d.tmp
	for i := range n {
		u[i] = dot(d.h[i*n:(i+1)*n], y)
	}
	c := rho*rho*dot(y, u) + rho
	for i := range n {
		row := d.h[i*n : (i+1)*n]
		for j := range n {
			row[j] += -rho*(s[i]*u[j]+u[i]*s[j]) + c*s[i]*s[j]
		}
	}
	return b0
}

func (d *denseBFGS) direction(p, g []float64) {
	n := len(g)
	for i := range n {
		p[i] = -dot(d.h[i*n:(i+1)*n], g)
	}
}
