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
	for _, n := range dims {
		if n < 0 {
			return fmt.Errorf("size must be non-negative, got %d", n)
		}
	}
	if n, over := sysmem.Exceeds(dims...); over {
		return fmt.Errorf("a result of %s needs %s", sysmem.Elements(n), sysmem.Beyond())
	}
	return nil
}
