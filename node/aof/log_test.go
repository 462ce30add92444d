package aof

import (
	"bytes"
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

var policies = []Policy{Always, EverySec, No}

func openLog(t testing.TB, d string, p Policy, fsys FS, last uint64) *Log {
	t.Helper()
	lg, _ := testLogger(t)
	l, err := Open(Options{Dir: d, Policy: p, FS: fsys, Logger: lg,
		RetryInterval: 5 * time.Millisecond, SyncInterval: 10 * time.Millisecond}, last)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkFor polls f until it returns nil or the timeout passes.
func checkFor(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func replayDir(t testing.TB, d string) ([]*Record, ReplayStats) {
	t.Helper()
	lg, _ := testLogger(t)
	got, st, err := replayAll(t, ReplayOptions{Dir: d, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		in   string
		want Policy
		err  bool
	}{
		{"always", Always, false},
		{"EverySec", EverySec, false},
		{"NO", No, false},
		{"", 0, true},
		{"sometimes", 0, true},
		{"every sec", 0, true},
	}
	for _, tc := range tests {
		got, err := ParsePolicy(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParsePolicy(%q) = %v, %v", tc.in, got, err)
		}
		if tc.err && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in))) {
			t.Errorf("ParsePolicy(%q) error %v does not name the value", tc.in, err)
		}
		if !tc.err && !strings.EqualFold(got.String(), tc.in) {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

// TestLogRoundTrip appends records of every kind from many goroutines with
// each policy, then replays them: each LSN holds exactly what was appended
// with it, in LSN order.
func TestLogRoundTrip(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			l := openLog(t, d, p, nil, 0)
			var mu sync.Mutex
			byLSN := map[uint64]*Record{}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 100 {
						r := sampleRecord(g*1000 + i)
						lsn := l.Append(r)
						if r.LSN != lsn {
							t.Errorf("Append returned %d but set r.LSN %d", lsn, r.LSN)
						}
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
			wg.Wait()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, st := replayDir(t, d)
			if len(got) != 800 || st.LastLSN != 800 {
				t.Fatalf("%d records, %+v", len(got), st)
			}
			for i, r := range got {
				want := byLSN[uint64(i+1)]
				if want == nil || !recordsEqual(r, want) {
					t.Fatalf("record %d: got %+v, want %+v", i+1, r, want)
				}
			}
		})
	}
}

// TestLSNContinuity: LSNs continue across Replay and Open, also after a
// torn tail was cut.
func TestLSNContinuity(t *testing.T) {
	d := t.TempDir()
	l := openLog(t, d, Always, nil, 0)
	for i := range 5 {
		if lsn := l.Append(sampleRecord(i)); lsn != uint64(i+1) {
			t.Fatalf("first LSN run: got %d, want %d", lsn, i+1)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Tear the last record.
	path := filepath.Join(d, LogName(1))
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	got, st := replayDir(t, d)
	if len(got) != 4 || st.LastLSN != 4 || st.CutBytes == 0 {
		t.Fatalf("%d records, %+v", len(got), st)
	}

	l = openLog(t, d, EverySec, nil, st.LastLSN)
	for i := range 3 {
		r := sampleRecord(10 + i)
		if lsn := l.Append(r); lsn != uint64(5+i) {
			t.Fatalf("after reopening: got LSN %d, want %d", lsn, 5+i)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, st = replayDir(t, d)
	if len(got) != 7 || st.LastLSN != 7 || st.CutBytes != 0 {
		t.Fatalf("%d records, %+v", len(got), st)
	}
	for i, r := range got {
		if r.LSN != uint64(i+1) {
			t.Fatalf("record %d has LSN %d", i, r.LSN)
		}
	}
	want := sampleRecord(12)
	want.LSN = 7
	if !recordsEqual(got[6], want) {
		t.Fatalf("last record %+v, want %+v", got[6], want)
	}
}

// TestGroupCommit: with Always and a slow fsync, concurrent waiters share
// fsyncs, and every Wait returns only once its record is fsynced.
func TestGroupCommit(t *testing.T) {
	fsys := NewFaultFS(nil)
	fsys.SyncDelay(2 * time.Millisecond)
	l := openLog(t, t.TempDir(), Always, fsys, 0)
	const goroutines, each = 16, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				lsn := l.Append(sampleRecord(g*each + i))
				if err := l.Wait(lsn); err != nil {
					t.Error(err)
					return
				}
				if s := l.Stats().SyncedLSN; s < lsn {
					t.Errorf("Wait(%d) returned with only %d fsynced", lsn, s)
					return
				}
			}
		})
	}
	wg.Wait()
	st := l.Stats()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	waits := goroutines * each
	t.Logf("%d waits shared %d fsyncs and %d writes", waits, st.Fsyncs, st.Writes)
	if st.Fsyncs == 0 || st.Fsyncs > uint64(waits/4) {
		t.Fatalf("%d fsyncs for %d waits; want group commit (at most a quarter)", st.Fsyncs, waits)
	}
}

// TestWriteFailure: failing writes make Wait and Err report the error;
// records appended meanwhile are kept, and once writes work again the
// error clears and nothing is lost or reordered (a short write's partial
// record is cut before the retry).
func TestWriteFailure(t *testing.T) {
	for _, p := range policies {
		for _, short := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v short=%v", p, short), func(t *testing.T) {
				d := t.TempDir()
				fsys := NewFaultFS(nil)
				l := openLog(t, d, p, fsys, 0)
				var want []*Record
				add := func(i int) uint64 {
					r := sampleRecord(i)
					lsn := l.Append(r)
					want = append(want, cloneRecord(r))
					return lsn
				}
				for i := range 10 {
					if err := l.Wait(add(i)); err != nil {
						t.Fatal(err)
					}
				}
				fsys.ShortWrites(short)
				fsys.FailWrites(syscall.ENOSPC)
				lsn := add(10)
				if err := l.Wait(lsn); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Wait = %v, want ENOSPC", err)
				}
				if err := l.Err(); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Err = %v, want ENOSPC", err)
				}
				if s := l.Stats().LastWriteErr; !strings.Contains(s, "no space left") {
					t.Fatalf("LastWriteErr %q", s)
				}
				for i := 11; i < 20; i++ {
					if err := l.Wait(add(i)); !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("Wait while failing = %v", err)
					}
				}
				// The writer keeps retrying.
				before := fsys.Writes()
				checkFor(t, 5*time.Second, func() error {
					if fsys.Writes() < before+3 {
						return errors.New("no retries")
					}
					return nil
				})
				if got := l.Stats().DurableLSN; got != 10 {
					t.Fatalf("durable LSN %d while failing, want 10", got)
				}
				fsys.FailWrites(nil)
				checkFor(t, 5*time.Second, func() error { return l.Err() })
				if err := l.Wait(20); err != nil {
					t.Fatal(err)
				}
				if err := l.Wait(add(20)); err != nil {
					t.Fatal(err)
				}
				if s := l.Stats().LastWriteErr; s != "ok" {
					t.Fatalf("LastWriteErr %q after recovery", s)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				got, st := replayDir(t, d)
				if st.CutBytes != 0 {
					t.Fatalf("replay cut %d bytes", st.CutBytes)
				}
				checkRecords(t, got, want)
			})
		}
	}
}

