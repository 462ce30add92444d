package node

import "testing"

// The counts that let commands skip the per-slot arrays must follow the
// arrays exactly: a count of 0 with an entry set would hide a fence, a
// tracked write or a blocked client.
func TestGateCountsFollowEntries(t *testing.T) {
	var g gates
	f, other := &fence{done: make(chan struct{})}, &fence{done: make(chan struct{})}
	g.raiseFence(5, f)
	g.raiseFence(5, f) // again: still one slot fenced
	g.raiseFence(7, f)
	if n := g.nfences.Load(); n != 2 {
		t.Fatalf("nfences = %d after fencing 2 slots", n)
	}
	if g.fenceOf(5) != f || !g.fenced(7) || g.fenced(6) {
		t.Fatal("fences not seen as set")
	}
	g.lowerFence(5, other) // not the fence that is up: nothing changes
	if n := g.nfences.Load(); n != 2 || g.fenceOf(5) != f {
		t.Fatalf("lowering another fence changed slot 5: nfences %d", n)
	}
	g.lowerFence(5, f)
	g.lowerFence(7, f)
	g.lowerFence(7, f)
	if n := g.nfences.Load(); n != 0 || g.fenced(5) || g.fenced(7) {
		t.Fatalf("after lowering: nfences %d, fenced(5) %v", n, g.fenced(5))
	}

	tr := &slotTrack{dirty: map[string]struct{}{}}
	g.setTrack(3, tr)
	g.setTrack(3, tr)
	g.setTrack(9, &slotTrack{})
	if n := g.ntracks.Load(); n != 2 || g.track(3) != tr || g.track(4) != nil {
		t.Fatalf("ntracks = %d after tracking 2 slots", n)
	}
	g.setTrack(3, nil)
	g.setTrack(3, nil)
	g.setTrack(9, nil)
	if n := g.ntracks.Load(); n != 0 || g.track(3) != nil {
		t.Fatalf("ntracks = %d after ending tracking", n)
	}

	var b blocker
	sw := &slotWaiters{}
	b.setWaiters(11, sw)
	b.setWaiters(11, sw)
	if n := b.nslots.Load(); n != 1 || b.waitersOf(11) != sw || b.waitersOf(12) != nil {
		t.Fatalf("nslots = %d with one slot waited on", n)
	}
	b.setWaiters(11, nil)
	if n := b.nslots.Load(); n != 0 || b.waitersOf(11) != nil {
		t.Fatalf("nslots = %d after the waiters left", n)
	}
}
