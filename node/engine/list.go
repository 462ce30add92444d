package engine

import (
	"bytes"
	"encoding/binary"
	"unsafe"
)

// List is a Redis list: a quicklist-like deque of packed chunks.
//
// # Design
//
// Elements live in chunks of at most listChunkBytes (8 KB, Redis's default
// list-max-listpack-size -2). A chunk is one []byte holding its entries
// back to back, each encoded as
//
//	uvarint(len) | bytes | backlen
//
// where backlen is the length of the first two parts written so that it
// can be read from its last byte backwards (base-128 digits, every byte
// but the first with the high bit set), as Redis's listpack does. So a
// chunk is walked forwards and backwards without an index, and a small
// element costs its bytes plus two. The entries sit in buf[start:end] with
// free room on both sides: pushing at either end of a chunk writes into
// the room, popping moves start or end, so push and pop at both ends of the
// list are O(1) (amortized: a full chunk starts a new one). The chunks
// themselves are in a slice with free room on both sides too.
//
// Why this and not a [][]byte or a linked list of elements: a [][]byte
// costs a 24-byte header plus a separate allocation (rounded to a size
// class, 8 bytes minimum) per element, about 40 bytes for a small one, and
// a pointer the GC must trace; a linked list costs more. Packed chunks cost
// ~2 bytes per element over the data and give the GC one pointer-free
// block per 8 KB. Index, range and search walk chunks (O(number of
// chunks) to find one, like Redis's quicklist nodes) and then entries
// inside one chunk. Elements bigger than a chunk get a chunk of their own
// (Redis's plain nodes).
//
// # Memory
//
// Measured with runtime/metrics (/memory/classes/heap/objects:bytes)
// before and after RPUSHing 1,000,000 elements into one list
// (TestListMemoryPerElement), against redis-server 7.0.15's used_memory
// before and after the same RPUSHes:
//
//	elements                      shardgate   redis 7.0.15
//	"e0".."e999999" (6.9 B avg)   9.0 B/elem  9.0 B/elem
//	16-byte strings               18.1 B/elem 18.2 B/elem
//
// (Redis's listpack stores integers in fewer bytes than their digits;
// these elements are not integers.)
type List struct {
	// base[lo:hi] are the chunks, head first; none is empty.
	base   []*listChunk
	lo, hi int
	n      int // elements
}

// listChunk is one packed run of entries in buf[start:end].
type listChunk struct {
	buf        []byte
	start, end int32
	n          int32 // entries
}

// listChunkBytes is the most bytes a chunk holds, unless one element alone
// is bigger.
const listChunkBytes = 8 << 10

// listChunkMinCap is the smallest buffer a chunk allocates.
const listChunkMinCap = 16

func (c *listChunk) used() int { return int(c.end - c.start) }

// uvarintLen is the length of x as a uvarint (also the number of
// base-128 digits of its backlen).
func uvarintLen(x int) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// entrySize is the encoded size of an element of vlen bytes.
func entrySize(vlen int) int {
	h := uvarintLen(vlen) + vlen
	return h + uvarintLen(h)
}

// putEntry encodes v at dst[0:], returning the size.
func putEntry(dst []byte, v []byte) int {
	p := binary.PutUvarint(dst, uint64(len(v)))
	p += copy(dst[p:], v)
	k := uvarintLen(p)
	for i := 0; i < k; i++ {
		d := byte(p>>(7*i)) & 0x7f
		if i < k-1 {
			d |= 0x80
		}
		dst[p+k-1-i] = d
	}
	return p + k
}

// readEntry decodes the entry at buf[off:], returning its value and the
// offset just after it.
func readEntry(buf []byte, off int) (v []byte, next int) {
	if b := buf[off]; b < 0x80 {
		l := int(b)
		h := 1 + l
		if h < 0x80 {
			return buf[off+1 : off+h], off + h + 1
		}
		return buf[off+1 : off+h], off + h + 2
	}
	x, hn := binary.Uvarint(buf[off:])
	l := int(x)
	h := hn + l
	return buf[off+hn : off+h], off + h + uvarintLen(h)
}

// prevEntry returns the start of the entry that ends at buf[end].
func prevEntry(buf []byte, end int) int {
	b := buf[end-1]
	v := int(b & 0x7f)
	k := 1
	for b&0x80 != 0 {
		b = buf[end-1-k]
		v |= int(b&0x7f) << (7 * k)
		k++
	}
	return end - k - v
}

