package stdlib

import (
	"fmt"

	"github.com/shmlang/shm/internal/sysmem"
)

// CheckSize checks the sizes of a result that a built-in is about to
// allocate: each must be non-negative, and their product (the scalars to
// allocate) within half of the machine's memory (sysmem.MaxElements). The
// error does not name the function; callers prefix it.
func CheckSize(dims ...int) error {
	total := 1.0
	for _, n := range dims {
		if n < 0 {
			return fmt.Errorf("size must be non-negative, got %d", n)
		}
		total *= float64(n)
	}
	if limit := sysmem.MaxElements(); limit > 0 && total > float64(limit) {
		return fmt.Errorf("a result of %.4g elements (%s) needs more than half of this machine's memory (%s)",
			total, sysmem.Bytes(8*total), sysmem.Bytes(float64(sysmem.Total())))
	}
	return nil
}
