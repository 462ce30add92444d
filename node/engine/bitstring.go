package engine

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// A string value lives in one of two forms, and every strings command
// handles both through the Entry methods below:
//   - Entry.Str, a plain []byte: what SET, APPEND, INCR... store, and any
//     string up to bitmapMinLen bytes;
//   - Entry.Val holding a *Bitmap (Str nil): a string that SETBIT,
//     SETRANGE, BITOP or BITFIELD grew past bitmapMinLen bytes, so that a
//     write at a huge offset allocates only the pages it touches.
//
// The choice is made when a bit or range command grows a string: growing
// is what can create megabytes of zeros, while a value a client sent in
// full (SET, APPEND of a plain string) is dense by nature and stays plain.
// Once a Bitmap, a value stays one until a command replaces it whole
// (SET, GETSET, INCR...). Its OBJECT ENCODING is "raw", as Redis's.
//
// Code that needs the value as contiguous bytes (parsing an integer, an
// HLL) calls StrBytes, which materializes a Bitmap: check StrLen first
// when the value could be huge.

// bitmapMinLen is the length past which a growing string becomes a
// Bitmap: one page, below which pages would only add overhead.
const bitmapMinLen = PageBytes

// Bits returns the string value's Bitmap, or nil when it is plain bytes.
func (e *Entry) Bits() *Bitmap {
	bm, _ := e.Val.(*Bitmap)
	return bm
}

// StrLen is the string value's length in bytes.
func (e *Entry) StrLen() int64 {
	if bm := e.Bits(); bm != nil {
		return bm.Len()
	}
	return int64(len(e.Str))
}

// StrBytes returns the value as contiguous bytes: Str itself (do not
// keep or change it), or a new copy of a Bitmap's whole length.
func (e *Entry) StrBytes() []byte {
	if bm := e.Bits(); bm != nil {
		return bm.AppendTo(nil, 0, bm.Len())
	}
	return e.Str
}

// SetStrBytes makes the value plain bytes b (kept, not copied), dropping
// any Bitmap.
func (e *Entry) SetStrBytes(b []byte) {
	e.Str, e.Val = b, nil
}

// ReadStr fills p with the value's bytes from byte offset off; bytes past
// the end read as zero.
func (e *Entry) ReadStr(p []byte, off int64) {
	if bm := e.Bits(); bm != nil {
		bm.ReadAt(p, off)
		return
	}
	n := 0
	if off < int64(len(e.Str)) {
		n = copy(p, e.Str[off:])
	}
	clear(p[n:])
}

// AppendStr appends the value's bytes [start, end) to dst (end is cut to
// the length).
func (e *Entry) AppendStr(dst []byte, start, end int64) []byte {
	if bm := e.Bits(); bm != nil {
		return bm.AppendTo(dst, start, min(end, bm.Len()))
	}
	end = min(end, int64(len(e.Str)))
	if start >= end {
		return dst
	}
	return append(dst, e.Str[start:end]...)
}

// growTo prepares the value to be at least n bytes long: a plain value
// that would pass bitmapMinLen becomes a Bitmap, a plain one that stays
// small is extended with zeros. It returns the Bitmap, or nil when the
// value is (still) plain.
func (e *Entry) growTo(n int64) *Bitmap {
	if bm := e.Bits(); bm != nil {
		bm.Grow(n)
		return bm
	}
	if n > bitmapMinLen && n > int64(len(e.Str)) {
		bm := BitmapFromBytes(e.Str)
		bm.Grow(n)
		e.Str, e.Val = nil, bm
		return bm
	}
	e.Str = growZero(e.Str, int(n))
	return nil
}

// GrowStr extends the value to n bytes with zeros (never shrinks it).
func (e *Entry) GrowStr(n int64) { e.growTo(n) }

// WriteStr writes p at byte offset off, growing the value as needed. The
// caller has checked the 512 MB limit.
func (e *Entry) WriteStr(p []byte, off int64) {
	end := off + int64(len(p))
	if bm := e.growTo(end); bm != nil {
		bm.WriteAt(p, off)
		return
	}
	copy(e.Str[off:], p)
}

// StrBit returns the bit at offset off (false past the end).
func (e *Entry) StrBit(off int64) bool {
	if bm := e.Bits(); bm != nil {
		return bm.Bit(off)
	}
	i := off >> 3
	return i < int64(len(e.Str)) && e.Str[i]&(0x80>>(off&7)) != 0
}

// SetStrBit sets the bit at offset off to v, growing the value to cover
// it, and returns the old bit.
func (e *Entry) SetStrBit(off int64, v bool) bool {
	if bm := e.growTo(off>>3 + 1); bm != nil {
		return bm.SetBit(off, v)
	}
	i, m := off>>3, byte(0x80)>>(off&7)
	old := e.Str[i]&m != 0
	if v {
		e.Str[i] |= m
	} else {
		e.Str[i] &^= m
	}
	return old
}

// writeStrBulk writes the value's bytes [start, end] (inclusive, already
// clamped to the value) as a bulk string, straight into the reply buffer.
func writeStrBulk(w *resp.Writer, e *Entry, start, end int64) {
	if e.Bits() == nil {
		if start > end {
			w.Bulk(nil)
			return
		}
		w.Bulk(e.Str[start : end+1])
		return
	}
	n := max(end-start+1, 0)
	w.B = append(w.B, '$')
	w.B = strconv.AppendInt(w.B, n, 10)
	w.B = append(w.B, '\r', '\n')
	w.B = e.AppendStr(w.B, start, end+1)
	w.B = append(w.B, '\r', '\n')
}

// writeStrValue writes the whole value as a bulk string.
func writeStrValue(w *resp.Writer, e *Entry) {
	if e.Bits() == nil {
		w.Bulk(e.Str)
		return
	}
	writeStrBulk(w, e, 0, e.StrLen()-1)
}

// smallStrMax is longer than any number INCR or INCRBYFLOAT accepts
// (Redis refuses floats longer than 5 KB unparsed).
const smallStrMax = 5*1024 + 1

// smallStr returns the value's bytes for number parsing: the plain bytes,
// or, for a Bitmap (always longer than any valid number), a prefix just
// long enough to be refused, so parsing never materializes megabytes.
func smallStr(e *Entry) []byte {
	bm := e.Bits()
	if bm == nil {
		return e.Str
	}
	return bm.AppendTo(nil, 0, min(bm.Len(), smallStrMax))
}
