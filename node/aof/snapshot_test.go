package aof

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rawItem frames body as a snapshot item.
func rawItem(body ...byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(body)))
	crc := crc32.Update(crc32.Update(0, castagnoli, b), castagnoli, body)
	b = binary.LittleEndian.AppendUint32(b, crc)
	return append(b, body...)
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func slotItem(slot, lsn uint64) []byte {
	return rawItem(slices.Concat([]byte{itemSlot}, uv(slot), uv(lsn))...)
}

func entryItem(key, value string) []byte {
	return rawItem(slices.Concat([]byte{itemEntry}, uv(uint64(len(key))), []byte(key), []byte(value))...)
}

func endItem(slots, entries uint64) []byte {
	return rawItem(slices.Concat([]byte{itemEnd}, uv(slots), uv(entries))...)
}

// readBytes reads a snapshot held in b.
func readBytes(b []byte, ld SnapshotLoader) (SnapshotInfo, error) {
	return readSnapshot(bytes.NewReader(b), int64(len(b)), "s", ld, nil)
}

var sampleSlots = []snapSlot{
	{slot: 0, lsn: 5, entries: []string{"", "empty key", "a", ""}},
	{slot: 7, lsn: 9},
	{slot: 300, lsn: 5, entries: []string{"key", strings.Repeat("v", 200), "k2", "x"}},
	{slot: 16383, lsn: 1 << 40, entries: []string{"last", "slot"}},
}

func TestSnapshotRoundTrip(t *testing.T) {
	b := buildSnapshot(t, 5, sampleSlots)
	ld := &recLoader{}
	info, err := readBytes(b, ld)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"slot 0 @5", "entry =empty key", "entry a=", "slot 7 @9", "slot 300 @5",
		"entry key=" + strings.Repeat("v", 200), "entry k2=x", "slot 16383 @1099511627776", "entry last=slot"}
	if fmt.Sprint(ld.calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", ld.calls, want)
	}
	if info != (SnapshotInfo{Base: 5, Slots: 4, Entries: 5, Size: int64(len(b))}) {
		t.Fatalf("info %+v", info)
	}
	// An empty snapshot is valid too.
	if info, err := readBytes(buildSnapshot(t, 0, nil), &recLoader{}); err != nil || info.Slots != 0 {
		t.Fatalf("empty snapshot: %+v, %v", info, err)
	}
}

// TestSnapshotReaderRejects: every truncation and every bit flip of a
// valid snapshot, and files that are well framed but break the rules, are
// errors wrapping ErrCorrupt that name the file and an offset.
func TestSnapshotReaderRejects(t *testing.T) {
	good := buildSnapshot(t, 5, sampleSlots)
	check := func(name string, b []byte) {
		t.Helper()
		_, err := readBytes(b, &recLoader{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "snapshot s at offset ") {
			t.Fatalf("%s: err %v, want ErrCorrupt naming the file and offset", name, err)
		}
	}
	for n := range len(good) {
		check(fmt.Sprintf("truncated to %d bytes", n), good[:n])
	}
	for i := range good {
		for bit := range 8 {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			check(fmt.Sprintf("bit %d of byte %d flipped", bit, i), b)
		}
	}
	hdr := encodeSnapHeader(5)
	file := func(items ...[]byte) []byte { return slices.Concat(append([][]byte{hdr}, items...)...) }
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"no end", file(slotItem(1, 5)), "without its end item"},
		{"descending slots", file(slotItem(3, 5), slotItem(2, 5), endItem(2, 0)), "slot 2 after slot 3"},
		{"repeated slot", file(slotItem(3, 5), slotItem(3, 5), endItem(2, 0)), "slot 3 after slot 3"},
		{"slot out of range", file(slotItem(16384, 5), endItem(1, 0)), "slot 16384"},
		{"slot before the base", file(slotItem(1, 4), endItem(1, 0)), "as of LSN 4"},
		{"entry before a slot", file(entryItem("k", "v"), endItem(0, 1)), "an entry before any slot"},
		{"wrong slot count", file(slotItem(1, 5), endItem(2, 0)), "counts 2 slots"},
		{"wrong entry count", file(slotItem(1, 5), entryItem("k", "v"), endItem(1, 2)), "and 2 entries"},
		{"data after the end", file(slotItem(1, 5), endItem(1, 0), slotItem(2, 5)), "bytes after the end item"},
		{"two ends", file(endItem(0, 0), endItem(0, 0)), "bytes after the end item"},
		{"unknown kind", file(rawItem(9, 1), endItem(0, 0)), "unknown item kind 9"},
		{"empty item", file(rawItem(), endItem(0, 0)), "empty item"},
		{"key past the item", file(slotItem(1, 5), rawItem(itemEntry, 5, 'k'), endItem(1, 1)), "bad entry item"},
		{"stray bytes in a slot item", file(rawItem(itemSlot, 1, 5, 0), endItem(1, 0)), "bad slot item"},
		{"non-minimal slot number", file(rawItem(itemSlot, 0x81, 0x00, 5), endItem(1, 0)), "bad slot item"},
		{"stray bytes in the end item", file(rawItem(itemEnd, 0, 0, 0)), "bad end item"},
		{"hostile length", append(bytes.Clone(hdr), slices.Concat(uv(1<<62), []byte{1, 2, 3, 4, 5})...), "runs past the end"},
		{"log file", encodeHeader(5), "bad magic"},
		{"header only", hdr, "without its end item"},
		{"short header", hdr[:10], "header of 10 bytes"},
	}
	for _, tc := range tests {
		_, err := readBytes(tc.b, &recLoader{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrCorrupt with %q", tc.name, err, tc.want)
		}
	}
	// A manifest's snapshot must carry the manifest's LSN.
	want := uint64(6)
	if _, err := readSnapshot(bytes.NewReader(good), int64(len(good)), "s", &recLoader{}, &want); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("base 5 where the manifest says 6: %v", err)
	}
}

