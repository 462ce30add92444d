package proxy

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/loopserve"
	"github.com/shardgate/shardgate/slots"
)

// testView is a view over node members a, b, c (ids 1, 2, 3) with the
// given owners by slot (missing: unassigned) and epochs.
func testView(owners map[uint16]cluster.SlotOwner, states ...cluster.State) *cluster.View {
	v := &cluster.View{Self: "ff", Slots: new([cluster.NumSlots]cluster.SlotOwner)}
	for i, a := range []string{"a:1", "b:1", "c:1"} {
		st := cluster.StateAlive
		if i < len(states) {
			st = states[i]
		}
		v.Members = append(v.Members, cluster.Member{ID: cluster.NodeID(rune('1' + i)), Role: cluster.RoleNode, Addr: a, State: st})
	}
	for s, o := range owners {
		v.Slots[s] = o
		v.Epoch = max(v.Epoch, o.Epoch)
	}
	// An observer (shardgate cluster status) is in every view; it sorts
	// first and owns nothing.
	v.Members = append([]cluster.Member{{ID: "0", Role: cluster.RoleObserver, State: cluster.StateAlive}}, v.Members...)
	return v
}

func newTestRouting(t *testing.T) *routing {
	s, err := New(Options{Cluster: &fixedSource{testView(nil)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s.route
}

type fixedSource struct{ v *cluster.View }

func (f *fixedSource) View() *cluster.View      { return f.v }
func (f *fixedSource) Changes() <-chan struct{} { return nil }

func (r *routing) ownerAddr(slot uint16) string {
	n := r.ownerOf(slot)
	if n < 0 {
		return ""
	}
	return r.pool(n).addr
}

// TestMovedHintAgainstViews: an owner learned from MOVED stands while the
// views that come carry the same claim for the slot (gossip has not
// caught up), and gives way to any view with a newer claim.
func TestMovedHintAgainstViews(t *testing.T) {
	r := newTestRouting(t)
	a1 := map[uint16]cluster.SlotOwner{5: {Owner: "1", Epoch: 1}, 6: {Owner: "1", Epoch: 1}}
	r.applyTable(tableFromView(testView(a1)))
	if got := r.ownerAddr(5); got != "a:1" {
		t.Fatalf("slot 5 at %q", got)
	}
	if got := r.ownerAddr(7); got != "" {
		t.Fatalf("unassigned slot 7 at %q", got)
	}
	// MOVED to b, then to an address the view does not know.
	r.noteMoved(5, "b:1")
	r.noteMoved(6, "x:1")
	r.applyTable(tableFromView(testView(a1)))
	if got := r.ownerAddr(5); got != "b:1" {
		t.Errorf("after the same view, slot 5 at %q, want the MOVED owner", got)
	}
	if got := r.ownerAddr(6); got != "x:1" {
		t.Errorf("after the same view, slot 6 at %q, want the MOVED owner", got)
	}
	if p := r.pool(r.ownerOf(6)); p.getState() != poolLive {
		t.Errorf("the pool learned from MOVED is %v", p.getState())
	}
	// A newer claim wins, whoever it names.
	r.applyTable(tableFromView(testView(map[uint16]cluster.SlotOwner{5: {Owner: "3", Epoch: 2}, 6: {Owner: "1", Epoch: 2}})))
	if got := r.ownerAddr(5); got != "c:1" {
		t.Errorf("slot 5 at %q, want c:1 (epoch 2)", got)
	}
	if got := r.ownerAddr(6); got != "a:1" {
		t.Errorf("slot 6 at %q, want a:1 (epoch 2)", got)
	}
	if len(r.moved) != 0 {
		t.Errorf("hints left: %v", r.moved)
	}
	// The pool nobody needs any more is retired; a MOVED to it revives it.
	x := r.byAddr["x:1"]
	if st := r.pool(x).getState(); st != poolRetired {
		t.Errorf("x:1 is %v, want retired", st)
	}
	r.noteMoved(6, "x:1")
	if st := r.pool(x).getState(); st != poolLive || r.ownerOf(6) != x {
		t.Errorf("x:1 after MOVED: %v, owner %d", st, r.ownerOf(6))
	}
}

// TestMovedHintGivesWay: a MOVED that raced a view naming the same owner
// leaves no hint behind, so when that node restarts on another address
// (same member, same claims and epochs) its slots follow it; a hint to a
// dead member's address, or one older than movedHintTTL, gives way to the
// view.
func TestMovedHintGivesWay(t *testing.T) {
	r := newTestRouting(t)
	owners := map[uint16]cluster.SlotOwner{5: {Owner: "2", Epoch: 2}, 6: {Owner: "1", Epoch: 2}, 7: {Owner: "1", Epoch: 2}}
	r.applyTable(tableFromView(testView(owners)))
	r.noteMoved(5, "b:1") // sent to the old owner before the view came
	if len(r.moved) != 0 {
		t.Fatalf("hint kept for a MOVED the view agrees with: %v", r.moved)
	}
	// Member 2 restarts from its directory on a new port.
	v := testView(owners)
	for i := range v.Members {
		if v.Members[i].ID == "2" {
			v.Members[i].Addr = "b:2"
		}
	}
	r.applyTable(tableFromView(v))
	if got := r.ownerAddr(5); got != "b:2" {
		t.Errorf("slot 5 at %q after its owner moved to b:2", got)
	}

	// A hint to c, which the view then shows dead at the same epoch.
	r.noteMoved(6, "c:1")
	r.applyTable(tableFromView(testView(owners)))
	if got := r.ownerAddr(6); got != "c:1" {
		t.Fatalf("slot 6 at %q, want the MOVED owner c:1", got)
	}
	r.applyTable(tableFromView(testView(owners, cluster.StateAlive, cluster.StateAlive, cluster.StateDead)))
	if got := r.ownerAddr(6); got != "a:1" {
		t.Errorf("slot 6 at %q, want a:1 once the hinted c:1 is dead", got)
	}

	// A hint that outlives movedHintTTL, with no new view.
	r.noteMoved(7, "x:1")
	r.expireHints(time.Now())
	if got := r.ownerAddr(7); got != "x:1" {
		t.Fatalf("slot 7 at %q, want the fresh hint x:1", got)
	}
	r.expireHints(time.Now().Add(movedHintTTL + time.Second))
	if got := r.ownerAddr(7); got != "a:1" {
		t.Errorf("slot 7 at %q after the hint expired, want a:1", got)
	}
	if len(r.moved) != 0 {
		t.Errorf("hints left: %v", r.moved)
	}
}

// TestViewStates: dead members' pools are dead (their slots point at them,
// answered CLUSTERDOWN), a live member sharing a dead one's address wins,
// and pools are numbered once for good.
func TestViewStates(t *testing.T) {
	r := newTestRouting(t)
	owners := map[uint16]cluster.SlotOwner{0: {Owner: "1", Epoch: 1}, 1: {Owner: "2", Epoch: 1}}
	r.applyTable(tableFromView(testView(owners, cluster.StateAlive, cluster.StateDead)))
	a, b := r.byAddr["a:1"], r.byAddr["b:1"]
	waitPoolState(t, r.pool(b), poolDead) // once the proxy failed to reach it too
	if r.pool(a).getState() != poolLive || r.pool(b).getState() != poolDead || r.ownerOf(1) != b {
		t.Fatalf("states %v %v, slot 1 at %d", r.pool(a).getState(), r.pool(b).getState(), r.ownerOf(1))
	}
	// Member 2 restarted under a new id on the same address.
	v := testView(owners, cluster.StateAlive, cluster.StateDead)
	v.Members = append(v.Members, cluster.Member{ID: "4", Role: cluster.RoleNode, Addr: "b:1", State: cluster.StateAlive})
	r.applyTable(tableFromView(v))
	if r.pool(b).getState() != poolLive {
		t.Errorf("b:1 with a live member is %v", r.pool(b).getState())
	}
	// The new member does not serve the dead one's slots: nobody does,
	// and the proxy counts that as a node down (pipeline refusals).
	if r.ownerOf(1) != noOwner || !r.someDown() {
		t.Errorf("slot 1 of the dead member at %d (someDown %v), want no owner", r.ownerOf(1), r.someDown())
	}
	if r.numPools() != 3 {
		t.Errorf("%d pools, want 3", r.numPools())
	}
	if tb := r.view.Load(); len(tb.members) != 4 || tb.members[0].id != "1" {
		t.Errorf("the observer is listed: %+v", tb.members)
	}
	// Suspect counts as up; left owning slots as dead.
	r.applyTable(tableFromView(testView(owners, cluster.StateSuspect, cluster.StateLeft)))
	waitPoolState(t, r.pool(b), poolDead)
	if r.pool(a).getState() != poolLive || r.pool(b).getState() != poolDead {
		t.Errorf("suspect %v, left %v", r.pool(a).getState(), r.pool(b).getState())
	}
	sn := r.snapshot()
	if sn.Owner(0) != a || sn.Owner(2) != -1 || len(sn.Nodes()) != 3 || FormatRanges(sn.Nodes()[a].Ranges) != "0" {
		t.Errorf("snapshot %+v", sn.Nodes())
	}
	for s := 2; s < slots.Count; s++ {
		if r.ownerOf(uint16(s)) != noOwner {
			t.Fatalf("slot %d has an owner", s)
		}
	}
}

func TestParseRedirect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want redirect
	}{
		{"-MOVED 3999 127.0.0.1:6381\r\n", redirect{redirectMoved, 3999, "127.0.0.1:6381"}},
		{"-ASK 0 [::1]:7000\r\n", redirect{redirectAsk, 0, "[::1]:7000"}},
		{"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", redirect{kind: redirectTryAgain}},
		{"-MOVED 16384 a:1\r\n", redirect{}},
		{"-MOVED x a:1\r\n", redirect{}},
		{"-MOVED 5\r\n", redirect{}},
		{"-MOVED 5 a:1 b\r\n", redirect{}},
		{"+MOVED 5 a:1\r\n", redirect{}},
		{"-MOVEDX 5 a:1\r\n", redirect{}},
		{"-ERR MOVED 5 a:1\r\n", redirect{}},
	} {
		if got := parseRedirect([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestClaimByUnknownMember: a slot claimed by a member the view has no
// address for (a node that just joined: its claims can arrive before its
// announcement) stays routed to its previous owner, which answers MOVED,
// instead of answering CLUSTERDOWN; once the member is known, the slot
// goes to it; a known member that is dead still gets CLUSTERDOWN.
func TestClaimByUnknownMember(t *testing.T) {
	r := newTestRouting(t)
	owners := map[uint16]cluster.SlotOwner{0: {Owner: "1", Epoch: 1}, 1: {Owner: "2", Epoch: 1}}
	r.applyTable(tableFromView(testView(owners)))
	a := r.byAddr["a:1"]

	owners[0] = cluster.SlotOwner{Owner: "4", Epoch: 2}
	v := testView(owners)
	v.Members = append(v.Members, cluster.Member{ID: "4", Role: cluster.RoleNode, State: cluster.StateDead}) // known only by its claim
	r.applyTable(tableFromView(v))
	if got := r.ownerOf(0); got != a {
		t.Fatalf("slot 0 claimed by an unknown member routes to %d, want its previous owner %d", got, a)
	}

	v = testView(owners)
	v.Members = append(v.Members, cluster.Member{ID: "4", Role: cluster.RoleNode, Addr: "d:1", State: cluster.StateAlive})
	r.applyTable(tableFromView(v))
	if got := r.ownerAddr(0); got != "d:1" {
		t.Fatalf("slot 0 routes to %q once its owner is known, want d:1", got)
	}

	v = testView(owners)
	v.Members = append(v.Members, cluster.Member{ID: "4", Role: cluster.RoleNode, Addr: "d:1", State: cluster.StateDead})
	r.applyTable(tableFromView(v))
	waitPoolState(t, r.pool(r.byAddr["d:1"]), poolDead)
}

// waitPoolState waits for p to be in state st: a pool the view declares
// dead goes dead once the proxy has failed to reach it (verifyDead).
func waitPoolState(t *testing.T, p *nodePool, st poolState) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); p.getState() != st; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pool %s is %v, want %v", p.addr, p.getState(), st)
		}
	}
}

// TestViewDeadVerified: a view that declares dead a node the proxy can
// reach does not fail its slots: the proxy asks the node, keeps serving it
// while it answers, and does not ask again while the view says so. Once
// the node is unreachable too, a view declaring it dead is followed.
func TestViewDeadVerified(t *testing.T) {
	var pings atomic.Int32
	ln := loopserve.Serve(t, func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			for range bytes.Count(buf[:n], []byte("PING")) {
				pings.Add(1)
				c.Write([]byte("+PONG\r\n"))
			}
		}
	})
	addr := ln.Addr().String()
	view := func(st cluster.State) *cluster.View {
		v := &cluster.View{Self: "ff", Slots: new([cluster.NumSlots]cluster.SlotOwner), Epoch: 1,
			Members: []cluster.Member{{ID: "1", Role: cluster.RoleNode, Addr: addr, State: st}}}
		v.Slots[0] = cluster.SlotOwner{Owner: "1", Epoch: 1}
		return v
	}
	s, err := New(Options{Cluster: &fixedSource{view(cluster.StateAlive)}, NodeTimeout: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.route
	r.applyTable(tableFromView(view(cluster.StateAlive)))
	p := r.pool(r.byAddr[addr])
	r.applyTable(tableFromView(view(cluster.StateDead)))
	for deadline := time.Now().Add(5 * time.Second); pings.Load() == 0 || p.verifying.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node declared dead was not asked")
		}
	}
	if st := p.getState(); st != poolLive {
		t.Fatalf("a node that answers PING is %v after the view declared it dead, want live", st)
	}
	r.applyTable(tableFromView(view(cluster.StateDead)))
	time.Sleep(20 * time.Millisecond)
	if n := pings.Load(); n != 1 || p.verifying.Load() {
		t.Errorf("%d PINGs after a second view saying dead, want 1 (not asked again)", n)
	}
	// It comes back in the view, then goes for real: refused connections.
	r.applyTable(tableFromView(view(cluster.StateAlive)))
	ln.Close()
	p.mu.Lock()
	for i := range p.shared {
		for _, c := range p.shared[i] {
			if c != nil {
				c.nc.Close()
			}
		}
	}
	p.mu.Unlock()
	r.applyTable(tableFromView(view(cluster.StateDead)))
	waitPoolState(t, p, poolDead)
}

