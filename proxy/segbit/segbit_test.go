package segbit

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
	"pgregory.net/rapid"
)

func TestLayout(t *testing.T) {
	if _, err := NewLayout(11); err == nil {
		t.Error("NewLayout(11) accepted")
	}
	if _, err := NewLayout(33); err == nil {
		t.Error("NewLayout(33) accepted")
	}
	for _, tc := range []struct{ bits, levels int }{{12, 3}, {23, 3}, {29, 2}, {32, 2}} {
		l, err := NewLayout(tc.bits)
		if err != nil {
			t.Fatal(err)
		}
		if l.Levels() != tc.levels {
			t.Errorf("bits %d: %d levels, want %d", tc.bits, l.Levels(), tc.levels)
		}
		// The root's bit for the highest segment fits in one index key,
		// and the root is always key 0.
		n, bit := l.indexPos(l.maxSegment(), 0)
		if n != 0 || bit >= fanout {
			t.Errorf("bits %d: root position of the last segment = %d/%d", tc.bits, n, bit)
		}
	}
	l := DefaultLayout()
	if got := string(l.SegmentKey([]byte("dau:{x}"), 596)); got != "{sg:596}dau:{x}" {
		t.Errorf("SegmentKey = %q", got)
	}
	slot := slots.Slot([]byte("dau"))
	if got, want := string(l.IndexKey([]byte("dau"), 2, 7)), "{sgi:"+strconv.Itoa(int(slot))+"}2:7:dau"; got != want {
		t.Errorf("IndexKey = %q, want %q", got, want)
	}
	seg, local := l.Locate(5_000_000_000)
	if seg != 5_000_000_000>>23 || local != 5_000_000_000%(1<<23) {
		t.Errorf("Locate = %d, %d", seg, local)
	}
	// Segment i of every bitmap shares one slot; segments spread.
	seen := map[uint16]bool{}
	for i := uint64(0); i < 64; i++ {
		s := slots.Slot(l.SegmentKey([]byte("a"), i))
		if s != slots.Slot(l.SegmentKey([]byte("{other}b"), i)) {
			t.Fatalf("segment %d of two bitmaps in different slots", i)
		}
		seen[s] = true
	}
	if len(seen) < 60 {
		t.Errorf("64 segments use only %d slots", len(seen))
	}
	// All index keys of a bitmap share a slot.
	if slots.Slot(l.IndexKey([]byte("k"), 0, 0)) != slots.Slot(l.IndexKey([]byte("k"), 2, 12345)) {
		t.Error("index keys of one bitmap in different slots")
	}
	// Index positions of consecutive levels chain: the child key number
	// is the parent's key number and bit.
	for _, seg := range []uint64{0, 1, 1 << 17, 5_000_000_000 >> 12, l.maxSegment()} {
		for level := 0; level+1 < l.Levels(); level++ {
			n, bit := l.indexPos(seg, level)
			cn, _ := l.indexPos(seg, level+1)
			if cn != n<<fanoutBits|bit {
				t.Errorf("seg %d level %d: child key %d, want %d", seg, level, cn, n<<fanoutBits|bit)
			}
		}
	}
}

