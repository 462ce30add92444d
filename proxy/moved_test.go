package proxy_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// Redirections: a proxy whose static node list is in the wrong order in
// front of a real Redis Cluster gets MOVED for every slot it has not
// learned yet, and must follow them transparently.

// wrongProxy starts a proxy over the shared Redis Cluster's masters listed
// in rotated order, so that every slot's first command goes to the wrong
// master.
func wrongProxy(t *testing.T) (*difftest.RedisCluster, *proxy.Server, string) {
	t.Helper()
	rc := sharedCluster(t)
	addrs := rc.Addrs()
	rotated := append(append([]string{}, addrs[1:]...), addrs[0])
	topo, err := proxy.NewStaticTopology(rotated)
	if err != nil {
		t.Fatal(err)
	}
	px, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo})
	return rc, px, addr
}

// rightProxy starts a proxy over the shared Redis Cluster's masters in
// their own order: each slot goes to its owner at once.
func rightProxy(t *testing.T) (*difftest.RedisCluster, *proxy.Server, string) {
	t.Helper()
	rc := sharedCluster(t)
	topo, err := proxy.NewStaticTopology(rc.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	px, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo})
	return rc, px, addr
}

func redirects(t *testing.T, c *difftest.Conn, kind string) int {
	t.Helper()
	n, err := strconv.Atoi(infoField(t, c, "cluster", "redirects_"+kind))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMovedPipelineFollowed: a pipeline of SETs and GETs over many slots,
// every one of them on the wrong master at first, answers as one Redis
// would, in order; the proxy learns each slot's owner, so a second pass
// is not redirected at all.
func TestMovedPipelineFollowed(t *testing.T) {
	rc, px, addr := wrongProxy(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			c := dial(t, addr, proto)
			do(t, c, "FLUSHALL")
			const n = 300
			key := func(i int) string { return fmt.Sprintf("k%d:%d", proto, i) }
			b := pipeline(2*n, func(i int) []string {
				if i%2 == 0 {
					return []string{"SET", key(i / 2), fmt.Sprint("v", i/2)}
				}
				return []string{"GET", key(i / 2)}
			})
			if err := c.WriteRaw(b); err != nil {
				t.Fatal(err)
			}
			for i := range 2 * n {
				v, err := c.Receive()
				if err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 && v.Text() != "OK" || i%2 == 1 && v.Text() != fmt.Sprint("v", i/2) {
					t.Fatalf("reply %d = %v", i, v)
				}
			}
			moved := redirects(t, c, "moved")
			if proto == 2 && moved == 0 {
				t.Fatal("no MOVED followed: the test proves nothing")
			}
			// Every key sits on the master Redis says owns it.
			for i := 0; i < n; i += 37 {
				k := key(i)
				if v := do(t, rc.NodeForKey(k).Conn(t, 2), "GET", k); v.Text() != fmt.Sprint("v", i) {
					t.Errorf("%s on its owner: %v", k, v)
				}
			}
			// Learned: the same keys again go straight to their owners.
			for i := range n {
				if v := do(t, c, "GET", key(i)); v.Text() != fmt.Sprint("v", i) {
					t.Fatalf("GET %s: %v", key(i), v)
				}
			}
			if got := redirects(t, c, "moved"); got != moved {
				t.Errorf("second pass followed %d more MOVED", got-moved)
			}
			topo := px.Topology()
			for i := 0; i < n; i += 41 {
				sl := slots.SlotString(key(i))
				if got := topo.Nodes()[topo.Owner(sl)].Addr; got != rc.NodeForSlot(sl).Addr {
					t.Errorf("slot %d cached at %s, owner %s", sl, got, rc.NodeForSlot(sl).Addr)
				}
			}
			if redirects(t, c, "exhausted") != 0 {
				t.Error("redirections exhausted")
			}
		})
	}
}

