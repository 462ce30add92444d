//go:build unix

package redisinfo

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time the process has used (INFO cpu).
func ProcessCPU() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
