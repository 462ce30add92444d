package engine

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// The keyspace family: commands about keys rather than values. Keyed
// commands run with their slot's shard locked (c.Shard); the keyless ones
// (KEYS, SCAN, RANDOMKEY, DBSIZE) visit the shards that hold keys one at a
// time; FLUSHALL and FLUSHDB run with the keyspace held exclusively.

func registerKeyspace(h map[string]Handler) {
	h["del"] = cmdDel
	h["unlink"] = cmdDel // values are freed by the GC: UNLINK is DEL
	h["exists"] = cmdExists
	h["type"] = cmdType
	h["touch"] = cmdTouch
	h["move"] = cmdMove
	h["rename"] = cmdRename
	h["renamenx"] = cmdRenamenx
	h["copy"] = cmdCopy
	h["expire"] = func(c *Ctx) { expireGeneric(c, c.Now, true, "expire") }
	h["pexpire"] = func(c *Ctx) { expireGeneric(c, c.Now, false, "pexpire") }
	h["expireat"] = func(c *Ctx) { expireGeneric(c, 0, true, "expireat") }
	h["pexpireat"] = func(c *Ctx) { expireGeneric(c, 0, false, "pexpireat") }
	h["ttl"] = func(c *Ctx) { ttlGeneric(c, false, false) }
	h["pttl"] = func(c *Ctx) { ttlGeneric(c, true, false) }
	h["expiretime"] = func(c *Ctx) { ttlGeneric(c, false, true) }
	h["pexpiretime"] = func(c *Ctx) { ttlGeneric(c, true, true) }
	h["persist"] = cmdPersist
	h["keys"] = cmdKeys
	h["scan"] = cmdScan
	h["randomkey"] = cmdRandomkey
	h["dbsize"] = cmdDbsize
	registerClusterCmds(h)
	h["flushall"] = cmdFlushall
	h["flushdb"] = cmdFlushdb
	registerObject(h)
}

// Cloner is implemented by values of kinds other than string so that COPY
// can duplicate them; the copy must share nothing mutable with the
// original.
type Cloner interface {
	CloneValue() any
}

// readKey looks key up for a reading command, counting keyspace_hits and
// keyspace_misses as Redis's lookupKeyRead does; touch false is Redis's
// LOOKUP_NOTOUCH (the access time is left alone).
func readKey(c *Ctx, key []byte, touch bool) *Entry {
	var e *Entry
	if touch {
		e = c.KS.Lookup(c.Shard, key, c.Now)
	} else {
		e = c.KS.Peek(c.Shard, key, c.Now)
	}
	if e == nil {
		c.KS.Stats.KeyspaceMiss.Add(1)
	} else {
		c.KS.Stats.KeyspaceHits.Add(1)
	}
	return e
}

// cmdDel is DEL and UNLINK: an expired key counts as not there.
func cmdDel(c *Ctx) {
	n := 0
	for _, k := range c.Args[1:] {
		if c.KS.Delete(c.Shard, k, c.Now) {
			c.Shard.TouchBytes(k)
			n++
		}
	}
	c.KS.Dirty(int64(n))
	c.W.Int(int64(n))
}

// cmdExists counts the live keys among its arguments (repeats count again).
func cmdExists(c *Ctx) {
	n := 0
	for _, k := range c.Args[1:] {
		if readKey(c, k, false) != nil {
			n++
		}
	}
	c.W.Int(int64(n))
}

func cmdType(c *Ctx) {
	e := readKey(c, c.Args[1], false)
	if e == nil {
		c.W.Simple("none")
		return
	}
	c.W.Simple(e.Kind.String())
}

// cmdTouch counts the live keys and records an access to each.
func cmdTouch(c *Ctx) {
	n := 0
	for _, k := range c.Args[1:] {
		if readKey(c, k, true) != nil {
			n++
		}
	}
	c.W.Int(int64(n))
}

func cmdRename(c *Ctx)   { renameGeneric(c, false) }
func cmdRenamenx(c *Ctx) { renameGeneric(c, true) }

