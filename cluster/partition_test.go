package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// network cuts links between members: a member's transport drops what it
// sends to a gossip address its side of a partition cannot reach.
type network struct {
	mu  sync.Mutex
	cut map[[2]string]bool // {from, to} gossip addresses
}

// cutTransport is one member's transport on a network.
type cutTransport struct {
	*memberlist.NetTransport
	net  *network
	self string // gossip address
}

func (n *network) wrap(cfg *Config) {
	cfg.wrapTransport = func(nt *memberlist.NetTransport) memberlist.NodeAwareTransport {
		ip, port, err := nt.FinalAdvertiseAddr("", nt.GetAutoBindPort())
		if err != nil {
			panic(err)
		}
		return &cutTransport{NetTransport: nt, net: n, self: net.JoinHostPort(ip.String(), fmt.Sprint(port))}
	}
}

// partition cuts every link between the members of a and those of b.
func (n *network) partition(a, b []*Cluster) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			n.cut[[2]string{x.GossipAddr(), y.GossipAddr()}] = true
			n.cut[[2]string{y.GossipAddr(), x.GossipAddr()}] = true
		}
	}
}

func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
}

func (t *cutTransport) blocked(to string) bool {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	return t.net.cut[[2]string{t.self, to}]
}

var errCut = errors.New("link cut")

