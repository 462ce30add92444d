package engine

import (
	"unsafe"

	"github.com/shardgate/shardgate/internal/prefetch"
	"github.com/shardgate/shardgate/slots"
)

// prefetchBatch is how many keys Prefetch handles per round.
const prefetchBatch = 16

// Prefetch starts loading what looking up each key will read first: its
// shard (lock and key table header) and the key table slot where the
// probe starts. The commands of a pipeline then find them in cache, and
// their misses overlap instead of following one another (see package
// prefetch). It takes no lock and changes nothing: the table slot comes
// from an unlocked read of the shard's table (racyTableSlot), which at
// worst prefetches a useless line.
func (ks *Keyspace) Prefetch(keys [][]byte) {
	var (
		shards [prefetchBatch]*Shard
		hashes [prefetchBatch]uint64
	)
	var prev []byte
	for len(keys) > 0 {
		n := 0
		for len(keys) > 0 && n < prefetchBatch {
			k := keys[0]
			keys = keys[1:]
			if n > 0 && string(k) == string(prev) {
				continue // a pipeline on one key: it is in cache after the first
			}
			prev = k
			sh := &ks.shards[slots.Slot(k)]
			prefetch.Line(uintptr(unsafe.Pointer(sh)))
			shards[n] = sh
			hashes[n] = hashKeyBytes(ks.keySeed, k)
			n++
		}
		for i := range n {
			if p := racyTableSlot(&shards[i].keys, hashes[i]); p != 0 {
				prefetch.Line(p)
			}
		}
	}
}
