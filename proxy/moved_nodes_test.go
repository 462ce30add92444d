package proxy_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// Shardgate nodes as the authority: the nodes' ownership moves ahead of
// the proxy's view (gossip not there yet), the old owner answers MOVED and
// the proxy follows.

// ownerTable is the slot owners (RESP addresses) the test's nodes agree
// on, changed by the test.
type ownerTable struct {
	mu    sync.Mutex
	owner [slots.Count]string
	ch    chan struct{}
}

func (t *ownerTable) set(first, last int, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := first; s <= last; s++ {
		t.owner[s] = addr
	}
	close(t.ch)
	t.ch = make(chan struct{})
}

// nodeOwnership is one node's node.Ownership over the shared table.
type nodeOwnership struct {
	t    *ownerTable
	self string
}

func (o *nodeOwnership) Slot(slot uint16) (bool, string) {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	a := o.t.owner[slot]
	return a == o.self, a
}

func (o *nodeOwnership) Layout() *clusterfmt.Layout {
	host, port, _ := clusterfmt.SplitHostPort(o.self)
	return clusterfmt.Single(string(proxytest.ID(1)), host, port, 0)
}

func (o *nodeOwnership) Changes() <-chan struct{} {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	return o.t.ch
}

// TestMovedByShardgateNodes: commands, pipelines, a transaction and a
// blocked pop follow slots that the nodes moved before the proxy's view
// knew; once the view catches up nothing is redirected any more.
func TestMovedByShardgateNodes(t *testing.T) {
	tab := &ownerTable{ch: make(chan struct{})}
	var addrs []string
	for range 2 {
		addrs = append(addrs, freeAddr(t))
	}
	tab.set(0, 8191, addrs[0])
	tab.set(8192, slots.Count-1, addrs[1])
	for _, a := range addrs {
		proxytest.StartNodeAt(t, a, node.Options{Ownership: &nodeOwnership{t: tab, self: a}})
	}
	self := proxytest.ID(100)
	members := func() []cluster.Member {
		return []cluster.Member{
			proxyMember(self, "127.0.0.1:7379", cluster.StateAlive),
			nodeMember(proxytest.ID(1), addrs[0], cluster.StateAlive),
			nodeMember(proxytest.ID(2), addrs[1], cluster.StateAlive),
		}
	}
	var vt proxytest.Slots
	vt.Assign(0, 8191, proxytest.ID(1), 1)
	vt.Assign(8192, slots.Count-1, proxytest.ID(2), 1)
	src := proxytest.NewSource(proxytest.View(self, members(), &vt))
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Cluster: src})
	c := dial(t, addr, 2)

	// A client blocks on slot range 100-199 of node 0.
	q := keyIn("q", 100, 199)
	blocked := dial(t, addr, 3)
	send(t, blocked, "BLPOP", q, "0")
	got := receiveAsync(blocked)
	waitBlocked(t, addrs[0], 1)

	// The nodes move 0-199 to node 1; the view does not know.
	tab.set(0, 199, addrs[1])
	k := keyIn("k", 0, 99)
	b := pipeline(4, func(i int) []string {
		return [][]string{{"SET", k, "1"}, {"INCR", k}, {"SET", "far", "x"}, {"GET", k}}[i]
	})
	if err := c.WriteRaw(b); err != nil {
		t.Fatal(err)
	}
	for i, exp := range []difftest.Value{difftest.Simple("OK"), difftest.Int(2), difftest.Simple("OK"), difftest.BulkOf("2")} {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		want(t, fmt.Sprint("pipelined reply ", i), v, exp)
	}
	if !on(t, addrs[1], k) {
		t.Errorf("%s is not on its new owner", k)
	}
	// The blocked pop was redirected by node 0 and blocks on node 1 now:
	// a push (itself redirected) serves it.
	waitBlocked(t, addrs[1], 1)
	do(t, c, "RPUSH", q, "e")
	want(t, "BLPOP moved while blocked", recvWithin(t, "BLPOP", got, promptly), arr(q, "e"))

	// A transaction on another moved slot.
	tx := keyIn("t", 150, 199)
	do(t, c, "MULTI")
	do(t, c, "SET", tx, "a")
	do(t, c, "APPEND", tx, "b")
	want(t, "EXEC on a moved slot", do(t, c, "EXEC"), difftest.ArrayOf(difftest.Simple("OK"), difftest.Int(2)))

	moved := redirects(t, c, "moved")
	if moved == 0 {
		t.Fatal("nothing was redirected: the test proves nothing")
	}
	// The view catches up (epoch 2): the learned owners stand, nothing
	// is redirected any more.
	vt.Assign(0, 199, proxytest.ID(2), 2)
	src.Set(proxytest.View(self, members(), &vt))
	waitEpoch(t, c, 2)
	for i := range 50 {
		key := keyIn(fmt.Sprint("z", i, ":"), 0, 199)
		do(t, c, "SET", key, "v")
		if !on(t, addrs[1], key) {
			t.Fatalf("%s is not on node 1", key)
		}
	}
	if got := redirects(t, c, "moved"); got != moved {
		t.Errorf("%d more redirections after the view caught up", got-moved)
	}
}

