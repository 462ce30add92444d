package cluster

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/shardgate/shardgate/slots"
)

// NumSlots is the number of hash slots in the table.
const NumSlots = slots.Count

// NodeID identifies a member: 40 lowercase hex characters, like a Redis
// Cluster node id. A node's id is generated once and persisted in its Dir.
type NodeID string

// idLen is the length of a NodeID in hex characters.
const idLen = 40

// NewNodeID returns a random node id.
func NewNodeID() NodeID { return NodeID(randomHex(idLen / 2)) }

// Valid reports whether id is 40 lowercase hex characters.
func (id NodeID) Valid() bool { return isLowerHex(string(id), idLen) }

// Role is what a member does in the cluster.
type Role uint8

const (
	// RoleNode is a data node: it owns slots.
	RoleNode Role = iota
	// RoleProxy is a proxy: a member that owns no slots.
	RoleProxy
	// RoleObserver is a member that only watches (shardgate cluster
	// status): it owns no slots and serves no clients; proxies must not
	// list it.
	RoleObserver
)

func (r Role) valid() bool { return r <= RoleObserver }

func (r Role) String() string {
	switch r {
	case RoleNode:
		return "node"
	case RoleProxy:
		return "proxy"
	case RoleObserver:
		return "observer"
	}
	return "unknown"
}

// State is a member's liveness as this member's failure detector sees it.
type State uint8

const (
	// StateAlive: the member answers probes.
	StateAlive State = iota
	// StateSuspect: the member is suspected of having failed. memberlist
	// v0.7.0 reports no suspicion events, so Views do not use it yet.
	StateSuspect
	// StateDead: the member was declared dead (or has not been heard of
	// since this process started).
	StateDead
	// StateLeft: the member left gracefully (Close).
	StateLeft
)

func (s State) String() string {
	switch s {
	case StateAlive:
		return "alive"
	case StateSuspect:
		return "suspect"
	case StateDead:
		return "dead"
	case StateLeft:
		return "left"
	}
	return "unknown"
}

// Member is one member of the cluster as seen from here.
type Member struct {
	ID     NodeID
	BootID string // random per process start
	Role   Role
	Addr   string // RESP address clients use (node or proxy)
	Gossip string // memberlist address host:port
	State  State

	// The member's table as it last announced it (its metadata): members
	// whose digest differs from this member's own have not converged yet.
	TableEpoch  uint64
	TableDigest uint64

	// Weight is the node's share of the slots relative to the others'
	// (--weight, at least 1); Draining marks a node being emptied, which
	// the planner gives no slots.
	Weight   uint32
	Draining bool
}

// SlotOwner is one entry of the slot table. Owner "" means unassigned
// (always at epoch 0).
type SlotOwner struct {
	Owner NodeID
	Epoch uint64
}

// Beats reports whether claim a wins over b: the higher epoch wins, and
// for equal epochs the greater owner id.
func (a SlotOwner) Beats(b SlotOwner) bool {
	if a.Epoch != b.Epoch {
		return a.Epoch > b.Epoch
	}
	return a.Owner > b.Owner
}

// randomHex returns 2n random lowercase hex characters.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("cluster: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
