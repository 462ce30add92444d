package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// The dump format: one keyspace value (an Entry) as bytes, for slot
// migration (the source streams values to the target) and for snapshots.
// It is shardgate's own format, not Redis's DUMP/RDB.
//
// # Layout
//
//	entry  = version kind enc expire body crc
//	version: 1 byte, dumpVersion (1)
//	kind:    1 byte, the value's form on the wire:
//	         1 string (plain bytes), 2 string held as a Bitmap (sparse
//	         pages), 3 list, 4 stream
//	enc:     1 byte, OBJECT ENCODING: 0 raw, 1 int, 2 embstr, 3 quicklist,
//	         4 listpack, 5 stream, 6 int (unshared: COPY's private object)
//	expire:  varint (zigzag), the absolute expiry in unix ms, 0 for none
//	crc:     4 bytes little endian, CRC-32C (Castagnoli) of everything
//	         before it
//
// Numbers are Go's encoding/binary uvarints (unsigned) and varints
// (signed, zigzag). "bytes" is a uvarint length then that many bytes; an
// "id" (stream id) is uvarint ms then uvarint seq.
//
// Bodies:
//
//	string: bytes
//	bitmap: uvarint length (bytes of the string, at most 512 MB)
//	        uvarint pages, then per page holding a set bit, in order:
//	          uvarint gap (page number minus the previous one's minus 1;
//	                       the first page's number)
//	          form byte: 0 sparse, 1 dense
//	          sparse: uvarint count (1..4096), then count uvarint gaps
//	                  (bit position in the page minus the previous one's
//	                  minus 1; the first position)
//	          dense:  the page's 8192 bytes
//	list:   uvarint count (>= 1), then count elements as bytes, head first
//	stream: id last-generated-id, id recorded-first-entry-id,
//	        id max-deleted-entry-id, varint entries-added
//	        uvarint blocks, then per block (a Redis stream node):
//	          id master, uvarint fields (>= 1), fields as bytes,
//	          uvarint size, then size bytes of records, each:
//	            flags byte: 1 deleted, 2 same fields as the master
//	            uvarint ms minus the master's ms, uvarint seq
//	            same fields: one value (bytes) per master field
//	            otherwise:   uvarint n (>= 1), n field/value pairs (bytes)
//	        uvarint groups, then per group, in name order:
//	          name (bytes), id last-delivered-id, varint entries-read
//	          uvarint consumers, then per consumer in name order:
//	            name (bytes), varint seen-time (unix ms)
//	          uvarint pending, then per pending entry in id order:
//	            uvarint ms gap (ms minus the previous entry's ms; the
//	            first one's ms), uvarint seq, varint delivery time
//	            (unix ms), varint delivery count, uvarint consumer
//	            (its index in the group's consumer list)
//
// # What is kept, and why
//
// A decoded value answers every read command as the original did. For
// that the format keeps more than the elements where Redis can tell:
//
//   - Streams keep their block (node) layout and their deleted records:
//     XINFO STREAM's radix-tree-keys/nodes count nodes, and XADD/XTRIM with
//     "~" drop whole nodes, so re-appending the live entries would answer
//     differently after any XDEL, trim or XSETID. The records are the
//     stream's own record encoding (stream.go), so encoding a block is one
//     copy; decoding checks every record and rebuilds the block with the
//     stream's own append code, which recomputes the emulated listpack
//     size.
//   - A bitmap string stays pages, and each page keeps its form (sparse
//     or dense): a 512 MB string with one set bit is a few bytes here and
//     decodes without allocating 512 MB.
//   - Lists are their elements only: chunk boundaries are not visible to
//     any command. The decoded list is cut into chunks where pushing the
//     elements one by one would cut it (PushBack's rule), each buffer
//     allocated once at its size.
//   - The encoding byte keeps OBJECT ENCODING and OBJECT REFCOUNT's
//     shared-integer answer.
//
// Not kept: Entry.Access (OBJECT IDLETIME), as Redis's MIGRATE and
// RESTORE without IDLETIME; the stored value's idle time starts afresh.
// MEMORY USAGE may differ, as it measures buffers' capacities.
//
// DecodeEntry trusts nothing: every length and count is checked against
// the bytes that remain before anything is allocated for it, and every
// invariant the engine's code relies on (ids in order, pages in order
// and inside the length, sorted unique group and consumer names) is
// checked, so a hostile input gets an error, never a panic or a value
// that breaks later.

