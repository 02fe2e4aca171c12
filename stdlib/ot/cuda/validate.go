package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/shmlang/shm/stdlib/ot"
)

// The checks of package ot, with the same rules, run on the host before
// anything is sent to the device.

func validateOptions(o ot.Options) error {
	if !(o.Eps > 0) || math.IsInf(o.Eps, 0) {
		return fmt.Errorf("cuda: eps must be finite and > 0, got %g", o.Eps)
	}
	if o.Iters < 1 {
		return fmt.Errorf("cuda: iters must be ≥ 1, got %d", o.Iters)
	}
	if !o.Balanced && (!(o.Rho > 0) || math.IsInf(o.Rho, 0)) {
		return fmt.Errorf("cuda: unbalanced mode needs rho finite and > 0, got %g (use balanced mode for rho = ∞)", o.Rho)
	}
	if o.Grad != ot.GradUnrolled && o.Grad != ot.GradEnvelope {
		return fmt.Errorf("cuda: unknown gradient mode %v", o.Grad)
	}
	if o.Tol != 0 {
		// The kernels run a fixed number of iterations, with no
		// convergence test; package sinkhorn sends such problems to
		// package ot.
		return fmt.Errorf("cuda: tol = %g: the converged mode runs on the CPU only (package ot); the GPU runs Iters iterations (tol = 0)", o.Tol)
	}
	return nil
}

// checkSide validates the points (n×d, finite) and log-weights (finite or
// −Inf, at least one finite) of one measure and returns n.
func checkSide(name string, pts, logw []float64, d int) (int, error) {
	n := len(logw)
	if n == 0 {
		return 0, fmt.Errorf("cuda: measure %s has no points", name)
	}
	if len(pts) != n*d {
		return 0, fmt.Errorf("cuda: measure %s has %d log-weights but %d coordinates (%d points of dimension %d expected)", name, n, len(pts), n, d)
	}
	finite := false
	for i, v := range logw {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return 0, fmt.Errorf("cuda: measure %s: log-weight %d is %g", name, i+1, v)
		}
		finite = finite || !math.IsInf(v, -1)
	}
	if !finite {
		return 0, fmt.Errorf("cuda: measure %s has no positive weight", name)
	}
	for k, v := range pts {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("cuda: measure %s: coordinate %d of point %d is %g", name, k%d+1, k/d+1, v)
		}
	}
	return n, nil
}

func checkGrad(name string, g []float64, want int) error {
	if g != nil && len(g) != want {
		return fmt.Errorf("cuda: gradient slice %s has length %d, want %d", name, len(g), want)
	}
	return nil
}

func checkGrads(gr *ot.Grad, n, m, d int) error {
	if gr == nil {
		return nil
	}
	return errors.Join(checkGrad("X", gr.X, n*d), checkGrad("Y", gr.Y, m*d),
		checkGrad("LogA", gr.LogA, n), checkGrad("LogB", gr.LogB, m))
}

func checkMasses(o ot.Options, ma, mb float64) error {
	if o.Balanced && !(math.Abs(ma-mb) <= 1e-8*max(ma, mb)) {
		return fmt.Errorf("cuda: balanced Sinkhorn needs equal masses, but mass(a) = %.17g and mass(b) = %.17g (normalize the weights or use unbalanced mode)", ma, mb)
	}
	return nil
}

// mass returns Σ exp(logw).
func mass(logw []float64) float64 {
	var s float64
	for _, v := range logw {
		s += math.Exp(v)
	}
	return s
}

func wanted(g *ot.Grad) bool {
	return g != nil && (g.X != nil || g.Y != nil || g.LogA != nil || g.LogB != nil)
}
