package cluster

import (
	"encoding/binary"
	"fmt"
)

// Wire formats. All are versioned by their first byte and decoded
// strictly: any malformed, out-of-range or trailing input is an error
// wrapping ErrBadEncoding, never a panic (FuzzDecodeTable).
//
// Claims (a table or part of one):
//
//	version 1
//	uvarint n, then n owners: byte length, id (a valid NodeID, no duplicates)
//	uvarint m, then m claims in ascending, non-overlapping slot order:
//	  uvarint first, uvarint last-first, uvarint owner index, uvarint epoch (>= 1)
//
// Messages between members (user messages, broadcasts and push/pull state):
//
//	kind, byte length + cluster id, then
//	  msgClaims, msgState: claims
//	  msgLeave: byte length + node id, byte length + boot id
//	  msgHeartbeat: byte length + node id, uvarint stamp, 8 bytes
//	    big-endian digest of the asker's slots in its own table
//	  msgHeartbeatAck: byte length + node id, uvarint stamp, 8 bytes
//	    big-endian digest of the asker's slots in the sender's table,
//	    uvarint the sender's table epoch
//
// Node metadata (memberlist NodeMeta, at most 512 bytes):
//
//	version 1, role, byte length + id, byte length + boot id,
//	byte length + cluster id, byte length + RESP address,
//	8 bytes big-endian table digest, uvarint table epoch,
//	then (later additions, absent in older metadata) uvarint weight, flags
//	byte, 8 bytes big-endian bootstrap set digest
const (
	claimsVersion = 1
	metaVersion   = 1

	msgClaims       byte = 1 // a change: claims named by their slot range
	msgState        byte = 2 // a member's whole table
	msgLeave        byte = 3 // a member is leaving (Close): others record it left, not dead
	msgHeartbeat    byte = 4 // a node asks another for an ack: the minority fence counts whom it hears from
	msgHeartbeatAck byte = 5 // the answer, echoing the asker's stamp

	// maxMetaSize is memberlist's MetaMaxSize.
	maxMetaSize = 512
)

// AppendClaims appends the encoding of cs (ascending, non-overlapping,
// assigned claims, as Table.Claims returns them) to b.
func AppendClaims(b []byte, cs []Claim) []byte {
	b = append(b, claimsVersion)
	index := make(map[NodeID]uint64)
	var owners []NodeID
	for _, c := range cs {
		if _, ok := index[c.Owner]; !ok {
			index[c.Owner] = uint64(len(owners))
			owners = append(owners, c.Owner)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(owners)))
	for _, id := range owners {
		b = append(b, byte(len(id)))
		b = append(b, id...)
	}
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		b = binary.AppendUvarint(b, uint64(c.First))
		b = binary.AppendUvarint(b, uint64(c.Last-c.First))
		b = binary.AppendUvarint(b, index[c.Owner])
		b = binary.AppendUvarint(b, c.Epoch)
	}
	return b
}

// EncodeTable returns the encoding of t's claims.
func EncodeTable(t *Table) []byte { return AppendClaims(nil, t.Claims()) }

// DecodeClaims decodes claims encoded by AppendClaims.
func DecodeClaims(b []byte) ([]Claim, error) {
	d := decoder{b: b}
	cs := d.claims()
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return cs, nil
}

// DecodeTable decodes an encoded table.
func DecodeTable(b []byte) (*Table, error) {
	cs, err := DecodeClaims(b)
	if err != nil {
		return nil, err
	}
	t := new(Table)
	for _, c := range cs {
		t.Merge(c)
	}
	return t, nil
}

