package data

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseCell parses a CSV cell or a --set number: a decimal number with an
// optional sign, integer part, fraction and exponent, or one of the words
// nan, inf, infinity in any letter case with an optional sign. It reports
// whether the text was an integer literal. The error does not say where the
// text came from; the caller adds that.
func parseCell(s string) (float64, bool, error) {
	if f, ok := parseSpecialWord(s); ok {
		return f, false, nil
	}
	isInt, ok := scanDecimal(s)
	if !ok {
		return 0, false, notANumber(s)
	}
	f, err := parseFloat(s)
	if err == errTooLarge {
		return 0, false, fmt.Errorf("%s %v", quoteText(s), err)
	}
	if err != nil {
		return 0, false, notANumber(s)
	}
	return f, isInt, nil
}

var errTooLarge = errors.New("is too large for a 64-bit float")

// parseFloat converts text already checked by a scanner. It returns
// errTooLarge for a number beyond the float64 range; underflow is not an
// error.
func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && math.IsInf(f, 0) {
		return 0, errTooLarge
	}
	return f, err
}

func notANumber(s string) error {
	switch strings.ToUpper(s) {
	case "NA", "N/A", "NULL", "NONE", "MISSING", ".", "?":
		return fmt.Errorf("%s is not a number (missing values are not allowed)", quoteText(s))
	}
	return fmt.Errorf("%s is not a number", quoteText(s))
}

// quoteText quotes s for an error message, shortening long text.
func quoteText(s string) string {
	if short, cut := cutText(s); cut {
		return strconv.Quote(short) + "…"
	}
	return strconv.Quote(s)
}

// shorten shortens long text for an error message.
func shorten(s string) string {
	if short, cut := cutText(s); cut {
		return short + "…"
	}
	return s
}

func cutText(s string) (string, bool) {
	const max = 40
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// parseSpecialWord recognizes nan, inf and infinity in any letter case, with
// an optional sign.
func parseSpecialWord(s string) (float64, bool) {
	sign := 1.0
	w := s
	if len(w) > 0 && (w[0] == '+' || w[0] == '-') {
		if w[0] == '-' {
			sign = -1
		}
		w = w[1:]
	}
	switch {
	case strings.EqualFold(w, "nan"):
		return math.NaN(), true
	case strings.EqualFold(w, "inf"), strings.EqualFold(w, "infinity"):
		return math.Inf(int(sign)), true
	}
	return 0, false
}

// scanDecimal checks that s is [+-]digits[.digits][(e|E)[+-]digits] with at
// least one digit before the exponent, and reports whether it has neither a
// fraction nor an exponent.
func scanDecimal(s string) (isInt, ok bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	digits := i - start
	isInt = true
	if i < len(s) && s[i] == '.' {
		isInt = false
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		digits += i - start
	}
	if digits == 0 {
		return false, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false, false
		}
	}
	return isInt, i == len(s)
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }
