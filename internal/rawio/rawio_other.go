//go:build !linux

package rawio

import (
	"errors"
	"net"
	"syscall"
)

const supported = false

// setup has nothing to do: Wrap returns the connection unwrapped.
func (c *Conn) setup() {}

func peerClosed(rc syscall.RawConn) bool { return false }

func unread(rc syscall.RawConn) bool { return false }

func unsent(rc syscall.RawConn) int { return 0 }

func acceptQueue(rc syscall.RawConn) int { return 0 }

func (a *Acceptor) accept() (int, *net.TCPAddr, error) {
	return -1, nil, errors.New("rawio: Acceptor is not supported on this platform")
}

func (c *Conn) readLoop(space func() []byte, handle func(n int) bool) error {
	return errors.New("rawio: ReadLoop is not supported on this platform")
}

func (c *Conn) shutdown() {}

func (c *Conn) tryWrite(b []byte) (int, error) { return c.Conn.Write(b) }
