package segbit

import (
	"context"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// bitposBatch is how many segments one BITPOS step asks at once: the
// first hit ends the search, so asking every segment at once would scan
// segments whose answer is never used.
const bitposBatch = 64

// BitPlan is a SETBIT or GETBIT on a segmented bitmap as the steps it
// takes: Cmd, on the node of its (segment) key, then, for SETBIT, the
// commands that record the segment in the bitmap's index
// (IndexCommands), once Cmd has succeeded (see "Consistency" in the package doc: a DEL clears the
// index before it deletes segments, so no interleaving leaves a segment
// the index does not name). A proxy can run these inside a client's
// pipeline, the Cmd of many commands in one round trip and their Index in
// the next, where Exec runs each command alone.
type BitPlan struct {
	Cmd [][]byte
	// Set: a SETBIT, which must record segment Seg of bitmap Key
	// (IndexCommands) once Cmd has succeeded.
	Set bool
	Key []byte
	Seg uint64
}

// IndexCommands are the commands recording a SETBIT plan's segment in its
// bitmap's index (none for GETBIT).
func (h *Handler) IndexCommands(p BitPlan) [][][]byte {
	if !p.Set {
		return nil
	}
	return h.indexSets(p.Key, []uint64{p.Seg})
}

// PlanBit checks SETBIT key offset value or GETBIT key offset (plain or
// SEGBIT.*) as Exec does, and returns its plan; ok is false for any other
// command.
func (h *Handler) PlanBit(args [][]byte) (plan BitPlan, ok bool, err error) {
	op, _, known := Lookup(args[0])
	switch {
	case !known || (op != OpSetBit && op != OpGetBit):
		return BitPlan{}, false, nil
	case op == OpSetBit && len(args) != 4, op == OpGetBit && len(args) != 3:
		return BitPlan{}, true, wrongArgs(args[0])
	}
	off, err := parseOffset(args[2])
	if err != nil {
		return BitPlan{}, true, err
	}
	seg, local := h.layout.Locate(off)
	key := args[1]
	if op == OpGetBit {
		cmd := [][]byte{[]byte("GETBIT"), h.layout.SegmentKey(key, seg), strconv.AppendUint(nil, local, 10)}
		return BitPlan{Cmd: cmd}, true, nil
	}
	v, isInt := resp.ParseInt(args[3])
	if !isInt || v&^1 != 0 {
		return BitPlan{}, true, replyErr(resp.ErrBitValue)
	}
	return BitPlan{
		Cmd: setbitCmd(h.layout.SegmentKey(key, seg), local, int(v)),
		Set: true, Key: append([]byte(nil), key...), Seg: seg,
	}, true, nil
}

// BitReply is the reply to a planned command given the node's reply to
// its Cmd: the bit, or the error that fails the command.
func BitReply(cmd [][]byte, r resp.Value) (resp.Value, error) {
	if r.IsError() {
		return resp.Value{}, &PartError{Key: cmdKey(cmd), Reply: string(r.Str)}
	}
	n, err := intReply(r, cmd)
	if err != nil {
		return resp.Value{}, err
	}
	return intValue(n), nil
}

// SetBit runs SETBIT key offset value: it sets the bit in its segment,
// then records the segment in the index, and replies the bit's previous
// value.
func (h *Handler) SetBit(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	return h.runBit(ctx, b, args)
}

// GetBit runs GETBIT key offset on the one segment that holds the bit.
func (h *Handler) GetBit(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	return h.runBit(ctx, b, args)
}

// runBit runs a BitPlan's steps one after the other.
func (h *Handler) runBit(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	plan, _, err := h.PlanBit(args)
	if err != nil {
		return resp.Value{}, err
	}
	rs, err := run(ctx, b, [][][]byte{plan.Cmd})
	if err != nil {
		return resp.Value{}, err
	}
	v, err := BitReply(plan.Cmd, rs[0])
	if err != nil {
		return resp.Value{}, err
	}
	if _, err := run(ctx, b, h.IndexCommands(plan)); err != nil {
		return resp.Value{}, err
	}
	return v, nil
}

// BitCount runs BITCOUNT key [start end [BYTE|BIT]]: the range is taken
// over the logical bitmap (negative values count back from its logical
// length), split into one BITCOUNT per existing segment it covers, and
// the counts are summed. As in Redis 7.0, a missing key answers 0 before
// the range is even parsed.
func (h *Handler) BitCount(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	if len(args) < 2 {
		return resp.Value{}, wrongArgs(args[0])
	}
	key := args[1]
	l := h.layout
	var cmds [][][]byte
	if len(args) == 2 {
		// The whole bitmap: no lengths needed, a segment the index names
		// but that does not exist simply counts 0.
		bms, err := h.scanIndex(ctx, b, [][]byte{key})
		if err != nil {
			return resp.Value{}, err
		}
		for _, s := range bms[0].indexed {
			cmds = append(cmds, [][]byte{[]byte("BITCOUNT"), l.SegmentKey(key, s)})
		}
		return sumCounts(ctx, b, cmds)
	}
	// The logical length from the highest segment alone: a segment the
	// index names but that does not exist simply counts 0.
	bms, err := h.scanIndex(ctx, b, [][]byte{key})
	if err != nil {
		return resp.Value{}, err
	}
	bm := bms[0]
	if err := h.measureTop(ctx, b, bm); err != nil {
		return resp.Value{}, err
	}
	tot := bm.length(l)
	if tot == 0 {
		return intValue(0), nil
	}
	var start, end int64
	isBit := false
	switch len(args) {
	case 4, 5:
		if start, err = parseInt(args[2]); err != nil {
			return resp.Value{}, err
		}
		if end, err = parseInt(args[3]); err != nil {
			return resp.Value{}, err
		}
		if start < 0 && end < 0 && start > end {
			return intValue(0), nil // before the unit is parsed, as Redis 7.0
		}
		if len(args) == 5 {
			if isBit, err = parseUnit(args[4]); err != nil {
				return resp.Value{}, err
			}
		}
	default:
		return resp.Value{}, replyErr(resp.ErrSyntax)
	}
	if isBit {
		tot <<= 3
	}
	s, e, ok := normRange(start, end, tot)
	if !ok {
		return intValue(0), nil
	}
	if !isBit {
		s, e = s<<3, e<<3|7
	}
	for _, seg := range bm.indexed {
		if lo, hi, ok := l.clip(seg, s, e); ok {
			cmds = append(cmds, l.countCmd(key, seg, lo, hi))
		}
	}
	return sumCounts(ctx, b, cmds)
}

// sumCounts runs BITCOUNTs in one step and sums them.
func sumCounts(ctx context.Context, b Backend, cmds [][][]byte) (resp.Value, error) {
	rs, err := run(ctx, b, cmds)
	if err != nil {
		return resp.Value{}, err
	}
	var sum int64
	for i, r := range rs {
		n, err := intReply(r, cmds[i])
		if err != nil {
			return resp.Value{}, err
		}
		sum += n
	}
	return intValue(sum), nil
}

// BitPos runs BITPOS key bit [start [end [BYTE|BIT]]] over the logical
// bitmap: segments are asked in ascending order, a batch at a time, and
// the first hit wins. Missing segments and the bytes past a segment's end
// (below the logical length) are zeros. As in Redis 7.0, the bit is
// checked first, then a missing key answers before the range is parsed.
func (h *Handler) BitPos(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	if len(args) < 3 {
		return resp.Value{}, wrongArgs(args[0])
	}
	bit, err := parseInt(args[2])
	if err != nil {
		return resp.Value{}, err
	}
	if bit != 0 && bit != 1 {
		return resp.Value{}, replyErr(resp.ErrBitposBit)
	}
	key := args[1]
	l := h.layout
	bms, err := h.scanIndex(ctx, b, [][]byte{key})
	if err != nil {
		return resp.Value{}, err
	}
	bm := bms[0]
	// Looking for a 1, missing segments are simply asked (they answer
	// -1), so only the logical length is needed; looking for a 0, which
	// segments exist and how long each is decide the answer.
	segs := bm.indexed
	if bit == 1 {
		err = h.measureTop(ctx, b, bm)
	} else {
		err = h.measure(ctx, b, bms)
		segs = bm.segs
	}
	if err != nil {
		return resp.Value{}, err
	}
	tot := bm.length(l)
	if tot == 0 {
		// A missing key is an infinite run of zeros (Redis 7.0 answers
		// before parsing the range).
		return intValue(-bit), nil
	}
	var start, end int64 = 0, -1
	endGiven, isBit := false, false
	switch len(args) {
	case 3:
	case 4, 5, 6:
		if start, err = parseInt(args[3]); err != nil {
			return resp.Value{}, err
		}
		if len(args) == 6 {
			if isBit, err = parseUnit(args[5]); err != nil {
				return resp.Value{}, err
			}
		}
		if len(args) >= 5 {
			if end, err = parseInt(args[4]); err != nil {
				return resp.Value{}, err
			}
			endGiven = true
		}
	default:
		return resp.Value{}, replyErr(resp.ErrSyntax)
	}
	if isBit {
		tot <<= 3
	}
	s, e, ok := normRange(start, end, tot)
	if !ok {
		return intValue(-1), nil
	}
	if !isBit {
		s, e = s<<3, e<<3|7
	}

	// Build the queries in ascending order, up to the first place where
	// the answer is known without asking (only when looking for a 0: a
	// missing segment, or a segment's end below the logical length).
	type query struct {
		base     uint64 // logical offset of the segment's bit 0
		cmd      [][]byte
		fallback int64 // answer if the node finds nothing; -1: none
	}
	var qs []query
	tail := int64(-1) // the known answer after all queries, if any
	cur := s
	for i, seg := range segs {
		lo, hi, ok := l.clip(seg, cur, e)
		if !ok {
			if seg<<l.bits > e {
				break
			}
			continue
		}
		base := seg << l.bits
		if bit == 0 && base+lo > cur {
			break // [cur, base+lo) lies in missing segments
		}
		fallback := int64(-1)
		if bit == 0 {
			lenBits := bm.lens[i] << 3
			if lo >= lenBits {
				tail = int64(base + lo)
				cur = e + 1
				break
			}
			if hi >= lenBits {
				fallback = int64(base + lenBits)
				hi = lenBits - 1
			}
		}
		qs = append(qs, query{base: base, fallback: fallback, cmd: [][]byte{
			[]byte("BITPOS"), l.SegmentKey(key, seg), {byte('0' + bit)},
			strconv.AppendUint(nil, lo, 10), strconv.AppendUint(nil, hi, 10), []byte("BIT"),
		}})
		cur = base + l.SegmentSize()
		if cur > e {
			break
		}
	}
	if bit == 0 && tail < 0 && cur <= e {
		tail = int64(cur)
	}
	for start := 0; start < len(qs); start += bitposBatch {
		part := qs[start:min(start+bitposBatch, len(qs))]
		cmds := make([][][]byte, len(part))
		for i, q := range part {
			cmds[i] = q.cmd
		}
		rs, err := run(ctx, b, cmds)
		if err != nil {
			return resp.Value{}, err
		}
		for i, q := range part {
			p, err := intReply(rs[i], q.cmd)
			if err != nil {
				return resp.Value{}, err
			}
			if p >= 0 {
				return intValue(int64(q.base) + p), nil
			}
			if q.fallback >= 0 {
				return intValue(q.fallback), nil
			}
		}
	}
	if tail >= 0 {
		return intValue(tail), nil
	}
	if bit == 1 || endGiven {
		return intValue(-1), nil
	}
	// Looking for a 0 with no end given: the first bit past the string.
	if e >= MaxOffset {
		// The range ends at the last addressable bit (a byte written at
		// 2^63-8..2^63-1): there is no bit past it, so none is found.
		return intValue(-1), nil
	}
	return intValue(int64(e + 1)), nil
}

// clip intersects the logical bit range [s, e] with segment seg and
// returns it in the segment's own offsets.
func (l Layout) clip(seg, s, e uint64) (lo, hi uint64, ok bool) {
	first := seg << l.bits
	last := first + l.SegmentSize() - 1
	if last < s || first > e {
		return 0, 0, false
	}
	return max(s, first) - first, min(e, last) - first, true
}

// countCmd is BITCOUNT of bits [lo, hi] of a segment: no range for the
// whole segment, a byte range when aligned, else a BIT range.
func (l Layout) countCmd(key []byte, seg, lo, hi uint64) [][]byte {
	k := l.SegmentKey(key, seg)
	switch {
	case lo == 0 && hi == l.SegmentSize()-1:
		return [][]byte{[]byte("BITCOUNT"), k}
	case lo&7 == 0 && hi&7 == 7:
		return [][]byte{[]byte("BITCOUNT"), k, strconv.AppendUint(nil, lo>>3, 10), strconv.AppendUint(nil, hi>>3, 10)}
	}
	return [][]byte{[]byte("BITCOUNT"), k, strconv.AppendUint(nil, lo, 10), strconv.AppendUint(nil, hi, 10), []byte("BIT")}
}

// normRange resolves a start/end pair against a length tot > 0 (in bytes
// or bits) as Redis's BITCOUNT and BITPOS do: negative values count from
// the end, then both are clamped to [0, tot-1]. ok is false for an empty
// range.
func normRange(start, end int64, tot uint64) (s, e uint64, ok bool) {
	resolve := func(v int64) uint64 {
		if v >= 0 {
			return uint64(v)
		}
		back := uint64(-(v + 1)) + 1 // |v| without overflow
		if back > tot {
			return 0
		}
		return tot - back
	}
	s, e = resolve(start), resolve(end)
	if e >= tot {
		e = tot - 1
	}
	return s, e, s <= e
}

// parseOffset parses a bit offset: 0..2^63-1.
func parseOffset(b []byte) (uint64, error) {
	v, ok := resp.ParseInt(b)
	if !ok || v < 0 {
		return 0, replyErr(resp.ErrBitOffset)
	}
	return uint64(v), nil
}

// parseInt parses an integer argument as Redis's getLongLongFromObject.
func parseInt(b []byte) (int64, error) {
	v, ok := resp.ParseInt(b)
	if !ok {
		return 0, replyErr(resp.ErrNotInteger)
	}
	return v, nil
}

// parseUnit parses BYTE or BIT.
func parseUnit(b []byte) (isBit bool, err error) {
	b = resp.CString(b, len(b)) // strcasecmp, as Redis
	switch {
	case strings.EqualFold(string(b), "BIT"):
		return true, nil
	case strings.EqualFold(string(b), "BYTE"):
		return false, nil
	}
	return false, replyErr(resp.ErrSyntax)
}
