package node_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/slots"
)

// mirrorOwnership is a fake table equal to a real cluster's as its node
// self sees it: the same ranges, the owners at the real nodes' addresses,
// so that MOVED replies name the same host:port.
func mirrorOwnership(c *difftest.RedisCluster, self int) *fakeOwnership {
	nodes := []fakeNode{{id: c.Nodes[self].ID, addr: c.Nodes[self].Addr}}
	index := map[int]int{self: 0}
	for i := range c.Nodes {
		if i != self {
			index[i] = len(nodes)
			nodes = append(nodes, fakeNode{id: c.Nodes[i].ID, addr: c.Nodes[i].Addr})
		}
	}
	f := newFakeOwnership(nodes...)
	for i := range c.Nodes {
		for _, r := range c.Nodes[i].Slots {
			f.assign(r.First, r.Last, index[i])
		}
	}
	return f
}

// TestDiffClusterRedirects compares, command by command, a node whose
// Ownership mirrors a real 3-master Redis Cluster 7.0.15 with that
// cluster's first master: MOVED, CLUSTERDOWN (an unassigned slot),
// CROSSSLOT and their precedence among themselves and after unknown
// command, arity and NOAUTH; keyless commands; blocking commands
// redirected instead of blocking; MULTI with redirected commands, WATCH
// inside MULTI, and EXEC after a queued command's slot moved away; RESP2
// and RESP3.
func TestDiffClusterRedirects(t *testing.T) {
	rc := difftest.StartRedisCluster(t, 3)
	self := &rc.Nodes[0]
	first := self.Slots[0]
	admin := self.Conn(t, 2)
	mustOK := func(args ...string) {
		t.Helper()
		if v, err := admin.DoStrings(args...); err != nil || v.Kind != difftest.SimpleString {
			t.Fatalf("%q on the real node: %s %v", args, v, err)
		}
	}
	// One of the node's slots unassigned: the real node must keep serving
	// the others (its cluster state stays ok without full coverage).
	unassigned := keyIn("u", first.First, first.Last)
	uslot := slots.SlotString(unassigned)
	mustOK("CONFIG", "SET", "cluster-require-full-coverage", "no")
	mustOK("CLUSTER", "DELSLOTS", strconv.Itoa(int(uslot)))
	f := mirrorOwnership(rc, 0)
	f.assign(uslot, uslot, -1)
	_, addr, _ := nodetest.Start(t, node.Options{Ownership: f}, nil)

	mine := keyIn("m", first.First, first.Last)
	if slots.SlotString(mine) == uslot {
		mine = keyIn("mm", first.First, first.Last)
	}
	sibling := keyIn("s", first.First, first.Last) // another of the node's slots
	for i := 0; slots.SlotString(sibling) == slots.SlotString(mine) || slots.SlotString(sibling) == uslot; i++ {
		sibling = keyIn("s"+strconv.Itoa(i)+"-", first.First, first.Last)
	}
	other := keyIn("o", rc.Nodes[1].Slots[0].First, rc.Nodes[1].Slots[0].Last)
	third := keyIn("t", rc.Nodes[2].Slots[0].First, rc.Nodes[2].Slots[0].Last)
	tag := func(k, suffix string) string { return "{" + k + "}" + suffix }

	script := [][]string{
		{"SET", mine, "1"}, {"GET", mine}, {"GET", other}, {"SET", third, "x"}, {"GET", unassigned},
		{"SET", tag(unassigned, "a"), "1"},
		{"MGET", mine, other}, {"MGET", other, mine}, {"MGET", other, third}, {"MGET", other, tag(other, "b")},
		{"MGET", unassigned, mine}, {"MGET", mine, unassigned}, {"MGET", unassigned, other}, {"MGET", other, unassigned},
		{"MSET", other, "1", third, "2"}, {"DEL", mine, tag(mine, "x")}, {"EXISTS", other, tag(other, "y")},
		{"GET"}, {"GET", other, "x"}, {"SET", other}, {"NOSUCH", other}, {"CLUSTER", "NOSUCH"},
		{"OBJECT", "ENCODING", other}, {"MEMORY", "USAGE", other}, {"TYPE", other}, {"TTL", unassigned},
		{"BLPOP", other, "0"}, {"BLPOP", other, mine, "0"}, {"BLMOVE", other, mine, "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", other, tag(other, "d"), "0"}, {"BLMPOP", "0", "2", other, tag(other, "e"), "LEFT"},
		{"XREAD", "BLOCK", "0", "STREAMS", other, "$"}, {"XREAD", "STREAMS", other, mine, "0", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", other, ">"}, {"XADD", other, "*", "f", "v"},
		{"PFMERGE", other}, {"PFCOUNT", other, third}, {"BITOP", "AND", other, tag(other, "s")},
		{"RENAME", other, mine}, {"COPY", other, tag(other, "c")},
		{"WATCH", other}, {"WATCH", unassigned}, {"WATCH", mine, other}, {"UNWATCH"},
		{"PING"}, {"ECHO", other}, {"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}, {"SELECT", "0"},
		{"CLUSTER", "KEYSLOT", other}, {"CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(slots.SlotString(other)))},
		{"CLUSTER", "GETKEYSINSLOT", strconv.Itoa(int(slots.SlotString(other))), "10"},
		{"COMMAND", "GETKEYS", "GET", other}, {"OBJECT", "HELP"},
		// Commands the node does not serve: across slots, refused as
		// Redis refuses them (and counted as rejected calls).
		{"SUNIONSTORE", other, mine}, {"SMOVE", mine, other, "m"}, {"SINTER", mine, sibling},
		{"ZUNIONSTORE", mine, "2", mine, other}, {"EVAL", "return 1", "2", mine, third},
		{"SORT", mine, "STORE", other}, {"SUNIONSTORE", other}, {"HSET", mine, "f"},
		// Transactions.
		{"MULTI"}, {"SET", mine, "2"}, {"GET", other}, {"EXEC"},
		{"MULTI"}, {"GET", unassigned}, {"PING"}, {"EXEC"},
		{"MULTI"}, {"MGET", mine, other}, {"EXEC"},
		{"MULTI"}, {"WATCH", other}, {"WATCH", mine}, {"DISCARD"},
		{"MULTI"}, {"BLPOP", other, "0"}, {"EXEC"},
		{"MULTI"}, {"NOSUCH", other}, {"GET", other}, {"EXEC"},
		{"MULTI"}, {"SUNIONSTORE", mine, other}, {"GET", mine}, {"EXEC"},
		{"MULTI"}, {"SET", mine, "3"}, {"GET", mine}, {"PING"}, {"EXEC"},
		{"WATCH", mine}, {"MULTI"}, {"INCR", mine}, {"EXEC"},
		{"DEL", mine, tag(mine, "x")},
		// Each queued command fine, EXEC refused with CROSSSLOT: a
		// rejected EXEC in commandstats, not a failed one.
		{"MULTI"}, {"SET", mine, "1"}, {"SET", sibling, "2"}, {"EXEC"},
	}
	// Commandstats from here: cluster refusals are rejected calls.
	mustOK("CONFIG", "RESETSTAT")
	if v, err := dial(t, addr, 2).DoStrings("CONFIG", "RESETSTAT"); err != nil || v.Kind != difftest.SimpleString {
		t.Fatalf("CONFIG RESETSTAT: %s %v", v, err)
	}
	for _, proto := range []int{2, 3} {
		p := &difftest.ConnPair{Redis: self.Conn(t, proto), Node: dial(t, addr, proto), Proto: proto}
		for _, args := range script {
			p.Do(t, args...)
		}
	}

	// NOAUTH comes before the cluster checks.
	mustOK("CONFIG", "SET", "requirepass", "pw")
	ours := dial(t, addr, 2)
	if v, err := ours.DoStrings("CONFIG", "SET", "requirepass", "pw"); err != nil || v.Kind != difftest.SimpleString {
		t.Fatalf("CONFIG SET requirepass: %s %v", v, err)
	}
	p := &difftest.ConnPair{Redis: self.Conn(t, 2), Node: dial(t, addr, 2), Proto: 2}
	for _, args := range [][]string{{"GET", other}, {"MGET", other, mine}, {"GET", unassigned},
		{"SUNIONSTORE", other, mine}, {"HGET", mine, "f"}, {"HGET", mine}, {"NOSUCH", mine},
		{"AUTH", "pw"}, {"GET", other}} {
		p.Do(t, args...)
	}
	p.Do(t, "CONFIG", "SET", "requirepass", "")
	difftest.CompareCommandStats(t, p)

	// EXEC after a queued command's slot went to another node: the
	// redirection, and the transaction is gone. The real node is told
	// with CLUSTER SETSLOT ... NODE (the slot must be empty).
	moving := keyIn("mv", first.First, first.Last)
	mslot := slots.SlotString(moving)
	if mslot == uslot {
		t.Fatalf("pick another key: %s is in the unassigned slot", moving)
	}
	for _, step := range [][]string{{"WATCH", moving}, {"MULTI"}, {"SET", moving, "1"}} {
		p.Do(t, step...)
	}
	mustOK("CLUSTER", "SETSLOT", strconv.Itoa(int(mslot)), "NODE", rc.Nodes[1].ID)
	f.assign(mslot, mslot, 1)
	if v := p.Do(t, "EXEC"); !strings.HasPrefix(string(v.Str), fmt.Sprintf("MOVED %d ", mslot)) {
		t.Errorf("EXEC after the slot moved: %s", v)
	}
	p.Do(t, "EXEC")
	p.Do(t, "GET", moving)
}
