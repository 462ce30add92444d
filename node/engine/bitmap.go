package engine

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// Bitmap is a string value stored in pages that are allocated only where
// the string has non-zero bytes. It is how the node keeps a string that
// bitmap commands grew (SETBIT at offset 4294967295 makes a 512 MB string
// in Redis), while every strings command still sees exactly Redis's bytes.
//
// # Representation, and why
//
// The string's bytes are cut into pages of PageBytes (8 KB, 65536 bits).
// A page is one of:
//   - absent: all its bytes are zero; it costs nothing;
//   - sparse: a sorted []uint16 of the positions of its set bits, used
//     while it has at most sparseMax of them (2 bytes per set bit, so
//     never more than a dense page);
//   - dense: the 8 KB of bytes themselves.
//
// Pages sit in groups of 32 (256 KB of string), and a group is allocated
// only when one of its pages is written, so the index of a 512 MB string
// with one set bit is one group (1.25 KB) and a pointer slice (16 KB), and
// a 1 MB one (a segment key of the proxy's segmented bitmaps) with one set
// bit holds one group and a few pointers: groups of 256 pages cost such
// keys 10 KB each, which thinly spread user ids pay once per id. This is
// roaring's idea (array containers below 4096 values, bitmap containers
// above) with two changes that matter here: byte-oriented pages, so GET,
// GETRANGE, SETRANGE and APPEND copy whole runs of bytes instead of
// translating bit numbering, and a cached set-bit count per page, so
// BITCOUNT over a range is a sum of page counts plus two partial pages.
// Figures this gives (see bitmap_mem_test.go): SETBIT at 2^32-1 on an
// empty key ~34 KB; 10^6 random bits over 0..2^32-1 ~5.5 MB (sparse
// pages); one bit below 2^23 ~1.8 KB with its key; 10^8 consecutive bits
// from 0 ~12.5 MB (dense pages, no slack).
//
// The bit order is Redis's: bit 0 is the most significant bit of byte 0;
// a sparse page's positions are in that order too, so sorted order is the
// string's order.
//
// Invariant: no page holds a set bit at or beyond the string's length, so
// counts and reads never look at the length for pages fully inside it.
//
// # API (stable; BITFIELD and the strings commands build on it)
//
//	Len() int64                          length in bytes (STRLEN)
//	Grow(n int64)                        extend with zero bytes (no allocation)
//	Bit(off int64) bool                  bit at offset off (false past the end)
//	SetBit(off int64, v bool) bool       set one bit, growing; returns the old bit
//	ReadAt(p []byte, off int64)          fill p with bytes from off (zeros past the end)
//	WriteAt(p []byte, off int64)         write bytes at off, growing
//	AppendTo(dst []byte, start, end int64) []byte   append bytes [start,end)
//	Count(from, to int64) int64          set bits in the bit range [from,to)
//	NextSet(from, to int64) int64        first set bit in [from,to), or -1
//	NextClear(from, to int64) int64      first clear bit in [from,to), or -1
//	EachSetBit(fn func(off int64) bool)  set bits in order
//	EachPage(fn func(off int64, data []byte) bool)  non-zero pages in order
//	                                     (data is read-only and valid during the call)
//	Clone() *Bitmap, MemoryUsage(samples int64) int64
//
// Offsets are int64 bit or byte offsets as named; callers check Redis's
// limits (bit offsets below 2^32, strings up to 512 MB) before calling.
// A Bitmap is not safe for concurrent use: the shard lock guards it.
type Bitmap struct {
	n      int64
	groups []*pageGroup
}

const (
	// PageBytes is the size of a page of a Bitmap.
	PageBytes = 8192
	pageBits  = PageBytes * 8
	pageShift = 13 // log2(PageBytes)
	// groupPages pages form a group, the unit of index allocation.
	groupPages = 32
	groupShift = 5
	// sparseMax is the most set bits a sparse page holds: beyond it the
	// positions would take more than the page's bytes.
	sparseMax = PageBytes / 2
	// sparseLow is the count at or below which a dense page turns sparse
	// again; the gap to sparseMax keeps a page that hovers around one
	// size from converting back and forth on every write.
	sparseLow = PageBytes / 4
)

