package engine

import (
	"github.com/shardgate/shardgate/internal/resp"
)

// The bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS and BITOP, as
// Redis 7.0's bitops.c answers them, over string values in either form
// (plain bytes or a Bitmap, see bitstring.go). Argument checks come in
// Redis 7.0's order, which differs per command: SETBIT/GETBIT check their
// arguments before the key, BITCOUNT and BITPOS look the key up first (a
// missing key answers 0 or -1 whatever the range arguments are).

func registerBits(h map[string]Handler) {
	h["setbit"] = cmdSetbit
	h["getbit"] = cmdGetbit
	h["bitcount"] = cmdBitcount
	h["bitpos"] = cmdBitpos
	h["bitop"] = cmdBitop
}

// maxBitOffset is the largest bit offset: the last bit of a 512 MB string.
const maxBitOffset = maxStringLen*8 - 1

// ParseBitOffset parses a bit offset argument as Redis's
// getBitOffsetFromArgument does: a strict decimal integer from 0 to
// 4294967295 (the bits of a 512 MB string). BITFIELD uses it for its plain
// offsets; on failure the reply is resp.ErrBitOffset.
func ParseBitOffset(arg []byte) (int64, bool) {
	v, ok := resp.ParseInt(arg)
	if !ok || v < 0 || v > maxBitOffset {
		return 0, false
	}
	return v, true
}

// cmdSetbit sets or clears one bit, creating or zero-growing the string.
// It counts as a change only when the string grew or the bit flipped, but
// any existing value becomes "raw" (Redis unshares it first).
func cmdSetbit(c *Ctx) {
	key := c.Args[1]
	off, ok := ParseBitOffset(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrBitOffset)
		return
	}
	v, ok := resp.ParseInt(c.Args[3])
	if !ok || v&^1 != 0 {
		c.W.Error(resp.ErrBitValue)
		return
	}
	e := c.Lookup(key)
	if e != nil && e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	if e == nil {
		e = &Entry{Kind: KindString}
		c.KS.Set(c.Shard, key, e)
	}
	grows := off>>3 >= e.StrLen()
	e.Enc = EncRaw
	old := e.SetStrBit(off, v == 1)
	if grows || old != (v == 1) {
		changed(c, key)
	}
	c.W.Int(b2i(old))
}

