package engine

import "github.com/shardgate/shardgate/internal/resp"

// The strings family: GET, SET and friends, counters and ranges, as Redis
// 7.0's t_string.c answers them. Shared pieces live here; the commands are
// split by concern into strings_set.go (SET and its relatives, GETEX,
// GETDEL, GETSET, MSET), strings_range.go (APPEND, STRLEN, GETRANGE,
// SUBSTR, SETRANGE), strings_incr.go (INCR family, INCRBYFLOAT) and
// strings_lcs.go (LCS).
//
// Conventions every handler keeps, because INFO, WATCH and OBJECT
// ENCODING observe them:
//   - reads that Redis does with lookupKeyRead count a keyspace hit or miss
//     (lookupRead); write lookups (c.Lookup) count nothing;
//   - every change touches the key for WATCH and counts in Dirty exactly as
//     Redis's server.dirty does;
//   - Entry.Enc is what Redis's OBJECT ENCODING would print for the value.

// maxStringLen is proto-max-bulk-len, the largest string a command may
// build (512 MB).
const maxStringLen = 512 * 1024 * 1024

func registerStrings(h map[string]Handler) {
	h["get"] = cmdGet
	h["mget"] = cmdMget
	h["set"] = cmdSet
	h["setnx"] = cmdSetnx
	h["setex"] = cmdSetex
	h["psetex"] = cmdPsetex
	h["getset"] = cmdGetset
	h["getdel"] = cmdGetdel
	h["getex"] = cmdGetex
	h["mset"] = cmdMset
	h["msetnx"] = cmdMsetnx
	h["append"] = cmdAppend
	h["strlen"] = cmdStrlen
	h["getrange"] = cmdGetrange
	h["substr"] = cmdGetrange // Redis runs SUBSTR as GETRANGE
	h["lcs"] = cmdLcs
	h["setrange"] = cmdSetrange
	h["incr"] = cmdIncr
	h["decr"] = cmdDecr
	h["incrby"] = cmdIncrby
	h["decrby"] = cmdDecrby
	h["incrbyfloat"] = cmdIncrbyfloat
}

// lookupRead is Redis's lookupKeyRead: a lookup that counts a keyspace hit
// or miss (whatever the type of the value found).
func lookupRead(c *Ctx, key []byte) *Entry {
	e := c.Lookup(key)
	if e == nil {
		c.KS.Stats.KeyspaceMiss.Add(1)
	} else {
		c.KS.Stats.KeyspaceHits.Add(1)
	}
	return e
}

// changed records a change of key: WATCH and the dirty counter.
func changed(c *Ctx, key []byte) {
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
}

func cmdGet(c *Ctx) { getGeneric(c, c.Args[1]) }

// getGeneric is Redis's getGenericCommand, the read shared by GET, GETSET,
// GETDEL and SET ... GET: it replies with the value (null when missing)
// and returns the entry, or replies WRONGTYPE and returns ok=false.
func getGeneric(c *Ctx, key []byte) (e *Entry, ok bool) {
	e = lookupRead(c, key)
	switch {
	case e == nil:
		c.W.Null()
	case e.Kind != KindString:
		c.W.Error(resp.ErrWrongType)
		return nil, false
	default:
		writeStrValue(c.W, e)
	}
	return e, true
}

// cmdMget replies null for missing keys and for values of other types.
func cmdMget(c *Ctx) {
	keys := c.Args[1:]
	c.W.Array(len(keys))
	for _, k := range keys {
		e := lookupRead(c, k)
		if e == nil || e.Kind != KindString {
			c.W.Null()
			continue
		}
		writeStrValue(c.W, e)
	}
}

// storeString makes key hold val (copied), replacing old, the live entry
// of key or nil. keepTTL keeps old's expiry; otherwise the key ends up
// without one. It returns the stored entry.
//
// An old string entry is updated in place and keeps its buffer when val
// fits without wasting much of it, so overwriting a key allocates nothing.
// The buffer belongs to this entry alone (every stored value is a fresh
// copy), and replies copy values out, so reusing it is safe.
func storeString(c *Ctx, key []byte, old *Entry, val []byte, enc Encoding, keepTTL bool) *Entry {
	if old != nil && old.Kind == KindString {
		old.SetStrBytes(reuseBuf(old.Str, val))
		old.Enc = enc
		if !keepTTL && old.Expire != 0 {
			c.KS.SetExpire(c.Shard, key, old, 0)
		}
		return old
	}
	e := &Entry{Kind: KindString, Enc: enc, Str: cloneBytes(val)}
	if keepTTL && old != nil {
		e.Expire = old.Expire
	}
	c.KS.Set(c.Shard, key, e)
	return e
}

// reuseBuf copies val into buf when buf is big enough and not more than
// about twice too big (so a key shrunk from megabytes does not pin them),
// else into a new buffer.
func reuseBuf(buf, val []byte) []byte {
	if c := cap(buf); c >= len(val) && c <= 2*len(val)+64 {
		return append(buf[:0], val...)
	}
	return cloneBytes(val)
}

// cloneBytes returns a copy of b that shares nothing with it (never nil,
// so an empty string value is still a value).
func cloneBytes(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}
