package aof

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fileBase returns the header base of the log file at path in fsys.
func fileBase(t testing.TB, fsys FS, path string) uint64 {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base, _, err := readLogHeader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// manifestOf parses the manifest in fsys's dir d.
func manifestOf(t testing.TB, fsys FS, d string) *manifest {
	t.Helper()
	b, err := readFileLimit(fsys, filepath.Join(d, ManifestName), maxManifest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRotateConcurrent rotates several times while goroutines append and
// wait, with each policy: every Wait succeeds, Rotate's LSNs increase,
// each new file's header base is what Rotate returned, and the replay
// holds every record exactly once in LSN order.
func TestRotateConcurrent(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			l := openLog(t, d, p, nil, 0)
			var (
				mu    sync.Mutex
				byLSN = map[uint64]*Record{}
				wg    sync.WaitGroup
				stop  = make(chan struct{})
			)
			for g := range 6 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						r := sampleRecord(g*100000 + i)
						lsn := l.Append(r)
						if err := l.Wait(lsn); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						byLSN[lsn] = cloneRecord(r)
						mu.Unlock()
					}
				})
			}
			var bases []uint64
			for range 5 {
				time.Sleep(5 * time.Millisecond)
				b, err := l.Rotate()
				if err != nil {
					t.Fatal(err)
				}
				if len(bases) > 0 && b < bases[len(bases)-1] {
					t.Fatalf("Rotate returned %d after %d", b, bases[len(bases)-1])
				}
				if st := l.Stats(); st.SyncedLSN < b || st.DurableLSN < b {
					t.Fatalf("Rotate returned %d with %+v", b, st)
				}
				bases = append(bases, b)
			}
			time.Sleep(5 * time.Millisecond)
			close(stop)
			wg.Wait()
			st := l.Stats()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			m := manifestOf(t, OSFS(), d)
			if len(m.logs) != 6 || m.logs[5] != st.File {
				t.Fatalf("manifest logs %q, current file %q", m.logs, st.File)
			}
			var total int64
			for i, name := range m.logs {
				if want := LogName(uint64(i + 1)); name != want {
					t.Fatalf("log %d is %q, want %q", i, name, want)
				}
				if i > 0 {
					if b := fileBase(t, OSFS(), filepath.Join(d, name)); b != bases[i-1] {
						t.Fatalf("%s starts after %d, Rotate returned %d", name, b, bases[i-1])
					}
				}
				fi, err := os.Stat(filepath.Join(d, name))
				if err != nil {
					t.Fatal(err)
				}
				total += fi.Size()
			}
			if st.LogsSize != total || st.BaseSize != 0 {
				t.Fatalf("LogsSize %d BaseSize %d, the files hold %d", st.LogsSize, st.BaseSize, total)
			}
			got, rst := replayDir(t, d)
			if len(got) != len(byLSN) || rst.Files != 6 || rst.CutBytes != 0 {
				t.Fatalf("replayed %d records (%+v), appended %d", len(got), rst, len(byLSN))
			}
			for i, r := range got {
				if want := byLSN[uint64(i+1)]; want == nil || !recordsEqual(r, want) {
					t.Fatalf("record %d: got %+v, want %+v", i+1, r, want)
				}
			}
			if len(got) <= int(bases[4]) {
				t.Fatalf("no records after the last rotation (%d records, last base %d)", len(got), bases[4])
			}
		})
	}
}

