// Package clusterfmt writes the replies of CLUSTER SLOTS, SHARDS, NODES,
// INFO and MYID exactly as Redis 7.0.15 prints them, for a cluster of
// masters described by a Layout.
//
// It knows nothing about where the description comes from: a shardgate
// node fills a Layout from the gossip cluster's slot table (or, alone,
// as one master owning every slot), and the proxy can present itself (or
// several proxies) the same way. The formats were taken from real Redis
// 7.0.15 clusters (a lone node given every slot with ADDSLOTSRANGE, and
// three masters made by redis-cli --cluster create, one of them killed);
// clusterfmt_test.go diffs them against such clusters in RESP2 and RESP3.
//
// What Redis prints that a Layout cannot know is fixed: no replicas, no
// TLS port, replication offset 0, no open (migrating or importing) slots,
// and cluster-bus message counters of 0.
package clusterfmt

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// NumSlots is the number of hash slots (Redis's CLUSTER_SLOTS).
const NumSlots = 16384

// BusPortIncr is Redis's default distance from a node's client port to its
// cluster bus port (CLUSTER_PORT_INCR), shown after '@' in CLUSTER NODES.
const BusPortIncr = 10000

// Range is an inclusive range of hash slots.
type Range struct{ First, Last uint16 }

// String prints the range as CLUSTER NODES does: "0-5460", or "7" alone.
func (r Range) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last))
}

// Len is the number of slots in r.
func (r Range) Len() int { return int(r.Last) - int(r.First) + 1 }

// Health is a node's liveness as the describing node sees it.
type Health uint8

const (
	// Online: the node answers.
	Online Health = iota
	// PFail: suspected down ("fail?" in CLUSTER NODES). Its slots count
	// as cluster_slots_pfail; CLUSTER SHARDS still says "online", as
	// Redis does.
	PFail
	// Fail: declared down ("fail"; health "fail" in CLUSTER SHARDS). Its
	// slots count as cluster_slots_fail and the cluster state is "fail".
	Fail
)

// Node is one master.
type Node struct {
	// ID is the node id: 40 lowercase hex characters.
	ID string
	// Host is the IP (or name) clients connect to: "ip" and "endpoint" in
	// the replies. Redis prints it as it is, even empty.
	Host string
	// Port is the client port.
	Port int
	// BusPort is the cluster bus port CLUSTER NODES shows after '@'; 0
	// means Port+BusPortIncr (or 0 when that is no port).
	BusPort int
	// Hostname, when set, is announced as Redis's
	// cluster-announce-hostname: ",hostname" in CLUSTER NODES and a
	// "hostname" field in CLUSTER SLOTS and SHARDS.
	Hostname string
	// Myself marks the node answering; exactly one node should have it.
	Myself bool
	Health Health
	// ConfigEpoch is the node's config epoch.
	ConfigEpoch uint64
	// PingSent and PongReceived are CLUSTER NODES's two times in Unix
	// milliseconds (0: none pending / never).
	PingSent, PongReceived int64
	// Ranges are the slots the node serves: ascending, disjoint, and
	// maximal (no two adjacent), as Redis's slot bitmap gives them.
	Ranges []Range
}

// busPort is the cport CLUSTER NODES shows.
func (n *Node) busPort() int {
	if n.BusPort != 0 {
		return n.BusPort
	}
	if p := n.Port + BusPortIncr; p <= 65535 {
		return p
	}
	return 0
}

// connected is CLUSTER NODES's link state: a node seen down has no link.
func (n *Node) connected() bool { return n.Myself || n.Health == Online }

// Layout is the cluster as one node describes it.
type Layout struct {
	// Nodes in the order CLUSTER NODES and SHARDS list them.
	Nodes []Node
	// CurrentEpoch is cluster_current_epoch: the highest epoch known.
	CurrentEpoch uint64
	// Unserved is how many slots of healthy owners cannot be served now
	// (a proxy whose node for them is unreachable): CLUSTER INFO counts
	// them as failed, as a Redis Cluster counts the slots of a failed
	// master.
	Unserved int
}

// Single is the layout of a lone master that owns every slot at epoch:
// what a Redis Cluster of one node answers.
func Single(id, host string, port int, epoch uint64) *Layout {
	return &Layout{
		Nodes: []Node{{
			ID: id, Host: host, Port: port, Myself: true, ConfigEpoch: epoch,
			Ranges: []Range{{0, NumSlots - 1}},
		}},
		CurrentEpoch: epoch,
	}
}

// SplitHostPort splits a "host:port" address into the Host and Port a
// Node wants.
func SplitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return "", 0, err
	}
	return host, int(port), nil
}

