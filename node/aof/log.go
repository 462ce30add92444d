package aof

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures Open.
type Options struct {
	Dir    string
	Policy Policy
	FS     FS           // nil = the real filesystem
	Logger *slog.Logger // nil = slog.Default()
	// RetryInterval is how often a failed write or fsync is retried
	// (0 = 100 ms, as Redis).
	RetryInterval time.Duration
	// SyncInterval is EverySec's fsync period (0 = 1 s).
	SyncInterval time.Duration
}

const (
	defaultRetry = 100 * time.Millisecond
	defaultSync  = time.Second
	// maxKeptBuffer: a buffer grown past this by a big record is dropped
	// after use rather than kept for the next swap. The log has three
	// (appending, spare, writing), which the node's memory counts
	// against maxmemory: kept small, as Redis keeps its AOF buffer.
	maxKeptBuffer = 1 << 20
	// maxUnsynced: with EverySec, this many written but unfsynced bytes
	// start the background fsync early, bounding the bytes kept in memory
	// for a rewrite after a failed fsync.
	maxUnsynced = 16 << 20
)

// Stats is the log's state for INFO persistence.
type Stats struct {
	Policy        Policy
	File          string // the current log file's name
	Size          int64  // bytes in the current log file
	BaseSize      int64  // bytes of the snapshot the manifest names, 0 if none (aof_base_size)
	LogsSize      int64  // bytes of all the log files the manifest names (aof_current_size is BaseSize+LogsSize)
	LastWriteErr  string // "ok" or the sticky error
	BufferedBytes int64  // appended but not yet written
	Fsyncs        uint64
	Writes        uint64 // write(2) calls
	PendingLSN    uint64 // the last LSN appended
	DurableLSN    uint64 // the last LSN durable by the policy
	SyncedLSN     uint64 // the last LSN known fsynced
}

// Log is an open append-only log. Its methods are safe for concurrent use.
//
// Locks: syncMu may be held while taking posMu, manMu or waitMu; mu and
// manMu are never held while taking another lock.
type Log struct {
	fsys      FS
	dir       string
	policy    Policy
	log       *slog.Logger
	retry     time.Duration
	syncEvery time.Duration

	// Append side.
	mu      sync.Mutex
	buf     []byte // encoded records not yet taken by the writer
	bufLSN  uint64 // the LSN of buf's last record
	last    uint64 // the last LSN assigned
	idle    bool   // the writer waits for a kick
	closing bool
	kick    chan struct{} // capacity 1
	syncNow chan struct{} // capacity 1: EverySec's fsync is due early
	stop    chan struct{} // closed by Close
	rot     *rotation     // a Rotate waiting for the writer

	pending atomic.Uint64 // last LSN appended
	durable atomic.Uint64 // last LSN durable by the policy
	err     atomic.Pointer[error]

	waitMu sync.Mutex
	cond   sync.Cond // on waitMu: durable, err or closed changed
	closed bool      // the writer has exited

	// Writer-owned (the run goroutine), except where noted.
	f         File
	out       []byte // bytes taken from buf, from file offset outBase on
	outBase   int64
	outDone   int    // bytes of out already written
	outLSN    uint64 // LSN of the last record in out
	spare     []byte // the empty buffer handed to Append at the next swap
	size      int64  // bytes of good records in the file
	needTrunc bool   // a short write left a partial record after size
	// dirDirty: a manifest rename's directory fsync failed. Until one
	// succeeds a crash could bring back a manifest without the current
	// file, so the error stays sticky and nothing written counts as
	// durable.
	dirDirty bool

	syncMu    sync.Mutex    // serializes fsync and truncate between writer and syncer
	synced    atomic.Int64  // file size known fsynced
	syncedLSN atomic.Uint64 // LSN known fsynced
	resync    atomic.Bool   // an fsync failed: rewrite everything after synced

	posMu sync.Mutex // the written position, for the syncer
	wSize int64
	wLSN  uint64

	// busy: a Rotate or a SnapshotWriter is in flight (one at a time).
	busy atomic.Bool

	// The files the manifest names. The writer changes them at a switch,
	// a snapshot's Commit when it replaces the manifest; busy keeps the
	// two apart.
	manMu      sync.Mutex
	name       string     // the current log file (the writer reads it without manMu)
	files      []namedLog // the manifest's log files in order; the last is name
	snapName   string     // the manifest's snapshot, "" for none
	snapLSN    uint64
	snapSize   int64
	closedSize int64    // bytes of files before the last
	maxSeq     uint64   // the largest file number the manifest names
	leftover   []string // replaced files kept because a directory fsync failed

	writes    atomic.Uint64
	fsyncs    atomic.Uint64
	fileSize  atomic.Int64
	unwritten atomic.Int64
	// outCap is cap(out), the writer's buffer, for tests.
	outCap atomic.Int64

	done      chan struct{} // the writer exited
	syncDone  chan struct{} // the syncer exited
	closeOnce sync.Once
	closeErr  error
}