// dumpVersion is the format's version byte.
const dumpVersion = 1

// Wire kinds.
const (
	dumpKindString = 1
	dumpKindBitmap = 2
	dumpKindList   = 3
	dumpKindStream = 4
)

// Bitmap page forms.
const (
	dumpPageSparse = 0
	dumpPageDense  = 1
)

// dumpMaxStrLen is proto-max-bulk-len: no string value is longer.
const dumpMaxStrLen = 512 << 20

// dumpCRCSize is the trailer's size.
const dumpCRCSize = 4

// dumpCastagnoli is the CRC-32C table (read-only after init).
var dumpCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of DecodeEntry.
var (
	// ErrDumpVersion means the input is of a format version this build
	// does not read.
	ErrDumpVersion = errors.New("engine: unknown dump format version")
	// ErrDumpChecksum means the input's CRC does not match: it was
	// corrupted or cut.
	ErrDumpChecksum = errors.New("engine: dump checksum mismatch")
	// ErrDumpCorrupt means the input is malformed; the wrapping error says
	// where.
	ErrDumpCorrupt = errors.New("engine: corrupt dump")
)

// dumpEncodings maps Encoding to its wire byte; the wire numbers are
// fixed even if the engine's constants are reordered.
var dumpEncodings = [...]struct {
	enc  Encoding
	wire byte
}{
	{EncRaw, 0}, {EncInt, 1}, {EncEmbstr, 2}, {EncQuicklist, 3},
	{EncListpack, 4}, {EncStream, 5}, {EncIntUnshared, 6},
}

func encodingToWire(e Encoding) byte {
	for _, m := range dumpEncodings {
		if m.enc == e {
			return m.wire
		}
	}
	panic(fmt.Sprintf("engine: dump of unknown encoding %d", e))
}

func encodingFromWire(w byte) (Encoding, bool) {
	for _, m := range dumpEncodings {
		if m.wire == w {
			return m.enc, true
		}
	}
	return 0, false
}

// AppendEntry appends the serialized form of e (its Kind, Enc, value and
// absolute Expire in unix ms) to dst. It grows dst once, to about the
// size it needs, so a big value costs one allocation (none when dst has
// room). It only reads e (the caller holds e's shard); e must be a value
// the engine built: an unknown kind or value type panics, as it is a bug.
func AppendEntry(dst []byte, e *Entry) []byte {
	start := len(dst)
	var kind byte
	switch e.Kind {
	case KindString:
		if bm := e.Bits(); bm != nil {
			kind = dumpKindBitmap
			dst = slices.Grow(dst, 32+bitmapDumpSize(bm))
		} else {
			kind = dumpKindString
			dst = slices.Grow(dst, 32+len(e.Str))
		}
	case KindList:
		kind = dumpKindList
		dst = slices.Grow(dst, 32+listDumpSize(listOf(e)))
	case KindStream:
		kind = dumpKindStream
		dst = slices.Grow(dst, 64+streamDumpSize(streamOf(e)))
	default:
		panic(fmt.Sprintf("engine: dump of unknown kind %d", e.Kind))
	}
	dst = append(dst, dumpVersion, kind, encodingToWire(e.Enc))
	dst = binary.AppendVarint(dst, e.Expire)
	switch kind {
	case dumpKindString:
		dst = appendDumpBytes(dst, e.Str)
	case dumpKindBitmap:
		dst = appendBitmap(dst, e.Bits())
	case dumpKindList:
		dst = appendList(dst, listOf(e))
	case dumpKindStream:
		dst = appendStream(dst, streamOf(e))
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], dumpCastagnoli))
}

func appendDumpBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendDumpID(dst []byte, id StreamID) []byte {
	dst = binary.AppendUvarint(dst, id.Ms)
	return binary.AppendUvarint(dst, id.Seq)
}

// Size estimates (upper bounds, give or take the headers) that let
// AppendEntry grow dst once.

func bitmapDumpSize(bm *Bitmap) int {
	n := 16
	bm.eachDumpPage(func(_ int64, pg *page) {
		if pg.dense != nil {
			n += 8 + PageBytes
		} else {
			n += 8 + 3*len(pg.pos)
		}
	})
	return n
}

