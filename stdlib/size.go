package stdlib

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/shmlang/shm/internal/sysmem"
	"github.com/shmlang/shm/lang"
)

// ErrMemory marks (wrapped, with %w) a built-in's refusal of a size that
// would not fit in memory: it does not depend on a proposal, so the run
// stops with it instead of rejecting the proposal as a built-in's other
// failures do.
var ErrMemory = errors.New("not enough memory")

// memoryError is a refusal for want of memory (ErrMemory).
type memoryError struct{ msg string }

func (e memoryError) Error() string        { return e.msg }
func (e memoryError) Is(target error) bool { return target == ErrMemory }

// MemoryErrorf formats a refusal for want of memory: errors.Is(err,
// ErrMemory) holds.
func MemoryErrorf(format string, args ...any) error {
	return memoryError{fmt.Sprintf(format, args...)}
}

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
		return MemoryErrorf("a result of %s needs %s", sysmem.Elements(n), sysmem.Beyond())
	}
	return nil
}

// ElementWords is the size of a Value in 8-byte words: what each element of
// an array of vectors, row vectors or matrices costs beside its scalars.
const ElementWords = (unsafe.Sizeof(Value{}) + 7) / 8

// Footprint is the memory a value of type typ with sizes dims (its array
// sizes, outermost first, then its vector or matrix sizes) holds, in
// 8-byte words: one per scalar, and, for an array of vectors, row vectors
// or matrices, a Value per element (its header, about 16 words: an
// array[N] vector[2] holds 9 times the words of its 2N scalars). Every
// size check of a container counts this, not the product of its sizes.
func Footprint(typ lang.Type, dims []int) float64 {
	n := 1.0
	for _, k := range dims {
		n *= float64(k)
	}
	if typ.Dims > 0 && typ.Base.IsLinalg() && len(dims) >= typ.Dims {
		elems := 1.0
		for _, k := range dims[:typ.Dims] {
			elems *= float64(k)
		}
		n += elems * float64(ElementWords)
	}
	return n
}

// ExceedsFootprint returns the Footprint of a value and whether it is
// more than sysmem.MaxElements (half of the memory the process may use;
// never when that is unknown).
func ExceedsFootprint(typ lang.Type, dims []int) (float64, bool) {
	n := Footprint(typ, dims)
	limit := sysmem.MaxElements()
	return n, limit > 0 && n > float64(limit)
}

// FootprintText describes a Footprint of words: "4e+07 elements (305 MiB)",
// or, for an array of vectors, row vectors or matrices, "4e+07 elements
// in 2e+07 vector elements (2.7 GiB with each element's header)".
func FootprintText(typ lang.Type, dims []int, words float64) string {
	if !(typ.Dims > 0 && typ.Base.IsLinalg() && len(dims) >= typ.Dims) {
		return sysmem.Elements(words)
	}
	scalars, elems := 1.0, 1.0
	for i, k := range dims {
		scalars *= float64(k)
		if i < typ.Dims {
			elems *= float64(k)
		}
	}
	return fmt.Sprintf("%.4g elements in %.4g %s elements (%s with each element's header)",
		scalars, elems, typ.Base, sysmem.Bytes(8*words))
}
