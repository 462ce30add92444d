package cluster

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
)

// Table is the slot table: one claim per slot. Its zero value has every
// slot unassigned. Tables only grow by merging claims (Merge, MergeTable):
// a slot's entry is replaced only by one that Beats it, which makes the
// merge commutative, associative and idempotent.
type Table [NumSlots]SlotOwner

// Claim is a claim on the contiguous inclusive slot range First..Last.
type Claim struct {
	First, Last uint16
	SlotOwner
}

// Merge applies claim c slot by slot and reports whether anything changed.
// Slots outside 0..16383 and inverted ranges are ignored.
func (t *Table) Merge(c Claim) (changed bool) {
	if c.First > c.Last || int(c.Last) >= NumSlots {
		return false
	}
	for s := int(c.First); s <= int(c.Last); s++ {
		if c.SlotOwner.Beats(t[s]) {
			t[s] = c.SlotOwner
			changed = true
		}
	}
	return changed
}

// MergeClaims merges each claim and returns the claims (clipped to the
// slots they changed) that changed t, in slot order within each claim.
func (t *Table) MergeClaims(cs []Claim) (applied []Claim) {
	for _, c := range cs {
		if c.First > c.Last || int(c.Last) >= NumSlots {
			continue
		}
		start := -1
		for s := int(c.First); s <= int(c.Last)+1; s++ {
			won := s <= int(c.Last) && c.SlotOwner.Beats(t[s])
			if won {
				t[s] = c.SlotOwner
				if start < 0 {
					start = s
				}
				continue
			}
			if start >= 0 {
				applied = append(applied, Claim{uint16(start), uint16(s - 1), c.SlotOwner})
				start = -1
			}
		}
	}
	return applied
}

// MergeTable merges every slot of o into t and reports whether t changed.
func (t *Table) MergeTable(o *Table) (changed bool) {
	for s := range t {
		if o[s].Beats(t[s]) {
			t[s] = o[s]
			changed = true
		}
	}
	return changed
}

// Claims returns t as maximal runs of equal assigned entries, in slot
// order. Unassigned slots are left out.
func (t *Table) Claims() []Claim {
	var cs []Claim
	for s := 0; s < NumSlots; {
		e := s
		for e+1 < NumSlots && t[e+1] == t[s] {
			e++
		}
		if t[s].Owner != "" {
			cs = append(cs, Claim{uint16(s), uint16(e), t[s]})
		}
		s = e + 1
	}
	return cs
}

// Empty reports whether no slot is assigned.
func (t *Table) Empty() bool {
	for s := range t {
		if t[s].Owner != "" {
			return false
		}
	}
	return true
}

// MaxEpoch returns the highest epoch in t (0 for an empty table).
func (t *Table) MaxEpoch() uint64 {
	var m uint64
	for s := range t {
		m = max(m, t[s].Epoch)
	}
	return m
}

