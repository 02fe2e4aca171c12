package stdlib

import "sync/atomic"

// A Cohort counts the members of a group of goroutines started together
// (the workers of one crn call, the channels of a sinkhorn call) that are
// computing, as opposed to waiting on shared work or done. A built-in
// that batches the work of concurrent evaluations into one launch (the
// GPU's fused Sinkhorn path) can then launch a batch as soon as no member
// that could still join it is computing, instead of guessing from the
// times at which work arrives.
//
// A member counts as computing from NewCohort until it calls Wait or
// Done, and again after Resume. The methods are safe for concurrent use;
// the zero Cohort has no members.
type Cohort struct {
	computing atomic.Int64
}

// NewCohort returns a cohort of n computing members.
func NewCohort(n int) *Cohort {
	c := new(Cohort)
	c.computing.Store(int64(n))
	return c
}

// Join adds n computing members: goroutines a member starts to share its
// work (sinkhorn's channels).
func (c *Cohort) Join(n int) { c.computing.Add(int64(n)) }

// Wait records that a member blocks on shared work.
func (c *Cohort) Wait() { c.computing.Add(-1) }

// Resume records that a member that waited computes again.
func (c *Cohort) Resume() { c.computing.Add(1) }

// Done records that a member has finished.
func (c *Cohort) Done() { c.computing.Add(-1) }

// Computing returns the number of members computing.
func (c *Cohort) Computing() int { return int(c.computing.Load()) }