func TestLookupRoute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		op       Op
		explicit bool
		ok       bool
	}{
		{"SEGBIT.SETBIT", OpSetBit, true, true},
		{"segbit.bitcount", OpBitCount, true, true},
		{"SegBit.Info", OpInfo, true, true},
		{"SEGBIT.DEL", OpDel, true, true},
		{"bitop", OpBitOp, false, true},
		{"INFO", OpNone, false, false},
		{"SEGBIT.", OpNone, false, false},
		{"SEGBIT.GET", OpNone, false, false},
		{"GET", OpNone, false, false},
	} {
		op, explicit, ok := Lookup([]byte(tc.name))
		if op != tc.op || explicit != tc.explicit || ok != tc.ok {
			t.Errorf("Lookup(%q) = %v %v %v", tc.name, op, explicit, ok)
		}
	}
	h := newHandler(t, 0, "dau:*", "u[0-9]")
	route := func(args ...string) bool {
		a := make([][]byte, len(args))
		for i, s := range args {
			a[i] = []byte(s)
		}
		_, ok := h.Route(a)
		return ok
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"SETBIT", "dau:1", "5", "1"}, true},
		{[]string{"SETBIT", "x", "5", "1"}, false},
		{[]string{"SEGBIT.SETBIT", "x", "5", "1"}, true},
		{[]string{"SEGBIT.SETBIT"}, true}, // the arity error is segbit's
		{[]string{"SETBIT"}, false},
		{[]string{"getbit", "u7", "1"}, true},
		{[]string{"getbit", "u77", "1"}, false},
		{[]string{"BITOP", "OR", "d", "dau:1"}, true},
		{[]string{"BITOP", "OR", "dau:d", "x"}, true},
		{[]string{"BITOP", "OR", "d", "x"}, false},
		{[]string{"DEL", "a", "dau:2"}, true},
		{[]string{"DEL", "a", "b"}, false},
		{[]string{"GET", "dau:1"}, false},
		{[]string{"INFO", "dau:1"}, false},
	} {
		if got := route(tc.args...); got != tc.want {
			t.Errorf("Route(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
	if NewMatcher().Match([]byte("x")) || (*Matcher)(nil).Match([]byte("x")) {
		t.Error("an empty matcher matched")
	}
	h2 := newHandler(t, 0)
	if _, ok := h2.Route([][]byte{[]byte("SETBIT"), []byte("dau:1"), []byte("1"), []byte("1")}); ok {
		t.Error("no patterns, but a plain SETBIT routed")
	}
}

// TestBadInput checks every argument error against Redis's texts (the
// differential test checks them against a real redis-server too).
func TestBadInput(t *testing.T) {
	h := newHandler(t, 12)
	f := newFake(t)
	mustInt(t, h, f, "SEGBIT.SETBIT", "k", "100", "1") // range errors need an existing key
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SETBIT", "k", "1"}, "ERR wrong number of arguments for 'setbit' command"},
		{[]string{"SEGBIT.SetBit", "k"}, "ERR wrong number of arguments for 'segbit.setbit' command"},
		{[]string{"SETBIT", "k", "-1", "1"}, resp.ErrBitOffset},
		{[]string{"SETBIT", "k", "9223372036854775808", "1"}, resp.ErrBitOffset},
		{[]string{"SETBIT", "k", "01", "1"}, resp.ErrBitOffset},
		{[]string{"SETBIT", "k", "x", "2"}, resp.ErrBitOffset},
		{[]string{"SETBIT", "k", "1", "2"}, resp.ErrBitValue},
		{[]string{"SETBIT", "k", "1", "01"}, resp.ErrBitValue},
		{[]string{"SETBIT", "k", "1", "-1"}, resp.ErrBitValue},
		{[]string{"GETBIT", "k", "-5"}, resp.ErrBitOffset},
		{[]string{"GETBIT", "k"}, "ERR wrong number of arguments for 'getbit' command"},
		{[]string{"BITCOUNT"}, "ERR wrong number of arguments for 'bitcount' command"},
		{[]string{"BITCOUNT", "k", "1"}, resp.ErrSyntax},
		{[]string{"BITCOUNT", "k", "1", "2", "3", "4"}, resp.ErrSyntax},
		{[]string{"BITCOUNT", "k", "a", "2"}, resp.ErrNotInteger},
		{[]string{"BITCOUNT", "k", "1", "2", "bits"}, resp.ErrSyntax},
		{[]string{"BITPOS", "k"}, "ERR wrong number of arguments for 'bitpos' command"},
		{[]string{"BITPOS", "k", "2"}, resp.ErrBitposBit},
		{[]string{"BITPOS", "k", "x"}, resp.ErrNotInteger},
		{[]string{"BITPOS", "k", "1", "x"}, resp.ErrNotInteger},
		{[]string{"BITPOS", "k", "1", "0", "x", "xx"}, resp.ErrSyntax},
		{[]string{"BITPOS", "k", "1", "0", "x", "bit"}, resp.ErrNotInteger},
		{[]string{"BITPOS", "k", "1", "0", "1", "bit", "x"}, resp.ErrSyntax},
		{[]string{"BITOP", "and", "d"}, "ERR wrong number of arguments for 'bitop' command"},
		{[]string{"BITOP", "nand", "d", "k"}, resp.ErrSyntax},
		{[]string{"BITOP", "not", "d", "k", "k"}, resp.ErrBitopNot},
		{[]string{"SEGBIT.DEL"}, "ERR wrong number of arguments for 'segbit.del' command"},
		{[]string{"SEGBIT.INFO", "a", "b"}, "ERR wrong number of arguments for 'segbit.info' command"},
	} {
		_, err := do(t, h, f, tc.args...)
		var e Error
		if !errors.As(err, &e) || string(e) != tc.want {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// On a missing key BITCOUNT and BITPOS answer before parsing ranges.
	for _, args := range [][]string{{"SEGBIT.BITCOUNT", "nokey", "x"}, {"SEGBIT.BITPOS", "nokey", "0", "x"}} {
		if v, err := do(t, h, f, args...); err != nil || v.Int != 0 {
			t.Errorf("%q = %+v %v, want 0", args, v, err)
		}
	}
	// A plain BITOP mixing segmented and plain keys is refused.
	hp := newHandler(t, 12, "s:*")
	if _, err := do(t, hp, f, "BITOP", "OR", "s:d", "s:a", "plain"); err == nil || !strings.Contains(err.Error(), "'plain'") {
		t.Errorf("mixed BITOP: %v", err)
	}
}

// TestHugeOffsets tracks user ids around 5,000,000,000 and 2^40 with the
// default layout and checks exact counts and positions.
func TestHugeOffsets(t *testing.T) {
	h := newHandler(t, 0)
	f := newFake(t)
	ids := []uint64{5_000_000_000, 5_000_000_001, 5_000_000_007, 4_999_999_999, 1 << 40, 1<<40 + 8_388_608, 3, MaxOffset}
	for i, id := range ids {
		if got := mustInt(t, h, f, "SEGBIT.SETBIT", "dau", u(id), "1"); got != 0 {
			t.Fatalf("SETBIT %d = %d", id, got)
		}
		if got := mustInt(t, h, f, "SEGBIT.BITCOUNT", "dau"); got != int64(i+1) {
			t.Fatalf("after %d ids BITCOUNT = %d", i+1, got)
		}
	}
	if got := mustInt(t, h, f, "SEGBIT.SETBIT", "dau", u(5_000_000_000), "1"); got != 1 {
		t.Fatalf("SETBIT again = %d", got)
	}
	for _, id := range ids {
		if mustInt(t, h, f, "SEGBIT.GETBIT", "dau", u(id)) != 1 {
			t.Fatalf("GETBIT %d = 0", id)
		}
		if mustInt(t, h, f, "SEGBIT.GETBIT", "dau", u(id^1)) != 0 && id != 5_000_000_000 && id != 5_000_000_001 {
			t.Fatalf("GETBIT %d = 1", id^1)
		}
	}
	checks := []struct {
		args []string
		want int64
	}{
		{[]string{"SEGBIT.BITCOUNT", "dau", "0", u(5_000_000_000/8 - 1)}, 2},                          // 3 and 4,999,999,999
		{[]string{"SEGBIT.BITCOUNT", "dau", u(5_000_000_000), u(5_000_000_007), "BIT"}, 3},            //
		{[]string{"SEGBIT.BITCOUNT", "dau", "0", u(1 << 40), "BIT"}, 6},                               //
		{[]string{"SEGBIT.BITCOUNT", "dau", "-1", "-1"}, 1},                                           // the byte of 2^63-1
		{[]string{"SEGBIT.BITCOUNT", "dau", "-2", "-1", "BIT"}, 1},                                    //
		{[]string{"SEGBIT.BITCOUNT", "dau", "0", "-1", "BIT"}, 8},                                     //
		{[]string{"SEGBIT.BITCOUNT", "dau", "-9223372036854775808", "9223372036854775807"}, 8},        //
		{[]string{"SEGBIT.BITCOUNT", "dau", "-9223372036854775808", "9223372036854775807", "BIT"}, 8}, //
		{[]string{"SEGBIT.BITPOS", "dau", "1"}, 3},                                                    //
		{[]string{"SEGBIT.BITPOS", "dau", "1", "4"}, 4_999_999_999},                                   //
		{[]string{"SEGBIT.BITPOS", "dau", "1", u(5_000_000_002), "-1", "BIT"}, 5_000_000_007},         //
		{[]string{"SEGBIT.BITPOS", "dau", "1", u(5_000_000_008), "-1", "BIT"}, 1 << 40},               //
		{[]string{"SEGBIT.BITPOS", "dau", "1", "-1"}, MaxOffset},                                      //
		{[]string{"SEGBIT.BITPOS", "dau", "0", u(5_000_000_000), "-1", "BIT"}, 5_000_000_002},         //
		{[]string{"SEGBIT.BITPOS", "dau", "0", "-1", "-1", "BIT"}, -1},                                // the last bit is set
		{[]string{"SEGBIT.BITPOS", "dau", "0", "-1", "-1"}, MaxOffset - 7},                            //
		{[]string{"SEGBIT.BITPOS", "dau", "0"}, 0},                                                    //
	}
	for _, c := range checks {
		if got := mustInt(t, h, f, c.args...); got != c.want {
			t.Errorf("%q = %d, want %d", c.args, got, c.want)
		}
	}
	// The last byte all ones: no zero bit in it, and none past it either
	// (2^63 is no offset), so BITPOS for 0 finds none even without an end
	// (found by the property test).
	for i := range uint64(8) {
		mustInt(t, h, f, "SEGBIT.SETBIT", "full", u(MaxOffset-7+i), "1")
	}
	if got := mustInt(t, h, f, "SEGBIT.BITPOS", "full", "0", "-1"); got != -1 {
		t.Errorf("BITPOS of a last byte of ones = %d, want -1", got)
	}
	mustInt(t, h, f, "SEGBIT.DEL", "full")
	// BITOP over huge bitmaps: AND with a second bitmap sharing two ids.
	for _, id := range []uint64{5_000_000_007, 1 << 40, 12345678901234} {
		mustInt(t, h, f, "SEGBIT.SETBIT", "wau", u(id), "1")
	}
	if got := mustInt(t, h, f, "SEGBIT.BITOP", "AND", "both", "dau", "wau"); got != 1<<60 {
		t.Errorf("BITOP AND length = %d, want 2^60", got)
	}
	if got := mustInt(t, h, f, "SEGBIT.BITCOUNT", "both"); got != 2 {
		t.Errorf("BITCOUNT both = %d", got)
	}
	if got := mustInt(t, h, f, "SEGBIT.BITOP", "OR", "either", "dau", "wau"); got != 1<<60 {
		t.Errorf("BITOP OR length = %d", got)
	}
	if got := mustInt(t, h, f, "SEGBIT.BITCOUNT", "either"); got != 9 {
		t.Errorf("BITCOUNT either = %d", got)
	}
	// BITOP NOT over 2^60 bytes is refused, not attempted.
	if _, err := do(t, h, f, "SEGBIT.BITOP", "NOT", "n", "dau"); err == nil || !strings.Contains(err.Error(), "BITOP NOT") {
		t.Errorf("huge NOT: %v", err)
	}
	info, err := do(t, h, f, "SEGBIT.INFO", "dau")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]int64{}
	for i := 0; i+1 < len(info.Elems); i += 2 {
		fields[string(info.Elems[i].Str)] = info.Elems[i+1].Int
	}
	if fields["segment_bits"] != 1<<23 || fields["segments"] != 5 || fields["length"] != 1<<60 || fields["highest_segment"] != MaxOffset>>23 {
		t.Errorf("INFO = %v", fields)
	}
	// DEL removes every key of the bitmaps but their upper index levels.
	if got := mustInt(t, h, f, "SEGBIT.DEL", "dau", "wau", "both", "either", "nothing"); got != 4 {
		t.Errorf("DEL = %d", got)
	}
	if bad := notUpperIndex(h, keysOf(f)); len(bad) > 0 {
		t.Errorf("after DEL these keys remain: %v", bad)
	}
}

func keysOf(f *fakeBackend) []string {
	var ks []string
	for k := range f.strs {
		ks = append(ks, k)
	}
	return ks
}

// notUpperIndex returns the keys that are not upper-level index keys,
// which is all that may remain once every bitmap is deleted (DEL leaves
// the upper levels to writes racing it).
func notUpperIndex(h *Handler, keys []string) []string {
	var bad []string
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, "{sgi:")
		if ok {
			_, rest, _ = strings.Cut(rest, "}")
			level, _, _ := strings.Cut(rest, ":")
			if l, err := strconv.Atoi(level); err == nil && l < h.Layout().Levels()-1 {
				continue
			}
		}
		bad = append(bad, k)
	}
	return bad
}