// TestRotateBusyAndClosed: one Rotate or snapshot at a time; none after
// Close.
func TestRotateBusyAndClosed(t *testing.T) {
	fsys := newMemFS()
	l := openLog(t, dir, Always, fsys, 0)
	b, err := l.Rotate()
	if err != nil || b != 0 {
		t.Fatalf("Rotate of an empty log = %d, %v", b, err)
	}
	w, err := l.CreateSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	// Named after the file Rotate created (the first also starts after 0).
	if _, ok := fsys.get(filepath.Join(dir, SnapshotName(2)+tmpSuffix)); !ok {
		t.Fatalf("no temporary snapshot for file 2: %q", fsys.names())
	}
	if _, err := l.Rotate(); !errors.Is(err, ErrBusy) {
		t.Fatalf("Rotate during a snapshot = %v, want ErrBusy", err)
	}
	if _, err := l.CreateSnapshot(b); !errors.Is(err, ErrBusy) {
		t.Fatalf("second CreateSnapshot = %v, want ErrBusy", err)
	}
	w.Abort()
	w.Abort()
	if _, ok := fsys.get(filepath.Join(dir, SnapshotName(2)+tmpSuffix)); ok {
		t.Fatal("Abort left the temporary file")
	}
	if err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	l.Wait(l.Append(sampleRecord(0)))
	if b, err := l.Rotate(); err != nil || b != 1 {
		t.Fatalf("Rotate after Abort = %d, %v", b, err)
	}
	if _, err := l.CreateSnapshot(7); err == nil || !strings.Contains(err.Error(), "LSN 7") {
		t.Fatalf("CreateSnapshot of an LSN no file starts after = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rotate(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Rotate after Close = %v, want ErrClosed", err)
	}
	if _, err := l.CreateSnapshot(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateSnapshot after Close = %v, want ErrClosed", err)
	}
}

// failNth returns a FailOp hook that fails the n-th (from 1) operation op
// on a path ending in suffix with err, once.
func failNth(op Op, suffix string, n int, err error) func(Op, string) error {
	var mu sync.Mutex
	seen := 0
	return func(o Op, path string) error {
		if o != op || !strings.HasSuffix(path, suffix) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		if seen == n {
			return err
		}
		return nil
	}
}

// TestRotateFaults fails each step of a Rotate once: Rotate reports it,
// the log goes on appending (in the old file unless the manifest was
// switched), a later Rotate works, and the replay holds every record.
// Only a failed directory fsync after the manifest's rename leaves the
// switch in place with the log failing until a directory fsync works.
func TestRotateFaults(t *testing.T) {
	tests := []struct {
		name     string
		op       Op
		suffix   string
		n        int
		switched bool // the new file stays in the manifest
	}{
		{"create new file", OpCreate, LogName(2), 1, false},
		{"write header", OpWrite, LogName(2), 1, false},
		{"fsync new file", OpSync, LogName(2), 1, false},
		{"fsync dir after create", OpSyncDir, dir, 1, false},
		{"create manifest", OpCreate, ManifestName + tmpSuffix, 1, false},
		{"write manifest", OpWrite, ManifestName + tmpSuffix, 1, false},
		{"fsync manifest", OpSync, ManifestName + tmpSuffix, 1, false},
		{"rename manifest", OpRename, ManifestName + tmpSuffix, 1, false},
		{"fsync dir after rename", OpSyncDir, dir, 2, true},
	}
	for _, tc := range tests {
		for _, p := range policies {
			t.Run(fmt.Sprintf("%s/%v", tc.name, p), func(t *testing.T) {
				mem := newMemFS()
				fsys := NewFaultFS(mem)
				l := openLog(t, dir, p, fsys, 0)
				defer l.Close()
				var want []*Record
				add := func() uint64 {
					r := sampleRecord(len(want))
					lsn := l.Append(r)
					want = append(want, cloneRecord(r))
					return lsn
				}
				for range 10 {
					add()
				}
				if err := l.Wait(10); err != nil {
					t.Fatal(err)
				}
				boom := fmt.Errorf("injected %s: %w", tc.op, syscall.EIO)
				fsys.FailOp(failNth(tc.op, tc.suffix, tc.n, boom))
				b, err := l.Rotate()
				if !errors.Is(err, syscall.EIO) || b != 0 {
					t.Fatalf("Rotate = %d, %v; want the injected error", b, err)
				}
				m := manifestOf(t, mem, dir)
				if tc.switched {
					if len(m.logs) != 2 || l.Err() == nil {
						t.Fatalf("manifest %q, Err %v: want the switch to stand with the log failing", m.logs, l.Err())
					}
					// Nothing appended to the new file is acknowledged
					// until a directory fsync succeeds.
					lsn := add()
					if err := l.Wait(lsn); !errors.Is(err, syscall.EIO) {
						t.Fatalf("Wait while the directory is not fsynced = %v", err)
					}
				} else {
					if len(m.logs) != 1 {
						t.Fatalf("manifest logs %q after a failed rotation", m.logs)
					}
					if _, ok := mem.get(filepath.Join(dir, LogName(2))); ok {
						t.Fatal("the failed rotation's file was left behind")
					}
				}
				fsys.FailOp(nil)
				checkFor(t, 5*time.Second, l.Err)
				lsn := add()
				if err := l.Wait(lsn); err != nil {
					t.Fatalf("Wait after healing = %v", err)
				}
				b, err = l.Rotate()
				if err != nil || b != lsn {
					t.Fatalf("Rotate after healing = %d, %v; want %d", b, err, lsn)
				}
				add()
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				m = manifestOf(t, mem, dir)
				if wantLogs := map[bool]int{false: 2, true: 3}[tc.switched]; len(m.logs) != wantLogs {
					t.Fatalf("manifest logs %q, want %d", m.logs, wantLogs)
				}
				got, _, err, _ := memReplay(t, mem, false)
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, got, want)
			})
		}
	}
}

