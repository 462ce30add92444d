// Package dirlock keeps two processes from using one data directory at
// once. Two nodes started with the same --dir would both replay and
// append to one log and claim one node id; Redis refuses the same case for
// a shared nodes.conf. The lock is an advisory flock on DIR/LOCK, so the
// kernel drops it when the process dies, however it dies: a crashed node
// never leaves a stale lock behind.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file's name inside the directory.
const FileName = "LOCK"

// ErrLocked is wrapped by Acquire's error when another process holds the
// directory.
var ErrLocked = errors.New("in use by another process")

// Lock is a held directory lock.
type Lock struct {
	f *os.File
}

// Acquire locks dir (which must exist) for this process and records the
// process id in the lock file, so that the error another process gets
// names the holder.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, ErrLocked) {
			if pid := holder(path); pid != "" {
				return nil, fmt.Errorf("%s is %w (pid %s)", dir, ErrLocked, pid)
			}
			return nil, fmt.Errorf("%s is %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// The pid is informational: only the flock decides who holds the
	// directory, so a failed write does not release it.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release unlocks the directory. The lock file stays: removing it would
// let a process that opened it before the removal lock a file nobody else
// sees.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

func holder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	pid := strings.TrimSpace(string(b))
	if _, err := strconv.Atoi(pid); err != nil {
		return ""
	}
	return pid
}
