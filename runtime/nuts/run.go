package nuts

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Run initializes the chain, runs warmup (adapting unless Config.NoAdapt) and
// sampling, and delivers the output through cb. It stops early, returning
// ctx.Err(), when ctx is cancelled.
//
// A target of dimension 0 runs as Stan's fixed_param sampler: no warmup, and
// every sampling draw has LP and AcceptStat 0.
func (c *Chain) Run(ctx context.Context, cb Callbacks) error {
	cfg := &c.cfg
	total := cfg.NumWarmup + cfg.NumSamples
	var draw Draw
	progress := func(it int, warmup bool) {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Chain: c.id, Iteration: it + 1, Total: total, Warmup: warmup,
				TreeDepth: draw.TreeDepth, NLeapfrog: draw.NLeapfrog, StepSize: draw.StepSize})
		}
	}
	if c.d == 0 {
		return c.runFixedParam(ctx, cb)
	}
	c.activity()
	if err := c.initialize(); err != nil {
		return err
	}
	adapt := !cfg.NoAdapt && cfg.NumWarmup > 0
	var (
		da  dualAveraging
		win windows
		est *metricEstimator
	)
	if adapt {
		if !cfg.FixedMetric {
			var reduced bool
			win, reduced = newWindows(cfg.NumWarmup, cfg.InitBuffer, cfg.TermBuffer, cfg.BaseWindow)
			c.adaptation.ReducedWindows = reduced
			est = newMetricEstimator(c.metric.kind, c.d)
		}
		// Stan sets mu from the user's step size before the heuristic runs.
		da = dualAveraging{delta: cfg.Delta, gamma: cfg.Gamma, kappa: cfg.Kappa, t0: cfg.T0, mu: math.Log(10 * cfg.StepSize)}
		if err := c.initStepSize(); err != nil {
			return fmt.Errorf("nuts: chain %d: initial step size: %w", c.id, err)
		}
	}
	// As in Stan, the warmup time excludes initialization.
	start := time.Now()

	t := newTrajectory(c.d)
	draw.Theta = c.z.q
	emit := func() error {
		if cb.Draw == nil {
			return nil
		}
		draw.Theta = c.z.q
		return cb.Draw(&draw)
	}

	for it := 0; it < cfg.NumWarmup; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.iteration, c.warmup = it+1, true
		c.transition(t, &draw)
		if c.fatal != nil {
			return fmt.Errorf("nuts: chain %d, warmup iteration %d: %w", c.id, it+1, c.fatal)
		}
		draw.Warmup = true
		if adapt {
			c.eps = da.learn(draw.AcceptStat)
		}
		if est != nil {
			if win.inWindow() {
				est.add(c.z.q)
			}
			if win.endOfWindow() {
				win.computeNextWindow()
				if err := est.update(c.metric.inv); err != nil {
					return fmt.Errorf("nuts: chain %d, warmup iteration %d: %w", c.id, it+1, err)
				}
				if err := c.metric.refactor(); err != nil {
					return fmt.Errorf("nuts: chain %d, warmup iteration %d: adapted metric: %w", c.id, it+1, err)
				}
				est.restart()
				win.counter++
				if err := c.initStepSize(); err != nil {
					return fmt.Errorf("nuts: chain %d, warmup iteration %d: %w", c.id, it+1, err)
				}
				da.mu = math.Log(10 * c.eps)
				da.restart()
			} else {
				win.counter++
			}
		}
		if cfg.SaveWarmup && it%cfg.Thin == 0 {
			if err := emit(); err != nil {
				return err
			}
		}
		progress(it, true)
	}
	if adapt {
		c.eps = da.final()
	}
	c.timing.Warmup = time.Since(start)
	if cb.Adapted != nil {
		if err := cb.Adapted(c.Adaptation()); err != nil {
			return err
		}
	}

	start = time.Now()
	for it := 0; it < cfg.NumSamples; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.iteration, c.warmup = cfg.NumWarmup+it+1, false
		c.transition(t, &draw)
		if c.fatal != nil {
			return fmt.Errorf("nuts: chain %d, iteration %d: %w", c.id, cfg.NumWarmup+it+1, c.fatal)
		}
		draw.Warmup = false
		if it%cfg.Thin == 0 {
			if err := emit(); err != nil {
				return err
			}
		}
		progress(cfg.NumWarmup+it, false)
	}
	c.timing.Sampling = time.Since(start)
	return nil
}

func (c *Chain) runFixedParam(ctx context.Context, cb Callbacks) error {
	cfg := &c.cfg
	if cb.Adapted != nil {
		if err := cb.Adapted(c.Adaptation()); err != nil {
			return err
		}
	}
	start := time.Now()
	draw := Draw{Theta: c.z.q}
	for it := 0; it < cfg.NumSamples; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it%cfg.Thin == 0 && cb.Draw != nil {
			if err := cb.Draw(&draw); err != nil {
				return err
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(Progress{Chain: c.id, Iteration: it + 1, Total: cfg.NumSamples})
		}
	}
	c.timing.Sampling = time.Since(start)
	return nil
}

// Result is a whole chain kept in memory.
type Result struct {
	Draws      []Draw // warmup draws first when Config.SaveWarmup
	Adaptation Adaptation
	Timing     Timing
}

// Sample runs chain id of a run with the given seed and keeps every draw.
func Sample(ctx context.Context, target Target, cfg Config, seed uint64, id int) (*Result, error) {
	if target != nil {
		if err := cfg.CheckMemory(target.Dim(), true); err != nil {
			return nil, err
		}
	}
	c, err := NewChain(target, cfg, seed, id)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	err = c.Run(ctx, Callbacks{
		Draw: func(d *Draw) error {
			cp := *d
			cp.Theta = append([]float64(nil), d.Theta...)
			res.Draws = append(res.Draws, cp)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	res.Adaptation = c.Adaptation()
	res.Timing = c.Timing()
	return res, nil
}