// TestMovedTransactionsAndBlocking: MULTI ... EXEC sent whole is resent
// whole to the new owner; WATCH follows the slot; a blocking command is
// sent again to the new owner and served there.
func TestMovedTransactionsAndBlocking(t *testing.T) {
	_, _, addr := wrongProxy(t)
	c := dial(t, addr, 2)

	// A transaction on a slot the proxy has not learned.
	do(t, c, "MULTI")
	do(t, c, "SET", "{tx}a", "1")
	do(t, c, "INCR", "{tx}b")
	want(t, "EXEC on a moved slot", do(t, c, "EXEC"), difftest.ArrayOf(difftest.Simple("OK"), difftest.Int(1)))
	want(t, "GET {tx}a", do(t, c, "GET", "{tx}a"), difftest.BulkOf("1"))

	// A pipelined transaction between plain commands of other slots.
	b := pipeline(7, func(i int) []string {
		return [][]string{
			{"SET", "{p1}x", "1"}, {"MULTI"}, {"INCR", "{tx2}n"}, {"INCR", "{tx2}n"}, {"EXEC"}, {"GET", "{p1}x"}, {"GET", "{tx2}n"},
		}[i]
	})
	if err := c.WriteRaw(b); err != nil {
		t.Fatal(err)
	}
	for i, exp := range []difftest.Value{
		difftest.Simple("OK"), difftest.Simple("OK"), difftest.Simple("QUEUED"), difftest.Simple("QUEUED"),
		difftest.ArrayOf(difftest.Int(1), difftest.Int(2)), difftest.BulkOf("1"), difftest.BulkOf("2"),
	} {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		want(t, fmt.Sprint("pipelined reply ", i), v, exp)
	}

	// WATCH on a slot not learned yet: the WATCH goes to the owner, and
	// the transaction runs there.
	do(t, c, "WATCH", "{w}k")
	do(t, c, "MULTI")
	do(t, c, "SET", "{w}k", "x")
	want(t, "EXEC after WATCH on a moved slot", do(t, c, "EXEC"), difftest.ArrayOf(difftest.Simple("OK")))

	// A blocking pop on a slot not learned yet, served by a push.
	other := dial(t, addr, 2)
	send(t, c, "BLPOP", "{bl}q", "5")
	got := receiveAsync(c)
	time.Sleep(100 * time.Millisecond)
	do(t, other, "RPUSH", "{bl}q", "e")
	want(t, "BLPOP on a moved slot", recvWithin(t, "BLPOP", got, promptly), arr("{bl}q", "e"))
	// The fast path found the element: push first, then pop on another
	// unlearned slot.
	do(t, other, "RPUSH", "{bl2}q", "f")
	want(t, "BLPOP with an element", do(t, c, "BLPOP", "{bl2}q", "5"), arr("{bl2}q", "f"))
}

// TestAskFollowedOnce: a slot being migrated answers ASK for a key the
// source no longer has; the proxy sends ASKING and the command to the
// target once, without changing its table.
func TestAskFollowedOnce(t *testing.T) {
	rc, px, addr := rightProxy(t)
	const key = "askme"
	sl := slots.SlotString(key)
	src, sc, dc := migrateSlot(t, rc, sl)
	c := dial(t, addr, 2)
	want(t, "SET during migration", do(t, c, "SET", key, "moved-in"), difftest.Simple("OK"))
	do(t, dc, "ASKING")
	want(t, "the key on the target", do(t, dc, "GET", key), difftest.BulkOf("moved-in"))
	if v := do(t, sc, "EXISTS", key); v.Int != 0 {
		t.Errorf("the key is on the source too")
	}
	want(t, "GET during migration", do(t, c, "GET", key), difftest.BulkOf("moved-in"))
	if redirects(t, c, "ask") < 2 || redirects(t, c, "moved") != 0 {
		t.Errorf("redirects: ask %d moved %d", redirects(t, c, "ask"), redirects(t, c, "moved"))
	}
	tp := px.Topology()
	if got := tp.Nodes()[tp.Owner(sl)].Addr; got != src.Addr {
		t.Errorf("ASK changed the table: slot %d at %s", sl, got)
	}
}

// redirector is a fake node answering each command with reply(n, args),
// n counting the commands it was sent.
func redirector(t *testing.T, reply func(n int, args [][]byte) string) (string, *atomic.Int64) {
	t.Helper()
	var count atomic.Int64
	addr := fakeNode(t, func(nc net.Conn) {
		serveCommands(nc, func(args [][]byte) string { return reply(int(count.Add(1)), args) })
	})
	return addr, &count
}

