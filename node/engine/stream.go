package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"
)

// Stream is a stream value: entries in id order, and the consumer groups.
//
// # Representation
//
// Entries live in blocks of consecutive ids, each a byte buffer of
// records, and the blocks sit in one slice ordered by id: a B+tree of
// height two. A range read binary-searches the block of its start and
// then walks records in place; XADD appends to the last block; a trim
// drops whole blocks from the front. A radix tree keyed by 128-bit ids
// (Redis's choice) pays off when keys share prefixes irregularly; stream
// ids are appended in order, so a sorted slice of blocks gives the same
// O(log n) seeks with less code and memory, and the slice's occasional
// front removal moves only block pointers (a hundredth of the entries).
//
// A block is a Redis stream node: it starts a new one under the same
// rule as Redis's streamAppendItem (at stream-node-max-entries 100
// records, live and deleted, or when the node's listpack would reach
// stream-node-max-bytes 4096), with the listpack's size emulated byte for
// byte (lpBytes). So XADD/XTRIM with "~", which only drop whole nodes,
// and XINFO's radix-tree-keys give Redis's exact numbers.
//
// A record is: a flags byte (deleted, same fields as the block's first
// entry), the id as uvarint ms-delta from the block's master id and
// uvarint seq, the field count and fields unless they are the master's,
// then the values (or field/value pairs), each uvarint length + bytes.
// Like a listpack, a deleted record stays in place, flagged, until the
// whole block empties: that is what keeps node boundaries Redis's.
type Stream struct {
	blocks       []*streamBlock
	length       int64
	lastID       StreamID       // last-generated-id
	firstID      StreamID       // recorded-first-entry-id (0-0 when empty)
	maxDeletedID StreamID       // max-deleted-entry-id
	entriesAdded int64          // entries-added, ever
	groups       []*StreamGroup // sorted by name
	rax          raxMemo        // XINFO's radix-tree-nodes; cleared when blocks come or go
}

// Redis's defaults for stream nodes.
const (
	streamNodeMaxEntries = 100
	streamNodeMaxBytes   = 4096
	// streamMaxElements is STREAM_LISTPACK_MAX_SIZE: XADD refuses an
	// entry whose fields and values add up to more.
	streamMaxElements = 1 << 30
)

// Record flags, as Redis's STREAM_ITEM_FLAG_*.
const (
	recDeleted    = 1
	recSameFields = 2
)

type streamBlock struct {
	master  StreamID
	last    StreamID // the last record's id, live or deleted
	fields  [][]byte // the master entry's fields
	live    int
	deleted int
	lpBytes int // size of the equivalent Redis listpack
	buf     []byte
}

// Len is the number of entries.
func (s *Stream) Len() int64 { return s.length }

// LastID is the last generated id.
func (s *Stream) LastID() StreamID { return s.lastID }

// FirstID is the recorded first entry id (0-0 when empty).
func (s *Stream) FirstID() StreamID { return s.firstID }

// MaxDeletedID is the greatest id ever deleted.
func (s *Stream) MaxDeletedID() StreamID { return s.maxDeletedID }

// EntriesAdded counts every entry ever added.
func (s *Stream) EntriesAdded() int64 { return s.entriesAdded }

// Nodes is the number of blocks (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.blocks) }

// SetLastID is XSETID's change of the last id and counters.
func (s *Stream) SetLastID(id StreamID, entriesAdded int64, maxDeleted StreamID) {
	s.lastID = id
	s.entriesAdded = entriesAdded
	s.maxDeletedID = maxDeleted
}

// elementsSize is Redis's totelelen: the bytes of all fields and values.
func elementsSize(fv [][]byte) int {
	n := 0
	for _, b := range fv {
		n += len(b)
	}
	return n
}

// Append adds an entry with id (above LastID; the caller checked) and
// fields and values fv (field, value, ...), copying them.
func (s *Stream) Append(id StreamID, fv [][]byte) {
	b := s.tail()
	if b != nil {
		if b.lpBytes+elementsSize(fv) >= streamNodeMaxBytes || b.live+b.deleted >= streamNodeMaxEntries {
			b = nil
		}
	}
	if b == nil {
		b = newStreamBlock(id, fv)
		s.blocks = append(s.blocks, b)
		s.rax = raxMemo{}
	} else {
		b.lpBytes += lpIntSize(int64(b.live+1)) - lpIntSize(int64(b.live))
	}
	b.appendRecord(id, fv)
	b.live++
	b.last = id
	s.length++
	s.lastID = id
	s.entriesAdded++
	if s.length == 1 {
		s.firstID = id
	}
}

func (s *Stream) tail() *streamBlock {
	if len(s.blocks) == 0 {
		return nil
	}
	return s.blocks[len(s.blocks)-1]
}

