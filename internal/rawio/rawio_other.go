//go:build !linux

package rawio

const supported = false
