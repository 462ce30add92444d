package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pair returns a wrapped server side and a plain client side of one TCP
// connection on loopback.
func pair(t *testing.T) (wrapped, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	peer, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	wrapped = Wrap(c)
	if _, raw := wrapped.(*Conn); raw != supported {
		t.Fatalf("Wrap gave %T, want the raw Conn: %v", wrapped, supported)
	}
	t.Cleanup(func() { wrapped.Close(); peer.Close() })
	return wrapped, peer
}

func TestReadWriteRoundTrip(t *testing.T) {
	c, peer := pair(t)
	if _, err := peer.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf) // waits on the poller until the bytes arrive
	if err != nil || string(buf[:n]) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := c.Write([]byte("+PONG\r\n")); n != 7 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	n, err = io.ReadFull(peer, buf[:7])
	if err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("peer read %q, %v", buf[:n], err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

// TestBigWriteWaitsForTheReader writes more than the socket buffers hold:
// Write must park on EAGAIN and finish once the peer reads, every byte in
// order.
func TestBigWriteWaitsForTheReader(t *testing.T) {
	c, peer := pair(t)
	data := make([]byte, 32<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // let the writer fill the buffers first
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(data))))
		got <- b
	}()
	n, err := c.Write(data)
	if n != len(data) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("peer got %d bytes, not the %d written", len(b), len(data))
	}
}

func TestEOF(t *testing.T) {
	c, peer := pair(t)
	peer.Write([]byte("x"))
	peer.Close()
	buf := make([]byte, 8)
	if n, err := c.Read(buf); n != 1 || err != nil {
		t.Fatalf("first Read = %d, %v", n, err)
	}
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want io.EOF", n, err)
	}
}

func TestDeadline(t *testing.T) {
	c, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("error %v is not a net.Error timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Read returned after %v", d)
	}
}

// TestCloseWakesReader: closing the connection (CLIENT KILL, shutdown)
// must end a Read parked on the poller, with net.ErrClosed.
func TestCloseWakesReader(t *testing.T) {
	c, _ := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still parked after Close")
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

// TestWriteToResetPeer: a write to a connection the peer reset fails with
// the system's error (EPIPE or ECONNRESET) instead of hanging or killing
// the process with SIGPIPE.
func TestWriteToResetPeer(t *testing.T) {
	c, peer := pair(t)
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close() // RST
	time.Sleep(20 * time.Millisecond)
	var err error
	for range 100 {
		if _, err = c.Write(make([]byte, 1<<16)); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Write to a reset peer: %v", err)
	}
}

func TestSyscallConnGivesTheDescriptor(t *testing.T) {
	c, _ := pair(t)
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatalf("%T has no SyscallConn", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	if fd < 0 {
		t.Fatalf("fd %d", fd)
	}
}

// TestReadWriteDoNotAllocate: a read or write that succeeds allocates
// nothing (a callback made per call used to, on every request).
func TestReadWriteDoNotAllocate(t *testing.T) {
	if !supported {
		t.Skip("no raw system calls on this platform")
	}
	c, peer := pair(t)
	msg := []byte("+PONG\r\n")
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per write and read, want 0", allocs)
	}
}

// TestConcurrentReaders: net.Conn allows several goroutines to read at
// once; each gets whole bytes of its own, and together all of them.
func TestConcurrentReaders(t *testing.T) {
	c, peer := pair(t)
	const readers, total = 4, 1 << 16
	got := make(chan int, readers)
	for range readers {
		go func() {
			n := 0
			buf := make([]byte, 100)
			for {
				m, err := c.Read(buf)
				n += m
				if err != nil {
					got <- n
					return
				}
			}
		}()
	}
	if _, err := peer.Write(bytes.Repeat([]byte("x"), total)); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	sum := 0
	for range readers {
		sum += <-got
	}
	if sum != total {
		t.Fatalf("readers got %d bytes in all, want %d", sum, total)
	}
}

func BenchmarkReadWrite(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c) // echo
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	c := Wrap(peer)
	msg := []byte("+PONG\r\n")
	buf := make([]byte, len(msg))
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestUnread: the socket's unread bytes are seen before any read takes
// them, and not once a read has taken them all.
func TestUnread(t *testing.T) {
	if !supported {
		t.Skip("rawio reads SIOCINQ on Linux only; this platform has no raw socket support in rawio")
	}
	c, peer := pair(t)
	if Unread(c) {
		t.Fatal("Unread on a fresh connection")
	}
	if _, err := peer.Write([]byte("+OK\r\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !Unread(c) {
		if time.Now().After(deadline) {
			t.Fatal("5 bytes sent, Unread still false")
		}
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 64)
	if n, err := c.Read(buf); n != 5 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if Unread(c) {
		t.Fatal("Unread after every byte was read")
	}
	if Unread(&net.TCPConn{}) {
		t.Fatal("Unread on a connection without a socket")
	}
}

// newAcceptor listens on a free loopback port and returns the listener
// (closed at the test's end) and an Acceptor for it.
func newAcceptor(t *testing.T) (net.Listener, *Acceptor) {
	t.Helper()
	if !supported {
		t.Skip("rawio accepts through raw sockets on Linux only; this platform has no raw socket support in rawio")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	acc, ok := NewAcceptor(ln)
	if !ok {
		t.Fatal("NewAcceptor refused a TCP listener")
	}
	return ln, acc
}

// TestAcceptor: connections are counted as they leave the kernel's queue,
// come with keep-alive on (as Go's Accept gives them), carry data both
// ways, and Close ends a waiting Accept.
func TestAcceptor(t *testing.T) {
	ln, acc := newAcceptor(t)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if taken, queued, ok := acc.Counts(); ok && taken == 0 && queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			taken, queued, ok := acc.Counts()
			t.Fatalf("connected: Counts = %d, %d, %v, want 0, 1, true", taken, queued, ok)
		}
		time.Sleep(time.Millisecond)
	}
	s, err := acc.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if taken, queued, ok := acc.Counts(); !ok || taken != 1 || queued != 0 {
		t.Fatalf("after Accept: Counts = %d, %d, %v, want 1, 0, true", taken, queued, ok)
	}
	if s.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("accepted %s, dialed from %s", s.RemoteAddr(), c.LocalAddr())
	}
	rc, _ := rawConnOf(s)
	var keepAlive, idle int
	rc.Control(func(fd uintptr) {
		keepAlive, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		idle, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, 0x4) // TCP_KEEPIDLE (Linux)
	})
	if keepAlive != 1 || idle != 15 {
		t.Errorf("SO_KEEPALIVE %d, TCP_KEEPIDLE %d; want 1 and 15, as Go's Accept", keepAlive, idle)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := acc.Accept()
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	acc.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Accept after Close returned a connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Accept")
	}
}

