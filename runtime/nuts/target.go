package nuts

import "errors"

// Target is a log density on R^d with its gradient.
//
// LogDensityGrad returns log p(theta) up to a constant and writes its gradient
// into grad (of length Dim). A non-finite value, or an error that reports
// itself as a rejection (a method Reject() bool returning true: a domain
// error such as a negative scale, or the model's reject(...), as Stan treats
// std::domain_error), means that the point has zero density; the sampler
// then treats the point as Stan does: a rejected initial point, or a
// divergent step inside a trajectory. Any other error (a bug in the model,
// such as an index out of range) stops the chain, and Run returns it.
//
// A chain calls its Target from one goroutine at a time. Chains run in
// parallel need targets that are safe for concurrent use, or one each.
type Target interface {
	Dim() int
	LogDensityGrad(theta, grad []float64) (float64, error)
}

// isRejection reports whether err rejects a point rather than stopping the
// chain (see Target).
func isRejection(err error) bool {
	var r interface{ Reject() bool }
	return errors.As(err, &r) && r.Reject()
}