// Self returns the node marked Myself, or nil.
func (l *Layout) Self() *Node {
	for i := range l.Nodes {
		if l.Nodes[i].Myself {
			return &l.Nodes[i]
		}
	}
	return nil
}

// WriteLinks writes CLUSTER LINKS: the cluster bus connections, of which
// shardgate has none (members gossip over memberlist), so an empty array,
// as a Redis Cluster node without peers answers.
func WriteLinks(w *resp.Writer, _ *Layout) { w.Array(0) }

// WriteMyID writes CLUSTER MYID: the answering node's id as a bulk string.
func WriteMyID(w *resp.Writer, l *Layout) {
	id := ""
	if s := l.Self(); s != nil {
		id = s.ID
	}
	w.BulkString(id)
}

// WriteReplicas writes CLUSTER REPLICAS (or SLAVES) id: the node's
// replicas, one CLUSTER NODES line each. Every node a Layout holds is a
// master without replicas, so a known id gets an empty array and any other
// Redis's error; ids compare byte for byte, as Redis's node table does.
func WriteReplicas(w *resp.Writer, l *Layout, id []byte) {
	if !l.knows(id) {
		w.Error(fmt.Sprintf(resp.ErrUnknownNode, resp.CString(id, len(id))))
		return
	}
	w.Array(0)
}

// knows reports whether id is one of the layout's nodes.
func (l *Layout) knows(id []byte) bool {
	for i := range l.Nodes {
		if l.Nodes[i].ID == string(id) {
			return true
		}
	}
	return false
}

// WriteCountFailureReports writes CLUSTER COUNT-FAILURE-REPORTS for the
// node id: 0 for a known node, as Redis gives for a node no master has
// flagged. Membership here is memberlist's, which settles a suspicion
// among the members itself instead of collecting per-master reports, so
// there are never reports to count.
func WriteCountFailureReports(w *resp.Writer, l *Layout, id []byte) {
	if !l.knows(id) {
		w.Error(fmt.Sprintf(resp.ErrUnknownNode, resp.CString(id, len(id))))
		return
	}
	w.Int(0)
}

// slotRange is a range with the node serving it.
type slotRange struct {
	Range
	node *Node
}

// byFirstSlot lists every node's ranges in slot order, as Redis's CLUSTER
// SLOTS walks its slot table.
func (l *Layout) byFirstSlot() []slotRange {
	var rs []slotRange
	for i := range l.Nodes {
		for _, r := range l.Nodes[i].Ranges {
			rs = append(rs, slotRange{r, &l.Nodes[i]})
		}
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a].First < rs[b].First })
	return rs
}

// WriteSlots writes CLUSTER SLOTS: one entry per range in slot order,
// [first, last, [ip, port, id, metadata]] with no replicas. metadata is a
// map (an empty array in RESP2, %0 in RESP3) holding "hostname" only when
// one is announced. A failed master is still listed, as in Redis.
func WriteSlots(w *resp.Writer, l *Layout) {
	rs := l.byFirstSlot()
	w.Array(len(rs))
	for _, r := range rs {
		w.Array(3)
		w.Int(int64(r.First))
		w.Int(int64(r.Last))
		n := r.node
		w.Array(4)
		w.BulkString(n.Host)
		w.Int(int64(n.Port))
		w.BulkString(n.ID)
		if n.Hostname == "" {
			w.Map(0)
			continue
		}
		w.Map(1)
		w.BulkString("hostname")
		w.BulkString(n.Hostname)
	}
}

// WriteShards writes CLUSTER SHARDS: one shard per master, slots as a flat
// list of [first, last] pairs (empty for a master without slots) and the
// master as its only node. Both levels are maps (flat arrays in RESP2);
// the node's fields come in Redis's order, "hostname" only when announced,
// no "tls-port".
func WriteShards(w *resp.Writer, l *Layout) {
	w.Array(len(l.Nodes))
	for i := range l.Nodes {
		n := &l.Nodes[i]
		w.Map(2)
		w.BulkString("slots")
		w.Array(2 * len(n.Ranges))
		for _, r := range n.Ranges {
			w.Int(int64(r.First))
			w.Int(int64(r.Last))
		}
		w.BulkString("nodes")
		w.Array(1)
		fields := 7
		if n.Hostname != "" {
			fields++
		}
		w.Map(fields)
		w.BulkString("id")
		w.BulkString(n.ID)
		w.BulkString("port")
		w.Int(int64(n.Port))
		w.BulkString("ip")
		w.BulkString(n.Host)
		w.BulkString("endpoint")
		w.BulkString(n.Host) // cluster-preferred-endpoint-type ip, the default
		if n.Hostname != "" {
			w.BulkString("hostname")
			w.BulkString(n.Hostname)
		}
		w.BulkString("role")
		w.BulkString("master")
		w.BulkString("replication-offset")
		w.Int(0)
		w.BulkString("health")
		if n.Health == Fail {
			w.BulkString("fail")
		} else {
			w.BulkString("online")
		}
	}
}

