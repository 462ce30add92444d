package proxy

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/slots"
)

// ClusterSource is the gossip cluster the proxy follows in cluster mode:
// *cluster.Cluster started with the proxy role satisfies it. View is the
// current view (never nil once the cluster runs); Changes returns a
// channel closed when a newer view is available (read Changes, then View,
// then wait on the channel, so no change is missed).
type ClusterSource interface {
	View() *cluster.View
	Changes() <-chan struct{}
}

// startCluster routes by the source's current view from New on.
func (s *Server) startCluster() {
	v := s.opts.Cluster.View()
	if v == nil {
		s.route.applyTable(emptyTable())
		return
	}
	if v.Self.Valid() {
		s.myID = string(v.Self)
	}
	s.route.applyTable(tableFromView(v))
	s.noteTable(v)
}

// noteTable marks the slot table known once v has one (a bootstrapped
// cluster's, with a slot assigned): Serve waits for it before taking
// clients.
func (s *Server) noteTable(v *cluster.View) {
	if v.ClusterID == "" || s.tableSeen.Load() {
		return
	}
	for i := range v.Slots {
		if v.Slots[i].Owner != "" {
			s.tableSeen.Store(true)
			close(s.tableKnown)
			return
		}
	}
}

// awaitTable waits, for up to firstTableWait, until the proxy knows the
// cluster's slot table: a proxy that has just joined learns it by gossip
// within milliseconds, and meanwhile would answer CLUSTERDOWN for every
// key. Clients that connect meanwhile wait in the listen queue.
func (s *Server) awaitTable(ctx context.Context) {
	t := time.NewTimer(firstTableWait)
	defer t.Stop()
	select {
	case <-s.tableKnown:
		s.log.Info("proxy has the cluster's slot table; taking clients", "nodes", s.route.numPools())
	case <-t.C:
		s.log.Warn("no slot table from the cluster yet (not bootstrapped?); serving clients, every slot answers CLUSTERDOWN until one comes", "waited", firstTableWait)
	case <-ctx.Done():
	case <-s.stop:
	}
}

// firstTableWait bounds awaitTable.
const firstTableWait = 2 * time.Second

// followCluster applies every new view until the proxy closes; a MOVED
// reply (routing.requestRefresh) makes it look at once.
func (s *Server) followCluster() {
	src := s.opts.Cluster
	last := (*cluster.View)(nil)
	tick := time.NewTicker(movedHintTTL / 4)
	defer tick.Stop()
	for {
		ch := src.Changes()
		if v := src.View(); v != nil && v != last {
			s.route.applyTable(tableFromView(v))
			s.noteTable(v)
			last = v
		}
		select {
		case <-ch:
		case <-s.route.refresh:
		case now := <-tick.C:
			s.route.expireHints(now)
		case <-s.stop:
			return
		}
	}
}

// emptyTable is a view with no members and no slot assigned.
func emptyTable() *clusterTable {
	t := &clusterTable{slots: new([slots.Count]slotClaim)}
	for i := range t.slots {
		t.slots[i].member = -1
	}
	return t
}

// tableFromView converts a cluster view into the proxy's table. Members
// that are neither nodes nor proxies (observers: shardgate cluster
// status) are left out: they serve nothing and the proxy lists them
// nowhere.
func tableFromView(v *cluster.View) *clusterTable {
	t := emptyTable()
	t.self, t.clusterID, t.epoch = string(v.Self), v.ClusterID, v.Epoch
	idx := make(map[cluster.NodeID]int32, len(v.Members))
	t.members = make([]clusterMember, 0, len(v.Members))
	for _, m := range v.Members {
		if m.Role != cluster.RoleNode && m.Role != cluster.RoleProxy {
			continue
		}
		idx[m.ID] = int32(len(t.members))
		t.members = append(t.members, clusterMember{id: string(m.ID), role: roleOf(m.Role), addr: m.Addr, state: stateOf(m.State)})
	}
	if v.Slots == nil {
		return t
	}
	var (
		lastID  cluster.NodeID
		lastIdx int32 = -1
	)
	for s := range t.slots {
		o := v.Slots[s]
		t.slots[s].epoch = o.Epoch
		if o.Owner == "" {
			continue
		}
		if o.Owner != lastID {
			// Owners come in long runs: one lookup per run.
			lastID, lastIdx = o.Owner, -1
			if i, ok := idx[o.Owner]; ok {
				lastIdx = i
			}
		}
		t.slots[s].member = lastIdx
	}
	return t
}

func roleOf(r cluster.Role) memberRole {
	if r == cluster.RoleProxy {
		return roleProxy
	}
	return roleNode
}

func stateOf(s cluster.State) memberState {
	switch s {
	case cluster.StateSuspect:
		return stateSuspect
	case cluster.StateDead:
		return stateDead
	case cluster.StateLeft:
		return stateLeft
	}
	return stateAlive
}
