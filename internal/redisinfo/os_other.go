//go:build !linux

package redisinfo

import "runtime"

// osName is INFO's os field; without uname it names the Go platform.
func osName() string { return runtime.GOOS + " " + runtime.GOARCH }

// SystemMemory is not read outside Linux: 0, as Redis gives where it
// cannot tell.
func SystemMemory() int64 { return 0 }
