package nuts

// Target is a log density on R^d with its gradient.
//
// LogDensityGrad returns log p(theta) up to a constant and writes its gradient
// into grad (of length Dim). An error, or a non-finite value, means that the
// point cannot be evaluated; the sampler then treats the point as Stan does: a
// rejected initial point, or a divergent step inside a trajectory.
//
// A chain calls its Target from one goroutine at a time. Chains run in
// parallel need targets that are safe for concurrent use, or one each.
type Target interface {
	Dim() int
	LogDensityGrad(theta, grad []float64) (float64, error)
}
