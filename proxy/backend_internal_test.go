package proxy

import (
	"log/slog"
	"net"
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
