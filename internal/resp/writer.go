package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer builds replies in a buffer for one connection. Proto is 2 or 3 and
// decides how the typed helpers (Null, Map, Set, Double, ...) encode, so a
// command writes one reply shape and both protocols come out right.
type Writer struct {
	B     []byte
	Proto int
	// OnError, when set, is told the text of every error reply, wherever
	// it is written (dispatcher, handler, inside EXEC), so that the server
	// can keep INFO's total_error_replies and errorstats exact.
	OnError func(msg string)
}

// NewWriter returns a RESP2 writer.
func NewWriter() *Writer { return &Writer{Proto: 2} }

// Len is the number of buffered bytes; Truncate cuts back to such a length
// (used to drop a half-written reply when a handler fails).
func (w *Writer) Len() int       { return len(w.B) }
func (w *Writer) Truncate(n int) { w.B = w.B[:n] }

// Reset empties the buffer, dropping it if it grew large.
func (w *Writer) Reset() {
	if cap(w.B) > 1<<20 {
		w.B = nil
		return
	}
	w.B = w.B[:0]
}

// OK writes +OK.
func (w *Writer) OK() { w.B = append(w.B, "+OK\r\n"...) }

// Simple writes a simple string (+s).
func (w *Writer) Simple(s string) { w.B = redcon.AppendString(w.B, s) }

// Error writes an error reply; msg carries its own code ("ERR ...").
func (w *Writer) Error(msg string) {
	if w.OnError != nil {
		w.OnError(msg)
	}
	w.B = redcon.AppendError(w.B, msg)
}

// Int writes an integer.
func (w *Writer) Int(n int64) { w.B = redcon.AppendInt(w.B, n) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) { w.B = redcon.AppendBulk(w.B, b) }

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }

// BulkInt writes n as a bulk string.
func (w *Writer) BulkInt(n int64) {
	var tmp [24]byte
	w.B = redcon.AppendBulk(w.B, strconv.AppendInt(tmp[:0], n, 10))
}

// Null writes the null bulk string: $-1 in RESP2, _ in RESP3.
func (w *Writer) Null() {
	if w.Proto >= 3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "$-1\r\n"...)
}

// NullArray writes the null array: *-1 in RESP2, _ in RESP3.
func (w *Writer) NullArray() {
	if w.Proto >= 3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "*-1\r\n"...)
}

// Array writes an array header for n elements.
func (w *Writer) Array(n int) { w.B = redcon.AppendArray(w.B, n) }

// Map writes a map header for n key/value pairs (a flat array of 2n in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto >= 3 {
		w.B = appendHeader(w.B, '%', n)
		return
	}
	w.B = redcon.AppendArray(w.B, 2*n)
}

// Set writes a set header for n elements (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto >= 3 {
		w.B = appendHeader(w.B, '~', n)
		return
	}
	w.B = redcon.AppendArray(w.B, n)
}

// Push writes a push header (RESP3 '>'; an array in RESP2).
func (w *Writer) Push(n int) {
	if w.Proto >= 3 {
		w.B = appendHeader(w.B, '>', n)
		return
	}
	w.B = redcon.AppendArray(w.B, n)
}

// Bool writes a boolean: #t/#f in RESP3, :1/:0 in RESP2.
func (w *Writer) Bool(v bool) {
	switch {
	case w.Proto >= 3 && v:
		w.B = append(w.B, "#t\r\n"...)
	case w.Proto >= 3:
		w.B = append(w.B, "#f\r\n"...)
	case v:
		w.B = append(w.B, ":1\r\n"...)
	default:
		w.B = append(w.B, ":0\r\n"...)
	}
}

// Double writes a double the way Redis 7.0's addReplyDouble does: a RESP3
// double (,<%.17g>) or, in RESP2, a bulk string of the same text.
func (w *Writer) Double(f float64) {
	var tmp [40]byte
	s := FormatDouble(tmp[:0], f)
	if w.Proto >= 3 {
		w.B = append(w.B, ',')
		w.B = append(w.B, s...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.B = redcon.AppendBulk(w.B, s)
}

// Verbatim writes a verbatim string (=len\r\ntxt:...) in RESP3 and a bulk
// string in RESP2, as Redis does for INFO, CLIENT LIST and friends.
func (w *Writer) Verbatim(s string) {
	if w.Proto >= 3 {
		w.B = appendHeader(w.B, '=', len(s)+4)
		w.B = append(w.B, "txt:"...)
		w.B = append(w.B, s...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.B = redcon.AppendBulkString(w.B, s)
}

// Raw appends already-encoded bytes.
func (w *Writer) Raw(b []byte) { w.B = append(w.B, b...) }

// FormatDouble formats f like Redis's "%.17g" double replies, with inf,
// -inf and nan spelled as Redis spells them.
func FormatDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return appendG17(dst, f)
}

// appendG17 reproduces C's printf("%.17g") without allocating. strconv
// rounds exactly (ties to even), as glibc does, and its %e spells the
// exponent with a sign and at least two digits, as C does; what %g adds
// is the choice between %e and %f and the trimming of trailing zeros.
func appendG17(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', 16, 64) // d.dddddddddddddddde±XX
	i := len(e) - 1
	for e[i] != 'e' {
		i--
	}
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	if exp < -4 || exp >= 17 {
		dst = append(dst, trimZeros(e[:i])...)
		return append(dst, e[i:]...)
	}
	return append(dst, trimZeros(strconv.AppendFloat(tmp[:0], f, 'f', 16-exp, 64))...)
}

// trimZeros drops trailing zeros after a decimal point, and the point
// itself if nothing follows it.
func trimZeros(s []byte) []byte {
	dot := false
	for _, c := range s {
		if c == '.' {
			dot = true
			break
		}
	}
	if !dot {
		return s
	}
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

func appendHeader(b []byte, c byte, n int) []byte {
	b = append(b, c)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}