// namedLog is a log file the manifest names.
type namedLog struct {
	name string
	base uint64 // its header's base LSN
	size int64  // bytes, kept for files before the current one
}

// rotation is a Rotate handed to the writer.
type rotation struct {
	old  []byte // bytes appended before Rotate that the writer had not yet taken
	base uint64 // the last LSN appended before Rotate
	done chan error
	// sync: SyncAppended's, which only writes and fsyncs them (no new
	// file).
	sync bool
}

// Open opens the log in o.Dir for appending after Replay validated it
// (and cut any torn tail); the first Append gets LSN lastLSN+1. If o.Dir
// has no manifest, Open creates the first log file and the manifest.
func Open(o Options, lastLSN uint64) (*Log, error) {
	l := &Log{
		fsys:      o.FS,
		dir:       o.Dir,
		policy:    o.Policy,
		log:       o.Logger,
		retry:     o.RetryInterval,
		syncEvery: o.SyncInterval,
		last:      lastLSN,
		kick:      make(chan struct{}, 1),
		syncNow:   make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		syncDone:  make(chan struct{}),
	}
	if l.fsys == nil {
		l.fsys = OSFS()
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.retry <= 0 {
		l.retry = defaultRetry
	}
	if l.syncEvery <= 0 {
		l.syncEvery = defaultSync
	}
	if l.policy < Always || l.policy > No {
		return nil, fmt.Errorf("aof: invalid policy %d", int(l.policy))
	}
	if err := l.fsys.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	if err := l.openFile(lastLSN); err != nil {
		return nil, err
	}
	l.cond.L = &l.waitMu
	l.pending.Store(lastLSN)
	l.durable.Store(lastLSN)
	l.syncedLSN.Store(lastLSN)
	l.outLSN = lastLSN
	l.synced.Store(l.size)
	l.outBase = l.size
	l.wSize, l.wLSN = l.size, lastLSN
	l.fileSize.Store(l.size)
	go l.run()
	if l.policy == EverySec {
		go l.syncLoop()
	} else {
		close(l.syncDone)
	}
	return l, nil
}

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }

