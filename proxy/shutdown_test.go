package proxy_test

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
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
		wg      sync.WaitGroup
		started sync.WaitGroup
		got     [clients]int
		errs    = make(chan error, clients)
	)
	started.Add(clients)
	for i := range clients {
		c := dial(t, cl.Addr, 2)
		key := fmt.Sprint("shutdown:ctr:", i)
		wg.Go(func() {
			once := sync.OnceFunc(started.Done)
			defer once()
			// Written from its own goroutine: the proxy stops reading
			// mid-pipeline, and the rest may never fit the socket.
			go c.WriteRaw(pipeline(n, func(int) []string { return []string{"INCR", key} }))
			for {
				v, err := c.Receive()
				if err != nil {
					return // the proxy closed the connection
				}
				once()
				if v.Kind != difftest.Integer || v.Int != int64(got[i]+1) {
					errs <- fmt.Errorf("client %d reply %d: %v", i, got[i]+1, v)
					return
				}
				got[i]++
			}
		})
	}
	started.Wait() // every client has had a reply: its pipeline is being served
	start := time.Now()
	cl.Stop()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v with a blocked and an idle client", d)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, c := range []*difftest.Conn{idle, blocked} {
		if v, err := c.Receive(); err != io.EOF {
			t.Errorf("idle or blocked client after Close: %v %v, want EOF", v, err)
		}
	}
	// What ran is what was answered.
	for i := range clients {
		key := fmt.Sprint("shutdown:ctr:", i)
		var count int
		for _, addr := range cl.NodeAddrs {
			nc := dial(t, addr, 2)
			if v := do(t, nc, "GET", key); !isNull(v) {
				count, _ = strconv.Atoi(v.Text())
			}
		}
		if count != got[i] {
			t.Errorf("client %d: the node ran %d INCRs, the client got %d replies", i, count, got[i])
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
