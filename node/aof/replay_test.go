package aof

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const dir = "/d"

func memReplay(t testing.TB, fsys *memFS, cut bool) ([]*Record, ReplayStats, error, string) {
	t.Helper()
	lg, sink := testLogger(t)
	got, st, err := replayAll(t, ReplayOptions{Dir: dir, FS: fsys, Logger: lg, CutCorrupt: cut})
	return got, st, err, sink.buf.String()
}

func TestReplayMissingManifestIsEmpty(t *testing.T) {
	got, st, err, _ := memReplay(t, newMemFS(), false)
	if err != nil || len(got) != 0 || st != (ReplayStats{}) {
		t.Fatalf("got %d records, %+v, %v; want an empty log", len(got), st, err)
	}
}

func TestReplayClean(t *testing.T) {
	recs := samples(50)
	b, _ := logFile(0, recs)
	fsys := newMemFS()
	putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): b})
	got, st, err, _ := memReplay(t, fsys, false)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	want := ReplayStats{Records: 50, Bytes: int64(len(b)), LastLSN: 50, Files: 1}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}

// TestReplayTornTail cuts the last record at every byte offset, and also
// leaves it whole but damaged at every byte, or zero-filled: each time the
// earlier records survive, the file ends at the last good record, a Warn
// line says how much was dropped, and a second replay finds a clean log.
func TestReplayTornTail(t *testing.T) {
	recs := samples(6)
	// Make the last record big enough to have multi-byte lengths.
	recs[5] = &Record{Kind: KindCommand, Slot: 7, Now: 99,
		Cmds: [][][]byte{{[]byte("SET"), []byte("key"), bytes.Repeat([]byte("abc"), 100)}}}
	full, offs := logFile(0, recs)
	last := offs[5]
	type variant struct {
		name string
		file []byte
	}
	var vs []variant
	for k := last + 1; k < len(full); k++ {
		vs = append(vs, variant{fmt.Sprintf("cut at %d", k), full[:k]})
	}
	for k := last; k < len(full); k++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(full)
			b[k] ^= x
			vs = append(vs, variant{fmt.Sprintf("byte %d ^ %#x", k, x), b})
		}
	}
	zeroed := bytes.Clone(full)
	clear(zeroed[last+3:])
	vs = append(vs, variant{"zero-filled", zeroed})
	vs = append(vs, variant{"zeros appended", append(bytes.Clone(full[:last]), make([]byte, 4096)...)})

	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			fsys := newMemFS()
			putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): v.file})
			got, st, err, logs := memReplay(t, fsys, false)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, got, recs[:5])
			if st.LastLSN != 5 || st.CutBytes != int64(len(v.file)-last) || st.Bytes != int64(last) {
				t.Fatalf("stats %+v, want LastLSN 5, CutBytes %d, Bytes %d", st, len(v.file)-last, last)
			}
			if b, _ := fsys.get(filepath.Join(dir, LogName(1))); len(b) != last {
				t.Fatalf("file is %d bytes after the cut, want %d", len(b), last)
			}
			if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, fmt.Sprintf("dropped_bytes=%d", len(v.file)-last)) {
				t.Fatalf("no Warn line with the dropped bytes in:\n%s", logs)
			}
			got, st, err, _ = memReplay(t, fsys, false)
			if err != nil || st.CutBytes != 0 || len(got) != 5 {
				t.Fatalf("second replay: %d records, %+v, %v", len(got), st, err)
			}
		})
	}
}

// TestReplayCorruptMiddle damages every byte of a middle record: Replay
// must refuse with the record's offset, and CutCorrupt must cut there.
func TestReplayCorruptMiddle(t *testing.T) {
	recs := samples(8)
	full, offs := logFile(0, recs)
	mid := 3
	for k := offs[mid]; k < offs[mid+1]; k++ {
		for _, x := range []byte{0x01, 0x40, 0xff} {
			b := bytes.Clone(full)
			b[k] ^= x
			t.Run(fmt.Sprintf("byte %d ^ %#x", k, x), func(t *testing.T) {
				fsys := newMemFS()
				putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): b})
				got, _, err, _ := memReplay(t, fsys, false)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("err %v, want ErrCorrupt", err)
				}
				if want := fmt.Sprintf("%s at offset %d", filepath.Join(dir, LogName(1)), offs[mid]); !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not name %q", err, want)
				}
				checkRecords(t, got, recs[:mid])
				if after, _ := fsys.get(filepath.Join(dir, LogName(1))); !bytes.Equal(after, b) {
					t.Fatal("a refused replay changed the file")
				}

				got, st, err, logs := memReplay(t, fsys, true)
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, got, recs[:mid])
				if st.CutBytes != int64(len(b)-offs[mid]) || st.LastLSN != uint64(mid) {
					t.Fatalf("stats %+v", st)
				}
				if after, _ := fsys.get(filepath.Join(dir, LogName(1))); len(after) != offs[mid] {
					t.Fatalf("file is %d bytes after the cut, want %d", len(after), offs[mid])
				}
				if !strings.Contains(logs, "level=ERROR") {
					t.Fatalf("no Error line for the cut in:\n%s", logs)
				}
			})
		}
	}
}

