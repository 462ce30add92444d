//go:build !unix

package dirlock

import "os"

// Without flock the directory is not guarded.
func tryLock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }
