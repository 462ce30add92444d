package proxy_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestCloseDrainsClients: Close stops reading commands but answers every
// command it has read: clients pipelining INCRs while the proxy stops get
// a reply for each INCR that ran (the counter on the node equals the
// replies received, in order), then the connection closes. An idle client
// and one blocked in BLPOP are disconnected at once, well within the
// grace period.
func TestCloseDrainsClients(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{ShutdownGrace: 20 * time.Second})
	const (
		clients = 4
		n       = 50000 // INCRs each, in one pipeline
	)
	idle := dial(t, cl.Addr, 2)
	do(t, idle, "PING")
	blocked := dial(t, cl.Addr, 2)
	if err := blocked.WriteRaw(pipeline(1, func(int) []string { return []string{"BLPOP", "shutdown:none", "0"} })); err != nil {
		t.Fatal(err)
	}
	var (
		conns []*difftest.Conn
		keys  []string
	)
	for i := range clients {
		conns = append(conns, dial(t, cl.Addr, 2))
		keys = append(keys, fmt.Sprint("shutdown:ctr:", i))
	}
	load := difftest.StartIncrPipelines(conns, keys, n)
	load.StopUnderLoad(t, cl.Stop, 10*time.Second, idle, blocked)
	// What ran is what was answered.
	for i, key := range keys {
		var count int64
		for _, addr := range cl.NodeAddrs {
			nc := dial(t, addr, 2)
			if v := do(t, nc, "GET", key); !isNull(v) {
				count, _ = strconv.ParseInt(v.Text(), 10, 64)
			}
		}
		if count != load.Got[i] {
			t.Errorf("client %d: the node ran %d INCRs, the client got %d replies", i, count, load.Got[i])
		}
		if count == 0 || count == n {
			t.Logf("client %d: %d of %d INCRs ran before the stop", i, count, n)
		}
	}
}

// TestCloseAbandonsPipelineAfterGrace: a client that pipelines many big
// GETs and never reads its replies holds Close for the grace period, not
// until its pipeline has run: once the grace is over it runs none of its
// buffered commands.
func TestCloseAbandonsPipelineAfterGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	cl := proxytest.Start(t, 1, proxy.Options{ShutdownGrace: grace})
	c := dial(t, cl.Addr, 2)
	do(t, c, "SET", "big", strings.Repeat("v", 64<<10))
	if err := c.WriteRaw(pipeline(20000, func(int) []string { return []string{"GET", "big"} })); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the pipeline is being served
	start := time.Now()
	cl.Stop()
	if d := time.Since(start); d > grace+2*time.Second {
		t.Errorf("Close took %v with a client not reading its replies (grace %v)", d, grace)
	}
}

// TestCloseLetsGoOfPausedClients: a client whose command a CLIENT PAUSE
// holds is let go as the proxy stops (its command will not run), not
// after the shutdown grace, as Redis and the node close such clients at
// once.
func TestCloseLetsGoOfPausedClients(t *testing.T) {
	cl := proxytest.Start(t, 1, proxy.Options{ShutdownGrace: 20 * time.Second})
	admin, held := dial(t, cl.Addr, 2), dial(t, cl.Addr, 2)
	do(t, admin, "CLIENT", "PAUSE", "100000", "WRITE")
	if err := held.WriteRaw(pipeline(1, func(int) []string { return []string{"SET", "paused:k", "v"} })); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the SET to be held", promptly, func() bool {
		return strings.Contains(do(t, admin, "CLIENT", "LIST").Text(), "cmd=set")
	})
	start := time.Now()
	cl.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v with a client held by a pause", d)
	}
}