// TestSyncFailure: a failing fsync that also drops the unsynced pages (as
// Linux may) makes Wait and Err report the error; after recovery the
// writer has written those bytes again, so nothing is lost.
func TestSyncFailure(t *testing.T) {
	for _, p := range []Policy{Always, EverySec} {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			fsys := NewFaultFS(nil)
			l := openLog(t, d, p, fsys, 0)
			var want []*Record
			add := func(i int) uint64 {
				r := sampleRecord(i)
				lsn := l.Append(r)
				want = append(want, cloneRecord(r))
				return lsn
			}
			for i := range 10 {
				if err := l.Wait(add(i)); err != nil {
					t.Fatal(err)
				}
			}
			checkFor(t, 5*time.Second, func() error {
				if s := l.Stats().SyncedLSN; s != 10 {
					return fmt.Errorf("synced LSN %d", s)
				}
				return nil
			})
			fsys.DropOnFailedSync(true)
			fsys.FailSyncs(syscall.EIO)
			for i := 10; i < 15; i++ {
				lsn := add(i)
				// EverySec acknowledges written records until its
				// background fsync fails.
				if err := l.Wait(lsn); p == Always && !errors.Is(err, syscall.EIO) {
					t.Fatalf("Wait = %v, want EIO", err)
				}
			}
			checkFor(t, 5*time.Second, func() error {
				if !errors.Is(l.Err(), syscall.EIO) {
					return fmt.Errorf("Err = %v", l.Err())
				}
				return nil
			})
			if err := l.Wait(add(15)); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Wait while failing = %v", err)
			}
			if s := l.Stats().SyncedLSN; s != 10 {
				t.Fatalf("synced LSN %d while fsync fails", s)
			}
			fsys.FailSyncs(nil)
			checkFor(t, 5*time.Second, func() error { return l.Err() })
			if err := l.Wait(16); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, st := replayDir(t, d)
			if st.CutBytes != 0 {
				t.Fatalf("replay cut %d bytes", st.CutBytes)
			}
			checkRecords(t, got, want)
		})
	}
}