// Digest returns a 64-bit digest of t's content: equal tables have equal
// digests, and members compare digests to notice they differ.
func (t *Table) Digest() uint64 {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	for _, c := range t.Claims() {
		h.Write(binary.AppendUvarint(buf[:0], uint64(c.First)))
		h.Write(binary.AppendUvarint(buf[:0], uint64(c.Last)))
		h.Write(binary.AppendUvarint(buf[:0], c.Epoch))
		h.Write([]byte(c.Owner))
		h.Write([]byte{0})
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// OwnerDigest returns a 64-bit digest (FNV-1a) of the slots id owns in t
// and their epochs: two members agree on what id owns when theirs are
// equal.
func (t *Table) OwnerDigest(id NodeID) uint64 {
	h := emptyOwnerDigest
	for s := range t {
		if t[s].Owner == id {
			h = ownerDigestAdd(h, s, t[s].Epoch)
		}
	}
	return h
}

// OwnerDigests returns OwnerDigest of every owner in t, in one pass (an
// id absent from it owns nothing: emptyOwnerDigest).
func (t *Table) OwnerDigests() map[NodeID]uint64 {
	ds := make(map[NodeID]uint64)
	for s := range t {
		if id := t[s].Owner; id != "" {
			h, ok := ds[id]
			if !ok {
				h = emptyOwnerDigest
			}
			ds[id] = ownerDigestAdd(h, s, t[s].Epoch)
		}
	}
	return ds
}

// emptyOwnerDigest is the OwnerDigest of owning nothing (FNV-1a's offset
// basis).
const emptyOwnerDigest uint64 = 14695981039346656037

// ownerDigestAdd folds a slot and its epoch into an FNV-1a digest.
func ownerDigestAdd(h uint64, slot int, epoch uint64) uint64 {
	const prime = 1099511628211
	var buf [2 + 8]byte
	binary.BigEndian.PutUint16(buf[:], uint16(slot))
	binary.BigEndian.PutUint64(buf[2:], epoch)
	for _, b := range buf {
		h = (h ^ uint64(b)) * prime
	}
	return h
}

// ownerRanges returns the contiguous inclusive slot ranges owned by id, in
// ascending order (neighbouring slots of one owner form one range whatever
// their epochs).
func ownerRanges(t *[NumSlots]SlotOwner, id NodeID) [][2]uint16 {
	var rs [][2]uint16
	for s := 0; s < NumSlots; s++ {
		if t[s].Owner != id {
			continue
		}
		e := s
		for e+1 < NumSlots && t[e+1].Owner == id {
			e++
		}
		rs = append(rs, [2]uint16{uint16(s), uint16(e)})
		s = e
	}
	return rs
}

// Ranges returns the contiguous inclusive slot ranges owned by id.
func (t *Table) Ranges(id NodeID) [][2]uint16 { return ownerRanges((*[NumSlots]SlotOwner)(t), id) }

// Count returns how many slots id owns.
func (t *Table) Count(id NodeID) int {
	n := 0
	for s := range t {
		if t[s].Owner == id {
			n++
		}
	}
	return n
}

// BootstrapClaims returns the initial assignment of all slots to ids at
// epoch 1: ids sorted, slots split into contiguous ranges as redis-cli
// --cluster create splits them (0-5460, 5461-10922, 10923-16383 for
// three). Every node computes the same claims from the same set of ids.
func BootstrapClaims(ids []NodeID) []Claim {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n := len(ids)
	if n == 0 {
		return nil
	}
	per := float64(NumSlots) / float64(n)
	cursor := 0.0
	first := 0
	cs := make([]Claim, 0, n)
	for i, id := range ids {
		last := int(math.Round(cursor + per - 1))
		if last > NumSlots-1 || i == n-1 {
			last = NumSlots - 1
		}
		if last >= first {
			cs = append(cs, Claim{uint16(first), uint16(last), SlotOwner{id, 1}})
		}
		first = last + 1
		cursor += per
	}
	return cs
}

// BootstrapClusterID returns the cluster id the nodes ids bootstrap under
// (with the optional cluster name): 32 hex characters of a hash of the
// sorted ids, the same on every one of them.
func BootstrapClusterID(ids []NodeID, name string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	h := sha256.New()
	h.Write([]byte("shardgate cluster\n"))
	h.Write([]byte(name))
	h.Write([]byte{'\n'})
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// BootSetDigest is the digest of a set of node ids that empty nodes
// publish while waiting to bootstrap; never 0, which means no set.
func BootSetDigest(ids []NodeID) uint64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	h := fnv.New64a()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return max(h.Sum64(), 1)
}

// String prints the claims, for logs and test failures.
func (t *Table) String() string {
	var b strings.Builder
	for i, c := range t.Claims() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.String())
	}
	return b.String()
}

func (c Claim) String() string {
	id := string(c.Owner)
	if len(id) > 8 {
		id = id[:8]
	}
	return fmt.Sprintf("%d-%d:%s@%d", c.First, c.Last, id, c.Epoch)
}
