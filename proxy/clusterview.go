package proxy

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// The proxy's answers to CLUSTER SLOTS, SHARDS, NODES, INFO and MYID.
//
// To a cluster-aware client (go-redis's ClusterClient, redis-py's
// RedisCluster, redis-cli -c) the proxy is a Redis Cluster of one master
// that owns all 16384 slots, so every command comes to it and it does the
// routing. The replies are byte for byte those of Redis 7.0.15 in that
// situation: a lone cluster-mode redis-server given every slot with
// CLUSTER ADDSLOTSRANGE 0 16383 and started with cluster-announce-ip (a
// lone node never learns its IP from peers; without it Redis prints an
// empty one). clusterview_test.go diffs them against such a server in
// RESP2 and RESP3.

// clusterSelf is what the CLUSTER replies say about the proxy.
type clusterSelf struct {
	// ID is the node id: 40 lowercase hex characters.
	ID string
	// Host is the IP clients are told to connect to ("ip" and "endpoint"
	// in the replies). Redis prints it as it is, even empty.
	Host string
	// Port is the client port.
	Port int
	// BusPort is the cluster bus port shown after '@' in CLUSTER NODES;
	// 0 means Port+10000, Redis's default (or 0 where that is no port).
	// The proxy has no bus: nobody connects to it.
	BusPort int
	// Hostname, when set, is announced as Redis does with
	// cluster-announce-hostname: ",hostname" in CLUSTER NODES and a
	// "hostname" field in CLUSTER SLOTS and SHARDS. Empty leaves it out.
	Hostname string
	// Epoch is the current epoch and the proxy's config epoch. A lone
	// node given its slots with ADDSLOTSRANGE is at 0.
	Epoch uint64
}

// clusterBusPortIncr is Redis's default distance from the client port to
// the cluster bus port (CLUSTER_PORT_INCR).
const clusterBusPortIncr = 10000

// busPort is the cport CLUSTER NODES shows.
func (s *clusterSelf) busPort() int {
	if s.BusPort != 0 {
		return s.BusPort
	}
	if p := s.Port + clusterBusPortIncr; p <= 65535 {
		return p
	}
	return 0
}

// clusterIDLen is the length of a node id in hex characters.
const clusterIDLen = 40

// randomClusterID returns a fresh node id, as Redis makes one for a new
// node (40 random hex characters).
func randomClusterID() string {
	var b [clusterIDLen / 2]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return hex.EncodeToString(b[:])
}

// stableClusterID derives a node id from the proxy's address, so that a
// restarted proxy keeps its id and clients see the same cluster.
func stableClusterID(addr string) string {
	sum := sha1.Sum([]byte("shardgate proxy " + addr))
	return hex.EncodeToString(sum[:])
}

// writeClusterMyID writes CLUSTER MYID's reply: the id as a bulk string.
func writeClusterMyID(w *resp.Writer, s *clusterSelf) {
	w.BulkString(s.ID)
}

// writeClusterSlots writes CLUSTER SLOTS: one range, 0-16383, served by
// the proxy with no replicas. Each node entry is [ip, port, id, metadata]
// where metadata is a map (an empty array in RESP2, %0 in RESP3) holding
// "hostname" only when one is announced.
func writeClusterSlots(w *resp.Writer, s *clusterSelf) {
	w.Array(1)
	w.Array(3)
	w.Int(0)
	w.Int(slots.Count - 1)
	w.Array(4)
	w.BulkString(s.Host)
	w.Int(int64(s.Port))
	w.BulkString(s.ID)
	if s.Hostname == "" {
		w.Map(0)
		return
	}
	w.Map(1)
	w.BulkString("hostname")
	w.BulkString(s.Hostname)
}

// writeClusterShards writes CLUSTER SHARDS: one shard with slots [0, 16383]
// (integers, in pairs) and one node, a healthy master. Both levels are
// maps (flat arrays in RESP2). The node's fields come in Redis's order;
// "hostname" only when one is announced, and no "tls-port" (the proxy
// does not serve TLS).
func writeClusterShards(w *resp.Writer, s *clusterSelf) {
	w.Array(1)
	w.Map(2)
	w.BulkString("slots")
	w.Array(2)
	w.Int(0)
	w.Int(slots.Count - 1)
	w.BulkString("nodes")
	w.Array(1)
	fields := 7
	if s.Hostname != "" {
		fields++
	}
	w.Map(fields)
	w.BulkString("id")
	w.BulkString(s.ID)
	w.BulkString("port")
	w.Int(int64(s.Port))
	w.BulkString("ip")
	w.BulkString(s.Host)
	w.BulkString("endpoint")
	w.BulkString(s.Host) // cluster-preferred-endpoint-type ip, the default
	if s.Hostname != "" {
		w.BulkString("hostname")
		w.BulkString(s.Hostname)
	}
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("replication-offset")
	w.Int(0)
	w.BulkString("health")
	w.BulkString("online")
}

