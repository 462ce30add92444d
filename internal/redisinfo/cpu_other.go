//go:build !unix

package redisinfo

import "time"

// ProcessCPU is not measured on this platform; INFO cpu reports zero.
func ProcessCPU() (user, sys time.Duration) { return 0, 0 }