func TestReplayCertainCorruption(t *testing.T) {
	recs := samples(4)
	good, _ := logFile(0, recs)
	// A record whose CRC is good but whose LSN skips one.
	skip := cloneRecord(sampleRecord(9))
	skip.LSN = 6
	gap := EncodeRecord(bytes.Clone(good), skip)
	// A record whose CRC is good but whose LSN repeats.
	dup := cloneRecord(sampleRecord(9))
	dup.LSN = 4
	repeat := EncodeRecord(bytes.Clone(good), dup)
	// A checksummed body with an unknown kind.
	unknown := append(bytes.Clone(good), frame([]byte{5, 7, 0, 0, 0})...)
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"LSN gap at the end", gap, "record has LSN 6, want 5"},
		{"LSN repeat at the end", repeat, "record has LSN 4, want 5"},
		{"unknown kind at the end", unknown, "unknown record kind 7"},
		{"empty file", nil, "header of 0 bytes"},
		{"short header", good[:headerLen-1], "header of 19 bytes"},
		{"bad magic", append([]byte("XXAOFv1\n"), good[8:]...), "bad magic"},
		{"bad header crc", func() []byte { b := bytes.Clone(good); b[9] ^= 1; return b }(), "header checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newMemFS()
			putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): tc.file})
			_, _, err, _ := memReplay(t, fsys, false)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrCorrupt with %q", err, tc.want)
			}
		})
	}
}

// TestReplayHostileLength claims a huge record: nothing is allocated for
// it, and with nothing valid after it, it is a torn tail.
func TestReplayHostileLength(t *testing.T) {
	recs := samples(3)
	good, _ := logFile(0, recs)
	for _, l := range []uint64{1 << 62, 1 << 40, 1<<31 + 1, 1 << 20} {
		b := binary.AppendUvarint(bytes.Clone(good), l)
		b = append(b, 1, 2, 3, 4, 5, 6, 7, 8)
		fsys := newMemFS()
		putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): b})
		got, st, err, _ := memReplay(t, fsys, false)
		if err != nil || len(got) != 3 || st.CutBytes != int64(len(b)-len(good)) {
			t.Fatalf("length %d: %d records, %+v, %v", l, len(got), st, err)
		}
	}
}

