package node

import (
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/node/engine"
)

// MEMORY STATS, DOCTOR, PURGE and MALLOC-STATS (MEMORY USAGE is the
// engine's): INFO memory's figures in Redis's shapes, the Go runtime
// standing in for the allocator.

func registerMemoryCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["memory|stats"] = s.cmdMemoryStats
	h["memory|doctor"] = func(c *client, _ [][]byte) { c.w.Verbatim(redisinfo.MemoryDoctor(s.memory())) }
	// PURGE: Go's nearest to jemalloc's purge of dirty pages is a
	// collection that returns the freed memory to the OS. It runs in the
	// background (the reclaimer's, spaced as its own): inline, a
	// collection of a big heap held every command queued behind it,
	// through a proxy those of every client of the node, for as long as
	// it took (0.3 s with 3M keys) and again at the next PURGE.
	h["memory|purge"] = func(c *client, _ [][]byte) {
		s.reclaim.Now()
		c.w.OK()
	}
	h["memory|malloc-stats"] = func(c *client, _ [][]byte) { c.w.BulkString(redisinfo.MallocStatsNone) }
}

// memory reads INFO memory's figures.
func (s *Server) memory() redisinfo.Memory {
	m := redisinfo.ReadMemory() // approx: the Go heap stands in for the allocator
	m.Peak = max(s.rates.notePeak(m.Used), m.Used)
	m.Startup = s.startupMemory
	m.MaxMemory = s.maxMemory.Load()
	return m
}

func (s *Server) cmdMemoryStats(c *client, _ [][]byte) {
	m := s.memory()
	ctx := c.txCtx
	if ctx == nil {
		s.ks.RLock()
		defer s.ks.RUnlock()
		ctx = &engine.Ctx{KS: s.ks}
	}
	var keys, expires int64
	ctx.EachShard(func(sh *engine.Shard) bool {
		keys += int64(sh.Len())
		expires += int64(sh.Expires())
		return true
	})
	redisinfo.MemoryStats(&c.w, m, keys, expires)
}