// renameGeneric moves the entry (value, TTL and access time) from the
// source key to the destination, replacing it unless nx. Both keys are in
// the locked shard (the dispatcher refuses CROSSSLOT).
func renameGeneric(c *Ctx, nx bool) {
	src, dst := c.Args[1], c.Args[2]
	e := c.Lookup(src)
	if e == nil {
		c.W.Error(resp.ErrNoSuchKey)
		return
	}
	if bytes.Equal(src, dst) {
		if nx {
			c.W.Int(0)
		} else {
			c.W.OK()
		}
		return
	}
	if old := c.Lookup(dst); old != nil {
		if nx {
			c.W.Int(0)
			return
		}
		c.KS.remove(c.Shard, string(dst), old)
	}
	c.KS.remove(c.Shard, string(src), e)
	c.KS.Set(c.Shard, dst, e)
	c.Shard.TouchBytes(src)
	c.Shard.TouchBytes(dst)
	c.KS.Dirty(1)
	if nx {
		c.W.Int(1)
	} else {
		c.W.OK()
	}
}

// cmdCopy is COPY source destination [DB db] [REPLACE]. Options are
// checked in Redis's order: each DB argument must be an int and a valid
// database; then, in cluster mode, any database but 0 is refused.
func cmdCopy(c *Ctx) {
	replace := false
	db := int64(0)
	args := c.Args
	for j := 3; j < len(args); j++ {
		switch {
		case equalFoldASCII(args[j], "replace"):
			replace = true
		case equalFoldASCII(args[j], "db") && j < len(args)-1:
			n, ok := ksParseInt(args[j+1])
			if !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				c.W.Error(fmt.Sprintf(resp.ErrIntOutOfRange, math.MinInt32, math.MaxInt32))
				return
			}
			if n < 0 || n >= redisDatabases {
				c.W.Error(resp.ErrDBIndexRange)
				return
			}
			db = n
			j++
		default:
			c.W.Error(resp.ErrSyntax)
			return
		}
	}
	if db != 0 {
		c.W.Error(resp.ErrCopyCrossDB)
		return
	}
	src, dst := args[1], args[2]
	if bytes.Equal(src, dst) {
		c.W.Error(resp.ErrSameObject)
		return
	}
	e := readKey(c, src, true)
	if e == nil {
		c.W.Int(0)
		return
	}
	if old := c.Lookup(dst); old != nil {
		if !replace {
			c.W.Int(0)
			return
		}
		c.KS.remove(c.Shard, string(dst), old)
	}
	c.KS.Set(c.Shard, dst, cloneEntry(e))
	c.Shard.TouchBytes(dst)
	c.KS.Dirty(1)
	c.W.Int(1)
}

// redisDatabases is Redis's default "databases" setting: DB arguments are
// range-checked against it before cluster mode refuses any but 0.
const redisDatabases = 16

// cloneEntry duplicates e for COPY, TTL included; the copy is a new object
// (its access time is set when it is stored).
func cloneEntry(e *Entry) *Entry {
	n := &Entry{Kind: e.Kind, Enc: e.Enc, Expire: e.Expire}
	if n.Enc == EncInt {
		n.Enc = EncIntUnshared // Redis's dupStringObject makes a new object
	}
	if e.Str != nil { // a Bitmap is in Val, cloned below
		n.Str = append([]byte(nil), e.Str...)
	}
	if e.Val != nil {
		cl, ok := e.Val.(Cloner)
		if !ok {
			panic(fmt.Sprintf("engine: COPY of a %s value, which cannot be cloned", e.Kind))
		}
		n.Val = cl.CloneValue()
	}
	return n
}

// Flags of EXPIRE and friends.
const (
	expireNX = 1 << iota
	expireXX
	expireGT
	expireLT
)