// TestTruncateFailure: after a short write, the partial record must be cut
// before anything else is written; while truncation fails the log stays
// failing and writes nothing.
func TestTruncateFailure(t *testing.T) {
	d := t.TempDir()
	fsys := NewFaultFS(nil)
	l := openLog(t, d, Always, fsys, 0)
	var want []*Record
	for i := range 3 {
		r := sampleRecord(i)
		if err := l.Wait(l.Append(r)); err != nil {
			t.Fatal(err)
		}
		want = append(want, cloneRecord(r))
	}
	fsys.ShortWrites(true)
	fsys.FailWrites(syscall.EIO)
	fsys.FailTruncates(syscall.EROFS)
	r := sampleRecord(3)
	if err := l.Wait(l.Append(r)); err == nil {
		t.Fatal("Wait succeeded with failing writes")
	}
	want = append(want, cloneRecord(r))
	fsys.FailWrites(nil)
	checkFor(t, 5*time.Second, func() error {
		if !errors.Is(l.Err(), syscall.EROFS) {
			return fmt.Errorf("Err = %v, want the truncate's EROFS", l.Err())
		}
		return nil
	})
	writes := fsys.Writes()
	time.Sleep(30 * time.Millisecond)
	if fsys.Writes() != writes {
		t.Fatal("wrote after a partial record without cutting it")
	}
	fsys.FailTruncates(nil)
	checkFor(t, 5*time.Second, func() error { return l.Err() })
	if err := l.Wait(4); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := replayDir(t, d)
	checkRecords(t, got, want)
}

// TestCloseFlushes: records appended without Wait are written and fsynced
// by Close whatever the policy; later Closes return the same result.
func TestCloseFlushes(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			fsys := NewFaultFS(nil)
			l := openLog(t, d, p, fsys, 0)
			for i := range 1000 {
				l.Append(sampleRecord(i))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if st := l.Stats(); st.SyncedLSN != 1000 || fsys.Syncs() == 0 {
				t.Fatalf("after Close: synced LSN %d, %d fsyncs", st.SyncedLSN, fsys.Syncs())
			}
			if err := l.Close(); err != nil {
				t.Fatalf("second Close = %v", err)
			}
			if err := l.Wait(1000); err != nil {
				t.Fatalf("Wait for a record flushed by Close = %v", err)
			}
			lsn := l.Append(sampleRecord(1000))
			if err := l.Wait(lsn); !errors.Is(err, ErrClosed) {
				t.Fatalf("Wait after Close = %v, want ErrClosed", err)
			}
			got, st := replayDir(t, d)
			if len(got) != 1000 || st.LastLSN != 1000 {
				t.Fatalf("%d records, %+v", len(got), st)
			}
		})
	}
}

// TestCloseWhileFailing: Close reports records it could not store, and
// their waiters get the error.
func TestCloseWhileFailing(t *testing.T) {
	fsys := NewFaultFS(nil)
	l := openLog(t, t.TempDir(), EverySec, fsys, 0)
	fsys.FailWrites(syscall.EIO)
	lsn := l.Append(sampleRecord(0))
	done := make(chan error)
	go func() { done <- l.Wait(lsn) }()
	err := l.Close()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close = %v, want EIO", err)
	}
	if err := <-done; !errors.Is(err, syscall.EIO) {
		t.Fatalf("Wait = %v, want EIO", err)
	}
	if err2 := l.Close(); err2 != err {
		t.Fatalf("second Close = %v, want %v", err2, err)
	}
}

