package engine

import (
	"cmp"
	"container/heap"
	"slices"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT: what a node holds in one
// slot, as cluster tools ask it. Keys that expired but are not yet
// removed count, as in Redis (its slot index holds them too).
// GETKEYSINSLOT lists the newest keys first, as Redis does (it keeps a
// list per slot and adds new keys at its head).

func registerClusterCmds(h map[string]Handler) {
	h["cluster|countkeysinslot"] = cmdCountKeysInSlot
	h["cluster|getkeysinslot"] = cmdGetKeysInSlot
}

func cmdCountKeysInSlot(c *Ctx) {
	slot, ok := resp.ParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	if slot < 0 || slot >= slots.Count {
		c.W.Error(resp.ErrInvalidSlot)
		return
	}
	n := 0
	c.withShard(int(slot), func(s *Shard) { n = s.Len() })
	c.W.Int(int64(n))
}

func cmdGetKeysInSlot(c *Ctx) {
	slot, ok := resp.ParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	limit, ok := resp.ParseInt(c.Args[3])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	if slot < 0 || slot >= slots.Count || limit < 0 {
		c.W.Error(resp.ErrInvalidSlotOrKeys)
		return
	}
	var keys newestKeys
	c.withShard(int(slot), func(s *Shard) {
		keep := int(min(limit, int64(s.Len())))
		if keep == 0 {
			return
		}
		// The newest keep keys, in a min-heap of at most keep entries:
		// a few keys of a huge slot do not cost a sort of the slot.
		keys = make(newestKeys, 0, keep)
		for k, e := range s.keys.all() {
			switch ka := (keyAge{k, e.created}); {
			case len(keys) < keep:
				heap.Push(&keys, ka)
			case ka.created > keys[0].created:
				keys[0] = ka
				heap.Fix(&keys, 0)
			}
		}
	})
	slices.SortFunc(keys, func(a, b keyAge) int { return cmp.Compare(b.created, a.created) })
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k.key)
	}
}

// keyAge is a key with its creation number (Entry.created).
type keyAge struct {
	key     string
	created uint64
}

// newestKeys is a min-heap of keys by creation number.
type newestKeys []keyAge

func (h newestKeys) Len() int           { return len(h) }
func (h newestKeys) Less(i, j int) bool { return h[i].created < h[j].created }
func (h newestKeys) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *newestKeys) Push(x any)        { *h = append(*h, x.(keyAge)) }
func (h *newestKeys) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
