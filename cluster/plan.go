package cluster

import (
	"cmp"
	"fmt"
	"slices"
)

// Move asks From, the owner of Slots, to hand them to To.
type Move struct {
	From, To NodeID
	Slots    []uint16 // ascending
}

// Plan computes the moves that bring the View's table to the target
// assignment: every alive data node that is not draining owns a share of
// the 16384 slots proportional to its Weight, and draining nodes own
// none. It moves as few slots as possible: a node above its share gives
// exactly its surplus, from its highest slots down; a node below takes
// exactly its deficit. A node counts as balanced anywhere between the
// floor and the ceiling of its exact share, so the result is within one
// slot of the exact proportion, a balanced table (the bootstrap's split)
// moves nothing, and every member with the same View plans the same.
//
// Why an even split and not rendezvous hashing: hashing moves few slots
// too, but leaves the counts uneven by a few percent and scatters every
// node's slots into hundreds of ranges; the split keeps CLUSTER SLOTS
// short and balances exactly.
//
// Plan returns no moves and a reason while the table cannot be balanced
// safely: slots unassigned, or owned by a member that is not alive (its
// data is out of reach, and CLUSTERDOWN is the rule for them), or no node
// to give slots to.
func Plan(v *View) ([]Move, string) {
	var nodes []Member
	alive := map[NodeID]bool{}
	for _, m := range v.Members {
		if m.Role == RoleNode && m.State == StateAlive {
			nodes = append(nodes, m)
			alive[m.ID] = true
		}
	}
	count := map[NodeID]int{}
	for s := range NumSlots {
		o := v.Slots[s].Owner
		switch {
		case o == "":
			return nil, fmt.Sprintf("slot %d is unassigned", s)
		case !alive[o]:
			return nil, fmt.Sprintf("slots of %s, which is not alive", o)
		}
		count[o]++
	}
	lo, hi := shares(nodes)
	if lo == nil {
		return nil, "no node to give slots to (all draining)"
	}
	// A node is balanced anywhere between the floor and the ceiling of its
	// exact share, so a table that already is (the bootstrap's split, for
	// one) moves nothing. Nodes above their ceiling must give down to it,
	// nodes below their floor must take up to it; the difference is made
	// up one slot at a time by nodes above their floor giving, or nodes
	// below their ceiling taking, in id order.
	give := map[NodeID]int{}
	take := map[NodeID]int{}
	pooled, needed := 0, 0
	for _, m := range nodes {
		c := count[m.ID]
		if c > hi[m.ID] {
			give[m.ID] = c - hi[m.ID]
			pooled += give[m.ID]
		}
		if c < lo[m.ID] {
			take[m.ID] = lo[m.ID] - c
			needed += take[m.ID]
		}
	}
	for changed := true; pooled < needed && changed; {
		changed = false
		for i := len(nodes) - 1; i >= 0 && pooled < needed; i-- {
			m := nodes[i]
			if count[m.ID]-give[m.ID] > lo[m.ID] {
				give[m.ID]++
				pooled++
				changed = true
			}
		}
	}
	for changed := true; pooled > needed && changed; {
		changed = false
		for _, m := range nodes {
			if pooled > needed && count[m.ID]+take[m.ID] < hi[m.ID] {
				take[m.ID]++
				needed++
				changed = true
			}
		}
	}
	// The surplus of every donor, highest slots first, then handed out in
	// ascending order so each receiver gets runs.
	var pool []uint16
	from := map[uint16]NodeID{}
	for _, m := range nodes {
		extra := give[m.ID]
		for s := NumSlots - 1; s >= 0 && extra > 0; s-- {
			if v.Slots[s].Owner == m.ID {
				pool = append(pool, uint16(s))
				from[uint16(s)] = m.ID
				extra--
			}
		}
	}
	slices.Sort(pool)
	type key struct{ from, to NodeID }
	byPair := map[key]*Move{}
	var moves []*Move
	for _, m := range nodes {
		for need := take[m.ID]; need > 0 && len(pool) > 0; need-- {
			s := pool[0]
			pool = pool[1:]
			k := key{from[s], m.ID}
			mv := byPair[k]
			if mv == nil {
				mv = &Move{From: k.from, To: k.to}
				byPair[k] = mv
				moves = append(moves, mv)
			}
			mv.Slots = append(mv.Slots, s)
		}
	}
	out := make([]Move, len(moves))
	for i, mv := range moves {
		out[i] = *mv
	}
	slices.SortFunc(out, func(a, b Move) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return out, ""
}

// shares returns each node's floor and ceiling of its exact share of
// the slots by weight (both 0 for draining nodes); nil when no node may
// own slots.
func shares(nodes []Member) (lo, hi map[NodeID]int) {
	var total uint64
	for _, m := range nodes {
		if !m.Draining {
			total += uint64(max(m.Weight, 1))
		}
	}
	if total == 0 {
		return nil, nil
	}
	lo = make(map[NodeID]int, len(nodes))
	hi = make(map[NodeID]int, len(nodes))
	for _, m := range nodes {
		if m.Draining {
			continue
		}
		w := uint64(max(m.Weight, 1))
		lo[m.ID] = int(NumSlots * w / total)
		hi[m.ID] = lo[m.ID]
		if NumSlots*w%total != 0 {
			hi[m.ID]++
		}
	}
	return lo, hi
}
