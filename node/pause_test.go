package node_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestPausedClientKilledOrClosed: a client whose command a pause holds is
// let go when CLIENT KILL closes it (the held write never runs) and when
// the node closes, however long the pause.
func TestPausedClientKilledOrClosed(t *testing.T) {
	srv, addr, _ := nodetest.Start(t, node.Options{}, nil)
	a, b := dialDiff(t, addr), dialDiff(t, addr)
	a.DoStrings("SET", "k", "before")
	bID, _ := b.DoStrings("CLIENT", "ID")
	if v, _ := a.DoStrings("CLIENT", "PAUSE", "60000", "WRITE"); v.Text() != "OK" {
		t.Fatalf("CLIENT PAUSE: %v", v)
	}
	if err := b.Send([]byte("SET"), []byte("k"), []byte("held")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if v, _ := a.DoStrings("CLIENT", "KILL", "ID", strconv.FormatInt(bID.Int, 10)); v.Int != 1 {
		t.Fatalf("CLIENT KILL ID of the held client: %v, want 1", v)
	}
	b.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
	if v, err := b.Receive(); err == nil {
		t.Fatalf("killed while held: got %v, want the connection closed", v)
	}
	a.DoStrings("CLIENT", "UNPAUSE")
	if v, _ := a.DoStrings("GET", "k"); v.Text() != "before" {
		t.Fatalf("GET after the held SET's client was killed: %v, want before", v)
	}

	c := dialDiff(t, addr)
	a.DoStrings("CLIENT", "PAUSE", "60000", "ALL")
	if err := c.Send([]byte("PING")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s with a client held by a 60 s pause")
	}
}
