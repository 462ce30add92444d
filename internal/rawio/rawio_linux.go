//go:build linux

package rawio

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

const supported = true

// maxRW bounds one system call, as internal/poll does (some kernels fail
// larger reads and writes on sockets).
const maxRW = 1 << 30

// setup makes the callbacks Read and Write hand to the poller.
func (c *Conn) setup() {
	c.readFn = c.rd.read
	c.writeFn = c.wr.write
	c.tryWriteFn = func(fd uintptr) bool {
		c.wr.write(fd)
		return true // never wait
	}
}

// Read reads into b; it waits on the poller while nothing is there.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) > maxRW {
		b = b[:maxRW]
	}
	c.rmu.Lock()
	c.rd = op{b: b}
	err := c.rc.Read(c.readFn)
	n, errno := c.rd.n, c.rd.errno
	c.rd.b = nil // keep no reference to the caller's buffer
	c.rmu.Unlock()
	switch {
	case err != nil: // closed, or a deadline passed
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// read is Read's callback for RawConn.Read: one read(2), retried on
// EINTR; false (EAGAIN) has the poller wait and call it again.
func (o *op) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&o.b[0])), uintptr(len(o.b)))
		switch e {
		case 0:
			o.n = int(r)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait on the poller, then call again
		default:
			o.errno = e
			return true
		}
	}
}

// Write writes all of b, waiting on the poller while the socket's buffer
// is full.
func (c *Conn) Write(b []byte) (int, error) { return c.writeWith(b, c.writeFn) }

// tryWrite is TryWrite for a raw connection: Write's loop, but a full
// socket ends it instead of a wait on the poller.
func (c *Conn) tryWrite(b []byte) (int, error) { return c.writeWith(b, c.tryWriteFn) }

// writeWith runs one RawConn.Write of b with the callback fn.
func (c *Conn) writeWith(b []byte, fn func(fd uintptr) bool) (int, error) {
	c.wmu.Lock()
	c.wr = op{b: b}
	err := c.rc.Write(fn)
	n, errno := c.wr.n, c.wr.errno
	c.wr.b = nil
	c.wmu.Unlock()
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// write is Write's callback for RawConn.Write: write(2) until all of o.b
// is out; false (EAGAIN) has the poller wait and call it again.
func (o *op) write(fd uintptr) bool {
	for o.n < len(o.b) {
		chunk := o.b[o.n:]
		if len(chunk) > maxRW {
			chunk = chunk[:maxRW]
		}
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
		switch e {
		case 0:
			o.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

// tcpEstablished is TCP_ESTABLISHED, the first byte of struct tcp_info.
const tcpEstablished = 1

// peerClosed reads the socket's TCP state (tcpi_state, the first byte of
// TCP_INFO; the kernel copies as much of the struct as asked for).
func peerClosed(rc syscall.RawConn) bool {
	closed := false
	rc.Control(func(fd uintptr) {
		v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_INFO)
		closed = err == nil && v&0xff != tcpEstablished
	})
	return closed
}

// unread asks for the socket's unread byte count (SIOCINQ, which Linux
// spells TIOCINQ for sockets too).
func unread(rc syscall.RawConn) bool { return queueLen(rc, syscall.TIOCINQ) > 0 }

// unsent asks for the bytes in the socket's send queue that the peer has
// not acknowledged (SIOCOUTQ, TIOCOUTQ for sockets too).
func unsent(rc syscall.RawConn) int { return queueLen(rc, syscall.TIOCOUTQ) }

// queueLen is the byte count the ioctl req reports for the socket; 0 when
// it fails (a closed socket, say).
func queueLen(rc syscall.RawConn, req uintptr) int {
	n := int32(0)
	rc.Control(func(fd uintptr) {
		_, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&n)))
		if e != 0 {
			n = 0
		}
	})
	return int(n)
}

// tcpInfoUnacked is the offset of tcpi_unacked in struct tcp_info (eight
// one-byte fields, then rto, ato, snd_mss and rcv_mss); on a listening
// socket the kernel reports its accept queue's length there.
const tcpInfoUnacked = 24

// tcpListen is TCP_LISTEN, a listening socket's tcpi_state.
const tcpListen = 10