// TestAcceptorResetConnection: a connection reset while queued is still
// accepted with its addresses (its first read then fails), as Go's Accept
// TestAcceptorCountsWithAcceptInFlight: while an accept call is in flight
// (its thread descheduled between taking a connection from the kernel's
// queue and counting it), Counts says it cannot tell rather than give two
// counts that miss that connection; it tells again once the call is over.
func TestAcceptorCountsWithAcceptInFlight(t *testing.T) {
	ln, acc := newAcceptor(t)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acc.calls.Add(1) // as accept does before accept4
	if taken, queued, ok := acc.Counts(); ok {
		t.Fatalf("accept in flight: Counts = %d, %d, true, want ok false", taken, queued)
	}
	acc.calls.Add(1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		taken, queued, ok := acc.Counts()
		if ok && taken == 0 && queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("accept over: Counts = %d, %d, %v, want 0, 1, true", taken, queued, ok)
		}
		time.Sleep(time.Millisecond)
	}
}

// does, so a server counts it like any other.
func TestAcceptorResetConnection(t *testing.T) {
	ln, acc := newAcceptor(t)
	defer acc.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	from := c.LocalAddr().String()
	c.(*net.TCPConn).SetLinger(0)
	c.Close() // a reset
	time.Sleep(10 * time.Millisecond)
	s, err := acc.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.RemoteAddr() == nil || s.RemoteAddr().String() != from || s.LocalAddr() == nil || s.LocalAddr().String() != ln.Addr().String() {
		t.Fatalf("accepted %v -> %v, want %s -> %s", s.RemoteAddr(), s.LocalAddr(), from, ln.Addr())
	}
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a reset connection succeeded")
	}
	if _, ok := s.(syscall.Conn); !ok {
		t.Fatal("the accepted connection gives no raw access")
	}
}

// TestCloseWhenSentDeliversEverything: a server closing a connection whose
// client has sent bytes it never read, while its own replies still sit in
// the send queue (the client reads slowly), delivers every reply with
// CloseWhenSent; a plain Close would reset the connection and drop them.
func TestCloseWhenSentDeliversEverything(t *testing.T) {
	if !supported {
		t.Skip("rawio reads SIOCOUTQ on Linux only; this platform has no raw socket support in rawio")
	}
	c, peer := pair(t)
	if _, err := peer.Write(bytes.Repeat([]byte("x"), 4096)); err != nil { // never read
		t.Fatal(err)
	}
	const size = 4 << 20
	written := make(chan error, 1)
	go func() {
		_, err := c.Write(bytes.Repeat([]byte("r"), size))
		if err == nil {
			err = CloseWhenSent(c, 10*time.Second)
		}
		written <- err
	}()
	got := 0
	buf := make([]byte, 16<<10)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		time.Sleep(50 * time.Microsecond) // a slow reader: the replies queue up
		n, err := peer.Read(buf)
		got += n
		if err != nil {
			// EOF, or the reset the unread bytes cause once
			// everything has been received.
			break
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if got != size {
		t.Fatalf("the client got %d bytes of %d", got, size)
	}
}
