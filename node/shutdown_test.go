package node_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestCloseDrainsClients: Close stops reading commands but answers every
// command it has run: clients pipelining INCRs while the node stops get a
// reply for each INCR that ran (the counter, read from the data directory
// by a node started on it, equals the replies received, in order), then
// the connection closes. An idle client and one blocked in BLPOP are
// disconnected at once, well within the grace period.
func TestCloseDrainsClients(t *testing.T) {
	dir := t.TempDir()
	opts := node.Options{ShutdownGrace: 20 * time.Second, AOF: &node.AOFOptions{Dir: dir, Policy: aof.No}}
	_, addr, stop := nodetest.Start(t, opts, nil)
	const (
		clients = 4
		n       = 50000 // INCRs each, in one pipeline
	)
	idle := dial(t, addr, 2)
	if v, err := idle.DoStrings("PING"); err != nil || v.Text() != "PONG" {
		t.Fatalf("PING: %v %v", v, err)
	}
	blocked := dial(t, addr, 2)
	if err := blocked.WriteRaw(difftest.AppendCommand(nil, []byte("BLPOP"), []byte("shutdown:none"), []byte("0"))); err != nil {
		t.Fatal(err)
	}
	var (
		conns []*difftest.Conn
		keys  []string
	)
	for i := range clients {
		conns = append(conns, dial(t, addr, 2))
		keys = append(keys, fmt.Sprint("shutdown:ctr:", i))
	}
	load := difftest.StartIncrPipelines(conns, keys, n)
	load.StopUnderLoad(t, stop, 10*time.Second, idle, blocked)
	// What ran is what was answered: the log holds every INCR that ran.
	_, addr, _ = nodetest.Start(t, opts, nil)
	c := dial(t, addr, 2)
	for i, key := range keys {
		v, err := c.DoStrings("GET", key)
		if err != nil {
			t.Fatal(err)
		}
		var count int64
		if v.Kind != difftest.NullBulk {
			fmt.Sscan(v.Text(), &count)
		}
		if count != load.Got[i] {
			t.Errorf("client %d: the node ran %d INCRs, the client got %d replies", i, count, load.Got[i])
		}
	}
}

// TestCloseKeepsPushedElements: elements pushed while the node stops, with
// clients waiting in BLPOP, are each either received by a waiter or still
// in the list when the node comes back from its log: a waiter served as
// Close lets it go gets its element before the connection closes.
func TestCloseKeepsPushedElements(t *testing.T) {
	for round := range 10 {
		dir := t.TempDir()
		opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.No}}
		_, addr, stop := nodetest.Start(t, opts, nil)
		var (
			mu       sync.Mutex
			acked    []string
			received = map[string]bool{}
			wg       sync.WaitGroup
		)
		for range 20 {
			c := dial(t, addr, 2)
			wg.Go(func() {
				for {
					v, err := c.DoStrings("BLPOP", "{k}", "0")
					if err != nil {
						return
					}
					if len(v.Elems) != 2 {
						t.Errorf("BLPOP: %v", v)
						return
					}
					mu.Lock()
					received[v.Elems[1].Text()] = true
					mu.Unlock()
				}
			})
		}
		for p := range 3 {
			c := dial(t, addr, 2)
			wg.Go(func() {
				for i := 0; ; i++ {
					e := fmt.Sprintf("p%d-%d", p, i)
					if v, err := c.DoStrings("RPUSH", "{k}", e); err != nil || v.Kind != difftest.Integer {
						return
					}
					mu.Lock()
					acked = append(acked, e)
					mu.Unlock()
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		stop()
		wg.Wait()
		_, addr, _ = nodetest.Start(t, opts, nil)
		left, err := dial(t, addr, 2).DoStrings("LRANGE", "{k}", "0", "-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left.Elems {
			received[e.Text()] = true
		}
		for _, e := range acked {
			if !received[e] {
				t.Errorf("round %d: %s was pushed (acknowledged) but neither received nor left in the list", round, e)
			}
		}
	}
}