func listDumpSize(l *List) int {
	n := 16
	for _, c := range l.chunks() {
		n += c.used() // an element's wire size is at most its chunk size
	}
	return n
}

func streamDumpSize(s *Stream) int {
	n := 64
	for _, b := range s.blocks {
		n += 32 + len(b.buf)
		for _, f := range b.fields {
			n += 10 + len(f)
		}
	}
	for _, g := range s.groups {
		n += 64 + len(g.Name) + 40*g.PEL.Len()
		for name := range g.consumers {
			n += 16 + len(name)
		}
	}
	return n
}

// eachDumpPage calls fn with the number and page of every page holding a
// set bit, in order.
func (b *Bitmap) eachDumpPage(fn func(p int64, pg *page)) {
	for gi, g := range b.groups {
		if g == nil {
			continue
		}
		for pi := range g {
			if pg := &g[pi]; pg.card != 0 {
				fn(int64(gi*groupPages+pi), pg)
			}
		}
	}
}

func appendBitmap(dst []byte, bm *Bitmap) []byte {
	dst = binary.AppendUvarint(dst, uint64(bm.Len()))
	pages := 0
	bm.eachDumpPage(func(int64, *page) { pages++ })
	dst = binary.AppendUvarint(dst, uint64(pages))
	prev := int64(-1)
	bm.eachDumpPage(func(p int64, pg *page) {
		dst = binary.AppendUvarint(dst, uint64(p-prev-1))
		prev = p
		if pg.dense != nil {
			dst = append(dst, dumpPageDense)
			dst = append(dst, pg.dense[:]...)
			return
		}
		dst = append(dst, dumpPageSparse)
		dst = binary.AppendUvarint(dst, uint64(len(pg.pos)))
		last := -1
		for _, i := range pg.pos {
			dst = binary.AppendUvarint(dst, uint64(int(i)-last-1))
			last = int(i)
		}
	})
	return dst
}

func appendList(dst []byte, l *List) []byte {
	dst = binary.AppendUvarint(dst, uint64(l.Len()))
	for _, c := range l.chunks() {
		for off := int(c.start); off < int(c.end); {
			var v []byte
			v, off = readEntry(c.buf, off)
			dst = appendDumpBytes(dst, v)
		}
	}
	return dst
}

func appendStream(dst []byte, s *Stream) []byte {
	dst = appendDumpID(dst, s.lastID)
	dst = appendDumpID(dst, s.firstID)
	dst = appendDumpID(dst, s.maxDeletedID)
	dst = binary.AppendVarint(dst, s.entriesAdded)
	dst = binary.AppendUvarint(dst, uint64(len(s.blocks)))
	for _, b := range s.blocks {
		dst = appendDumpID(dst, b.master)
		dst = binary.AppendUvarint(dst, uint64(len(b.fields)))
		for _, f := range b.fields {
			dst = appendDumpBytes(dst, f)
		}
		// The wire's records are the block's own encoding (stream.go).
		dst = appendDumpBytes(dst, b.buf)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.groups)))
	for _, g := range s.groups {
		dst = appendDumpBytes(dst, []byte(g.Name))
		dst = appendDumpID(dst, g.LastID)
		dst = binary.AppendVarint(dst, g.EntriesRead)
		cons := g.Consumers()
		index := make(map[*StreamConsumer]uint64, len(cons))
		dst = binary.AppendUvarint(dst, uint64(len(cons)))
		for i, c := range cons {
			index[c] = uint64(i)
			dst = appendDumpBytes(dst, []byte(c.Name))
			dst = binary.AppendVarint(dst, c.SeenTime)
		}
		dst = binary.AppendUvarint(dst, uint64(g.PEL.Len()))
		prevMs := uint64(0)
		g.PEL.Ascend(StreamID{}, func(p *PendingEntry) bool {
			dst = binary.AppendUvarint(dst, p.ID.Ms-prevMs)
			prevMs = p.ID.Ms
			dst = binary.AppendUvarint(dst, p.ID.Seq)
			dst = binary.AppendVarint(dst, p.DeliveryTime)
			dst = binary.AppendVarint(dst, p.DeliveryCount)
			ci, ok := index[p.Consumer]
			if !ok {
				panic("engine: dump of a pending entry whose consumer is not in its group")
			}
			dst = binary.AppendUvarint(dst, ci)
			return true
		})
	}
	return dst
}