// TestFanout checks that an operation's node commands go in a bounded
// number of Backend.Do calls whatever the number of segments.
func TestFanout(t *testing.T) {
	h := newHandler(t, 12)
	f := newFake(t)
	for i := uint64(0); i < 300; i++ {
		mustInt(t, h, f, "SEGBIT.SETBIT", "k", u(i*4096*7+5), "1")
	}
	for _, tc := range []struct {
		args  []string
		calls int
	}{
		{[]string{"SEGBIT.BITCOUNT", "k"}, 3 + 1},                          // index levels, counts
		{[]string{"SEGBIT.BITCOUNT", "k", "0", "-1"}, 3 + 2},               // + lengths
		{[]string{"SEGBIT.BITPOS", "k", "0"}, 3 + 1 + 1},                   // lengths, one batch
		{[]string{"SEGBIT.BITOP", "OR", "d", "k", "k"}, 3 + 1 + 1 + 1 + 1}, // index, lengths, dest index, bitop, clears
		{[]string{"SEGBIT.DEL", "k", "d"}, 3 + 2},                          //
	} {
		f.calls = 0
		if _, err := do(t, h, f, tc.args...); err != nil {
			t.Fatal(err)
		}
		if f.calls > tc.calls {
			t.Errorf("%q: %d Do calls, want at most %d", tc.args, f.calls, tc.calls)
		}
	}
	if f.maxDoSz < 300 {
		t.Errorf("largest Do had %d commands; the segments were not fanned out together", f.maxDoSz)
	}
}