// TestMovedHopsBounded: two nodes that send each other's clients away
// forever: the command ends with the last MOVED after a bounded number of
// hops, and other commands in the same pipeline are not held up by it.
func TestMovedHopsBounded(t *testing.T) {
	var a, b string
	a, na := redirector(t, func(_ int, args [][]byte) string {
		if strings.EqualFold(string(args[0]), "get") && string(args[1]) == "pingpong" {
			return fmt.Sprintf("-MOVED %d %s\r\n", slots.SlotString("pingpong"), b)
		}
		return "+fine\r\n"
	})
	b, nb := redirector(t, func(_ int, args [][]byte) string {
		return fmt.Sprintf("-MOVED %d %s\r\n", slots.SlotString("pingpong"), a)
	})
	topo, err := proxy.NewStaticTopology([]string{a})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo})
	c := dial(t, addr, 2)
	if err := c.WriteRaw(pipeline(3, func(i int) []string { return [][]string{{"GET", "x"}, {"GET", "pingpong"}, {"GET", "y"}}[i] })); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.Text())
	}
	if got[0] != "fine" || got[2] != "fine" || !strings.HasPrefix(got[1], "MOVED ") {
		t.Errorf("replies %q", got)
	}
	// 1 first try + 16 hops, alternating.
	if sent := na.Load() + nb.Load() - 2; sent != 17 {
		t.Errorf("GET pingpong sent %d times, want 17", sent)
	}
	if redirects(t, c, "exhausted") != 1 {
		t.Errorf("exhausted = %d", redirects(t, c, "exhausted"))
	}
}

// TestTryAgainRetried: TRYAGAIN is retried on the same node after a
// backoff; a node that keeps answering it has the client see it in the
// end (when the redirect budget is spent: migration_redirect_test.go).
func TestTryAgainRetried(t *testing.T) {
	node, count := redirector(t, func(n int, args [][]byte) string {
		if string(args[1]) == "busy" || n <= 2 {
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
		}
		return "+OK\r\n"
	})
	topo, err := proxy.NewStaticTopology([]string{node})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, RedirectTimeout: 200 * time.Millisecond})
	c := dial(t, addr, 2)
	want(t, "SET after two TRYAGAIN", do(t, c, "SET", "k", "v"), difftest.Simple("OK"))
	if count.Load() != 3 {
		t.Errorf("sent %d times, want 3", count.Load())
	}
	if v := do(t, c, "SET", "busy", "v"); !strings.HasPrefix(v.Text(), "TRYAGAIN") {
		t.Errorf("always busy: %v", v)
	}
	// Two for k; busy is retried a few times within 200ms.
	if n := redirects(t, c, "tryagain"); n < 2+2 {
		t.Errorf("tryagain = %d", n)
	}
}

// TestRedirectsStopWhenClientGone: a command the node keeps answering
// TRYAGAIN is not resent once its client has closed the connection. A
// client that timed out sends it again elsewhere (go-redis does after its
// 3 s read timeout); resending the first copy until the fence lifts would
// run it twice.
func TestRedirectsStopWhenClientGone(t *testing.T) {
	node, count := redirector(t, func(_ int, args [][]byte) string {
		if len(args) > 1 && string(args[1]) == "busy" {
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
		}
		return "+OK\r\n"
	})
	topo, err := proxy.NewStaticTopology([]string{node})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, RedirectTimeout: 20 * time.Second})
	c := dial(t, addr, 2)
	if err := c.WriteRaw(pipeline(1, func(int) []string { return []string{"INCR", "busy"} })); err != nil {
		t.Fatal(err)
	}
	// Several resends, then the client gives up.
	deadline := time.Now().Add(promptly)
	for count.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("INCR busy sent %d times, want the proxy to keep resending", count.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Close()
	// The resend waiting out its backoff (at most 200 ms) may still go.
	time.Sleep(400 * time.Millisecond)
	after := count.Load()
	time.Sleep(time.Second)
	if n := count.Load(); n != after {
		t.Errorf("INCR busy sent %d more times after the client left", n-after)
	}
	// The proxy still serves others.
	want(t, "SET from another client", do(t, dial(t, addr, 2), "SET", "k", "v"), difftest.Simple("OK"))
}

