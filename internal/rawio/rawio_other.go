//go:build !linux

package rawio

import (
	"errors"
	"syscall"
)

const supported = false

// setup has nothing to do: Wrap returns the connection unwrapped.
func (c *Conn) setup() {}

func peerClosed(rc syscall.RawConn) bool { return false }

func unread(rc syscall.RawConn) bool { return false }

func (c *Conn) readLoop(space func() []byte, handle func(n int) bool) error {
	return errors.New("rawio: ReadLoop is not supported on this platform")
}

func (c *Conn) shutdown() {}
