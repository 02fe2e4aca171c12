package nuts

import (
	"errors"
	"math"
)

// dualAveraging is Nesterov dual averaging of log step size (Hoffman and
// Gelman 2014, Stan's stepsize_adaptation).
type dualAveraging struct {
	delta, gamma, kappa, t0 float64
	mu                      float64
	counter, sBar, xBar     float64
}

func (a *dualAveraging) restart() { a.counter, a.sBar, a.xBar = 0, 0, 0 }

// learn updates the statistics with the acceptance statistic of one
// transition and returns the next step size.
func (a *dualAveraging) learn(acceptStat float64) float64 {
	a.counter++
	if acceptStat > 1 {
		acceptStat = 1
	}
	eta := 1 / (a.counter + a.t0)
	a.sBar = (1-eta)*a.sBar + eta*(a.delta-acceptStat)
	x := a.mu - a.sBar*math.Sqrt(a.counter)/a.gamma
	xEta := math.Pow(a.counter, -a.kappa)
	a.xBar = (1-xEta)*a.xBar + xEta*x
	return math.Exp(x)
}

// final returns the averaged step size used after warmup.
func (a *dualAveraging) final() float64 { return math.Exp(a.xBar) }

// windows is Stan's windowed_adaptation schedule: which warmup iterations
// feed the metric estimator and at which ones the metric is updated.
type windows struct {
	numWarmup, initBuffer, termBuffer, baseWindow int
	counter, windowSize, nextWindow               int
}

// newWindows sets the schedule as Stan's set_window_params does. With fewer
// than 20 warmup iterations the metric is never adapted. When the three
// stages do not fit, they are reduced to 15%/75%/10% of the warmup.
//
// Deviation: Stan 2.32's set_window_params does not restart the schedule in
// the reduced case, so its first window end is never reached and the metric
// is not adapted at all for short warmups (stan-dev/stan#3380). We restart,
// so the reduced schedule is applied as documented.
func newWindows(numWarmup, initBuffer, termBuffer, baseWindow int) (w windows, reduced bool) {
	if numWarmup < 20 {
		// Never inside a window: numWarmup stays 0 as in Stan.
		w.nextWindow = -1
		return w, false
	}
	if initBuffer+baseWindow+termBuffer > numWarmup {
		w.numWarmup = numWarmup
		w.initBuffer = int(0.15 * float64(numWarmup))
		w.termBuffer = int(0.1 * float64(numWarmup))
		w.baseWindow = numWarmup - (w.initBuffer + w.termBuffer)
		reduced = true
	} else {
		w.numWarmup, w.initBuffer, w.termBuffer, w.baseWindow = numWarmup, initBuffer, termBuffer, baseWindow
	}
	w.restart()
	return w, reduced
}

func (w *windows) restart() {
	w.counter = 0
	w.windowSize = w.baseWindow
	w.nextWindow = w.initBuffer + w.windowSize - 1
}

func (w *windows) inWindow() bool {
	return w.counter >= w.initBuffer && w.counter < w.numWarmup-w.termBuffer && w.counter != w.numWarmup
}

func (w *windows) endOfWindow() bool {
	return w.counter == w.nextWindow && w.counter != w.numWarmup
}

func (w *windows) computeNextWindow() {
	last := w.numWarmup - w.termBuffer - 1
	if w.nextWindow == last {
		return
	}
	w.windowSize *= 2
	w.nextWindow = w.counter + w.windowSize
	if w.nextWindow == last {
		return
	}
	// If the window after this one would run past the slow phase,
	// stretch this one to the end of the slow phase.
	if w.nextWindow+2*w.windowSize >= w.numWarmup-w.termBuffer {
		w.nextWindow = last
	}
}

// errMetricOverflow is Stan's "Numerical overflow in metric adaptation".
var errMetricOverflow = errors.New("numerical overflow in metric adaptation; the sampler met extreme values on the unconstrained space (the posterior may be too wide or improper)")

// metricEstimator accumulates draws with Welford's algorithm and produces a
// regularized inverse metric at the end of each window.
type metricEstimator struct {
	kind  MetricKind
	d     int
	n     float64
	mean  []float64
	m2    []float64 // diag: d; dense: d*d
	delta []float64
}

func newMetricEstimator(kind MetricKind, d int) *metricEstimator {
	e := &metricEstimator{kind: kind, d: d, mean: make([]float64, d), delta: make([]float64, d)}
	if kind == Dense {
		e.m2 = make([]float64, d*d)
	} else {
		e.m2 = make([]float64, d)
	}
	return e
}

func (e *metricEstimator) restart() {
	e.n = 0
	clear(e.mean)
	clear(e.m2)
}

func (e *metricEstimator) add(q []float64) {
	e.n++
	for i, v := range q {
		e.delta[i] = v - e.mean[i]
		e.mean[i] += e.delta[i] / e.n
	}
	if e.kind == Diag {
		for i, v := range q {
			e.m2[i] += e.delta[i] * (v - e.mean[i])
		}
		return
	}
	d := e.d
	for i := 0; i < d; i++ {
		di := e.delta[i]
		for j := 0; j < d; j++ {
			e.m2[i*d+j] += di * (q[j] - e.mean[j])
		}
	}
}

// update overwrites inv with the regularized estimate
// n/(n+5)·S + 1e-3·5/(n+5)·I (S the sample (co)variance), as Stan does.
// With fewer than two draws S is the old inv, as in Stan's Welford estimators.
func (e *metricEstimator) update(inv []float64) error {
	n := e.n
	if n > 1 {
		for i, v := range e.m2 {
			inv[i] = v / (n - 1)
		}
	}
	w := n / (n + 5)
	reg := 1e-3 * 5 / (n + 5)
	for i := range inv {
		inv[i] *= w
	}
	if e.kind == Diag {
		for i := range inv {
			inv[i] += reg
		}
	} else {
		d := e.d
		for i := 0; i < d; i++ {
			inv[i*d+i] += reg
			for j := 0; j < i; j++ { // remove rounding asymmetry
				v := 0.5 * (inv[i*d+j] + inv[j*d+i])
				inv[i*d+j], inv[j*d+i] = v, v
			}
		}
	}
	for _, v := range inv {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errMetricOverflow
		}
	}
	return nil
}
