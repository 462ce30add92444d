package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/slots"
)

// migratingCluster is a two-node gossip cluster whose nodes migrate
// slots only when told (no automatic rebalancing).
func migratingCluster(t *testing.T) []*gossipNode {
	return startGossipClusterWith(t, 2, func(m *cluster.Cluster, o *node.Options) {
		o.Migration = &node.MigrationOptions{Cluster: m, PlanInterval: 100 * time.Millisecond, BatchSlots: 8}
	})
}

// keysInSlot returns n keys of slot, named with prefix.
func keysInSlot(slot uint16, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s:{%s}", prefix, slotTag(slot, i))
		if slots.SlotString(k) == slot {
			out = append(out, k)
		}
	}
	return out
}

// slotTag finds hash-tag contents that land in slot (the i-th such).
func slotTag(slot uint16, i int) string {
	for j := 0; ; j++ {
		s := "t" + strconv.Itoa(j)
		if slots.SlotString(s) == slot {
			if i == 0 {
				return s
			}
			i--
		}
	}
}

// moveSlots asks from (the owner) to move ss to the node to and waits
// until every node's table says so.
func moveSlots(t *testing.T, nodes []*gossipNode, from, to *gossipNode, ss []uint16) {
	t.Helper()
	c := dial(t, from.addr, 2)
	var ranges []string
	for _, s := range ss {
		ranges = append(ranges, strconv.Itoa(int(s)))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The plan is repeated as the planner does; the source drops
		// plans that stop coming.
		if v, err := c.DoStrings("SHARDGATE", "PLAN", string(to.member.ID()), strings.Join(ranges, ",")); err != nil || v.IsError() {
			t.Fatalf("SHARDGATE PLAN: %v %v", v, err)
		}
		done := true
		for _, gn := range nodes {
			for _, s := range ss {
				if gn.member.View().Slots[s].Owner != to.member.ID() {
					done = false
				}
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots %v never moved to %s; source log:\n%s", ss, to.addr, from.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readBattery is what a key answers to the reads of its kind.
func readBattery(t *testing.T, c *difftest.Conn, key string) string {
	t.Helper()
	typ, err := c.DoStrings("TYPE", key)
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	switch typ.Text() {
	case "string":
		// A string's encoding is chosen afresh when it is loaded or
		// moved, as Redis's RESTORE and load do
		// (TestLoadedStringsEncodedAfresh), so it is not compared.
		// (GET of the 512 MB bitmap would take long: its ends instead)
		cmds = append(cmds, []string{"GETRANGE", key, "0", "4095"}, []string{"GETRANGE", key, "-4096", "-1"},
			[]string{"BITCOUNT", key}, []string{"STRLEN", key}, []string{"BITPOS", key, "1", "1"})
	case "list":
		cmds = append(cmds, []string{"OBJECT", "ENCODING", key}, []string{"LRANGE", key, "0", "-1"})
	case "stream":
		cmds = append(cmds, []string{"OBJECT", "ENCODING", key}, []string{"XINFO", "STREAM", key, "FULL"}, []string{"XRANGE", key, "-", "+"},
			[]string{"XPENDING", key, "g"}) // (the extended form's idle times tick)
	}
	var b strings.Builder
	b.WriteString(typ.Text())
	for _, cmd := range cmds {
		v, err := c.DoStrings(cmd...)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n%s -> %s", strings.Join(cmd, " "), v)
	}
	return b.String()
}

// expiryAt is key's absolute expiry in unix ms (-1: none, -2: no key).
func expiryAt(t *testing.T, c *difftest.Conn, key string) int64 {
	t.Helper()
	// PEXPIRETIME: the stored absolute expiry, with no clock read of ours
	// (PTTL plus our clock straddled a grain under a loaded -race run).
	v, err := c.DoStrings("PEXPIRETIME", key)
	if err != nil {
		t.Fatal(err)
	}
	return v.Int
}

// TestMigrationMovesEveryKind: values of every kind (strings with TTLs,
// int encodings, sparse bitmaps past 2^32 bits' worth of offsets,
// HyperLogLogs, lists, streams with consumer groups and pending entries)
// move to the target and answer every read there exactly as they did on
// the source; the source keeps none of them and redirects with MOVED.
func TestMigrationMovesEveryKind(t *testing.T) {
	nodes := migratingCluster(t)
	slot := uint16(100)
	src := ownerOf(t, nodes, slot)
	dst := nodes[0]
	if dst == src {
		dst = nodes[1]
	}
	c := dial(t, src.addr, 2)
	ks := keysInSlot(slot, "k", 8)
	do := func(args ...string) {
		t.Helper()
		if v, err := c.DoStrings(args...); err != nil || v.IsError() {
			t.Fatalf("%v: %v %v", args, v, err)
		}
	}
	do("SET", ks[0], "hello", "PX", "600000")
	do("SET", ks[1], "12345")
	do("SETBIT", ks[2], "4294967295", "1")
	do("SETBIT", ks[2], "7", "1")
	do("PFADD", ks[3], "a", "b", "c", "d")
	do("RPUSH", ks[4], "x", "y", "z")
	for i := range 300 {
		do("XADD", ks[5], "*", "n", strconv.Itoa(i))
	}
	do("XGROUP", "CREATE", ks[5], "g", "0")
	do("XREADGROUP", "GROUP", "g", "alice", "COUNT", "7", "STREAMS", ks[5], ">")
	do("XREADGROUP", "GROUP", "g", "bob", "COUNT", "3", "STREAMS", ks[5], ">")
	do("XGROUP", "CREATECONSUMER", ks[5], "g", "carol")
	do("XDEL", ks[5], "0-1")
	do("RPUSH", ks[6], strings.Repeat("big", 1<<19)) // 1.5 MB: sent in chunks
	do("INCR", ks[7])
	do("EXPIRE", ks[7], "1000")

	before := map[string]string{}
	expires := map[string]int64{}
	for _, k := range ks {
		before[k] = readBattery(t, c, k)
		expires[k] = expiryAt(t, c, k)
	}
	moveSlots(t, nodes, src, dst, []uint16{slot})
	cd := dial(t, dst.addr, 2)
	for _, k := range ks {
		// The expiry moves as an absolute time: the same millisecond.
		if at, was := expiryAt(t, cd, k), expires[k]; at != was {
			t.Errorf("%s expires at %d after the move, at %d before", k, at, was)
		}
		got := strings.Split(readBattery(t, cd, k), "\n")
		want := strings.Split(before[k], "\n")
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				g, w := "(none)", "(none)"
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				t.Errorf("%s after the move differs:\n got %.300s\nwant %.300s", k, g, w)
				break
			}
		}
	}
	v, err := c.DoStrings("GET", ks[0])
	if err != nil || v.Text() != "MOVED 100 "+dst.addr {
		t.Errorf("GET on the source after the move = %v %v; want MOVED to %s", v, err, dst.addr)
	}
	// The source drops its copy once it sees the commit (its ownership
	// follower, in the background).
	deadline := time.Now().Add(5 * time.Second)
	for n := shardLen(src.srv, slot); n != 0; n = shardLen(src.srv, slot) {
		if time.Now().After(deadline) {
			t.Fatalf("the source still holds %d keys of the moved slot", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMigrationUnderWrites: while slots move, writers keep incrementing
// counters and pushing to lists through a client that follows MOVED and
// retries TRYAGAIN (as the proxy does); every acknowledged write is on
// the new owner afterwards, and a client blocked on a key of a moving
// slot is redirected with MOVED, not dropped.
func TestMigrationUnderWrites(t *testing.T) {
	migrateUnderWrites(t, migratingCluster(t), nil)
}

// TestMigrationCommitNotPersisted: a target that cannot write its cluster
// state refuses the commit before its claim is heard of (by gossip or
// its View), so the source keeps the slots and the writes it takes, and
// the move goes through once the target's disk is back. (A claim that
// got out first, with the commit then refused, handed the slots to a
// target holding the data as of the fence: the writes the source took
// after its abort were lost.)
func TestMigrationCommitNotPersisted(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "cluster0"), filepath.Join(t.TempDir(), "cluster1")}
	nodes := startGossipClusterCfg(t, 2, func(i int, c *cluster.Config) { c.Dir = dirs[i] },
		func(m *cluster.Cluster, o *node.Options) {
			o.Migration = &node.MigrationOptions{Cluster: m, PlanInterval: 100 * time.Millisecond, BatchSlots: 8}
		})
	migrateUnderWrites(t, nodes, func(src, dst *gossipNode) {
		for i, gn := range nodes {
			if gn != dst {
				continue
			}
			if err := os.RemoveAll(dirs[i]); err != nil {
				t.Fatal(err)
			}
			go func() {
				// The disk comes back once the target has refused.
				for !strings.Contains(src.logs.String(), "ERR commit refused") {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(300 * time.Millisecond)
				os.MkdirAll(dirs[i], 0o755)
			}()
		}
	})
}

// migrateUnderWrites moves 24 slots while four writers increment keys in
// them (following MOVED and TRYAGAIN), then checks that every
// acknowledged increment is on the new owner and that a client blocked
// on a moved key was redirected. prepare, if set, runs just before the
// move.
func migrateUnderWrites(t *testing.T, nodes []*gossipNode, prepare func(src, dst *gossipNode)) {
	t.Helper()
	var moving []uint16
	src := ownerOf(t, nodes, 0)
	dst := nodes[0]
	if dst == src {
		dst = nodes[1]
	}
	for s := uint16(0); len(moving) < 24; s++ {
		if ownerOf(t, nodes, s) == src {
			moving = append(moving, s)
		}
	}
	var keys []string
	for _, s := range moving {
		keys = append(keys, keysInSlot(s, "c", 2)...)
	}

	// A client blocked on a key of the first moving slot.
	blocked := dial(t, src.addr, 2)
	bkey := keysInSlot(moving[0], "q", 1)[0]
	blockedReply := make(chan difftest.Value, 1)
	go func() {
		v, _ := blocked.DoStrings("BLPOP", bkey, "0")
		blockedReply <- v
	}()

	acked := make([]atomic.Int64, len(keys))
	var errs atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := map[int]string{} // key index -> address to use
			cs := map[string]*difftest.Conn{}
			get := func(addr string) *difftest.Conn {
				if cs[addr] == nil {
					cs[addr] = dial(t, addr, 2)
				}
				return cs[addr]
			}
			for i := w; ctx.Err() == nil; i = (i + 4) % len(keys) {
				addr := owner[i]
				if addr == "" {
					addr = src.addr
				}
				for hop := 0; ; hop++ {
					v, err := get(addr).DoStrings("INCR", keys[i])
					if err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						return
					}
					if v.IsError() && strings.HasPrefix(v.Text(), "MOVED ") && hop < 5 {
						addr = strings.Fields(v.Text())[2]
						owner[i] = addr
						continue
					}
					if v.IsError() && strings.HasPrefix(v.Text(), "TRYAGAIN") && hop < 50 {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					if v.IsError() {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, v.Text())
					} else {
						acked[i].Add(1)
					}
					break
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if prepare != nil {
		prepare(src, dst)
	}
	moveSlots(t, nodes, src, dst, moving)
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if n := errs.Load(); n > 0 {
		t.Fatalf("%d writes failed, first: %v", n, firstErr.Load())
	}
	cd := dial(t, dst.addr, 2)
	total := int64(0)
	for i, k := range keys {
		v, err := cd.DoStrings("GET", k)
		want := acked[i].Load()
		total += want
		got, _ := strconv.ParseInt(v.Text(), 10, 64)
		if err != nil || got != want {
			t.Errorf("%s on the new owner = %v (%v); %d increments were acknowledged", k, v, err, want)
		}
	}
	if total == 0 {
		t.Fatal("no write was acknowledged: the test measured nothing")
	}
	select {
	case v := <-blockedReply:
		if want := fmt.Sprintf("MOVED %d %s", moving[0], dst.addr); v.Text() != want {
			t.Errorf("blocked BLPOP got %v, want %s", v, want)
		}
	case <-time.After(5 * time.Second):
		t.Error("the client blocked on a moved slot was never answered")
	}
	st, _ := dial(t, src.addr, 2).DoStrings("SHARDGATE", "STATUS")
	t.Logf("%d increments acknowledged during the move; source status:\n%s", total, st.Text())
}

// TestMigrationCommandRefusals: the SHARDGATE command refuses malformed
// or out-of-order migration steps with an error and leaves the node
// serving (nothing staged is ever served).
func TestMigrationCommandRefusals(t *testing.T) {
	nodes := migratingCluster(t)
	c := dial(t, nodes[1].addr, 2)
	owned := uint16(0)
	for ; !nodes[1].member.View().Owns(owned); owned++ {
	}
	notOwned := uint16(0)
	for ; nodes[1].member.View().Owns(notOwned); notOwned++ {
	}
	src := string(nodes[0].member.ID())
	fenceEpoch := strconv.FormatUint(nodes[1].member.View().Epoch+1, 10)
	tests := []struct {
		args []string
		want string // error prefix; "" = OK
	}{
		{[]string{"SHARDGATE"}, "ERR wrong number of arguments"},
		{[]string{"SHARDGATE", "NOPE"}, "ERR unknown subcommand 'NOPE'"},
		{[]string{"SHARDGATE", "MIGRATE-PUT", "m1", "k", "x"}, "ERR unknown or aborted migration"},
		{[]string{"SHARDGATE", "MIGRATE-BEGIN", "m1", src, strconv.Itoa(int(owned))}, "ERR slot " + strconv.Itoa(int(owned)) + " is already served here"},
		{[]string{"SHARDGATE", "MIGRATE-BEGIN", "m1", src, "99999"}, "ERR bad slot"},
		{[]string{"SHARDGATE", "MIGRATE-BEGIN", "m2", src, strconv.Itoa(int(notOwned))}, ""},
		{[]string{"SHARDGATE", "MIGRATE-PUT", "m2", "k", "not a dump"}, "ERR bad migrated value"},
		{[]string{"SHARDGATE", "MIGRATE-PUT", "m2", "k", "part", "MORE"}, ""},
		{[]string{"SHARDGATE", "MIGRATE-COMMIT", "m2", "zero"}, "ERR bad epoch"},
		// A fence's epoch is above every claim its source knew: with no
		// claim that high here, the answer is "aborted", which aborts.
		{[]string{"SHARDGATE", "MIGRATE-STATUS", "m2", fenceEpoch, strconv.Itoa(int(notOwned))}, ""},
		{[]string{"SHARDGATE", "MIGRATE-COMMIT", "m2", "99"}, "ERR migration m2 was aborted"},
		{[]string{"SHARDGATE", "MIGRATE-BEGIN", "m2", src, strconv.Itoa(int(notOwned))}, "ERR migration m2 was aborted"},
		{[]string{"SHARDGATE", "DRAIN", "maybe"}, "ERR syntax error"},
		{[]string{"SHARDGATE", "PLAN", "x"}, "ERR wrong number of arguments"},
	}
	for _, tt := range tests {
		v, err := c.DoStrings(tt.args...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		switch {
		case tt.want == "" && v.IsError():
			t.Errorf("%v = %v, want success", tt.args, v)
		case tt.want != "" && (!v.IsError() || !strings.HasPrefix(v.Text(), tt.want)):
			t.Errorf("%v = %v, want an error starting %q", tt.args, v, tt.want)
		}
	}
	if v, _ := c.DoStrings("PING"); v.Text() != "PONG" {
		t.Fatalf("the node stopped answering: %v", v)
	}
	if n := shardLen(nodes[1].srv, notOwned); n != 0 {
		t.Errorf("an aborted migration left %d keys in slot %d", n, notOwned)
	}
}

// shardLen counts a slot's keys under the keyspace's locks.
func shardLen(srv *node.Server, slot uint16) int {
	ks := srv.Keyspace()
	ks.RLock()
	defer ks.RUnlock()
	sh := ks.Shard(slot)
	sh.Lock()
	defer sh.Unlock()
	return sh.Len()
}

// TestDrainNeedsSomewhereToGo: SHARDGATE DRAIN is refused while no other
// live node that is not draining could take the node's slots (it would
// wait forever), and accepted again once one can.
func TestDrainNeedsSomewhereToGo(t *testing.T) {
	nodes := startGossipClusterWith(t, 2, func(m *cluster.Cluster, o *node.Options) {
		// The planner stays idle: only the drain marks matter here.
		o.Migration = &node.MigrationOptions{Cluster: m, PlanInterval: time.Hour}
	})
	a, b := dial(t, nodes[0].addr, 2), dial(t, nodes[1].addr, 2)
	if v, _ := a.DoStrings("SHARDGATE", "DRAIN", "ON"); v.Text() != "OK" {
		t.Fatalf("DRAIN on the first node: %v", v)
	}
	refused := "ERR no other live node that is not draining can take this node's slots"
	waitFor(t, func() bool {
		v, _ := b.DoStrings("SHARDGATE", "DRAIN", "ON")
		return strings.HasPrefix(v.Text(), refused)
	})
	if v, _ := a.DoStrings("SHARDGATE", "DRAIN", "OFF"); v.Text() != "OK" {
		t.Fatalf("DRAIN OFF: %v", v)
	}
	waitFor(t, func() bool {
		v, _ := b.DoStrings("SHARDGATE", "DRAIN", "ON")
		return v.Text() == "OK"
	})
	b.DoStrings("SHARDGATE", "DRAIN", "OFF")
}

// TestMigrateStatusAfterMovingOn: a target asked how a migration to it
// ended says "committed" once it has passed the slot on to a third node:
// its commit happened, and "aborted" would let a source that lost the
// commit's answer (or restarted fenced) serve the slot again.
func TestMigrateStatusAfterMovingOn(t *testing.T) {
	nodes := startGossipClusterWith(t, 3, func(m *cluster.Cluster, o *node.Options) {
		o.Migration = &node.MigrationOptions{Cluster: m, PlanInterval: 100 * time.Millisecond, BatchSlots: 8}
	})
	a := ownerOf(t, nodes, 0)
	var b, c *gossipNode
	for _, gn := range nodes {
		switch {
		case gn == a:
		case b == nil:
			b = gn
		default:
			c = gn
		}
	}
	moveSlots(t, nodes, a, b, []uint16{0})
	epoch := b.member.View().Slots[0].Epoch
	status := func() string {
		v, err := dial(t, b.addr, 2).DoStrings("SHARDGATE", "MIGRATE-STATUS", "0123456789abcdef", strconv.FormatUint(epoch, 10), "0")
		if err != nil {
			t.Fatal(err)
		}
		return v.Text()
	}
	if got := status(); got != "committed" {
		t.Fatalf("MIGRATE-STATUS on the owner: %q, want committed", got)
	}
	moveSlots(t, nodes, b, c, []uint16{0})
	if got := status(); got != "committed" {
		t.Fatalf("MIGRATE-STATUS after the target passed the slot on: %q, want committed", got)
	}
}
