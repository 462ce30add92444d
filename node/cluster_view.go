package node

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/clusterfmt"
)

// ClusterSource is what the node needs of a *cluster.Cluster: its latest
// View and the notification of a newer one.
type ClusterSource interface {
	View() *cluster.View
	Changes() <-chan struct{}
}

// NewClusterOwnership returns the Ownership of a node that is a member of
// a gossip cluster: it serves the slots the View's table gives it
// (View.Self), redirects the others to their owner's RESP address, and
// answers CLUSTERDOWN for slots nobody serves: unassigned ones and those
// of an owner that is dead or left (the design's rule: a dead node's slots
// are down, not silently moved). The CLUSTER views list the data nodes
// of the View (proxies, which own nothing, are left out so that redis-cli
// --cluster check finds the nodes agreeing); a node's config epoch is the
// highest epoch among its slots; dead ones are failed masters. now gives
// the pong times of CLUSTER NODES (nil: time.Now).
func NewClusterOwnership(src ClusterSource, now func() time.Time) Ownership {
	if now == nil {
		now = time.Now
	}
	return &clusterOwnership{src: src, now: now}
}

type clusterOwnership struct {
	src ClusterSource
	now func() time.Time
	mu  sync.Mutex // serialises rebuilding cur
	cur atomic.Pointer[slotMap]
}

// slotMap is a View compiled for Slot: owner[i] indexes addrs.
type slotMap struct {
	view  *cluster.View
	owner [cluster.NumSlots]uint16
	addrs []string // [0] "": served by nobody; [1] "": this node; then the others' addresses
}

const (
	slotNobody = 0
	slotMine   = 1
)

// Cut reports whether the source (a *cluster.Cluster) has this node cut
// off from its cluster's majority (cluster.Cluster.Cut).
func (o *clusterOwnership) Cut() bool {
	if c, ok := o.src.(interface{ Cut() bool }); ok {
		return c.Cut()
	}
	return false
}

// current returns the slot map of the source's latest View.
func (o *clusterOwnership) current() *slotMap {
	v := o.src.View()
	if m := o.cur.Load(); m != nil && m.view == v {
		return m
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.cur.Load(); m != nil && m.view == v {
		return m
	}
	m := compileView(v)
	o.cur.Store(m)
	return m
}

func compileView(v *cluster.View) *slotMap {
	m := &slotMap{view: v, addrs: []string{"", ""}}
	index := map[cluster.NodeID]uint16{}
	for i := range v.Slots {
		id := v.Slots[i].Owner
		switch {
		case id == "":
			continue
		case id == v.Self:
			m.owner[i] = slotMine
			continue
		}
		x, ok := index[id]
		if !ok {
			x = slotNobody
			if mem, found := v.Member(id); found && mem.Addr != "" &&
				mem.State != cluster.StateDead && mem.State != cluster.StateLeft {
				x = uint16(len(m.addrs))
				m.addrs = append(m.addrs, mem.Addr)
			}
			index[id] = x
		}
		m.owner[i] = x
	}
	return m
}

func (o *clusterOwnership) Slot(slot uint16) (bool, string) {
	m := o.current()
	switch x := m.owner[slot]; x {
	case slotNobody:
		return false, ""
	case slotMine:
		return true, ""
	default:
		return false, m.addrs[x]
	}
}

func (o *clusterOwnership) Changes() <-chan struct{} { return o.src.Changes() }

func (o *clusterOwnership) Layout() *clusterfmt.Layout {
	return layoutOf(o.current().view, o.now().UnixMilli())
}

// layoutOf describes v's data nodes as CLUSTER NODES and friends print
// them; nowMs is the last pong of the live ones.
func layoutOf(v *cluster.View, nowMs int64) *clusterfmt.Layout {
	epochs := map[cluster.NodeID]uint64{}
	for i := range v.Slots {
		if so := v.Slots[i]; so.Owner != "" && so.Epoch > epochs[so.Owner] {
			epochs[so.Owner] = so.Epoch
		}
	}
	l := &clusterfmt.Layout{CurrentEpoch: v.Epoch}
	for _, m := range v.Members {
		ranges := v.Ranges(m.ID)
		self := m.ID == v.Self
		if m.Role != cluster.RoleNode && !self && len(ranges) == 0 {
			continue
		}
		if m.State == cluster.StateLeft && !self && len(ranges) == 0 {
			continue
		}
		host, port, err := clusterfmt.SplitHostPort(m.Addr)
		if err != nil {
			host, port = m.Addr, 0
		}
		n := clusterfmt.Node{ID: string(m.ID), Host: host, Port: port, Myself: self, ConfigEpoch: epochs[m.ID]}
		switch {
		case self:
		case m.State == cluster.StateAlive:
			n.PongReceived = nowMs
		case m.State == cluster.StateSuspect:
			n.Health = clusterfmt.PFail
		default:
			n.Health = clusterfmt.Fail
		}
		for _, r := range ranges {
			n.Ranges = append(n.Ranges, clusterfmt.Range{First: r[0], Last: r[1]})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}