// TestSlotCommandsFollowMovedSlot: SCAN and CLUSTER COUNTKEYSINSLOT /
// GETKEYSINSLOT name a slot but no key; when the nodes have moved the
// slot ahead of the proxy's view, the old owner redirects them too, so
// they read the slot where its keys are rather than the old owner's
// nothing.
func TestSlotCommandsFollowMovedSlot(t *testing.T) {
	tab := &ownerTable{ch: make(chan struct{})}
	addrs := []string{freeAddr(t), freeAddr(t)}
	tab.set(0, 8191, addrs[0])
	tab.set(8192, slots.Count-1, addrs[1])
	for _, a := range addrs {
		proxytest.StartNodeAt(t, a, node.Options{Ownership: &nodeOwnership{t: tab, self: a}})
	}
	self := proxytest.ID(100)
	var vt proxytest.Slots
	vt.Assign(0, 8191, proxytest.ID(1), 1)
	vt.Assign(8192, slots.Count-1, proxytest.ID(2), 1)
	src := proxytest.NewSource(proxytest.View(self, []cluster.Member{
		proxyMember(self, "127.0.0.1:7379", cluster.StateAlive),
		nodeMember(proxytest.ID(1), addrs[0], cluster.StateAlive),
		nodeMember(proxytest.ID(2), addrs[1], cluster.StateAlive),
	}, &vt))
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Cluster: src})
	c := dial(t, addr, 2)

	// The nodes give slots 300-399 to node 1, which gets keys there; the
	// proxy's view still has them on node 0.
	tab.set(300, 399, addrs[1])
	direct := dial(t, addrs[1], 2)
	const moved = 40
	wantKeys := map[string]bool{}
	for i := range moved {
		k := keyIn(fmt.Sprintf("m:%d:", i), 300, 399)
		do(t, direct, "SET", k, "v")
		wantKeys[k] = true
	}
	for i := range 20 {
		k := fmt.Sprint("other:", i)
		do(t, c, "SET", k, "v")
		wantKeys[k] = true
	}
	// Cover every key's slot: any slot of 300-399 holds some.
	slotOf := map[int]int{}
	for k := range wantKeys {
		if s := int(slots.SlotString(k)); s >= 300 && s <= 399 {
			slotOf[s]++
		}
	}
	for s, n := range slotOf {
		want(t, fmt.Sprint("CLUSTER COUNTKEYSINSLOT ", s), do(t, c, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(s)), difftest.Int(int64(n)))
		if v := do(t, c, "CLUSTER", "GETKEYSINSLOT", fmt.Sprint(s), "100"); len(v.Elems) != n {
			t.Errorf("CLUSTER GETKEYSINSLOT %d: %v, want %d keys", s, v, n)
		}
	}
	seen := map[string]int{}
	cursor := "0"
	for {
		v := do(t, c, "SCAN", cursor, "COUNT", "7")
		for _, k := range v.Elems[1].Elems {
			seen[k.Text()]++
		}
		if cursor = v.Elems[0].Text(); cursor == "0" {
			break
		}
	}
	for k := range wantKeys {
		if seen[k] != 1 {
			t.Errorf("SCAN returned %s %d times", k, seen[k])
		}
	}
	if len(seen) != len(wantKeys) {
		t.Errorf("SCAN returned %d keys, want %d", len(seen), len(wantKeys))
	}
}