// TestRetiredPoolNotRedialled: a node that failed while it was a member
// and was then retired (drained, then removed for good) is not dialed
// again in the background: its recoverer stops, where it used to dial the
// gone address every RedialBackoff for as long as the proxy ran. A view
// that names it again revives it.
func TestRetiredPoolNotRedialled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close() // connections to it are refused
	view := func(st cluster.State) *cluster.View {
		return &cluster.View{Self: "ff", Slots: new([cluster.NumSlots]cluster.SlotOwner),
			Members: []cluster.Member{{ID: "1", Role: cluster.RoleNode, Addr: gone, State: st}}}
	}
	s, err := New(Options{Cluster: &fixedSource{view(cluster.StateAlive)}, RedialBackoff: 5 * time.Millisecond,
		NodeTimeout: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.route
	r.applyTable(tableFromView(view(cluster.StateAlive)))
	p := r.pool(r.byAddr[gone])
	if _, err := p.sharedConn(2, 0); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	waitFor("the live pool's recoverer never retried", func() bool { return p.errors.Load() >= 3 })
	r.applyTable(tableFromView(view(cluster.StateDead)))
	if st := p.getState(); st != poolRetired {
		t.Fatalf("the dead member without slots is %v, want retired", st)
	}
	waitFor("the retired pool's recoverer still runs", func() bool { return !p.recovering.Load() })
	before := p.errors.Load()
	time.Sleep(50 * time.Millisecond) // ten backoffs
	if n := p.errors.Load() - before; n != 0 {
		t.Errorf("%d dials to the retired node after its recoverer stopped", n)
	}
	if _, err := p.sharedConn(2, 0); !errors.Is(err, errNodeDown) || p.recovering.Load() {
		t.Errorf("a straggler to the retired node: err %v, recoverer started %v", err, p.recovering.Load())
	}
	r.applyTable(tableFromView(view(cluster.StateAlive)))
	if st := p.getState(); st != poolLive || p.down.Load() {
		t.Errorf("named again by the view: %v, down %v", st, p.down.Load())
	}
}

// TestMovedHintToReachedDeadNode: a proxy cut off from gossip sees every
// member dead; a MOVED to a node its view calls dead stands while the
// view's owner is dead too and the proxy has reached the hinted node
// (doubted) or knows no failure of it, where the view would send the slot
// to its dead owner (CLUSTERDOWN for every command). Once the proxy finds
// the hinted node dead itself, the hint gives way.
func TestMovedHintToReachedDeadNode(t *testing.T) {
	for _, reached := range []bool{true, false} {
		r := newTestRouting(t)
		stale := tableFromView(testView(map[uint16]cluster.SlotOwner{5: {Owner: "3", Epoch: 1}},
			cluster.StateDead, cluster.StateDead, cluster.StateDead))
		r.applyTable(stale)
		r.noteMoved(5, "b:1")
		r.mu.Lock()
		b := r.pool(r.byAddr["b:1"])
		b.doubted = reached
		if !reached {
			r.setPoolState(b, poolDead) // verifyDead found it dead
		}
		r.mu.Unlock()
		r.applyTable(stale)
		want := "c:1"
		if reached {
			want = "b:1"
		}
		if got := r.ownerAddr(5); got != want {
			t.Errorf("reached %v: slot 5 at %q, want %q", reached, got, want)
		}
	}
}