// openFile opens the manifest's last log file for appending, or creates
// the first one; it learns the other named files' bases and sizes and
// removes stale files of ours that the manifest does not name.
func (l *Log) openFile(lastLSN uint64) error {
	mpath := l.path(ManifestName)
	b, err := readFileLimit(l.fsys, mpath, maxManifest)
	if errors.Is(err, fs.ErrNotExist) {
		return l.create(lastLSN)
	}
	if errors.Is(err, errTooBig) {
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrCorrupt, mpath, maxManifest)
	}
	if err != nil {
		return err
	}
	m, err := parseManifest(b)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, mpath, err)
	}
	files := make([]namedLog, len(m.logs))
	var closed int64
	for i, name := range m.logs[:len(m.logs)-1] {
		f, err := l.fsys.OpenFile(l.path(name), os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		base, size, err := readLogHeader(f, l.path(name))
		f.Close()
		if err != nil {
			return err
		}
		files[i] = namedLog{name: name, base: base, size: size}
		closed += size
	}
	var snapSize int64
	if m.snapshot != "" {
		f, err := l.fsys.OpenFile(l.path(m.snapshot), os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return err
		}
		snapSize = fi.Size()
	}

	l.name = m.logs[len(m.logs)-1]
	path := l.path(l.name)
	f, err := l.fsys.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	base, size, err := readLogHeader(f, path)
	if err == nil && base > lastLSN {
		err = fmt.Errorf("aof: %s starts after LSN %d but Open was given %d (run Replay first)", path, base, lastLSN)
	}
	if err == nil {
		// What the previous process wrote may still be only in the page
		// cache; from here on it counts as fsynced.
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, size
	files[len(files)-1] = namedLog{name: l.name, base: base, size: size}
	l.files, l.closedSize, l.maxSeq = files, closed, m.maxSeq()
	l.snapName, l.snapLSN, l.snapSize = m.snapshot, m.snapshotLSN, snapSize
	l.removeStale(m)
	return nil
}

// readLogHeader returns the base LSN and the size of an open log file.
func readLogHeader(f File, path string) (base uint64, size int64, err error) {
	var hdr [headerLen]byte
	n, err := f.ReadAt(hdr[:], 0)
	if n == headerLen {
		err = nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	base, err = decodeHeader(hdr[:n])
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return base, fi.Size(), nil
}

// removeStale removes the files of ours in the directory that m does not
// name: leftovers of a crash mid-Rotate or mid-snapshot, or of a switch
// whose deletions failed. Other files are never touched.
func (l *Log) removeStale(m *manifest) {
	names, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		l.log.Warn("aof: cannot list the directory to remove stale files", "dir", l.dir, "err", err)
		return
	}
	named := map[string]bool{m.snapshot: true}
	for _, n := range m.logs {
		named[n] = true
	}
	for _, n := range names {
		if !ourFile(n) || named[n] {
			continue
		}
		if err := l.fsys.Remove(l.path(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("aof: cannot remove a stale file the manifest does not name", "file", l.path(n), "err", err)
			continue
		}
		l.log.Info("aof: removed a stale file the manifest does not name", "file", l.path(n))
	}
}

// create starts the first log file and names it in a new manifest. A crash
// before the manifest is renamed into place leaves only an unnamed file,
// which the next Open overwrites.
func (l *Log) create(lastLSN uint64) error {
	l.name = LogName(1)
	path := l.path(l.name)
	f, err := l.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeHeader(lastLSN))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = l.fsys.SyncDir(l.dir)
	}
	if err == nil {
		m := manifest{logs: []string{l.name}}
		err = writeFileAtomic(l.fsys, l.dir, l.path(ManifestName), m.encode())
	}
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, int64(headerLen)
	l.files = []namedLog{{name: l.name, base: lastLSN, size: int64(headerLen)}}
	l.maxSeq = 1
	return nil
}

// Append encodes r into the buffer, stores its LSN in r.LSN and returns
// it. It does no I/O and is safe for concurrent use; a Record whose Kind or
// Slot is invalid is a programming error and panics (it would make the
// log unreadable). After Close the record is dropped and Wait for it
// returns ErrClosed.
func (l *Log) Append(r *Record) uint64 {
	if !validKind(r.Kind) || !validSlot(int64(r.Slot)) {
		panic(fmt.Sprintf("aof: Append of an invalid record (kind %d, slot %d)", r.Kind, r.Slot))
	}
	rest := restSize(r)
	l.mu.Lock()
	l.last++
	lsn := l.last
	l.pending.Store(lsn)
	if !l.closing {
		l.buf = appendRecord(l.buf, r, lsn, rest)
		l.bufLSN = lsn
		if l.idle {
			l.idle = false
			select {
			case l.kick <- struct{}{}:
			default:
			}
		}
	}
	l.mu.Unlock()
	r.LSN = lsn
	return lsn
}

// Wait blocks until lsn is durable by the policy: written for EverySec and
// No, written and fsynced for Always. It returns the log's error if it is
// failing and lsn is not yet durable (the caller must not acknowledge the
// write), and ErrClosed if the log was closed before lsn became durable.
func (l *Log) Wait(lsn uint64) error {
	if l.durable.Load() >= lsn {
		return nil
	}
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	for l.durable.Load() < lsn {
		if e := l.err.Load(); e != nil {
			return *e
		}
		if l.closed {
			return ErrClosed
		}
		if lsn > l.pending.Load() {
			return ErrUnknownLSN
		}
		l.cond.Wait()
	}
	return nil
}

