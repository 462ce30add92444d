package proxy

import (
	"time"

	"github.com/shardgate/shardgate/slots"
)

// clusterTable is what the proxy keeps of a cluster view: the members and
// the slot claims, with members by index (dynamic_view.go converts a
// cluster.View into one).
type clusterTable struct {
	self      string // this proxy's member id
	clusterID string
	epoch     uint64          // the highest epoch in the table
	members   []clusterMember // sorted by id
	slots     *[slots.Count]slotClaim
}

// clusterMember is one member of the view.
type clusterMember struct {
	id    string
	role  memberRole
	addr  string // RESP address
	state memberState
}

type memberRole uint8

const (
	roleNode memberRole = iota
	roleProxy
)

func (r memberRole) String() string {
	if r == roleProxy {
		return "proxy"
	}
	return "node"
}

type memberState uint8

const (
	stateAlive memberState = iota
	stateSuspect
	stateDead
	stateLeft
)

func (s memberState) String() string {
	switch s {
	case stateSuspect:
		return "suspect"
	case stateDead:
		return "dead"
	case stateLeft:
		return "left"
	}
	return "alive"
}

// live reports whether the member is taken to be up (alive or only
// suspected).
func (s memberState) live() bool { return s == stateAlive || s == stateSuspect }

// slotClaim is a slot's owner (an index in members, -1 unassigned) and
// the epoch of its claim.
type slotClaim struct {
	member int32
	epoch  uint64
}

// liveProxies returns the members with the proxy role that are up, in id
// order.
func (t *clusterTable) liveProxies() []clusterMember {
	var out []clusterMember
	for _, m := range t.members {
		if m.role == roleProxy && m.state.live() {
			out = append(out, m)
		}
	}
	return out
}

// ranges returns the slot ranges member i owns, ascending.
func (t *clusterTable) ranges(i int32) []SlotRange {
	var out []SlotRange
	for s := 0; s < slots.Count; s++ {
		if t.slots[s].member != i {
			continue
		}
		first := s
		for s+1 < slots.Count && t.slots[s+1].member == i {
			s++
		}
		out = append(out, SlotRange{uint16(first), uint16(s)})
	}
	return out
}

// applyTable makes t the routing table: a pool for every node member's
// address, slots pointing at their owners' pools (or at an owner learned
// from MOVED while the view's claim is not newer than when it was
// learned: see movedHint), pools of dead members dead, pools nobody needs any more
// retired, pools of members that came back live.
func (r *routing) applyTable(t *clusterTable) { r.applyTableAt(t, time.Now()) }

// applyTableAt is applyTable with now as the time hints are judged by.
func (r *routing) applyTableAt(t *clusterTable, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	memberPool := make([]int32, len(t.members))
	want := map[int]poolState{}
	// suspected: dead by gossip's failure detection, not by a leave of
	// its own (a node that left says so itself; no need to ask it).
	suspected := map[int]bool{}
	for i, m := range t.members {
		memberPool[i] = noOwner
		if m.role != roleNode || m.addr == "" {
			continue
		}
		n := r.poolForLocked(m.addr)
		memberPool[i] = int32(n)
		st := poolLive
		if !m.state.live() {
			st = poolDead
		}
		// Two members on one address (a node restarted under a new
		// id): a live one wins.
		if cur, ok := want[n]; !ok || st < cur {
			want[n] = st
		}
		if m.state == stateDead {
			suspected[n] = true
		}
	}
	owned := map[int32]bool{}
	unowned, unreached := 0, 0
	for s := range slots.Count {
		c := t.slots[s]
		n := int32(noOwner)
		if c.member >= 0 && int(c.member) < len(memberPool) {
			n = memberPool[c.member]
			if n >= 0 && !t.members[c.member].state.live() && want[int(n)] == poolLive {
				// The owner is dead, and another member answers at its
				// address (a node started there under a new id, its
				// directory lost): that one does not serve these
				// slots, so nobody does.
				n = noOwner
			}
			if n == noOwner && t.members[c.member].addr == "" {
				// A claim by a member whose address has not reached us
				// yet (a node that just joined: its claims can outrun its
				// own announcement). Keep sending to the slot's previous
				// owner, which answers MOVED with the address: a hop,
				// not a CLUSTERDOWN.
				n = r.owner[s].Load()
			}
		}
		if h, ok := r.moved[uint16(s)]; ok {
			// A hint to a node the view calls dead gives way to a live
			// owner in the view; when the view's owner is dead too, it
			// stands while the proxy knows no failure of the hinted node
			// (verifyDead asks it) or has reached it since (doubted): a
			// proxy cut off from gossip sees every member dead, and the
			// nodes' MOVED are all it has to route by.
			usable := want[int(h.pool)] != poolDead
			if !usable && (n < 0 || want[int(n)] == poolDead) {
				hp := r.pool(int(h.pool))
				usable = hp.doubted || (hp.getState() != poolDead && !hp.down.Load())
			}
			if c.epoch <= h.epoch && n != h.pool && usable && now.Sub(h.at) <= movedHintTTL {
				n = h.pool
			} else {
				delete(r.moved, uint16(s))
			}
		}
		r.owner[s].Store(n)
		switch {
		case n >= 0:
			owned[n] = true
		case c.member >= 0:
			unreached++
			fallthrough
		default:
			unowned++
		}
	}
	r.unowned.Store(int32(unowned))
	r.unreached.Store(int32(unreached))
	for i, p := range r.all() {
		p.ownsSlots.Store(owned[int32(i)])
		st, member := want[i]
		switch {
		case member && (st == poolLive || owned[int32(i)]):
		case owned[int32(i)]:
			// Learned from MOVED, not (yet) a member in this view.
			st = poolLive
		default:
			st = poolRetired
		}
		p.viewDead.Store(st == poolDead)
		if st == poolDead && suspected[i] && p.getState() != poolDead && !p.down.Load() {
			// The proxy knows of no failure, and gossip's verdict can
			// be wrong: a member cut off declares the others dead, and
			// says so as it rejoins, tens of milliseconds before they
			// refute it. The node is asked first.
			if !p.doubted {
				r.srv.verifyDead(p)
			}
			continue
		}
		p.doubted = false
		r.setPoolState(p, st)
	}
	r.table = t
	r.view.Store(t)
}