// decoder reads the formats above; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadEncoding, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("short input")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("short input")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) uvarint(limit uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	if v > limit {
		d.fail("%s %d out of range", what, v)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := int(d.byte())
	if d.err != nil {
		return ""
	}
	if len(d.b) < n {
		d.fail("short string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) claims() []Claim {
	if v := d.byte(); d.err == nil && v != claimsVersion {
		d.fail("claims version %d", v)
	}
	n := d.uvarint(NumSlots, "owner count")
	owners := make([]NodeID, 0, n)
	seen := make(map[NodeID]bool, n)
	for range n {
		id := NodeID(d.str())
		if d.err != nil {
			return nil
		}
		if !id.Valid() || seen[id] {
			d.fail("bad owner id %q", id)
			return nil
		}
		seen[id] = true
		owners = append(owners, id)
	}
	m := d.uvarint(NumSlots, "claim count")
	cs := make([]Claim, 0, m)
	next := uint64(0) // the lowest slot the next claim may start at
	for range m {
		first := d.uvarint(NumSlots-1, "first slot")
		span := d.uvarint(NumSlots-1, "slot span")
		owner := d.uvarint(uint64(len(owners)), "owner index")
		epoch := d.uvarint(^uint64(0), "epoch")
		if d.err != nil {
			return nil
		}
		switch {
		case first < next:
			d.fail("claim at slot %d overlaps or is out of order", first)
		case first+span >= NumSlots:
			d.fail("claim %d+%d past the last slot", first, span)
		case owner >= uint64(len(owners)):
			d.fail("owner index %d of %d", owner, len(owners))
		case epoch == 0:
			d.fail("claim at epoch 0")
		}
		if d.err != nil {
			return nil
		}
		cs = append(cs, Claim{uint16(first), uint16(first + span), SlotOwner{owners[owner], epoch}})
		next = first + span + 1
	}
	return cs
}

// message is a decoded message between members.
type message struct {
	kind      byte
	clusterID string
	claims    []Claim // msgClaims, msgState
	id        NodeID  // msgLeave, msgHeartbeat, msgHeartbeatAck
	bootID    string  // msgLeave
	stamp     uint64  // msgHeartbeat, msgHeartbeatAck: the asker's clock
	owned     uint64  // msgHeartbeat, msgHeartbeatAck: Table.OwnerDigest of the asker in the sender's table
	epoch     uint64  // msgHeartbeatAck: the sender's table epoch
}

func appendMessage(b []byte, kind byte, clusterID string, cs []Claim) []byte {
	b = append(b, kind, byte(len(clusterID)))
	b = append(b, clusterID...)
	return AppendClaims(b, cs)
}

// appendHeartbeat appends a heartbeat from id; stamp is the asker's own
// clock, only it reads it; owned is the digest of id's slots in its own
// table (Table.OwnerDigest).
func appendHeartbeat(b []byte, clusterID string, id NodeID, stamp, owned uint64) []byte {
	b = append(b, msgHeartbeat, byte(len(clusterID)))
	b = append(b, clusterID...)
	b = append(b, byte(len(id)))
	b = append(b, id...)
	b = binary.AppendUvarint(b, stamp)
	return binary.BigEndian.AppendUint64(b, owned)
}

// appendHeartbeatAck appends id's answer to a heartbeat with stamp, the
// digest of the asker's slots in id's table (Table.OwnerDigest) and the
// table's epoch.
func appendHeartbeatAck(b []byte, clusterID string, id NodeID, stamp, owned, epoch uint64) []byte {
	b = append(b, msgHeartbeatAck, byte(len(clusterID)))
	b = append(b, clusterID...)
	b = append(b, byte(len(id)))
	b = append(b, id...)
	b = binary.AppendUvarint(b, stamp)
	b = binary.BigEndian.AppendUint64(b, owned)
	return binary.AppendUvarint(b, epoch)
}

func appendLeave(b []byte, clusterID string, id NodeID, bootID string) []byte {
	b = append(b, msgLeave, byte(len(clusterID)))
	b = append(b, clusterID...)
	b = append(b, byte(len(id)))
	b = append(b, id...)
	b = append(b, byte(len(bootID)))
	return append(b, bootID...)
}

func decodeMessage(b []byte) (message, error) {
	d := decoder{b: b}
	m := message{kind: d.byte()}
	m.clusterID = d.str()
	switch m.kind {
	case msgClaims, msgState:
		m.claims = d.claims()
	case msgLeave, msgHeartbeat, msgHeartbeatAck:
		m.id = NodeID(d.str())
		switch m.kind {
		case msgLeave:
			m.bootID = d.str()
		case msgHeartbeat:
			m.stamp = d.uvarint(^uint64(0), "stamp")
			m.owned = d.uint64()
		case msgHeartbeatAck:
			m.stamp = d.uvarint(^uint64(0), "stamp")
			m.owned = d.uint64()
			m.epoch = d.uvarint(^uint64(0), "epoch")
		}
		if d.err == nil && !m.id.Valid() {
			d.fail("bad node id %q", m.id)
		}
	default:
		d.fail("message kind %d", m.kind)
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return m, d.err
}

// meta is what a member publishes about itself in memberlist's NodeMeta.
type meta struct {
	Role      Role
	ID        NodeID
	BootID    string
	ClusterID string
	Addr      string
	Digest    uint64
	Epoch     uint64
	Weight    uint32 // 0 in metadata of nodes that predate weights: read as 1
	Draining  bool
	// BootSet is the digest of the set of empty nodes an empty node sees
	// alive (BootSetDigest), 0 when it has a cluster id: a bootstrap
	// waits until every candidate publishes the same set.
	BootSet uint64
}

// metaDraining is the metadata flag of a draining node.
const metaDraining = 1

func (m meta) encode() ([]byte, error) {
	for _, s := range []string{string(m.ID), m.BootID, m.ClusterID, m.Addr} {
		if len(s) > 255 {
			return nil, fmt.Errorf("%w: metadata field longer than 255 bytes: %.40q...", ErrBadConfig, s)
		}
	}
	b := []byte{metaVersion, byte(m.Role)}
	for _, s := range []string{string(m.ID), m.BootID, m.ClusterID, m.Addr} {
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint64(b, m.Digest)
	b = binary.AppendUvarint(b, m.Epoch)
	b = binary.AppendUvarint(b, uint64(m.Weight))
	var flags byte
	if m.Draining {
		flags |= metaDraining
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, m.BootSet)
	if len(b) > maxMetaSize {
		return nil, fmt.Errorf("%w: node metadata of %d bytes exceeds %d", ErrBadConfig, len(b), maxMetaSize)
	}
	return b, nil
}

func decodeMeta(b []byte) (meta, error) {
	d := decoder{b: b}
	var m meta
	if v := d.byte(); d.err == nil && v != metaVersion {
		d.fail("meta version %d", v)
	}
	m.Role = Role(d.byte())
	m.ID = NodeID(d.str())
	m.BootID = d.str()
	m.ClusterID = d.str()
	m.Addr = d.str()
	if d.err == nil {
		if len(d.b) < 8 {
			d.fail("short digest")
		} else {
			m.Digest = binary.BigEndian.Uint64(d.b)
			d.b = d.b[8:]
		}
	}
	m.Epoch = d.uvarint(^uint64(0), "epoch")
	if d.err == nil && len(d.b) > 0 {
		// weight and flags came later: a member without them has weight 1
		m.Weight = uint32(d.uvarint(1<<32-1, "weight"))
		m.Draining = d.byte()&metaDraining != 0
	}
	if d.err == nil && len(d.b) > 0 {
		if len(d.b) < 8 {
			d.fail("short bootstrap set digest")
		} else {
			m.BootSet = binary.BigEndian.Uint64(d.b)
			d.b = d.b[8:]
		}
	}
	m.Weight = max(m.Weight, 1)
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err == nil && (!m.Role.valid() || !m.ID.Valid()) {
		d.fail("bad role %d or id %q", m.Role, m.ID)
	}
	return m, d.err
}
