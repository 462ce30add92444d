package proxy

import (
	"github.com/shardgate/shardgate/internal/redisinfo"
)

// MEMORY STATS and DOCTOR through the proxy describe the nodes' memory as
// INFO memory does (each node process once, the nodes that answer), with
// the keys of them all; MEMORY PURGE runs on every node; MALLOC-STATS is
// answered here. MEMORY USAGE goes to its key's node.

func registerMemoryOps(h map[string]func(c *client, args [][]byte)) {
	h["memory|stats"] = func(c *client, _ [][]byte) {
		c.nodesMemory(func(c *client, m redisinfo.Memory, keys, expires int64) {
			redisinfo.MemoryStats(&c.w, m, keys, expires)
		})
	}
	h["memory|doctor"] = func(c *client, _ [][]byte) {
		c.nodesMemory(func(c *client, m redisinfo.Memory, _, _ int64) {
			c.w.Verbatim(redisinfo.MemoryDoctor(m))
		})
	}
	h["memory|purge"] = cmdAllOK
}

func cmdMallocStats(c *client, _ [][]byte) { c.local.BulkString(redisinfo.MallocStatsNone) }

var infoMemoryKeyspace = [][]byte{[]byte("INFO"), []byte("server"), []byte("memory"), []byte("keyspace")}

// nodesMemory asks every node for its memory and keys, and hands the sums
// to write once they have answered.
func (c *client) nodesMemory(write func(c *client, m redisinfo.Memory, keys, expires int64)) {
	reqs := c.toAllUnlogged(infoMemoryKeyspace).reqs
	c.addMerge(func(c *client) {
		keys, expires, _ := sumKeyspace(reqs)
		write(c, nodesMemory(reqs), keys, expires)
	})
}