// migrateSlot marks slot as migrating from its owner to another master
// of rc (importing there), until the test ends, and returns the owner and
// connections to it and to the target.
func migrateSlot(t *testing.T, rc *difftest.RedisCluster, slot uint16) (src *difftest.ClusterNode, sc, dc *difftest.Conn) {
	t.Helper()
	src = rc.NodeForSlot(slot)
	dst := otherNode(rc, src)
	sc, dc = src.Conn(t, 2), dst.Conn(t, 2)
	ss := strconv.Itoa(int(slot))
	if v := do(t, dc, "CLUSTER", "SETSLOT", ss, "IMPORTING", src.ID); v.IsError() {
		t.Fatal(v)
	}
	t.Cleanup(func() {
		dc.DoStrings("CLUSTER", "SETSLOT", ss, "STABLE")
		sc.DoStrings("CLUSTER", "SETSLOT", ss, "STABLE")
		dc.DoStrings("FLUSHALL")
	})
	if v := do(t, sc, "CLUSTER", "SETSLOT", ss, "MIGRATING", dst.ID); v.IsError() {
		t.Fatal(v)
	}
	return src, sc, dc
}

// otherNode returns a master of rc other than n.
func otherNode(rc *difftest.RedisCluster, n *difftest.ClusterNode) *difftest.ClusterNode {
	for i := range rc.Nodes {
		if rc.Nodes[i].Addr != n.Addr {
			return &rc.Nodes[i]
		}
	}
	return nil
}

// assignSlot gives an empty slot to owner on every master of rc, as
// redis-cli's resharding ends a move.
func assignSlot(t *testing.T, rc *difftest.RedisCluster, slot uint16, owner *difftest.ClusterNode) {
	t.Helper()
	ss := strconv.Itoa(int(slot))
	if v := do(t, owner.Conn(t, 2), "CLUSTER", "SETSLOT", ss, "NODE", owner.ID); v.IsError() {
		t.Fatal(v)
	}
	for i := range rc.Nodes {
		if rc.Nodes[i].Addr == owner.Addr {
			continue
		}
		if v := do(t, rc.Nodes[i].Conn(t, 2), "CLUSTER", "SETSLOT", ss, "NODE", owner.ID); v.IsError() {
			t.Fatal(v)
		}
	}
}

// TestWatchedSlotMoved: a WATCH on a slot that then moves cannot see its
// keys change on the new owner, so EXEC fails (nil) even when the proxy
// has learned the new owner meanwhile, instead of running the
// transaction there unwatched. A WATCH after the move works.
func TestWatchedSlotMoved(t *testing.T) {
	rc, _, addr := rightProxy(t)
	const key = "watchmoved"
	sl := slots.SlotString(key)
	src := rc.NodeForSlot(sl)
	dst := otherNode(rc, src)
	c, other := dial(t, addr, 2), dial(t, addr, 2)
	want(t, "WATCH", do(t, c, "WATCH", key), difftest.Simple("OK"))

	assignSlot(t, rc, sl, dst)
	t.Cleanup(func() {
		dst.Conn(t, 2).DoStrings("DEL", key)
		assignSlot(t, rc, sl, src)
	})
	// Another client's SET follows the MOVED: the proxy learns the owner.
	want(t, "SET by another client", do(t, other, "SET", key, "theirs"), difftest.Simple("OK"))
	do(t, c, "MULTI")
	want(t, "queued", do(t, c, "SET", key, "mine"), difftest.Simple("QUEUED"))
	want(t, "EXEC after the watched slot moved", do(t, c, "EXEC"), difftest.Value{Kind: difftest.NullArray})
	want(t, "GET", do(t, c, "GET", key), difftest.BulkOf("theirs"))

	want(t, "WATCH again", do(t, c, "WATCH", key), difftest.Simple("OK"))
	do(t, c, "MULTI")
	do(t, c, "SET", key, "mine")
	want(t, "EXEC on the new owner", do(t, c, "EXEC"), difftest.ArrayOf(difftest.Simple("OK")))
	want(t, "GET after", do(t, c, "GET", key), difftest.BulkOf("mine"))
}