// TestSnapshotWriterRejects: the writer refuses what the reader would
// reject, and the error sticks.
func TestSnapshotWriterRejects(t *testing.T) {
	tests := []struct {
		name string
		do   func(w *SnapshotWriter) error
		want string
	}{
		{"entry first", func(w *SnapshotWriter) error { return w.Entry([]byte("k"), nil) }, "before any slot"},
		{"descending", func(w *SnapshotWriter) error { w.Slot(5, 10); return w.Slot(4, 10) }, "slot 4 after slot 5"},
		{"repeated", func(w *SnapshotWriter) error { w.Slot(5, 10); return w.Slot(5, 10) }, "slot 5 after slot 5"},
		{"out of range", func(w *SnapshotWriter) error { return w.Slot(NumSlots, 10) }, "below 16384"},
		{"before the base", func(w *SnapshotWriter) error { return w.Slot(1, 9) }, "before the snapshot's base 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newMemFS()
			w, err := newSnapshotWriter(fsys, dir, "s", 10)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.do(w); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if err := w.Slot(16000, 10); err == nil {
				t.Fatal("the writer went on after an error")
			}
			if err := w.Commit(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Commit = %v, want the first error", err)
			}
			if got := fsys.names(); len(got) != 0 {
				t.Fatalf("files left: %q", got)
			}
		})
	}
}

