package engine

import (
	"cmp"
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
	type keyAge struct {
		key     string
		created uint64
	}
	var keys []keyAge
	c.withShard(int(slot), func(s *Shard) {
		if limit == 0 {
			return
		}
		for k, e := range s.keys.all() {
			keys = append(keys, keyAge{k, e.created})
		}
	})
	slices.SortFunc(keys, func(a, b keyAge) int { return cmp.Compare(b.created, a.created) })
	keys = keys[:min(int64(len(keys)), limit)]
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k.key)
	}
}