// newStreamBlock starts a block whose master entry is the first one's
// fields: the listpack holds count, deleted, field count, the fields and
// a zero terminator before the records.
func newStreamBlock(id StreamID, fv [][]byte) *streamBlock {
	n := len(fv) / 2
	b := &streamBlock{master: id, fields: make([][]byte, n)}
	size := lpHeaderSize + lpIntSize(0) + lpIntSize(0) + lpIntSize(int64(n)) + lpIntSize(0)
	for i := range n {
		b.fields[i] = bytes.Clone(fv[2*i])
		size += lpStrSize(fv[2*i])
	}
	b.lpBytes = size
	return b
}

func (b *streamBlock) sameFields(fv [][]byte) bool {
	if len(fv)/2 != len(b.fields) {
		return false
	}
	for i, f := range b.fields {
		if !bytes.Equal(f, fv[2*i]) {
			return false
		}
	}
	return true
}

func (b *streamBlock) appendRecord(id StreamID, fv [][]byte) {
	same := b.sameFields(fv)
	n := len(fv) / 2
	flags := byte(0)
	if same {
		flags = recSameFields
	}
	msDelta := id.Ms - b.master.Ms
	b.buf = append(b.buf, flags)
	b.buf = binary.AppendUvarint(b.buf, msDelta)
	b.buf = binary.AppendUvarint(b.buf, id.Seq)
	// The listpack: flags, ms-diff, seq-diff, [count, fields], values,
	// lp-count.
	size := lpIntSize(int64(flags)) + lpIntSize(int64(msDelta)) + lpIntSize(int64(id.Seq-b.master.Seq))
	lpCount := int64(n + 3)
	if !same {
		b.buf = binary.AppendUvarint(b.buf, uint64(n))
		size += lpIntSize(int64(n))
		lpCount += int64(n + 1)
		for _, v := range fv {
			b.buf = binary.AppendUvarint(b.buf, uint64(len(v)))
			b.buf = append(b.buf, v...)
			size += lpStrSize(v)
		}
	} else {
		for i := 1; i < len(fv); i += 2 {
			v := fv[i]
			b.buf = binary.AppendUvarint(b.buf, uint64(len(v)))
			b.buf = append(b.buf, v...)
			size += lpStrSize(v)
		}
	}
	size += lpIntSize(lpCount)
	b.lpBytes += size
}

// streamRecord is a decoded record; fv points into the block.
type streamRecord struct {
	off   int // the record's start in buf
	next  int // the next record's start
	flags byte
	id    StreamID
}

// decode reads the record at off; fv gets its fields and values when
// non-nil (reusing its storage).
func (b *streamBlock) decode(off int, fv *[][]byte) streamRecord {
	r := streamRecord{off: off, flags: b.buf[off]}
	p := off + 1
	ms, k := binary.Uvarint(b.buf[p:])
	p += k
	seq, k := binary.Uvarint(b.buf[p:])
	p += k
	r.id = StreamID{b.master.Ms + ms, seq}
	readBytes := func() []byte {
		l, k := binary.Uvarint(b.buf[p:])
		p += k
		v := b.buf[p : p+int(l) : p+int(l)]
		p += int(l)
		return v
	}
	if fv != nil {
		*fv = (*fv)[:0]
	}
	if r.flags&recSameFields != 0 {
		for _, f := range b.fields {
			v := readBytes()
			if fv != nil {
				*fv = append(*fv, f, v)
			}
		}
	} else {
		n, k := binary.Uvarint(b.buf[p:])
		p += k
		for range 2 * n {
			v := readBytes()
			if fv != nil {
				*fv = append(*fv, v)
			}
		}
	}
	r.next = p
	return r
}

// offsets returns the start of every record in b.
func (b *streamBlock) offsets(dst []int) []int {
	for off := 0; off < len(b.buf); {
		dst = append(dst, off)
		off = b.decode(off, nil).next
	}
	return dst
}

// blockFor returns the index of the last block whose master id is <= id,
// or 0.
func (s *Stream) blockFor(id StreamID) int {
	i := sort.Search(len(s.blocks), func(i int) bool { return id.Less(s.blocks[i].master) })
	if i > 0 {
		i--
	}
	return i
}