// TestStandaloneSnapshot writes and loads a snapshot no manifest names, on
// the real filesystem.
func TestStandaloneSnapshot(t *testing.T) {
	d := t.TempDir()
	if _, err := CreateSnapshotFile(nil, d, "../x"); err == nil {
		t.Fatal("CreateSnapshotFile accepted a path")
	}
	w, err := CreateSnapshotFile(nil, d, "dump.snap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, "dump.snap.tmp")); err != nil {
		t.Fatalf("no temporary file while writing: %v", err)
	}
	if err := writeSnap(w, sampleSlots); err != nil {
		t.Fatal(err)
	}
	names, _ := OSFS().ReadDir(d)
	if fmt.Sprint(names) != "[dump.snap]" {
		t.Fatalf("files %q", names)
	}
	fi, _ := os.Stat(filepath.Join(d, "dump.snap"))
	if fi.Size() != w.Size() {
		t.Fatalf("file %d bytes, Size %d", fi.Size(), w.Size())
	}
	ld := &recLoader{}
	info, err := LoadSnapshotFile(nil, filepath.Join(d, "dump.snap"), ld)
	if err != nil || info.Base != 0 || info.Slots != 4 || info.Entries != 5 || info.Size != fi.Size() || len(ld.calls) != 9 {
		t.Fatalf("loaded %+v (%d calls), %v", info, len(ld.calls), err)
	}

	// Abort leaves nothing; the old file stays as it was.
	w, err = CreateSnapshotFile(nil, d, "dump.snap")
	if err != nil {
		t.Fatal(err)
	}
	w.Slot(1, 0)
	w.Abort()
	if names, _ := OSFS().ReadDir(d); fmt.Sprint(names) != "[dump.snap]" {
		t.Fatalf("files after Abort %q", names)
	}
	if _, err := LoadSnapshotFile(nil, filepath.Join(d, "missing"), ld); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestOpenRemovesStale: Open removes the files of ours the manifest does
// not name, logging each, and nothing else; with a bad manifest it removes
// nothing.
func TestOpenRemovesStale(t *testing.T) {
	mem := newMemFS()
	recs := samples(4)
	a, _ := logFile(10, recs[:2])
	b, _ := logFile(12, recs[2:])
	mem.put(filepath.Join(dir, ManifestName), []byte("shardgate-aof-manifest 1\nsnapshot appendonly.3.snap 10\nlog appendonly.3.aof\nlog appendonly.4.aof\n"))
	mem.put(filepath.Join(dir, SnapshotName(3)), buildSnapshot(t, 10, nil))
	mem.put(filepath.Join(dir, LogName(3)), a)
	mem.put(filepath.Join(dir, LogName(4)), b)
	stale := []string{LogName(1), LogName(2), SnapshotName(2), LogName(5) + tmpSuffix, SnapshotName(4) + tmpSuffix,
		SnapshotName(3) + tmpSuffix, ManifestName + tmpSuffix, LogName(9)}
	others := []string{"cluster.json", "migration.json", LogName(2) + droppedSuffix, "appendonly.x.aof",
		"appendonly.07.aof", "appendonly.7.aof.bak", "appendonly.manifest.old", "dump.snap", "dump.snap.tmp"}
	for _, n := range slices.Concat(stale, others) {
		mem.put(filepath.Join(dir, n), []byte("x"))
	}
	before := mem.names()

	bad := mem.clone()
	bad.put(filepath.Join(dir, ManifestName), []byte("shardgate-aof-manifest 1\nlog appendonly.3.aof\nbogus\n"))
	if _, err := Open(Options{Dir: dir, FS: bad, Logger: quietLogger()}, 14); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a bad manifest = %v", err)
	}
	if got := bad.names(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("Open with a bad manifest removed files: %q", got)
	}

	lg, sink := testLogger(t)
	l, err := Open(Options{Dir: dir, FS: mem, Logger: lg}, 14)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(others, []string{ManifestName, SnapshotName(3), LogName(3), LogName(4)})
	slices.Sort(want)
	if got := mem.names(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	for _, n := range stale {
		if !strings.Contains(sink.buf.String(), "file="+filepath.Join(dir, n)) {
			t.Errorf("no log line for removing %s", n)
		}
	}
	// Stats see the snapshot and both logs; a rotation takes the next
	// number after the largest the manifest names.
	st := l.Stats()
	if st.BaseSize != int64(len(buildSnapshot(t, 10, nil))) || st.LogsSize != int64(len(a)+len(b)) || st.File != LogName(4) {
		t.Fatalf("stats %+v", st)
	}
	if base, err := l.Rotate(); err != nil || base != 14 {
		t.Fatalf("Rotate = %d, %v", base, err)
	}
	if st := l.Stats(); st.File != LogName(5) || st.LogsSize != int64(len(a)+len(b)+headerLen) {
		t.Fatalf("after Rotate: %+v", st)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFileNumbers: a new log file is numbered after the largest number
// the manifest names, the snapshot's included.
func TestFileNumbers(t *testing.T) {
	mem := newMemFS()
	lf, _ := logFile(10, nil)
	mem.put(filepath.Join(dir, ManifestName), []byte("shardgate-aof-manifest 1\nsnapshot appendonly.9.snap 10\nlog appendonly.2.aof\n"))
	mem.put(filepath.Join(dir, SnapshotName(9)), buildSnapshot(t, 10, nil))
	mem.put(filepath.Join(dir, LogName(2)), lf)
	l := openLog(t, dir, No, mem, 10)
	defer l.Close()
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.File != LogName(10) {
		t.Fatalf("new file %q, want %q", st.File, LogName(10))
	}
}