// page is one PageBytes part of the string; see Bitmap.
type page struct {
	dense *[PageBytes]byte // nil unless dense
	pos   []uint16         // set bit positions, sorted, when sparse
	card  uint32           // number of set bits
}

type pageGroup [groupPages]page

// NewBitmap returns an empty Bitmap (length 0).
func NewBitmap() *Bitmap { return &Bitmap{} }

// BitmapFromBytes returns a Bitmap holding a copy of b.
func BitmapFromBytes(b []byte) *Bitmap {
	bm := &Bitmap{}
	bm.WriteAt(b, 0)
	bm.Grow(int64(len(b)))
	return bm
}

// Len is the string's length in bytes.
func (b *Bitmap) Len() int64 { return b.n }

// Grow extends the string to n bytes with zeros (never shrinks it). It
// allocates nothing: untouched pages stay absent.
func (b *Bitmap) Grow(n int64) {
	if n > b.n {
		b.n = n
	}
}

// pageAt returns page p for reading, or nil when its group is absent.
func (b *Bitmap) pageAt(p int64) *page {
	g := p >> groupShift
	if g >= int64(len(b.groups)) || b.groups[g] == nil {
		return nil
	}
	return &b.groups[g][p&(groupPages-1)]
}

// pageFor returns page p for writing, allocating its group.
func (b *Bitmap) pageFor(p int64) *page {
	g := p >> groupShift
	if g >= int64(len(b.groups)) {
		b.groups = slices.Grow(b.groups, int(g+1)-len(b.groups))[:g+1]
	}
	if b.groups[g] == nil {
		b.groups[g] = new(pageGroup)
	}
	return &b.groups[g][p&(groupPages-1)]
}

// numPages is the number of pages the length covers.
func (b *Bitmap) numPages() int64 { return (b.n + PageBytes - 1) >> pageShift }

// Bit returns the bit at offset off.
func (b *Bitmap) Bit(off int64) bool {
	if off < 0 || off>>3 >= b.n {
		return false
	}
	pg := b.pageAt(off >> (pageShift + 3))
	if pg == nil {
		return false
	}
	return pg.bit(uint16(off & (pageBits - 1)))
}

func (pg *page) bit(i uint16) bool {
	if pg.dense != nil {
		return pg.dense[i>>3]&(0x80>>(i&7)) != 0
	}
	_, found := slices.BinarySearch(pg.pos, i)
	return found
}

// SetBit sets the bit at offset off to v, growing the string to cover it,
// and returns the bit's old value.
func (b *Bitmap) SetBit(off int64, v bool) bool {
	b.Grow(off>>3 + 1)
	pg := b.pageAt(off >> (pageShift + 3))
	if pg == nil {
		if !v {
			return false
		}
		pg = b.pageFor(off >> (pageShift + 3))
	}
	return pg.setBit(uint16(off&(pageBits-1)), v)
}

func (pg *page) setBit(i uint16, v bool) bool {
	if pg.dense != nil {
		m := byte(0x80) >> (i & 7)
		old := pg.dense[i>>3]&m != 0
		if old == v {
			return old
		}
		pg.dense[i>>3] ^= m
		if v {
			pg.card++
		} else {
			pg.card--
			pg.shrink()
		}
		return old
	}
	at, found := slices.BinarySearch(pg.pos, i)
	if found == v {
		return found
	}
	if v {
		if len(pg.pos) == sparseMax {
			pg.toDense()
			return pg.setBit(i, v)
		}
		pg.pos = slices.Insert(pg.pos, at, i)
		pg.card++
	} else {
		pg.pos = slices.Delete(pg.pos, at, at+1)
		pg.card--
		if pg.card == 0 {
			pg.pos = nil
		}
	}
	return found
}

// toDense turns a sparse page dense.
func (pg *page) toDense() {
	d := new([PageBytes]byte)
	for _, i := range pg.pos {
		d[i>>3] |= 0x80 >> (i & 7)
	}
	pg.dense, pg.pos = d, nil
}

// shrink turns a dense page sparse (or absent) when few bits are left.
func (pg *page) shrink() {
	if pg.dense == nil || pg.card > sparseLow {
		return
	}
	if pg.card == 0 {
		pg.dense = nil
		return
	}
	pos := make([]uint16, 0, pg.card)
	eachSetBit(pg.dense[:], func(i int) { pos = append(pos, uint16(i)) })
	pg.dense, pg.pos = nil, pos
}

