package proxy_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// Cluster mode: the proxy follows a cluster view (here a test source
// standing in for gossip) over standalone shardgate nodes, which serve
// whatever they are sent, so where a key lands shows the proxy's routing.

// viewEnv is n nodes, a source and a proxy following it.
type viewEnv struct {
	src   *proxytest.Source
	px    *proxy.Server
	addr  string // the proxy's
	nodes []string
	ids   []cluster.NodeID // the nodes' member ids: ID(1..n)
	self  cluster.NodeID   // the proxy's: ID(100)
}

func nodeMember(id cluster.NodeID, addr string, st cluster.State) cluster.Member {
	return cluster.Member{ID: id, Role: cluster.RoleNode, Addr: addr, State: st}
}

func proxyMember(id cluster.NodeID, addr string, st cluster.State) cluster.Member {
	return cluster.Member{ID: id, Role: cluster.RoleProxy, Addr: addr, State: st}
}

// startViewEnv starts n nodes and a proxy whose first view has them all
// alive, each owning a contiguous third (or so) of the slots at epoch 1.
func startViewEnv(t *testing.T, n int, opts proxy.Options) *viewEnv {
	t.Helper()
	e := &viewEnv{self: proxytest.ID(100)}
	var tab proxytest.Slots
	per := slots.Count / n
	for i := range n {
		_, addr, _ := nodetest.Start(t, node.Options{}, nil)
		e.nodes = append(e.nodes, addr)
		e.ids = append(e.ids, proxytest.ID(i+1))
		last := (i+1)*per - 1
		if i == n-1 {
			last = slots.Count - 1
		}
		tab.Assign(i*per, last, e.ids[i], 1)
	}
	e.src = proxytest.NewSource(e.view(&tab, nil))
	opts.Cluster = e.src
	e.px, e.addr, _ = proxytest.StartProxy(t, opts)
	return e
}

// view is the nodes (all alive unless states says otherwise, by index)
// and the proxy itself.
func (e *viewEnv) view(tab *proxytest.Slots, states map[int]cluster.State, extra ...cluster.Member) *cluster.View {
	ms := []cluster.Member{proxyMember(e.self, e.addr, cluster.StateAlive)}
	for i, a := range e.nodes {
		st, ok := states[i]
		if !ok {
			st = cluster.StateAlive
		}
		ms = append(ms, nodeMember(e.ids[i], a, st))
	}
	return proxytest.View(e.self, append(ms, extra...), tab)
}

// thirds is a table giving the first three nodes Redis Cluster's three
// ranges (0-5460, 5461-10921, 10922-16383) at epoch 1.
func (e *viewEnv) thirds() proxytest.Slots {
	var tab proxytest.Slots
	tab.Assign(0, 5460, e.ids[0], 1)
	tab.Assign(5461, 10921, e.ids[1], 1)
	tab.Assign(10922, 16383, e.ids[2], 1)
	return tab
}

// keyIn returns a key whose slot lies in [first, last].
func keyIn(prefix string, first, last int) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if s := int(slots.SlotString(k)); s >= first && s <= last {
			return k
		}
	}
}

// on reports whether key exists on the node at addr.
func on(t *testing.T, addr, key string) bool {
	t.Helper()
	c := dial(t, addr, 2)
	return do(t, c, "EXISTS", key).Int == 1
}

// waitEpoch waits until the proxy routes by a table of the given epoch.
func waitEpoch(t *testing.T, c *difftest.Conn, epoch int) {
	t.Helper()
	waitFor(t, fmt.Sprint("table epoch ", epoch), promptly, func() bool {
		return infoField(t, c, "cluster", "cluster_table_epoch") == strconv.Itoa(epoch)
	})
}

