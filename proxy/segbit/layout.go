package segbit

import (
	"fmt"
	"strconv"

	"github.com/shardgate/shardgate/slots"
)

const (
	// DefaultSegmentBits is log2 of the default segment size in bits:
	// 2^23 bits, 1 MB per segment key.
	DefaultSegmentBits = 23
	// MinSegmentBits is the smallest segment size accepted (2^12 bits,
	// 512 bytes): smaller segments would only multiply keys.
	MinSegmentBits = 12
	// MaxSegmentBits is the largest segment size accepted: 2^32 bits is
	// the most one node bitmap holds (512 MB, proto-max-bulk-len).
	MaxSegmentBits = 32

	// MaxOffset is the highest bit offset of a segmented bitmap.
	MaxOffset = 1<<63 - 1

	// fanoutBits is log2 of the number of bits in one index key.
	fanoutBits = 17
	fanout     = 1 << fanoutBits

	// maxBatch caps the commands of one Backend.Do call; a larger step is
	// cut into several calls.
	maxBatch = 4096
)

// Layout maps a logical bitmap onto its segment and index keys. The zero
// Layout is not valid; use NewLayout or DefaultLayout.
type Layout struct {
	bits   uint8 // log2 of the segment size in bits
	levels uint8 // index levels
}

// NewLayout returns the layout for segments of 2^segmentBits bits, which
// must be in MinSegmentBits..MaxSegmentBits.
func NewLayout(segmentBits int) (Layout, error) {
	if segmentBits < MinSegmentBits || segmentBits > MaxSegmentBits {
		return Layout{}, fmt.Errorf("segbit: segment bits %d out of range %d..%d", segmentBits, MinSegmentBits, MaxSegmentBits)
	}
	d := 63 - segmentBits
	return Layout{bits: uint8(segmentBits), levels: uint8((d + fanoutBits - 1) / fanoutBits)}, nil
}

// DefaultLayout is NewLayout(DefaultSegmentBits).
func DefaultLayout() Layout {
	l, _ := NewLayout(DefaultSegmentBits)
	return l
}

// SegmentBits is log2 of the segment size in bits.
func (l Layout) SegmentBits() int { return int(l.bits) }

// SegmentSize is the number of bits in one segment.
func (l Layout) SegmentSize() uint64 { return 1 << l.bits }

// segmentBytes is the number of bytes in one full segment.
func (l Layout) segmentBytes() uint64 { return 1 << (l.bits - 3) }

// Levels is the number of levels of the index tree.
func (l Layout) Levels() int { return int(l.levels) }

// Locate splits a logical bit offset into its segment number and the
// offset inside that segment.
func (l Layout) Locate(off uint64) (seg, local uint64) {
	return off >> l.bits, off & (l.SegmentSize() - 1)
}

// SegmentKey is the node key of segment i of bitmap key:
// "{sg:<i>}" + key.
func (l Layout) SegmentKey(key []byte, i uint64) []byte {
	b := make([]byte, 0, len(key)+24)
	b = append(b, "{sg:"...)
	b = strconv.AppendUint(b, i, 10)
	b = append(b, '}')
	return append(b, key...)
}

// IndexKey is the node key of index key number n at level (0 = root) of
// bitmap key: "{sgi:<slot(key)>}<level>:<n>:" + key.
func (l Layout) IndexKey(key []byte, level int, n uint64) []byte {
	return indexKey(key, slots.Slot(key), level, n)
}

// RootKey is the root index key of bitmap key, IndexKey(key, 0, 0): it
// exists whenever the bitmap has (or had) a segment.
func (l Layout) RootKey(key []byte) []byte { return l.IndexKey(key, 0, 0) }

func indexKey(key []byte, slot uint16, level int, n uint64) []byte {
	b := make([]byte, 0, len(key)+40)
	b = append(b, "{sgi:"...)
	b = strconv.AppendUint(b, uint64(slot), 10)
	b = append(b, '}')
	b = strconv.AppendInt(b, int64(level), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, n, 10)
	b = append(b, ':')
	return append(b, key...)
}

// shift is how far a segment number is shifted right to give its bit at
// index level.
func (l Layout) shift(level int) uint {
	return uint(fanoutBits * (int(l.levels) - 1 - level))
}

// indexPos is the index key number and bit that record segment seg at
// level.
func (l Layout) indexPos(seg uint64, level int) (n, bit uint64) {
	s := l.shift(level)
	return seg >> (s + fanoutBits), (seg >> s) & (fanout - 1)
}

// maxSegment is the highest segment number of the layout.
func (l Layout) maxSegment() uint64 { return MaxOffset >> l.bits }
