package lang

import (
	"errors"
	"fmt"
	"math"
)

// IntArith computes a op b for the int operators + - * / %/% and %
// (division truncates, as in Stan). Stan's ints are 32-bit: a result
// outside their range is an error, as is a division by zero. Every
// evaluation of int arithmetic (constant folding, the interpreter, plans,
// lifted loops) goes through it.
func IntArith(op string, a, b int) (int, error) {
	var r int
	switch op {
	case "+":
		r = a + b
	case "-":
		r = a - b
	case "*":
		r = a * b
	case "/", "%/%", "%":
		if b == 0 {
			return 0, errors.New("integer division by zero")
		}
		if op == "%" {
			r = a % b
		} else {
			r = a / b
		}
	default:
		return 0, fmt.Errorf("%s is not an int operator", op)
	}
	if r < math.MinInt32 || r > math.MaxInt32 {
		return 0, fmt.Errorf("integer overflow: %d %s %d is %d, outside the range of int (32-bit: %d to %d)", a, op, b, r, math.MinInt32, math.MaxInt32)
	}
	return r, nil
}

// IntNeg returns −a for an int, or the overflow error of −(−2^31).
func IntNeg(a int) (int, error) {
	if -a > math.MaxInt32 {
		return 0, fmt.Errorf("integer overflow: -(%d) is outside the range of int (32-bit: %d to %d)", a, math.MinInt32, math.MaxInt32)
	}
	return -a, nil
}

// IsInt32 reports whether n is within the range of Stan's 32-bit ints.
func IsInt32(n int) bool { return n >= math.MinInt32 && n <= math.MaxInt32 }

// IntRangeError is the error of an int result n of what (a function's
// name, an operation) outside the range of Stan's ints.
func IntRangeError(what string, n float64) error {
	return fmt.Errorf("integer overflow: %s is %.17g, outside the range of int (32-bit: %d to %d)", what, n, math.MinInt32, math.MaxInt32)
}
