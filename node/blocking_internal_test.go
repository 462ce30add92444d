package node

import (
	"log/slog"
	"net"
	"testing"

	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// TestWaiterPublishedWhenCounted: the waiter a blocking command registers
// is on its client (where CLIENT UNBLOCK and CLIENT LIST look) by the
// time blocked_clients counts it, not only once the client's goroutine
// reaches wait: both happen under the shard lock.
func TestWaiterPublishedWhenCounted(t *testing.T) {
	s, err := New(Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newClient(s, a)

	check := func(name string, w *waiter) {
		t.Helper()
		if w == nil {
			t.Fatalf("%s on an empty key registered no waiter", name)
		}
		if got := c.blocked.Load(); got != w {
			t.Errorf("%s: blocked_clients is %d but the client's waiter is %p, want %p", name, s.blk.blocked.Load(), got, w)
		}
		s.blk.finish(w, waitGone)
		s.unlinkLocked(w)
		c.blocked.Store(nil)
	}

	key := []byte("nolist")
	sh := s.ks.Shard(slots.Slot(key))
	check("BLPOP", s.serveOrRegister(c, sh, &blockReq{op: opPop, keys: [][]byte{key}, front: true}))

	args := [][]byte{[]byte("XREAD"), []byte("BLOCK"), []byte("0"), []byte("STREAMS"), []byte("nostream"), []byte("$")}
	req, errText := engine.ParseXRead(args, false)
	if errText != "" {
		t.Fatal(errText)
	}
	check("XREAD", s.xreadOrRegister(c, s.ks.Shard(slots.Slot(args[4])), &req, args))
}
