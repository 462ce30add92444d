package aof

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// memFS is an in-memory FS for fast tests and fuzzing.
type memFS struct {
	mu    sync.Mutex
	files map[string]*memNode
}

type memNode struct {
	mu   sync.Mutex
	data []byte
}

func newMemFS() *memFS { return &memFS{files: map[string]*memNode{}} }

func (m *memFS) put(name string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[filepath.Clean(name)] = &memNode{data: append([]byte(nil), data...)}
}

func (m *memFS) get(name string) ([]byte, bool) {
	m.mu.Lock()
	n, ok := m.files[filepath.Clean(name)]
	m.mu.Unlock()
	if !ok {
		return nil, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]byte(nil), n.data...), true
}

func (m *memFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	n, ok := m.files[name]
	switch {
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok:
		n = &memNode{}
		m.files[name] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.mu.Lock()
		n.data = n.data[:0]
		n.mu.Unlock()
	}
	return &memFile{n: n, name: name, appendOnly: flag&os.O_APPEND != 0}, nil
}

func (m *memFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[filepath.Clean(oldpath)]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	delete(m.files, filepath.Clean(oldpath))
	m.files[filepath.Clean(newpath)] = n
	return nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[filepath.Clean(name)]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, filepath.Clean(name))
	return nil
}

func (m *memFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.files {
		if filepath.Dir(name) == filepath.Clean(dir) {
			names = append(names, filepath.Base(name))
		}
	}
	return names, nil
}

// clone returns a copy of the files as they are now: a crash image.
func (m *memFS) clone() *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := newMemFS()
	for name, n := range m.files {
		n.mu.Lock()
		c.files[name] = &memNode{data: append([]byte(nil), n.data...)}
		n.mu.Unlock()
	}
	return c
}

// names returns the files' base names, sorted.
func (m *memFS) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.files {
		names = append(names, filepath.Base(name))
	}
	slices.Sort(names)
	return names
}

func (m *memFS) MkdirAll(string, fs.FileMode) error { return nil }
func (m *memFS) SyncDir(string) error               { return nil }

type memFile struct {
	n          *memNode
	name       string
	off        int64
	appendOnly bool
}

func (f *memFile) Read(b []byte) (int, error) {
	n, err := f.ReadAt(b, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(b, f.n.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(b []byte) (int, error) {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if f.appendOnly {
		f.off = int64(len(f.n.data))
	}
	if grow := f.off + int64(len(b)) - int64(len(f.n.data)); grow > 0 {
		f.n.data = append(f.n.data, make([]byte, grow)...)
	}
	copy(f.n.data[f.off:], b)
	f.off += int64(len(b))
	return len(b), nil
}

func (f *memFile) Close() error { return nil }
func (f *memFile) Sync() error  { return nil }

func (f *memFile) Truncate(size int64) error {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if size <= int64(len(f.n.data)) {
		f.n.data = f.n.data[:size]
	} else {
		f.n.data = append(f.n.data, make([]byte, size-int64(len(f.n.data)))...)
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.n.data))}, nil
}

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
