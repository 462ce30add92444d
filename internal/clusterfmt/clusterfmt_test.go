package clusterfmt_test

import (
	"bufio"
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
)

// views are the replies under test, by command.
var views = []struct {
	args  []string
	write func(*resp.Writer, *clusterfmt.Layout)
}{
	{[]string{"CLUSTER", "SLOTS"}, clusterfmt.WriteSlots},
	{[]string{"CLUSTER", "SHARDS"}, clusterfmt.WriteShards},
	{[]string{"CLUSTER", "NODES"}, clusterfmt.WriteNodes},
	{[]string{"CLUSTER", "INFO"}, clusterfmt.WriteInfo},
	{[]string{"CLUSTER", "MYID"}, clusterfmt.WriteMyID},
}

// render writes one reply and parses it back, failing on trailing bytes.
func render(t *testing.T, proto int, l *clusterfmt.Layout, write func(*resp.Writer, *clusterfmt.Layout)) difftest.Value {
	t.Helper()
	w := &resp.Writer{Proto: proto}
	write(w, l)
	r := bufio.NewReader(bytes.NewReader(w.B))
	v, err := difftest.ReadValue(r)
	if err != nil {
		t.Fatalf("our reply %q does not parse: %v", w.B, err)
	}
	if r.Buffered() != 0 {
		t.Fatalf("our reply %q has %d bytes after the value", w.B, r.Buffered())
	}
	return v
}

// nodesLine is one CLUSTER NODES line, split into its fields.
var nodesLine = regexp.MustCompile(`^([0-9a-f]{40}) ([^:]*):([0-9]+)@([0-9]+)(?:,(\S+))? (\S+) - ([0-9]+) ([0-9]+) ([0-9]+) (connected|disconnected)((?: [0-9-]+)*)$`)