// fill copies the page's bytes [from, from+len(p)) into p.
func (pg *page) fill(p []byte, from int) {
	if pg == nil || pg.card == 0 {
		clear(p)
		return
	}
	if pg.dense != nil {
		copy(p, pg.dense[from:])
		return
	}
	clear(p)
	lo := uint16(from * 8)
	start, _ := slices.BinarySearch(pg.pos, lo)
	end := from*8 + len(p)*8
	for _, i := range pg.pos[start:] {
		if int(i) >= end {
			break
		}
		j := int(i) - from*8
		p[j>>3] |= 0x80 >> (j & 7)
	}
}

// ReadAt fills p with the string's bytes from byte offset off; bytes past
// the end read as zero.
func (b *Bitmap) ReadAt(p []byte, off int64) {
	for len(p) > 0 {
		in := int(off & (PageBytes - 1))
		k := min(len(p), PageBytes-in)
		if off >= b.n {
			clear(p)
			return
		}
		b.pageAt(off>>pageShift).fill(p[:k], in)
		p, off = p[k:], off+int64(k)
	}
}

// AppendTo appends the string's bytes [start, end) to dst. GET of a big
// bitmap writes straight into the reply buffer with it, building no
// second copy.
func (b *Bitmap) AppendTo(dst []byte, start, end int64) []byte {
	if end <= start {
		return dst
	}
	n := int(end - start)
	dst = slices.Grow(dst, n)
	l := len(dst)
	dst = dst[:l+n]
	b.ReadAt(dst[l:], start)
	return dst
}

// smallWrite is the largest write into a sparse page done bit by bit;
// larger ones go through a dense page (BITFIELD writes up to 9 bytes).
const smallWrite = 16

// WriteAt writes p at byte offset off, growing the string to cover it.
func (b *Bitmap) WriteAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	b.Grow(off + int64(len(p)))
	for len(p) > 0 {
		in := int(off & (PageBytes - 1))
		k := min(len(p), PageBytes-in)
		chunk := p[:k]
		pg := b.pageAt(off >> pageShift)
		if pg == nil || pg.card == 0 {
			if !allZero(chunk) {
				pg = b.pageFor(off >> pageShift)
				pg.write(chunk, in)
			}
		} else {
			pg.write(chunk, in)
		}
		p, off = p[k:], off+int64(k)
	}
}

// write stores chunk at byte from of the page.
func (pg *page) write(chunk []byte, from int) {
	if pg.dense == nil && len(chunk) <= smallWrite {
		for j, c := range chunk {
			base := uint16((from + j) * 8)
			for k := uint16(0); k < 8; k++ {
				pg.setBit(base+k, c&(0x80>>k) != 0)
			}
		}
		return
	}
	if pg.dense == nil {
		pg.toDense()
	}
	old := popcount(pg.dense[from : from+len(chunk)])
	copy(pg.dense[from:], chunk)
	pg.card = pg.card - uint32(old) + uint32(popcount(chunk))
	if pg.card <= sparseLow {
		pg.shrink()
	}
}

// pageData returns page p's bytes: the page itself when dense, else a
// copy in scratch; nil when the page is all zero.
func (b *Bitmap) pageData(p int64, scratch *[PageBytes]byte) *[PageBytes]byte {
	pg := b.pageAt(p)
	if pg == nil || pg.card == 0 {
		return nil
	}
	if pg.dense != nil {
		return pg.dense
	}
	pg.fill(scratch[:], 0)
	return scratch
}

// Count returns the number of set bits in the bit range [from, to).
func (b *Bitmap) Count(from, to int64) int64 {
	to = min(to, b.n*8)
	var n int64
	for from < to {
		p := from >> (pageShift + 3)
		lo := from & (pageBits - 1)
		hi := min(to-p*pageBits, pageBits)
		if pg := b.pageAt(p); pg != nil && pg.card != 0 {
			if lo == 0 && hi == pageBits {
				n += int64(pg.card)
			} else {
				n += pg.count(int(lo), int(hi))
			}
		}
		from = p*pageBits + hi
	}
	return n
}

