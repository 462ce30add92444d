// Package rawio wraps a socket so that its reads and writes are raw
// system calls, still parked on Go's network poller when the socket is not
// ready.
//
// Why: a Go system call (syscall.Syscall) tells the scheduler it may
// block, and the first one after the process was idle wakes the runtime's
// monitor thread (sysmon) from its deep sleep with a futex, after which
// sysmon polls every 20 µs for a while. A server whose requests come in
// bursts, such as a node behind the proxy, a node serving pipelines or the
// proxy itself, goes idle and wakes thousands of times a second and paid
// that wake-up each time: under GET -P 1 through the proxy a node made
// about one futex call and one nanosleep per batch of requests besides its
// read and write. A read or write on a non-blocking socket never blocks,
// so it can skip the scheduler's bookkeeping: RawSyscall does, and the
// poller still parks the goroutine on EAGAIN exactly as net.Conn does.
package rawio

import (
	"net"
	"sync"
	"syscall"
)

// Conn is a net.Conn whose Read and Write use raw system calls.
type Conn struct {
	net.Conn
	rc syscall.RawConn

	// The callbacks RawConn.Read and Write run are made once, in Wrap,
	// with their arguments and results here: a closure made per call
	// escapes to the heap, and at about 40 bytes a read and a write per
	// request it was most of what the proxy allocated. The mutexes keep
	// two goroutines reading (or writing) at once, which net.Conn
	// allows, from sharing the fields.
	rmu, wmu sync.Mutex
	rd, wr   op
	readFn   func(fd uintptr) bool
	writeFn  func(fd uintptr) bool
}

// op is one Read or Write call's buffer and outcome.
type op struct {
	b     []byte
	n     int
	errno syscall.Errno
}

// Wrap returns nc with raw reads and writes where the platform and the
// connection allow it, and nc itself otherwise.
func Wrap(nc net.Conn) net.Conn {
	if !supported {
		return nc
	}
	rc, ok := rawConnOf(nc)
	if !ok {
		return nc
	}
	c := &Conn{Conn: nc, rc: rc}
	c.setup()
	return c
}

// SyscallConn gives the underlying connection's raw access (for its file
// descriptor in CLIENT LIST).
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// opError wraps a failure as net.Conn's methods do.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// PeerClosed reports whether the peer of nc has closed or reset the
// connection, as far as the kernel knows now: for a TCP socket, its state
// is no longer ESTABLISHED (a FIN or RST arrived). It is false when that
// cannot be told (another kind of socket, another platform). A server
// asks it before handing something it cannot take back, such as a popped
// element, to a client that has been waiting: the close may have arrived
// but not yet been read.
func PeerClosed(nc net.Conn) bool {
	rc, ok := rawConnOf(nc)
	return ok && peerClosed(rc)
}

// rawConnOf is nc's raw access, if it has one.
func rawConnOf(nc net.Conn) (syscall.RawConn, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}