// layoutFrom builds the Layout a real node describes in its CLUSTER NODES
// (ids, addresses, bus ports, flags, epochs, ranges, in its order), so
// that our replies can be diffed against the node's others. Its
// CLUSTER INFO gives the current epoch.
func layoutFrom(t *testing.T, conn *difftest.Conn) *clusterfmt.Layout {
	t.Helper()
	nodes, err := conn.DoStrings("CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	info, err := conn.DoStrings("CLUSTER", "INFO")
	if err != nil {
		t.Fatal(err)
	}
	epoch, _ := strconv.ParseUint(infoField(string(info.Str), "cluster_current_epoch"), 10, 64)
	return parseLayout(t, nodes, epoch)
}

// parseLayout builds the Layout of one CLUSTER NODES reply.
func parseLayout(t *testing.T, nodes difftest.Value, epoch uint64) *clusterfmt.Layout {
	t.Helper()
	l := &clusterfmt.Layout{CurrentEpoch: epoch}
	text := strings.TrimPrefix(string(nodes.Str), "txt:") // RESP3's verbatim string
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		m := nodesLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected CLUSTER NODES line %q", line)
		}
		n := clusterfmt.Node{ID: m[1], Host: m[2], Hostname: m[5]}
		n.Port, _ = strconv.Atoi(m[3])
		n.BusPort, _ = strconv.Atoi(m[4])
		n.PingSent, _ = strconv.ParseInt(m[7], 10, 64)
		n.PongReceived, _ = strconv.ParseInt(m[8], 10, 64)
		n.ConfigEpoch, _ = strconv.ParseUint(m[9], 10, 64)
		flags := strings.Split(m[6], ",")
		n.Myself = slices.Contains(flags, "myself")
		switch {
		case slices.Contains(flags, "fail"):
			n.Health = clusterfmt.Fail
		case slices.Contains(flags, "fail?"):
			n.Health = clusterfmt.PFail
		}
		for _, f := range strings.Fields(m[11]) {
			first, last, ok := strings.Cut(f, "-")
			if !ok {
				last = first
			}
			a, _ := strconv.Atoi(first)
			b, _ := strconv.Atoi(last)
			n.Ranges = append(n.Ranges, clusterfmt.Range{First: uint16(a), Last: uint16(b)})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// messageLine is a cluster-bus message counter line of CLUSTER INFO.
var messageLine = regexp.MustCompile(`(?m)^cluster_stats_messages_[a-z]+_(sent|received):[0-9]+\r\n`)
var messageTotal = regexp.MustCompile(`(?m)^(cluster_stats_messages_(?:sent|received)):[0-9]+\r\n`)

// normalize zeroes what legitimately differs between a real node's replies
// and ours: cluster-bus message counters (CLUSTER INFO). The ping and pong
// times of CLUSTER NODES are taken from the real reply by parseLayout.
func normalize(args []string, v difftest.Value) difftest.Value {
	if args[1] != "INFO" {
		return v
	}
	s := messageLine.ReplaceAllString(string(v.Str), "")
	s = messageTotal.ReplaceAllString(s, "$1:0\r\n")
	v.Str = []byte(s)
	return v
}

// failedLink blanks the link state of failed nodes' CLUSTER NODES lines:
// Redis keeps trying to reach a failed node, and while a connection
// attempt is pending its line says "connected" (ours, like Redis's
// between attempts, says "disconnected").
func failedLink(v difftest.Value) difftest.Value {
	lines := strings.Split(string(v.Str), "\n")
	for i, l := range lines {
		if strings.Contains(l, ",fail ") {
			l = strings.Replace(l, " disconnected", " <link>", 1)
			lines[i] = strings.Replace(l, " connected", " <link>", 1)
		}
	}
	v.Str = []byte(strings.Join(lines, "\n"))
	return v
}

// sortShards orders CLUSTER SHARDS's shards by node id: Redis lists them
// in its node table's hash order.
func sortShards(v difftest.Value) difftest.Value {
	id := func(shard difftest.Value) string {
		for i := 0; i+1 < len(shard.Elems); i += 2 {
			if string(shard.Elems[i].Str) == "nodes" {
				node := shard.Elems[i+1].Elems[0]
				return string(node.Elems[1].Str) // "id" comes first
			}
		}
		return ""
	}
	slices.SortFunc(v.Elems, func(a, b difftest.Value) int { return strings.Compare(id(a), id(b)) })
	return v
}

// diffAll compares every reply of every node of the cluster with ours for
// the Layout the node describes, in RESP2 and RESP3.
func diffAll(t *testing.T, c *difftest.RedisCluster, skip func(n *difftest.ClusterNode) bool) {
	t.Helper()
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if skip != nil && skip(n) {
			continue
		}
		for _, proto := range []int{2, 3} {
			conn := n.Conn(t, proto)
			l := layoutFrom(t, conn)
			if s := l.Self(); s == nil || s.ID != n.ID {
				t.Fatalf("%s: no myself line for %s", n.Addr, n.ID)
			}
			for _, v := range views {
				real, err := conn.DoStrings(v.args...)
				if err != nil {
					t.Fatal(err)
				}
				real = normalize(v.args, real)
				ll := l
				if v.args[1] == "NODES" {
					// The ping and pong times move between two calls
					// (a ping in flight, then answered): take them
					// from the very reply compared.
					ll = parseLayout(t, real, l.CurrentEpoch)
				}
				ours := render(t, proto, ll, v.write)
				switch v.args[1] {
				case "SHARDS":
					real, ours = sortShards(real), sortShards(ours)
				case "NODES":
					real, ours = failedLink(real), failedLink(ours)
				}
				if !difftest.Equal(real, ours) {
					t.Errorf("%s RESP%d %s:\nredis: %s\nours:  %s", n.Addr, proto, strings.Join(v.args, " "), real, ours)
				}
			}
			diffReplicas(t, n, conn, proto, l)
			conn.Close()
		}
	}
}

// TestMatchesRedisCluster diffs every reply against a real 3-master Redis
// Cluster (each node's own view), then again once one master was killed
// and the others marked it failed.
func TestMatchesRedisCluster(t *testing.T) {
	c := difftest.StartRedisCluster(t, 3)
	t.Run("healthy", func(t *testing.T) { diffAll(t, c, nil) })

	dead := &c.Nodes[2]
	for i := range 2 {
		conn := c.Nodes[i].Conn(t, 2)
		if v, err := conn.DoStrings("CONFIG", "SET", "cluster-node-timeout", "300"); err != nil || v.IsError() {
			t.Fatalf("CONFIG SET: %s %v", v, err)
		}
	}
	kill := dead.Conn(t, 2)
	kill.DoStrings("SHUTDOWN", "NOSAVE") // the connection closes: no reply
	for i := range 2 {
		conn := c.Nodes[i].Conn(t, 2)
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, err := conn.DoStrings("CLUSTER", "NODES")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(v.Str), " master,fail ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never marked %s failed:\n%s", c.Nodes[i].Addr, dead.Addr, v.Str)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Run("one failed", func(t *testing.T) {
		diffAll(t, c, func(n *difftest.ClusterNode) bool { return n == dead })
	})
}

// TestSingleMatchesLoneNode diffs Single against a lone cluster-mode
// redis-server given every slot: what the proxy and a standalone node
// present.
func TestSingleMatchesLoneNode(t *testing.T) {
	c := difftest.StartRedisCluster(t, 1)
	n := &c.Nodes[0]
	for _, proto := range []int{2, 3} {
		conn := n.Conn(t, proto)
		real := layoutFrom(t, conn)
		host, port, err := clusterfmt.SplitHostPort(n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		l := clusterfmt.Single(n.ID, host, port, 0)
		l.Nodes[0].BusPort = real.Nodes[0].BusPort // random in the oracle
		for _, v := range views {
			want, err := conn.DoStrings(v.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(t, proto, l, v.write); !difftest.Equal(normalize(v.args, want), got) {
				t.Errorf("RESP%d %s:\nredis: %s\nours:  %s", proto, strings.Join(v.args, " "), want, got)
			}
		}
	}
}

// TestLayoutEdges covers what the real clusters above do not show:
// unassigned slots, a suspected node, a master without slots, a hostname,
// the default bus port and single-slot ranges.
func TestLayoutEdges(t *testing.T) {
	a := strings.Repeat("a", 40)
	b := strings.Repeat("b", 40)
	d := strings.Repeat("d", 40)
	l := &clusterfmt.Layout{
		CurrentEpoch: 7,
		Nodes: []clusterfmt.Node{
			{ID: a, Host: "10.0.0.1", Port: 7001, Myself: true, ConfigEpoch: 3, PongReceived: 5,
				Ranges: []clusterfmt.Range{{0, 99}, {200, 200}}},
			{ID: b, Host: "10.0.0.2", Port: 60000, Hostname: "b.example", Health: clusterfmt.PFail, ConfigEpoch: 7,
				PingSent: 11, PongReceived: 12, Ranges: []clusterfmt.Range{{100, 199}}},
			{ID: d, Host: "10.0.0.4", Port: 7004, Health: clusterfmt.Fail, ConfigEpoch: 2},
		},
	}
	wantNodes := a + " 10.0.0.1:7001@17001 myself,master - 0 5 3 connected 0-99 200\n" +
		b + " 10.0.0.2:60000@0,b.example master,fail? - 11 12 7 disconnected 100-199\n" +
		d + " 10.0.0.4:7004@17004 master,fail - 0 0 2 disconnected\n"
	if got := clusterfmt.NodesText(l); got != wantNodes {
		t.Errorf("CLUSTER NODES:\n got %q\nwant %q", got, wantNodes)
	}
	wantInfo := "cluster_state:fail\r\ncluster_slots_assigned:201\r\ncluster_slots_ok:101\r\n" +
		"cluster_slots_pfail:100\r\ncluster_slots_fail:0\r\ncluster_known_nodes:3\r\ncluster_size:2\r\n" +
		"cluster_current_epoch:7\r\ncluster_my_epoch:3\r\ncluster_stats_messages_sent:0\r\n" +
		"cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	if got := clusterfmt.InfoText(l); got != wantInfo {
		t.Errorf("CLUSTER INFO:\n got %q\nwant %q", got, wantInfo)
	}
	w := &resp.Writer{Proto: 2}
	clusterfmt.WriteSlots(w, l)
	wantSlots := "*3\r\n" +
		"*3\r\n:0\r\n:99\r\n*4\r\n$8\r\n10.0.0.1\r\n:7001\r\n$40\r\n" + a + "\r\n*0\r\n" +
		"*3\r\n:100\r\n:199\r\n*4\r\n$8\r\n10.0.0.2\r\n:60000\r\n$40\r\n" + b + "\r\n*2\r\n$8\r\nhostname\r\n$9\r\nb.example\r\n" +
		"*3\r\n:200\r\n:200\r\n*4\r\n$8\r\n10.0.0.1\r\n:7001\r\n$40\r\n" + a + "\r\n*0\r\n"
	if string(w.B) != wantSlots {
		t.Errorf("CLUSTER SLOTS:\n got %q\nwant %q", w.B, wantSlots)
	}
	w.Reset()
	clusterfmt.WriteShards(w, l)
	v, err := difftest.ReadValue(bufio.NewReader(bytes.NewReader(w.B)))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Elems) != 3 {
		t.Fatalf("CLUSTER SHARDS: %d shards, want 3: %s", len(v.Elems), v)
	}
	// The slotless master's shard has an empty slot list; the failed one
	// says so; the suspected one is still online, as in Redis.
	for i, want := range []struct {
		slots  string
		health string
	}{{"[0 99 200 200]", "online"}, {"[100 199]", "online"}, {"[]", "fail"}} {
		shard := v.Elems[i]
		var got []string
		for _, e := range shard.Elems[1].Elems {
			got = append(got, strconv.FormatInt(e.Int, 10))
		}
		if got := "[" + strings.Join(got, " ") + "]"; got != want.slots {
			t.Errorf("shard %d slots %s, want %s", i, got, want.slots)
		}
		node := shard.Elems[3].Elems[0]
		if got := string(node.Elems[len(node.Elems)-1].Str); got != want.health {
			t.Errorf("shard %d health %q, want %q", i, got, want.health)
		}
	}
	if l.State() != "fail" {
		t.Errorf("state %s with unassigned slots", l.State())
	}
	if got := clusterfmt.Single(a, "h", 1, 0).State(); got != "ok" {
		t.Errorf("Single state %s", got)
	}
}

// diffReplicas compares CLUSTER REPLICAS and SLAVES for every node the
// real node knows (each a master without replicas), an unknown id, a known
// id in capitals and an id with a line break in it.
func diffReplicas(t *testing.T, n *difftest.ClusterNode, conn *difftest.Conn, proto int, l *clusterfmt.Layout) {
	t.Helper()
	ids := []string{"abc", strings.ToUpper(l.Nodes[0].ID), "x\r\ny"}
	for _, node := range l.Nodes {
		ids = append(ids, node.ID)
	}
	for _, sub := range []string{"REPLICAS", "SLAVES"} {
		for _, id := range ids {
			real, err := conn.DoStrings("CLUSTER", sub, id)
			if err != nil {
				t.Fatal(err)
			}
			ours := render(t, proto, l, func(w *resp.Writer, l *clusterfmt.Layout) {
				clusterfmt.WriteReplicas(w, l, []byte(id))
			})
			if !difftest.Equal(real, ours) {
				t.Errorf("%s RESP%d CLUSTER %s %q:\nredis: %s\nours:  %s", n.Addr, proto, sub, id, real, ours)
			}
		}
	}
}

// TestUnservedSlotsFail: slots a healthy owner cannot serve (a proxy's
// unreachable node) count as failed, and the cluster as failing, without
// touching the other fields.
func TestUnservedSlotsFail(t *testing.T) {
	l := clusterfmt.Single(strings.Repeat("a", 40), "127.0.0.1", 7379, 0)
	if got := clusterfmt.InfoText(l); !strings.HasPrefix(got, "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n") {
		t.Errorf("CLUSTER INFO, all served:\n%s", got)
	}
	l.Unserved = 5462
	if got := clusterfmt.InfoText(l); !strings.HasPrefix(got, "cluster_state:fail\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:10922\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:5462\r\ncluster_known_nodes:1\r\ncluster_size:1\r\n") {
		t.Errorf("CLUSTER INFO, 5462 slots unserved:\n%s", got)
	}
}
