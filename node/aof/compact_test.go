package aof

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testSlots is how many slots the model uses.
const testSlots = 6

// kvModel stands in for the node: SET records per slot, applied under a
// lock together with their Append (as the node appends under its keyspace
// locks), and a snapshot that dumps each slot with the LSN it is as of.
type kvModel struct {
	mu    sync.Mutex
	slots map[uint16]map[string]string
	lsn   map[uint16]uint64 // the LSN each slot is as of (from a snapshot, or its last record)
	snap  map[uint16]bool   // slots whose data came from a snapshot (replay skips their older records)
	recs  []*Record         // appended, by LSN-1
}

func newModel() *kvModel {
	return &kvModel{slots: map[uint16]map[string]string{}, lsn: map[uint16]uint64{}, snap: map[uint16]bool{}}
}

func (m *kvModel) apply(slot uint16, key, val string, lsn uint64) {
	if m.slots[slot] == nil {
		m.slots[slot] = map[string]string{}
	}
	m.slots[slot][key] = val
	m.lsn[slot] = lsn
}

// set appends SET key val in slot and applies it.
func (m *kvModel) set(l *Log, slot uint16, key, val string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &Record{Kind: KindCommand, Slot: int32(slot), Now: 1, Cmds: [][][]byte{{[]byte("SET"), []byte(key), []byte(val)}}}
	lsn := l.Append(r)
	m.apply(slot, key, val, lsn)
	m.recs = append(m.recs, cloneRecord(r))
	return lsn
}

// setN appends n records across the slots and waits for the last.
func (m *kvModel) setN(t testing.TB, l *Log, n int, tag string) uint64 {
	t.Helper()
	var lsn uint64
	for i := range n {
		lsn = m.set(l, uint16(i%testSlots), fmt.Sprintf("k%d", i%17), fmt.Sprintf("%s-%d", tag, i))
	}
	if err := l.Wait(lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// dump writes every slot through w, each as of the moment it is copied;
// between slots, between(slot) may append more.
func (m *kvModel) dump(w *SnapshotWriter, base uint64, between func(slot uint16)) error {
	for s := range uint16(testSlots) {
		m.mu.Lock()
		data := maps.Clone(m.slots[s])
		lsn := max(m.lsn[s], base)
		m.mu.Unlock()
		if err := w.Slot(s, lsn); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if err := w.Entry([]byte(k), []byte(data[k])); err != nil {
				return err
			}
		}
		if between != nil {
			between(s)
		}
	}
	return nil
}

// compact runs Rotate, a dump and Commit.
func (m *kvModel) compact(l *Log, between func(uint16)) (uint64, error) {
	b, err := l.Rotate()
	if err != nil {
		return 0, err
	}
	w, err := l.CreateSnapshot(b)
	if err != nil {
		return b, err
	}
	defer w.Abort()
	if err := m.dump(w, b, between); err != nil {
		return b, err
	}
	return b, w.Commit()
}

// upTo returns the keyspace after records 1..lsn.
func (m *kvModel) upTo(lsn uint64) map[uint16]map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := newModel()
	for _, r := range m.recs[:lsn] {
		want.apply(uint16(r.Slot), string(r.Cmds[0][1]), string(r.Cmds[0][2]), r.LSN)
	}
	return want.slots
}

// modelLoader replays a snapshot and records into a fresh model the way
// the node does: a slot's records up to the snapshot's LSN for it are
// skipped.
type modelLoader struct {
	m    *kvModel
	cur  uint16
	lsns []uint64 // records applied
}

func (ld *modelLoader) Slot(slot uint16, lsn uint64) error {
	ld.cur = slot
	ld.m.lsn[slot], ld.m.snap[slot] = lsn, true
	if ld.m.slots[slot] == nil {
		ld.m.slots[slot] = map[string]string{}
	}
	return nil
}

func (ld *modelLoader) Entry(key, value []byte) error {
	ld.m.slots[ld.cur][string(key)] = string(value)
	return nil
}