// TestClusterFollowsView: keys go where the view says; a slot range handed
// to another node at a higher epoch follows at once; a node that joins
// gets a backend, one that leaves has its backend retired.
func TestClusterFollowsView(t *testing.T) {
	e := startViewEnv(t, 3, proxy.Options{})
	c := dial(t, e.addr, 2)
	for i := range 60 {
		k := fmt.Sprint("key", i)
		do(t, c, "SET", k, "v")
		want := int(slots.SlotString(k)) / (slots.Count / 3)
		if want > 2 {
			want = 2
		}
		if !on(t, e.nodes[want], k) {
			t.Fatalf("%s (slot %d) is not on node %d", k, slots.SlotString(k), want)
		}
	}
	if v := do(t, c, "DBSIZE"); v.Int != 60 {
		t.Errorf("DBSIZE = %v", v)
	}
	if got := infoField(t, c, "cluster", "cluster_mode"); got != "gossip" {
		t.Errorf("cluster_mode %q", got)
	}

	// Node 0 hands slots 0-999 to node 2 (epoch 2); node 1 stays.
	var tab proxytest.Slots
	tab.Assign(0, 999, e.ids[2], 2)
	tab.Assign(1000, 5460, e.ids[0], 1)
	tab.Assign(5461, 10921, e.ids[1], 1)
	tab.Assign(10922, 16383, e.ids[2], 1)
	e.src.Set(e.view(&tab, nil))
	waitEpoch(t, c, 2)
	moved, stayed := keyIn("m", 0, 999), keyIn("s", 1000, 5460)
	do(t, c, "SET", moved, "x")
	do(t, c, "SET", stayed, "y")
	if !on(t, e.nodes[2], moved) || on(t, e.nodes[0], moved) {
		t.Errorf("a key of a handed-off slot did not go to the new owner")
	}
	if !on(t, e.nodes[0], stayed) {
		t.Errorf("a key of a kept slot left its owner")
	}

	// A fourth node joins and takes node 1's slots; node 1 leaves.
	_, n3, _ := nodetest.Start(t, node.Options{}, nil)
	id3 := proxytest.ID(4)
	tab.Assign(5461, 10921, id3, 3)
	ms := []cluster.Member{
		proxyMember(e.self, e.addr, cluster.StateAlive),
		nodeMember(e.ids[0], e.nodes[0], cluster.StateAlive),
		nodeMember(e.ids[2], e.nodes[2], cluster.StateAlive),
		nodeMember(id3, n3, cluster.StateAlive),
	}
	e.src.Set(proxytest.View(e.self, ms, &tab))
	waitEpoch(t, c, 3)
	k := keyIn("j", 5461, 10921)
	do(t, c, "SET", k, "z")
	if !on(t, n3, k) {
		t.Errorf("a key of the new node's slots is not on it")
	}
	nodes := do(t, c, "INFO", "nodes").Text()
	if !strings.Contains(nodes, "addr="+e.nodes[1]+",slots=,status=retired") {
		t.Errorf("the node that left is not retired:\n%s", nodes)
	}
	if !strings.Contains(nodes, "addr="+n3+",slots=5461-10921,status=up") {
		t.Errorf("the new node is not listed with its slots:\n%s", nodes)
	}
	// DBSIZE counts the members' keys only: the retired node's are not
	// the cluster's any more.
	want := do(t, dial(t, e.nodes[0], 2), "DBSIZE").Int + do(t, dial(t, e.nodes[2], 2), "DBSIZE").Int + 1
	if v := do(t, c, "DBSIZE"); v.Int != want {
		t.Errorf("DBSIZE = %v, want %d", v, want)
	}
	info := do(t, c, "INFO", "cluster").Text()
	for _, line := range []string{
		"cluster_members:4", "cluster_nodes:3", "cluster_nodes_alive:3", "cluster_proxies:1",
		"cluster_slots_assigned:16384", "cluster_slots_served:16384",
		fmt.Sprintf("member2:id=%s,role=node,addr=%s,state=alive,slots=5461-10921", id3, n3),
		fmt.Sprintf("member0:id=%s,role=node,addr=%s,state=alive,slots=1000-5460", e.ids[0], e.nodes[0]),
	} {
		if !strings.Contains(info, line+"\r\n") {
			t.Errorf("INFO cluster lacks %q:\n%s", line, info)
		}
	}
}

