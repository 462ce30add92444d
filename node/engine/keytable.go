package engine

import (
	"hash/maphash"
	"iter"
	"math/bits"
	"math/rand/v2"
)

// keyTable is one shard's keys: an open-addressing hash table with linear
// probing whose slots hold the key's hash, the key and its entry side by
// side.
//
// Why not a Go map: a lookup is a chain of dependent loads, and with
// 100,000 keys spread over 16384 slots every one of them misses the CPU
// cache. A Go map of a few keys costs the map header, the group's control
// word, the slot and the key's bytes before the entry is reached; this
// table costs the slot (hash, key header and entry pointer in one 32-byte
// slot, which never straddles a cache line), the key's bytes and the
// entry. redis-benchmark SET -P 16 spent about 30% of the node's CPU in
// the map lookup.
//
// A deleted key leaves a tombstone, so deleting while iterating (active
// expiry, KEYS, SCAN) is safe; the table is rebuilt at its right size
// when an insertion finds it too full of keys and tombstones or mostly
// empty after deletes. Inserting while iterating is not allowed.
//
// The table is 32 bytes so that a Shard, table included, is one cache
// line; the hash seed is the keyspace's, passed in.
type keyTable struct {
	slots []keySlot // nil or a power of two long
	n     int32     // live keys
	used  int32     // live keys and tombstones
}

// keySlot is empty when hash is 0, a tombstone when hash is not 0 and e
// is nil.
type keySlot struct {
	hash uint64
	key  string
	e    *Entry
}

const (
	keyTableMin = 8 // smallest table
	// A table is rebuilt once live keys and tombstones fill 3/4 of it, to
	// a size where the live keys fill at most half.
	keyTableMaxNum, keyTableMaxDen = 3, 4
	// An insertion into a table less than 1/keyTableSparse full rebuilds
	// it smaller (Redis shrinks a dict under 10% full).
	keyTableSparse = 8
)

// The hash is never 0, the empty mark: its top bit is set, which no
// table's mask reaches, so the low bits (the home slot, SCAN's position)
// stay uniform.
func hashKeyBytes(seed maphash.Seed, key []byte) uint64 {
	return maphash.Bytes(seed, key) | 1<<63
}

func hashKeyString(seed maphash.Seed, key string) uint64 {
	return maphash.String(seed, key) | 1<<63
}

// Len returns the number of keys.
func (t *keyTable) Len() int { return int(t.n) }

// find returns the slot holding key (whose hash is h), or nil.
func find[K ~string | ~[]byte](t *keyTable, h uint64, key K) *keySlot {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.hash == h && sl.e != nil && sl.key == string(key) {
			return sl
		}
		if sl.hash == 0 {
			return nil
		}
	}
}

// get returns key's entry, or nil.
func (t *keyTable) get(seed maphash.Seed, key []byte) *Entry {
	if sl := find(t, hashKeyBytes(seed, key), key); sl != nil {
		return sl.e
	}
	return nil
}

// getString is get for a string key.
func (t *keyTable) getString(seed maphash.Seed, key string) *Entry {
	if sl := find(t, hashKeyString(seed, key), key); sl != nil {
		return sl.e
	}
	return nil
}

// set stores e (not nil) under key, copying key only when it is new, and
// returns the entry it replaced, or nil.
func (t *keyTable) set(seed maphash.Seed, key []byte, e *Entry) (old *Entry, stored string) {
	h := hashKeyBytes(seed, key)
	if sl := find(t, h, key); sl != nil {
		old, sl.e = sl.e, e
		return old, sl.key
	}
	if (int(t.used)+1)*keyTableMaxDen > len(t.slots)*keyTableMaxNum || t.sparse() {
		t.rebuild(int(t.n) + 1)
	}
	stored = string(key)
	t.place(h, stored, e)
	t.n++
	return nil, stored
}

// storedKey returns the table's own copy of key, or "" if it is not
// there: other indexes share it rather than copy the key again.
func (t *keyTable) storedKey(seed maphash.Seed, key []byte) string {
	if sl := find(t, hashKeyBytes(seed, key), key); sl != nil {
		return sl.key
	}
	return ""
}

