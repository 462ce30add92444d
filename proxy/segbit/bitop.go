package segbit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// MaxNotSegments bounds the segments BITOP NOT may write: NOT covers the
// whole logical length, so a source with one bit near 2^40 would otherwise
// fill 2^17 one-megabyte segments with ones.
const MaxNotSegments = 1 << 16

// errNotTooBig: BITOP NOT over more than MaxNotSegments segments.
const errNotTooBig = "ERR BITOP NOT on a segmented bitmap would write %d segments (the limit is %d)"

// BitOp runs BITOP AND|OR|XOR|NOT dest src [src ...] segment by segment:
// segment i of dest is BITOP of segment i of the sources, which share a
// slot, so every part runs on one node. dest's segments that the result
// does not cover are deleted. The reply is the result's length in bytes
// (the longest source's logical length); an empty result deletes dest.
func (h *Handler) BitOp(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	return h.bitop(ctx, b, args, nil)
}

// bitop is BitOp where plain, if not nil, picks the keys that are not
// segmented: a plain BITOP must not mix them.
func (h *Handler) bitop(ctx context.Context, b Backend, args [][]byte, plain func([]byte) bool) (resp.Value, error) {
	if len(args) < 4 {
		return resp.Value{}, wrongArgs(args[0])
	}
	var op string
	for _, o := range []string{"AND", "OR", "XOR", "NOT"} {
		if strings.EqualFold(string(resp.CString(args[1], len(args[1]))), o) { // strcasecmp, as Redis
			op = o
		}
	}
	if op == "" {
		return resp.Value{}, replyErr(resp.ErrSyntax)
	}
	dest, srcKeys := args[2], args[3:]
	if op == "NOT" && len(srcKeys) != 1 {
		return resp.Value{}, replyErr(resp.ErrBitopNot)
	}
	if plain != nil {
		for _, k := range args[2:] {
			if plain(k) {
				return resp.Value{}, replyErr(fmt.Sprintf(errMixedBitop, k))
			}
		}
	}

	// Read every index once (a key may appear several times), then the
	// sources' segment lengths.
	uniq := [][]byte{dest}
	pos := map[string]int{string(dest): 0}
	srcIdx := make([]int, len(srcKeys))
	for i, k := range srcKeys {
		j, ok := pos[string(k)]
		if !ok {
			j = len(uniq)
			pos[string(k)] = j
			uniq = append(uniq, k)
		}
		srcIdx[i] = j
	}
	bms, err := h.scanIndex(ctx, b, uniq)
	if err != nil {
		return resp.Value{}, err
	}
	destBm := bms[0]
	srcs := make([]*bitmap, len(srcKeys))
	var toMeasure []*bitmap
	for i, j := range srcIdx {
		srcs[i] = bms[j]
		if !slices.Contains(toMeasure, bms[j]) {
			toMeasure = append(toMeasure, bms[j])
		}
	}
	if err := h.measure(ctx, b, toMeasure); err != nil {
		return resp.Value{}, err
	}
	l := h.layout
	var maxLen, top uint64
	for _, s := range srcs {
		if n := s.length(l); n > maxLen {
			maxLen = n
			top, _ = s.highest()
		}
	}
	if maxLen == 0 {
		// Redis deletes dest when the result is empty.
		if err := h.deleteBitmaps(ctx, b, []*bitmap{destBm}); err != nil {
			return resp.Value{}, err
		}
		return intValue(0), nil
	}

	// The result's segments.
	var result []uint64
	switch op {
	case "OR", "XOR":
		for _, s := range srcs {
			result = append(result, s.segs...)
		}
	case "AND":
		// Where a source lacks a segment the result is zeros, which need
		// no key, except in the top segment, which carries the length.
		for _, seg := range srcs[0].segs {
			in := true
			for _, s := range srcs[1:] {
				if _, ok := slices.BinarySearch(s.segs, seg); !ok {
					in = false
					break
				}
			}
			if in {
				result = append(result, seg)
			}
		}
		result = append(result, top)
	case "NOT":
		if top >= MaxNotSegments {
			return resp.Value{}, replyErr(fmt.Sprintf(errNotTooBig, top+1, MaxNotSegments))
		}
		for seg := uint64(0); seg <= top; seg++ {
			result = append(result, seg)
		}
	}
	slices.Sort(result)
	result = slices.Compact(result)
	var stale []uint64 // dest segments the result does not cover
	for _, seg := range destBm.indexed {
		if _, ok := slices.BinarySearch(result, seg); !ok {
			stale = append(stale, seg)
		}
	}

	// Stale segments leave the index before they are deleted, and the
	// result's enter it after they are written (see "Consistency"). A
	// failure in between puts back the bits of both (best effort), so
	// that what the failed steps left is found again, by a DEL say; a
	// bit naming an absent segment costs a read, never a wrong answer.
	fail := func(err error) (resp.Value, error) {
		touched := slices.Concat(stale, result)
		slices.Sort(touched)
		run(ctx, b, h.indexSets(dest, slices.Compact(touched)))
		return resp.Value{}, err
	}
	if _, err := run(ctx, b, h.indexClears(dest, stale)); err != nil {
		return fail(err)
	}
	var cmds [][][]byte
	for _, seg := range stale {
		cmds = append(cmds, [][]byte{[]byte("DEL"), l.SegmentKey(dest, seg)})
	}
	if op != "NOT" {
		for _, seg := range result {
			cmd := [][]byte{[]byte("BITOP"), []byte(op), l.SegmentKey(dest, seg)}
			for _, k := range srcKeys {
				cmd = append(cmd, l.SegmentKey(k, seg))
			}
			cmds = append(cmds, cmd)
		}
		if _, err := run(ctx, b, cmds); err != nil {
			return fail(err)
		}
	} else if err := h.bitopNot(ctx, b, dest, srcs[0], result, top, cmds); err != nil {
		return fail(err)
	}
	if _, err := run(ctx, b, h.indexSets(dest, result)); err != nil {
		return fail(err)
	}
	return intValue(int64(maxLen)), nil
}