// TestRangeReadsFewSegments: BITCOUNT with a range, and BITPOS looking
// for a 1, read the length of the highest segment only (not one per
// segment) and ask only the segments the range covers; a segment the
// index names but that is gone counts 0, and the logical length comes
// from the highest segment that exists.
func TestRangeReadsFewSegments(t *testing.T) {
	h := newHandler(t, 12)
	f := newFake(t)
	const n = 1000
	for i := uint64(0); i < n; i++ {
		mustInt(t, h, f, "SEGBIT.SETBIT", "k", u(i*4096*7+5), "1")
	}
	// The index's keys, a batch of lengths from the top, and a batch of
	// BITPOS: not a command per segment.
	const most = 2*bitposBatch + 16
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{[]string{"SEGBIT.BITCOUNT", "k", "0", "100"}, 1},
		{[]string{"SEGBIT.BITCOUNT", "k", "-1", "-1"}, 1},
		{[]string{"SEGBIT.BITPOS", "k", "1", "1"}, 4096*7 + 5},
		{[]string{"SEGBIT.BITPOS", "k", "1", "-1"}, (n-1)*4096*7 + 5},
	} {
		f.cmds = 0
		if got := mustInt(t, h, f, tc.args...); got != tc.want {
			t.Errorf("%q = %d, want %d", tc.args, got, tc.want)
		}
		if f.cmds > most {
			t.Errorf("%q: %d node commands for %d segments", tc.args, f.cmds, n)
		}
	}
	// The highest segment goes (behind the index's back): the length now
	// ends with the one below it.
	f.mu.Lock()
	delete(f.strs, string(h.Layout().SegmentKey([]byte("k"), (n-1)*7)))
	f.mu.Unlock()
	if got := mustInt(t, h, f, "SEGBIT.BITCOUNT", "k", "-1", "-1", "BIT"); got != 0 {
		t.Errorf("last bit after the top segment went: %d", got)
	}
	if got := mustInt(t, h, f, "SEGBIT.BITPOS", "k", "1", "-1"); got != (n-2)*4096*7+5 {
		t.Errorf("BITPOS 1 in the last byte after the top segment went: %d", got)
	}
	if got := mustInt(t, h, f, "SEGBIT.BITCOUNT", "k", "0", "-1"); got != n-1 {
		t.Errorf("BITCOUNT 0 -1 after the top segment went: %d", got)
	}
}

