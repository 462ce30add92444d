package proxy

import (
	"bufio"
	"bytes"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
)

// clusterViews are the replies under test, by command.
var clusterViews = []struct {
	args  []string
	write func(*resp.Writer, *clusterSelf)
}{
	{[]string{"CLUSTER", "SLOTS"}, writeClusterSlots},
	{[]string{"CLUSTER", "SHARDS"}, writeClusterShards},
	{[]string{"CLUSTER", "NODES"}, writeClusterNodes},
	{[]string{"CLUSTER", "INFO"}, writeClusterInfo},
	{[]string{"CLUSTER", "MYID"}, writeClusterMyID},
}

// render writes one reply and parses it back, failing on trailing bytes.
func render(t *testing.T, proto int, s *clusterSelf, write func(*resp.Writer, *clusterSelf)) (difftest.Value, []byte) {
	t.Helper()
	w := &resp.Writer{Proto: proto}
	write(w, s)
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
// bus port put into clusterSelf (the values that legitimately differ), in
// RESP2 and RESP3, plain, with an announced hostname, and after an epoch
// bump.
func TestClusterViewMatchesRedis(t *testing.T) {
	c := difftest.StartRedisCluster(t, 1)
	n := &c.Nodes[0]
	host, portStr, err := net.SplitHostPort(n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
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
	self := clusterSelf{ID: n.ID, Host: host, Port: port, BusPort: bus}

	diffAll := func(t *testing.T) {
		for _, proto := range []int{2, 3} {
			conn := n.Conn(t, proto)
			for _, cv := range clusterViews {
				real, err := conn.DoStrings(cv.args...)
				if err != nil {
					t.Fatal(err)
				}
				ours, raw := render(t, proto, &self, cv.write)
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
	self.Hostname = "proxy.example"
	waitNodes(t, admin, ",proxy.example ")
	t.Run("hostname", diffAll)

	mustOK("CONFIG", "SET", "cluster-announce-hostname", "")
	self.Hostname = ""
	mustOK("CLUSTER", "BUMPEPOCH") // current and config epoch to 1
	self.Epoch = 1
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
	s := clusterSelf{ID: "d8e89308f4203548810d381ea9b6a934385bfe4c", Host: "127.0.0.1", Port: 23456}
	const id = "$40\r\nd8e89308f4203548810d381ea9b6a934385bfe4c\r\n"
	const nodesLine = "d8e89308f4203548810d381ea9b6a934385bfe4c 127.0.0.1:23456@33456 myself,master - 0 0 0 connected 0-16383\n"
	const info = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:0\r\ncluster_my_epoch:0\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	shardNode := id + "$4\r\nport\r\n:23456\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
	cases := []struct {
		proto int
		write func(*resp.Writer, *clusterSelf)
		want  string
	}{
		{2, writeClusterSlots, "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:23456\r\n" + id + "*0\r\n"},
		{3, writeClusterSlots, "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:23456\r\n" + id + "%0\r\n"},
		{2, writeClusterShards, "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*14\r\n$2\r\nid\r\n" + shardNode},
		{3, writeClusterShards, "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n" + shardNode},
		{2, writeClusterNodes, "$103\r\n" + nodesLine + "\r\n"},
		{3, writeClusterNodes, "=107\r\ntxt:" + nodesLine + "\r\n"},
		{2, writeClusterInfo, "$312\r\n" + info + "\r\n"},
		{3, writeClusterInfo, "=316\r\ntxt:" + info + "\r\n"},
		{2, writeClusterMyID, id},
		{3, writeClusterMyID, id},
	}
	for _, tc := range cases {
		w := &resp.Writer{Proto: tc.proto}
		tc.write(w, &s)
		if string(w.B) != tc.want {
			t.Errorf("RESP%d:\ngot  %q\nwant %q", tc.proto, w.B, tc.want)
		}
	}
}

func TestClusterSelfBusPort(t *testing.T) {
	for _, tc := range []struct{ port, bus, want int }{
		{7379, 0, 17379},
		{7379, 4242, 4242},
		{55535, 0, 65535},
		{55536, 0, 0}, // Redis refuses such a port in cluster mode; no bus port to show
	} {
		s := clusterSelf{Port: tc.port, BusPort: tc.bus}
		if got := s.busPort(); got != tc.want {
			t.Errorf("port %d bus %d: busPort() = %d, want %d", tc.port, tc.bus, got, tc.want)
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

func TestClusterSelfFor(t *testing.T) {
	s, err := clusterSelfFor("127.0.0.1:7379", "x")
	if err != nil || s != (clusterSelf{ID: "x", Host: "127.0.0.1", Port: 7379}) {
		t.Errorf("got %+v %v", s, err)
	}
	for _, bad := range []string{"127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000", "127.0.0.1:-1"} {
		if _, err := clusterSelfFor(bad, "x"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
