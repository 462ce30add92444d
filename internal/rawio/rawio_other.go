//go:build !linux

package rawio

import "syscall"

const supported = false

// setup has nothing to do: Wrap returns the connection unwrapped.
func (c *Conn) setup() {}

func peerClosed(rc syscall.RawConn) bool { return false }