// TestPartFailure checks that a failing segment fails the command with
// an error naming its key, and that a failed Do fails it too.
func TestPartFailure(t *testing.T) {
	h := newHandler(t, 12)
	f := newFake(t)
	for _, o := range []uint64{1, 5000, 90000} {
		mustInt(t, h, f, "SEGBIT.SETBIT", "k", u(o), "1")
	}
	bad := string(h.Layout().SegmentKey([]byte("k"), 5000>>12))
	f.fail[bad] = "CLUSTERDOWN Hash slot not served"
	for _, args := range [][]string{
		{"SEGBIT.BITCOUNT", "k"},
		{"SEGBIT.BITPOS", "k", "0", "600"},
		{"SEGBIT.SETBIT", "k", "5001", "1"},
		{"SEGBIT.BITOP", "OR", "d", "k"},
		{"SEGBIT.DEL", "k"},
	} {
		_, err := do(t, h, f, args...)
		var pe *PartError
		if !errors.As(err, &pe) || string(pe.Key) != bad || !strings.HasPrefix(err.Error(), "CLUSTERDOWN Hash slot not served (") ||
			!strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("%q: error %v", args, err)
		}
	}
	delete(f.fail, bad)
	f.lists[bad] = true
	if _, err := do(t, h, f, "SEGBIT.BITCOUNT", "k"); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("WRONGTYPE segment: %v", err)
	}
	f.doErr = errors.New("connection refused")
	var be *BackendError
	if _, err := do(t, h, f, "SEGBIT.GETBIT", "k", "1"); !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "ERR ") {
		t.Errorf("failed Do: %v", err)
	}
}