// Err returns the sticky error of a failed write or fsync, nil when
// healthy. It is cheap enough to check before every write command.
func (l *Log) Err() error {
	if e := l.err.Load(); e != nil {
		return *e
	}
	return nil
}

// LastLSN returns the last LSN appended.
func (l *Log) LastLSN() uint64 { return l.pending.Load() }

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	buffered := int64(len(l.buf))
	if l.rot != nil {
		buffered += int64(len(l.rot.old))
	}
	l.mu.Unlock()
	l.manMu.Lock()
	name, size := l.name, l.fileSize.Load()
	base, logs := l.snapSize, l.closedSize+size
	l.manMu.Unlock()
	st := Stats{
		Policy:        l.policy,
		File:          name,
		Size:          size,
		BaseSize:      base,
		LogsSize:      logs,
		LastWriteErr:  "ok",
		BufferedBytes: buffered + l.unwritten.Load(),
		Fsyncs:        l.fsyncs.Load(),
		Writes:        l.writes.Load(),
		PendingLSN:    l.pending.Load(),
		DurableLSN:    l.durable.Load(),
		SyncedLSN:     l.syncedLSN.Load(),
	}
	if err := l.Err(); err != nil {
		st.LastWriteErr = err.Error()
	}
	return st
}

// Close writes and fsyncs everything appended (whatever the policy), and
// closes the file. Later calls return the first call's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		close(l.stop)
		<-l.syncDone
		<-l.done
		err := l.Err()
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
		l.closeErr = err
		l.waitMu.Lock()
		l.closed = true
		l.cond.Broadcast()
		l.waitMu.Unlock()
	})
	return l.closeErr
}

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		closing, rot := l.collect(retry)
		err := l.flush(closing || rot != nil)
		if rot != nil {
			if rot.sync {
				rot.done <- l.fsynced(err)
			} else {
				rot.done <- l.rotate(rot.base, closing, err)
			}
			if closing && err == nil {
				// The rotation was refused for the close: what was
				// appended after it goes in the current file.
				l.collect(retry)
				err = l.flush(true)
			}
		}
		if closing {
			if err != nil {
				l.log.Error("aof: closing with records not stored", "err", err,
					"durable_lsn", l.durable.Load(), "pending_lsn", l.pending.Load())
			}
			return
		}
	}
}

// collect waits until there is something to write (or, while failing, the
// retry interval passed), then moves the appended bytes into out. With a
// Rotate pending it takes only the bytes appended before it (they belong to
// the current file) and returns the rotation.
func (l *Log) collect(retry *time.Timer) (closing bool, rot *rotation) {
	if l.err.Load() != nil {
		// Failing: retry on a timer rather than on every Append.
		retry.Reset(l.retry)
		select {
		case <-retry.C:
		case <-l.stop:
			retry.Stop()
		}
	}
	l.mu.Lock()
	// Also woken when a background fsync covered bytes out still holds
	// (EverySec), so that they go (flush trims them) rather than wait
	// for the next append: a burst of big writes would otherwise keep
	// its bytes in memory until then.
	for len(l.buf) == 0 && l.outDone == len(l.out) && !l.closing && l.rot == nil && l.err.Load() == nil && !l.resync.Load() && !(len(l.out) > 0 && l.synced.Load() > l.outBase) {
		l.idle = true
		l.mu.Unlock()
		select {
		case <-l.kick:
		case <-l.stop:
		}
		l.mu.Lock()
	}
	l.idle = false
	// Let the goroutines that are ready to append do so first: one write
	// then covers many of them (measured on two cores with 64 appenders:
	// 25x fewer writes per record with No, half the fsyncs with Always).
	// With nothing else runnable it costs nothing.
	l.mu.Unlock()
	runtime.Gosched()
	l.mu.Lock()
	closing, rot = l.closing, l.rot
	var got []byte
	if rot != nil {
		l.rot = nil
		got = rot.old
		if len(got) > 0 {
			l.outLSN = rot.base
		}
	} else {
		got = l.buf
		if len(got) > 0 {
			l.buf = l.spare[:0]
			l.outLSN = l.bufLSN
		}
	}
	l.mu.Unlock()
	if len(got) == 0 {
		return closing, rot
	}
	if len(l.out) == 0 {
		l.out, l.spare = got, l.out[:0]
	} else {
		l.out = append(l.out, got...)
		l.spare = got[:0]
	}
	if cap(l.spare) > maxKeptBuffer {
		l.spare = nil
	}
	l.unwritten.Store(int64(len(l.out) - l.outDone))
	l.outCap.Store(int64(cap(l.out)))
	return closing, rot
}

