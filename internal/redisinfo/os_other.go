//go:build !linux

package redisinfo

import "runtime"

// osName is INFO's os field; without uname it names the Go platform.
func osName() string { return runtime.GOOS + " " + runtime.GOARCH }
