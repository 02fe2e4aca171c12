// Package sysmem reports the machine's memory, for refusing sizes that
// cannot fit before trying to allocate them.
package sysmem

import (
	"fmt"
	"strconv"
	"sync"
)

// Total returns the memory this process may use, in bytes (0 if
// unknown), and what bounds it: "this machine's memory", "the address
// space left under ulimit -v" (the limit less what is mapped already and
// a reserve for threads) or "the control group's memory limit", the
// smallest of them, read once per process (a data file and every refused
// size ask).
func Total() (uint64, string) { return totalOnce() }

var totalOnce = sync.OnceValues(total)

// MaxElements is the number of float64 values that fit in half of the
// memory this process may use (Total: the machine's, or a smaller
// address-space or control-group limit): the largest single container
// (or tape) the runtime accepts. It is 0 when the memory is unknown (no limit). The memory is
// read once per process (declarations in loops ask at every execution).
func MaxElements() int64 { return maxElements() }

var maxElements = sync.OnceValue(func() int64 {
	total, _ := Total()
	if total == 0 {
		return 0
	}
	return int64(total / 2 / 8)
})

// Exceeds returns the number of float64 values of a container of the given
// sizes and whether it is more than MaxElements (never when the memory is
// unknown).
func Exceeds(dims ...int) (float64, bool) {
	n := 1.0
	for _, k := range dims {
		n *= float64(k)
	}
	limit := MaxElements()
	return n, limit > 0 && n > float64(limit)
}

// Elements describes n float64 values: "2.5e+09 elements (18.6 GiB)".
func Elements(n float64) string {
	return fmt.Sprintf("%.4g elements (%s)", n, Bytes(8*n))
}

// Beyond is the end of the messages that refuse a size: "more than half
// of this machine's memory (23.5 GiB)", or of the limit that is smaller.
func Beyond() string {
	return "more than half of " + Source()
}

// Source names the memory Total reports and its size: "this machine's
// memory (23.5 GiB)", or the smaller limit that applies.
func Source() string {
	total, source := Total()
	return source + " (" + Bytes(float64(total)) + ")"
}

// Bytes renders a number of bytes with a binary unit: "16 GiB".
func Bytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u := 0
	for n >= 1024 && u < len(units)-1 {
		n /= 1024
		u++
	}
	prec := 1
	if n >= 100 || u == 0 {
		prec = 0
	}
	return strconv.FormatFloat(n, 'f', prec, 64) + " " + units[u]
}
