package stancsv

import (
	"math"
	"strconv"
)

// DefaultSigFigs is CmdStan's default output precision.
const DefaultSigFigs = 6

// MaxSigFigs is the largest precision accepted (CmdStan's limit).
const MaxSigFigs = 18

// AppendValue appends v formatted as a C++ ostream with
// std::setprecision(sigFigs) in the default float format: like C's %.*g
// (trailing zeros removed, exponent with at least two digits), and "nan",
// "inf", "-inf" for non-finite values. sigFigs <= 0 means DefaultSigFigs.
func AppendValue(dst []byte, v float64, sigFigs int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "nan"...)
	case math.IsInf(v, 1):
		return append(dst, "inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-inf"...)
	}
	if sigFigs <= 0 {
		sigFigs = DefaultSigFigs
	}
	return strconv.AppendFloat(dst, v, 'g', sigFigs, 64)
}

// FormatValue returns AppendValue(nil, v, sigFigs) as a string.
func FormatValue(v float64, sigFigs int) string {
	return string(AppendValue(nil, v, sigFigs))
}
