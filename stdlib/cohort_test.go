package stdlib

import (
	"sync"
	"testing"
)

// TestCohort checks a cohort's count of computing members through Join,
// Wait, Resume and Done, also from concurrent goroutines.
func TestCohort(t *testing.T) {
	c := NewCohort(2)
	for _, step := range []struct {
		name string
		op   func()
		want int
	}{
		{"new", func() {}, 2},
		{"wait", c.Wait, 1},
		{"join 3", func() { c.Join(3) }, 4},
		{"resume", c.Resume, 5},
		{"done", c.Done, 4},
	} {
		step.op()
		if got := c.Computing(); got != step.want {
			t.Errorf("%s: %d computing, want %d", step.name, got, step.want)
		}
	}
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Join(1)
			c.Wait()
			c.Resume()
			c.Done()
		}()
	}
	wg.Wait()
	if got := c.Computing(); got != 4 {
		t.Errorf("after concurrent members: %d computing, want 4", got)
	}
	if got := new(Cohort).Computing(); got != 0 {
		t.Errorf("zero cohort: %d computing", got)
	}
}
