//go:build linux

package redisinfo

import (
	"runtime"
	"syscall"
)

// osName is INFO's os field as Redis writes it from uname(2): system name,
// release and machine, e.g. "Linux 6.1.0-18-amd64 x86_64".
func osName() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return runtime.GOOS + " " + runtime.GOARCH
	}
	return utsString(u.Sysname[:]) + " " + utsString(u.Release[:]) + " " + utsString(u.Machine[:])
}

// utsString reads a NUL-terminated utsname field (int8 or uint8 elements
// depending on the architecture).
func utsString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// SystemMemory is INFO's total_system_memory: the machine's physical
// memory, as Redis reads it from sysconf (the same as sysinfo's total).
func SystemMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
