package node_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/slots"
)

// fakeOwnership is a node.Ownership over a table the test sets: each slot
// is unassigned (-1) or owned by one of nodes (nodes[0] is the node under
// test). A dead node's slots are served by nobody.
type fakeOwnership struct {
	mu     sync.Mutex
	owners [slots.Count]int
	nodes  []fakeNode
	epoch  uint64
	ch     chan struct{}
}

type fakeNode struct {
	id, addr string
	dead     bool
}

// newFakeOwnership makes a table of the given nodes (the first is self)
// with every slot unassigned.
func newFakeOwnership(nodes ...fakeNode) *fakeOwnership {
	f := &fakeOwnership{nodes: nodes, ch: make(chan struct{}), epoch: 1}
	for i := range f.owners {
		f.owners[i] = -1
	}
	return f
}

// assign gives slots first..last to node i (-1: unassigned) and tells the
// node.
func (f *fakeOwnership) assign(first, last uint16, i int) {
	f.mu.Lock()
	for s := int(first); s <= int(last); s++ {
		f.owners[s] = i
	}
	f.epoch++
	f.notifyLocked()
	f.mu.Unlock()
}

// assignUnseen gives slots first..last to node i without telling the
// node: its follower has not run yet when the next change comes.
func (f *fakeOwnership) assignUnseen(first, last uint16, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := int(first); s <= int(last); s++ {
		f.owners[s] = i
	}
	f.epoch++
}

// setDead marks node i dead or alive.
func (f *fakeOwnership) setDead(i int, dead bool) {
	f.mu.Lock()
	f.nodes[i].dead = dead
	f.notifyLocked()
	f.mu.Unlock()
}

func (f *fakeOwnership) notifyLocked() {
	close(f.ch)
	f.ch = make(chan struct{})
}

func (f *fakeOwnership) Slot(slot uint16) (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch i := f.owners[slot]; {
	case i < 0:
		return false, ""
	case i == 0:
		return true, ""
	case f.nodes[i].dead:
		return false, ""
	default:
		return false, f.nodes[i].addr
	}
}

func (f *fakeOwnership) Changes() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ch
}

func (f *fakeOwnership) Layout() *clusterfmt.Layout {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &clusterfmt.Layout{CurrentEpoch: f.epoch}
	for i, n := range f.nodes {
		host, port, _ := clusterfmt.SplitHostPort(n.addr)
		cn := clusterfmt.Node{ID: n.id, Host: host, Port: port, Myself: i == 0, ConfigEpoch: uint64(i + 1)}
		if n.dead {
			cn.Health = clusterfmt.Fail
		}
		for s := 0; s < slots.Count; s++ {
			if f.owners[s] != i {
				continue
			}
			if k := len(cn.Ranges); k > 0 && int(cn.Ranges[k-1].Last) == s-1 {
				cn.Ranges[k-1].Last = uint16(s)
			} else {
				cn.Ranges = append(cn.Ranges, clusterfmt.Range{First: uint16(s), Last: uint16(s)})
			}
		}
		l.Nodes = append(l.Nodes, cn)
	}
	return l
}

// fakeID is a node id made of one repeated hex digit.
func fakeID(c byte) string { return strings.Repeat(string(c), 40) }

// threeNodes is a fake cluster in redis-cli's split: the node under test
// owns 0-5460, node b (10.0.0.2:7002) 5461-10922, node c (10.0.0.3:7003)
// 10923-16383.
func threeNodes(selfAddr string) *fakeOwnership {
	f := newFakeOwnership(
		fakeNode{id: fakeID('a'), addr: selfAddr},
		fakeNode{id: fakeID('b'), addr: "10.0.0.2:7002"},
		fakeNode{id: fakeID('c'), addr: "10.0.0.3:7003"},
	)
	f.assign(0, 5460, 0)
	f.assign(5461, 10922, 1)
	f.assign(10923, 16383, 2)
	return f
}

// keyIn returns a key (with prefix) whose slot is in first..last.
func keyIn(prefix string, first, last uint16) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if s := slots.SlotString(k); first <= s && s <= last {
			return k
		}
	}
}

