package aof

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testLogger sends the package's log lines to t.Log and records them.
type logSink struct {
	t   testing.TB
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.t.Helper()
	s.t.Log(string(bytes.TrimRight(p, "\n")))
	return s.buf.Write(p)
}

func testLogger(t testing.TB) (*slog.Logger, *logSink) {
	s := &logSink{t: t}
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug})), s
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// sampleRecord returns the i-th of a cycle of records covering every kind,
// with LSN unset.
func sampleRecord(i int) *Record {
	v := []byte(fmt.Sprintf("value-%d", i))
	switch i % 5 {
	case 0:
		return &Record{Kind: KindCommand, Slot: int32(i % NumSlots), Now: 1700000000000 + int64(i),
			Cmds: [][][]byte{{[]byte("SET"), []byte(fmt.Sprintf("k%d", i)), v}}}
	case 1:
		return &Record{Kind: KindTx, Slot: int32((i * 7) % NumSlots), Now: 1700000000000,
			Cmds: [][][]byte{
				{[]byte("INCR"), []byte("c")},
				{[]byte("RPUSH"), []byte("l"), v, {}, bytes.Repeat([]byte{0xff}, i%300)},
			}}
	case 2:
		return &Record{Kind: KindInstall, Slot: 16383, Now: -5,
			Cmds: [][][]byte{{[]byte(fmt.Sprintf("key%d", i)), bytes.Repeat(v, 20)}}}
	case 3:
		return &Record{Kind: KindDropSlot, Slot: int32(i % NumSlots), Now: 0}
	default:
		return &Record{Kind: KindCommand, Slot: -1, Now: 1 << 50, Cmds: [][][]byte{{[]byte("FLUSHALL")}}}
	}
}

// cloneRecord deep-copies r (Replay reuses its records).
func cloneRecord(r *Record) *Record {
	c := *r
	c.Cmds = make([][][]byte, len(r.Cmds))
	for i, cmd := range r.Cmds {
		c.Cmds[i] = make([][]byte, len(cmd))
		for j, a := range cmd {
			c.Cmds[i][j] = append([]byte{}, a...)
		}
	}
	return &c
}

func recordsEqual(a, b *Record) bool {
	if a.LSN != b.LSN || a.Kind != b.Kind || a.Slot != b.Slot || a.Now != b.Now || len(a.Cmds) != len(b.Cmds) {
		return false
	}
	for i := range a.Cmds {
		if len(a.Cmds[i]) != len(b.Cmds[i]) {
			return false
		}
		for j := range a.Cmds[i] {
			if !bytes.Equal(a.Cmds[i][j], b.Cmds[i][j]) {
				return false
			}
		}
	}
	return true
}

// logFile builds a log file: a header with base, then recs numbered from
// base+1. It returns the bytes and each record's start offset.
func logFile(base uint64, recs []*Record) ([]byte, []int) {
	b := encodeHeader(base)
	offs := make([]int, len(recs))
	for i, r := range recs {
		r.LSN = base + uint64(i) + 1
		offs[i] = len(b)
		b = EncodeRecord(b, r)
	}
	return b, offs
}

func samples(n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		recs[i] = sampleRecord(i)
	}
	return recs
}

// putLog installs files (name → bytes) in fsys under dir with a manifest
// naming logs in order.
func putLog(fsys *memFS, dir string, logs []string, data map[string][]byte) {
	m := manifest{logs: logs}
	fsys.put(filepath.Join(dir, ManifestName), m.encode())
	for name, b := range data {
		fsys.put(filepath.Join(dir, name), b)
	}
}

// replayAll replays dir and returns copies of the records.
func replayAll(t testing.TB, o ReplayOptions) ([]*Record, ReplayStats, error) {
	t.Helper()
	var got []*Record
	st, err := Replay(o, func(r *Record) error {
		got = append(got, cloneRecord(r))
		return nil
	})
	return got, st, err
}

func checkRecords(t testing.TB, got, want []*Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !recordsEqual(got[i], want[i]) {
			t.Fatalf("record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// snapSlot is one slot of a test snapshot; entries alternate key, value.
type snapSlot struct {
	slot    uint16
	lsn     uint64
	entries []string
}

// writeSnap writes slots through w and commits it.
func writeSnap(w *SnapshotWriter, slots []snapSlot) error {
	for _, s := range slots {
		if err := w.Slot(s.slot, s.lsn); err != nil {
			return err
		}
		for i := 0; i+1 < len(s.entries); i += 2 {
			if err := w.Entry([]byte(s.entries[i]), []byte(s.entries[i+1])); err != nil {
				return err
			}
		}
	}
	return w.Commit()
}

// buildSnapshot returns the bytes of a snapshot file of base holding slots.
func buildSnapshot(t testing.TB, base uint64, slots []snapSlot) []byte {
	t.Helper()
	fsys := newMemFS()
	w, err := newSnapshotWriter(fsys, dir, "s", base)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSnap(w, slots); err != nil {
		t.Fatal(err)
	}
	b, ok := fsys.get(filepath.Join(dir, "s"))
	if !ok || int64(len(b)) != w.Size() {
		t.Fatalf("snapshot file: %d bytes, Size %d", len(b), w.Size())
	}
	return b
}

// recLoader records a snapshot's calls as text; with failAt > 0, that call
// (counting from 1) returns err.
type recLoader struct {
	calls  []string
	n      int
	failAt int
	err    error
}

func (l *recLoader) call(s string) error {
	l.n++
	if l.n == l.failAt {
		return l.err
	}
	l.calls = append(l.calls, s)
	return nil
}

func (l *recLoader) Slot(slot uint16, lsn uint64) error {
	return l.call(fmt.Sprintf("slot %d @%d", slot, lsn))
}

func (l *recLoader) Entry(key, value []byte) error {
	return l.call(fmt.Sprintf("entry %s=%s", key, value))
}