// NodesText is CLUSTER NODES's text: one line per node, each ended by a
// newline as Redis ends them:
//
//	<id> <ip>:<port>@<cport>[,<hostname>] <flags> - <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
//
// flags are "myself,master", "master", "master,fail?" or "master,fail";
// the link state is "connected" for myself and nodes online, else
// "disconnected".
func NodesText(l *Layout) string {
	var b strings.Builder
	for i := range l.Nodes {
		n := &l.Nodes[i]
		b.WriteString(n.ID)
		b.WriteByte(' ')
		b.WriteString(n.Host)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(n.Port))
		b.WriteByte('@')
		b.WriteString(strconv.Itoa(n.busPort()))
		if n.Hostname != "" {
			b.WriteByte(',')
			b.WriteString(n.Hostname)
		}
		switch {
		case n.Myself:
			b.WriteString(" myself,master")
		case n.Health == Fail:
			b.WriteString(" master,fail")
		case n.Health == PFail:
			b.WriteString(" master,fail?")
		default:
			b.WriteString(" master")
		}
		b.WriteString(" - ")
		b.WriteString(strconv.FormatInt(n.PingSent, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(n.PongReceived, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatUint(n.ConfigEpoch, 10))
		if n.connected() {
			b.WriteString(" connected")
		} else {
			b.WriteString(" disconnected")
		}
		for _, r := range n.Ranges {
			b.WriteByte(' ')
			b.WriteString(r.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// WriteNodes writes CLUSTER NODES: a bulk string in RESP2, a verbatim "txt"
// string in RESP3.
func WriteNodes(w *resp.Writer, l *Layout) { w.Verbatim(NodesText(l)) }

// Counts are CLUSTER INFO's slot and node counts.
type Counts struct {
	Assigned, OK, PFail, Fail int
	// Size is the number of masters serving at least one slot.
	Size int
}

// Count tallies the layout's slots by the health of their owners.
func (l *Layout) Count() Counts {
	var c Counts
	for i := range l.Nodes {
		n := &l.Nodes[i]
		slots := 0
		for _, r := range n.Ranges {
			slots += r.Len()
		}
		if slots > 0 {
			c.Size++
		}
		c.Assigned += slots
		switch n.Health {
		case Online:
			c.OK += slots
		case PFail:
			c.PFail += slots
		case Fail:
			c.Fail += slots
		}
	}
	down := min(l.Unserved, c.OK)
	c.OK -= down
	c.Fail += down
	return c
}

// State is cluster_state: "ok" when every slot is assigned to a node not
// declared failed (Redis with cluster-require-full-coverage yes, the
// default), else "fail".
func (l *Layout) State() string {
	c := l.Count()
	if c.Assigned == NumSlots && c.Fail == 0 {
		return "ok"
	}
	return "fail"
}

// InfoText is CLUSTER INFO's text, CRLF after every line. No cluster-bus
// messages are counted, so the totals are 0 and, as on a Redis node that
// has sent or received none, the per-type lines are left out.
func InfoText(l *Layout) string {
	c := l.Count()
	var my uint64
	if s := l.Self(); s != nil {
		my = s.ConfigEpoch
	}
	var b strings.Builder
	line := func(k, v string) {
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(v)
		b.WriteString("\r\n")
	}
	line("cluster_state", l.State())
	line("cluster_slots_assigned", strconv.Itoa(c.Assigned))
	line("cluster_slots_ok", strconv.Itoa(c.OK))
	line("cluster_slots_pfail", strconv.Itoa(c.PFail))
	line("cluster_slots_fail", strconv.Itoa(c.Fail))
	line("cluster_known_nodes", strconv.Itoa(len(l.Nodes)))
	line("cluster_size", strconv.Itoa(c.Size))
	line("cluster_current_epoch", strconv.FormatUint(l.CurrentEpoch, 10))
	line("cluster_my_epoch", strconv.FormatUint(my, 10))
	line("cluster_stats_messages_sent", "0")
	line("cluster_stats_messages_received", "0")
	line("total_cluster_links_buffer_limit_exceeded", "0")
	return b.String()
}

// WriteInfo writes CLUSTER INFO: a bulk string in RESP2, a verbatim "txt"
// string in RESP3.
func WriteInfo(w *resp.Writer, l *Layout) { w.Verbatim(InfoText(l)) }