// newListChunk returns an empty chunk able to take need bytes, its room
// at the front or at the back.
func newListChunk(need int, front bool) *listChunk {
	capacity := max(need, listChunkMinCap)
	c := &listChunk{buf: make([]byte, capacity)}
	if front {
		c.start, c.end = int32(capacity), int32(capacity)
	}
	return c
}

// makeRoom makes need free bytes before the entries (front) or after
// them, moving them inside the buffer when it has the space (leaving the
// rest of the free space split evenly), else growing it (doubling, up to
// the chunk limit) with all the free space on that side.
func (c *listChunk) makeRoom(need int, front bool) {
	used := c.used()
	if used+need <= len(c.buf) {
		spare := len(c.buf) - used - need
		var ns int
		if front {
			ns = need + spare/2
		} else {
			ns = spare / 2
		}
		copy(c.buf[ns:], c.buf[c.start:c.end])
		c.start, c.end = int32(ns), int32(ns+used)
		return
	}
	capacity := max(2*len(c.buf), used+need, listChunkMinCap)
	if capacity > listChunkBytes {
		capacity = max(listChunkBytes, used+need)
	}
	nb := make([]byte, capacity)
	ns := 0
	if front {
		ns = capacity - used
	}
	copy(nb[ns:], c.buf[c.start:c.end])
	c.buf = nb
	c.start, c.end = int32(ns), int32(ns+used)
}

func (c *listChunk) pushBack(v []byte, need int) {
	if int(c.end)+need > len(c.buf) {
		c.makeRoom(need, false)
	}
	putEntry(c.buf[c.end:], v)
	c.end += int32(need)
	c.n++
}

func (c *listChunk) pushFront(v []byte, need int) {
	if int(c.start) < need {
		c.makeRoom(need, true)
	}
	c.start -= int32(need)
	putEntry(c.buf[c.start:], v)
	c.n++
}

// fits reports whether an entry of need bytes may join c.
func (c *listChunk) fits(need int) bool {
	return c.n == 0 || c.used()+need <= listChunkBytes
}

// del removes the entry at buf[a:b], moving the shorter side, and
// returns the offset where the entry was (now the boundary between the
// entries that were around it).
func (c *listChunk) del(a, b int) int {
	d := b - a
	c.n--
	if a-int(c.start) < int(c.end)-b {
		copy(c.buf[int(c.start)+d:], c.buf[c.start:a])
		c.start += int32(d)
		return b
	}
	copy(c.buf[a:], c.buf[b:c.end])
	c.end -= int32(d)
	return a
}

// insertAt inserts v as an entry starting at byte p (an entry boundary in
// [start, end]).
func (c *listChunk) insertAt(p int, v []byte) {
	need := entrySize(len(v))
	front := p-int(c.start) < int(c.end)-p
	switch {
	case front && int(c.start) >= need:
	case !front && len(c.buf)-int(c.end) >= need:
	case int(c.start) >= need:
		front = true
	case len(c.buf)-int(c.end) >= need:
		front = false
	default:
		rel := p - int(c.start)
		c.makeRoom(need, front)
		p = int(c.start) + rel
	}
	if front {
		copy(c.buf[int(c.start)-need:], c.buf[c.start:p])
		c.start -= int32(need)
		p -= need
	} else {
		copy(c.buf[p+need:], c.buf[p:c.end])
		c.end += int32(need)
	}
	putEntry(c.buf[p:], v)
	c.n++
}

// clone returns a copy of c with a buffer of exactly its size.
func (c *listChunk) clone() *listChunk {
	b := make([]byte, c.used())
	copy(b, c.buf[c.start:c.end])
	return &listChunk{buf: b, start: 0, end: int32(len(b)), n: c.n}
}

// Chunk slice management.

func (l *List) chunks() []*listChunk { return l.base[l.lo:l.hi] }

func (l *List) nchunks() int { return l.hi - l.lo }

func (l *List) chunk(i int) *listChunk { return l.base[l.lo+i] }

// regrow reallocates base with room on both sides.
func (l *List) regrow() {
	cnt := l.hi - l.lo
	capacity := max(4, 2*cnt)
	nb := make([]*listChunk, capacity)
	lo := (capacity - cnt) / 2
	copy(nb[lo:], l.base[l.lo:l.hi])
	l.base, l.lo, l.hi = nb, lo, lo+cnt
}