// startOwned starts a node with own as its Ownership.
func startOwned(t *testing.T, own node.Ownership, logger *slog.Logger) (*node.Server, string) {
	t.Helper()
	srv, addr, _ := nodetest.Start(t, node.Options{Ownership: own, Logger: logger}, nil)
	return srv, addr
}

// startOwnedLogged is startOwned with the node's log kept for the test.
func startOwnedLogged(t *testing.T, own node.Ownership) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	_, addr := startOwned(t, own, slog.New(slog.NewTextHandler(logs, nil)))
	return addr, logs
}

// expectNullExec sends EXEC and checks that it failed on a WATCH (a null
// reply).
func expectNullExec(t *testing.T, c *difftest.Conn, when string) {
	t.Helper()
	v, err := c.DoStrings("EXEC")
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != difftest.NullArray {
		t.Errorf("EXEC %s: %v, want a null reply", when, v)
	}
}

func dial(t *testing.T, addr string, proto int) *difftest.Conn {
	t.Helper()
	c, err := difftest.DialProto(addr, proto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expect sends args and checks the reply's text (an error's text, a simple
// or bulk string, an integer) or its rendering.
func expect(t *testing.T, c *difftest.Conn, want string, args ...string) {
	t.Helper()
	v, err := c.DoStrings(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	got := v.String()
	switch v.Kind {
	case difftest.Error, difftest.SimpleString, difftest.Bulk:
		got = string(v.Str)
	case difftest.Integer:
		got = strconv.FormatInt(v.Int, 10)
	}
	if got != want {
		t.Errorf("%q: got %s, want %s", args, got, want)
	}
}

// TestOwnershipRedirects: the precedence of the cluster checks against
// each other and the checks before them, with a fake table (the diff
// against a real cluster is TestDiffClusterRedirects).
func TestOwnershipRedirects(t *testing.T) {
	f := threeNodes("127.0.0.1:1")
	mine := keyIn("m", 0, 5460)
	other := keyIn("o", 5461, 10922)
	third := keyIn("t", 10923, 16383)
	unassigned := keyIn("u", 100, 100)
	f.assign(100, 100, -1)
	dead := keyIn("d", 16000, 16383)
	_, addr := startOwned(t, f, nil)
	c := dial(t, addr, 2)

	moved := func(k string) string {
		s := slots.SlotString(k)
		switch {
		case s <= 10922:
			return fmt.Sprintf("MOVED %d 10.0.0.2:7002", s)
		default:
			return fmt.Sprintf("MOVED %d 10.0.0.3:7003", s)
		}
	}
	const down = "CLUSTERDOWN Hash slot not served"
	const cross = "CROSSSLOT Keys in request don't hash to the same slot"
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"OK", []string{"SET", mine, "1"}},
		{"1", []string{"GET", mine}},
		{moved(other), []string{"GET", other}},
		{moved(third), []string{"SET", third, "x"}},
		{down, []string{"GET", unassigned}},
		{cross, []string{"MGET", mine, other}},
		{cross, []string{"MGET", other, third}},
		{cross, []string{"MGET", mine, unassigned}},
		{down, []string{"MGET", unassigned, mine}}, // the first key's slot is looked up first
		{moved(other), []string{"MGET", other, "{" + other + "}x"}},
		{"ERR wrong number of arguments for 'get' command", []string{"GET", other, "x"}},
		{"ERR unknown command 'NOSUCH', with args beginning with: '" + other + "' ", []string{"NOSUCH", other}},
		{moved(other), []string{"BLPOP", other, "0"}},
		{moved(other), []string{"XREAD", "BLOCK", "0", "STREAMS", other, "$"}},
		{moved(other), []string{"WATCH", other}},
		{moved(other), []string{"PFMERGE", other}},
		{"PONG", []string{"PING"}},
		{"1", []string{"DBSIZE"}},
		{strconv.Itoa(int(slots.SlotString(other))), []string{"CLUSTER", "KEYSLOT", other}},
		{"0", []string{"CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(slots.SlotString(other)))}},
	} {
		expect(t, c, tc.want, tc.args...)
	}

	// A dead owner's slots are served by nobody.
	f.setDead(2, true)
	expect(t, c, down, "GET", dead)
	f.setDead(2, false)
	expect(t, c, moved(dead), "GET", dead)

	// Transactions: a redirected command dooms it; EXEC checks the
	// stored commands against the owners of the moment.
	for _, step := range [][2]string{
		{"OK", "MULTI"}, {"QUEUED", "SET " + mine + " 2"}, {moved(other), "GET " + other},
		{"EXECABORT Transaction discarded because of previous errors.", "EXEC"},
		{"OK", "MULTI"}, {moved(other), "WATCH " + other}, {"OK", "DISCARD"},
		{"OK", "MULTI"}, {down, "GET " + unassigned}, {"QUEUED", "PING"},
		{"EXECABORT Transaction discarded because of previous errors.", "EXEC"},
		{"OK", "MULTI"}, {"QUEUED", "SET " + mine + " 3"}, {"QUEUED", "GET " + mine},
		{`array[simple:"OK", bulk:"3"]`, "EXEC"},
	} {
		expect(t, c, step[0], strings.Fields(step[1])...)
	}

	// The slot moves between queueing and EXEC: MOVED, transaction gone.
	slot := slots.SlotString(mine)
	expect(t, c, "OK", "WATCH", mine)
	expect(t, c, "OK", "MULTI")
	expect(t, c, "QUEUED", "SET", mine, "4")
	f.assign(slot, slot, 1)
	expect(t, c, fmt.Sprintf("MOVED %d 10.0.0.2:7002", slot), "EXEC")
	expect(t, c, "ERR EXEC without MULTI", "EXEC")
	// ... or to nobody.
	f.assign(slot, slot, 0)
	expect(t, c, "OK", "MULTI")
	expect(t, c, "QUEUED", "SET", mine, "4")
	f.assign(slot, slot, -1)
	expect(t, c, down, "EXEC")
	expect(t, c, "ERR EXEC without MULTI", "EXEC")
}

// TestOwnershipStandaloneUnchanged: without an Ownership every slot is
// served and CROSSSLOT is the only cluster refusal.
func TestOwnershipStandaloneUnchanged(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c := dial(t, addr, 2)
	for s := 0; s < slots.Count; s += 997 {
		k := keyIn("k", uint16(s), uint16(s))
		expect(t, c, "OK", "SET", k, "v")
	}
	expect(t, c, "CROSSSLOT Keys in request don't hash to the same slot", "MGET", keyIn("a", 0, 0), keyIn("b", 1, 1))
}

// TestClusterViewsStandalone: a standalone node describes a cluster of
// one master owning every slot at the address the client connected to,
// its id the same in every view.
func TestClusterViewsStandalone(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	host, port, _ := clusterfmt.SplitHostPort(addr)
	for _, proto := range []int{2, 3} {
		c := dial(t, addr, proto)
		id, _ := c.DoStrings("CLUSTER", "MYID")
		if len(id.Str) != 40 {
			t.Fatalf("CLUSTER MYID %s", id)
		}
		nodes, _ := c.DoStrings("CLUSTER", "NODES")
		want := fmt.Sprintf("%s %s:%d@%d myself,master - 0 0 0 connected 0-16383\n", id.Str, host, port, port+10000)
		if proto == 3 {
			want = "txt:" + want
		}
		if string(nodes.Str) != want {
			t.Errorf("RESP%d CLUSTER NODES %q, want %q", proto, nodes.Str, want)
		}
		sl, _ := c.DoStrings("CLUSTER", "SLOTS")
		if got := sl.String(); !strings.Contains(got, fmt.Sprintf(`int:0, int:16383, array[bulk:"%s", int:%d, bulk:"%s"`, host, port, id.Str)) {
			t.Errorf("RESP%d CLUSTER SLOTS %s", proto, got)
		}
		info, _ := c.DoStrings("CLUSTER", "INFO")
		if !strings.Contains(string(info.Str), "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n") ||
			!strings.Contains(string(info.Str), "cluster_known_nodes:1\r\ncluster_size:1\r\n") {
			t.Errorf("RESP%d CLUSTER INFO %q", proto, info.Str)
		}
		shards, _ := c.DoStrings("CLUSTER", "SHARDS")
		if got := shards.String(); !strings.Contains(got, string(id.Str)) || !strings.Contains(got, "int:16383") {
			t.Errorf("RESP%d CLUSTER SHARDS %s", proto, got)
		}
		expect(t, c, "ERR wrong number of arguments for 'cluster|slots' command", "CLUSTER", "SLOTS", "x")
	}
}

// TestClusterViewsFromOwnership: with an Ownership the views describe its
// Layout: every node, its ranges, epochs, a dead one failed.
func TestClusterViewsFromOwnership(t *testing.T) {
	f := threeNodes("127.0.0.1:7001")
	f.assign(16383, 16383, -1)
	f.setDead(1, true)
	_, addr := startOwned(t, f, nil)
	c := dial(t, addr, 2)
	a, b, cc := fakeID('a'), fakeID('b'), fakeID('c')
	expect(t, c, a, "CLUSTER", "MYID")
	expect(t, c, a+" 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n"+
		b+" 10.0.0.2:7002@17002 master,fail - 0 0 2 disconnected 5461-10922\n"+
		cc+" 10.0.0.3:7003@17003 master - 0 0 3 connected 10923-16382\n", "CLUSTER", "NODES")
	expect(t, c, "cluster_state:fail\r\ncluster_slots_assigned:16383\r\ncluster_slots_ok:10921\r\n"+
		"cluster_slots_pfail:0\r\ncluster_slots_fail:5462\r\ncluster_known_nodes:3\r\ncluster_size:3\r\n"+
		"cluster_current_epoch:5\r\ncluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\n"+
		"cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n", "CLUSTER", "INFO")
	sl, _ := c.DoStrings("CLUSTER", "SLOTS")
	if len(sl.Elems) != 3 || sl.Elems[2].Elems[1].Int != 16382 || string(sl.Elems[1].Elems[2].Elems[2].Str) != b {
		t.Errorf("CLUSTER SLOTS %s", sl)
	}
}

// TestOwnershipLostSlotsDropped: slots given to another node lose their
// keys (the others keep theirs), clients blocked on their keys are
// answered with the redirection (MOVED, or CLUSTERDOWN when nobody serves
// the slot), a WATCH on them fails the EXEC, and the change is logged.
func TestOwnershipLostSlotsDropped(t *testing.T) {
	f := threeNodes("127.0.0.1:1")
	addr, logs := startOwnedLogged(t, f)
	c := dial(t, addr, 2)
	kept := keyIn("{kept}", 0, 5460)
	lostA := "{lost}a"
	lostSlot := slots.SlotString(lostA)
	if lostSlot > 5460 || slots.SlotString(kept) == lostSlot {
		t.Fatalf("keys in the wrong slots: %d %d", lostSlot, slots.SlotString(kept))
	}
	downKey := keyIn("down", 0, 5460)
	downSlot := slots.SlotString(downKey)
	for _, k := range []string{kept, lostA, "{lost}b", downKey} {
		expect(t, c, "OK", "SET", k, "v")
	}
	expect(t, c, "1", "RPUSH", "{lost}list", "x")

	// Clients blocked on keys of the slots about to go.
	blpop := dial(t, addr, 2)
	blpop.Send([]byte("BLPOP"), []byte("{lost}empty"), []byte("0"))
	xread := dial(t, addr, 3)
	xread.Send([]byte("XREAD"), []byte("BLOCK"), []byte("0"), []byte("STREAMS"), []byte("{lost}s"), []byte("$"))
	downWait := dial(t, addr, 2)
	downWait.Send([]byte("BLPOP"), []byte("{"+downKey+"}x"), []byte("0"))
	waitFor(t, func() bool { return infoField(t, c, "blocked_clients") == "3" })
	watcher := dial(t, addr, 2)
	expect(t, watcher, "OK", "WATCH", kept)

	f.mu.Lock()
	f.owners[lostSlot] = 1
	f.owners[downSlot] = -1
	f.epoch++
	f.notifyLocked()
	f.mu.Unlock()

	movedLost := fmt.Sprintf("MOVED %d 10.0.0.2:7002", lostSlot)
	for _, w := range []struct {
		c    *difftest.Conn
		want string
	}{{blpop, movedLost}, {xread, movedLost}, {downWait, "CLUSTERDOWN Hash slot not served"}} {
		v, err := w.c.Receive()
		if err != nil || string(v.Str) != w.want {
			t.Errorf("blocked client got %s %v, want %s", v, err, w.want)
		}
	}
	expect(t, c, "0", "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(lostSlot)))
	expect(t, c, "0", "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(downSlot)))
	expect(t, c, "1", "DBSIZE")
	expect(t, c, "v", "GET", kept)
	expect(t, c, movedLost, "GET", lostA)
	if n := infoField(t, c, "blocked_clients"); n != "0" {
		t.Errorf("blocked_clients:%s after the redirections", n)
	}
	// The untouched slot's WATCH still holds.
	expect(t, watcher, "OK", "MULTI")
	expect(t, watcher, "QUEUED", "GET", kept)
	expect(t, watcher, `array[bulk:"v"]`, "EXEC")
	waitFor(t, func() bool { return strings.Contains(logs.String(), "their keys are dropped") })
	if s := logs.String(); !strings.Contains(s, "keys=4 blocked_clients_redirected=3") {
		t.Errorf("log line: %s", s)
	}

	// The slot comes back empty; keys written now stay.
	f.assign(lostSlot, lostSlot, 0)
	expect(t, c, "OK", "SET", lostA, "new")
	expect(t, c, "new", "GET", lostA)
}

// TestOwnershipWatchOnLostSlot: a WATCHed key of a slot given away fails
// the transaction: EXEC answers the redirection.
func TestOwnershipWatchOnLostSlot(t *testing.T) {
	f := threeNodes("127.0.0.1:1")
	_, addr := startOwned(t, f, nil)
	c := dial(t, addr, 2)
	k := keyIn("w", 0, 5460)
	s := slots.SlotString(k)
	expect(t, c, "OK", "SET", k, "1")
	expect(t, c, "OK", "WATCH", k)
	expect(t, c, "OK", "MULTI")
	expect(t, c, "QUEUED", "INCR", k)
	f.assign(s, s, 2)
	expect(t, c, fmt.Sprintf("MOVED %d 10.0.0.3:7003", s), "EXEC")
}

// TestOwnershipWatchAcrossMoves: a WATCHed key that does not exist is
// watched on its slot's node only; once the slot has left the node the
// key may be written on its new owner unseen, so EXEC fails (a null
// reply, as for a changed key) whether the slot is still away or has come
// back, as a Redis Cluster's RESTORE of the key would touch the WATCH.
func TestOwnershipWatchAcrossMoves(t *testing.T) {
	f := threeNodes("127.0.0.1:1")
	addr, logs := startOwnedLogged(t, f)
	c := dial(t, addr, 2)
	other := dial(t, addr, 2)
	w := keyIn("w", 0, 5460)
	s := slots.SlotString(w)
	tx := keyIn("t", 0, 5460)
	for slots.SlotString(tx) == s {
		tx = keyIn(tx, 0, 5460)
	}
	mate := "{" + w + "}mate" // a key in w's slot, so that its drop is logged
	for _, back := range []bool{false, true} {
		expect(t, other, "OK", "SET", mate, "x")
		expect(t, c, "OK", "WATCH", w)
		drops := strings.Count(logs.String(), "their keys are dropped")
		f.assign(s, s, 1)
		if back {
			// The node has dropped the slot (its followOwnership
			// pass), then gets it back.
			deadline := time.Now().Add(5 * time.Second)
			for strings.Count(logs.String(), "their keys are dropped") == drops && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			f.assign(s, s, 0)
		}
		expect(t, c, "OK", "MULTI")
		expect(t, c, "QUEUED", "SET", tx, "applied")
		expectNullExec(t, c, fmt.Sprintf("after the watched slot moved (back: %v)", back))
		expect(t, other, "0", "EXISTS", tx)
		f.assign(s, s, 0)
		expect(t, other, "OK", "FLUSHALL")
	}
}

// TestOwnershipServedBetweenPasses: a slot given back and taken again
// before the node's follower looked was served meanwhile; once seen lost
// it is emptied like any lost slot (no stray key to come back with the
// slot later) and its WATCHes fail.
func TestOwnershipServedBetweenPasses(t *testing.T) {
	f := threeNodes("127.0.0.1:1")
	addr, logs := startOwnedLogged(t, f)
	c := dial(t, addr, 2)
	watcher := dial(t, addr, 2)
	k := keyIn("between", 0, 5460)
	s := slots.SlotString(k)
	expect(t, c, "PONG", "PING") // the node has made its first pass
	f.assign(s, s, 1)
	waitFor(t, func() bool { return strings.Contains(logs.String(), "slots no longer served here") })

	f.assignUnseen(s, s, 0)
	expect(t, c, "OK", "SET", k, "stray")
	expect(t, watcher, "OK", "WATCH", k)
	f.assign(s, s, 1)
	waitFor(t, func() bool { return strings.Contains(logs.String(), "their keys are dropped") })
	if l := logs.String(); !strings.Contains(l, fmt.Sprintf("slots=%d keys=1", s)) {
		t.Errorf("log: %s", l)
	}

	f.assign(s, s, 0)
	expect(t, c, "0", "EXISTS", k)
	expect(t, watcher, "OK", "MULTI")
	expect(t, watcher, "QUEUED", "SET", k, "tx")
	expectNullExec(t, watcher, "after the watched slot was taken between passes")
}

// TestOwnershipRaceLeavesNoStrayKeys: writers hammer a slot while it is
// given away; once they all see MOVED the slot holds no key (a write that
// passed the dispatcher's check before the change is refused under the
// shard lock or flushed with the rest).
func TestOwnershipRaceLeavesNoStrayKeys(t *testing.T) {
	for round := range 20 {
		f := threeNodes("127.0.0.1:1")
		srv, addr := startOwned(t, f, nil)
		slot := slots.SlotString("{race}")
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := difftest.Dial(addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				<-start
				for i := 0; ; i++ {
					v, err := c.DoStrings("SET", fmt.Sprintf("{race}%d-%d", w, i), "v")
					if err != nil {
						t.Error(err)
						return
					}
					if v.Kind == difftest.Error {
						if !strings.HasPrefix(string(v.Str), "MOVED ") {
							t.Errorf("SET: %s", v)
						}
						return
					}
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		f.assign(slot, slot, 1)
		wg.Wait()
		// The change is followed asynchronously: wait for the flush.
		waitFor(t, func() bool {
			srv.Keyspace().RLock()
			defer srv.Keyspace().RUnlock()
			sh := srv.Keyspace().Shard(slot)
			sh.Lock()
			defer sh.Unlock()
			return sh.Len() == 0
		})
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// infoField reads one field of INFO.
func infoField(t *testing.T, c *difftest.Conn, name string) string {
	t.Helper()
	v, err := c.DoStrings("INFO")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(v.Str), "\r\n") {
		if val, ok := strings.CutPrefix(line, name+":"); ok {
			return val
		}
	}
	return ""
}

// cutOwnership is a fakeOwnership whose node may be cut off from its
// cluster's majority.
type cutOwnership struct {
	*fakeOwnership
	cut atomic.Bool
}

func (c *cutOwnership) Cut() bool { return c.cut.Load() }

// TestOwnershipCutOff: a node cut off from its cluster's majority answers
// every command with keys CLUSTERDOWN The cluster is down, as a Redis
// Cluster node whose state is fail (its slots may be reassigned on the
// other side), keeps its keys, and serves them again once it is back.
func TestOwnershipCutOff(t *testing.T) {
	f := &cutOwnership{fakeOwnership: threeNodes("127.0.0.1:1")}
	_, addr := startOwned(t, f, nil)
	c := dial(t, addr, 2)
	mine, other := keyIn("m", 0, 5460), keyIn("o", 5461, 10922)
	expect(t, c, "OK", "SET", mine, "v")
	f.cut.Store(true)
	for _, args := range [][]string{{"GET", mine}, {"SET", mine, "w"}, {"GET", other}, {"RPUSH", mine + "l", "x"}} {
		expect(t, c, "CLUSTERDOWN The cluster is down", args...)
	}
	expect(t, c, "PONG", "PING")
	expect(t, c, "OK", "MULTI")
	expect(t, c, "CLUSTERDOWN The cluster is down", "INCR", mine)
	expect(t, c, "EXECABORT Transaction discarded because of previous errors.", "EXEC")
	f.cut.Store(false)
	expect(t, c, "v", "GET", mine)
	expect(t, c, fmt.Sprintf("MOVED %d 10.0.0.2:7002", slots.SlotString(other)), "GET", other)
}
