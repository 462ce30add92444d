package proxy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shardgate/shardgate/slots"
)

// TestSplitBySlot checks splitScratch.split against a plain grouping by
// slot: the same parts in the order their slots first appear, each with
// the command name, its keys (or key-value pairs) in order, and where each
// key sits among all of them. The sizes cross maxScannedParts, where the
// scan gives way to a map. Every case splits three commands into one
// scratch before it checks them, as a batch does, so a later split that
// outgrows the scratch's arrays must leave the earlier parts intact; the
// scratch is reset between cases and reused.
func TestSplitBySlot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sc splitScratch
	for _, stride := range []int{1, 2} {
		for _, nkeys := range []int{0, 1, 2, 10, maxScannedParts, maxScannedParts + 1, 200} {
			for _, distinct := range []int{1, 3, 1000} {
				name := fmt.Sprintf("stride%d/keys%d/slots%d", stride, nkeys, distinct)
				t.Run(name, func(t *testing.T) {
					defer sc.reset()
					var cmds [][][]byte
					var got [][]*slotPart
					for c := range 3 {
						args := [][]byte{fmt.Appendf(nil, "cmd%d", c)}
						for range nkeys {
							key := fmt.Sprintf("{k%d}:%d", rng.IntN(distinct), rng.IntN(1e6))
							args = append(args, []byte(key))
							if stride == 2 {
								args = append(args, []byte("v:"+key))
							}
						}
						cmds = append(cmds, args)
						got = append(got, sc.split(args, stride))
					}
					for c, args := range cmds {
						want := groupBySlot(args, stride)
						if len(got[c]) != len(want) {
							t.Fatalf("command %d: %d parts, want %d", c, len(got[c]), len(want))
						}
						for i, p := range got[c] {
							w := want[i]
							if p.slot != w.slot || !slices.Equal(p.pos, w.pos) ||
								!slices.EqualFunc(p.args, w.args, func(a, b []byte) bool { return string(a) == string(b) }) {
								t.Fatalf("command %d part %d = slot %d args %q pos %v, want slot %d args %q pos %v",
									c, i, p.slot, p.args, p.pos, w.slot, w.args, w.pos)
							}
						}
					}
				})
			}
		}
	}
}

// TestSplitScratchReused: once its arrays have grown, a batch of splits
// allocates nothing.
func TestSplitScratchReused(t *testing.T) {
	args := [][]byte{[]byte("mset")}
	for i := range 10 {
		args = append(args, fmt.Appendf(nil, "key:%d", i*7919), []byte("xxx"))
	}
	var sc splitScratch
	batch := func() {
		for range 4 {
			if parts := sc.split(args, 2); len(parts) != 10 {
				t.Fatalf("%d parts, want 10", len(parts))
			}
		}
		sc.reset()
	}
	batch()
	if n := testing.AllocsPerRun(100, batch); n != 0 {
		t.Fatalf("%v allocations per batch of 4 splits, want 0", n)
	}
}

// groupBySlot is the obvious grouping split must agree with.
func groupBySlot(args [][]byte, stride int) []*slotPart {
	var parts []*slotPart
	bySlot := map[uint16]*slotPart{}
	for i, k := 1, 0; i+stride-1 < len(args); i, k = i+stride, k+1 {
		sl := slots.Slot(args[i])
		p := bySlot[sl]
		if p == nil {
			p = &slotPart{slot: sl, args: [][]byte{args[0]}}
			bySlot[sl] = p
			parts = append(parts, p)
		}
		p.args = append(p.args, args[i:i+stride]...)
		p.pos = append(p.pos, k)
	}
	return parts
}

// TestSplitBySlotAppendsDoNotOverlap: each part's arguments are a window
// of one shared array, capped at its own length, so appending to one part
// (as nothing does today) cannot overwrite the next.
func TestSplitBySlotAppendsDoNotOverlap(t *testing.T) {
	args := [][]byte{[]byte("mget"), []byte("{a}1"), []byte("{b}1"), []byte("{a}2")}
	var sc splitScratch
	parts := sc.split(args, 1)
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2", len(parts))
	}
	_ = append(parts[0].args, []byte("extra"))
	_ = append(parts[0].pos, 99)
	if string(parts[1].args[0]) != "mget" || string(parts[1].args[1]) != "{b}1" || parts[1].pos[0] != 1 {
		t.Fatalf("second part changed: args %q pos %v", parts[1].args, parts[1].pos)
	}
}

func BenchmarkSplitBySlotMSet10(b *testing.B) {
	args := [][]byte{[]byte("mset")}
	for i := range 10 {
		args = append(args, fmt.Appendf(nil, "key:%d", i*7919), []byte("xxx"))
	}
	var sc splitScratch
	b.ReportAllocs()
	for b.Loop() {
		sc.split(args, 2)
		sc.reset()
	}
}
