// Package sysmem reports the machine's memory, for refusing sizes that
// cannot fit before trying to allocate them.
package sysmem

import "strconv"

// MaxElements is the number of float64 values that fit in half of the
// machine's memory: the largest single container (or tape) the runtime
// accepts. It is 0 when the memory is unknown (no limit).
func MaxElements() int64 {
	total := Total()
	if total == 0 {
		return 0
	}
	return int64(total / 2 / 8)
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
