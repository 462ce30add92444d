package engine

import (
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT: what a node holds in one
// slot, as cluster tools ask it. Keys that expired but are not yet
// removed count, as in Redis (its slot index holds them too).
// GETKEYSINSLOT returns the slot's keys in no particular order (Redis:
// newest first), so a partial listing may pick other keys than Redis.

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
	var keys []string
	c.withShard(int(slot), func(s *Shard) {
		for k := range s.keys.all() {
			if int64(len(keys)) >= limit {
				break
			}
			keys = append(keys, k)
		}
	})
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k)
	}
}