// expireGeneric is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: base is the
// time the argument counts from (now, or 0 for the AT forms). The order of
// checks is Redis's: options, the number, overflow, then the key.
func expireGeneric(c *Ctx, base int64, seconds bool, name string) {
	flags := 0
	for _, opt := range c.Args[3:] {
		switch {
		case equalFoldASCII(opt, "nx"):
			flags |= expireNX
		case equalFoldASCII(opt, "xx"):
			flags |= expireXX
		case equalFoldASCII(opt, "gt"):
			flags |= expireGT
		case equalFoldASCII(opt, "lt"):
			flags |= expireLT
		default:
			c.W.Error(fmt.Sprintf(resp.ErrUnsupportedOption, errorArg(opt)))
			return
		}
	}
	if flags&expireNX != 0 && flags&(expireXX|expireGT|expireLT) != 0 {
		c.W.Error(resp.ErrExpireNXCombo)
		return
	}
	if flags&expireGT != 0 && flags&expireLT != 0 {
		c.W.Error(resp.ErrExpireGTLT)
		return
	}
	when, ok := ksParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.W.Error(fmt.Sprintf(resp.ErrInvalidExpire, name))
			return
		}
		when *= 1000
	}
	if when > math.MaxInt64-base {
		c.W.Error(fmt.Sprintf(resp.ErrInvalidExpire, name))
		return
	}
	when += base

	key := c.Args[1]
	e := c.Lookup(key)
	if e == nil {
		c.W.Int(0)
		return
	}
	if !expireAllowed(flags, e.Expire, when) {
		c.W.Int(0)
		return
	}
	if when <= c.Now {
		// Already in the past: the key goes at once (Redis replicates this
		// as a DEL, and counts it as a change, not as an expiry).
		c.KS.remove(c.Shard, string(key), e)
	} else {
		c.KS.SetExpire(c.Shard, key, e, when)
	}
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	c.W.Int(1)
}

// expireAllowed applies NX/XX/GT/LT to a key whose expiry is cur (0: none,
// which GT and LT treat as infinite).
func expireAllowed(flags int, cur, when int64) bool {
	switch {
	case flags&expireNX != 0 && cur != 0:
		return false
	case flags&expireXX != 0 && cur == 0:
		return false
	case flags&expireGT != 0 && (cur == 0 || when <= cur):
		return false
	case flags&expireLT != 0 && cur != 0 && when >= cur:
		return false
	}
	return true
}

// ttlGeneric is TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing
// key, -1 for one without expiry; seconds are rounded to the nearest.
func ttlGeneric(c *Ctx, ms, absolute bool) {
	e := readKey(c, c.Args[1], false)
	switch {
	case e == nil:
		c.W.Int(-2)
	case e.Expire == 0:
		c.W.Int(-1)
	default:
		v := e.Expire
		if !absolute {
			v = max(e.Expire-c.liveNow(), 0)
		}
		if !ms {
			v = roundMsToSec(v)
		}
		c.W.Int(v)
	}
}

// roundMsToSec is (ms+500)/1000 for ms >= 0, without overflowing near
// MaxInt64 (Redis prints EXPIRETIME of PEXPIREAT 2^63-1 as 9223372036854776).
func roundMsToSec(ms int64) int64 {
	s := ms / 1000
	if ms%1000 >= 500 {
		s++
	}
	return s
}

func cmdPersist(c *Ctx) {
	key := c.Args[1]
	e := c.Lookup(key)
	if e == nil || e.Expire == 0 {
		c.W.Int(0)
		return
	}
	c.KS.SetExpire(c.Shard, key, e, 0)
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	c.W.Int(1)
}

// cmdKeys lists the live keys matching a pattern. Like Redis it skips
// expired keys without removing them. The order is shardgate's own (slot,
// then key table order), which Redis does not specify either.
func cmdKeys(c *Ctx) {
	pat := c.Args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var out []string
	c.eachUsedShard(func(s *Shard) bool {
		for k, e := range s.keys.all() {
			if e.ExpiredAt(c.Now) {
				continue
			}
			if all || MatchString(pat, k) {
				out = append(out, k)
			}
		}
		return true
	})
	c.W.Array(len(out))
	for _, k := range out {
		c.W.BulkString(k)
	}
}

