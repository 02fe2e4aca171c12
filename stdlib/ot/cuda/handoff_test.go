package cuda

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkThreadHandoff measures what a Device's exec paid per call when
// it handed the work to the context's thread (viaThread, the only way
// before 97bbb6e), without a GPU: the round trip of an empty function to a
// goroutine locked to its OS thread and back, after the caller has been
// busy for a while (as a batch's leader is between batches), so that the
// serving thread has gone to sleep. Reported as µs per round trip.
func BenchmarkThreadHandoff(b *testing.B) {
	work := make(chan func())
	defer close(work)
	go func() {
		runtime.LockOSThread()
		for f := range work {
			f()
		}
	}()
	for _, busy := range []time.Duration{0, 200 * time.Microsecond, 2 * time.Millisecond} {
		b.Run("busy="+busy.String(), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				for t := time.Now(); time.Since(t) < busy; {
				}
				t := time.Now()
				done := make(chan struct{})
				work <- func() { close(done) }
				<-done
				total += time.Since(t)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "us/roundtrip")
		})
	}
}
