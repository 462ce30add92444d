package proxy

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestRefusalBeforeFirstSend: a node at its maxclients writes its refusal
// as soon as it accepts, and may do so before the proxy has sent anything
// on the new connection. The command that then finds the connection
// broken answers the node's maxclients error, not CLUSTERDOWN (the node is
// up; it is full). It used to answer CLUSTERDOWN, depending on timing.
func TestRefusalBeforeFirstSend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("-" + resp.ErrMaxClients + "\r\n"))
			c.Close()
		}
	}()
	topo, err := NewStaticTopology([]string{ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Topology: topo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
	r := &request{b: newBatch()}
	r.b.remaining.Store(1)
	if conn.send([]*request{r}, resp.AppendCommand(nil, [][]byte{[]byte("GET"), []byte("k")})) {
		t.Fatal("send on a broken connection succeeded")
	}
	if got := conn.failMsg(); got != resp.ErrMaxClients {
		t.Errorf("failMsg after a refusal before any send = %q, want %q", got, resp.ErrMaxClients)
	}
}

// TestFailureKind: the failures of one outage log once although their
// texts differ (a timeout's names the local port of each attempt).
func TestFailureKind(t *testing.T) {
	timeoutAt := func(port int) error {
		return &net.OpError{Op: "read", Net: "tcp",
			Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
			Addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001}, Err: os.ErrDeadlineExceeded}
	}
	refusedAt := func(port int) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
			Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	}
	for _, tc := range []struct {
		a, b error
		same bool
	}{
		{timeoutAt(40001), timeoutAt(40002), true},
		{errNotAnswering, timeoutAt(40002), true},
		{refusedAt(7001), refusedAt(7001), true},
		{timeoutAt(40001), refusedAt(7001), false},
		{errors.New("node refused the handshake: WRONGPASS"), refusedAt(7001), false},
	} {
		if got := failureKind(tc.a) == failureKind(tc.b); got != tc.same {
			t.Errorf("same failure(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