// flush writes out, fsyncs it as the policy (or a recovery, or syncAll:
// closing or rotating) asks, and advances the durable LSN.
func (l *Log) flush(syncAll bool) error {
	failing := l.err.Load() != nil
	if l.dirDirty {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return l.failPath("directory fsync", l.dir, err)
		}
		l.dirDirty = false
	}
	if l.resync.Load() {
		// An fsync failed: the kernel may have dropped the pages written
		// since the last good one, so write them again.
		l.syncMu.Lock()
		s := l.synced.Load()
		err := l.f.Truncate(s)
		if err == nil {
			l.resync.Store(false)
			l.needTrunc = false
			l.trimTo(s)
			l.outDone = 0
			l.size = s
			l.fileSize.Store(s)
			l.publish(s, l.syncedLSN.Load())
		}
		l.syncMu.Unlock()
		if err != nil {
			return l.fail("truncate after a failed fsync", err)
		}
	} else if l.needTrunc {
		l.syncMu.Lock()
		err := l.f.Truncate(l.size)
		l.syncMu.Unlock()
		if err != nil {
			return l.fail("truncate after a failed write", err)
		}
		l.needTrunc = false
	}
	if l.outDone < len(l.out) {
		n, err := l.f.Write(l.out[l.outDone:])
		l.writes.Add(1)
		if err != nil {
			if n > 0 {
				// Part of a record may be in the file: cut it before the
				// retry (O_APPEND writes at the new end).
				l.needTrunc = true
			}
			return l.fail("write", err)
		}
		l.size += int64(n)
		l.outDone = len(l.out)
		l.unwritten.Store(0)
		l.fileSize.Store(l.size)
		l.publish(l.size, l.outLSN)
	}
	if l.policy == Always || syncAll || failing {
		l.syncMu.Lock()
		var err error
		// A background fsync that failed since this flush began leaves
		// the rewrite to the next flush.
		if !l.resync.Load() && (l.size > l.synced.Load() || failing) {
			err = l.f.Sync()
			l.fsyncs.Add(1)
			if err == nil {
				l.synced.Store(l.size)
				l.syncedLSN.Store(l.outLSN)
				if failing {
					l.err.Store(nil)
					l.log.Info("aof: writes recovered", "file", l.name, "durable_lsn", l.outLSN)
				}
			} else if l.policy != No {
				// With No nothing since the last fsync is kept to write
				// again (the OS owns durability): just fsync again later.
				l.resync.Store(true)
			}
		}
		l.syncMu.Unlock()
		if err != nil {
			return l.fail("fsync", err)
		}
	}
	if l.policy == EverySec {
		l.trimTo(l.synced.Load())
		if l.size-l.outBase > maxUnsynced {
			select {
			case l.syncNow <- struct{}{}:
			default:
			}
		}
	} else {
		l.trimTo(l.size)
	}
	l.advance(l.outLSN)
	return nil
}

// trimTo drops the bytes of out before file offset s, which are fsynced
// (or, with No, written and not kept for a rewrite).
func (l *Log) trimTo(s int64) {
	drop := int(s - l.outBase)
	if drop <= 0 {
		return
	}
	if drop >= len(l.out) {
		l.out = l.out[:0]
		l.outDone = 0
	} else {
		n := copy(l.out, l.out[drop:])
		l.out = l.out[:n]
		l.outDone -= drop
	}
	l.outBase = s
	// A huge record grew out; with EverySec the bytes since the last
	// fsync stay in it, so it is rarely empty: keep only what they need,
	// or the node holds (and counts against maxmemory) the huge buffer
	// for good.
	if cap(l.out) > maxKeptBuffer && len(l.out) <= maxKeptBuffer/2 {
		if len(l.out) == 0 {
			l.out = nil
		} else {
			l.out = append([]byte(nil), l.out...)
		}
	}
	l.outCap.Store(int64(cap(l.out)))
}

func (l *Log) publish(size int64, lsn uint64) {
	l.posMu.Lock()
	l.wSize, l.wLSN = size, lsn
	l.posMu.Unlock()
}

func (l *Log) advance(lsn uint64) {
	if l.durable.Load() >= lsn {
		return
	}
	l.durable.Store(lsn)
	l.waitMu.Lock()
	l.cond.Broadcast()
	l.waitMu.Unlock()
}

// fail makes err, from op on the current file, the log's sticky error and
// wakes the waiters.
func (l *Log) fail(op string, err error) error {
	l.manMu.Lock()
	path := l.path(l.name)
	l.manMu.Unlock()
	return l.failPath(op, path, err)
}

func (l *Log) failPath(op, path string, err error) error {
	err = fmt.Errorf("aof: %s %s: %w", op, path, err)
	if l.err.Swap(&err) == nil {
		l.log.Error("aof: failing; refusing writes until the log can be written", "err", err)
	}
	l.waitMu.Lock()
	l.cond.Broadcast()
	l.waitMu.Unlock()
	return err
}

// syncLoop is EverySec's background fsync.
func (l *Log) syncLoop() {
	defer close(l.syncDone)
	t := time.NewTicker(l.syncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.syncOnce()
		case <-l.syncNow:
			l.syncOnce()
		case <-l.stop:
			return
		}
	}
}

