package engine

import "github.com/shardgate/shardgate/internal/resp"

// cmdAppend appends to a string, creating it when missing. A created key
// gets the encoding SET would give the argument; an appended-to value is
// always "raw" (Redis unshares it into a raw string), even when the
// argument is empty, and an empty append still counts as a change.
func cmdAppend(c *Ctx) {
	key, arg := c.Args[1], c.Args[2]
	e := c.Lookup(key)
	var n int64
	switch {
	case e == nil:
		e = storeString(c, key, nil, arg, stringEncoding(arg), false)
		n = int64(len(e.Str))
	case e.Kind != KindString:
		c.W.Error(resp.ErrWrongType)
		return
	default:
		if !lengthOK(c, e.StrLen(), int64(len(arg))) {
			return
		}
		if bm := e.Bits(); bm != nil {
			bm.WriteAt(arg, bm.Len())
		} else {
			e.Str = append(e.Str, arg...)
		}
		e.Enc = EncRaw
		n = e.StrLen()
	}
	changed(c, key)
	c.W.Int(n)
}

// lengthOK is Redis's checkStringLength: size+add must not pass
// proto-max-bulk-len (nor overflow). It replies the error when it fails.
func lengthOK(c *Ctx, size, add int64) bool {
	total := int64(uint64(size) + uint64(add))
	if total > maxStringLen || total < size || total < add {
		c.W.Error(resp.ErrStringTooLong)
		return false
	}
	return true
}

func cmdStrlen(c *Ctx) {
	e := lookupRead(c, c.Args[1])
	switch {
	case e == nil:
		c.W.Int(0)
	case e.Kind != KindString:
		c.W.Error(resp.ErrWrongType)
	default:
		c.W.Int(e.StrLen())
	}
}

// cmdGetrange replies with the bytes from start to end, both inclusive,
// negative indexes counting from the end. Redis's clamping is kept,
// including its quirks: a missing key gives an empty string (not null),
// and an end that is negative beyond the start clamps to 0, so
// GETRANGE "hello" 0 -100 is "h".
func cmdGetrange(c *Ctx) {
	start, ok1 := resp.ParseInt(c.Args[2])
	end, ok2 := resp.ParseInt(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	e := lookupRead(c, c.Args[1])
	if e == nil {
		c.W.Bulk(nil)
		return
	}
	if e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	from, to, ok := substrRange(e.StrLen(), start, end)
	if !ok {
		c.W.Bulk(nil)
		return
	}
	writeStrBulk(c.W, e, from, to)
}

// substrRange applies GETRANGE's index rules to a string of n bytes,
// returning the inclusive byte range, or ok=false for an empty result.
func substrRange(n, start, end int64) (from, to int64, ok bool) {
	if start < 0 && end < 0 && start > end {
		return 0, 0, false
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return 0, 0, false
	}
	return start, end, true
}

// cmdSetrange overwrites part of a string at offset, growing it with zero
// bytes as needed. Redis's order of checks: offset syntax, negative offset,
// then (empty value: reply the current length without creating or
// changing anything), type, length limit.
func cmdSetrange(c *Ctx) {
	key, val := c.Args[1], c.Args[3]
	off, ok := resp.ParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	if off < 0 {
		c.W.Error(resp.ErrOffsetRange)
		return
	}
	e := c.Lookup(key)
	if e != nil && e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	if len(val) == 0 {
		if e == nil {
			c.W.Int(0)
		} else {
			c.W.Int(e.StrLen())
		}
		return
	}
	if !lengthOK(c, off, int64(len(val))) {
		return
	}
	if e == nil {
		e = &Entry{Kind: KindString}
		c.KS.Set(c.Shard, key, e)
	}
	e.WriteStr(val, off)
	e.Enc = EncRaw
	changed(c, key)
	c.W.Int(e.StrLen())
}

// growZero returns b extended to at least n bytes, the new bytes zero.
// Spare capacity may hold old bytes, so it is cleared, not trusted.
func growZero(b []byte, n int) []byte {
	if n <= len(b) {
		return b
	}
	if n <= cap(b) {
		ext := b[len(b):n]
		clear(ext)
		return b[:n]
	}
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}