// TestClusterDeadNode: a node the view declares dead while the proxy
// still reaches it keeps being served (gossip's verdict can be wrong: a
// member cut off declares the others dead as it rejoins); once the proxy
// cannot reach it either, its slots answer CLUSTERDOWN at once, its
// blocked clients are woken with an error, the other slots keep working in
// the same pipelines; when it is alive again its slots are served again,
// data and all.
func TestClusterDeadNode(t *testing.T) {
	e := startViewEnv(t, 3, proxy.Options{})
	tab := e.thirds()
	// Node 1 is reached through a relay that can cut it off.
	direct := e.nodes[1]
	relay := proxytest.NewRelay(t, direct)
	e.nodes[1] = relay.Addr
	e.src.Set(e.view(&tab, nil))
	c := dial(t, e.addr, 2)
	keys := []string{keyIn("a", 0, 5000), keyIn("b", 5600, 10000), keyIn("c", 11000, 16383)}
	waitFor(t, "the node's slots to be served through the relay", promptly, func() bool {
		return do(t, c, "SET", keys[1], "v-"+keys[1]).Text() == "OK" && strings.Contains(do(t, c, "INFO", "nodes").Text(), "addr="+relay.Addr+",slots=5461-10921,status=up")
	})
	for _, k := range keys {
		do(t, c, "SET", k, "v-"+k)
	}
	blocked := dial(t, e.addr, 2)
	q := keyIn("q", 5600, 10000)
	send(t, blocked, "BLPOP", q, "0")
	got := receiveAsync(blocked)
	waitBlocked(t, direct, 1)

	// Declared dead, but it answers: still served, its blocked client
	// still blocked.
	e.src.Set(e.view(&tab, map[int]cluster.State{1: cluster.StateDead}))
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v := do(t, c, "GET", keys[1]); v.Text() != "v-"+keys[1] {
			t.Fatalf("GET on a node declared dead that answers: %v", v)
		}
	}
	select {
	case v := <-got:
		t.Fatalf("the blocked client got %v while its node answers", v)
	default:
	}

	// Now it is gone for the proxy too.
	relay.Cut()
	e.src.Set(e.view(&tab, map[int]cluster.State{1: cluster.StateDead}))
	if v := recvWithin(t, "the blocked client", got, promptly); !v.IsError() {
		t.Errorf("blocked on a dead node: %v, want an error", v)
	}
	waitFor(t, "the dead node's slots to answer CLUSTERDOWN", promptly, func() bool {
		return do(t, c, "GET", keys[1]).Text() == resp.ErrClusterDownSlot
	})
	if err := c.WriteRaw(pipeline(6, func(i int) []string { return []string{"GET", keys[i%3]} })); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if k := keys[i%3]; i%3 == 1 && v.Text() != resp.ErrClusterDownSlot || i%3 != 1 && v.Text() != "v-"+k {
			t.Errorf("pipelined GET %s: %v", k, v)
		}
	}
	timed(t, "blocking on a dead node's slot", promptly, func() {
		if v := do(t, c, "BLPOP", q, "0"); v.Text() != resp.ErrClusterDownSlot {
			t.Errorf("BLPOP on a dead node's slot: %v", v)
		}
	})
	if v, want := do(t, c, "DBSIZE"), fmt.Sprintf(resp.ErrClusterDownNode, relay.Addr); v.Text() != want {
		t.Errorf("DBSIZE with a node dead: %v, want %q", v, want)
	}
	// Down (the proxy's dial failed) until the view's verdict, checked
	// in the background, makes it dead.
	waitFor(t, "INFO nodes to show the node dead", promptly, func() bool {
		return strings.Contains(do(t, c, "INFO", "nodes").Text(), "addr="+e.nodes[1]+",slots=5461-10921,status=dead")
	})
	if got := infoField(t, c, "cluster", "cluster_slots_served"); got != strconv.Itoa(slots.Count-5461) {
		t.Errorf("cluster_slots_served %s", got)
	}

	if err := relay.Heal(); err != nil {
		t.Fatal(err)
	}
	e.src.Set(e.view(&tab, nil))
	waitFor(t, "the node's slots to be served again", promptly, func() bool {
		return do(t, c, "GET", keys[1]).Text() == "v-"+keys[1]
	})
	if v := do(t, c, "DBSIZE"); v.Int != 3 {
		t.Errorf("DBSIZE after recovery: %v", v)
	}
}