func (t *cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.blocked(addr) {
		return time.Now(), nil // a lost datagram
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *cutTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

func (t *cutTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.blocked(addr) {
		return nil, errCut
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *cutTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

// TestPartitionHeals: a node cut off from the others sees them dead and
// they see it dead; a handoff made meanwhile reaches it once the network
// heals, without anyone joining by hand.
func TestPartitionHeals(t *testing.T) {
	t.Parallel()
	nw := &network{cut: make(map[[2]string]bool)}
	cs := startN(t, 3, func(i int, cfg *Config) { nw.wrap(cfg) })
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	ids := sortedIDsOf(cs)
	a, b, c := byID(cs, ids[0]), byID(cs, ids[1]), byID(cs, ids[2])

	nw.partition([]*Cluster{a, b}, []*Cluster{c})
	checkFor(t, detectTimeout, func() error {
		if err := stateOf([]*Cluster{a, b}, c.ID(), StateDead)(); err != nil {
			return err
		}
		if err := stateOf([]*Cluster{c}, a.ID(), StateDead)(); err != nil {
			return err
		}
		return stateOf([]*Cluster{c}, b.ID(), StateDead)()
	})
	if err := a.Handoff([]uint16{42}, b.ID()); err != nil {
		t.Fatal(err)
	}
	checkFor(t, convergeTimeout, func() error {
		if o := b.View().Slots[42]; o.Owner != b.ID() {
			return fmt.Errorf("b sees slot 42 at %v", o)
		}
		return nil
	})
	if o := c.View().Slots[42]; o.Owner != a.ID() {
		t.Fatalf("the cut-off node learned the handoff: %v", o)
	}

	// memberlist itself keeps gossiping to dead members for
	// GossipToTheDeadTime, which would heal a short partition; wait it out
	// so that healing is up to the rejoin loop.
	time.Sleep(2 * fastTimings().memberlist().GossipToTheDeadTime)
	nw.heal()
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	if o := c.View().Slots[42]; o != (SlotOwner{b.ID(), 2}) {
		t.Fatalf("after healing, slot 42 on the cut-off node: %v", o)
	}
}

// TestMinorityFence: with ReassignAfter, a node cut off from the majority
// stops serving (Cut) before the majority reassigns its slots, so a slot
// is never writable on both sides of a partition; the majority side is
// never cut, and the node serves again once the partition heals.
func TestMinorityFence(t *testing.T) {
	t.Parallel()
	nw := &network{cut: make(map[[2]string]bool)}
	cs := startN(t, 3, func(i int, cfg *Config) {
		nw.wrap(cfg)
		// Long enough that a majority node starved of CPU under -race on
		// a loaded machine does not miss acks for the 800 ms it takes
		// to be cut.
		cfg.ReassignAfter = 1600 * time.Millisecond
	})
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	ids := sortedIDsOf(cs)
	a, b, c := byID(cs, ids[0]), byID(cs, ids[1]), byID(cs, ids[2])
	for _, x := range cs {
		if x.Cut() {
			t.Fatalf("%s is cut with every node alive", x.ID()[:8])
		}
	}
	nw.partition([]*Cluster{a, b}, []*Cluster{c})
	var cutAt, takenAt time.Time
	deadline := time.Now().Add(detectTimeout + convergeTimeout)
	for (cutAt.IsZero() || takenAt.IsZero()) && time.Now().Before(deadline) {
		if cutAt.IsZero() && c.Cut() {
			cutAt = time.Now()
		}
		if takenAt.IsZero() && (*Table)(a.View().Slots).Count(c.ID()) == 0 {
			takenAt = time.Now()
		}
		if a.Cut() || b.Cut() {
			t.Fatal("a node of the majority is cut")
		}
		time.Sleep(time.Millisecond)
	}
	switch {
	case cutAt.IsZero():
		t.Fatal("the node cut off from the majority never stopped serving")
	case takenAt.IsZero():
		t.Fatal("the majority never reassigned the cut-off node's slots")
	case cutAt.After(takenAt):
		t.Fatalf("the majority took the slots %v before the cut-off node stopped serving them", cutAt.Sub(takenAt))
	}
	t.Logf("the cut-off node stopped serving %v before the majority took its slots", takenAt.Sub(cutAt))
	time.Sleep(2 * fastTimings().memberlist().GossipToTheDeadTime)
	nw.heal()
	checkFor(t, convergeTimeout, func() error {
		if c.Cut() {
			return errors.New("the healed node is still cut")
		}
		return converged(cs)
	})
}

// TestFenceOnHeartbeats: a node that hears no heartbeat from the others
// is cut even while memberlist still sees every member alive (its
// suspicions come one probe at a time, and Lifeguard slows the probes of
// an isolated member), while the others, hearing each other, are not; it
// serves again once the heartbeats are back.
func TestFenceOnHeartbeats(t *testing.T) {
	t.Parallel()
	cs, isolate := startHeartbeatIsolable(t, 3)
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	c := cs[2]
	owned := (*Table)(c.View().Slots).Count(c.ID())
	if owned == 0 {
		t.Fatal("the node to isolate owns no slot")
	}
	isolate(c.ID())
	checkFor(t, convergeTimeout, func() error {
		if !c.Cut() {
			return errors.New("the node that hears no heartbeat is not cut")
		}
		return nil
	})
	for _, x := range cs[:2] {
		if x.Cut() {
			t.Fatalf("%s, which hears the other node, is cut", x.ID()[:8])
		}
		if s := x.View().Members; len(s) != 3 {
			t.Fatalf("%s sees %d members", x.ID()[:8], len(s))
		}
		if n := (*Table)(x.View().Slots).Count(c.ID()); n != owned {
			t.Fatalf("%s sees %d of the isolated node's %d slots left to it: a member memberlist sees alive lost its slots", x.ID()[:8], n, owned)
		}
	}
	isolate("")
	checkFor(t, convergeTimeout, func() error {
		if c.Cut() {
			return errors.New("the node is still cut with heartbeats back")
		}
		return nil
	})
}

// TestCutNodeDoesNotReassign: a node cut off by the fence never hands out
// a dead node's slots, even while its gossip still calls the nodes it
// cannot hear alive (suspicions need confirmations the cut-off side
// cannot give): here the cut-off node has the lowest id, which makes it
// the one to reassign, and its gossip sees three of four nodes alive. The
// others, hearing only each other, are no majority of four either, so the
// dead node's slots wait for it.
func TestCutNodeDoesNotReassign(t *testing.T) {
	t.Parallel()
	cs, isolate := startHeartbeatIsolable(t, 4)
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	ids := sortedIDsOf(cs)
	cut, dead := byID(cs, ids[0]), byID(cs, ids[3])
	owned := (*Table)(cut.View().Slots).Count(dead.ID())
	isolate(cut.ID())
	checkFor(t, convergeTimeout, func() error {
		if !cut.Cut() {
			return errors.New("the node that hears no heartbeat is not cut")
		}
		return nil
	})
	dead.shutdown(false)
	checkFor(t, detectTimeout, stateOf([]*Cluster{cut}, dead.ID(), StateDead))
	time.Sleep(3 * cut.cfg.ReassignAfter)
	for _, id := range ids[:3] {
		c := byID(cs, id)
		if n := (*Table)(c.View().Slots).Count(dead.ID()); n != owned || c.View().Epoch != 1 {
			t.Errorf("%s sees the dead node with %d of its %d slots, table epoch %d: reassigned without a majority", id[:8], n, owned, c.View().Epoch)
		}
	}
}

// startHeartbeatIsolable starts n nodes with ReassignAfter whose
// heartbeats to and from one node (isolate's argument; "" for none) are
// dropped: a partition memberlist does not see.
func startHeartbeatIsolable(t *testing.T, n int) (cs []*Cluster, isolate func(NodeID)) {
	var mu sync.Mutex
	var isolated NodeID
	cs = startN(t, n, func(i int, cfg *Config) {
		cfg.ReassignAfter = 800 * time.Millisecond
		cfg.dropHeartbeat = func(from, to NodeID) bool {
			mu.Lock()
			defer mu.Unlock()
			return from == isolated || to == isolated
		}
	})
	return cs, func(id NodeID) {
		mu.Lock()
		isolated = id
		mu.Unlock()
	}
}