// DecodeLoaded is DecodeEntry for a value being loaded into a keyspace (a
// snapshot or log at start-up, a key moved in from another node): a
// string's encoding is chosen afresh, as Redis's rdbLoadObject does with
// tryObjectEncoding, so that after a restart or a move "5x" made by
// APPEND is embstr rather than raw, and "77" made by SETRANGE is a
// (shared) int.
func DecodeLoaded(b []byte) (*Entry, error) {
	e, err := DecodeEntry(b)
	if err == nil && e.Kind == KindString && e.Val == nil {
		e.Enc = stringEncoding(e.Str)
	}
	return e, err
}

// DecodeEntry parses what AppendEntry wrote, returning a new independent
// Entry (sharing no memory with b), or an error (never a panic) for any
// malformed, truncated or hostile input: ErrDumpVersion, ErrDumpChecksum
// or ErrDumpCorrupt (wrapped with what is wrong). Sizes are checked
// against the input before anything is allocated for them. The entry's
// Access is 0, so Keyspace.Set stamps it as a new key; its Expire may
// already be past, which Lookup then handles as for any key.
func DecodeEntry(b []byte) (*Entry, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrDumpCorrupt)
	}
	if b[0] != dumpVersion {
		return nil, fmt.Errorf("%w: %d", ErrDumpVersion, b[0])
	}
	if len(b) < 4+dumpCRCSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrDumpCorrupt, len(b))
	}
	body := b[:len(b)-dumpCRCSize]
	if crc32.Checksum(body, dumpCastagnoli) != binary.LittleEndian.Uint32(b[len(body):]) {
		return nil, ErrDumpChecksum
	}
	r := dumpReader{b: body[1:]}
	kind := r.byte()
	enc, ok := encodingFromWire(r.byte())
	if !ok {
		r.fail("unknown encoding")
	}
	e := &Entry{Enc: enc, Expire: r.varint()}
	if r.err != nil {
		return nil, r.err
	}
	switch kind {
	case dumpKindString:
		e.Kind = KindString
		r.decodeString(e)
	case dumpKindBitmap:
		e.Kind = KindString
		if enc != EncRaw {
			r.fail("bitmap not raw-encoded")
		} else if bm := r.decodeBitmap(); bm != nil {
			e.Val = bm
		}
	case dumpKindList:
		e.Kind = KindList
		if enc != EncQuicklist && enc != EncListpack {
			r.fail("list encoding")
		} else if l := r.decodeList(); l != nil {
			e.Val = l
		}
	case dumpKindStream:
		e.Kind = KindStream
		if enc != EncStream {
			r.fail("stream encoding")
		} else if s := r.decodeStream(); s != nil {
			e.Val = s
		}
	default:
		r.fail("unknown kind")
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return e, nil
}

// dumpReader reads the body; the first problem sticks in err and every
// later read returns zero values, so callers check err at their loops.
type dumpReader struct {
	b   []byte
	err error
}

func (r *dumpReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrDumpCorrupt, what)
	}
	r.b = nil
}

func (r *dumpReader) byte() byte {
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *dumpReader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *dumpReader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return x
}