// bitopNot writes dest = NOT src over segments 0..top. A segment below
// top is a full segment of the logical bitmap even where src's key is
// shorter or missing, so each dest segment is first a copy of src's,
// padded with zeros to its logical size, and then inverted in place:
//
//	step 1: BITOP OR dest_i src_i (or DEL dest_i where src has no segment i),
//	        plus the stale deletes passed in;
//	step 2: SETBIT dest_i <size_i*8-1> 0 where src's segment is short;
//	step 3: BITOP NOT dest_i dest_i.
func (h *Handler) bitopNot(ctx context.Context, b Backend, dest []byte, src *bitmap, segs []uint64, top uint64, cmds [][][]byte) error {
	l := h.layout
	same := string(dest) == string(src.key)
	var pad [][][]byte
	for _, seg := range segs {
		d := l.SegmentKey(dest, seg)
		have := src.lenOf(seg)
		switch {
		case have == 0:
			cmds = append(cmds, [][]byte{[]byte("DEL"), d})
		case !same:
			cmds = append(cmds, [][]byte{[]byte("BITOP"), []byte("OR"), d, l.SegmentKey(src.key, seg)})
		}
		size := l.segmentBytes()
		if seg == top {
			size = src.lenOf(top)
		}
		if have < size {
			pad = append(pad, setbitCmd(d, size*8-1, 0))
		}
	}
	if _, err := run(ctx, b, cmds); err != nil {
		return err
	}
	if _, err := run(ctx, b, pad); err != nil {
		return err
	}
	not := make([][][]byte, len(segs))
	for i, seg := range segs {
		d := l.SegmentKey(dest, seg)
		not[i] = [][]byte{[]byte("BITOP"), []byte("NOT"), d, d}
	}
	_, err := run(ctx, b, not)
	return err
}

// deleteBitmaps deletes the segments the indexes of bms name (after
// taking them out of the index).
func (h *Handler) deleteBitmaps(ctx context.Context, b Backend, bms []*bitmap) error {
	_, err := h.deleteCounting(ctx, b, bms, nil, false)
	return err
}

// deleteCounting is deleteBitmaps plus a plain DEL of each of plainKeys
// in the same step; it returns how many bitmaps had a segment plus how
// many plain keys existed. With shadows, the ordinary key named as each
// bitmap is deleted too, and a bitmap counts if either existed.
//
// The index leaves first: one GETDEL per bottom-level index key, then,
// with the segments' deletes, a SETBIT for every bit the GETDEL returned
// that the scan had not seen (a segment a concurrent write added since,
// which stays). So a write racing the DEL ends with its segment indexed
// or deleted, never orphaned (see "Consistency"). Upper-level index keys
// stay: a concurrent write may need the path they hold, and an upper bit
// with nothing below it costs one read.
func (h *Handler) deleteCounting(ctx context.Context, b Backend, bms []*bitmap, plainKeys [][]byte, shadows bool) (int64, error) {
	var cmds [][][]byte
	for _, bm := range bms {
		for _, k := range bm.bottom {
			cmds = append(cmds, [][]byte{[]byte("GETDEL"), k})
		}
	}
	rs, err := run(ctx, b, cmds)
	if err != nil {
		return 0, err
	}
	var restore [][][]byte
	i := 0
	for _, bm := range bms {
		for j, k := range bm.bottom {
			v, err := bulkReply(rs[i], cmds[i])
			if err != nil {
				return 0, err
			}
			i++
			n := bm.bottomN[j]
			forEachBit(v, func(bit uint64) {
				if _, seen := slices.BinarySearch(bm.indexed, n<<fanoutBits|bit); !seen {
					restore = append(restore, setbitCmd(k, bit, 1))
				}
			})
		}
	}

	cmds = restore
	owner := make([]int, len(restore))
	for i := range owner {
		owner[i] = -2 // a restored index bit: not counted
	}
	for i, bm := range bms {
		for _, seg := range bm.indexed {
			cmds = append(cmds, [][]byte{[]byte("DEL"), h.layout.SegmentKey(bm.key, seg)})
			owner = append(owner, i)
		}
		if shadows {
			cmds = append(cmds, [][]byte{[]byte("DEL"), bm.key})
			owner = append(owner, i)
		}
	}
	for _, k := range plainKeys {
		cmds = append(cmds, [][]byte{[]byte("DEL"), k})
		owner = append(owner, -1)
	}
	rs, err = run(ctx, b, cmds)
	if err != nil {
		return 0, h.reindex(ctx, b, bms, err)
	}
	existed := make([]bool, len(bms))
	var n int64
	for i, r := range rs {
		d, err := intReply(r, cmds[i])
		if err != nil {
			return 0, h.reindex(ctx, b, bms, err)
		}
		switch {
		case owner[i] == -1:
			n += d
		case owner[i] >= 0 && d > 0:
			existed[owner[i]] = true
		}
	}
	for _, e := range existed {
		if e {
			n++
		}
	}
	return n, nil
}

