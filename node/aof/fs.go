package aof

import (
	"io"
	"io/fs"
	"os"
)

// FS is the filesystem the log uses; tests inject failures through it.
// Names are paths (the log joins Options.Dir and its file names).
type FS interface {
	// OpenFile is os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm fs.FileMode) error
	// SyncDir fsyncs a directory, making renames and creations in it
	// durable.
	SyncDir(dir string) error
	// ReadDir returns the names of the entries of dir (for Open's removal
	// of stale files), in any order.
	ReadDir(dir string) ([]string, error)
}

// File is an open file of an FS. *os.File implements it.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
}

// OSFS returns the real filesystem.
func OSFS() FS { return osFS{} }

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		// A nil *os.File in a File interface would not compare equal to nil.
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

func (osFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readFileLimit reads a whole small file, failing if it exceeds limit.
func readFileLimit(fsys FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooBig
	}
	return b, nil
}

// writeFileAtomic replaces name with b: a temporary file written and
// fsynced, renamed over name, and the directory fsynced.
func writeFileAtomic(fsys FS, dir, name string, b []byte) error {
	_, err := replaceFile(fsys, dir, name, b)
	return err
}

// replaceFile is writeFileAtomic that also reports whether the rename
// happened: if it did and only the directory fsync failed, name already
// holds b (a crash may still bring the old contents back).
func replaceFile(fsys FS, dir, name string, b []byte) (renamed bool, err error) {
	tmp := name + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return false, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		fsys.Remove(tmp)
		return false, err
	}
	return true, fsys.SyncDir(dir)
}
