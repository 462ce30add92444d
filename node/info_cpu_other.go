//go:build !unix

package node

import "time"

// processCPU is not measured on this platform; INFO cpu reports zero.
func processCPU() (user, sys time.Duration) { return 0, 0 }
