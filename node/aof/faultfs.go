package aof

import (
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FaultFS wraps an FS and injects failures into writes, fsyncs and
// truncations, for tests of the log and of the node above it (a full disk,
// a failing device). Its controls are safe to flip while the log runs.
type FaultFS struct {
	inner     FS
	writeErr  atomic.Pointer[error]
	syncErr   atomic.Pointer[error]
	truncErr  atomic.Pointer[error]
	short     atomic.Bool
	drop      atomic.Bool
	syncDelay atomic.Int64
	hook      atomic.Pointer[func(op Op, path string) error]

	writes atomic.Int64
	syncs  atomic.Int64
}

// Op names an operation of the FS, for FaultFS.FailOp.
type Op string

// The operations FailOp sees.
const (
	OpCreate   Op = "create"   // OpenFile with os.O_CREATE
	OpWrite    Op = "write"    // File.Write
	OpSync     Op = "sync"     // File.Sync
	OpTruncate Op = "truncate" // File.Truncate
	OpRename   Op = "rename"   // Rename (path is the old path)
	OpRemove   Op = "remove"   // Remove
	OpSyncDir  Op = "syncdir"  // SyncDir (path is the directory)
)

// NewFaultFS wraps inner (nil = the real filesystem) with no failures.
func NewFaultFS(inner FS) *FaultFS {
	if inner == nil {
		inner = OSFS()
	}
	return &FaultFS{inner: inner}
}

func setErr(p *atomic.Pointer[error], err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	p.Store(&err)
}

func loadErr(p *atomic.Pointer[error]) error {
	if e := p.Load(); e != nil {
		return *e
	}
	return nil
}

// FailWrites makes every Write return err (nil heals), like ENOSPC or EIO.
func (f *FaultFS) FailWrites(err error) { setErr(&f.writeErr, err) }

// FailSyncs makes every Sync and SyncDir return err (nil heals).
func (f *FaultFS) FailSyncs(err error) { setErr(&f.syncErr, err) }

// FailTruncates makes every Truncate return err (nil heals).
func (f *FaultFS) FailTruncates(err error) { setErr(&f.truncErr, err) }

// ShortWrites makes a failing Write store the first half of its bytes
// before it fails, as a disk that fills up mid-write does.
func (f *FaultFS) ShortWrites(on bool) { f.short.Store(on) }

// DropOnFailedSync makes a failing Sync zero the bytes written to the file
// since its last successful Sync, as a kernel that drops dirty pages after
// a writeback error may: a later successful fsync does not bring them back.
func (f *FaultFS) DropOnFailedSync(on bool) { f.drop.Store(on) }

// SyncDelay makes every Sync take at least d (a slow device).
func (f *FaultFS) SyncDelay(d time.Duration) { f.syncDelay.Store(int64(d)) }

// FailOp calls fail before each operation with the path it acts on; a
// non-nil result fails the operation with that error (a failing write
// stores half its bytes first if ShortWrites, a failing sync drops
// unsynced bytes if DropOnFailedSync). nil removes the hook. fail may be
// called from several goroutines at once; tests also use it to take a
// crash image of the files just before an operation.
func (f *FaultFS) FailOp(fail func(op Op, path string) error) {
	if fail == nil {
		f.hook.Store(nil)
		return
	}
	f.hook.Store(&fail)
}

// fault returns the error op on path fails with: the hook's, else the
// one set for all operations of its kind (p, which may be nil).
func (f *FaultFS) fault(op Op, path string, p *atomic.Pointer[error]) error {
	if h := f.hook.Load(); h != nil {
		if err := (*h)(op, path); err != nil {
			return err
		}
	}
	if p == nil {
		return nil
	}
	return loadErr(p)
}

// Writes returns how many Writes were attempted.
func (f *FaultFS) Writes() int64 { return f.writes.Load() }

// Syncs returns how many file Syncs were attempted.
func (f *FaultFS) Syncs() int64 { return f.syncs.Load() }

// OpenFile implements FS.
func (f *FaultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.fault(OpCreate, name, nil); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	ff := &faultFile{File: file, fs: f, name: name}
	if fi, err := file.Stat(); err == nil {
		ff.synced = fi.Size()
	}
	return ff, nil
}

// Rename implements FS.
func (f *FaultFS) Rename(oldpath, newpath string) error {
	if err := f.fault(OpRename, oldpath, nil); err != nil {
		return err
	}
	return f.inner.Rename(oldpath, newpath)
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if err := f.fault(OpRemove, name, nil); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

// ReadDir implements FS.
func (f *FaultFS) ReadDir(dir string) ([]string, error) { return f.inner.ReadDir(dir) }

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(path string, perm fs.FileMode) error { return f.inner.MkdirAll(path, perm) }

// SyncDir implements FS.
func (f *FaultFS) SyncDir(dir string) error {
	if err := f.fault(OpSyncDir, dir, &f.syncErr); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

type faultFile struct {
	File
	fs     *FaultFS
	name   string
	mu     sync.Mutex
	synced int64 // size at the last successful Sync
}

func (f *faultFile) Write(b []byte) (int, error) {
	f.fs.writes.Add(1)
	if err := f.fs.fault(OpWrite, f.name, &f.fs.writeErr); err != nil {
		if f.fs.short.Load() && len(b) > 1 {
			n, werr := f.File.Write(b[:len(b)/2])
			if werr != nil {
				return n, werr
			}
			return n, err
		}
		return 0, err
	}
	return f.File.Write(b)
}

func (f *faultFile) Sync() error {
	f.fs.syncs.Add(1)
	if d := time.Duration(f.fs.syncDelay.Load()); d > 0 {
		time.Sleep(d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fs.fault(OpSync, f.name, &f.fs.syncErr); err != nil {
		if f.fs.drop.Load() {
			if fi, serr := f.File.Stat(); serr == nil && fi.Size() > f.synced {
				// Truncating and extending again zero-fills the range.
				if f.File.Truncate(f.synced) == nil {
					f.File.Truncate(fi.Size())
				}
			}
		}
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	if fi, err := f.File.Stat(); err == nil {
		f.synced = fi.Size()
	}
	return nil
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fault(OpTruncate, f.name, &f.fs.truncErr); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.synced = min(f.synced, size)
	return nil
}
