package proxy

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
)

// clusterViews are the replies under test, by command.
var clusterViews = []struct {
	args  []string
	write func(*resp.Writer, *clusterfmt.Layout)
}{
	{[]string{"CLUSTER", "SLOTS"}, clusterfmt.WriteSlots},
	{[]string{"CLUSTER", "SHARDS"}, clusterfmt.WriteShards},
	{[]string{"CLUSTER", "NODES"}, clusterfmt.WriteNodes},
	{[]string{"CLUSTER", "INFO"}, clusterfmt.WriteInfo},
	{[]string{"CLUSTER", "MYID"}, clusterfmt.WriteMyID},
	{[]string{"CLUSTER", "LINKS"}, clusterfmt.WriteLinks},
}

// render writes one reply and parses it back, failing on trailing bytes.
func render(t *testing.T, proto int, l *clusterfmt.Layout, write func(*resp.Writer, *clusterfmt.Layout)) (difftest.Value, []byte) {
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
	return v, w.B
}

var busPortPattern = regexp.MustCompile(`:[0-9]+@([0-9]+)`)

// TestClusterViewMatchesRedis diffs every reply against a real one-master
// Redis Cluster that owns all slots, with the real node's id, port and
// bus port put into the proxy's layout (the values that legitimately differ), in
// RESP2 and RESP3, plain, with an announced hostname, and after an epoch
// bump.
func TestClusterViewMatchesRedis(t *testing.T) {
	c := difftest.StartRedisCluster(t, 1)
	n := &c.Nodes[0]
	admin := n.Conn(t, 2)
	nodes, err := admin.DoStrings("CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	m := busPortPattern.FindSubmatch(nodes.Str)
	if m == nil {
		t.Fatalf("no bus port in CLUSTER NODES %q", nodes.Str)
	}
	bus, _ := strconv.Atoi(string(m[1]))
	self, err := singleLayout(n.Addr, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	self.Nodes[0].BusPort = bus

	diffAll := func(t *testing.T) {
		for _, proto := range []int{2, 3} {
			conn := n.Conn(t, proto)
			for _, cv := range clusterViews {
				real, err := conn.DoStrings(cv.args...)
				if err != nil {
					t.Fatal(err)
				}
				ours, raw := render(t, proto, self, cv.write)
				if !difftest.Equal(real, ours) {
					t.Errorf("RESP%d %s:\nredis: %s\nours:  %s\nraw:   %q", proto, strings.Join(cv.args, " "), real, ours, raw)
				}
			}
		}
	}
	t.Run("plain", diffAll)

	mustOK := func(args ...string) {
		t.Helper()
		if v, err := admin.DoStrings(args...); err != nil || v.IsError() {
			t.Fatalf("%q: %s %v", args, v, err)
		}
	}
	mustOK("CONFIG", "SET", "cluster-announce-hostname", "proxy.example")
	self.Nodes[0].Hostname = "proxy.example"
	waitNodes(t, admin, ",proxy.example ")
	t.Run("hostname", diffAll)

	mustOK("CONFIG", "SET", "cluster-announce-hostname", "")
	self.Nodes[0].Hostname = ""
	mustOK("CLUSTER", "BUMPEPOCH") // current and config epoch to 1
	self.Nodes[0].ConfigEpoch, self.CurrentEpoch = 1, 1
	waitNodes(t, admin, " 1 connected ")
	t.Run("epoch", diffAll)
}

// waitNodes waits until the real node's CLUSTER NODES contains sub.
func waitNodes(t *testing.T, conn *difftest.Conn, sub string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := conn.DoStrings("CLUSTER", "NODES")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(v.Str), sub) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CLUSTER NODES never showed %q: %q", sub, v.Str)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Replies captured from Redis 7.0.15 (a lone node owning all slots, port
// 23456, bus port 33456, cluster-announce-ip 127.0.0.1), so that the
// formats are pinned even where no redis-server is installed.
func TestClusterViewGolden(t *testing.T) {
	s, err := singleLayout("127.0.0.1:23456", "d8e89308f4203548810d381ea9b6a934385bfe4c")
	if err != nil {
		t.Fatal(err)
	}
	const id = "$40\r\nd8e89308f4203548810d381ea9b6a934385bfe4c\r\n"
	const nodesLine = "d8e89308f4203548810d381ea9b6a934385bfe4c 127.0.0.1:23456@33456 myself,master - 0 0 0 connected 0-16383\n"
	const info = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:0\r\ncluster_my_epoch:0\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	shardNode := id + "$4\r\nport\r\n:23456\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
	cases := []struct {
		proto int
		write func(*resp.Writer, *clusterfmt.Layout)
		want  string
	}{
		{2, clusterfmt.WriteSlots, "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:23456\r\n" + id + "*0\r\n"},
		{3, clusterfmt.WriteSlots, "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:23456\r\n" + id + "%0\r\n"},
		{2, clusterfmt.WriteShards, "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*14\r\n$2\r\nid\r\n" + shardNode},
		{3, clusterfmt.WriteShards, "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n" + shardNode},
		{2, clusterfmt.WriteNodes, "$103\r\n" + nodesLine + "\r\n"},
		{3, clusterfmt.WriteNodes, "=107\r\ntxt:" + nodesLine + "\r\n"},
		{2, clusterfmt.WriteInfo, "$312\r\n" + info + "\r\n"},
		{3, clusterfmt.WriteInfo, "=316\r\ntxt:" + info + "\r\n"},
		{2, clusterfmt.WriteMyID, id},
		{3, clusterfmt.WriteMyID, id},
	}
	for _, tc := range cases {
		w := &resp.Writer{Proto: tc.proto}
		tc.write(w, s)
		if string(w.B) != tc.want {
			t.Errorf("RESP%d:\ngot  %q\nwant %q", tc.proto, w.B, tc.want)
		}
	}
}

var hexID = regexp.MustCompile(`^[0-9a-f]{40}$`)

func TestClusterIDs(t *testing.T) {
	a, b := randomClusterID(), randomClusterID()
	if !hexID.MatchString(a) || !hexID.MatchString(b) || a == b {
		t.Errorf("random ids %q %q", a, b)
	}
	s1, s2 := stableClusterID("127.0.0.1:7379"), stableClusterID("127.0.0.1:7380")
	if !hexID.MatchString(s1) || s1 != stableClusterID("127.0.0.1:7379") || s1 == s2 {
		t.Errorf("stable ids %q %q", s1, s2)
	}
}

func TestSingleLayout(t *testing.T) {
	l, err := singleLayout("127.0.0.1:7379", "x")
	if err != nil || len(l.Nodes) != 1 {
		t.Fatalf("got %+v %v", l, err)
	}
	n := l.Nodes[0]
	if n.ID != "x" || n.Host != "127.0.0.1" || n.Port != 7379 || !n.Myself || len(n.Ranges) != 1 || n.Ranges[0] != (clusterfmt.Range{First: 0, Last: 16383}) {
		t.Errorf("got %+v", n)
	}
	for _, bad := range []string{"127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", "127.0.0.1:-1"} {
		if _, err := singleLayout(bad, "x"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