// TestProperties runs random command sequences through the fake cluster
// and compares every reply with the model.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		segBits := rapid.SampledFrom([]int{12, 13, 16, 23}).Draw(rt, "segBits")
		h := newHandler(rt, segBits, "*")
		f := newFake(rt)
		S := uint64(1) << segBits
		models := map[string]*model{}
		keys := []string{"a", "b", "{t}c", "d}{"}
		mod := func(k string) *model {
			if models[k] == nil {
				models[k] = &model{}
			}
			return models[k]
		}
		offset := rapid.Custom(func(t *rapid.T) uint64 {
			switch rapid.IntRange(0, 6).Draw(t, "kind") {
			case 0:
				return rapid.Uint64Range(0, 1<<16).Draw(t, "small")
			case 1:
				return 5_000_000_000 + rapid.Uint64Range(0, 200_000).Draw(t, "d") - 100_000
			case 2:
				return 1<<40 + rapid.Uint64Range(0, 200_000).Draw(t, "d") - 100_000
			case 3:
				return MaxOffset - rapid.Uint64Range(0, 50_000).Draw(t, "d")
			case 4: // near a segment boundary
				seg := rapid.Uint64Range(1, 40).Draw(t, "seg")
				return seg*S + rapid.Uint64Range(0, 16).Draw(t, "d") - 8
			case 5:
				return rapid.Uint64Range(0, 8*S).Draw(t, "few segments")
			}
			return rapid.Uint64Range(0, MaxOffset).Draw(t, "any")
		})
		// bound draws a start or end for a range over tot units.
		bound := func(t *rapid.T, tot uint64, label string) int64 {
			tt := int64(min(tot, math.MaxInt64))
			switch rapid.IntRange(0, 4).Draw(t, label+"kind") {
			case 0:
				return rapid.Int64Range(-20, 20).Draw(t, label)
			case 1:
				return rapid.Int64Range(-tt, tt).Draw(t, label)
			case 2:
				return tt - rapid.Int64Range(-3, 3).Draw(t, label)
			case 3:
				return -tt + rapid.Int64Range(-3, 3).Draw(t, label)
			}
			return rapid.SampledFrom([]int64{math.MinInt64, math.MaxInt64, -1, 0}).Draw(t, label)
		}
		for step := rapid.IntRange(1, 40).Draw(rt, "steps"); step > 0; step-- {
			k := rapid.SampledFrom(keys).Draw(rt, "key")
			m := mod(k)
			switch rapid.IntRange(0, 10).Draw(rt, "op") {
			case 10: // a run of ones, so that BITPOS 0 meets full bytes
				o := offset.Draw(rt, "off")
				o -= o % 8
				n := rapid.Uint64Range(1, 24).Draw(rt, "n")
				for x := o; x < o+n && x <= MaxOffset; x++ {
					mustInt(rt, h, f, "SETBIT", k, u(x), "1")
					m.set(x, true)
				}
			case 0, 1, 2:
				o := offset.Draw(rt, "off")
				v := rapid.IntRange(0, 1).Draw(rt, "val")
				want := int64(0)
				if m.get(o) {
					want = 1
				}
				if got := mustInt(rt, h, f, "SETBIT", k, u(o), strconv.Itoa(v)); got != want {
					rt.Fatalf("SETBIT %s %d %d = %d, want %d", k, o, v, got, want)
				}
				m.set(o, v == 1)
			case 3:
				o := offset.Draw(rt, "off")
				want := int64(0)
				if m.get(o) {
					want = 1
				}
				if got := mustInt(rt, h, f, "SEGBIT.GETBIT", k, u(o)); got != want {
					rt.Fatalf("GETBIT %s %d = %d, want %d", k, o, got, want)
				}
			case 4, 5:
				args := []string{"BITCOUNT", k}
				ranged := rapid.Bool().Draw(rt, "ranged")
				var start, end int64
				isBit := rapid.Bool().Draw(rt, "bit")
				if ranged {
					tot := m.length
					if isBit {
						tot *= 8
					}
					start, end = bound(rt, tot, "start"), bound(rt, tot, "end")
					args = append(args, i64(start), i64(end))
					if isBit {
						args = append(args, "BIT")
					} else if rapid.Bool().Draw(rt, "explicit byte") {
						args = append(args, "byte")
					}
				}
				want := m.bitcount(ranged, start, end, isBit)
				if got := mustInt(rt, h, f, args...); got != want {
					rt.Fatalf("%q = %d, want %d (length %d, ones %v)", args, got, want, m.length, m.ones)
				}
			case 6, 7:
				bit := int64(rapid.IntRange(0, 1).Draw(rt, "bit"))
				args := []string{"BITPOS", k, i64(bit)}
				n := rapid.IntRange(0, 3).Draw(rt, "nargs")
				isBit := n == 3 && rapid.Bool().Draw(rt, "bitunit")
				tot := m.length
				if isBit {
					tot *= 8
				}
				var start, end int64 = 0, -1
				if n >= 1 {
					start = bound(rt, tot, "start")
					args = append(args, i64(start))
				}
				if n >= 2 {
					end = bound(rt, tot, "end")
					args = append(args, i64(end))
				}
				if n == 3 {
					if isBit {
						args = append(args, "bit")
					} else {
						args = append(args, "BYTE")
					}
				}
				want := m.bitpos(bit, start, end, n >= 2, isBit)
				if got := mustInt(rt, h, f, args...); got != want {
					rt.Fatalf("%q = %d, want %d (length %d, ones %v)", args, got, want, m.length, m.ones)
				}
			case 8:
				op := rapid.SampledFrom([]string{"AND", "OR", "XOR", "NOT"}).Draw(rt, "bitop")
				dest := rapid.SampledFrom(keys).Draw(rt, "dest")
				nsrc := 1
				if op != "NOT" {
					nsrc = rapid.IntRange(1, 3).Draw(rt, "nsrc")
				}
				args := []string{"BITOP", op, dest}
				var srcs []*model
				for range nsrc {
					s := rapid.SampledFrom(keys).Draw(rt, "src")
					args = append(args, s)
					srcs = append(srcs, mod(s))
				}
				if op == "NOT" && srcs[0].length*8 > 6*S {
					continue // NOT fills every segment below the length
				}
				res := combine(op, srcs)
				if got := mustInt(rt, h, f, args...); got != int64(res.length) {
					rt.Fatalf("%q = %d, want %d", args, got, res.length)
				}
				models[dest] = res
			case 9:
				args := []string{"DEL", k}
				want := int64(0)
				if m.length > 0 {
					want = 1
				}
				if got := mustInt(rt, h, f, args...); got != want {
					rt.Fatalf("%q = %d, want %d", args, got, want)
				}
				delete(models, k)
			}
		}
		checkIndex(rt, h, f)
		// Every bitmap reads back exactly: count and the runs of ones.
		for _, k := range keys {
			m := mod(k)
			if got := mustInt(rt, h, f, "SEGBIT.BITCOUNT", k); got != m.count(0, 1<<64-1) {
				rt.Fatalf("final BITCOUNT %s = %d, want %d", k, got, m.count(0, 1<<64-1))
			}
			for _, r := range m.ones {
				if r.hi-r.lo > 1<<20 {
					continue
				}
				for _, o := range []uint64{r.lo, r.hi} {
					if mustInt(rt, h, f, "SEGBIT.GETBIT", k, u(o)) != 1 {
						rt.Fatalf("final GETBIT %s %d = 0", k, o)
					}
				}
			}
			mustInt(rt, h, f, "SEGBIT.DEL", k)
		}
		if bad := notUpperIndex(h, keysOf(f)); len(bad) > 0 {
			rt.Fatalf("after deleting every bitmap, these keys remain: %v", bad)
		}
	})
}