// place puts a new key in the first free or tombstone slot of its probe
// sequence.
func (t *keyTable) place(h uint64, key string, e *Entry) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.e == nil {
			if sl.hash == 0 {
				t.used++
			}
			*sl = keySlot{h, key, e}
			return
		}
	}
}

// rebuild moves the keys into a new table where n keys fill at most half.
func (t *keyTable) rebuild(n int) {
	size := keyTableMin
	for size < 2*n {
		size *= 2
	}
	old := t.slots
	t.slots = make([]keySlot, size)
	t.used = 0
	for i := range old {
		if sl := &old[i]; sl.e != nil {
			t.place(sl.hash, sl.key, sl.e)
		}
	}
}

// delete removes key, reporting whether it was there.
func (t *keyTable) delete(seed maphash.Seed, key string) bool {
	sl := find(t, hashKeyString(seed, key), key)
	if sl == nil {
		return false
	}
	sl.key, sl.e = "", nil // a tombstone: the hash stays
	t.n--
	if t.n == 0 {
		// Every slot is empty or a tombstone: drop the array (an
		// iteration still holding it sees only tombstones).
		t.slots, t.used = nil, 0
	}
	return true
}

// sparse reports whether the table is big and mostly empty: an insertion
// would rebuild it smaller (see set), and Keyspace.ShrinkSparse does so
// without one (rebuild; not while iterating).
func (t *keyTable) sparse() bool {
	return len(t.slots) > keyTableMin && int(t.n)*keyTableSparse < len(t.slots)
}

// reset empties the table.
func (t *keyTable) reset() {
	t.slots, t.n, t.used = nil, 0, 0
}

// all yields every key and entry, starting at a random place as a Go
// map's range does (active expiry and RANDOMKEY sample from it). The
// loop body may delete keys, not insert them.
func (t *keyTable) all() iter.Seq2[string, *Entry] {
	return func(yield func(string, *Entry) bool) {
		slots := t.slots
		if len(slots) == 0 {
			return
		}
		mask := len(slots) - 1
		start := int(rand.Uint64()) & mask
		for j := range slots {
			sl := &slots[(start+j)&mask]
			if sl.e != nil && !yield(sl.key, sl.e) {
				return
			}
		}
	}
}

// SCAN's order. A key's position is the low scanPosBits bits of its hash,
// bit-reversed: the keys whose home slot in a table of 2^k slots is b are
// exactly those whose position's top k bits are b reversed, an interval
// of positions. So a scan that visits positions in increasing order
// visits home slots in Redis's reverse-binary order, one interval at a
// time, whatever the table's size was at the previous call; a table that
// shrank since puts the cursor inside an interval, whose keys below it
// are then skipped (Redis returns them again; here no key comes twice).

// scanPosBits is the width of a position; tables stay below 2^scanPosBits
// slots.
const scanPosBits = 39

// scanPos is the SCAN position of a key with hash h.
func scanPos(h uint64) uint64 { return bits.Reverse64(h) >> (64 - scanPosBits) }

// scanInterval calls fn for every key whose position is in the interval
// holding pos at the table's current size and is at least pos, and
// returns where the interval ends (1<<scanPosBits after the last). fn may
// delete keys.
func (t *keyTable) scanInterval(pos uint64, fn func(key string, e *Entry)) (end uint64) {
	slots := t.slots
	if len(slots) == 0 {
		return 1 << scanPosBits
	}
	k := bits.TrailingZeros(uint(len(slots)))
	shift := scanPosBits - k
	mask := uint64(len(slots) - 1)
	home := bits.Reverse64(pos<<(64-scanPosBits)) & mask
	// The keys at home lie between it and the next empty slot (linear
	// probing; tombstones keep their hash and do not end the run).
	for i := home; ; i = (i + 1) & mask {
		sl := &slots[i]
		if sl.hash == 0 {
			break
		}
		if sl.e != nil && sl.hash&mask == home && scanPos(sl.hash) >= pos {
			fn(sl.key, sl.e)
		}
	}
	return (pos>>shift + 1) << shift
}