func (l *Log) syncOnce() {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.posMu.Lock()
	size, lsn := l.wSize, l.wLSN
	l.posMu.Unlock()
	if l.resync.Load() || size <= l.synced.Load() {
		return
	}
	err := l.f.Sync()
	l.fsyncs.Add(1)
	if err != nil {
		l.resync.Store(true)
		l.fail("fsync", err)
		// Wake an idle writer to start the rewrite and retries.
		select {
		case l.kick <- struct{}{}:
		default:
		}
		return
	}
	l.synced.Store(size)
	l.syncedLSN.Store(lsn)
	// An idle writer lets go of the bytes now fsynced (collect).
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Rotate ends the current log file and starts a new one: records appended
// before the call stay in the old files, later ones go to the new file. It
// returns B, the last LSN of the old files, once they are written and
// fsynced (whatever the policy), the new file exists with header base B
// (fsynced, its directory entry fsynced) and the manifest names it after
// the old ones. B is what CreateSnapshot takes.
//
// Appenders never wait for it: Rotate hands the bytes appended so far to
// the writer goroutine, which finishes the old file and performs the
// switch while Append keeps filling a fresh buffer for the new one.
//
// On an error Rotate returns 0 and nothing is lost: appends go on in the
// old file (any new file is removed). If only the directory fsync after
// the manifest's rename failed, the switch stands (the new manifest is in
// place and equally valid) but the log's sticky error is set until a
// later directory fsync succeeds, since a crash could still bring back the
// old manifest without the new file. Only one Rotate or snapshot may be in
// flight: another gets ErrBusy. After Close it returns ErrClosed.
func (l *Log) Rotate() (uint64, error) {
	if !l.busy.CompareAndSwap(false, true) {
		return 0, ErrBusy
	}
	defer l.busy.Store(false)
	r := &rotation{done: make(chan error, 1)}
	if err := l.handOff(r); err != nil {
		return 0, err
	}
	return r.base, nil
}

// handOff gives the writer r with the bytes appended so far (later
// appends fill a fresh buffer) and waits for its verdict.
func (l *Log) handOff(r *rotation) error {
	l.mu.Lock()
	switch {
	case l.closing:
		l.mu.Unlock()
		return ErrClosed
	case l.rot != nil:
		l.mu.Unlock()
		return ErrBusy
	}
	r.base, r.old = l.last, l.buf
	l.buf = nil
	l.rot = r
	if l.idle {
		l.idle = false
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
	return <-r.done
}

// SyncAppended returns once every record appended before the call is
// written and fsynced, whatever the policy. A rewrite's snapshot records
// for each slot the last LSN appended when it was dumped, which the
// writer may not have written yet: it waits for this before the manifest
// names the snapshot, or a crash could leave a log ending below those
// LSNs, whose numbers the restarted log would hand out again to records
// that replay would then skip as the snapshot's.
func (l *Log) SyncAppended() error {
	return l.handOff(&rotation{done: make(chan error, 1), sync: true})
}

// fsynced runs in the writer after flush(true) for SyncAppended, and
// for Rotate before it switches files: nil if the file is written and
// fsynced whole.
func (l *Log) fsynced(flushErr error) error {
	if flushErr != nil {
		return flushErr
	}
	l.syncMu.Lock()
	whole := !l.resync.Load() && l.synced.Load() == l.size
	l.syncMu.Unlock()
	if !whole {
		// EverySec's fsync failed after flush's own.
		if err := l.Err(); err != nil {
			return err
		}
		return errors.New("aof: the log file is not fsynced")
	}
	return nil
}

// rotate runs in the writer after flush(true) for the bytes appended
// before Rotate: once they are written and fsynced, it switches files.
func (l *Log) rotate(base uint64, closing bool, flushErr error) error {
	if flushErr == nil && closing {
		return ErrClosed
	}
	if err := l.fsynced(flushErr); err != nil {
		return err
	}
	return l.switchFile(base)
}

// switchFile starts log file maxSeq+1 with header base, names it in the
// manifest and makes it the current file. The old file is whole and
// fsynced, out is empty, and nothing else writes or fsyncs the file (the
// syncer finds nothing unsynced), so the per-file state can be reset.
func (l *Log) switchFile(base uint64) error {
	l.manMu.Lock()
	seq := l.maxSeq + 1
	m := l.manifestLocked()
	l.manMu.Unlock()
	name := LogName(seq)
	m.logs = append(m.logs, name)
	path := l.path(name)
	f, err := l.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("aof: rotate: %w", err)
	}
	_, err = f.Write(encodeHeader(base))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = l.fsys.SyncDir(l.dir)
	}
	renamed := false
	if err == nil {
		renamed, err = replaceFile(l.fsys, l.dir, l.path(ManifestName), m.encode())
	}
	if err != nil && !renamed {
		f.Close()
		if rerr := l.fsys.Remove(path); rerr != nil {
			l.log.Warn("aof: cannot remove the log file of a failed rotation (Open will)", "file", path, "err", rerr)
		}
		return fmt.Errorf("aof: rotate to %s: %w", path, err)
	}

	const hdr = int64(headerLen)
	old := l.f
	l.syncMu.Lock()
	l.f = f
	l.size = hdr
	l.needTrunc = false
	l.out, l.outBase, l.outDone = l.out[:0], hdr, 0
	l.synced.Store(hdr) // syncedLSN stays base: the old file is fsynced
	l.publish(hdr, base)
	l.syncMu.Unlock()
	l.manMu.Lock()
	oldSize := l.fileSize.Load()
	l.files[len(l.files)-1].size = oldSize
	l.closedSize += oldSize
	l.files = append(l.files, namedLog{name: name, base: base, size: hdr})
	l.name, l.maxSeq = name, seq
	l.fileSize.Store(hdr)
	l.manMu.Unlock()
	if cerr := old.Close(); cerr != nil {
		l.log.Warn("aof: closing the previous log file", "err", cerr)
	}
	if err != nil {
		l.dirDirty = true
		return l.failPath("directory fsync after naming "+name+" in", l.path(ManifestName), err)
	}
	l.log.Info("aof: started a new log file", "file", path, "base_lsn", base)
	return nil
}

// manifestLocked returns the manifest as the log knows it (manMu held).
func (l *Log) manifestLocked() manifest {
	m := manifest{snapshot: l.snapName, snapshotLSN: l.snapLSN}
	for _, f := range l.files {
		m.logs = append(m.logs, f.name)
	}
	return m
}