// insertChunk makes c chunk number i.
func (l *List) insertChunk(i int, c *listChunk) {
	if l.base == nil && i == 0 {
		l.base, l.lo, l.hi = []*listChunk{c}, 0, 1
		return
	}
	if i == 0 {
		if l.lo == 0 {
			l.regrow()
		}
		l.lo--
		l.base[l.lo] = c
		return
	}
	if l.hi == len(l.base) {
		l.regrow()
	}
	at := l.lo + i
	copy(l.base[at+1:l.hi+1], l.base[at:l.hi])
	l.base[at] = c
	l.hi++
}

// removeChunks drops chunks [i, j).
func (l *List) removeChunks(i, j int) {
	if i == j {
		return
	}
	if i == 0 {
		clear(l.base[l.lo : l.lo+j])
		l.lo += j
	} else {
		copy(l.base[l.lo+i:], l.base[l.lo+j:l.hi])
		clear(l.base[l.hi-(j-i) : l.hi])
		l.hi -= j - i
	}
	if l.lo == l.hi {
		l.base, l.lo, l.hi = nil, 0, 0
	}
}

// Len is the number of elements.
func (l *List) Len() int { return l.n }

// PushBack appends v (copied).
func (l *List) PushBack(v []byte) {
	need := entrySize(len(v))
	k := l.nchunks()
	if k == 0 || !l.chunk(k-1).fits(need) {
		l.insertChunk(k, newListChunk(need, false))
		k++
	}
	l.chunk(k-1).pushBack(v, need)
	l.n++
}

// PushFront prepends v (copied).
func (l *List) PushFront(v []byte) {
	need := entrySize(len(v))
	if l.nchunks() == 0 || !l.chunk(0).fits(need) {
		l.insertChunk(0, newListChunk(need, true))
	}
	l.chunk(0).pushFront(v, need)
	l.n++
}

// PopFront removes the first element and returns it; the slice is valid
// until the list changes again. The list must not be empty.
func (l *List) PopFront() []byte {
	c := l.chunk(0)
	v, next := readEntry(c.buf, int(c.start))
	c.start = int32(next)
	c.n--
	l.n--
	if c.n == 0 {
		l.removeChunks(0, 1)
	}
	return v
}

// PopBack removes the last element and returns it, as PopFront.
func (l *List) PopBack() []byte {
	k := l.nchunks() - 1
	c := l.chunk(k)
	s := prevEntry(c.buf, int(c.end))
	v, _ := readEntry(c.buf, s)
	c.end = int32(s)
	c.n--
	l.n--
	if c.n == 0 {
		l.removeChunks(k, k+1)
	}
	return v
}

// seek returns the chunk holding element i (0 <= i < Len) and the byte
// offset where its entry starts, walking from the nearer end.
func (l *List) seek(i int) (ci, off int) {
	k := l.nchunks()
	if i < l.n/2 {
		for ci = 0; ; ci++ {
			n := int(l.chunk(ci).n)
			if i < n {
				break
			}
			i -= n
		}
	} else {
		back := l.n - 1 - i // elements after i
		for ci = k - 1; ; ci-- {
			n := int(l.chunk(ci).n)
			if back < n {
				i = n - 1 - back
				break
			}
			back -= n
		}
	}
	c := l.chunk(ci)
	if i <= int(c.n)/2 {
		off = int(c.start)
		for ; i > 0; i-- {
			_, off = readEntry(c.buf, off)
		}
		return ci, off
	}
	off = int(c.end)
	for j := int(c.n) - i; j > 0; j-- {
		off = prevEntry(c.buf, off)
	}
	return ci, off
}

// Index returns element i (0 <= i < Len), valid until the list changes.
func (l *List) Index(i int) []byte {
	ci, off := l.seek(i)
	v, _ := readEntry(l.chunk(ci).buf, off)
	return v
}

// Set replaces element i (0 <= i < Len) with v.
func (l *List) Set(i int, v []byte) {
	ci, off := l.seek(i)
	c := l.chunk(ci)
	_, next := readEntry(c.buf, off)
	if entrySize(len(v)) == next-off {
		putEntry(c.buf[off:], v)
		return
	}
	c.insertAt(c.del(off, next), v)
	l.splitIfBig(ci)
}

