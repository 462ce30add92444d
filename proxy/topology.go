package proxy

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/slots"
)

// Topology says which node serves each slot: the static topology of
// --nodes (Options.Topology), and Server.Topology's snapshot of the
// proxy's routing in either mode. In cluster mode the proxy routes by a
// ClusterSource instead (dynamic_view.go).
type Topology interface {
	// Nodes lists the nodes; the index is the node's number everywhere in
	// the proxy.
	Nodes() []NodeInfo
	// Owner returns the index of the node that serves slot.
	Owner(slot uint16) int
}

// NodeInfo describes one node.
type NodeInfo struct {
	// Addr is the node's RESP address (host:port).
	Addr string
	// Ranges are the slot ranges the node serves, ascending.
	Ranges []SlotRange
}

// SlotRange is an inclusive range of slots.
type SlotRange struct{ First, Last uint16 }

func (r SlotRange) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// FormatRanges renders ranges as "0-5460,5461-10922".
func FormatRanges(rs []SlotRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// StaticTopology spreads the slots over a fixed node list in contiguous
// ranges.
type StaticTopology struct {
	nodes []NodeInfo
	owner [slots.Count]uint16
}

// NewStaticTopology divides the 16384 slots over addrs in contiguous
// ranges the way redis-cli --cluster create does (0-5460, 5461-10922,
// 10923-16383 for three nodes).
func NewStaticTopology(addrs []string) (*StaticTopology, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("proxy: no nodes")
	}
	if len(addrs) > slots.Count {
		return nil, fmt.Errorf("proxy: %d nodes is more than %d slots", len(addrs), slots.Count)
	}
	seen := map[string]bool{}
	t := &StaticTopology{}
	for i, r := range spreadSlots(len(addrs)) {
		a := addrs[i]
		if a == "" {
			return nil, fmt.Errorf("proxy: empty node address")
		}
		if seen[a] {
			return nil, fmt.Errorf("proxy: node %s listed twice", a)
		}
		seen[a] = true
		t.nodes = append(t.nodes, NodeInfo{Addr: a, Ranges: []SlotRange{r}})
		for s := int(r.First); s <= int(r.Last); s++ {
			t.owner[s] = uint16(i)
		}
	}
	return t, nil
}

// spreadSlots divides the 16384 slots into n (1 to 16384) contiguous
// ranges the way redis-cli --cluster create does.
func spreadSlots(n int) []SlotRange {
	out := make([]SlotRange, 0, n)
	per := float64(slots.Count) / float64(n)
	first := 0
	cursor := 0.0
	for i := range n {
		last := int(cursor + per - 1 + 0.5) // redis-cli rounds the same way
		if last > slots.Count-1 || i == n-1 {
			last = slots.Count - 1
		}
		if last < first {
			last = first
		}
		out = append(out, SlotRange{uint16(first), uint16(last)})
		first = last + 1
		cursor += per
	}
	return out
}

// Nodes implements Topology.
func (t *StaticTopology) Nodes() []NodeInfo { return t.nodes }

// Owner implements Topology.
func (t *StaticTopology) Owner(slot uint16) int { return int(t.owner[slot&(slots.Count-1)]) }