// count is the number of set bits in the page's bit range [lo, hi).
func (pg *page) count(lo, hi int) int64 {
	if pg.dense == nil {
		a, _ := slices.BinarySearch(pg.pos, uint16(lo))
		if hi == pageBits {
			return int64(len(pg.pos) - a)
		}
		z, _ := slices.BinarySearch(pg.pos, uint16(hi))
		return int64(z - a)
	}
	return int64(countBits(pg.dense[:], lo, hi))
}

// NextSet returns the first set bit in [from, to), or -1.
func (b *Bitmap) NextSet(from, to int64) int64 {
	to = min(to, b.n*8)
	for from < to {
		p := from >> (pageShift + 3)
		lo := int(from & (pageBits - 1))
		hi := int(min(to-p*pageBits, pageBits))
		if pg := b.pageAt(p); pg != nil && pg.card != 0 {
			if i := pg.nextSet(lo, hi); i >= 0 {
				return p*pageBits + int64(i)
			}
		} else if p>>groupShift < int64(len(b.groups)) && b.groups[p>>groupShift] == nil {
			// skip the whole absent group
			from = (p>>groupShift + 1) << (groupShift + pageShift + 3)
			continue
		}
		from = p*pageBits + int64(hi)
	}
	return -1
}

func (pg *page) nextSet(lo, hi int) int {
	if pg.dense == nil {
		a, _ := slices.BinarySearch(pg.pos, uint16(lo))
		if a < len(pg.pos) && int(pg.pos[a]) < hi {
			return int(pg.pos[a])
		}
		return -1
	}
	return findBit(pg.dense[:], lo, hi, false)
}

// NextClear returns the first clear bit in [from, to), or -1. Bits past
// the length are clear, but the range is not cut at the length: callers
// decide (BITPOS 0 without an end reports the first bit past it).
func (b *Bitmap) NextClear(from, to int64) int64 {
	for from < to {
		p := from >> (pageShift + 3)
		lo := int(from & (pageBits - 1))
		hi := int(min(to-p*pageBits, pageBits))
		pg := b.pageAt(p)
		if pg == nil || pg.card == 0 {
			return from
		}
		if i := pg.nextClear(lo, hi); i >= 0 {
			return p*pageBits + int64(i)
		}
		from = p*pageBits + int64(hi)
	}
	return -1
}

func (pg *page) nextClear(lo, hi int) int {
	if pg.dense == nil {
		a, _ := slices.BinarySearch(pg.pos, uint16(lo))
		want := lo
		for ; a < len(pg.pos) && want < hi; a++ {
			if int(pg.pos[a]) != want {
				break
			}
			want++
		}
		if want < hi {
			return want
		}
		return -1
	}
	return findBit(pg.dense[:], lo, hi, true)
}

// EachSetBit calls fn with every set bit's offset in order until fn
// returns false.
func (b *Bitmap) EachSetBit(fn func(off int64) bool) {
	for gi, g := range b.groups {
		if g == nil {
			continue
		}
		for pi := range g {
			pg := &g[pi]
			base := int64(gi*groupPages+pi) * pageBits
			if pg.dense == nil {
				for _, i := range pg.pos {
					if !fn(base + int64(i)) {
						return
					}
				}
				continue
			}
			stop := false
			eachSetBit(pg.dense[:], func(i int) {
				if !stop && !fn(base+int64(i)) {
					stop = true
				}
			})
			if stop {
				return
			}
		}
	}
}

// EachPage calls fn with the byte offset and bytes of every page holding
// a set bit, in order, until fn returns false. data is read-only and only
// valid during the call; its last page may run past the length (the bytes
// there are zero).
func (b *Bitmap) EachPage(fn func(off int64, data []byte) bool) {
	var scratch [PageBytes]byte
	for gi, g := range b.groups {
		if g == nil {
			continue
		}
		for pi := range g {
			p := int64(gi*groupPages + pi)
			if d := b.pageData(p, &scratch); d != nil {
				if !fn(p*PageBytes, d[:]) {
					return
				}
			}
		}
	}
}

