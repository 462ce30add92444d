package engine

import (
	"math/bits"
	"sync/atomic"

	"github.com/shardgate/shardgate/slots"
)

// shardSet is a set of slots, one bit each, readable without any shard
// lock. The keyspace keeps two: shards holding keys and shards holding
// expiring keys, so that keyless walks (SCAN, DBSIZE, RANDOMKEY, the
// active expiry cycle) skip empty shards instead of locking all 16384.
//
// A bit is changed only by the holder of that shard (under its mutex or
// with the keyspace held exclusively), at the moment the shard's count
// crosses zero, so a bit read without the lock is a hint that the reader
// confirms under the lock. A bit that is set for a whole interval stays
// visible for that whole interval, which is what SCAN's guarantee needs.
type shardSet struct {
	words [slots.Count / 64]atomic.Uint64
	n     atomic.Int64
}

func (b *shardSet) add(slot uint16) {
	b.words[slot/64].Or(1 << (slot % 64))
	b.n.Add(1)
}

func (b *shardSet) remove(slot uint16) {
	b.words[slot/64].And(^uint64(1 << (slot % 64)))
	b.n.Add(-1)
}

// has reports whether slot is in the set.
func (b *shardSet) has(slot uint16) bool {
	return b.words[slot/64].Load()&(1<<(slot%64)) != 0
}

// count is the number of slots in the set.
func (b *shardSet) count() int { return int(b.n.Load()) }

// next returns the first slot >= from in the set, or -1 if there is none.
func (b *shardSet) next(from int) int {
	if from < 0 {
		from = 0
	}
	for w := from / 64; w < len(b.words); w++ {
		x := b.words[w].Load()
		if w == from/64 {
			x &= ^uint64(0) << (from % 64)
		}
		if x != 0 {
			return w*64 + bits.TrailingZeros64(x)
		}
	}
	return -1
}

// nextWrap is next that wraps around to slot 0; -1 when the set is empty.
func (b *shardSet) nextWrap(from int) int {
	if i := b.next(from); i >= 0 {
		return i
	}
	return b.next(0)
}
