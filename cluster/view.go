package cluster

import (
	"slices"
	"strings"
)

// View is an immutable snapshot of the cluster as this member sees it:
// never mutate one (Slots and Members are shared); get a new one after a
// change (Cluster.Changes).
type View struct {
	Self      NodeID
	ClusterID string // "" until bootstrapped or adopted
	Slots     *[NumSlots]SlotOwner
	Members   []Member // sorted by ID; includes self and every slot owner (dead ones with StateDead)
	Epoch     uint64   // highest epoch in the table (the config epoch for CLUSTER INFO)
}

// Member returns the member with id.
func (v *View) Member(id NodeID) (Member, bool) {
	i, ok := slices.BinarySearchFunc(v.Members, id, func(m Member, id NodeID) int { return strings.Compare(string(m.ID), string(id)) })
	if !ok {
		return Member{}, false
	}
	return v.Members[i], true
}

// Owner returns the member owning slot (in any state), false when the slot
// is unassigned or out of range.
func (v *View) Owner(slot uint16) (Member, bool) {
	if int(slot) >= NumSlots || v.Slots[slot].Owner == "" {
		return Member{}, false
	}
	return v.Member(v.Slots[slot].Owner)
}

// Ranges returns the contiguous inclusive slot ranges owned by id, in
// ascending order.
func (v *View) Ranges(id NodeID) [][2]uint16 { return ownerRanges(v.Slots, id) }

// SelfMember returns this member's own entry.
func (v *View) SelfMember() Member {
	m, _ := v.Member(v.Self)
	return m
}

// Alive returns the alive members with role r, sorted by ID.
func (v *View) Alive(r Role) []Member {
	var ms []Member
	for _, m := range v.Members {
		if m.Role == r && m.State == StateAlive {
			ms = append(ms, m)
		}
	}
	return ms
}

// Owns reports whether this member owns slot.
func (v *View) Owns(slot uint16) bool {
	return int(slot) < NumSlots && v.Slots[slot].Owner == v.Self
}

// Converged reports whether every other alive node and proxy last
// announced the same table as this member holds (by digest): they route
// by the same slot owners. Observers are not counted.
func (v *View) Converged() bool {
	self := v.SelfMember()
	for _, m := range v.Members {
		if m.ID == v.Self || m.State != StateAlive || m.Role == RoleObserver {
			continue
		}
		if m.TableDigest != self.TableDigest {
			return false
		}
	}
	return true
}
