package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/loopserve"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
)

// TestRefusalBeforeFirstSend: a node at its maxclients writes its refusal
// as soon as it accepts, and may do so before the proxy has sent anything
// on the new connection. The command that then finds the connection
// broken answers the node's maxclients error, not CLUSTERDOWN (the node is
// up; it is full). It used to answer CLUSTERDOWN, depending on timing.
func TestRefusalBeforeFirstSend(t *testing.T) {
	s := proxyOverFake(t, func(c net.Conn) {
		c.Write([]byte("-" + resp.ErrMaxClients + "\r\n"))
		c.Close()
	})
	p := s.route.pool(0)
	p.mu.Lock()
	conn, err := p.dialLocked(2)
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !conn.isBroken() {
		if time.Now().After(deadline) {
			t.Fatal("the refused connection is not marked broken")
		}
		time.Sleep(time.Millisecond)
	}
	r := &request{b: newBatch(0)}
	r.b.remaining.Store(1)
	if conn.send([]*request{r}, resp.AppendCommand(nil, [][]byte{[]byte("GET"), []byte("k")})) {
		t.Fatal("send on a broken connection succeeded")
	}
	if got := conn.failMsg(); got != resp.ErrMaxClients {
		t.Errorf("failMsg after a refusal before any send = %q, want %q", got, resp.ErrMaxClients)
	}
}

