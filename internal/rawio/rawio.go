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
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	// tryWriteFn is writeFn that never waits (TryWrite).
	tryWriteFn func(fd uintptr) bool

	// loop is loopIdle, loopRunning while a ReadLoop runs, or
	// loopClosing once Close came during one.
	loop atomic.Int32
	// probe is ReadLoop's current wait before a probing read.
	probe time.Duration
	// skipGuess and guessBackoff: see guessHit.
	skipGuess, guessBackoff int
}

// States of Conn.loop.
const (
	loopIdle = iota
	loopRunning
	loopClosing
)

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

// ReadLoop reads the socket as data arrives and hands each read to
// handle, until handle returns false (ReadLoop returns nil), the peer
// closes (io.EOF) or a read fails. space gives the buffer for the next
// read; handle(n) is told that n bytes went into it.
//
// Why: each Read call resets the poller's record of readiness, so it has
// to try read(2) before it may wait, and after a batch of requests has
// been answered that read nearly always finds nothing: one system call
// per batch, a quarter of a node's at -P 16. ReadLoop stays inside one
// RawConn.Read, so after a read that drains the socket it can wait on the
// poller directly; data that came while handle ran has left the
// readiness set, and the wait returns at once. Whether it waits or reads
// once more depends on what such reads have lately found (see guessHit):
// a peer that streams, as the proxy does to a node, is cheaper to read
// than to be woken for.
//
// The one thing a drained read cannot tell is a FIN that came with the
// data before the wake-up: the read returns the data, the next one would
// return EOF, and no new readiness follows. So the wait has a deadline,
// after which one read probes the socket: 10 ms on a new connection,
// doubling to at most a second. A peer that sends and then only shuts
// its writing side is seen to close that much later; a peer that closes
// outright answers the replies with a reset, which wakes the loop at
// once. ReadLoop owns the read deadline while it runs and clears it as it
// returns.
//
// handle runs while the socket's read side is held: it may write, but must
// not Read, and must not wait long on anything but the socket (leave the
// loop first, for example before a blocking command). Close from any
// goroutine, handle included, does not wait for it (see Close).
func (c *Conn) ReadLoop(space func() []byte, handle func(n int) bool) error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.loop.Store(loopRunning)
	defer func() {
		if c.loop.Swap(loopIdle) == loopClosing {
			c.Conn.Close()
		}
	}()
	for {
		if c.probe == 0 {
			c.probe = firstProbe
		}
		c.Conn.SetReadDeadline(time.Now().Add(c.probe))
		err := c.readLoop(space, handle)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.probe = min(2*c.probe, maxProbe)
			continue // the loop starts with a read: the probe
		}
		c.Conn.SetReadDeadline(time.Time{})
		return err
	}
}

// How long ReadLoop waits before it probes a quiet socket (see ReadLoop).
const (
	firstProbe = 10 * time.Millisecond
	maxProbe   = time.Second
)

// Close closes the connection. While a ReadLoop runs it shuts the socket
// down instead, which ends the loop at its next read or write, and the
// loop closes the socket as it returns: net.Conn's Close would wait for
// the loop's handler to return (it holds the socket's read side), and
// would never return if called from the handler.
func (c *Conn) Close() error {
	if c.loop.CompareAndSwap(loopRunning, loopClosing) {
		c.shutdown()
		return nil
	}
	return c.Conn.Close()
}

// SetLinger sets SO_LINGER on the underlying TCP connection (0: Close
// resets it, dropping what is unsent); other connections ignore it.
func (c *Conn) SetLinger(sec int) error {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return l.SetLinger(sec)
	}
	return nil
}

// SyscallConn gives the underlying connection's raw access (for its file
// descriptor in CLIENT LIST).
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// opError wraps a failure as net.Conn's methods do.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// CloseRead shuts down the read side of nc's socket (a *Conn's, or any
// connection with a CloseRead method): a read waiting on it, or the next
// one, ends with EOF, while writes still go out. Servers stop taking
// commands this way and still send the replies they owe.
func CloseRead(nc net.Conn) {
	if c, ok := nc.(*Conn); ok {
		nc = c.Conn
	}
	if cr, ok := nc.(interface{ CloseRead() error }); ok {
		cr.CloseRead()
	}
}

