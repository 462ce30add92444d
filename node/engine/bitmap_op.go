package engine

import (
	"encoding/binary"

	"github.com/shardgate/shardgate/internal/resp"
)

// bitOp is a BITOP operation.
type bitOp uint8

const (
	opAnd bitOp = iota
	opOr
	opXor
	opNot
)

// parseBitOp reads BITOP's operation name (a C string, case-insensitive).
func parseBitOp(arg []byte) (bitOp, bool) {
	switch name := cString(arg); {
	case equalFoldASCII(name, "and"):
		return opAnd, true
	case equalFoldASCII(name, "or"):
		return opOr, true
	case equalFoldASCII(name, "xor"):
		return opXor, true
	case equalFoldASCII(name, "not"):
		return opNot, true
	}
	return 0, false
}

// cmdBitop is BITOP op dest src...: the result is as long as the longest
// source (shorter ones read as zeros); an empty result deletes dest. The
// result replaces dest's value and any expiry. Sources are read as Redis
// does (each counts a keyspace hit or miss, the first non-string stops
// with WRONGTYPE).
//
// The result is built page by page: a page that is zero in the sources
// that decide it (any source for AND, all for OR/XOR) is never computed
// nor allocated, so BITOP over sparse 512 MB bitmaps costs their set
// pages, not 512 MB.
func cmdBitop(c *Ctx) {
	op, ok := parseBitOp(c.Args[1])
	if !ok {
		c.W.Error(resp.ErrSyntax)
		return
	}
	if op == opNot && len(c.Args) != 4 {
		c.W.Error(resp.ErrBitopNot)
		return
	}
	dst := c.Args[2]
	srcs := make([]*Entry, 0, len(c.Args)-3)
	var maxLen int64
	for _, k := range c.Args[3:] {
		e := lookupRead(c, k)
		if e != nil && e.Kind != KindString {
			c.W.Error(resp.ErrWrongType)
			return
		}
		srcs = append(srcs, e)
		if e != nil {
			maxLen = max(maxLen, e.StrLen())
		}
	}
	if maxLen == 0 {
		// Redis's dbDelete: an expired destination is deleted as a
		// change, not expired.
		if c.KS.DeleteStored(c.Shard, dst) {
			changed(c, dst)
		}
		c.W.Int(0)
		return
	}
	c.Lookup(dst) // setKey's lookupKeyWrite: an expired destination expires
	e := &Entry{Kind: KindString, Enc: EncRaw}
	if maxLen <= bitmapMinLen {
		e.Str = bitopBytes(op, srcs, maxLen)
	} else {
		e.Val = bitopPages(op, srcs, maxLen)
	}
	c.KS.Set(c.Shard, dst, e)
	changed(c, dst)
	c.W.Int(maxLen)
}

// bitopBytes computes a short result as plain bytes.
func bitopBytes(op bitOp, srcs []*Entry, n int64) []byte {
	out := make([]byte, n)
	tmp := make([]byte, n)
	readSrc(srcs[0], out, 0)
	if op == opNot {
		for i := range out {
			out[i] = ^out[i]
		}
		return out
	}
	for _, s := range srcs[1:] {
		readSrc(s, tmp, 0)
		combine(op, out, tmp)
	}
	return out
}

// readSrc fills p with a source's bytes from off (a missing key is empty).
func readSrc(e *Entry, p []byte, off int64) {
	if e == nil {
		clear(p)
		return
	}
	e.ReadStr(p, off)
}

// combine applies op (AND, OR or XOR) to dst with src, word by word.
func combine(op bitOp, dst, src []byte) {
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		a, b := binary.LittleEndian.Uint64(dst[i:]), binary.LittleEndian.Uint64(src[i:])
		switch op {
		case opAnd:
			a &= b
		case opOr:
			a |= b
		case opXor:
			a ^= b
		}
		binary.LittleEndian.PutUint64(dst[i:], a)
	}
	for ; i < len(dst); i++ {
		switch op {
		case opAnd:
			dst[i] &= src[i]
		case opOr:
			dst[i] |= src[i]
		case opXor:
			dst[i] ^= src[i]
		}
	}
}

// srcPage returns page p of a source as bytes, or nil when it is all zero
// (absent in a Bitmap, or past the end). A plain source is copied into
// scratch (zero-padded); a dense Bitmap page is returned as it is.
func srcPage(e *Entry, p int64, scratch *[PageBytes]byte) []byte {
	if e == nil {
		return nil
	}
	if bm := e.Bits(); bm != nil {
		if d := bm.pageData(p, scratch); d != nil {
			return d[:]
		}
		return nil
	}
	off := p * PageBytes
	if off >= int64(len(e.Str)) {
		return nil
	}
	e.ReadStr(scratch[:], off)
	return scratch[:]
}

// bitopPages computes a long result into a Bitmap, page by page.
func bitopPages(op bitOp, srcs []*Entry, n int64) *Bitmap {
	bm := &Bitmap{n: n}
	var scratch [PageBytes]byte
	buf := new([PageBytes]byte)
	pages := bm.numPages()
	for p := int64(0); p < pages; p++ {
		if !bitopPage(op, srcs, p, buf, &scratch) {
			continue
		}
		if op == opNot && (p+1)*PageBytes > n {
			clear(buf[n-p*PageBytes:]) // nothing past the length
		}
		card := popcount(buf[:])
		switch {
		case card == 0:
		case card <= sparseLow:
			pg := bm.pageFor(p)
			pg.dense, pg.card = buf, uint32(card)
			pg.shrink() // copies the positions out; buf is free again
		default:
			pg := bm.pageFor(p)
			pg.dense, pg.card = buf, uint32(card)
			buf = new([PageBytes]byte)
		}
	}
	return bm
}

// bitopPage computes page p of the result into buf, reporting false when
// the page is all zero without computing it.
func bitopPage(op bitOp, srcs []*Entry, p int64, buf, scratch *[PageBytes]byte) bool {
	first := srcPage(srcs[0], p, scratch)
	switch op {
	case opNot:
		if first == nil {
			for i := range buf {
				buf[i] = 0xff
			}
			return true
		}
		for i, b := range first {
			buf[i] = ^b
		}
		return true
	case opAnd:
		if first == nil {
			return false
		}
		copy(buf[:], first)
		for _, s := range srcs[1:] {
			d := srcPage(s, p, scratch)
			if d == nil {
				return false
			}
			combine(op, buf[:], d)
		}
		return true
	}
	nonzero := false
	if first != nil {
		copy(buf[:], first)
		nonzero = true
	} else {
		clear(buf[:])
	}
	for _, s := range srcs[1:] {
		if d := srcPage(s, p, scratch); d != nil {
			combine(op, buf[:], d)
			nonzero = true
		}
	}
	return nonzero
}
