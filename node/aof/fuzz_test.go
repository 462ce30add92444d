package aof

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzReplay and FuzzSnapshot from fuzzSeeds and snapshotSeeds")

// fuzzSeeds are log files covering the format's cases.
func fuzzSeeds() map[string][]byte {
	recs := samples(6)
	clean, offs := logFile(0, recs)
	last := offs[len(offs)-1]
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 0x20; return b }
	gap := cloneRecord(sampleRecord(1))
	gap.LSN = 9
	return map[string][]byte{
		"empty":          nil,
		"header_only":    encodeHeader(0),
		"header_base":    encodeHeader(1 << 40),
		"clean":          clean,
		"one_record":     clean[:offs[1]],
		"torn_tail":      clean[:last+7],
		"torn_length":    clean[:last+1],
		"bad_last_crc":   flip(clean, len(clean)-1),
		"corrupt_middle": flip(clean, offs[2]+6),
		"bad_length":     flip(clean, offs[3]),
		"zero_tail":      append(bytes.Clone(clean), make([]byte, 64)...),
		"hostile_length": append(binary.AppendUvarint(bytes.Clone(clean), 1<<62), 1, 2, 3, 4, 5, 6),
		"lsn_gap":        EncodeRecord(bytes.Clone(clean), gap),
		"bad_header":     flip(clean, 3),
	}
}

func corpusFile(b []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
}

// TestFuzzSeedCorpus keeps the committed corpora in step with fuzzSeeds
// and snapshotSeeds (go test -run TestFuzzSeedCorpus -update-seeds
// rewrites them).
func TestFuzzSeedCorpus(t *testing.T) {
	for target, seeds := range map[string]map[string][]byte{"FuzzReplay": fuzzSeeds(), "FuzzSnapshot": snapshotSeeds(t)} {
		d := filepath.Join("testdata", "fuzz", target)
		for name, b := range seeds {
			path := filepath.Join(d, "seed_"+name)
			want := corpusFile(b)
			if *updateSeeds {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is missing or stale (run with -update-seeds): %v", path, err)
			}
		}
	}
}

// FuzzReplay replays arbitrary bytes as a log file: it must never panic or
// allocate more than a small multiple of the input; whatever it accepts or
// cuts must replay again cleanly to the same records.
func FuzzReplay(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzReplay (see TestFuzzSeedCorpus).
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := newMemFS()
		putLog(fsys, dir, []string{LogName(1)}, map[string][]byte{LogName(1): data})
		o := ReplayOptions{Dir: dir, FS: fsys, Logger: quietLogger()}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		var lsns []uint64
		st, err := Replay(o, func(r *Record) error {
			lsns = append(lsns, r.LSN)
			return nil
		})
		runtime.ReadMemStats(&ms)
		if alloc := ms.TotalAlloc - before; alloc > 64*uint64(len(data))+4<<20 {
			t.Fatalf("replaying %d bytes allocated %d", len(data), alloc)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			if len(data) >= headerLen {
				if _, herr := decodeHeader(data); herr != nil {
					return // CutCorrupt cannot fix a header
				}
			} else {
				return
			}
			o.CutCorrupt = true
			lsns = lsns[:0]
			st, err = Replay(o, func(r *Record) error {
				lsns = append(lsns, r.LSN)
				return nil
			})
			if err != nil {
				t.Fatalf("CutCorrupt: %v", err)
			}
			o.CutCorrupt = false
		}
		after, _ := fsys.get(filepath.Join(dir, LogName(1)))
		if int64(len(after)) != st.Bytes || st.Bytes+st.CutBytes != int64(len(data)) {
			t.Fatalf("file %d bytes after replay, stats %+v, input %d", len(after), st, len(data))
		}
		var again []uint64
		st2, err := Replay(o, func(r *Record) error {
			again = append(again, r.LSN)
			return nil
		})
		if err != nil || st2.CutBytes != 0 || fmt.Sprint(again) != fmt.Sprint(lsns) || st2.LastLSN != st.LastLSN {
			t.Fatalf("second replay: %v, %+v, LSNs %v, want %v", err, st2, again, lsns)
		}
	})
}

// snapshotSeeds are snapshot files covering the format's cases.
func snapshotSeeds(t testing.TB) map[string][]byte {
	good := buildSnapshot(t, 5, sampleSlots)
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 0x04; return b }
	hdr := encodeSnapHeader(5)
	file := func(items ...[]byte) []byte { return slices.Concat(append([][]byte{hdr}, items...)...) }
	return map[string][]byte{
		"empty":          nil,
		"header_only":    hdr,
		"no_slots":       buildSnapshot(t, 0, nil),
		"good":           good,
		"truncated":      good[:len(good)-3],
		"flipped_body":   flip(good, len(good)/2),
		"flipped_header": flip(good, 9),
		"descending":     file(slotItem(3, 5), slotItem(2, 5), endItem(2, 0)),
		"entry_first":    file(entryItem("k", "v"), endItem(0, 1)),
		"bad_counts":     file(slotItem(1, 5), entryItem("k", "v"), endItem(1, 2)),
		"after_end":      file(slotItem(1, 5), endItem(1, 0), slotItem(2, 5)),
		"hostile_length": append(bytes.Clone(hdr), slices.Concat(uv(1<<62), []byte{1, 2, 3, 4, 5})...),
	}
}

// snapItem is one call a snapshot made to its loader.
type snapItem struct {
	slot       uint16
	lsn        uint64
	key, value []byte // nil key: a slot
}

type collectLoader struct{ items []snapItem }

func (c *collectLoader) Slot(slot uint16, lsn uint64) error {
	c.items = append(c.items, snapItem{slot: slot, lsn: lsn})
	return nil
}

func (c *collectLoader) Entry(key, value []byte) error {
	c.items = append(c.items, snapItem{key: append([]byte{}, key...), value: bytes.Clone(value)})
	return nil
}

// FuzzSnapshot reads arbitrary bytes as a snapshot: it must never panic
// or allocate more than a small multiple of the input, must reject with
// ErrCorrupt, and whatever it accepts must be exactly what SnapshotWriter
// writes for the same calls (the format has one encoding).
func FuzzSnapshot(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzSnapshot (see TestFuzzSeedCorpus).
	f.Fuzz(func(t *testing.T, data []byte) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		ld := &collectLoader{}
		info, err := readBytes(data, ld)
		runtime.ReadMemStats(&ms)
		if alloc := ms.TotalAlloc - before; alloc > 8*uint64(len(data))+256<<10 {
			t.Fatalf("reading %d bytes allocated %d", len(data), alloc)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			return
		}
		fsys := newMemFS()
		w, err := newSnapshotWriter(fsys, dir, "s", info.Base)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range ld.items {
			if it.key == nil {
				err = w.Slot(it.slot, it.lsn)
			} else {
				err = w.Entry(it.key, it.value)
			}
			if err != nil {
				t.Fatalf("the writer rejects what the reader accepted: %v", err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		again, _ := fsys.get(filepath.Join(dir, "s"))
		if !bytes.Equal(again, data) || info.Size != int64(len(data)) {
			t.Fatalf("accepted %q (%+v) but the writer writes %q", data, info, again)
		}
	})
}
