package engine

import (
	"github.com/shardgate/shardgate/internal/resp"
)

// Ctx is one command's run: its arguments, where its reply goes, the
// keyspace and, for keyed commands, the shard the dispatcher has locked.
type Ctx struct {
	KS   *Keyspace
	Args [][]byte // Args[0] is the command name as the client sent it
	W    *resp.Writer
	// Now is the command's clock in unix milliseconds, read once so that a
	// command sees one instant (as Redis's cached command time).
	Now int64
	// Live, when not 0, is the clock at the command itself inside a
	// transaction, where Now stays at EXEC's start: Redis 7.0 judges
	// expiry by EXEC's cached time but TTL and PTTL subtract the live
	// clock. Only replies read it, so a replayed log does not depend on it.
	Live int64
	// Shard is the locked shard of the command's keys; nil for keyless
	// commands.
	Shard *Shard
	// Exclusive means the keyspace is held exclusively (inside a
	// transaction that needs it, or FLUSHALL): shards are touched without
	// their mutexes.
	Exclusive bool
	// Propagate is set by a read-only command that changed its key, which
	// the server then logs as it logs writes: PFCOUNT storing the count
	// it computed in the HyperLogLog's header, which Redis propagates to
	// its AOF (the command is MAY_REPLICATE), so that the header's bytes
	// survive a restart.
	Propagate bool
	// Brief leaves out what a proxy asking for a stream's ids does not
	// read: XINFO STREAM's first and last entries, which may be big
	// (nil in their place).
	Brief bool
}

// liveNow is the clock TTL and PTTL subtract from the expire time.
func (c *Ctx) liveNow() int64 {
	if c.Live != 0 {
		return c.Live
	}
	return c.Now
}

// Handler runs one command.
type Handler func(c *Ctx)

// Lookup is Keyspace.Lookup on the command's shard.
func (c *Ctx) Lookup(key []byte) *Entry { return c.KS.Lookup(c.Shard, key, c.Now) }

// EachShard calls fn on every shard holding keys, in slot order, locking each one unless
// the keyspace is held exclusively; fn returning false stops the walk.
//
// Only the shards that hold keys are visited (the keyspace's used set,
// as KEYS and DBSIZE walk it): an empty shard adds nothing to what the
// callers count, and locking all 16384 made INFO keyspace cost a few
// hundred microseconds on an empty node.
func (c *Ctx) EachShard(fn func(s *Shard) bool) {
	for i := c.KS.used.next(0); i >= 0; i = c.KS.used.next(i + 1) {
		s := &c.KS.shards[i]
		if !c.Exclusive {
			s.mu.Lock()
		}
		ok := fn(s)
		if !c.Exclusive {
			s.mu.Unlock()
		}
		if !ok {
			return
		}
	}
}

// Handlers returns the engine's command implementations by full name
// ("get", "object|encoding").
func Handlers() map[string]Handler {
	h := map[string]Handler{}
	registerStrings(h)
	registerKeyspace(h)
	registerBits(h)
	registerHLL(h)
	registerBitfield(h)
	registerLists(h)
	registerStreams(h)
	registerStreamGroups(h)
	registerStreamReads(h)
	registerSort(h)
	return h
}