// checkIndex checks the invariant: every segment key in the fake cluster
// is named by its bitmap's index, at every level.
func checkIndex(t tester, h *Handler, f *fakeBackend) {
	t.Helper()
	l := h.Layout()
	for name := range f.strs {
		if !strings.HasPrefix(name, "{sg:") {
			continue
		}
		end := strings.IndexByte(name, '}')
		seg, err := strconv.ParseUint(name[4:end], 10, 64)
		if err != nil {
			t.Fatalf("bad segment key %q", name)
		}
		key := []byte(name[end+1:])
		if !bytes.Equal(l.SegmentKey(key, seg), []byte(name)) {
			t.Fatalf("segment key %q does not round-trip", name)
		}
		for level := 0; level < l.Levels(); level++ {
			n, bit := l.indexPos(seg, level)
			idx := f.strs[string(l.IndexKey(key, level, n))]
			if bit/8 >= uint64(len(idx)) || idx[bit/8]&(0x80>>(bit&7)) == 0 {
				t.Fatalf("segment %q not in the index at level %d", name, level)
			}
		}
	}
}

// TestEmptyPatternRefused: an empty --segment-keys pattern, which would
// match only the empty key name, is refused at start.
func TestEmptyPatternRefused(t *testing.T) {
	if _, err := New(Options{SegmentKeys: []string{"dau:*", ""}}); err == nil || !strings.Contains(err.Error(), "empty --segment-keys") {
		t.Fatalf("New with an empty pattern: %v, want an error", err)
	}
	if _, err := New(Options{SegmentKeys: []string{"dau:*"}}); err != nil {
		t.Fatalf("New with dau:*: %v", err)
	}
}