// TestAskFollowedByWatchAndBlocking: while a slot migrates, WATCH and the
// blocking commands follow ASK to the target (with ASKING) like any other
// command, instead of handing the client the node's address.
func TestAskFollowedByWatchAndBlocking(t *testing.T) {
	rc, _, addr := rightProxy(t)
	const key = "askblock"
	_, _, dc := migrateSlot(t, rc, slots.SlotString(key))
	c, other := dial(t, addr, 2), dial(t, addr, 2)

	// A timed-out pop: nil, after its timeout, from the target.
	start := time.Now()
	want(t, "BLPOP timing out", do(t, c, "BLPOP", key, "0.2"), difftest.Value{Kind: difftest.NullArray})
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("BLPOP returned after %v, before its timeout", d)
	}
	// A pop served by a push, both through the proxy.
	send(t, c, "BLMOVE", key, key, "LEFT", "RIGHT", "5")
	got := receiveAsync(c)
	time.Sleep(100 * time.Millisecond)
	want(t, "RPUSH", do(t, other, "RPUSH", key, "e"), difftest.Int(1))
	want(t, "BLMOVE during migration", recvWithin(t, "BLMOVE", got, promptly), difftest.BulkOf("e"))
	do(t, dc, "ASKING")
	want(t, "the list on the target", do(t, dc, "LRANGE", key, "0", "-1"), arr("e"))

	// WATCH answers OK; the slot's owner (the source) is not where the
	// keys are watched, so EXEC fails until the move ends.
	want(t, "WATCH during migration", do(t, c, "WATCH", key), difftest.Simple("OK"))
	do(t, c, "MULTI")
	do(t, c, "LLEN", key)
	want(t, "EXEC", do(t, c, "EXEC"), difftest.Value{Kind: difftest.NullArray})
}

// TestGivenBackAcrossMoved: what a blocking pop took for a client that
// had gone goes back where its slot lives by then, following MOVED: the
// node served the pop, the slot moved, and the push back reaches the new
// owner rather than being dropped with the client.
func TestGivenBackAcrossMoved(t *testing.T) {
	sl := slots.SlotString("q")
	pushed := make(chan string, 4)
	newOwner, _ := redirector(t, func(_ int, args [][]byte) string {
		if strings.EqualFold(string(args[0]), "lpush") {
			pushed <- fmt.Sprintf("%q", args)
			return ":1\r\n"
		}
		return "+OK\r\n"
	})
	release := make(chan struct{})
	var once sync.Once
	old := fakeNode(t, func(nc net.Conn) {
		serveCommands(nc, func(args [][]byte) string {
			name := strings.ToLower(string(args[0]))
			if name == "client" && len(args) > 1 {
				name += " " + strings.ToLower(string(args[1]))
			}
			switch name {
			case "lmpop": // the proxy's first try: the list is empty
				return "*-1\r\n"
			case "client id":
				return ":42\r\n"
			case "blpop": // served, by a push the test makes up
				<-release
				return "*2\r\n$1\r\nq\r\n$1\r\nx\r\n"
			case "client unblock": // too late: the pop was served
				once.Do(func() { close(release) })
				return ":1\r\n"
			case "lpush": // the slot has moved since
				return fmt.Sprintf("-MOVED %d %s\r\n", sl, newOwner)
			}
			return "+OK\r\n"
		})
	})
	topo, err := proxy.NewStaticTopology([]string{old})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, PlainRedisNodes: true})
	c := dial(t, addr, 2)
	send(t, c, "BLPOP", "q", "0")
	waitFor(t, "the client blocked", promptly, func() bool { return blockedOn(t, addr) == 1 })
	c.Close()
	select {
	case got := <-pushed:
		if want := `["LPUSH" "q" "x"]`; got != want {
			t.Errorf("the new owner got %s, want %s", got, want)
		}
	case <-time.After(promptly):
		t.Fatal("what the pop took never reached the slot's new owner")
	}
}