// TestClusterDeadNodeAnswersAgain: a node the proxy lost and the view then
// declared dead is served again as soon as it answers the proxy, without
// waiting for the view to say it is alive (a node killed and restarted
// within seconds may get its dead verdict after it is back).
func TestClusterDeadNodeAnswersAgain(t *testing.T) {
	e := startViewEnv(t, 3, proxy.Options{RedialBackoff: 20 * time.Millisecond})
	tab := e.thirds()
	relay := proxytest.NewRelay(t, e.nodes[1])
	e.nodes[1] = relay.Addr
	e.src.Set(e.view(&tab, nil))
	c := dial(t, e.addr, 2)
	k := keyIn("b", 5600, 10000)
	waitFor(t, "the node's slots to be served through the relay", promptly, func() bool {
		return do(t, c, "SET", k, "v").Text() == "OK"
	})
	relay.Cut()
	e.src.Set(e.view(&tab, map[int]cluster.State{1: cluster.StateDead}))
	waitFor(t, "INFO nodes to show the node dead", promptly, func() bool {
		do(t, c, "GET", k)
		return strings.Contains(do(t, c, "INFO", "nodes").Text(), "addr="+relay.Addr+",slots=5461-10921,status=dead")
	})
	if v := do(t, c, "GET", k); v.Text() != resp.ErrClusterDownSlot {
		t.Fatalf("GET on the dead node's slot: %v", v)
	}
	if err := relay.Heal(); err != nil {
		t.Fatal(err)
	}
	// The view still says dead.
	waitFor(t, "the node's slots to be served again", promptly, func() bool {
		return do(t, c, "GET", k).Text() == "v"
	})
	if !strings.Contains(do(t, c, "INFO", "nodes").Text(), "addr="+relay.Addr+",slots=5461-10921,status=up") {
		t.Errorf("INFO nodes once the dead node answers: %s", do(t, c, "INFO", "nodes").Text())
	}
}

// TestClusterUnassignedSlots: before any slot is assigned (a cluster not
// bootstrapped yet) every keyed command answers CLUSTERDOWN, keyless ones
// are answered as without nodes, and nothing hangs.
func TestClusterUnassignedSlots(t *testing.T) {
	self := proxytest.ID(100)
	var tab proxytest.Slots
	src := proxytest.NewSource(proxytest.View(self, []cluster.Member{proxyMember(self, "127.0.0.1:1", cluster.StateAlive)}, &tab))
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Cluster: src})
	c := dial(t, addr, 2)
	for _, args := range [][]string{
		{"GET", "k"}, {"SET", "k", "v"}, {"BLPOP", "q", "0"}, {"DBSIZE"}, {"FLUSHALL"}, {"KEYS", "*"}, {"RANDOMKEY"},
		{"SCAN", "0"}, {"EXEC"}, {"WATCH", "k"},
	} {
		timed(t, args[0], promptly, func() {
			v := do(t, c, args...)
			if args[0] == "EXEC" {
				return // no MULTI: its own error
			}
			if v.Text() != resp.ErrClusterDownSlot {
				t.Errorf("%q: %v", args, v)
			}
		})
	}
	// In a transaction the refusal comes as the command is queued, as on
	// a Redis Cluster node, and EXEC aborts.
	do(t, c, "MULTI")
	if v := do(t, c, "SET", "k", "v"); v.Text() != resp.ErrClusterDownSlot {
		t.Errorf("SET in MULTI: %v", v)
	}
	if v := do(t, c, "EXEC"); v.Text() != resp.ErrExecAbort {
		t.Errorf("EXEC: %v", v)
	}
	if v := do(t, c, "PING"); v.Text() != "PONG" {
		t.Errorf("PING: %v", v)
	}
}

