package calibrate

import (
	"fmt"
	"math"
	"sort"
)

// Search chooses the loss scales to evaluate, one at a time, and the
// calibrated one: the highest evaluated lambda whose coverage reaches the
// target (the paper's lambda*, after Syring & Martin 2019). Coverage falls
// as lambda grows (a larger loss scale concentrates the posterior). From
// Start, Search steps up (coverage reached) or down (not reached) by
// Factor until the target is bracketed, then bisects the bracket in log
// scale until its ends are within a relative Tol or MaxEvals scales have
// been evaluated. A Grid, when set, replaces the search: every scale of
// the grid is evaluated, in one round.
type Search struct {
	Start    float64   // first lambda (default 1)
	Target   float64   // coverage to reach (default 0.9)
	Factor   float64   // step while bracketing (default 4)
	Tol      float64   // relative width of the final bracket (default 0.05)
	MaxEvals int       // most scales evaluated (default 12)
	Grid     []float64 // evaluate these scales instead of searching

	evals []Eval
}

// Eval is the coverage at one lambda.
type Eval struct {
	Lambda float64
	Coverage
}

func (s *Search) defaults() {
	if s.Start <= 0 {
		s.Start = 1
	}
	if s.Target <= 0 {
		s.Target = 0.9
	}
	if s.Factor <= 1 {
		s.Factor = 4
	}
	if s.Tol <= 0 {
		s.Tol = 0.05
	}
	if s.MaxEvals <= 0 {
		s.MaxEvals = 12
	}
}

// Next returns the scales to evaluate next (all of the grid, or one scale
// of the search), or none when the search is over.
func (s *Search) Next() []float64 {
	s.defaults()
	if s.Grid != nil {
		if len(s.evals) > 0 {
			return nil
		}
		return s.Grid
	}
	if len(s.evals) == 0 {
		return []float64{s.Start}
	}
	if len(s.evals) >= s.MaxEvals {
		return nil
	}
	lo, hi := s.bracket()
	var next float64
	switch {
	case lo == 0 && hi == 0:
		return nil
	case hi == 0: // every scale so far reaches the target: go up
		next = lo * s.Factor
	case lo == 0: // none does: go down
		next = hi / s.Factor
	case hi/lo <= 1+s.Tol:
		return nil
	default:
		next = math.Sqrt(lo * hi)
	}
	if s.evaluated(next) {
		return nil
	}
	return []float64{next}
}

// bracket returns lo, the highest scale evaluated that reaches the target
// with no lower scale below it that does not (0 for none), and hi, the
// lowest scale above lo that does not reach it (0 for none).
func (s *Search) bracket() (lo, hi float64) {
	sorted := s.Evals()
	for _, e := range sorted {
		if e.Rate() >= s.Target {
			if hi == 0 {
				lo = e.Lambda
			}
		} else if hi == 0 {
			hi = e.Lambda
		}
	}
	return lo, hi
}

func (s *Search) evaluated(lambda float64) bool {
	for _, e := range s.evals {
		if e.Lambda == lambda {
			return true
		}
	}
	return false
}

// Record adds the coverage at one scale.
func (s *Search) Record(lambda float64, c Coverage) {
	s.evals = append(s.evals, Eval{Lambda: lambda, Coverage: c})
}

// Evals returns the evaluations, by increasing lambda.
func (s *Search) Evals() []Eval {
	out := append([]Eval(nil), s.evals...)
	sort.Slice(out, func(i, j int) bool { return out[i].Lambda < out[j].Lambda })
	return out
}

// Best returns lambda*: the highest evaluated scale whose coverage reaches
// the target, or an error when none does.
func (s *Search) Best() (float64, error) {
	s.defaults()
	best := 0.0
	for _, e := range s.evals {
		if e.Rate() >= s.Target && e.Lambda > best {
			best = e.Lambda
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no evaluated loss scale reaches coverage %g: evaluate lower scales (a smaller --start or --lambdas)", s.Target)
	}
	return best, nil
}
