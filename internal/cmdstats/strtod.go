package cmdstats

import (
	"math"
	"strconv"
	"strings"
)

// string2d reads a number as Redis's string2d does: the whole string as
// C's strtod reads it (decimal or hexadecimal, with an optional exponent,
// or inf/infinity), with no leading space, not NaN, and neither
// overflowing nor underflowing to zero.
func string2d(s string) (float64, bool) {
	if s == "" || strings.ContainsRune(s, '_') {
		return 0, false // Go's syntax allows digit separators, strtod not
	}
	body := s
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	if strings.EqualFold(body, "inf") || strings.EqualFold(body, "infinity") {
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	hex := len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	if hex && !strings.ContainsAny(body, "pP") {
		s += "p0" // strtod's binary exponent is optional, Go's is not
	}
	if !hex && strings.ContainsAny(body, "nNiIxXpP") {
		return 0, false // nan, or letters Go reads and strtod does not
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false // syntax, or ERANGE on overflow
	}
	if f == 0 && strings.ContainsAny(mantissa(body, hex), "123456789abcdefABCDEF") {
		return 0, false // ERANGE on underflow to zero
	}
	return f, true
}

// mantissa is body without its exponent.
func mantissa(body string, hex bool) string {
	exp := "eE"
	if hex {
		body, exp = body[2:], "pP"
	}
	if i := strings.IndexAny(body, exp); i >= 0 {
		return body[:i]
	}
	return body
}
