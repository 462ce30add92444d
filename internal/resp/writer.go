package resp

import (
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/redcon"
)

// Writer builds replies in a buffer for one connection. Proto is 2 or 3 and
// decides how the typed helpers (Null, Map, Set, Double, ...) encode, so a
// command writes one reply shape and both protocols come out right.
type Writer struct {
	B     []byte
	Proto int
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
func (w *Writer) Error(msg string) { w.B = redcon.AppendError(w.B, msg) }

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

// appendG17 reproduces C's printf("%.17g").
func appendG17(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	exp := int(math.Floor(math.Log10(math.Abs(f))))
	// Log10 can be off by one near powers of ten; let %e decide.
	e := strconv.FormatFloat(f, 'e', 16, 64)
	if i := strings.LastIndexByte(e, 'e'); i >= 0 {
		if x, err := strconv.Atoi(e[i+1:]); err == nil {
			exp = x
		}
	}
	if exp < -4 || exp >= 17 {
		mant, ex, _ := strings.Cut(e, "e")
		mant = trimZeros(mant)
		dst = append(dst, mant...)
		dst = append(dst, 'e')
		if ex[0] == '-' {
			dst = append(dst, '-')
			ex = ex[1:]
		} else {
			dst = append(dst, '+')
			if ex[0] == '+' {
				ex = ex[1:]
			}
		}
		if len(ex) < 2 {
			dst = append(dst, '0')
		}
		return append(dst, ex...)
	}
	s := strconv.FormatFloat(f, 'f', 16-exp, 64)
	return append(dst, trimZeros(s)...)
}

func trimZeros(s string) string {
	if strings.IndexByte(s, '.') < 0 {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func appendHeader(b []byte, c byte, n int) []byte {
	b = append(b, c)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}