func acceptQueue(rc syscall.RawConn) int {
	var info [tcpInfoUnacked + 4]byte
	n := 0
	rc.Control(func(fd uintptr) {
		size := uint32(len(info))
		_, _, e := syscall.RawSyscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
		if e == 0 && size >= uint32(len(info)) && info[0] == tcpListen {
			n = int(*(*uint32)(unsafe.Pointer(&info[tcpInfoUnacked])))
		}
	})
	return n
}

// accept is accept4 inside the duplicate's RawConn.Read, which waits on
// the poller while the queue is empty. The new socket stays blocking: it
// is only handed to net.FileConn, whose duplicate shares the file
// description and sets it non-blocking.
func (a *Acceptor) accept() (int, *net.TCPAddr, error) {
	nfd, errno := -1, error(nil)
	var peer *net.TCPAddr
	err := a.rc.Read(func(fd uintptr) bool {
		for {
			// calls is odd while the kernel may be taking a connection
			// from its queue: Counts waits that out.
			a.calls.Add(1)
			n, sa, e := syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC)
			if e == nil {
				a.taken.Add(1)
				peer = tcpAddrOf(sa)
			}
			a.calls.Add(1)
			switch e {
			case nil:
				nfd = n
				return true
			case syscall.EINTR, syscall.ECONNABORTED:
				// As Go's Accept: a connection reset while queued is
				// skipped.
				continue
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
	})
	if err != nil {
		return -1, nil, err // closed
	}
	if errno != nil {
		return -1, nil, os.NewSyscallError("accept4", errno)
	}
	return nfd, peer, nil
}

// tcpAddrOf converts accept4's peer address.
func tcpAddrOf(sa syscall.Sockaddr) *net.TCPAddr {
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *syscall.SockaddrInet6:
		a := &net.TCPAddr{IP: append(net.IP(nil), sa.Addr[:]...), Port: sa.Port}
		if sa.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(sa.ZoneId)); err == nil {
				a.Zone = ifi.Name
			}
		}
		return a
	}
	return &net.TCPAddr{}
}

// readLoop is ReadLoop's body: the callback runs inside one RawConn.Read,
// so the poller's readiness is not reset between batches.
func (c *Conn) readLoop(space func() []byte, handle func(n int) bool) error {
	var rerr error
	guess := false // the coming read follows a drained one: a guess
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			b := space()
			if len(b) == 0 {
				rerr = io.ErrShortBuffer
				return true
			}
			if len(b) > maxRW {
				b = b[:maxRW]
			}
			o := op{b: b}
			if !o.read(fd) { // EAGAIN
				if guess {
					c.guessMissed()
					guess = false
				}
				return false
			}
			if o.errno != 0 {
				rerr = c.opError("read", os.NewSyscallError("read", o.errno))
				return true
			}
			if guess {
				c.guessHit()
				guess = false
			}
			if o.n == 0 {
				rerr = io.EOF
				return true
			}
			if !handle(o.n) {
				return true
			}
			if o.n < len(b) {
				// The read drained the socket. Wait on the poller, which
				// has kept any readiness that came while handle ran,
				// unless reading again has lately found more.
				if c.skipGuess > 0 {
					c.skipGuess--
					return false
				}
				guess = true
			}
		}
	})
	if err != nil {
		return c.opError("read", err)
	}
	return rerr
}

// guessHit and guessMissed adapt ReadLoop to its peer. A client that
// waits for its replies before it sends again leaves nothing to read
// after a batch: the loop should wait on the poller. A peer that streams,
// such as the proxy sending many clients' commands to a node, has often
// sent more by the time a batch is answered, and then one read that finds
// it is cheaper than parking, being found by the poller (two epoll_pwait
// calls on an idle runtime) and waking: behind the proxy at GET -P 1,
// always parking cost the proxy and its nodes 6-15% more CPU per request
// (two A/B runs). So after
// a drained read the loop reads once more; when that finds nothing it
// stops guessing for 1, 2, 4 ... up to maxSkipGuess batches, and a read
// that finds data brings the guessing back.
func (c *Conn) guessHit() { c.guessBackoff = 0 }

func (c *Conn) guessMissed() {
	c.guessBackoff = min(max(1, 2*c.guessBackoff), maxSkipGuess)
	c.skipGuess = c.guessBackoff
}

// maxSkipGuess bounds the batches ReadLoop parks without guessing: at
// most one read in 17 batches finds nothing from a client that never
// streams.
const maxSkipGuess = 16

// shutdown ends the socket's traffic both ways (see Close).
func (c *Conn) shutdown() {
	c.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}