// clusterNodesText is CLUSTER NODES's text: the one line describing the
// proxy, newline-terminated as Redis ends every line.
//
//	<id> <ip>:<port>@<cport>[,<hostname>] myself,master - 0 0 <epoch> connected 0-16383
func clusterNodesText(s *clusterSelf) string {
	var b strings.Builder
	b.WriteString(s.ID)
	b.WriteByte(' ')
	b.WriteString(s.Host)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(s.Port))
	b.WriteByte('@')
	b.WriteString(strconv.Itoa(s.busPort()))
	if s.Hostname != "" {
		b.WriteByte(',')
		b.WriteString(s.Hostname)
	}
	// flags, master id ("-" for a master), ping sent, pong received
	// (both 0 for myself on a lone node), config epoch, link state.
	b.WriteString(" myself,master - 0 0 ")
	b.WriteString(strconv.FormatUint(s.Epoch, 10))
	b.WriteString(" connected 0-")
	b.WriteString(strconv.Itoa(slots.Count - 1))
	b.WriteByte('\n')
	return b.String()
}

// writeClusterNodes writes CLUSTER NODES: a bulk string in RESP2, a
// verbatim "txt" string in RESP3.
func writeClusterNodes(w *resp.Writer, s *clusterSelf) {
	w.Verbatim(clusterNodesText(s))
}

// clusterInfoText is CLUSTER INFO's text, CRLF after every line. The
// proxy exchanges no cluster-bus messages, so the counters are 0 and, as
// on a Redis node that has sent or received none, the per-type
// cluster_stats_messages_<type>_sent/received lines are left out.
func clusterInfoText(s *clusterSelf) string {
	epoch := strconv.FormatUint(s.Epoch, 10)
	all := strconv.Itoa(slots.Count)
	return "cluster_state:ok\r\n" +
		"cluster_slots_assigned:" + all + "\r\n" +
		"cluster_slots_ok:" + all + "\r\n" +
		"cluster_slots_pfail:0\r\n" +
		"cluster_slots_fail:0\r\n" +
		"cluster_known_nodes:1\r\n" +
		"cluster_size:1\r\n" +
		"cluster_current_epoch:" + epoch + "\r\n" +
		"cluster_my_epoch:" + epoch + "\r\n" +
		"cluster_stats_messages_sent:0\r\n" +
		"cluster_stats_messages_received:0\r\n" +
		"total_cluster_links_buffer_limit_exceeded:0\r\n"
}

// writeClusterInfo writes CLUSTER INFO: a bulk string in RESP2, a verbatim
// "txt" string in RESP3.
func writeClusterInfo(w *resp.Writer, s *clusterSelf) {
	w.Verbatim(clusterInfoText(s))
}

// clusterSelfFor builds the proxy's clusterSelf from the address it
// announces (host:port).
func clusterSelfFor(announce, id string) (clusterSelf, error) {
	host, portStr, err := net.SplitHostPort(announce)
	if err != nil {
		return clusterSelf{}, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return clusterSelf{}, err
	}
	return clusterSelf{ID: id, Host: host, Port: int(port)}, nil
}

// Several proxies. When the cluster view shows more than one live proxy,
// every proxy presents the same Redis Cluster: one master per live proxy
// (in member id order) owning a contiguous share of the slots, spread as
// redis-cli --cluster create spreads them. A cluster-aware client then
// spreads its connections over the proxies, and when one dies the others
// present the slots without it. Any proxy serves any slot, so a client
// with an older picture is never wrong, only less spread. Each proxy is
// shown at the RESP address it announces in the cluster, this one as
// myself; config and current epochs are 0 (proxies claim nothing). The
// replies are written by package clusterfmt, diffed against real
// multi-master Redis Clusters.

// proxyLayout returns the layout to present, or nil when this proxy
// presents itself alone (static mode, one live proxy, or a view that does
// not list this proxy as live yet).
func (s *Server) proxyLayout() *clusterfmt.Layout {
	t := s.route.view.Load()
	if t == nil {
		return nil
	}
	proxies := t.liveProxies()
	if len(proxies) < 2 {
		return nil
	}
	l := &clusterfmt.Layout{}
	found := false
	for i, r := range spreadSlots(len(proxies)) {
		m := proxies[i]
		host, port, err := clusterfmt.SplitHostPort(m.addr)
		if err != nil {
			continue // an address clients could not use anyway
		}
		n := clusterfmt.Node{ID: m.id, Host: host, Port: port, Myself: m.id == t.self,
			Ranges: []clusterfmt.Range{{First: r.First, Last: r.Last}}}
		found = found || n.Myself
		l.Nodes = append(l.Nodes, n)
	}
	if !found || len(l.Nodes) < 2 {
		return nil
	}
	return l
}