func TestReplayManifest(t *testing.T) {
	a, _ := logFile(0, samples(3))
	recsB := samples(4)
	bb, _ := logFile(3, recsB)
	tests := []struct {
		name     string
		manifest string
		want     string // error substring, "" for success
	}{
		{"two logs", "shardgate-aof-manifest 1\nlog appendonly.1.aof\nlog appendonly.2.aof\n", ""},
		{"order matters", "shardgate-aof-manifest 1\nlog appendonly.2.aof\nlog appendonly.1.aof\n", "starts after LSN 0, want 7"},
		{"no newline", "shardgate-aof-manifest 1\nlog appendonly.1.aof", "no final newline"},
		{"bad head", "shardgate-aof-manifest 2\nlog appendonly.1.aof\n", "first line"},
		{"no log", "shardgate-aof-manifest 1\n", "no log file"},
		{"path escape", "shardgate-aof-manifest 1\nlog ../appendonly.1.aof\n", "bad or repeated log name"},
		{"leading zero", "shardgate-aof-manifest 1\nlog appendonly.01.aof\n", "bad or repeated log name"},
		{"repeated", "shardgate-aof-manifest 1\nlog appendonly.1.aof\nlog appendonly.1.aof\n", "bad or repeated"},
		{"unknown line", "shardgate-aof-manifest 1\nlog appendonly.1.aof\nfoo\n", "bad line"},
		{"snapshot after log", "shardgate-aof-manifest 1\nlog appendonly.1.aof\nsnapshot appendonly.1.snap 3\n", "bad line"},
		{"missing log file", "shardgate-aof-manifest 1\nlog appendonly.9.aof\n", "file does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newMemFS()
			fsys.put(filepath.Join(dir, ManifestName), []byte(tc.manifest))
			fsys.put(filepath.Join(dir, LogName(1)), a)
			fsys.put(filepath.Join(dir, LogName(2)), bb)
			got, st, err, _ := memReplay(t, fsys, false)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 7 || st.LastLSN != 7 || st.Files != 2 {
					t.Fatalf("%d records, %+v", len(got), st)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReplaySnapshot(t *testing.T) {
	recs := samples(3)
	b, _ := logFile(10, recs)
	fsys := newMemFS()
	snap := buildSnapshot(t, 10, []snapSlot{{slot: 3, lsn: 10, entries: []string{"a", "1"}}, {slot: 9, lsn: 12}})
	fsys.put(filepath.Join(dir, ManifestName), []byte("shardgate-aof-manifest 1\nsnapshot appendonly.2.snap 10\nlog appendonly.2.aof\n"))
	fsys.put(filepath.Join(dir, SnapshotName(2)), snap)
	fsys.put(filepath.Join(dir, LogName(2)), b)

	if _, _, err := replayAll(t, ReplayOptions{Dir: dir, FS: fsys}); !errors.Is(err, ErrNoSnapshotLoader) {
		t.Fatalf("err %v, want ErrNoSnapshotLoader", err)
	}
	ld := &recLoader{}
	st, err := Replay(ReplayOptions{Dir: dir, FS: fsys, Snapshot: ld}, func(r *Record) error {
		ld.calls = append(ld.calls, fmt.Sprintf("record %d", r.LSN))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"slot 3 @10", "entry a=1", "slot 9 @12", "record 11", "record 12", "record 13"}
	wantInfo := SnapshotInfo{Base: 10, Slots: 2, Entries: 1, Size: int64(len(snap))}
	if fmt.Sprint(ld.calls) != fmt.Sprint(want) || st.LastLSN != 13 || st.Snapshot != wantInfo {
		t.Fatalf("calls %q, stats %+v; want %q, %+v", ld.calls, st, want, wantInfo)
	}

	// The first log must start where the snapshot ends, and the snapshot's
	// header must carry the manifest's LSN.
	for _, m := range []string{
		"shardgate-aof-manifest 1\nsnapshot appendonly.2.snap 9\nlog appendonly.2.aof\n",
		"shardgate-aof-manifest 1\nsnapshot appendonly.2.snap 11\nlog appendonly.2.aof\n",
	} {
		fsys.put(filepath.Join(dir, ManifestName), []byte(m))
		_, err = Replay(ReplayOptions{Dir: dir, FS: fsys, Snapshot: &recLoader{}}, func(*Record) error { return nil })
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("manifest %q: err %v, want ErrCorrupt", m, err)
		}
	}

	// A loader's error stops replay as it is.
	fsys.put(filepath.Join(dir, ManifestName), []byte("shardgate-aof-manifest 1\nsnapshot appendonly.2.snap 10\nlog appendonly.2.aof\n"))
	stop := errors.New("stop")
	_, err = Replay(ReplayOptions{Dir: dir, FS: fsys, Snapshot: &recLoader{failAt: 2, err: stop}}, func(*Record) error { return nil })
	if err != stop {
		t.Fatalf("err %v, want the loader's", err)
	}
}

// TestReplayDamageInEarlierFile: an earlier file must be whole (it was
// fsynced before the next began), so even a torn-looking tail there is
// corruption; CutCorrupt cuts it and drops the later files.
func TestReplayDamageInEarlierFile(t *testing.T) {
	a, _ := logFile(0, samples(3))
	bb, _ := logFile(3, samples(2))
	fsys := newMemFS()
	putLog(fsys, dir, []string{LogName(1), LogName(2)}, map[string][]byte{LogName(1): a[:len(a)-2], LogName(2): bb})
	if _, _, err, _ := memReplay(t, fsys, false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
	got, st, err, _ := memReplay(t, fsys, true)
	if err != nil || len(got) != 2 || st.LastLSN != 2 {
		t.Fatalf("CutCorrupt: %d records, %+v, %v", len(got), st, err)
	}
	m, _ := fsys.get(filepath.Join(dir, ManifestName))
	if want := "shardgate-aof-manifest 1\nlog appendonly.1.aof\n"; string(m) != want {
		t.Fatalf("manifest %q, want %q", m, want)
	}
	if _, ok := fsys.get(filepath.Join(dir, LogName(2)+droppedSuffix)); !ok {
		t.Fatalf("the dropped file should stay on disk, renamed; files %q", fsys.names())
	}
}

func TestReplayCallbackError(t *testing.T) {
	b, _ := logFile(0, samples(5))
	fsys := newMemFS()
	putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): b})
	stop := errors.New("stop")
	n := 0
	st, err := Replay(ReplayOptions{Dir: dir, FS: fsys}, func(r *Record) error {
		n++
		if r.LSN == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 || st.Records != 2 {
		t.Fatalf("err %v after %d calls, %+v; want the callback's error after 3", err, n, st)
	}
}

// TestFindRecordBudget: contents built so that the search for a valid
// record would walk a long structure at each of thousands of offsets
// (quadratic) make it give up within its budget, reported as undecided.
func TestFindRecordBudget(t *testing.T) {
	const (
		candidates = 4000
		stride     = 24
		zeros      = 1 << 20 // empty commands every candidate walks through
	)
	zStart := candidates * stride
	size := zStart + zeros
	b := make([]byte, size)
	built := 0
	for i := range candidates {
		p := i * stride
		// body: LSN 1, kind, slot 0, now 0, ncmds, then one command with
		// one argument reaching zStart, then the empty commands.
		var hdr []byte
		for alen := 1; alen <= 4 && hdr == nil; alen++ {
			for llen := 1; llen <= 4; llen++ {
				fixed := llen + crcLen + 4 + uvarintLen(1+zeros) + 1 + alen
				arg := zStart - p - fixed
				body := 4 + uvarintLen(1+zeros) + 1 + alen + arg + zeros
				if uvarintLen(uint64(arg)) != alen || uvarintLen(uint64(body)) != llen {
					continue
				}
				hdr = binary.AppendUvarint(nil, uint64(body))
				hdr = append(hdr, 0, 0, 0, 0, 1, KindTx, 0, 0)
				hdr = binary.AppendUvarint(hdr, 1+zeros)
				hdr = append(hdr, 1)
				hdr = binary.AppendUvarint(hdr, uint64(arg))
				break
			}
		}
		if hdr == nil {
			// A varint length boundary: no self-consistent header here.
			continue
		}
		if len(hdr) > stride {
			t.Fatalf("candidate %d: header of %d bytes", i, len(hdr))
		}
		copy(b[p:], hdr)
		built++
	}
	if built < candidates*9/10 {
		t.Fatalf("only %d candidates built", built)
	}
	// A candidate frames (the CRC is wrong, so none is valid).
	if _, _, err := DecodeRecord(b[stride:]); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a candidate does not frame as intended: %v", err)
	}
	f := &memFile{n: &memNode{data: b}}
	found, undecided, err := findRecord(f, 0, int64(len(b)), 0)
	if err != nil || found >= 0 || !undecided {
		t.Fatalf("found %d, undecided %v, err %v; want undecided", found, undecided, err)
	}
}

// TestReplayMissingManifestWithData: without a manifest, a first log file
// holding only its header (a crash while it was created) or nothing at all
// still replays as empty, but a log file with records or a snapshot makes
// Replay refuse, also with CutCorrupt: starting empty would overwrite them.
func TestReplayMissingManifestWithData(t *testing.T) {
	hdrOnly, _ := logFile(0, nil)
	full, _ := logFile(0, samples(3))
	for _, tc := range []struct {
		name   string
		files  map[string][]byte
		refuse []string // the files the error must name
	}{
		{"header only", map[string][]byte{LogName(1): hdrOnly}, nil},
		{"empty file", map[string][]byte{LogName(1): nil}, nil},
		{"manifest.tmp and other files", map[string][]byte{ManifestName + tmpSuffix: []byte("x"), "notes.txt": []byte("keep")}, nil},
		{"records", map[string][]byte{LogName(1): full}, []string{LogName(1)}},
		{"records in a later file", map[string][]byte{LogName(1): hdrOnly, LogName(2): full}, []string{LogName(2)}},
		{"snapshot", map[string][]byte{SnapshotName(3): []byte("s")}, []string{SnapshotName(3)}},
	} {
		for _, cut := range []bool{false, true} {
			fsys := newMemFS()
			for name, b := range tc.files {
				fsys.put(filepath.Join(dir, name), b)
			}
			got, _, err, _ := memReplay(t, fsys, cut)
			if tc.refuse == nil {
				if err != nil || len(got) != 0 {
					t.Errorf("%s (cut %v): %d records, %v; want an empty log", tc.name, cut, len(got), err)
				}
				continue
			}
			if !errors.Is(err, ErrNoManifest) {
				t.Errorf("%s (cut %v): err %v, want ErrNoManifest", tc.name, cut, err)
				continue
			}
			for _, name := range tc.refuse {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("%s: error %q does not name %s", tc.name, err, name)
				}
			}
		}
	}
}
