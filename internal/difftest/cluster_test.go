package difftest

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

var nodeIDPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// want fails the test unless conn answers args with exactly w.
func want(t *testing.T, conn *Conn, w Value, args ...string) {
	t.Helper()
	v, err := conn.DoStrings(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if !Equal(v, w) {
		t.Errorf("%q: got %s, want %s", args, v, w)
	}
}

func TestRedisClusterThreeMasters(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t, 3)
	if len(c.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(c.Nodes))
	}
	// redis-cli gives the nodes contiguous ranges in order.
	next := 0
	for _, n := range c.Nodes {
		if !nodeIDPattern.MatchString(n.ID) {
			t.Errorf("node %s: id %q", n.Addr, n.ID)
		}
		if n.Version != "7.0.15" {
			t.Logf("node %s runs Redis %s, the oracle is meant to be 7.0.15", n.Addr, n.Version)
		}
		if len(n.Slots) != 1 || int(n.Slots[0].First) != next {
			t.Fatalf("node %s owns %v, want one range from %d", n.Addr, n.Slots, next)
		}
		next = int(n.Slots[0].Last) + 1
	}
	if next != slots.Count {
		t.Fatalf("slots end at %d", next)
	}

	// "a" and "b" are in different slots, on different nodes.
	sa, sb := slots.Slot([]byte("a")), slots.Slot([]byte("b"))
	if c.NodeForSlot(sa) == c.NodeForSlot(sb) {
		t.Fatalf("a (%d) and b (%d) on one node", sa, sb)
	}
	crossSlot := Err(resp.ErrCrossSlot)
	for i := range c.Nodes {
		conn := c.Nodes[i].Conn(t, 2)
		want(t, conn, crossSlot, "MSET", "a", "1", "b", "2")
	}
	owner := c.ConnForKey(t, "a")
	want(t, owner, Simple("OK"), "SET", "a", "1")
	want(t, owner, BulkOf("1"), "GET", "a")
	want(t, c.ConnForKey(t, "{u}a"), Simple("OK"), "MSET", "{u}a", "1", "{u}b", "2")
	other := c.ConnForSlotProto(t, sb, 3)
	want(t, other, Err(fmt.Sprintf("MOVED %d %s", sa, c.NodeForSlot(sa).Addr)), "GET", "a")

	c.FlushAll(t)
	want(t, owner, Int(0), "EXISTS", "a")
}

func TestRedisClusterOneMaster(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t, 1)
	n := c.Nodes[0]
	if len(n.Slots) != 1 || n.Slots[0] != (SlotRange{0, slots.Count - 1}) {
		t.Fatalf("lone node owns %v", n.Slots)
	}
	if c.NodeForKey("anything") != &c.Nodes[0] {
		t.Fatal("NodeForKey")
	}
	conn := c.ConnForSlot(t, 0)
	want(t, conn, Err(resp.ErrCrossSlot), "MSET", "a", "1", "b", "2")
	want(t, conn, Simple("OK"), "MSET", "{x}a", "1", "{x}b", "2")

	// Queued commands that are each fine but touch different slots: EXEC
	// itself answers CROSSSLOT (and the transaction is gone).
	want(t, conn, Simple("OK"), "MULTI")
	want(t, conn, Simple("QUEUED"), "SET", "a", "1")
	want(t, conn, Simple("QUEUED"), "SET", "b", "2")
	want(t, conn, Err(resp.ErrCrossSlot), "EXEC")
	want(t, conn, Err(resp.ErrExecNoMulti), "EXEC")
	want(t, conn, Int(0), "EXISTS", "a")

	// CLUSTER NODES shows the announced address, as the proxy's will.
	v, err := conn.DoStrings("CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%s %s@", n.ID, n.Addr)
	if got := string(v.Str); len(got) < len(line) || got[:len(line)] != line {
		t.Errorf("CLUSTER NODES = %q, want it to start with %q", got, line)
	}
}

func TestRedisClusterTwoMastersRefused(t *testing.T) {
	if _, err := LaunchRedisCluster(2); err == nil {
		t.Fatal("a 2-master cluster was started")
	}
}