// splitIfBig splits chunk ci when an insertion made it bigger than the
// limit (and it has more than one element): into two halves when each
// fits, else into as many pieces as needed, cut greedily.
func (l *List) splitIfBig(ci int) {
	c := l.chunk(ci)
	if c.used() <= listChunkBytes || c.n < 2 {
		return
	}
	var cuts []int // entry boundaries where a piece ends
	half := int(c.start) + c.used()/2
	mid, prev := -1, int(c.start)
	for off := int(c.start); off < int(c.end); {
		_, next := readEntry(c.buf, off)
		if mid < 0 && next > half {
			mid = off
			if mid == int(c.start) {
				mid = next
			}
		}
		off = next
	}
	if mid < int(c.end) && mid-int(c.start) <= listChunkBytes && int(c.end)-mid <= listChunkBytes {
		cuts = []int{mid}
	} else {
		for off := int(c.start); off < int(c.end); {
			_, next := readEntry(c.buf, off)
			if next-prev > listChunkBytes && off > prev {
				cuts = append(cuts, off)
				prev = off
			}
			off = next
		}
	}
	cuts = append(cuts, int(c.end))
	from := int(c.start)
	for i, to := range cuts {
		p := &listChunk{buf: make([]byte, to-from)}
		copy(p.buf, c.buf[from:to])
		p.end = int32(len(p.buf))
		for off := 0; off < len(p.buf); p.n++ {
			_, off = readEntry(p.buf, off)
		}
		if i == 0 {
			l.base[l.lo+ci] = p
		} else {
			l.insertChunk(ci+i, p)
		}
		from = to
	}
}

// Range calls fn for elements start..stop (0 <= start <= stop < Len), in
// order or, if reverse, from stop down to start, until fn returns false.
// The values are valid only during the call.
func (l *List) Range(start, stop int, reverse bool, fn func(v []byte) bool) {
	if reverse {
		ci, off := l.seek(stop)
		c := l.chunk(ci)
		_, end := readEntry(c.buf, off)
		for left := stop - start + 1; left > 0; left-- {
			if end == int(c.start) {
				ci--
				c = l.chunk(ci)
				end = int(c.end)
			}
			s := prevEntry(c.buf, end)
			v, _ := readEntry(c.buf, s)
			if !fn(v) {
				return
			}
			end = s
		}
		return
	}
	ci, off := l.seek(start)
	c := l.chunk(ci)
	for left := stop - start + 1; left > 0; left-- {
		if off == int(c.end) {
			ci++
			c = l.chunk(ci)
			off = int(c.start)
		}
		var v []byte
		v, off = readEntry(c.buf, off)
		if !fn(v) {
			return
		}
	}
}

// Walk calls fn for every element from the head (or the tail, if
// reverse) until fn returns false.
func (l *List) Walk(reverse bool, fn func(v []byte) bool) {
	if l.n > 0 {
		l.Range(0, l.n-1, reverse, fn)
	}
}

// TrimFront removes the first k elements (k <= Len).
func (l *List) TrimFront(k int) {
	if k <= 0 {
		return
	}
	l.n -= k
	j := 0
	for ; j < l.nchunks() && int(l.chunk(j).n) <= k; j++ {
		k -= int(l.chunk(j).n)
	}
	l.removeChunks(0, j)
	if k > 0 {
		c := l.chunk(0)
		off := int(c.start)
		for i := 0; i < k; i++ {
			_, off = readEntry(c.buf, off)
		}
		c.start = int32(off)
		c.n -= int32(k)
	}
}

// TrimBack removes the last k elements (k <= Len).
func (l *List) TrimBack(k int) {
	if k <= 0 {
		return
	}
	l.n -= k
	j := l.nchunks()
	for ; j > 0 && int(l.chunk(j-1).n) <= k; j-- {
		k -= int(l.chunk(j - 1).n)
	}
	l.removeChunks(j, l.nchunks())
	if k > 0 {
		c := l.chunk(l.nchunks() - 1)
		off := int(c.end)
		for i := 0; i < k; i++ {
			off = prevEntry(c.buf, off)
		}
		c.end = int32(off)
		c.n -= int32(k)
	}
}

