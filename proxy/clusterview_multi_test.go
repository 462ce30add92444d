package proxy_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestClusterSlotsSeveralProxies: with two live proxies in the view, each
// presents a cluster of two masters (the proxies, in id order) splitting
// the slots, so a cluster-aware client uses both; with the other proxy
// dead the reply is a lone master again.
func TestClusterSlotsSeveralProxies(t *testing.T) {
	e := startViewEnv(t, 2, proxy.Options{})
	c := dial(t, e.addr, 2)
	var tab proxytest.Slots
	tab.Assign(0, 8191, e.ids[0], 1)
	tab.Assign(8192, 16383, e.ids[1], 1)
	// The other proxy sorts first (a lower id), so it gets the first
	// half.
	other := proxytest.ID(50)
	e.src.Set(e.view(&tab, nil, proxyMember(other, "127.0.0.1:7999", cluster.StateAlive)))
	waitFor(t, "two proxies in CLUSTER SLOTS", promptly, func() bool { return len(do(t, c, "CLUSTER", "SLOTS").Elems) == 2 })
	host, portStr, _ := net.SplitHostPort(e.addr)
	port, _ := strconv.Atoi(portStr)
	entry := func(first, last int, host string, port int, id cluster.NodeID) difftest.Value {
		return difftest.ArrayOf(difftest.Int(int64(first)), difftest.Int(int64(last)),
			difftest.ArrayOf(difftest.BulkOf(host), difftest.Int(int64(port)), difftest.BulkOf(string(id)), difftest.ArrayOf()))
	}
	want(t, "CLUSTER SLOTS", do(t, c, "CLUSTER", "SLOTS"), difftest.ArrayOf(
		entry(0, 8191, "127.0.0.1", 7999, other),
		entry(8192, 16383, host, port, e.self)))
	wantNodes := fmt.Sprintf("%s 127.0.0.1:7999@17999 master - 0 0 0 connected 0-8191\n%s %s:%d@%d myself,master - 0 0 0 connected 8192-16383\n",
		other, e.self, host, port, port+10000)
	if port+10000 > 65535 {
		wantNodes = strings.Replace(wantNodes, fmt.Sprintf("@%d", port+10000), "@0", 1)
	}
	if got := do(t, c, "CLUSTER", "NODES").Text(); got != wantNodes {
		t.Errorf("CLUSTER NODES:\n%s\nwant\n%s", got, wantNodes)
	}
	info := do(t, c, "CLUSTER", "INFO").Text()
	if !strings.Contains(info, "cluster_known_nodes:2\r\n") || !strings.Contains(info, "cluster_size:2\r\n") || !strings.Contains(info, "cluster_state:ok\r\n") {
		t.Errorf("CLUSTER INFO:\n%s", info)
	}
	shards := do(t, c, "CLUSTER", "SHARDS")
	if len(shards.Elems) != 2 || fmt.Sprint(shards.Elems[1].Elems[1]) != fmt.Sprint(difftest.ArrayOf(difftest.Int(8192), difftest.Int(16383))) {
		t.Errorf("CLUSTER SHARDS: %v", shards)
	}
	if v := do(t, c, "CLUSTER", "MYID"); v.Text() != string(e.self) {
		t.Errorf("CLUSTER MYID %v", v)
	}
	// Every master of the view (the proxies) has no replicas; an id not in
	// the view gets Redis's error, as does a missing argument.
	for _, sub := range []string{"REPLICAS", "slaves"} {
		for _, id := range []cluster.NodeID{e.self, other} {
			want(t, "CLUSTER "+sub+" "+string(id), do(t, c, "CLUSTER", sub, string(id)), difftest.ArrayOf())
		}
		want(t, "CLUSTER "+sub+" of an unknown id", do(t, c, "CLUSTER", sub, "abc"), difftest.Err("ERR Unknown node abc"))
		want(t, "CLUSTER "+sub+" without an id", do(t, c, "CLUSTER", sub),
			difftest.Err("ERR wrong number of arguments for 'cluster|"+strings.ToLower(sub)+"' command"))
	}
	for _, id := range []cluster.NodeID{e.self, other} {
		want(t, "CLUSTER COUNT-FAILURE-REPORTS "+string(id), do(t, c, "CLUSTER", "COUNT-FAILURE-REPORTS", string(id)), difftest.Int(0))
	}
	want(t, "CLUSTER COUNT-FAILURE-REPORTS of an unknown id", do(t, c, "CLUSTER", "COUNT-FAILURE-REPORTS", "abc"), difftest.Err("ERR Unknown node abc"))

	e.src.Set(e.view(&tab, nil, proxyMember(other, "127.0.0.1:7999", cluster.StateDead)))
	waitFor(t, "one proxy in CLUSTER SLOTS", promptly, func() bool { return len(do(t, c, "CLUSTER", "SLOTS").Elems) == 1 })
	want(t, "CLUSTER SLOTS alone", do(t, c, "CLUSTER", "SLOTS"), difftest.ArrayOf(entry(0, 16383, host, port, e.self)))
}

// TestClusterClientSpreadsOverProxies: go-redis's ClusterClient pointed at
// one of two proxies learns both from CLUSTER SLOTS and sends each its
// share; every command is served whichever proxy gets it.
func TestClusterClientSpreadsOverProxies(t *testing.T) {
	var nodes []string
	var tab proxytest.Slots
	for i := range 2 {
		_, addr, _ := nodetest.Start(t, node.Options{}, nil)
		nodes = append(nodes, addr)
		tab.Assign(i*8192, i*8192+8191, proxytest.ID(i+1), 1)
	}
	pids := []cluster.NodeID{proxytest.ID(100), proxytest.ID(101)}
	lns := make([]net.Listener, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	ms := []cluster.Member{
		nodeMember(proxytest.ID(1), nodes[0], cluster.StateAlive),
		nodeMember(proxytest.ID(2), nodes[1], cluster.StateAlive),
		proxyMember(pids[0], lns[0].Addr().String(), cluster.StateAlive),
		proxyMember(pids[1], lns[1].Addr().String(), cluster.StateAlive),
	}
	var pxs []*difftest.Conn
	for i := range 2 {
		src := proxytest.NewSource(proxytest.View(pids[i], ms, &tab))
		px, err := proxy.New(proxy.Options{Cluster: src, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { px.Serve(ctx, lns[i]); close(done) }()
		t.Cleanup(func() { cancel(); px.Close(); <-done })
		pxs = append(pxs, dial(t, lns[i].Addr().String(), 2))
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{lns[0].Addr().String()}})
	defer cc.Close()
	ctx := context.Background()
	for i := range 200 {
		if err := cc.Set(ctx, fmt.Sprint("cc", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		if v, err := cc.Get(ctx, fmt.Sprint("cc", i)).Int(); err != nil || v != i {
			t.Fatalf("GET cc%d: %v %v", i, v, err)
		}
	}
	for i, c := range pxs {
		n, _ := strconv.Atoi(infoField(t, c, "stats", "total_commands_processed"))
		if n < 100 {
			t.Errorf("proxy %d processed %d commands: the client did not spread", i, n)
		}
	}
}
