package segbit

import (
	"context"
	"math/bits"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/slots"
)

// bitmap is what the index, and then the segments' lengths, say about one
// logical bitmap.
type bitmap struct {
	key       []byte
	indexed   []uint64 // segment numbers the index names, ascending
	indexKeys [][]byte // index keys that exist, every level
	// bottom are the bottom-level index keys that exist, with the n of
	// each (the segments it covers are n<<fanoutBits | bit), for DEL.
	bottom  [][]byte
	bottomN []uint64

	// Filled by measure: the segments that really exist (STRLEN > 0),
	// ascending, and their lengths in bytes.
	segs []uint64
	lens []uint64
}

// length is the logical length in bytes: 1 + the highest byte ever
// written, or 0 if no segment exists.
func (bm *bitmap) length(l Layout) uint64 {
	if len(bm.segs) == 0 {
		return 0
	}
	last := len(bm.segs) - 1
	return bm.segs[last]*l.segmentBytes() + bm.lens[last]
}

// highest is the highest existing segment; ok is false if none exists.
func (bm *bitmap) highest() (seg uint64, ok bool) {
	if len(bm.segs) == 0 {
		return 0, false
	}
	return bm.segs[len(bm.segs)-1], true
}

// lenOf is the length of segment seg in bytes (0 if it does not exist).
func (bm *bitmap) lenOf(seg uint64) uint64 {
	if i, ok := slices.BinarySearch(bm.segs, seg); ok {
		return bm.lens[i]
	}
	return 0
}

// scanIndex reads the indexes of the given bitmaps, one level per step
// (all bitmaps together), and returns the segments each index names.
func (h *Handler) scanIndex(ctx context.Context, b Backend, keys [][]byte) ([]*bitmap, error) {
	l := h.layout
	type ref struct {
		bm *bitmap
		n  uint64
	}
	bms := make([]*bitmap, len(keys))
	frontier := make([]ref, len(keys))
	slotOf := make(map[*bitmap]uint16, len(keys))
	for i, k := range keys {
		bms[i] = &bitmap{key: k}
		frontier[i] = ref{bm: bms[i]}
		slotOf[bms[i]] = slots.Slot(k)
	}
	for level := 0; level < l.Levels() && len(frontier) > 0; level++ {
		cmds := make([][][]byte, len(frontier))
		for i, f := range frontier {
			cmds[i] = [][]byte{[]byte("GET"), indexKey(f.bm.key, slotOf[f.bm], level, f.n)}
		}
		rs, err := run(ctx, b, cmds)
		if err != nil {
			return nil, err
		}
		var next []ref
		for i, f := range frontier {
			v, err := bulkReply(rs[i], cmds[i])
			if err != nil {
				return nil, err
			}
			if v == nil {
				continue
			}
			f.bm.indexKeys = append(f.bm.indexKeys, cmds[i][1])
			if level == l.Levels()-1 {
				f.bm.bottom = append(f.bm.bottom, cmds[i][1])
				f.bm.bottomN = append(f.bm.bottomN, f.n)
			}
			forEachBit(v, func(bit uint64) {
				child := f.n<<fanoutBits | bit
				if level == l.Levels()-1 {
					if child <= l.maxSegment() {
						f.bm.indexed = append(f.bm.indexed, child)
					}
				} else {
					next = append(next, ref{bm: f.bm, n: child})
				}
			})
		}
		frontier = next
	}
	for _, bm := range bms {
		slices.Sort(bm.indexed)
		bm.indexed = slices.Compact(bm.indexed)
	}
	return bms, nil
}

// forEachBit calls fn with the position of every set bit of v, in
// ascending order (bit 0 is the most significant bit of v[0], as Redis
// numbers them).
func forEachBit(v []byte, fn func(uint64)) {
	for j, c := range v {
		for c != 0 {
			k := bits.LeadingZeros8(c)
			fn(uint64(j)*8 + uint64(k))
			c &^= 0x80 >> k
		}
	}
}