// Insert puts v before (or after) the first element equal to pivot,
// reporting whether pivot was found.
func (l *List) Insert(pivot, v []byte, after bool) bool {
	for ci := 0; ci < l.nchunks(); ci++ {
		c := l.chunk(ci)
		for off := int(c.start); off < int(c.end); {
			e, next := readEntry(c.buf, off)
			if bytes.Equal(e, pivot) {
				if after {
					off = next
				}
				c.insertAt(off, v)
				l.n++
				l.splitIfBig(ci)
				return true
			}
			off = next
		}
	}
	return false
}

// Remove deletes elements equal to v as LREM does: the first count from
// the head when count > 0, the last -count from the tail when count < 0,
// all of them when count is 0. It returns how many it removed. Each chunk
// is compacted in one pass, so the cost is linear in the list's size
// whatever the number of matches, and neighbouring chunks left small are
// merged.
func (l *List) Remove(v []byte, count int64) int64 {
	var limit uint64 // 0: no limit
	reverse := count < 0
	if reverse {
		limit = uint64(-count) // -MinInt64 wraps to itself: 2^63 as uint64
	} else {
		limit = uint64(count)
	}
	var removed uint64
	k := l.nchunks()
	for step := 0; step < k; step++ {
		ci := step
		if reverse {
			ci = k - 1 - step
		}
		c := l.chunk(ci)
		var gone int32
		if !reverse {
			r, w := int(c.start), int(c.start)
			for r < int(c.end) {
				e, next := readEntry(c.buf, r)
				if (limit == 0 || removed < limit) && bytes.Equal(e, v) {
					removed++
					gone++
				} else {
					if w != r {
						copy(c.buf[w:], c.buf[r:next])
					}
					w += next - r
				}
				r = next
			}
			c.end = int32(w)
		} else {
			r, w := int(c.end), int(c.end)
			for r > int(c.start) {
				s := prevEntry(c.buf, r)
				e, _ := readEntry(c.buf, s)
				if (limit == 0 || removed < limit) && bytes.Equal(e, v) {
					removed++
					gone++
				} else {
					w -= r - s
					if w != s {
						copy(c.buf[w:], c.buf[s:r])
					}
				}
				r = s
			}
			c.start = int32(w)
		}
		c.n -= gone
		if limit != 0 && removed >= limit {
			break
		}
	}
	if removed > 0 {
		l.n -= int(removed)
		l.compact()
	}
	return int64(removed)
}

// compact drops empty chunks and merges neighbours that fit in one,
// shrinking buffers that are mostly empty.
func (l *List) compact() {
	cs := l.chunks()
	out := cs[:0]
	for _, c := range cs {
		if c.n == 0 {
			continue
		}
		if len(out) > 0 {
			p := out[len(out)-1]
			if p.used()+c.used() <= listChunkBytes {
				nb := make([]byte, p.used()+c.used())
				copy(nb, p.buf[p.start:p.end])
				copy(nb[p.used():], c.buf[c.start:c.end])
				p.buf, p.start, p.end, p.n = nb, 0, int32(len(nb)), p.n+c.n
				continue
			}
		}
		if len(c.buf) > 2*c.used()+64 {
			*c = *c.clone()
		}
		out = append(out, c)
	}
	clear(cs[len(out):])
	l.hi = l.lo + len(out)
	if l.lo == l.hi {
		l.base, l.lo, l.hi = nil, 0, 0
	}
}

// CloneValue is a deep copy (COPY).
func (l *List) CloneValue() any {
	n := &List{n: l.n}
	k := l.nchunks()
	if k > 0 {
		n.base = make([]*listChunk, k)
		n.hi = k
		for i := range k {
			n.base[i] = l.chunk(i).clone()
		}
	}
	return n
}

// Sizes for MEMORY USAGE.
var (
	memList      = int64(unsafe.Sizeof(List{}))
	memListChunk = int64(unsafe.Sizeof(listChunk{}))
)

// MemoryUsage estimates the list's bytes: the List, its chunk slice, and
// each chunk with its buffer. With samples > 0 only that many chunks are
// measured and the rest extrapolated from them, as Redis samples quicklist
// nodes.
func (l *List) MemoryUsage(samples int64) int64 {
	total := memList + alloc8(int64(cap(l.base))*8)
	k := l.nchunks()
	if k == 0 {
		return total
	}
	m := int64(k)
	if samples > 0 && samples < m {
		m = samples
	}
	var sum int64
	for i := range int(m) {
		sum += memListChunk + alloc8(int64(len(l.chunk(i).buf)))
	}
	return total + sum*int64(k)/m
}