// CloseWhenSent closes nc once the peer has acknowledged everything
// written to it (SIOCOUTQ is 0), or within at most, or at once where that
// cannot be told. A server that stops with requests unread must: closing
// a socket with unread bytes resets the connection, and the reset drops
// what the send queue still holds, replies the server has written and
// the client has not yet received among them.
func CloseWhenSent(nc net.Conn, within time.Duration) error {
	if rc, ok := rawConnOf(nc); ok {
		deadline := time.Now().Add(within)
		for unsent(rc) > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return nc.Close()
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

// Unread reports whether nc's socket holds bytes that no read has taken
// yet (SIOCINQ), as far as the kernel knows now; false when that cannot
// be told. Bytes waiting there were sent before the peer could have read
// anything written after this call.
func Unread(nc net.Conn) bool {
	rc, ok := rawConnOf(nc)
	return ok && unread(rc)
}

// AcceptQueue is the number of connections completed and waiting in ln's
// accept queue, as far as the kernel knows now (a listening TCP socket's
// tcpi_unacked); 0 when that cannot be told.
func AcceptQueue(ln net.Listener) int {
	if rc, ok := rawConnOf(ln); ok {
		return acceptQueue(rc)
	}
	return 0
}

// Acceptor takes connections from a TCP listener itself, through a
// duplicate of the listener's socket, and counts them as they leave the
// kernel's queue: Go's Accept returns a connection some system calls
// (poller registration, keep-alive) after the kernel has handed it over,
// and a server that counted there could not tell a connection in that
// window from none. Close it, as well as the listener, to stop listening.
type Acceptor struct {
	f    *os.File // the duplicate: pollable, so Accept waits on the poller
	rc   syscall.RawConn
	addr net.Addr // the listener's
	// taken counts the connections accept4 returned, dropped those that
	// could then not be set up; calls counts accept4 calls twice, before
	// and after, so that it is odd during one.
	taken, dropped, calls atomic.Int64
}

// NewAcceptor returns an Acceptor for ln, or false where that is not
// supported (another kind of listener, another platform).
func NewAcceptor(ln net.Listener) (*Acceptor, bool) {
	tl, ok := ln.(*net.TCPListener)
	if !ok || !supported {
		return nil, false
	}
	f, err := tl.File()
	if err != nil {
		return nil, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, false
	}
	return &Acceptor{f: f, rc: rc, addr: ln.Addr()}, true
}

// Accept waits for a connection and returns it, as net.Listener's Accept
// does. Accepted connections get Go's default TCP keep-alive. After Close
// it returns an error.
func (a *Acceptor) Accept() (net.Conn, error) {
	fd, peer, err := a.accept()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f) // a duplicate, set non-blocking and given to the poller
	f.Close()
	if err != nil {
		a.dropped.Add(1)
		return nil, err
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc, nil
	}
	tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true})
	if tc.RemoteAddr() == nil || tc.LocalAddr() == nil {
		// Reset before FileConn asked its addresses: the connection is
		// served anyway (its first read fails), as by Go's Accept,
		// with the addresses it came with.
		return &resetConn{TCPConn: tc, local: a.addr, remote: peer}, nil
	}
	return tc, nil
}

// resetConn is an accepted connection reset before its addresses were
// read: it reports the listener's address and the peer's from accept4.
type resetConn struct {
	*net.TCPConn
	local, remote net.Addr
}

func (c *resetConn) LocalAddr() net.Addr  { return c.local }
func (c *resetConn) RemoteAddr() net.Addr { return c.remote }

// Counts returns, as of one moment, how many connections Accept has
// returned or is about to return (taken), and how many still wait in the
// kernel's queue (queued, 0 when that cannot be told). No accept system
// call overlaps that moment, so a connection leaving the queue is counted
// exactly once. ok is false when an accept call stayed in flight through
// every try (its thread descheduled on a loaded machine): the two counts
// could then miss the connection it is taking, and the caller asks again.
func (a *Acceptor) Counts() (taken int64, queued int, ok bool) {
	for range 1000 {
		c := a.calls.Load()
		if c&1 == 0 {
			q := acceptQueue(a.rc)
			t := a.taken.Load() - a.dropped.Load()
			if a.calls.Load() == c {
				return t, q, true
			}
		}
		runtime.Gosched() // a call is in flight: microseconds
	}
	return 0, 0, false
}

// Close stops Accept and closes the duplicate socket.
func (a *Acceptor) Close() error { return a.f.Close() }

// rawConnOf is x's raw access (a connection's or a listener's), if it has
// one.
func rawConnOf(x any) (syscall.RawConn, bool) {
	sc, ok := x.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}