func TestWaitUnknownLSN(t *testing.T) {
	l := openLog(t, t.TempDir(), Always, nil, 5)
	defer l.Close()
	if err := l.Wait(3); err != nil {
		t.Fatalf("Wait for an LSN before Open = %v", err)
	}
	if err := l.Wait(6); !errors.Is(err, ErrUnknownLSN) {
		t.Fatalf("Wait(6) before any Append = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Run("bad manifest", func(t *testing.T) {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, ManifestName), []byte("nonsense\n"), 0o644)
		if _, err := Open(Options{Dir: d}, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err %v, want ErrCorrupt", err)
		}
	})
	t.Run("lastLSN before the file", func(t *testing.T) {
		d := t.TempDir()
		l := openLog(t, d, No, nil, 10)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(Options{Dir: d}, 9); err == nil || !strings.Contains(err.Error(), "run Replay first") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("bad policy", func(t *testing.T) {
		if _, err := Open(Options{Dir: t.TempDir(), Policy: 7}, 0); err == nil {
			t.Fatal("Open accepted policy 7")
		}
	})
}

func TestStats(t *testing.T) {
	d := t.TempDir()
	l := openLog(t, d, Always, nil, 0)
	for i := range 5 {
		if err := l.Wait(l.Append(sampleRecord(i))); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	fi, err := os.Stat(filepath.Join(d, LogName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != fi.Size() || st.File != LogName(1) || st.Policy != Always || st.LastWriteErr != "ok" ||
		st.PendingLSN != 5 || st.DurableLSN != 5 || st.SyncedLSN != 5 || st.BufferedBytes != 0 ||
		st.Writes == 0 || st.Writes > 5 || st.Fsyncs == 0 {
		t.Fatalf("stats %+v (file is %d bytes)", st, fi.Size())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEverySecEarlySync: with EverySec, a burst of unfsynced bytes starts
// the background fsync before its interval, bounding what is kept in
// memory for a rewrite.
func TestEverySecEarlySync(t *testing.T) {
	lg, _ := testLogger(t)
	l, err := Open(Options{Dir: t.TempDir(), Policy: EverySec, Logger: lg, SyncInterval: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	val := make([]byte, 1<<20)
	var lsn uint64
	for range maxUnsynced>>20 + 8 {
		lsn = l.Append(&Record{Kind: KindCommand, Cmds: [][][]byte{{[]byte("SET"), []byte("k"), val}}})
		if err := l.Wait(lsn); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 10*time.Second, func() error {
		if st := l.Stats(); st.Fsyncs == 0 || st.SyncedLSN == 0 {
			return fmt.Errorf("no early fsync: %+v", st)
		}
		return nil
	})
}

// TestCloseUnderLoad: Close while goroutines Append and Wait: every Wait
// returns nil or ErrClosed, and every record whose Wait returned nil is in
// the log.
func TestCloseUnderLoad(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			d := t.TempDir()
			l := openLog(t, d, p, nil, 0)
			var (
				mu    sync.Mutex
				acked = map[uint64]bool{}
				wg    sync.WaitGroup
			)
			for g := range 8 {
				wg.Go(func() {
					for i := 0; ; i++ {
						lsn := l.Append(sampleRecord(g*100000 + i))
						err := l.Wait(lsn)
						if errors.Is(err, ErrClosed) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acked[lsn] = true
						mu.Unlock()
					}
				})
			}
			time.Sleep(20 * time.Millisecond)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			got, st := replayDir(t, d)
			have := map[uint64]bool{}
			for _, r := range got {
				have[r.LSN] = true
			}
			for lsn := range acked {
				if !have[lsn] {
					t.Fatalf("acknowledged LSN %d is not in the log (last %d)", lsn, st.LastLSN)
				}
			}
			if len(acked) == 0 {
				t.Fatal("nothing was acknowledged before Close")
			}
		})
	}
}

// TestCloseDuringRotateKeepsAppends: a Close that overtakes a pending
// Rotate still writes the records appended after the Rotate (into the
// current file: the rotation is refused for the close).
func TestCloseDuringRotateKeepsAppends(t *testing.T) {
	dir := t.TempDir()
	ffs := NewFaultFS(OSFS())
	l, err := Open(Options{Dir: dir, Policy: Always, FS: ffs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	blocked := make(chan struct{}, 1)
	ffs.FailOp(func(op Op, path string) error {
		if op == OpSync {
			select {
			case blocked <- struct{}{}:
				<-release
			default:
			}
		}
		return nil
	})
	rec := func(v string) *Record {
		return &Record{Kind: KindCommand, Slot: 0, Now: 1, Cmds: [][][]byte{{[]byte("SET"), []byte("k"), []byte(v)}}}
	}
	l.Append(rec("0"))
	<-blocked // the writer is in the fsync of record 1
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	locked := func(f func() bool) func() bool {
		return func() bool { l.mu.Lock(); defer l.mu.Unlock(); return f() }
	}
	rotErr := make(chan error, 1)
	go func() { _, err := l.Rotate(); rotErr <- err }()
	waitFor("the rotation to be pending", locked(func() bool { return l.rot != nil }))
	lsn := l.Append(rec("after-rotate"))
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	waitFor("the close to begin", locked(func() bool { return l.closing }))
	ffs.FailOp(nil)
	close(release)
	if err := <-rotErr; !errors.Is(err, ErrClosed) {
		t.Errorf("Rotate: %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	st, err := Replay(ReplayOptions{Dir: dir}, func(*Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.LastLSN != lsn {
		t.Fatalf("the log ends at record %d; record %d, appended before Close, is missing", st.LastLSN, lsn)
	}
}

// TestSyncAppended: whatever the policy, SyncAppended returns once every
// record appended before it is written and fsynced (a rewrite's snapshot
// may name their LSNs), and the log goes on taking records.
func TestSyncAppended(t *testing.T) {
	for _, policy := range []Policy{No, EverySec, Always} {
		t.Run(policy.String(), func(t *testing.T) {
			l, err := Open(Options{Dir: t.TempDir(), Policy: policy}, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rec := &Record{Kind: KindCommand, Slot: 0, Now: 1, Cmds: [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}}}
			var last uint64
			for range 3 {
				last = l.Append(rec)
			}
			if err := l.SyncAppended(); err != nil {
				t.Fatal(err)
			}
			if st := l.Stats(); st.SyncedLSN < last {
				t.Fatalf("after SyncAppended the fsynced LSN is %d, want %d", st.SyncedLSN, last)
			}
			if err := l.Wait(l.Append(rec)); err != nil {
				t.Fatalf("an append after SyncAppended: %v", err)
			}
		})
	}
}

// TestTrimLetsHugeBufferGo: once the bytes of a huge record are fsynced,
// the write buffer it grew shrinks to what the unsynced bytes after it
// need, even when some remain (EverySec keeps them for a rewrite), and
// those bytes are kept.
func TestTrimLetsHugeBufferGo(t *testing.T) {
	big := make([]byte, 3*maxKeptBuffer)
	for i := range big {
		big[i] = byte(i)
	}
	l := &Log{out: big, outDone: len(big)}
	l.trimTo(int64(len(big) - 100))
	if cap(l.out) > maxKeptBuffer {
		t.Errorf("cap(out) = %d after the huge record was synced, want at most %d", cap(l.out), maxKeptBuffer)
	}
	if len(l.out) != 100 || l.outDone != 100 || l.outBase != int64(len(big)-100) || !bytes.Equal(l.out, big[len(big)-100:]) {
		t.Errorf("out kept %d bytes (done %d, base %d), want the last 100", len(l.out), l.outDone, l.outBase)
	}
	// A buffer within bounds is reused as it is.
	small := make([]byte, 1000, maxKeptBuffer)
	l = &Log{out: small, outDone: 1000}
	l.trimTo(900)
	if cap(l.out) != maxKeptBuffer || len(l.out) != 100 {
		t.Errorf("a buffer within bounds: len %d cap %d", len(l.out), cap(l.out))
	}
}

// TestEverySecLetsSyncedBytesGo: with EverySec, the bytes of a big record
// leave the writer's buffer once the background fsync has covered them,
// without waiting for another append.
func TestEverySecLetsSyncedBytesGo(t *testing.T) {
	lg, _ := testLogger(t)
	l, err := Open(Options{Dir: t.TempDir(), Policy: EverySec, Logger: lg, SyncInterval: 10 * time.Millisecond}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	val := make([]byte, 4*maxKeptBuffer)
	lsn := l.Append(&Record{Kind: KindCommand, Cmds: [][][]byte{{[]byte("SET"), []byte("k"), val}}})
	if err := l.Wait(lsn); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 5*time.Second, func() error {
		if n := l.outCap.Load(); n > maxKeptBuffer {
			return fmt.Errorf("the writer still holds %d bytes after the fsync", n)
		}
		return nil
	})
}
