package cluster

import "errors"

// Sentinel errors. Callers test them with errors.Is; call sites add
// context by wrapping.
var (
	// ErrClosed is returned by calls on a Cluster after Close.
	ErrClosed = errors.New("cluster: closed")
	// ErrNotOwner is returned by Handoff for a slot this node does not own.
	ErrNotOwner = errors.New("cluster: not the slot's owner")
	// ErrUnknownNode is returned by Handoff when the target is not a known
	// member with the node role.
	ErrUnknownNode = errors.New("cluster: unknown node")
	// ErrBadSlot is returned for a slot number outside 0..16383.
	ErrBadSlot = errors.New("cluster: slot out of range")
	// ErrBadKey is returned by ParseKey for a key that is not 16, 24 or 32
	// bytes of hex or base64.
	ErrBadKey = errors.New("cluster: gossip key must be 16, 24 or 32 bytes, hex or base64")
	// ErrBadConfig is wrapped by Start for an invalid Config.
	ErrBadConfig = errors.New("cluster: bad config")
	// ErrBadEncoding is wrapped by the decoders for malformed input.
	ErrBadEncoding = errors.New("cluster: bad encoding")
	// ErrNotPersisted is returned when the state could not be written to
	// Config.Dir: by Sync (the write is retried), and by Commit, whose
	// claim then took no effect (it is written before anyone hears of it).
	ErrNotPersisted = errors.New("cluster: state not persisted")
	// ErrOtherCluster is the refusal of a member that belongs to another
	// cluster id.
	ErrOtherCluster = errors.New("cluster: member of another cluster")
	// ErrStaleEpoch is returned by Commit when another owner holds a slot
	// at the claim's epoch or higher.
	ErrStaleEpoch = errors.New("cluster: stale epoch")
	// ErrNoCluster is returned by Commit before the node belongs to a
	// cluster (no cluster id yet).
	ErrNoCluster = errors.New("cluster: not part of a cluster yet")
	// ErrBadState is wrapped when the persisted state in Dir cannot be read.
	ErrBadState = errors.New("cluster: bad persisted state")
)