// Range calls fn for each live entry with start <= id <= end, in id
// order, or in reverse order with rev, until fn returns false. fv is
// valid only during the call.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(id StreamID, fv [][]byte) bool) {
	if len(s.blocks) == 0 || end.Less(start) {
		return
	}
	fv := make([][]byte, 0, 8)
	if !rev {
		for i := s.blockFor(start); i < len(s.blocks); i++ {
			b := s.blocks[i]
			if b.last.Less(start) {
				continue
			}
			if end.Less(b.master) {
				return
			}
			for off := 0; off < len(b.buf); {
				r := b.decode(off, &fv)
				off = r.next
				if r.flags&recDeleted != 0 || r.id.Less(start) {
					continue
				}
				if end.Less(r.id) || !fn(r.id, fv) {
					return
				}
			}
		}
		return
	}
	var offs []int
	for i := s.blockFor(end); i >= 0; i-- {
		b := s.blocks[i]
		if b.last.Less(start) {
			return
		}
		offs = b.offsets(offs[:0])
		for j := len(offs) - 1; j >= 0; j-- {
			r := b.decode(offs[j], &fv)
			if r.flags&recDeleted != 0 || end.Less(r.id) {
				continue
			}
			if r.id.Less(start) || !fn(r.id, fv) {
				return
			}
		}
	}
}

// Get returns the live entry id's fields and values (valid until the
// stream changes).
func (s *Stream) Get(id StreamID) ([][]byte, bool) {
	var fv [][]byte
	if !s.find(id, &fv) {
		return nil, false
	}
	return fv, true
}

// Has reports whether id is a live entry.
func (s *Stream) Has(id StreamID) bool { return s.find(id, nil) }

// find reports whether id is a live entry and, when fv is not nil, puts
// its fields and values in *fv (valid until the stream changes). The
// records before id in its block are only stepped over: XCLAIM and
// XAUTOCLAIM look entries up one by one, and a Range per lookup decoded
// every field of the block up to the entry.
func (s *Stream) find(id StreamID, fv *[][]byte) bool {
	if len(s.blocks) == 0 {
		return false
	}
	b := s.blocks[s.blockFor(id)]
	if id.Less(b.master) || b.last.Less(id) {
		return false
	}
	for off := 0; off < len(b.buf); {
		r := b.decode(off, nil)
		// Deleted records are skipped, not compared: XSETID may lower
		// the last id below a deleted one still in the block, and the
		// entries added after it follow it there.
		if r.id.Less(id) || r.flags&recDeleted != 0 {
			off = r.next
			continue
		}
		if r.id != id {
			return false
		}
		if fv != nil {
			b.decode(off, fv)
		}
		return true
	}
	return false
}

// First returns the first live entry's id.
func (s *Stream) First() (StreamID, bool) {
	var id StreamID
	found := false
	s.Range(StreamID{}, MaxStreamID, false, func(i StreamID, _ [][]byte) bool {
		id, found = i, true
		return false
	})
	return id, found
}

// Last returns the last live entry's id.
func (s *Stream) Last() (StreamID, bool) {
	var id StreamID
	found := false
	s.Range(StreamID{}, MaxStreamID, true, func(i StreamID, _ [][]byte) bool {
		id, found = i, true
		return false
	})
	return id, found
}

// markDeleted flags the record at off of block i as deleted; with drop,
// the block goes once nothing in it is live (XDEL does that; a trim
// inside a block leaves it, however empty, as Redis's streamTrim). It
// reports whether the block went.
func (s *Stream) markDeleted(i, off int, drop bool) bool {
	b := s.blocks[i]
	b.buf[off] |= recDeleted
	b.lpBytes += lpIntSize(int64(b.live-1)) - lpIntSize(int64(b.live))
	b.lpBytes += lpIntSize(int64(b.deleted+1)) - lpIntSize(int64(b.deleted))
	b.live--
	b.deleted++
	s.length--
	if drop && b.live == 0 {
		s.blocks = append(s.blocks[:i], s.blocks[i+1:]...)
		s.rax = raxMemo{}
		return true
	}
	return false
}

// Delete removes the live entry id (XDEL), reporting whether there was
// one. It updates max-deleted-entry-id and the recorded first id.
func (s *Stream) Delete(id StreamID) bool {
	if len(s.blocks) == 0 {
		return false
	}
	i := s.blockFor(id)
	b := s.blocks[i]
	for off := 0; off < len(b.buf); {
		r := b.decode(off, nil)
		if r.id == id {
			if r.flags&recDeleted != 0 {
				return false
			}
			s.markDeleted(i, off, true)
			if s.maxDeletedID.Less(id) {
				s.maxDeletedID = id
			}
			if id == s.firstID {
				s.updateFirstID()
			}
			return true
		}
		if id.Less(r.id) {
			return false
		}
		off = r.next
	}
	return false
}

// updateFirstID records the first live id (0-0 when empty), as Redis
// does after deletions.
func (s *Stream) updateFirstID() {
	if id, ok := s.First(); ok {
		s.firstID = id
	} else {
		s.firstID = StreamID{}
	}
}

