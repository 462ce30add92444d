// Package atomicfile replaces small state files so that a crash leaves
// either the old content or the new one, never a mix or nothing: write a
// temporary file in the same directory, fsync it, rename it over the
// target, fsync the directory (as Redis writes nodes.conf).
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path's content with b atomically and durably.
func Write(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
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
