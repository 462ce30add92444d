package engine

import (
	"testing"
)

// lagStream builds a stream with entries 1-0..n-0, then deletes dels.
func lagStream(n int, dels ...uint64) *Stream {
	s := &Stream{}
	for i := 1; i <= n; i++ {
		s.Append(StreamID{uint64(i), 0}, [][]byte{[]byte("a"), []byte("1")})
	}
	for _, d := range dels {
		s.Delete(StreamID{d, 0})
	}
	return s
}

// TestGroupLag pins XINFO GROUPS' entries-read and lag as redis-server
// 7.0.15 answers them (each case was run against it).
func TestGroupLag(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           *Stream
		last        StreamID
		entriesRead int64
		reads       []uint64 // ids delivered by XREADGROUP, in order
		wantRead    int64
		wantLag     int64
		lagNull     bool
	}{
		// XADD 1; XDEL 1; XGROUP CREATE s g 0: the empty stream clause.
		{name: "empty after xdel", s: lagStream(1, 1), entriesRead: -1, wantRead: -1, wantLag: 0},
		// XADD 1 2 3; XDEL 1; XGROUP CREATE s g 0-5: the tombstone is
		// before the first entry (7.0 estimates; later versions say null).
		{name: "tombstone before first", s: lagStream(3, 1), last: StreamID{0, 5}, entriesRead: -1, wantRead: -1, wantLag: 2},
		// XADD 1..5; XDEL 4; XGROUP CREATE s g 0 ENTRIESREAD 0.
		{name: "tombstone ahead", s: lagStream(5, 4), entriesRead: 0, wantRead: 0, lagNull: true},
		// ... then XREADGROUP COUNT 1: the counter becomes unknown.
		{name: "read before tombstone", s: lagStream(5, 4), entriesRead: 0, reads: []uint64{1}, wantRead: -1, lagNull: true},
		// ... then the rest: the last entry's counter is exact.
		{name: "read to the end", s: lagStream(5, 4), entriesRead: 0, reads: []uint64{1, 2, 3, 5}, wantRead: 5, wantLag: 0},
		// No deletion: counting up from ENTRIESREAD.
		{name: "counting", s: lagStream(5), entriesRead: 0, reads: []uint64{1, 2}, wantRead: 2, wantLag: 3},
		{name: "never added", s: &Stream{}, entriesRead: -1, wantRead: -1, wantLag: 0},
		{name: "from the first", s: lagStream(5), entriesRead: -1, reads: []uint64{1}, wantRead: 1, wantLag: 4},
		{name: "middle unknown", s: lagStream(5), last: StreamID{1, 0}, entriesRead: -1, reads: []uint64{2}, wantRead: -1, lagNull: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.s.NewGroup("g", tc.last, tc.entriesRead)
			for _, ms := range tc.reads {
				tc.s.GroupDelivered(g, StreamID{ms, 0})
			}
			if g.EntriesRead != tc.wantRead {
				t.Errorf("entries-read %d, want %d", g.EntriesRead, tc.wantRead)
			}
			lag, ok := tc.s.GroupLag(g)
			if ok == tc.lagNull || (ok && lag != tc.wantLag) {
				t.Errorf("lag %d (valid %v), want %d (null %v)", lag, ok, tc.wantLag, tc.lagNull)
			}
		})
	}
}