// TestUnclosedClassRefused: a pattern with a '[' that no ']' closes (a
// lone "[" matches no key) is refused at start; an escaped one is not.
func TestUnclosedClassRefused(t *testing.T) {
	if _, err := New(Options{SegmentKeys: []string{"dau:[0-9"}}); err == nil || !strings.Contains(err.Error(), "no ']' closes") {
		t.Fatalf("New with dau:[0-9: %v, want an error", err)
	}
	if _, err := New(Options{SegmentKeys: []string{`dau:\[x`, "dau:[0-9]*"}}); err != nil {
		t.Fatalf("New with closed or escaped classes: %v", err)
	}
}

// TestBitopFailureKeepsSegmentsIndexed: a BITOP that fails part way (a
// destination segment's write refused, or a stale segment's delete) leaves
// every destination segment that exists named by the index, so a DEL
// afterwards removes them all, and nothing of the destination survives.
func TestBitopFailureKeepsSegmentsIndexed(t *testing.T) {
	// The result's segments are 0 and 2 (y's), the stale ones 1, 3, 4, 5.
	for _, failSeg := range []uint64{2, 3} { // 2: a result segment; 3: a stale one
		t.Run("segment "+strconv.FormatUint(failSeg, 10), func(t *testing.T) {
			h := newHandler(t, 12)
			f := newFake(t)
			const S = 1 << 12
			for _, seg := range []uint64{1, 3, 4, 5} {
				mustInt(t, h, f, "SEGBIT.SETBIT", "d", u(seg*S+5), "1")
			}
			for _, seg := range []uint64{0, 2} {
				mustInt(t, h, f, "SEGBIT.SETBIT", "y", u(seg*S+6), "1")
			}
			bad := string(h.Layout().SegmentKey([]byte("d"), failSeg))
			f.fail[bad] = "OOM command not allowed when used memory > 'maxmemory'."
			if _, err := do(t, h, f, "SEGBIT.BITOP", "OR", "d", "y"); err == nil {
				t.Fatal("BITOP with a failing segment succeeded")
			}
			delete(f.fail, bad)
			mustInt(t, h, f, "SEGBIT.DEL", "d")
			for seg := uint64(0); seg < 6; seg++ {
				if k := string(h.Layout().SegmentKey([]byte("d"), seg)); f.strs[k] != nil {
					t.Errorf("segment %d (%q) outlived the DEL", seg, k)
				}
			}
			if got := mustInt(t, h, f, "SEGBIT.BITCOUNT", "d"); got != 0 {
				t.Errorf("BITCOUNT after DEL = %d", got)
			}
		})
	}
}