// measure reads the length of every indexed segment of bms in one step
// and keeps those that exist.
func (h *Handler) measure(ctx context.Context, b Backend, bms []*bitmap) error {
	var cmds [][][]byte
	for _, bm := range bms {
		for _, s := range bm.indexed {
			cmds = append(cmds, [][]byte{[]byte("STRLEN"), h.layout.SegmentKey(bm.key, s)})
		}
	}
	rs, err := run(ctx, b, cmds)
	if err != nil {
		return err
	}
	i := 0
	for _, bm := range bms {
		bm.segs, bm.lens = bm.segs[:0], bm.lens[:0]
		for _, s := range bm.indexed {
			n, err := intReply(rs[i], cmds[i])
			if err != nil {
				return err
			}
			i++
			if n > 0 {
				bm.segs = append(bm.segs, s)
				bm.lens = append(bm.lens, uint64(n))
			}
		}
	}
	return nil
}

// measureTop finds the highest indexed segment of bm that exists,
// reading lengths from the top down a batch at a time, and records it
// alone in bm.segs and bm.lens: enough for the logical length (length,
// highest) without a STRLEN per segment. Commands that do not need to
// know which of the lower segments exist (a missing one counts 0, has no
// 1 bit) use it instead of measure.
func (h *Handler) measureTop(ctx context.Context, b Backend, bm *bitmap) error {
	bm.segs, bm.lens = bm.segs[:0], bm.lens[:0]
	for top := len(bm.indexed); top > 0; top -= bitposBatch {
		part := bm.indexed[max(top-bitposBatch, 0):top]
		cmds := make([][][]byte, len(part))
		for i, s := range part {
			cmds[i] = [][]byte{[]byte("STRLEN"), h.layout.SegmentKey(bm.key, s)}
		}
		rs, err := run(ctx, b, cmds)
		if err != nil {
			return err
		}
		for i := len(part) - 1; i >= 0; i-- {
			n, err := intReply(rs[i], cmds[i])
			if err != nil {
				return err
			}
			if n > 0 {
				bm.segs = append(bm.segs, part[i])
				bm.lens = append(bm.lens, uint64(n))
				return nil
			}
		}
	}
	return nil
}

// describe is scanIndex then measure.
func (h *Handler) describe(ctx context.Context, b Backend, keys ...[]byte) ([]*bitmap, error) {
	bms, err := h.scanIndex(ctx, b, keys)
	if err != nil {
		return nil, err
	}
	return bms, h.measure(ctx, b, bms)
}

// indexSets returns the commands that record segs (any order) in the
// index of key: one SETBIT per distinct index bit, every level.
func (h *Handler) indexSets(key []byte, segs []uint64) [][][]byte {
	l := h.layout
	slot := slots.Slot(key)
	type pos struct {
		level  int
		n, bit uint64
	}
	seen := make(map[pos]bool)
	var cmds [][][]byte
	for level := 0; level < l.Levels(); level++ {
		for _, s := range segs {
			n, bit := l.indexPos(s, level)
			p := pos{level, n, bit}
			if seen[p] {
				continue
			}
			seen[p] = true
			cmds = append(cmds, setbitCmd(indexKey(key, slot, level, n), bit, 1))
		}
	}
	return cmds
}

// indexClears returns the commands that drop segs from the bottom level
// of the index of key. Upper levels keep their bits: an index bit with
// nothing below it costs a read, never a wrong answer.
func (h *Handler) indexClears(key []byte, segs []uint64) [][][]byte {
	l := h.layout
	slot := slots.Slot(key)
	bottom := l.Levels() - 1
	cmds := make([][][]byte, 0, len(segs))
	for _, s := range segs {
		n, bit := l.indexPos(s, bottom)
		cmds = append(cmds, setbitCmd(indexKey(key, slot, bottom, n), bit, 0))
	}
	return cmds
}

func setbitCmd(key []byte, off uint64, val int) [][]byte {
	return [][]byte{[]byte("SETBIT"), key, strconv.AppendUint(nil, off, 10), {byte('0' + val)}}
}
