package engine

import (
	"math/big"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// Numbers as Redis reads and writes them in string values.
//
// Integers follow Redis's string2ll (resp.ParseInt): optional '-', no '+',
// no leading zeros, no spaces, at most 20 bytes, fitting an int64.
//
// INCRBYFLOAT computes in C's long double, which on the x86-64 Linux build
// that Redis ships is the x87 80-bit extended format: a 64-bit significand
// and a 15-bit exponent. Its replies ("5011.10000000000000009") show that
// precision, so float64 cannot reproduce them. ldouble emulates the format
// with math/big: every value is rounded exactly once, to nearest-even, onto
// the extended grid (normal and subnormal), which is what strtold and the
// x87 FPU do. Formatting follows Redis's ld2string in its "human" mode:
// printf("%.17Lf") with trailing zeros (and a trailing '.') removed, and
// "-0" written as "0".

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: string2ld refuses
// inputs of this length or longer.
const maxLongDoubleChars = 5 * 1024

// Limits of the x87 extended format, as powers of two: a finite value is
// q·2^e with q < 2^64 and e ≥ ldMinExp; it overflows at 2^ldMaxExp.
const (
	ldMantBits = 64
	ldMinExp   = -16445 // exponent of the smallest subnormal, 2^-16445
	ldMaxExp   = 16384  // 2^16384 is the first value out of range
)

// isRedisInt reports whether b is what Redis would store with the "int"
// encoding: a canonical 64-bit integer of at most 20 bytes.
func isRedisInt(b []byte) bool {
	_, ok := resp.ParseInt(b)
	return ok
}

// stringEncoding is the encoding Redis's tryObjectEncoding gives a string
// value set from a client argument (SET, MSET, APPEND on a new key...).
func stringEncoding(b []byte) Encoding {
	switch {
	case len(b) <= 20 && isRedisInt(b):
		return EncInt
	case len(b) <= embstrMax:
		return EncEmbstr
	}
	return EncRaw
}

// createdEncoding is the encoding of a string Redis builds itself with
// createStringObject (INCRBYFLOAT results): embstr or raw by length, never
// int.
func createdEncoding(b []byte) Encoding {
	if len(b) <= embstrMax {
		return EncEmbstr
	}
	return EncRaw
}

// embstrMax is OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const embstrMax = 44

// ldouble is an x87 extended-precision value: a finite big.Float of 64-bit
// precision on the extended grid, or an infinity.
type ldouble struct {
	f big.Float
}

func newLD() *ldouble {
	d := &ldouble{}
	d.f.SetPrec(ldMantBits).SetMode(big.ToNearestEven)
	return d
}

// IsInf reports whether d is an infinity.
func (d *ldouble) IsInf() bool { return d.f.IsInf() }

// parseLongDouble parses b as Redis's string2ld does: strtold must consume
// the whole input, the input must not start with white space, NaN is
// refused, and so is a result strtold reports as out of range (overflow to
// infinity, or a nonzero input that underflows to zero). "inf" and
// "infinity" are accepted, as strtold accepts them.
func parseLongDouble(b []byte) (*ldouble, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return nil, false
	}
	p := b
	neg := false
	if p[0] == '+' || p[0] == '-' {
		neg = p[0] == '-'
		p = p[1:]
	}
	// A number is read whole, NULs included (string2ld rejects a value
	// with bytes after strtold's end), unlike option keywords.
	if len(cString(p)) == len(p) && (equalFoldASCII(p, "inf") || equalFoldASCII(p, "infinity")) {
		d := newLD()
		d.f.SetInf(neg)
		return d, true
	}
	if len(p) > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
		(isHexDigit(p[2]) || (p[2] == '.' && len(p) > 3 && isHexDigit(p[3]))) {
		return parseHexLD(p[2:], neg)
	}
	return parseDecLD(p, neg)
}

// maxExpDigitsValue caps a parsed exponent: anything beyond it is out of
// every range we test, so saturating keeps the arithmetic small.
const maxExpDigitsValue = 1 << 30

// scanDigits returns the length of the leading run of digits of b (hex
// digits when hex is set).
func scanDigits(b []byte, hex bool) int {
	n := 0
	for n < len(b) && (isDecDigit(b[n]) || (hex && isHexDigit(b[n]))) {
		n++
	}
	return n
}

// scanExponent parses the optional exponent part ("e-12", "p+3") at the
// start of b. It returns the exponent and the bytes it used; an exponent
// letter without digits is not consumed, as strtold leaves it.
func scanExponent(b []byte, letter byte) (exp int64, used int) {
	if len(b) == 0 || (b[0]|0x20) != letter {
		return 0, 0
	}
	i := 1
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	n := scanDigits(b[i:], false)
	if n == 0 {
		return 0, 0
	}
	for _, c := range b[i : i+n] {
		if exp < maxExpDigitsValue {
			exp = exp*10 + int64(c-'0')
		}
	}
	if neg {
		exp = -exp
	}
	return exp, i + n
}