// Clone returns a deep copy.
func (b *Bitmap) Clone() *Bitmap {
	n := &Bitmap{n: b.n, groups: make([]*pageGroup, len(b.groups))}
	for gi, g := range b.groups {
		if g == nil {
			continue
		}
		ng := new(pageGroup)
		for pi, pg := range g {
			switch {
			case pg.dense != nil:
				d := *pg.dense
				ng[pi] = page{dense: &d, card: pg.card}
			case pg.pos != nil:
				ng[pi] = page{pos: slices.Clone(pg.pos), card: pg.card}
			}
		}
		n.groups[gi] = ng
	}
	return n
}

// CloneValue is Clone for COPY (engine.Cloner).
func (b *Bitmap) CloneValue() any { return b.Clone() }

// MemoryUsage is the bytes the Bitmap holds: its index, groups and pages
// (samples is ignored: the sum is cheap and exact).
func (b *Bitmap) MemoryUsage(int64) int64 {
	const groupSize = int64(groupPages) * 40 // unsafe.Sizeof(page{}) on 64-bit
	n := int64(32 + 8*cap(b.groups))
	for _, g := range b.groups {
		if g == nil {
			continue
		}
		n += groupSize
		for _, pg := range g {
			if pg.dense != nil {
				n += PageBytes
			} else {
				n += alloc8(int64(2 * cap(pg.pos)))
			}
		}
	}
	return n
}

// --- word-level helpers over byte slices in Redis's bit order ---

// popcount counts the set bits of p.
func popcount(p []byte) int {
	n := 0
	for len(p) >= 32 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p)) +
			bits.OnesCount64(binary.LittleEndian.Uint64(p[8:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(p[16:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(p[24:]))
		p = p[32:]
	}
	for len(p) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	for _, c := range p {
		n += bits.OnesCount8(c)
	}
	return n
}

// countBits counts the set bits of p in the bit range [lo, hi).
func countBits(p []byte, lo, hi int) int {
	if lo >= hi {
		return 0
	}
	lb, hb := lo>>3, (hi-1)>>3
	first := p[lb] & (0xff >> (lo & 7))
	if lb == hb {
		return bits.OnesCount8(first & (0xff << (7 - (hi-1)&7)))
	}
	last := p[hb] & (0xff << (7 - (hi-1)&7))
	return bits.OnesCount8(first) + popcount(p[lb+1:hb]) + bits.OnesCount8(last)
}

// findBit returns the first bit in [lo, hi) of p that is set (clear=false)
// or clear (clear=true), or -1.
func findBit(p []byte, lo, hi int, clear bool) int {
	var flip byte
	var flip64 uint64
	if clear {
		flip, flip64 = 0xff, ^uint64(0)
	}
	i := lo
	// bit by byte until aligned to a byte
	for i < hi && i&7 != 0 {
		if (p[i>>3]^flip)&(0x80>>(i&7)) != 0 {
			return i
		}
		i++
	}
	// bytes until 8-aligned, then words
	for i+8 <= hi && (i>>3)&7 != 0 {
		if c := p[i>>3] ^ flip; c != 0 {
			return i + bits.LeadingZeros8(c)
		}
		i += 8
	}
	for i+64 <= hi {
		if w := binary.BigEndian.Uint64(p[i>>3:]) ^ flip64; w != 0 {
			return i + bits.LeadingZeros64(w)
		}
		i += 64
	}
	for i < hi {
		if (p[i>>3]^flip)&(0x80>>(i&7)) != 0 {
			return i
		}
		i++
	}
	return -1
}

// eachSetBit calls fn with the index of every set bit of p, in order; len(p)
// is a multiple of 8 (a page).
func eachSetBit(p []byte, fn func(i int)) {
	for w := 0; w+8 <= len(p); w += 8 {
		x := binary.BigEndian.Uint64(p[w:])
		for x != 0 {
			z := bits.LeadingZeros64(x)
			fn(w*8 + z)
			x &^= 1 << (63 - z)
		}
	}
}

// allZero reports whether p has no set bit.
func allZero(p []byte) bool {
	for len(p) >= 8 {
		if binary.LittleEndian.Uint64(p) != 0 {
			return false
		}
		p = p[8:]
	}
	for _, c := range p {
		if c != 0 {
			return false
		}
	}
	return true
}
