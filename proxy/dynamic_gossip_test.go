package proxy_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// startMember starts a gossip member (test timings, loopback, quiet).
func startMember(t *testing.T, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	cfg.Bind, cfg.Fast = "127.0.0.1:0", true
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGossipClusterProxy: a proxy joined to a real gossip cluster of three
// members (each announcing an in-process node) routes by the table they
// bootstrapped; when a member stops, its slots answer CLUSTERDOWN within
// seconds while the others keep working; when it comes back with its
// data directory (same id, same slots) they are served again.
func TestGossipClusterProxy(t *testing.T) {
	var (
		addrs   []string
		dirs    []string
		members []*cluster.Cluster
		relay   *proxytest.Relay // in front of node 1, which stops
	)
	for i := range 3 {
		_, a, _ := nodetest.Start(t, node.Options{}, nil)
		if i == 1 {
			relay = proxytest.NewRelay(t, a)
			a = relay.Addr
		}
		addrs = append(addrs, a)
		dirs = append(dirs, t.TempDir())
		cfg := cluster.Config{Role: cluster.RoleNode, RESPAddr: a, BootstrapExpect: 3, Dir: dirs[i]}
		if i > 0 {
			cfg.Join = []string{members[0].GossipAddr()}
		}
		members = append(members, startMember(t, cfg))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pm := startMember(t, cluster.Config{Role: cluster.RoleProxy, RESPAddr: ln.Addr().String(), Join: []string{members[0].GossipAddr()}})
	px, err := proxy.New(proxy.Options{Cluster: pm, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- px.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		px.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := dial(t, ln.Addr().String(), 2)
	const gossipLimit = 10 * time.Second
	waitFor(t, "every slot served and all three nodes alive", gossipLimit, func() bool {
		return infoField(t, c, "cluster", "cluster_slots_served") == strconv.Itoa(slots.Count) &&
			infoField(t, c, "cluster", "cluster_nodes_alive") == "3"
	})

	// Keys land on the owners the gossip table names.
	v := pm.View()
	keyOf := map[string]string{} // node address -> a key it owns
	for i := 0; len(keyOf) < 3; i++ {
		k := fmt.Sprint("g", i)
		m, ok := v.Owner(slots.SlotString(k))
		if !ok {
			t.Fatalf("slot of %s unassigned", k)
		}
		if keyOf[m.Addr] == "" {
			keyOf[m.Addr] = k
		}
	}
	for a, k := range keyOf {
		do(t, c, "SET", k, "v-"+k)
		if !on(t, a, k) {
			t.Errorf("%s is not on %s, its owner", k, a)
		}
	}

	// Member 1 stops as its process would: it leaves the gossip cluster
	// and its node stops answering (the relay is cut; the node keeps its
	// data behind it). Whether the others record it left or, with the
	// leave notice lost on a loaded machine, dead after their probes
	// fail, its slots answer CLUSTERDOWN: a dead verdict on a node that
	// still answered would be overruled (verifyDead).
	members[1].Close()
	relay.Cut()
	gone := keyOf[addrs[1]]
	start := time.Now()
	waitFor(t, "the departed member's slots to answer CLUSTERDOWN", gossipLimit, func() bool {
		return do(t, c, "GET", gone).Text() == resp.ErrClusterDownSlot
	})
	t.Logf("CLUSTERDOWN %v after the member left", time.Since(start).Round(time.Millisecond))
	for _, a := range []string{addrs[0], addrs[2]} {
		// Waited for rather than read once: on a loaded machine
		// memberlist may suspect a live member for a moment (its
		// probes time out), and its slots then answer CLUSTERDOWN
		// until the suspicion is refuted.
		k := keyOf[a]
		waitFor(t, fmt.Sprintf("GET %s on a live node", k), gossipLimit, func() bool {
			return do(t, c, "GET", k).Text() == "v-"+k
		})
	}

	// It comes back from its directory: same id, same slots.
	if err := relay.Heal(); err != nil {
		t.Fatal(err)
	}
	startMember(t, cluster.Config{Role: cluster.RoleNode, RESPAddr: addrs[1], BootstrapExpect: 3, Dir: dirs[1],
		Join: []string{members[0].GossipAddr()}})
	waitFor(t, "the returning member's slots to be served", gossipLimit, func() bool {
		return do(t, c, "GET", gone).Text() == "v-"+gone
	})
}

// TestGossipProxyServesOnceItKnowsTheTable: a proxy joining a running
// cluster takes its first clients only once it has the slot table, so
// the very first commands are served rather than answered CLUSTERDOWN
// while the table is still on its way by gossip.
func TestGossipProxyServesOnceItKnowsTheTable(t *testing.T) {
	var members []*cluster.Cluster
	for i := range 3 {
		_, a, _ := nodetest.Start(t, node.Options{}, nil)
		cfg := cluster.Config{Role: cluster.RoleNode, RESPAddr: a, BootstrapExpect: 3, Dir: t.TempDir()}
		if i > 0 {
			cfg.Join = []string{members[0].GossipAddr()}
		}
		members = append(members, startMember(t, cfg))
	}
	waitFor(t, "the nodes to bootstrap", 10*time.Second, func() bool {
		v := members[0].View()
		for i := range v.Slots {
			if v.Slots[i].Owner == "" {
				return false
			}
		}
		return true
	})
	for round := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pm := startMember(t, cluster.Config{Role: cluster.RoleProxy, RESPAddr: ln.Addr().String(), Join: []string{members[round].GossipAddr()}})
		px, err := proxy.New(proxy.Options{Cluster: pm, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- px.Serve(ctx, ln) }()
		c := dial(t, ln.Addr().String(), 2)
		for i := range 30 {
			k := fmt.Sprint("first:", round, ":", i)
			if v := do(t, c, "SET", k, "v"); v.Text() != "OK" {
				t.Errorf("round %d: SET %s on a proxy that has just joined: %v", round, k, v)
			}
		}
		cancel()
		px.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		pm.Close()
	}
}
