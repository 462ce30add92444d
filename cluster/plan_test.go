package cluster

import (
	"strings"
	"testing"
)

// planView builds a View whose table gives each owner the listed number
// of slots in order (owner ids are single letters repeated to 40).
func planView(members []Member, counts map[NodeID]int, order []NodeID) *View {
	v := &View{Slots: new([NumSlots]SlotOwner), Members: members}
	s := 0
	for _, id := range order {
		for range counts[id] {
			v.Slots[s] = SlotOwner{id, 1}
			s++
		}
	}
	return v
}

func nid(c string) NodeID { return NodeID(strings.Repeat(c, 40)) }

func alive(id NodeID, weight uint32, draining bool) Member {
	return Member{ID: id, Role: RoleNode, State: StateAlive, Weight: weight, Draining: draining}
}

func TestPlan(t *testing.T) {
	a, b, c, d := nid("a"), nid("b"), nid("c"), nid("d")
	tests := []struct {
		name    string
		members []Member
		counts  map[NodeID]int
		order   []NodeID
		want    map[NodeID]int // counts after the moves
		moved   int            // slots moved in all
		reason  string         // non-empty: no plan, reason contains this
	}{
		{
			name:    "balanced stays",
			members: []Member{alive(a, 1, false), alive(b, 1, false)},
			counts:  map[NodeID]int{a: 8192, b: 8192}, order: []NodeID{a, b},
			want: map[NodeID]int{a: 8192, b: 8192}, moved: 0,
		},
		{
			name:    "the bootstrap's split is balanced",
			members: []Member{alive(a, 1, false), alive(b, 1, false), alive(c, 1, false)},
			counts:  map[NodeID]int{a: 5461, b: 5462, c: 5461}, order: []NodeID{a, b, c},
			want: map[NodeID]int{a: 5461, b: 5462, c: 5461}, moved: 0,
		},
		{
			name:    "within a slot of the share is balanced",
			members: []Member{alive(a, 1, false), alive(b, 1, false), alive(c, 1, false)},
			counts:  map[NodeID]int{a: 5462, b: 5460, c: 5462}, order: []NodeID{a, b, c},
			want: map[NodeID]int{a: 5462, b: 5461, c: 5461}, moved: 1,
		},
		{
			name:    "third node joins",
			members: []Member{alive(a, 1, false), alive(b, 1, false), alive(c, 1, false)},
			counts:  map[NodeID]int{a: 8192, b: 8192}, order: []NodeID{a, b},
			want: map[NodeID]int{a: 5462, b: 5461, c: 5461}, moved: 5461,
		},
		{
			name:    "fourth joins three",
			members: []Member{alive(a, 1, false), alive(b, 1, false), alive(c, 1, false), alive(d, 1, false)},
			counts:  map[NodeID]int{a: 5462, b: 5461, c: 5461}, order: []NodeID{a, b, c},
			want: map[NodeID]int{a: 4096, b: 4096, c: 4096, d: 4096}, moved: 4096,
		},
		{
			name:    "drain",
			members: []Member{alive(a, 1, false), alive(b, 1, false), alive(c, 1, true)},
			counts:  map[NodeID]int{a: 5462, b: 5461, c: 5461}, order: []NodeID{a, b, c},
			want: map[NodeID]int{a: 8192, b: 8192, c: 0}, moved: 5461,
		},
		{
			name:    "weights",
			members: []Member{alive(a, 2, false), alive(b, 1, false), alive(c, 1, false)},
			counts:  map[NodeID]int{a: 5462, b: 5461, c: 5461}, order: []NodeID{a, b, c},
			want: map[NodeID]int{a: 8192, b: 4096, c: 4096}, moved: 2730,
		},
		{
			name:    "dead owner pauses",
			members: []Member{alive(a, 1, false), {ID: b, Role: RoleNode, State: StateDead}, alive(c, 1, false)},
			counts:  map[NodeID]int{a: 8192, b: 8192}, order: []NodeID{a, b},
			reason: "not alive",
		},
		{
			name:    "all draining",
			members: []Member{alive(a, 1, true)},
			counts:  map[NodeID]int{a: NumSlots}, order: []NodeID{a},
			reason: "all draining",
		},
		{
			name:    "unassigned",
			members: []Member{alive(a, 1, false)},
			counts:  map[NodeID]int{a: 100}, order: []NodeID{a},
			reason: "unassigned",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := planView(tt.members, tt.counts, tt.order)
			moves, reason := Plan(v)
			if tt.reason != "" {
				if len(moves) != 0 || !strings.Contains(reason, tt.reason) {
					t.Fatalf("Plan = %d moves, %q; want none and a reason with %q", len(moves), reason, tt.reason)
				}
				return
			}
			if reason != "" {
				t.Fatalf("Plan: %s", reason)
			}
			moved := 0
			for _, mv := range moves {
				for i, s := range mv.Slots {
					if v.Slots[s].Owner != mv.From {
						t.Fatalf("move %s->%s: slot %d is %s's", mv.From[:1], mv.To[:1], s, v.Slots[s].Owner[:1])
					}
					if i > 0 && mv.Slots[i-1] >= s {
						t.Fatalf("move slots not ascending: %v", mv.Slots[i-1:i+1])
					}
					v.Slots[s].Owner = mv.To
				}
				moved += len(mv.Slots)
			}
			if moved != tt.moved {
				t.Errorf("moved %d slots, want %d", moved, tt.moved)
			}
			got := map[NodeID]int{}
			for s := range NumSlots {
				got[v.Slots[s].Owner]++
			}
			for id, n := range tt.want {
				if got[id] != n {
					t.Errorf("node %s owns %d slots after the moves, want %d", id[:1], got[id], n)
				}
			}
			if again, _ := Plan(v); len(again) != 0 {
				t.Errorf("a second Plan after the moves wants %d more moves", len(again))
			}
		})
	}
}
