package proxy

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"

	"github.com/shardgate/shardgate/internal/clusterfmt"
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
// empty one). Package clusterfmt writes them; clusterview_test.go diffs
// the proxy's against such a server in RESP2 and RESP3.

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

// singleLayout is what the proxy presents when it presents itself alone:
// one master at the address the client reached (announce, host:port) that
// owns every slot at epoch 0, as a lone Redis Cluster node given all slots
// with ADDSLOTSRANGE answers.
func singleLayout(announce, id string) (*clusterfmt.Layout, error) {
	host, port, err := clusterfmt.SplitHostPort(announce)
	if err != nil {
		return nil, err
	}
	return clusterfmt.Single(id, host, port, 0), nil
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

// unservedSlots counts the slots the proxy cannot serve now: no node owns
// them, or their node is dead or was unreachable at the last attempt.
// CLUSTER INFO reports them as failed (cluster_state:fail, as a Redis
// Cluster with a failed master), while the proxy goes on serving the
// other slots.
func (s *Server) unservedSlots() int {
	n := 0
	for slot := range uint16(slots.Count) {
		if !s.slotServed(slot) {
			n++
		}
	}
	return n
}

// slotServed reports whether the proxy can serve slot now.
func (s *Server) slotServed(slot uint16) bool {
	o := s.route.ownerOf(slot)
	if o < 0 {
		return false
	}
	p := s.route.pool(o)
	return p.served() && !p.down.Load()
}

// dropUnserved removes from l's ranges the slots the proxy cannot serve
// now, for CLUSTER NODES. Tools that check a cluster's health from it
// (redis-cli --cluster check) then see those slots uncovered, as they see
// a failed master's when they cannot reach it, and a client that routes
// by it (Lettuce) fails only the keys of those slots. CLUSTER SLOTS and
// SHARDS keep every slot: redis-py's RedisCluster refuses a table with a
// gap, which would fail the served slots too.
func (s *Server) dropUnserved(l *clusterfmt.Layout) {
	if s.unservedSlots() == 0 {
		return
	}
	for i := range l.Nodes {
		n := &l.Nodes[i]
		var kept []clusterfmt.Range
		for _, r := range n.Ranges {
			open := false
			var first uint16
			for slot := int(r.First); slot <= int(r.Last); slot++ {
				ok := s.slotServed(uint16(slot))
				switch {
				case ok && !open:
					open, first = true, uint16(slot)
				case !ok && open:
					open = false
					kept = append(kept, clusterfmt.Range{First: first, Last: uint16(slot - 1)})
				}
			}
			if open {
				kept = append(kept, clusterfmt.Range{First: first, Last: r.Last})
			}
		}
		n.Ranges = kept
	}
}
