package node_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/slots"
)

// gossipNode is one node of an in-process gossip cluster.
type gossipNode struct {
	member *cluster.Cluster
	srv    *node.Server
	addr   string
	logs   *syncBuffer
}

// startGossipCluster starts n nodes on loopback that find each other by
// gossip (Fast timings) and bootstrap the slot table together, each node
// served with the Ownership over its member. It returns once every node
// reports cluster_state:ok and knows the n nodes.
func startGossipCluster(t *testing.T, n int) []*gossipNode {
	t.Helper()
	return startGossipClusterWith(t, n, nil)
}

// startGossipClusterWith is startGossipCluster with a hook that may change
// each node's options (e.g. to turn on migrations).
func startGossipClusterWith(t *testing.T, n int, configure func(m *cluster.Cluster, o *node.Options)) []*gossipNode {
	t.Helper()
	return startGossipClusterCfg(t, n, nil, configure)
}

// startGossipClusterCfg is startGossipClusterWith with a hook that may
// change node i's cluster config first (e.g. to give it a Dir).
func startGossipClusterCfg(t *testing.T, n int, member func(i int, c *cluster.Config), configure func(m *cluster.Cluster, o *node.Options)) []*gossipNode {
	t.Helper()
	nodes := make([]*gossipNode, n)
	var join []string
	for i := range nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := cluster.Config{
			Role:            cluster.RoleNode,
			RESPAddr:        ln.Addr().String(),
			Bind:            "127.0.0.1:0",
			Join:            join,
			BootstrapExpect: n,
			Fast:            true,
			Logger:          slog.New(slog.DiscardHandler),
		}
		if member != nil {
			member(i, &cfg)
		}
		m, err := cluster.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		if i == 0 {
			join = []string{m.GossipAddr()}
		}
		logs := &syncBuffer{}
		opts := node.Options{
			Ownership: node.NewClusterOwnership(m, nil),
			Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		}
		if configure != nil {
			configure(m, &opts)
		}
		srv, err := node.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			srv.Close()
			if err := <-served; err != nil {
				t.Errorf("node Serve: %v", err)
			}
		})
		nodes[i] = &gossipNode{member: m, srv: srv, addr: ln.Addr().String(), logs: logs}
	}
	for _, gn := range nodes {
		c := dial(t, gn.addr, 2)
		deadline := time.Now().Add(20 * time.Second)
		for {
			v, err := c.DoStrings("CLUSTER", "INFO")
			if err != nil {
				t.Fatal(err)
			}
			info := string(v.Str)
			if strings.Contains(info, "cluster_state:ok\r\n") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never became ok:\n%s", gn.addr, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nodes
}

// ownerOf is the node that serves slot, as node 0's member sees it.
func ownerOf(t *testing.T, nodes []*gossipNode, slot uint16) *gossipNode {
	t.Helper()
	id := nodes[0].member.View().Slots[slot].Owner
	for _, gn := range nodes {
		if gn.member.ID() == id {
			return gn
		}
	}
	t.Fatalf("slot %d owned by unknown %q", slot, id)
	return nil
}

// TestGossipClusterClients: three nodes that found each other by gossip
// and bootstrapped the table answer a go-redis ClusterClient pointed at
// one of them (it learns the others from CLUSTER SLOTS and follows
// MOVED), every key lands on its slot's owner, redis-cli --cluster check
// finds the nodes agreeing and every slot covered, and a slot handed off
// to another node is dropped by its old owner and found on the new one.
func TestGossipClusterClients(t *testing.T) {
	nodes := startGossipCluster(t, 3)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}})
	defer cc.Close()

	const n = 300
	for i := range n {
		if err := cc.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
	}
	perNode := map[*gossipNode]int{}
	for i := range n {
		k := "k" + strconv.Itoa(i)
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("GET %s = %q %v", k, v, err)
		}
		owner := ownerOf(t, nodes, slots.SlotString(k))
		perNode[owner]++
		for _, gn := range nodes {
			v, err := dial(t, gn.addr, 2).DoStrings("GET", k)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case gn == owner && string(v.Str) != strconv.Itoa(i):
				t.Errorf("%s on its owner %s: %s", k, gn.addr, v)
			case gn != owner && string(v.Str) != fmt.Sprintf("MOVED %d %s", slots.SlotString(k), owner.addr):
				t.Errorf("%s on %s (owner %s): %s", k, gn.addr, owner.addr, v)
			}
		}
		if i == 20 {
			break // the per-node check is slow; the rest through the client
		}
	}
	total := 0
	for _, gn := range nodes {
		v, err := dial(t, gn.addr, 2).DoStrings("DBSIZE")
		if err != nil {
			t.Fatal(err)
		}
		if v.Int == 0 {
			t.Errorf("node %s holds no key: the client did not spread", gn.addr)
		}
		total += int(v.Int)
	}
	if total != n {
		t.Errorf("%d keys over the nodes, want %d", total, n)
	}

	if _, err := exec.LookPath(difftest.RedisCLIBinary); err == nil {
		out, _ := exec.Command(difftest.RedisCLIBinary, "--cluster", "check", nodes[0].addr).CombinedOutput()
		for _, want := range []string{"[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."} {
			if !strings.Contains(string(out), want) {
				t.Errorf("redis-cli --cluster check lacks %q:\n%s", want, out)
			}
		}
	}

	// Hand the slot of k0 to another node: the old owner drops its keys,
	// the client follows MOVED to the new owner, which starts empty.
	slot := slots.SlotString("k0")
	from := ownerOf(t, nodes, slot)
	var to *gossipNode
	for _, gn := range nodes {
		if gn != from {
			to = gn
			break
		}
	}
	if err := from.member.Handoff([]uint16{slot}, to.member.ID()); err != nil {
		t.Fatal(err)
	}
	fc := dial(t, from.addr, 2)
	waitFor(t, func() bool {
		v, err := fc.DoStrings("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(int(slot)))
		return err == nil && v.Int == 0
	})
	waitFor(t, func() bool { return strings.Contains(from.logs.String(), "their keys are dropped") })
	waitFor(t, func() bool {
		err := cc.Get(ctx, "k0").Err()
		return errors.Is(err, redis.Nil)
	})
	if err := cc.Set(ctx, "k0", "new", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := dial(t, to.addr, 2).DoStrings("GET", "k0"); err != nil || string(v.Str) != "new" {
		t.Errorf("k0 on its new owner: %s %v", v, err)
	}
	if v, err := fc.DoStrings("GET", "k0"); err != nil || string(v.Str) != fmt.Sprintf("MOVED %d %s", slot, to.addr) {
		t.Errorf("k0 on its old owner: %s %v", v, err)
	}
}

// viewSource is a ClusterSource over views the test sets.
type viewSource struct {
	v  atomic.Pointer[cluster.View]
	ch chan struct{}
}

func (s *viewSource) View() *cluster.View      { return s.v.Load() }
func (s *viewSource) Changes() <-chan struct{} { return s.ch }

// TestClusterOwnershipOfView: how the adapter reads a View. Its own slots
// are served; a live owner's slots are redirected to its RESP address; a
// dead owner's and unassigned slots are served by nobody. The CLUSTER
// views list the data nodes (not proxies, not members that left owning
// nothing), a dead one failed, each with the highest epoch of its slots.
func TestClusterOwnershipOfView(t *testing.T) {
	id := func(c byte) cluster.NodeID { return cluster.NodeID(fakeID(c)) }
	var table [cluster.NumSlots]cluster.SlotOwner
	claim := func(first, last int, owner cluster.NodeID, epoch uint64) {
		for s := first; s <= last; s++ {
			table[s] = cluster.SlotOwner{Owner: owner, Epoch: epoch}
		}
	}
	claim(0, 99, id('a'), 1)
	claim(100, 199, id('b'), 3)
	claim(200, 299, id('c'), 2)
	claim(300, 300, id('a'), 4)
	v := &cluster.View{Self: id('a'), Slots: &table, Epoch: 4, Members: []cluster.Member{
		{ID: id('a'), Role: cluster.RoleNode, Addr: "10.0.0.1:7001", State: cluster.StateAlive},
		{ID: id('b'), Role: cluster.RoleNode, Addr: "10.0.0.2:7002", State: cluster.StateAlive},
		{ID: id('c'), Role: cluster.RoleNode, Addr: "10.0.0.3:7003", State: cluster.StateDead},
		{ID: id('d'), Role: cluster.RoleNode, Addr: "10.0.0.4:7004", State: cluster.StateLeft},
		{ID: id('e'), Role: cluster.RoleProxy, Addr: "10.0.0.5:7379", State: cluster.StateAlive},
	}}
	src := &viewSource{ch: make(chan struct{})}
	src.v.Store(v)
	own := node.NewClusterOwnership(src, func() time.Time { return time.UnixMilli(1234) })

	for _, tc := range []struct {
		slot  uint16
		mine  bool
		owner string
	}{{0, true, ""}, {300, true, ""}, {150, false, "10.0.0.2:7002"}, {250, false, ""}, {301, false, ""}, {16383, false, ""}} {
		if mine, owner := own.Slot(tc.slot); mine != tc.mine || owner != tc.owner {
			t.Errorf("Slot(%d) = %v %q, want %v %q", tc.slot, mine, owner, tc.mine, tc.owner)
		}
	}
	want := fakeID('a') + " 10.0.0.1:7001@17001 myself,master - 0 0 4 connected 0-99 300\n" +
		fakeID('b') + " 10.0.0.2:7002@17002 master - 0 1234 3 connected 100-199\n" +
		fakeID('c') + " 10.0.0.3:7003@17003 master,fail - 0 0 2 disconnected 200-299\n"
	if got := clusterfmt.NodesText(own.Layout()); got != want {
		t.Errorf("CLUSTER NODES:\n%s\nwant:\n%s", got, want)
	}
	if l := own.Layout(); l.CurrentEpoch != 4 || l.State() != "fail" {
		t.Errorf("epoch %d state %s", l.CurrentEpoch, l.State())
	}

	// A new View: the adapter follows it.
	table2 := table
	table2[150] = cluster.SlotOwner{Owner: id('a'), Epoch: 5}
	v2 := *v
	v2.Slots, v2.Epoch = &table2, 5
	src.v.Store(&v2)
	if mine, _ := own.Slot(150); !mine {
		t.Error("slot 150 not served after the new View gave it")
	}
}