func cmdGetbit(c *Ctx) {
	off, ok := ParseBitOffset(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrBitOffset)
		return
	}
	e := lookupRead(c, c.Args[1])
	switch {
	case e == nil:
		c.W.Int(0)
	case e.Kind != KindString:
		c.W.Error(resp.ErrWrongType)
	default:
		c.W.Int(b2i(e.StrBit(off)))
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// bitRange is a parsed [start end [BYTE|BIT]] of BITCOUNT or BITPOS.
type bitRange struct {
	start, end int64
	hasEnd     bool // an end was given (BITPOS may omit it)
	isBit      bool
	// negEmpty: BITCOUNT's two negative indexes in the wrong order, which
	// Redis 7.0 answers with 0 before it even reads the unit.
	negEmpty bool
}

// parseRangeUnit parses BYTE or BIT (compared as a C string, as Redis's
// strcasecmp does).
func parseRangeUnit(arg []byte) (isBit, ok bool) {
	switch u := cString(arg); {
	case equalFoldASCII(u, "bit"):
		return true, true
	case equalFoldASCII(u, "byte"):
		return false, true
	}
	return false, false
}

// parseBitcountArgs parses BITCOUNT's arguments after the key: none, or
// start end [unit]. It returns the error reply text, or "".
func parseBitcountArgs(args [][]byte) (r bitRange, whole bool, errText string) {
	switch len(args) {
	case 0:
		return r, true, ""
	case 2, 3:
	default:
		return r, false, resp.ErrSyntax
	}
	var ok1, ok2 bool
	r.start, ok1 = resp.ParseInt(args[0])
	if !ok1 {
		return r, false, resp.ErrNotInteger
	}
	r.end, ok2 = resp.ParseInt(args[1])
	if !ok2 {
		return r, false, resp.ErrNotInteger
	}
	r.hasEnd = true
	if r.start < 0 && r.end < 0 && r.start > r.end {
		r.negEmpty = true
		return r, false, ""
	}
	if len(args) == 3 {
		var ok bool
		if r.isBit, ok = parseRangeUnit(args[2]); !ok {
			return r, false, resp.ErrSyntax
		}
	}
	return r, false, ""
}

// parseBitposArgs parses BITPOS's arguments after the bit: none, start,
// start end, or start end unit; Redis reads start, then the unit, then
// the end.
func parseBitposArgs(args [][]byte) (r bitRange, whole bool, errText string) {
	switch len(args) {
	case 0:
		return r, true, ""
	case 1, 2, 3:
	default:
		return r, false, resp.ErrSyntax
	}
	var ok bool
	if r.start, ok = resp.ParseInt(args[0]); !ok {
		return r, false, resp.ErrNotInteger
	}
	if len(args) == 3 {
		if r.isBit, ok = parseRangeUnit(args[2]); !ok {
			return r, false, resp.ErrSyntax
		}
	}
	if len(args) >= 2 {
		if r.end, ok = resp.ParseInt(args[1]); !ok {
			return r, false, resp.ErrNotInteger
		}
		r.hasEnd = true
	}
	return r, false, ""
}

// bits turns the range into an inclusive bit range over a string of n
// bytes, with Redis's rules: negative indexes count from the end, both
// ends are clamped into the string, and ok=false means an empty range.
func (r bitRange) bits(n int64) (from, to int64, ok bool) {
	total := n
	if r.isBit {
		total = n * 8
	}
	start, end := r.start, r.end
	if !r.hasEnd {
		end = total - 1
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, total-1)
	if start > end {
		return 0, 0, false
	}
	if r.isBit {
		return start, end, true
	}
	return start * 8, end*8 + 7, true
}

// cmdBitcount counts set bits in the whole string or a range.
func cmdBitcount(c *Ctx) {
	e := lookupRead(c, c.Args[1])
	if e == nil {
		c.W.Int(0)
		return
	}
	if e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	r, whole, errText := parseBitcountArgs(c.Args[2:])
	if errText != "" {
		c.W.Error(errText)
		return
	}
	n := e.StrLen()
	if whole {
		c.W.Int(strCount(e, 0, n*8))
		return
	}
	if r.negEmpty {
		c.W.Int(0)
		return
	}
	from, to, ok := r.bits(n)
	if !ok {
		c.W.Int(0)
		return
	}
	c.W.Int(strCount(e, from, to+1))
}

// cmdBitpos finds the first bit set to 0 or 1. A missing key is all
// zeros (0 for a clear bit, -1 for a set one). Looking for a clear bit
// in a string of ones without an explicit end answers the first bit past
// the string; with an end, -1.
func cmdBitpos(c *Ctx) {
	bit, ok := resp.ParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	if bit != 0 && bit != 1 {
		c.W.Error(resp.ErrBitposBit)
		return
	}
	e := lookupRead(c, c.Args[1])
	if e == nil {
		c.W.Int(-bit) // no set bit (-1); the first clear bit is 0
		return
	}
	if e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	r, whole, errText := parseBitposArgs(c.Args[3:])
	if errText != "" {
		c.W.Error(errText)
		return
	}
	if whole {
		r = bitRange{start: 0}
	}
	from, to, ok := r.bits(e.StrLen())
	if !ok {
		c.W.Int(-1)
		return
	}
	pos := strNext(e, from, to+1, bit == 1)
	if pos < 0 && bit == 0 && !r.hasEnd {
		pos = to + 1
	}
	c.W.Int(pos)
}

// strCount counts set bits of a string value in the bit range [from, to).
func strCount(e *Entry, from, to int64) int64 {
	if bm := e.Bits(); bm != nil {
		return bm.Count(from, to)
	}
	to = min(to, int64(len(e.Str))*8)
	if from >= to {
		return 0
	}
	return int64(countBits(e.Str, int(from), int(to)))
}

// strNext finds the first bit equal to v in [from, to) of a string value
// (which covers it), or -1.
func strNext(e *Entry, from, to int64, v bool) int64 {
	if bm := e.Bits(); bm != nil {
		if v {
			return bm.NextSet(from, to)
		}
		return bm.NextClear(from, to)
	}
	return int64(findBit(e.Str, int(from), int(to), !v))
}