// reindex puts back the index bits of every segment bms name after a
// DEL failed between taking them out and deleting the segments, so that
// the segments left are found again (by a DEL run again, say); bits of
// segments that were deleted cost a read, never a wrong answer. It
// returns err, the DEL's failure.
func (h *Handler) reindex(ctx context.Context, b Backend, bms []*bitmap, err error) error {
	var cmds [][][]byte
	for _, bm := range bms {
		cmds = append(cmds, h.indexSets(bm.key, bm.indexed)...)
	}
	run(ctx, b, cmds) // best effort: the DEL fails either way
	return err
}

// Del runs DEL key [key ...] on segmented bitmaps: every segment the
// index names, then the index keys. The reply counts the bitmaps that had
// at least one segment.
func (h *Handler) Del(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	return h.del(ctx, b, args, nil, false)
}

// del is Del where plain, if not nil, picks the keys that are ordinary
// keys (a plain DEL mixing segmented and ordinary keys). With shadows (a
// plain DEL of keys matching --segment-keys), an ordinary value stored
// under a segmented key's name (SET before the pattern applied, or GET's
// and SET's view of the name) goes too, so DEL leaves nothing under the
// name, as in Redis.
func (h *Handler) del(ctx context.Context, b Backend, args [][]byte, plain func([]byte) bool, shadows bool) (resp.Value, error) {
	if len(args) < 2 {
		return resp.Value{}, wrongArgs(args[0])
	}
	var segKeys, plainKeys [][]byte
	seen := map[string]bool{}
	for _, k := range args[1:] {
		if plain != nil && plain(k) {
			plainKeys = append(plainKeys, k)
			continue
		}
		if !seen[string(k)] { // DEL k k counts k once
			seen[string(k)] = true
			segKeys = append(segKeys, k)
		}
	}
	bms, err := h.scanIndex(ctx, b, segKeys)
	if err != nil {
		return resp.Value{}, err
	}
	n, err := h.deleteCounting(ctx, b, bms, plainKeys, shadows)
	return intValue(n), err
}

// Info runs SEGBIT.INFO key and replies a flat array of field names and
// values (a map in spirit), read from the index and the segments'
// lengths only (no bit counting):
//
//	segment_bits      bits per segment, as --segment-bits gives it
//	segments          segments that exist
//	indexed_segments  segments the index names (>= segments)
//	length            logical length in bytes (1 + highest byte written)
//	highest_segment   highest existing segment, -1 if none
//	index_keys        index keys that exist
//	root_key          the name of the root index key
func (h *Handler) Info(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	if len(args) != 2 {
		return resp.Value{}, wrongArgs(args[0])
	}
	bms, err := h.describe(ctx, b, args[1])
	if err != nil {
		return resp.Value{}, err
	}
	bm := bms[0]
	hi := int64(-1)
	if s, ok := bm.highest(); ok {
		hi = int64(s)
	}
	field := func(name string, v resp.Value) []resp.Value {
		return []resp.Value{{Type: '$', Str: []byte(name)}, v}
	}
	var e []resp.Value
	e = append(e, field("segment_bits", intValue(int64(h.layout.SegmentSize())))...)
	e = append(e, field("segments", intValue(int64(len(bm.segs))))...)
	e = append(e, field("indexed_segments", intValue(int64(len(bm.indexed))))...)
	e = append(e, field("length", intValue(int64(bm.length(h.layout))))...)
	e = append(e, field("highest_segment", intValue(hi))...)
	e = append(e, field("index_keys", intValue(int64(len(bm.indexKeys))))...)
	e = append(e, field("root_key", resp.Value{Type: '$', Str: h.layout.RootKey(bm.key)})...)
	return resp.Value{Type: '*', Elems: e}, nil
}
