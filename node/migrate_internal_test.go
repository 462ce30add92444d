package node

import (
	"slices"
	"testing"

	"github.com/shardgate/shardgate/cluster"
)

func TestParseRanges(t *testing.T) {
	tests := []struct {
		in   string
		want []uint16
		bad  bool
	}{
		{in: "0", want: []uint16{0}},
		{in: "16383", want: []uint16{16383}},
		{in: "5-7,1", want: []uint16{1, 5, 6, 7}},
		{in: "3,3,2-3", want: []uint16{2, 3}},
		{in: "16384", bad: true},
		{in: "-1", bad: true},
		{in: "7-5", bad: true},
		{in: "1-", bad: true},
		{in: "", bad: true},
		{in: "1,,2", bad: true},
		{in: "a", bad: true},
		{in: "1-16384", bad: true},
	}
	for _, tt := range tests {
		got, err := parseRanges(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseRanges(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseRanges(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if back, err := parseRanges(formatRanges(got)); err != nil || !slices.Equal(back, got) {
			t.Errorf("formatRanges(%v) = %q does not parse back: %v %v", got, formatRanges(got), back, err)
		}
	}
}

// FuzzParseRanges: any input either fails or yields ascending distinct
// slots that formatRanges prints back to the same set.
func FuzzParseRanges(f *testing.F) {
	for _, s := range []string{"0", "1-3,7", "16383", "0-16383", "5-4", "x", "1,,", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseRanges(s)
		if err != nil {
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("parseRanges(%q) not ascending: %v", s, got)
			}
		}
		back, err := parseRanges(formatRanges(got))
		if err != nil || !slices.Equal(back, got) {
			t.Fatalf("round trip of %q: %v %v", s, back, err)
		}
	})
}

// viewControl is a ClusterControl that only has a view.
type viewControl struct {
	ClusterControl
	v *cluster.View
}

func (c viewControl) View() *cluster.View { return c.v }

// TestTakeHanded: a lost slot counts as handed over when the view's claim
// is this node's commit, finished or still fenced (gossip brought the
// target's claim before the target's answer came); a higher claim is a
// takeover, also for a slot handed over once before.
func TestTakeHanded(t *testing.T) {
	v := &cluster.View{Slots: new([cluster.NumSlots]cluster.SlotOwner)}
	m := &migrator{cl: viewControl{v: v}, handed: map[uint16]uint64{}}
	v.Slots[1] = cluster.SlotOwner{Owner: "t", Epoch: 5} // committed by this node at 5
	v.Slots[2] = cluster.SlotOwner{Owner: "u", Epoch: 9} // handed at 5, taken at 9
	v.Slots[3] = cluster.SlotOwner{Owner: "t", Epoch: 7} // the fenced migration's commit
	v.Slots[4] = cluster.SlotOwner{Owner: "u", Epoch: 7} // fenced, but someone else's claim
	v.Slots[5] = cluster.SlotOwner{Owner: "u", Epoch: 3} // never ours to hand
	m.handed[1], m.handed[2] = 5, 5
	m.rec = &migRecord{Target: "t", Slots: []uint16{3, 4}, Phase: "fence", Epoch: 7}
	rest, handed := m.takeHanded([]uint16{1, 2, 3, 4, 5})
	if !slices.Equal(handed, []uint16{1, 3}) || !slices.Equal(rest, []uint16{2, 4, 5}) {
		t.Errorf("handed %v, rest %v; want [1 3], [2 4 5]", handed, rest)
	}
	if len(m.handed) != 0 {
		t.Errorf("entries left: %v", m.handed)
	}
	// Before its fence the migration's slots are not handed over.
	m.rec.Phase = "copy"
	if _, handed := m.takeHanded([]uint16{3}); len(handed) != 0 {
		t.Errorf("slot 3 handed before the fence")
	}
}