// TestRotateWhileFailing: a Rotate while the old file cannot be written
// or fsynced reports the error and loses nothing; once the disk works
// again, so does Rotate.
func TestRotateWhileFailing(t *testing.T) {
	for _, p := range policies {
		for _, failSyncs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v syncs=%v", p, failSyncs), func(t *testing.T) {
				mem := newMemFS()
				fsys := NewFaultFS(mem)
				l := openLog(t, dir, p, fsys, 0)
				defer l.Close()
				fail := fsys.FailWrites
				if failSyncs {
					fail = fsys.FailSyncs
				}
				fail(syscall.ENOSPC)
				for i := range 5 {
					l.Append(sampleRecord(i))
				}
				if _, err := l.Rotate(); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Rotate = %v, want ENOSPC", err)
				}
				l.Append(sampleRecord(5))
				fail(nil)
				checkFor(t, 5*time.Second, l.Err)
				if err := l.Wait(6); err != nil {
					t.Fatal(err)
				}
				if b, err := l.Rotate(); err != nil || b != 6 {
					t.Fatalf("Rotate = %d, %v", b, err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				got, st, err, _ := memReplay(t, mem, false)
				if err != nil || len(got) != 6 || st.Files != 2 {
					t.Fatalf("%d records, %+v, %v", len(got), st, err)
				}
			})
		}
	}
}

// TestSyncStateFollowsRotate: the fsync bookkeeping switches with the
// file. After a Rotate, EverySec's syncer fsyncs the new file, and a failed
// fsync there that drops the unsynced pages is repaired by truncating the
// new file to its own last fsynced size and writing again.
func TestSyncStateFollowsRotate(t *testing.T) {
	for _, p := range []Policy{Always, EverySec} {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			fsys := NewFaultFS(nil)
			l := openLog(t, d, p, fsys, 0)
			var want []*Record
			add := func() uint64 {
				r := sampleRecord(len(want) * 3)
				lsn := l.Append(r)
				want = append(want, cloneRecord(r))
				return lsn
			}
			// A big first file, so that its size means nothing in the second.
			for range 200 {
				add()
			}
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				if err := l.Wait(add()); err != nil {
					t.Fatal(err)
				}
			}
			checkFor(t, 5*time.Second, func() error {
				if s := l.Stats().SyncedLSN; s != 210 {
					return fmt.Errorf("synced LSN %d, want 210", s)
				}
				return nil
			})
			fsys.DropOnFailedSync(true)
			fsys.FailSyncs(syscall.EIO)
			for range 5 {
				add()
			}
			checkFor(t, 5*time.Second, func() error {
				if !errors.Is(l.Err(), syscall.EIO) {
					return fmt.Errorf("Err = %v", l.Err())
				}
				return nil
			})
			fsys.FailSyncs(nil)
			checkFor(t, 5*time.Second, l.Err)
			if err := l.Wait(add()); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, st := replayDir(t, d)
			if st.CutBytes != 0 || st.Files != 2 {
				t.Fatalf("replay %+v", st)
			}
			checkRecords(t, got, want)
		})
	}
}