// TestClusterEpochInMetrics: the metrics show the view's members and
// table epoch.
func TestClusterEpochInMetrics(t *testing.T) {
	e := startViewEnv(t, 2, proxy.Options{MetricsAddr: "127.0.0.1:0"})
	maddr := e.px.MetricsAddr().String()
	m := scrape(t, maddr)
	for k, v := range map[string]float64{
		`shardgate_proxy_cluster_epoch`:                               1,
		`shardgate_proxy_cluster_members{role="node",state="alive"}`:  2,
		`shardgate_proxy_cluster_members{role="proxy",state="alive"}`: 1,
		`shardgate_proxy_cluster_members{role="node",state="dead"}`:   0,
		`shardgate_proxy_redirects_total{kind="moved"}`:               0,
	} {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	var tab proxytest.Slots
	tab.Assign(0, 8191, e.ids[0], 1)
	tab.Assign(8192, 16383, e.ids[1], 7)
	e.src.Set(e.view(&tab, map[int]cluster.State{0: cluster.StateDead}))
	pollUntil(t, promptly, func() error {
		m := scrape(t, maddr)
		if m[`shardgate_proxy_cluster_epoch`] != 7 || m[`shardgate_proxy_cluster_members{role="node",state="dead"}`] != 1 {
			return fmt.Errorf("epoch %v dead %v", m[`shardgate_proxy_cluster_epoch`], m[`shardgate_proxy_cluster_members{role="node",state="dead"}`])
		}
		return nil
	})
	if _, ok := m[fmt.Sprintf(`shardgate_proxy_node_requests_total{node="%s"}`, e.nodes[1])]; !ok {
		t.Errorf("no request counter for a node met through the view")
	}
}

// TestClusterViewChurn: clients pipelining while the view keeps changing
// (ranges moving between nodes, nodes joining with new backends) get every
// reply, none an error, and in order; run it under -race.
func TestClusterViewChurn(t *testing.T) {
	e := startViewEnv(t, 2, proxy.Options{})
	var extra []string
	for range 3 {
		_, a, _ := nodetest.Start(t, node.Options{}, nil)
		extra = append(extra, a)
	}
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for epoch := uint64(2); ; epoch++ {
			select {
			case <-stop:
				return
			default:
			}
			// Members: the two first nodes and a growing share of the
			// others; the slots rotate over all of them.
			ms := []cluster.Member{proxyMember(e.self, e.addr, cluster.StateAlive)}
			var ids []cluster.NodeID
			addrs := append(append([]string{}, e.nodes...), extra[:int(epoch)%(len(extra)+1)]...)
			for i, a := range addrs {
				id := proxytest.ID(i + 1)
				ids = append(ids, id)
				ms = append(ms, nodeMember(id, a, cluster.StateAlive))
			}
			var tab proxytest.Slots
			per := slots.Count / len(ids)
			for i := range ids {
				last := (i+1)*per - 1
				if i == len(ids)-1 {
					last = slots.Count - 1
				}
				tab.Assign(i*per, last, ids[(i+int(epoch))%len(ids)], epoch)
			}
			e.src.Set(proxytest.View(e.self, ms, &tab))
			n++
			time.Sleep(2 * time.Millisecond)
		}
	}()
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			c, err := difftest.DialProto(e.addr, 2+w%2)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for round := range 30 {
				const n = 50
				b := pipeline(2*n, func(i int) []string {
					k := fmt.Sprintf("w%d:%d", w, i/2)
					if i%2 == 0 {
						return []string{"SET", k, fmt.Sprint(round)}
					}
					return []string{"ECHO", k}
				})
				if err := c.WriteRaw(b); err != nil {
					errs <- err
					return
				}
				for i := range 2 * n {
					v, err := c.Receive()
					if err != nil {
						errs <- err
						return
					}
					if i%2 == 0 && v.Text() != "OK" || i%2 == 1 && v.Text() != fmt.Sprintf("w%d:%d", w, i/2) {
						errs <- fmt.Errorf("client %d round %d reply %d: %v", w, round, i, v)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	if n := <-churned; n < 5 {
		t.Errorf("only %d views applied during the test", n)
	}
}

// TestClusterSlotlessNodeDown: a node that owns no slot (drained, or
// joined and not given any yet) holds no key a client can see, so while
// it cannot be reached — before and after the view says it is dead —
// whole-keyspace commands go on without it; with a slot it would fail them.
func TestClusterSlotlessNodeDown(t *testing.T) {
	e := startViewEnv(t, 4, proxy.Options{})
	tab := e.thirds()
	relay := proxytest.NewRelay(t, e.nodes[3])
	e.nodes[3] = relay.Addr
	e.src.Set(e.view(&tab, nil))
	c := dial(t, e.addr, 2)
	// The whole table applied: the last range too (INFO reads the slots
	// as they are being set).
	waitFor(t, "the slotless node in INFO nodes", promptly, func() bool {
		info := do(t, c, "INFO", "nodes").Text()
		return strings.Contains(info, "addr="+relay.Addr+",slots=,status=up") &&
			strings.Contains(info, "addr="+e.nodes[2]+",slots=10922-16383,")
	})
	keys := []string{keyIn("a", 0, 5000), keyIn("b", 5600, 10000), keyIn("c", 11000, 16383)}
	for _, k := range keys {
		do(t, c, "SET", k, "v")
	}
	check := func(when string) {
		t.Helper()
		if v := do(t, c, "DBSIZE"); v.Int != 3 {
			t.Errorf("DBSIZE %s: %v", when, v)
		}
		if v := do(t, c, "KEYS", "*"); len(v.Elems) != 3 {
			t.Errorf("KEYS * %s: %v", when, v)
		}
		if v := do(t, c, "RANDOMKEY"); v.Kind != difftest.Bulk {
			t.Errorf("RANDOMKEY %s: %v", when, v)
		}
	}
	check("with the slotless node up")
	relay.Cut()
	check("with the slotless node cut off")
	e.src.Set(e.view(&tab, map[int]cluster.State{3: cluster.StateDead}))
	// Dead and owning nothing, it is retired at once.
	waitFor(t, "INFO nodes to show the slotless node retired", promptly, func() bool {
		return strings.Contains(do(t, c, "INFO", "nodes").Text(), "addr="+relay.Addr+",slots=,status=retired")
	})
	check("with the slotless node dead")
	if v := do(t, c, "FLUSHALL"); v.Text() != "OK" {
		t.Errorf("FLUSHALL with the slotless node dead: %v", v)
	}
	if v := do(t, c, "DBSIZE"); v.Int != 0 {
		t.Errorf("DBSIZE after FLUSHALL: %v", v)
	}
}

// TestClusterOwnerWithoutAddress: a proxy that starts after a node died
// may learn the dead member's slots but never its address, so it has no
// backend to send them to. The commands that need every node must then
// refuse, as for a dead node it knows, not answer for the others' keys
// alone: a FLUSHALL that said OK kept that node's keys.
func TestClusterOwnerWithoutAddress(t *testing.T) {
	e := &viewEnv{self: proxytest.ID(100)}
	for i := range 3 {
		_, addr, _ := nodetest.Start(t, node.Options{}, nil)
		e.nodes = append(e.nodes, addr)
		e.ids = append(e.ids, proxytest.ID(i+1))
	}
	tab := e.thirds()
	live := e.nodes[1]
	e.nodes[1] = "" // known by id and slots only
	e.src = proxytest.NewSource(e.view(&tab, map[int]cluster.State{1: cluster.StateDead}))
	var addr string
	_, addr, _ = proxytest.StartProxy(t, proxy.Options{Cluster: e.src})
	c := dial(t, addr, 2)
	kept := keyIn("a", 0, 5000)
	if v := do(t, c, "SET", kept, "v"); v.Text() != "OK" {
		t.Fatalf("SET on a live node's slot: %v", v)
	}
	for _, args := range [][]string{{"INFO", "keyspace"}, {"DBSIZE"}, {"KEYS", "*"}, {"RANDOMKEY"}, {"FLUSHALL"}, {"FLUSHDB"}} {
		v := do(t, c, args...)
		if args[0] == "INFO" {
			// INFO answers, without a keyspace total it cannot know.
			if strings.Contains(v.Text(), "db0:keys=1,") {
				t.Errorf("INFO keyspace counts the live nodes' keys alone: %q", v.Text())
			}
			continue
		}
		if v.Text() != resp.ErrClusterDownSlot {
			t.Errorf("%q with an owner the proxy cannot reach: %v, want %q", args, v, resp.ErrClusterDownSlot)
		}
	}
	if !on(t, e.nodes[0], kept) {
		t.Errorf("FLUSHALL refused, yet the live node's key is gone")
	}
	// The address arrives: everything answers again.
	e.nodes[1] = live
	e.src.Set(e.view(&tab, nil))
	waitFor(t, "DBSIZE to answer", promptly, func() bool { return do(t, c, "DBSIZE").Int == 1 })
}