// parseDecLD parses an unsigned decimal float: digits with an optional
// point and an optional exponent.
func parseDecLD(p []byte, neg bool) (*ldouble, bool) {
	intLen := scanDigits(p, false)
	intPart := p[:intLen]
	rest := p[intLen:]
	var frac []byte
	if len(rest) > 0 && rest[0] == '.' {
		n := scanDigits(rest[1:], false)
		frac = rest[1 : 1+n]
		rest = rest[1+n:]
	}
	if len(intPart)+len(frac) == 0 {
		return nil, false
	}
	exp, used := scanExponent(rest, 'e')
	if used != len(rest) {
		return nil, false
	}
	// Significant digits, without leading or trailing zeros.
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(digits, intPart...)
	digits = append(digits, frac...)
	exp10 := exp - int64(len(frac))
	i := 0
	for i < len(digits) && digits[i] == '0' {
		i++
	}
	digits = digits[i:]
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp10++
	}
	if len(digits) == 0 {
		return zeroLD(neg), true
	}
	// The value lies in [10^(n-1+exp10), 10^(n+exp10)). The extended range
	// ends near 1.19e4932 and its smallest subnormal is about 3.6e-4951,
	// so anything clearly outside is refused before doing big arithmetic.
	n := int64(len(digits))
	if n-1+exp10 > 4933 || n+exp10 < -4952 {
		return nil, false
	}
	num, _ := new(big.Int).SetString(string(digits), 10)
	den := big.NewInt(1)
	if exp10 >= 0 {
		num.Mul(num, pow10(exp10))
	} else {
		den = pow10(-exp10)
	}
	return roundLD(num, den, neg)
}

// parseHexLD parses the part of a hex float after "0x": hex digits with an
// optional point and an optional binary exponent ("p-3").
func parseHexLD(p []byte, neg bool) (*ldouble, bool) {
	intLen := scanDigits(p, true)
	intPart := p[:intLen]
	rest := p[intLen:]
	var frac []byte
	if len(rest) > 0 && rest[0] == '.' {
		n := scanDigits(rest[1:], true)
		frac = rest[1 : 1+n]
		rest = rest[1+n:]
	}
	exp, used := scanExponent(rest, 'p')
	if used != len(rest) {
		return nil, false
	}
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(digits, intPart...)
	digits = append(digits, frac...)
	exp2 := exp - 4*int64(len(frac))
	num, _ := new(big.Int).SetString(string(digits), 16)
	if num.Sign() == 0 {
		return zeroLD(neg), true
	}
	bits := int64(num.BitLen())
	if bits-1+exp2 >= ldMaxExp || bits+exp2 < ldMinExp-1 {
		return nil, false
	}
	den := big.NewInt(1)
	if exp2 >= 0 {
		num.Lsh(num, uint(exp2))
	} else {
		den.Lsh(den, uint(-exp2))
	}
	return roundLD(num, den, neg)
}

func zeroLD(neg bool) *ldouble {
	d := newLD()
	if neg {
		d.f.Neg(&d.f)
	}
	return d
}

func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// roundLD rounds the exact positive ratio num/den to the nearest extended
// value (ties to even), with subnormals on the 2^-16445 grid. It fails
// where strtold reports ERANGE with an infinite or zero result.
func roundLD(num, den *big.Int, neg bool) (*ldouble, bool) {
	// Pick e so that q = num / (den·2^e) has 64 bits.
	e := int64(num.BitLen()-den.BitLen()) - ldMantBits
	q, r, d := scaledQuo(num, den, e)
	if q.BitLen() > ldMantBits {
		e++
		q, r, d = scaledQuo(num, den, e)
	}
	if e < ldMinExp {
		e = ldMinExp
		q, r, d = scaledQuo(num, den, e)
	}
	// Round half to even.
	r.Lsh(r, 1)
	if c := r.Cmp(d); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
		if q.BitLen() > ldMantBits {
			q.Rsh(q, 1)
			e++
		}
	}
	if q.Sign() == 0 || e+int64(q.BitLen()) > ldMaxExp {
		return nil, false
	}
	ld := newLD()
	ld.f.SetInt(q)
	ld.f.SetMantExp(&ld.f, int(e))
	if neg {
		ld.f.Neg(&ld.f)
	}
	return ld, true
}

// scaledQuo divides num by den·2^e: it returns the quotient q, the
// remainder r and the divisor d actually used (num·2^-e and den may both
// have been shifted so that everything stays an integer).
func scaledQuo(num, den *big.Int, e int64) (q, r, d *big.Int) {
	n := new(big.Int).Set(num)
	d = new(big.Int).Set(den)
	if e >= 0 {
		d.Lsh(d, uint(e))
	} else {
		n.Lsh(n, uint(-e))
	}
	q, r = new(big.Int).QuoRem(n, d, new(big.Int))
	return q, r, d
}

// addLD returns a+b rounded to extended precision, and false when the sum
// is infinite or NaN (either operand infinite, or an overflow), which
// INCRBYFLOAT refuses.
//
// big.Float rounds the sum to 64 bits correctly; sums in the subnormal
// range need no extra rounding because both operands are multiples of
// 2^-16445, so such a sum is exact.
func addLD(a, b *ldouble) (*ldouble, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	z := newLD()
	z.f.Add(&a.f, &b.f)
	if z.f.Sign() != 0 && z.f.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z, true
}

// appendLongDouble formats d like Redis's ld2string in human mode:
// "%.17Lf" without trailing zeros, "-0" as "0". d must be finite.
func appendLongDouble(dst []byte, d *ldouble) []byte {
	start := len(dst)
	dst = d.f.Append(dst, 'f', 17)
	// %.17Lf always prints a point: drop trailing zeros, then the point.
	end := len(dst)
	for dst[end-1] == '0' {
		end--
	}
	if dst[end-1] == '.' {
		end--
	}
	dst = dst[:end]
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// ldFromInt converts an integer exactly (every int64 fits 64 bits).
func ldFromInt(v int64) *ldouble {
	d := newLD()
	d.f.SetInt64(v)
	return d
}

// appendInt formats v in decimal.
func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

func isDecDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDecDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// equalFoldASCII reports whether the argument b is the keyword s (lower
// case), ignoring ASCII case, as Redis's strcasecmp sees it: b is read as a
// C string, up to its first NUL byte, so "NX\x00junk" is "nx". It does not
// allocate.
func equalFoldASCII(b []byte, s string) bool {
	b = cString(b)
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