// TrimStrategy is XADD's and XTRIM's trimming argument.
type TrimStrategy struct {
	MaxLen   bool     // MAXLEN, else MINID
	Approx   bool     // "~": only whole blocks
	Len      int64    // MAXLEN's threshold
	MinID    StreamID // MINID's threshold
	Limit    int64    // most entries to remove; 0: no limit
	HasLimit bool
}

// Trim removes entries from the head as Redis's streamTrim: whole blocks
// while they fit the threshold and the limit; then, unless approximate,
// single entries of the next block. It returns the number removed.
func (s *Stream) Trim(t TrimStrategy) int64 {
	var removed int64
	for len(s.blocks) > 0 {
		if t.MaxLen && s.length <= t.Len {
			break
		}
		b := s.blocks[0]
		entries := int64(b.live)
		// A whole block goes when the threshold allows it and the limit
		// has room for all of it.
		whole := false
		if t.MaxLen {
			whole = s.length-entries >= t.Len
		} else {
			whole = b.last.Less(t.MinID)
		}
		if t.Limit != 0 && removed+entries > t.Limit {
			break
		}
		if whole {
			s.blocks = s.blocks[1:]
			s.rax = raxMemo{}
			s.length -= entries
			removed += entries
			continue
		}
		if t.Approx {
			break
		}
		// Mark entries of this block, one by one.
		for off := 0; off < len(b.buf); {
			r := b.decode(off, nil)
			if r.flags&recDeleted == 0 {
				if t.MaxLen && s.length <= t.Len {
					break
				}
				if !t.MaxLen && !r.id.Less(t.MinID) {
					break
				}
				s.markDeleted(0, off, false)
				removed++
			}
			off = r.next
		}
		break
	}
	if len(s.blocks) > 0 && cap(s.blocks) > 2*len(s.blocks)+16 {
		s.blocks = append([]*streamBlock(nil), s.blocks...)
	}
	if removed > 0 {
		s.updateFirstID()
	}
	return removed
}

// Listpack size emulation (Redis's listpack.c encodings).
const lpHeaderSize = 6 + 1 // total bytes + count, and the end byte

// lpBacklen is the size of an element's back-length field.
func lpBacklen(l int) int {
	switch {
	case l < 128:
		return 1
	case l < 16383: // listpack.c's bounds, one below each power of two
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpIntSize is the size of an integer element.
func lpIntSize(v int64) int {
	var l int
	switch {
	case v >= 0 && v <= 127:
		l = 1
	case v >= -4096 && v <= 4095:
		l = 2
	case v >= -32768 && v <= 32767:
		l = 3
	case v >= -8388608 && v <= 8388607:
		l = 4
	case v >= math.MinInt32 && v <= math.MaxInt32:
		l = 5
	default:
		l = 9
	}
	return l + lpBacklen(l)
}

// lpStrSize is the size of a string element; strings that are integers
// are stored as integers.
func lpStrSize(s []byte) int {
	if len(s) <= 20 {
		if v, ok := ksParseInt(s); ok {
			return lpIntSize(v)
		}
	}
	var l int
	switch {
	case len(s) < 64:
		l = 1 + len(s)
	case len(s) < 4096:
		l = 2 + len(s)
	default:
		l = 5 + len(s)
	}
	return l + lpBacklen(l)
}

// MemoryUsage is MEMORY USAGE's estimate of the stream: its blocks and
// the consumer groups.
func (s *Stream) MemoryUsage(int64) int64 {
	n := alloc8(int64(cap(s.blocks)) * 8)
	for _, b := range s.blocks {
		n += memStreamBlock + alloc8(int64(cap(b.buf))) + int64(len(b.fields))*24
		for _, f := range b.fields {
			n += alloc8(int64(len(f)))
		}
	}
	for _, g := range s.groups {
		n += g.memoryUsage()
	}
	return n
}

// memStreamBlock is a block's struct.
const memStreamBlock = 128

// CloneValue is COPY's deep copy, groups and pending entries included.
func (s *Stream) CloneValue() any {
	c := &Stream{
		length: s.length, lastID: s.lastID, firstID: s.firstID,
		maxDeletedID: s.maxDeletedID, entriesAdded: s.entriesAdded,
		blocks: make([]*streamBlock, len(s.blocks)),
	}
	for i, b := range s.blocks {
		nb := *b
		nb.buf = bytes.Clone(b.buf)
		nb.fields = make([][]byte, len(b.fields))
		for j, f := range b.fields {
			nb.fields[j] = bytes.Clone(f)
		}
		c.blocks[i] = &nb
	}
	for _, g := range s.groups {
		c.groups = append(c.groups, g.clone())
	}
	return c
}