func (ld *modelLoader) record(r *Record) error {
	s := uint16(r.Slot)
	if ld.m.snap[s] && r.LSN <= ld.m.lsn[s] {
		return nil
	}
	ld.m.apply(s, string(r.Cmds[0][1]), string(r.Cmds[0][2]), r.LSN)
	ld.lsns = append(ld.lsns, r.LSN)
	return nil
}

// replayModel replays d into a fresh model.
func replayModel(t testing.TB, fsys FS, d string) (*modelLoader, ReplayStats, error) {
	t.Helper()
	ld := &modelLoader{m: newModel()}
	st, err := Replay(ReplayOptions{Dir: d, FS: fsys, Logger: quietLogger(), Snapshot: ld}, ld.record)
	return ld, st, err
}

// sameKeyspace compares keyspaces, treating empty slots as absent.
func sameKeyspace(a, b map[uint16]map[string]string) bool {
	for s := range uint16(testSlots) {
		if !maps.Equal(a[s], b[s]) {
			return false
		}
	}
	return true
}

// TestCompaction runs two compactions while goroutines write, with each
// policy: Replay gives the snapshot, then exactly the records after the
// last rotation, and the same keyspace; only the files of the new
// manifest remain; the stats match the files; and after reopening the
// cycle works again.
func TestCompaction(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "cluster.json"), []byte("{}"), 0o644)
			m := newModel()
			l := openLog(t, d, p, nil, 0)
			m.setN(t, l, 100, "a")

			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						lsn := m.set(l, uint16((g+i)%testSlots), fmt.Sprintf("k%d", i%23), fmt.Sprintf("g%d-%d", g, i))
						if err := l.Wait(lsn); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			var bases []uint64
			for range 2 {
				b, err := m.compact(l, func(uint16) { time.Sleep(time.Millisecond) })
				if err != nil {
					t.Fatal(err)
				}
				bases = append(bases, b)
				time.Sleep(3 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			last := m.setN(t, l, 10, "b")
			st := l.Stats()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			// Files: the manifest, the second snapshot, the logs from the
			// second rotation's file on, and cluster.json untouched.
			man := manifestOf(t, OSFS(), d)
			if man.snapshot != SnapshotName(3) || man.snapshotLSN != bases[1] || fmt.Sprint(man.logs) != fmt.Sprint([]string{LogName(3)}) {
				t.Fatalf("manifest %+v, bases %v", man, bases)
			}
			names, _ := OSFS().ReadDir(d)
			slices.Sort(names)
			if want := []string{LogName(3), SnapshotName(3), ManifestName, "cluster.json"}; fmt.Sprint(names) != fmt.Sprint(want) {
				t.Fatalf("files %q, want %q", names, want)
			}
			snapFI, _ := os.Stat(filepath.Join(d, SnapshotName(3)))
			logFI, _ := os.Stat(filepath.Join(d, LogName(3)))
			if st.BaseSize != snapFI.Size() || st.LogsSize != logFI.Size() || st.File != LogName(3) {
				t.Fatalf("stats %+v; snapshot %d bytes, log %d", st, snapFI.Size(), logFI.Size())
			}

			ld, rst, err := replayModel(t, OSFS(), d)
			if err != nil {
				t.Fatal(err)
			}
			if rst.LastLSN != last || rst.Snapshot.Base != bases[1] || rst.Snapshot.Slots != testSlots || rst.Files != 1 {
				t.Fatalf("replay %+v, last LSN %d, bases %v", rst, last, bases)
			}
			if rst.Records != int(last-bases[1]) {
				t.Fatalf("replayed %d records, want exactly those after %d (%d)", rst.Records, bases[1], last-bases[1])
			}
			if !sameKeyspace(ld.m.slots, m.upTo(last)) {
				t.Fatal("the replayed keyspace differs from the one written")
			}

			// Reopen, write, compact again.
			l = openLog(t, d, p, nil, rst.LastLSN)
			m.setN(t, l, 20, "c")
			if _, err := m.compact(l, nil); err != nil {
				t.Fatal(err)
			}
			last = m.setN(t, l, 5, "d")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			ld, rst, err = replayModel(t, OSFS(), d)
			if err != nil || rst.LastLSN != last || !sameKeyspace(ld.m.slots, m.upTo(last)) {
				t.Fatalf("after reopening: %+v, %v", rst, err)
			}
			if man := manifestOf(t, OSFS(), d); man.snapshot != SnapshotName(4) {
				t.Fatalf("manifest %+v", man)
			}
		})
	}
}