// cmdRandomkey returns a random live key, or null. It starts at a random
// slot, takes the next shard holding keys and a random entry of it (the
// key table's iteration starts at a random place). Expired keys it meets are
// removed and it tries again, as Redis's dbRandomKey does; every retry
// removes a key, so it ends. Shards after long runs of empty slots are
// picked more often: like Redis's bucket sampling, the choice is random
// but not uniform.
func cmdRandomkey(c *Ctx) {
	for {
		slot := c.KS.used.nextWrap(rand.IntN(slots.Count))
		if slot < 0 {
			c.W.Null()
			return
		}
		if !c.KS.mayExpire() {
			randomLiveKey(c, slot)
			return
		}
		var found string
		ok := false
		c.withShard(slot, func(s *Shard) {
			for k, e := range s.keys.all() {
				if e.ExpiredAt(c.Now) {
					c.KS.expire(s, k, e)
					return
				}
				found, ok = k, true
				return
			}
		})
		if ok {
			c.W.BulkString(found)
			return
		}
	}
}

// randomLiveKey is RANDOMKEY while expired keys may not be removed (a
// CLIENT PAUSE): it skips them, walking the shards from slot on, and
// answers null if every key has expired. Redis 7.0.15 loops forever there
// (its retries count on removing the expired keys it meets, and the
// server stops answering).
func randomLiveKey(c *Ctx, slot int) {
	first := slot
	for visited := 0; visited < slots.Count; visited++ { // bounded even if first empties meanwhile
		var found string
		ok := false
		c.withShard(slot, func(s *Shard) {
			for k, e := range s.keys.all() {
				if !e.ExpiredAt(c.Now) {
					found, ok = k, true
					return
				}
			}
		})
		if ok {
			c.W.BulkString(found)
			return
		}
		slot = c.KS.used.nextWrap((slot + 1) % slots.Count)
		if slot < 0 || slot == first {
			break
		}
	}
	c.W.Null()
}

// cmdDbsize counts keys, including expired keys not yet removed, exactly
// as Redis's DBSIZE (dictSize of the main dictionary) does.
func cmdDbsize(c *Ctx) {
	n := 0
	c.eachUsedShard(func(s *Shard) bool {
		n += s.Len()
		return true
	})
	c.W.Int(int64(n))
}

// parseFlushMode checks FLUSHALL/FLUSHDB's optional ASYNC|SYNC. Both
// modes do the same here: dropping the tables leaves the freeing to the GC,
// which is what ASYNC asks for, and the reply waits for neither.
func parseFlushMode(c *Ctx) bool {
	switch {
	case len(c.Args) == 1:
		return true
	case len(c.Args) == 2 && (equalFoldASCII(c.Args[1], "sync") || equalFoldASCII(c.Args[1], "async")):
		return true
	}
	c.W.Error(resp.ErrSyntax)
	return false
}

// flush empties every shard; with db 0 only, FLUSHDB and FLUSHALL empty
// the same thing. Watchers of existing keys are touched (Flush does it).
func flush(c *Ctx) int64 {
	n := 0
	for slot := c.KS.used.next(0); slot >= 0; slot = c.KS.used.next(slot + 1) {
		c.withShard(slot, func(s *Shard) { n += c.KS.Flush(s) })
	}
	return int64(n)
}

func cmdFlushall(c *Ctx) {
	if !parseFlushMode(c) {
		return
	}
	// Only the keys removed count as changes, as in Redis 7.0 (6.x added
	// one for the command itself).
	c.KS.Dirty(flush(c))
	c.W.OK()
}

func cmdFlushdb(c *Ctx) {
	if !parseFlushMode(c) {
		return
	}
	c.KS.Dirty(flush(c))
	c.W.OK()
}

// ksParseInt parses a signed 64-bit decimal integer as Redis's string2ll
// does: no sign but '-', no leading zeros, no spaces, no "-0".
func ksParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// errorArg renders a client argument inside an error text as Redis's
// addReplyErrorFormat does: C's %s stops at a NUL byte, and CR/LF become
// spaces so the reply stays one line.
func errorArg(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	out := []byte(string(b))
	for i, ch := range out {
		if ch == '\r' || ch == '\n' {
			out[i] = ' '
		}
	}
	return string(out)
}

// cmdMove is MOVE: a cluster node has only database 0, so Redis refuses it
// whatever its arguments.
func cmdMove(c *Ctx) { c.W.Error(resp.ErrMoveCluster) }