// count reads a number of items each taking at least minSize bytes of
// what remains, so a hostile count cannot make a caller loop or
// allocate beyond the input's size.
func (r *dumpReader) count(minSize int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/minSize) {
		r.fail("count larger than the input")
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string; it aliases the input.
func (r *dumpReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("length past the end")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *dumpReader) id() StreamID {
	return StreamID{Ms: r.uvarint(), Seq: r.uvarint()}
}

func (r *dumpReader) decodeString(e *Entry) {
	v := r.bytes()
	if r.err != nil {
		return
	}
	switch {
	case e.Enc != EncRaw && e.Enc != EncEmbstr && !e.Enc.IsInt():
		r.fail("string encoding")
		return
	case e.Enc.IsInt() && !isRedisInt(v):
		r.fail("int encoding of a non-integer")
		return
	case e.Enc == EncEmbstr && len(v) > embstrMax:
		r.fail("embstr encoding of a long string")
		return
	}
	e.Str = append(make([]byte, 0, len(v)), v...)
}

func (r *dumpReader) decodeBitmap() *Bitmap {
	n := r.uvarint()
	if n > dumpMaxStrLen {
		r.fail("bitmap longer than 512 MB")
	}
	pages := r.count(2) // gap and form at least
	if r.err != nil {
		return nil
	}
	bm := &Bitmap{n: int64(n)}
	numPages := bm.numPages()
	p := int64(-1)
	for range pages {
		gap := r.uvarint()
		if r.err != nil {
			return nil
		}
		if gap >= uint64(numPages-p-1) {
			r.fail("bitmap page past the length")
			return nil
		}
		p += int64(gap) + 1
		// bits at or past lim would lie past the string's end
		lim := min(bm.n*8-p*pageBits, pageBits)
		var pg page
		switch r.byte() {
		case dumpPageSparse:
			cnt := r.count(1)
			if r.err == nil && (cnt == 0 || cnt > sparseMax) {
				r.fail("sparse page size")
			}
			if r.err != nil {
				return nil
			}
			pos := make([]uint16, cnt)
			last := int64(-1)
			for i := range pos {
				g := r.uvarint()
				if r.err != nil {
					return nil
				}
				if g >= uint64(lim-last-1) {
					r.fail("sparse bit past the page or the length")
					return nil
				}
				last += int64(g) + 1
				pos[i] = uint16(last)
			}
			pg = page{pos: pos, card: uint32(cnt)}
		case dumpPageDense:
			if len(r.b) < PageBytes {
				r.fail("truncated dense page")
				return nil
			}
			d := new([PageBytes]byte)
			copy(d[:], r.b)
			r.b = r.b[PageBytes:]
			card := popcount(d[:])
			if card == 0 {
				r.fail("empty dense page")
				return nil
			}
			if lim < pageBits && countBits(d[:], int(lim), pageBits) != 0 {
				r.fail("dense bit past the length")
				return nil
			}
			pg = page{dense: d, card: uint32(card)}
		default:
			r.fail("page form")
			return nil
		}
		*bm.pageFor(p) = pg
	}
	return bm
}

func (r *dumpReader) decodeList() *List {
	n := r.count(1)
	if r.err == nil && n == 0 {
		r.fail("empty list")
	}
	if r.err != nil {
		return nil
	}
	// Chunks are cut where PushBack would cut them (a chunk takes
	// elements while they fit in listChunkBytes, and at least one), but
	// each buffer is allocated once at its final size: a first pass over
	// the chunk's elements measures it, a second fills it.
	l := &List{n: n}
	for left := n; left > 0; {
		p := dumpReader{b: r.b}
		used, k := 0, 0
		for k < left {
			v := p.bytes()
			if p.err != nil {
				r.err = p.err
				return nil
			}
			need := entrySize(len(v))
			if k > 0 && used+need > listChunkBytes {
				break
			}
			used += need
			k++
		}
		c := &listChunk{buf: make([]byte, used), end: int32(used), n: int32(k)}
		off := 0
		for range k {
			off += putEntry(c.buf[off:], r.bytes())
		}
		l.base = append(l.base, c)
		left -= k
	}
	l.hi = len(l.base)
	return l
}

func (r *dumpReader) decodeStream() *Stream {
	s := &Stream{
		lastID:       r.id(),
		firstID:      r.id(),
		maxDeletedID: r.id(),
		entriesAdded: r.varint(),
	}
	nblocks := r.count(4) // master, fields, size
	if r.err != nil {
		return nil
	}
	if nblocks > 0 {
		s.blocks = make([]*streamBlock, 0, nblocks)
	}
	var prev StreamID // the last record's id, once there is one
	var fv [][]byte
	var deleted []int
	for bi := range nblocks {
		master := r.id()
		nf := r.count(1)
		if r.err == nil && nf == 0 {
			r.fail("stream block without fields")
		}
		if r.err != nil {
			return nil
		}
		fields := make([][]byte, nf)
		for i := range fields {
			fields[i] = r.bytes()
		}
		recs0 := r.bytes()
		recs := dumpReader{b: recs0}
		if r.err != nil {
			return nil
		}
		var b *streamBlock
		deleted = deleted[:0]
		for len(recs.b) > 0 {
			flags := recs.byte()
			ms, seq := recs.uvarint(), recs.uvarint()
			if recs.err == nil && flags&^(recDeleted|recSameFields) != 0 {
				recs.fail("stream record flags")
			}
			if recs.err == nil && ms > math.MaxUint64-master.Ms {
				recs.fail("stream id overflow")
			}
			id := StreamID{master.Ms + ms, seq}
			fv = fv[:0]
			if flags&recSameFields != 0 {
				for _, f := range fields {
					fv = append(fv, f, recs.bytes())
				}
			} else {
				n := recs.count(2)
				if recs.err == nil && n == 0 {
					recs.fail("stream record without fields")
				}
				for range 2 * n {
					fv = append(fv, recs.bytes())
					if recs.err != nil {
						break
					}
				}
			}
			switch {
			case recs.err != nil:
			case (bi > 0 || b != nil) && !prev.Less(id): // blocks are never empty
				recs.fail("stream ids out of order")
			case s.lastID.Less(id):
				recs.fail("stream id past the last id")
			case b == nil && (id != master || flags&recSameFields == 0):
				recs.fail("stream block does not start with its master entry")
			case flags&recSameFields == 0 && sameFieldsAs(fields, fv):
				recs.fail("stream record repeats the master fields")
			}
			if recs.err != nil {
				r.err = recs.err
				return nil
			}
			// Rebuild as Stream.Append does, so the emulated listpack
			// size is the engine's own arithmetic.
			if b == nil {
				b = newStreamBlock(id, fv)
				b.buf = make([]byte, 0, len(recs0)) // the records are as big as on the wire
			} else {
				b.lpBytes += lpIntSize(int64(b.live+1)) - lpIntSize(int64(b.live))
			}
			if flags&recDeleted != 0 {
				deleted = append(deleted, len(b.buf))
			}
			b.appendRecord(id, fv)
			b.live++
			b.last = id
			prev = id
		}
		if b == nil {
			r.fail("empty stream block")
			return nil
		}
		s.blocks = append(s.blocks, b)
		s.length += int64(b.live)
		for _, off := range deleted {
			s.markDeleted(len(s.blocks)-1, off, false)
		}
	}
	ngroups := r.count(5) // name, id, entries-read, consumers, pending
	if r.err != nil {
		return nil
	}
	for range ngroups {
		g := &StreamGroup{Name: string(r.bytes()), LastID: r.id(), EntriesRead: r.varint(), byTime: pelList{byTime: true}}
		if r.err == nil && len(s.groups) > 0 && s.groups[len(s.groups)-1].Name >= g.Name {
			r.fail("stream groups out of order")
		}
		ncons := r.count(2) // name, seen-time
		if r.err != nil {
			return nil
		}
		cons := make([]*StreamConsumer, ncons)
		if ncons > 0 {
			g.consumers = make(map[string]*StreamConsumer, ncons)
		}
		for i := range cons {
			c := &StreamConsumer{Name: string(r.bytes()), SeenTime: r.varint()}
			if r.err == nil && i > 0 && cons[i-1].Name >= c.Name {
				r.fail("stream consumers out of order")
			}
			if r.err != nil {
				return nil
			}
			cons[i] = c
			g.consumers[c.Name] = c
		}
		npel := r.count(5) // ms gap, seq, time, count, consumer
		if r.err != nil {
			return nil
		}
		var prevPEL StreamID
		for i := range npel {
			gap := r.uvarint()
			if r.err == nil && gap > math.MaxUint64-prevPEL.Ms {
				r.fail("pending id overflow")
			}
			p := &PendingEntry{ID: StreamID{prevPEL.Ms + gap, r.uvarint()}, DeliveryTime: r.varint(), DeliveryCount: r.varint()}
			ci := r.uvarint()
			switch {
			case r.err != nil:
			case i > 0 && !prevPEL.Less(p.ID):
				r.fail("pending entries out of order")
			case ci >= uint64(len(cons)):
				r.fail("pending entry of no consumer")
			}
			if r.err != nil {
				return nil
			}
			prevPEL = p.ID
			p.Consumer = cons[ci]
			g.PEL.insert(p)
			g.byTime.insert(p)
			p.Consumer.PEL.insert(p)
		}
		s.groups = append(s.groups, g)
	}
	return s
}

// sameFieldsAs reports whether the pairs fv have exactly fields, as
// streamBlock.sameFields.
func sameFieldsAs(fields, fv [][]byte) bool {
	if len(fv)/2 != len(fields) {
		return false
	}
	for i, f := range fields {
		if !bytes.Equal(f, fv[2*i]) {
			return false
		}
	}
	return true
}