// TestCompactionCrashImages takes a copy of the files before every
// filesystem operation of a run (appends, a rotation, a snapshot written
// while records are appended, its commit, more appends), as a crash at
// that moment would leave them. Every image replays without error to the
// keyspace of some LSN at least the last acknowledged one, and Open then
// leaves only the manifest's files, which replay the same again.
func TestCompactionCrashImages(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			mem := newMemFS()
			fsys := NewFaultFS(mem)
			type image struct {
				fs    *memFS
				acked uint64
				op    string
			}
			var (
				mu     sync.Mutex
				images []image
				acked  atomic.Uint64
			)
			fsys.FailOp(func(op Op, path string) error {
				mu.Lock()
				images = append(images, image{mem.clone(), acked.Load(), fmt.Sprintf("%s %s", op, filepath.Base(path))})
				mu.Unlock()
				return nil
			})
			m := newModel()
			l := openLog(t, dir, p, fsys, 0)
			ack := func(lsn uint64) {
				if err := l.Wait(lsn); err != nil {
					t.Fatal(err)
				}
				acked.Store(lsn)
			}
			ack(m.setN(t, l, 12, "a"))
			for round := range 2 {
				_, err := m.compact(l, func(s uint16) {
					// Writes to a dumped slot and to one not yet dumped.
					ack(m.set(l, s, "x", fmt.Sprintf("r%d-%d", round, s)))
					ack(m.set(l, (s+1)%testSlots, "y", fmt.Sprintf("r%d-%d", round, s)))
				})
				if err != nil {
					t.Fatal(err)
				}
				ack(m.setN(t, l, 4, fmt.Sprintf("b%d", round)))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			fsys.FailOp(nil)
			ops := map[string]bool{}
			for _, im := range images {
				ops[strings.Fields(im.op)[0]] = true
			}
			if len(images) < 50 || !ops["rename"] || !ops["remove"] || !ops["syncdir"] {
				t.Fatalf("only %d images (ops %v)", len(images), ops)
			}
			for i, im := range images {
				ld, st, err := replayModel(t, im.fs, dir)
				if err != nil {
					t.Fatalf("image %d (before %s): %v", i, im.op, err)
				}
				if st.LastLSN < im.acked || st.CutBytes != 0 {
					t.Fatalf("image %d (before %s): replay %+v lost acknowledged LSN %d", i, im.op, st, im.acked)
				}
				if !sameKeyspace(ld.m.slots, m.upTo(st.LastLSN)) {
					t.Fatalf("image %d (before %s): keyspace differs from LSN %d's", i, im.op, st.LastLSN)
				}
				lg, _ := testLogger(t)
				l2, err := Open(Options{Dir: dir, FS: im.fs, Policy: p, Logger: lg}, st.LastLSN)
				if err != nil {
					t.Fatalf("image %d (before %s): Open: %v", i, im.op, err)
				}
				if err := l2.Close(); err != nil {
					t.Fatal(err)
				}
				man := manifestOf(t, im.fs, dir)
				want := append([]string{ManifestName}, man.logs...)
				if man.snapshot != "" {
					want = append(want, man.snapshot)
				}
				slices.Sort(want)
				if got := im.fs.names(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("image %d (before %s): files after Open %q, want %q", i, im.op, got, want)
				}
				ld2, st2, err := replayModel(t, im.fs, dir)
				if err != nil || st2.LastLSN != st.LastLSN || !sameKeyspace(ld2.m.slots, ld.m.slots) {
					t.Fatalf("image %d (before %s): replay after Open: %+v, %v", i, im.op, st2, err)
				}
			}
			t.Logf("%d crash images", len(images))
		})
	}
}