// TestOutageLogsOnce: the failures of one outage log one warning,
// however their texts differ (a timeout names the local port of each
// attempt; a host that is gone answers "no route to host" and timeouts by
// turns), and the next outage, after the node was reachable, logs again.
func TestOutageLogsOnce(t *testing.T) {
	timeoutAt := func(port int) error {
		return &net.OpError{Op: "read", Net: "tcp",
			Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
			Addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001}, Err: os.ErrDeadlineExceeded}
	}
	dialErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001},
			Err: &os.SyscallError{Syscall: "connect", Err: errno}}
	}
	var log logBuffer
	topo, err := NewStaticTopology([]string{"127.0.0.1:7001"})
	if err != nil {
		t.Fatal(err)
	}
	// NodeTimeout paces the watchdog, whose idle probe would log too.
	s, err := New(Options{Topology: topo, NodeTimeout: time.Hour, Logger: log.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := s.route.pool(0)
	p.mu.Lock()
	for i, err := range []error{dialErr(syscall.EHOSTUNREACH), timeoutAt(40001), dialErr(syscall.EHOSTUNREACH), timeoutAt(40002), dialErr(syscall.ECONNREFUSED)} {
		p.markDownAgain(err)
		if i == 0 {
			p.down.Store(true)
		}
	}
	p.markUp()
	p.markDownAgain(timeoutAt(40003))
	p.mu.Unlock()
	out := log.String()
	if n := strings.Count(out, "node unreachable"); n != 2 {
		t.Errorf("%d 'node unreachable' lines for two outages, want 2:\n%s", n, out)
	}
	if n := strings.Count(out, "node reachable again"); n != 1 {
		t.Errorf("%d 'node reachable again' lines, want 1:\n%s", n, out)
	}
	if got := p.errors.Load(); got != 6 {
		t.Errorf("errors = %d, want 6", got)
	}
}

// logBuffer collects a server's log lines, safely for its goroutines;
// the external tests use it as LogBuffer (export_test.go).
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger is a text logger writing to l.
func (l *logBuffer) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestHandshakeLoadingNode: a node loading its data answers PING with
// LOADING; the proxy's checked handshake takes it for up (its commands
// then answer LOADING, which clients retry), not for unreachable, which
// would answer CLUSTERDOWN for its slots until the load ends. Any other
// error to the PING still fails the handshake.
func TestHandshakeLoadingNode(t *testing.T) {
	for _, tc := range []struct {
		reply string
		ok    bool
	}{
		{"-LOADING Redis is loading the dataset in memory\r\n", true},
		{"+PONG\r\n", true},
		{"-ERR something else\r\n", false},
	} {
		s := proxyOverFake(t, func(c net.Conn) {
			defer c.Close()
			rd := resp.NewReader(c)
			for {
				if _, ok, err := rd.Next(); err != nil {
					return
				} else if ok {
					c.Write([]byte(tc.reply))
				} else if rd.Fill() != nil {
					return
				}
			}
		})
		nc, err := s.route.pool(0).handshake(context.Background(), 2, true)
		if (err == nil) != tc.ok {
			t.Errorf("PING answered %q: handshake error %v, want ok=%v", tc.reply, err, tc.ok)
		}
		if nc != nil {
			nc.Close()
		}
	}
}

// proxyOverFake starts a proxy over one fake node that hands each
// connection to serve (in its own goroutine); both stop with the test.
func proxyOverFake(t *testing.T, serve func(net.Conn)) *Server {
	t.Helper()
	ln := loopserve.Serve(t, serve)
	topo, err := NewStaticTopology([]string{ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Topology: topo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBatchHoldsRepliesWithinOutputLimit: replies are kept while the
// client's unwritten replies stay within its output limit; from the one
// that crosses it, replies are dropped as they arrive (not copied), so a
// pipeline of big reads costs the proxy the limit, not every reply.
func TestBatchHoldsRepliesWithinOutputLimit(t *testing.T) {
	b := newBatch(100)
	reqs := []*request{{b: b}, {b: b}, {b: b}, {b: b}}
	b.start(len(reqs), 30) // 30 bytes of earlier replies not yet written
	reply := []byte("$3\r\nabc\r\n")
	long := []byte("$55\r\n" + strings.Repeat("x", 55) + "\r\n") // 62 bytes
	reqs[0].complete(reply)                                      // 39
	reqs[1].complete(long)                                       // 101: over
	reqs[2].complete(reply)
	reqs[3].complete(reply)
	if string(reqs[0].reply) != string(reply) {
		t.Errorf("first reply = %q, want it kept", reqs[0].reply)
	}
	for i, r := range reqs[1:] {
		if len(r.reply) != 0 {
			t.Errorf("reply %d = %q, want it dropped past the limit", i+1, r.reply)
		}
	}
	if !b.over.Load() || b.held.Load() != 101 {
		t.Errorf("over = %v, held = %d; want true, 101", b.over.Load(), b.held.Load())
	}
	select {
	case <-b.done:
	default:
		t.Error("the batch is not done after its last reply")
	}
	// The next batch starts within the limit again; no limit keeps all.
	b.start(1, 0)
	reqs[0].complete(long)
	if b.over.Load() || len(reqs[0].reply) != len(long) {
		t.Errorf("after start: over = %v, reply %d bytes", b.over.Load(), len(reqs[0].reply))
	}
	unlimited := newBatch(0)
	unlimited.start(1, 1<<40)
	r := &request{b: unlimited}
	r.complete(long)
	if len(r.reply) != len(long) {
		t.Errorf("no limit: reply %d bytes, want %d", len(r.reply), len(long))
	}
}

// TestIdleDedicatedConnsClosedWithoutRelease: the idle dedicated
// connections unused for dedicatedIdleTime are closed down to
// dedicatedKeep when the watchdog looks (closeStaleLocked), not only when
// the next blocking command releases one: after a burst of blocking
// clients hundreds stayed open for minutes, counted by the node's
// maxclients.
func TestIdleDedicatedConnsClosedWithoutRelease(t *testing.T) {
	p := &nodePool{}
	now := time.Now()
	var peers []net.Conn
	for i := range 20 {
		a, b := net.Pipe()
		peers = append(peers, b)
		t.Cleanup(func() { a.Close(); b.Close() })
		since := now.Add(-dedicatedIdleTime - time.Second) // stale
		if i >= 15 {
			since = now // fresh
		}
		p.idle[0] = append(p.idle[0], &nodeConn{nc: a, proto: 2, idleSince: since})
	}
	p.mu.Lock()
	p.closeStaleLocked(now)
	p.mu.Unlock()
	if n := len(p.idle[0]); n != dedicatedKeep {
		t.Fatalf("%d idle connections left, want %d", n, dedicatedKeep)
	}
	closed := 0
	for _, b := range peers {
		b.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := b.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 20-dedicatedKeep {
		t.Fatalf("%d connections closed, want %d", closed, 20-dedicatedKeep)
	}
	for _, c := range p.idle[0][dedicatedKeep-5:] {
		if !c.idleSince.Equal(now) {
			t.Fatal("a fresh connection was closed before a stale one")
		}
	}
}

// TestAbandonResets: a connection abandoned to a silent node is reset,
// not closed gracefully, so that what the kernel still holds for the node
// is dropped rather than delivered when the network heals.
func TestAbandonResets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	abandon(rawio.Wrap(nc))
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = peer.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the node's side read %v, want a connection reset", err)
	}
}
