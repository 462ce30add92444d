package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// stateOnly is a Cluster with just the state goroutine's parts, for
// driving its decisions step by step without gossip.
func stateOnly(t *testing.T, self NodeID, expect int) *Cluster {
	c := &Cluster{
		cfg:  Config{Role: RoleNode, BootstrapExpect: expect},
		tm:   fastTimings(),
		log:  newTestLogger(t),
		self: self,
		bq:   &memberlist.TransmitLimitedQueue{NumNodes: func() int { return 3 }, RetransmitMult: 1},
	}
	c.st.members = make(map[NodeID]*memberRec)
	return c
}

// TestBootstrapNeedsAgreement: a node that sees exactly N empty nodes
// still waits while one of them publishes that it sees a different set
// (it has heard of an N+1st), and bootstraps a settle time after they
// all publish the same set.
func TestBootstrapNeedsAgreement(t *testing.T) {
	self, a, late := testIDs[0], testIDs[1], testIDs[2]
	c := stateOnly(t, self, 2)
	peer := &memberRec{Member: Member{ID: a, Role: RoleNode, State: StateAlive}}
	c.st.members[a] = peer
	pair := BootSetDigest([]NodeID{a, self})
	peer.bootSet = BootSetDigest([]NodeID{self, a, late})

	now := time.Unix(1000, 0)
	step := c.tm.bootstrapSettle / 3
	for i := 0; i < 12; i++ {
		c.maybeBootstrap(now)
		now = now.Add(step)
	}
	if c.st.clusterID != "" {
		t.Fatalf("bootstrapped while the peer saw three nodes: %s", c.st.clusterID)
	}
	if c.st.bootSet != pair || !c.st.metaDirty {
		t.Fatalf("publishes set %x (dirty %v), want %x", c.st.bootSet, c.st.metaDirty, pair)
	}

	peer.bootSet = pair
	c.maybeBootstrap(now)
	if c.st.clusterID != "" {
		t.Fatal("bootstrapped at the first moment of agreement, without settling")
	}
	now = now.Add(c.tm.bootstrapSettle)
	c.maybeBootstrap(now)
	want := BootstrapClusterID([]NodeID{self, a}, "")
	if c.st.clusterID != want {
		t.Fatalf("cluster id %q after agreeing for the settle time, want %q", c.st.clusterID, want)
	}
	if got := c.st.table.Count(self) + c.st.table.Count(a); got != NumSlots {
		t.Fatalf("bootstrap assigned %d slots", got)
	}
	if c.st.bootSet != 0 {
		t.Fatalf("still publishes bootstrap set %x after bootstrapping", c.st.bootSet)
	}
}

func TestBootSetDigest(t *testing.T) {
	x := BootSetDigest([]NodeID{testIDs[1], testIDs[0]})
	if y := BootSetDigest([]NodeID{testIDs[0], testIDs[1]}); x != y || x == 0 {
		t.Fatalf("order matters or zero: %x %x", x, y)
	}
	if y := BootSetDigest(testIDs[:3]); x == y {
		t.Fatalf("two sets share digest %x", x)
	}
}