// TestCommitFaults fails each step of a snapshot's creation and Commit
// once: the error is reported, the manifest is either the old one or the
// new one (never half), no temporary file is left, nothing appended is
// lost, and the next compaction works and cleans up.
func TestCommitFaults(t *testing.T) {
	snapTmp := SnapshotName(2) + tmpSuffix
	manTmp := ManifestName + tmpSuffix
	tests := []struct {
		name     string
		op       Op
		suffix   string
		n        int
		switched bool // the new manifest stands
		ok       bool // Commit succeeds (a failed deletion)
	}{
		{"create temporary", OpCreate, snapTmp, 1, false, false},
		{"write snapshot", OpWrite, snapTmp, 1, false, false},
		{"fsync snapshot", OpSync, snapTmp, 1, false, false},
		{"rename snapshot", OpRename, snapTmp, 1, false, false},
		{"fsync dir after snapshot rename", OpSyncDir, dir, 1, false, false},
		{"create manifest", OpCreate, manTmp, 1, false, false},
		{"write manifest", OpWrite, manTmp, 1, false, false},
		{"fsync manifest", OpSync, manTmp, 1, false, false},
		{"rename manifest", OpRename, manTmp, 1, false, false},
		{"fsync dir after manifest rename", OpSyncDir, dir, 2, true, false},
		{"delete old log", OpRemove, LogName(1), 1, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMemFS()
			fsys := NewFaultFS(mem)
			m := newModel()
			l := openLog(t, dir, EverySec, fsys, 0)
			defer l.Close()
			m.setN(t, l, 30, "a")
			b, err := l.Rotate()
			if err != nil {
				t.Fatal(err)
			}
			boom := fmt.Errorf("injected %s: %w", tc.op, syscall.EIO)
			fsys.FailOp(failNth(tc.op, tc.suffix, tc.n, boom))
			w, err := l.CreateSnapshot(b)
			if err == nil {
				err = m.dump(w, b, func(s uint16) { m.set(l, s, "z", "during") })
				if err == nil {
					err = w.Commit()
				}
				w.Abort()
			}
			fsys.FailOp(nil)
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, syscall.EIO)) {
				t.Fatalf("snapshot: %v", err)
			}
			man := manifestOf(t, mem, dir)
			_, snapThere := mem.get(filepath.Join(dir, SnapshotName(2)))
			_, oldThere := mem.get(filepath.Join(dir, LogName(1)))
			_, tmpThere := mem.get(filepath.Join(dir, snapTmp))
			if tc.switched {
				if man.snapshot != SnapshotName(2) || len(man.logs) != 1 || !snapThere || !oldThere {
					t.Fatalf("manifest %+v, snapshot there %v, old log there %v", man, snapThere, oldThere)
				}
			} else if man.snapshot != "" || len(man.logs) != 2 || snapThere {
				t.Fatalf("manifest %+v, snapshot there %v", man, snapThere)
			}
			if tmpThere {
				t.Fatal("the temporary snapshot was left behind")
			}
			if st := l.Stats(); tc.switched != (st.BaseSize > 0) {
				t.Fatalf("stats %+v", st)
			}

			m.setN(t, l, 10, "b")
			if _, err := m.compact(l, nil); err != nil {
				t.Fatalf("the next compaction: %v", err)
			}
			last := m.setN(t, l, 3, "c")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got, want := mem.names(), []string{LogName(3), SnapshotName(3), ManifestName}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("files %q, want %q (the next Commit deletes leftovers)", got, want)
			}
			ld, st, err := replayModel(t, mem, dir)
			if err != nil || st.LastLSN != last || !sameKeyspace(ld.m.slots, m.upTo(last)) {
				t.Fatalf("replay %+v, %v", st, err)
			}
		})
	}
}
