// Package engine is the node's data: the keyspace, its values, expiry and
// the command implementations that read and change them. It has no sockets:
// commands write replies into a resp.Writer, so everything here is testable
// with a buffer.
//
// # Locking
//
// The keyspace is split by hash slot: each of the 16384 slots is a Shard
// with its own mutex and map. Every keyed command touches one slot (the
// cluster rule, enforced by the dispatcher with CROSSSLOT), so it locks
// exactly one shard for its whole run: that is Redis's per-command
// atomicity, while a slow command on one slot leaves the other 16383 free.
//
// Above the shards sits Keyspace.big, a RWMutex. Keyed commands hold it
// shared (then their shard's mutex). Commands that must see or change all
// shards at one instant (FLUSHALL, a transaction with keyless commands)
// hold it exclusively and then touch shards without their mutexes. Commands
// that visit shards one at a time (DBSIZE, SCAN, KEYS) hold it shared and
// lock each shard in turn. Lock order: big, then at most one shard.
package engine

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shardgate/shardgate/slots"
)

// Kind is a value's Redis type.
type Kind uint8

// Value kinds, named as TYPE prints them.
const (
	KindString Kind = iota + 1
	KindList
	KindStream
)

// String returns the name TYPE replies with.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindStream:
		return "stream"
	}
	return "none"
}

// Encoding is what OBJECT ENCODING reports for a value.
type Encoding uint8

// Encodings, as Redis 7.0 names them.
const (
	EncRaw Encoding = iota
	EncInt
	EncEmbstr
	EncQuicklist
	EncListpack
	EncStream
	// EncIntUnshared is an int-encoded value that is its own object even
	// though it is a small integer: COPY duplicates Redis's shared integers
	// (0..9999) into a private object, which OBJECT REFCOUNT tells apart.
	// Any write that sets the value again sets its encoding afresh.
	EncIntUnshared
)

// IsInt reports whether OBJECT ENCODING says "int".
func (e Encoding) IsInt() bool { return e == EncInt || e == EncIntUnshared }

func (e Encoding) String() string {
	switch e {
	case EncInt, EncIntUnshared:
		return "int"
	case EncEmbstr:
		return "embstr"
	case EncQuicklist:
		return "quicklist"
	case EncListpack:
		return "listpack"
	case EncStream:
		return "stream"
	}
	return "raw"
}

// Entry is one key's value. Exactly one of Str or Val is used, by Kind.
type Entry struct {
	Kind Kind
	Enc  Encoding
	// Access is the unix second of the last access (Lookup) or of the
	// creation (Set), for OBJECT IDLETIME; it fits in padding, so it costs
	// no memory, and Redis's own LRU clock has the same one-second grain.
	Access uint32
	Str    []byte // KindString
	Val    any    // other kinds
	Expire int64  // absolute unix milliseconds; 0 means no expiry
	// created orders the keys of a slot by creation for CLUSTER
	// GETKEYSINSLOT (newest first, as Redis's per-slot key list). A
	// replaced value keeps its key's number; a deleted and re-created
	// key gets a new one. It fills the entry's 64-byte size class.
	created uint64
}

// ExpiredAt reports whether the entry has expired at now (unix ms). As
// Redis's keyIsExpired (now > when), a key lives through the millisecond
// of its expire time, where PTTL answers 0, and is gone after it.
func (e *Entry) ExpiredAt(now int64) bool { return e.Expire != 0 && e.Expire < now }

// Watch is one client's WATCH state: any change to a watched key sets
// Dirty, and EXEC then fails.
type Watch struct {
	Dirty atomic.Bool
}

// Shard is the part of the keyspace in one hash slot. It is exactly one
// cache line (64 bytes, checked by a test) and the shards array starts on
// a line, so a command's first touch of its shard (the mutex, then the
// key table) costs one cache miss, not two.
type Shard struct {
	mu      sync.Mutex
	keys    keyTable
	watched map[string][]*Watch // keys some client WATCHes
	// ttl holds the keys with an expiry (the table's own strings), for
	// the active expiry cycle to sample as Redis samples its expires
	// dictionary: walking the key table instead could take tens of
	// seconds to come across a few expiring keys among a million others.
	// nil while there are none.
	ttl map[string]struct{}
	// clock is the unix second of the last Lookup in this shard; Set
	// stamps new entries with it (Set has no clock of its own).
	clock uint32
	Slot  uint16
}

// Keyspace is the node's whole database (db 0).
type Keyspace struct {
	big sync.RWMutex
	_   [64 - unsafe.Sizeof(sync.RWMutex{})]byte // shards start on a cache line
	// shards must stay the second field: see the padding above.
	shards [slots.Count]Shard
	// keySeed seeds the hash of every shard's key table.
	keySeed maphash.Seed
	// expiring holds the shards with at least one expiring key, so the
	// active expiry cycle visits only those (see expire.go).
	expiring shardSet
	// used holds the shards with at least one key, so keyless walks
	// (SCAN, KEYS, DBSIZE, RANDOMKEY) skip empty shards.
	used shardSet
	// sparse holds the shards whose key table deletes left mostly empty,
	// for ShrinkSparse.
	sparse shardSet
	// keysCreated numbers new keys (Entry.created).
	keysCreated atomic.Uint64
	// cycle is the active expiry cycle's state between runs (expire.go).
	cycle expireCycleState
	// dirty counts changes, as Redis's server.dirty (INFO persistence).
	dirty atomic.Int64
	// sharedAccess is the access time (unix seconds, 0: never) of each of
	// Redis's shared integer objects 0..9999: every key holding one of
	// them shares its idle time, and OBJECT IDLETIME reports that (see
	// object.go). born is when they were "created", the keyspace's start.
	sharedAccess [sharedIntegers]atomic.Uint32
	born         uint32
	// keyspace-wide statistics (INFO stats)
	Stats Stats
	// Owns, when set, reports whether this node owns slot. DBSIZE and KEYS
	// count only owned slots: a slot's keys stay on the node it was
	// migrated from until the ownership change drops them, and a proxy
	// summing its nodes would count them twice meanwhile. Set once,
	// before serving; nil: every slot is owned.
	Owns func(slot uint16) bool
	// OnListPush, when set, is called after anything adds elements to a
	// list: the push commands (LPUSH RPUSH LPUSHX RPUSHX LINSERT, LMOVE's
	// and RPOPLPUSH's destination, ListMove) and any list stored under a
	// key by Set (a new list, RENAME, COPY), as Redis's signalKeyAsReady
	// from dbAdd and the push paths. It runs with the command's locks held
	// (the key's shard, or the keyspace exclusively inside EXEC), before
	// the command's reply and, inside MULTI, before the rest of the
	// transaction: the callee must only note the key (key aliases the
	// command's arguments: copy it to keep it) and serve blocked clients
	// after the command, as Redis's handleClientsBlockedOnKeys does. The
	// node's blocking code sets it once, before serving.
	OnListPush func(slot uint16, key []byte)
	// OnStreamReady, when set, is called under the same rules as
	// OnListPush when clients blocked on a stream key may have something
	// to do: XADD added an entry, XGROUP DESTROY removed a group, or the
	// stream under key was deleted or replaced (blocked XREADGROUP
	// clients then fail, as in Redis).
	//
	// FLUSHALL/FLUSHDB call it with a nil key for every slot they empty:
	// every key of the slot may have lost its stream.
	OnStreamReady func(slot uint16, key []byte)
	// OnStreamLater, when set, is called after OnStreamReady when no
	// command's own serving step follows: a stream removed by expiry
	// (the active cycle runs outside commands) or by FLUSHALL/FLUSHDB
	// (keyless). Like the other hooks it runs with the locks held and must
	// not take them; the callee serves the slot's blocked readers later,
	// on its own.
	OnStreamLater func(slot uint16)
	// ExpiryPaused, when set and true, keeps expired keys stored: reads
	// treat them as gone, but nothing removes them, as Redis 7.0 keeps
	// its dataset static while a CLIENT PAUSE holds (expireIfNeeded and
	// activeExpireCycle check the pause first).
	ExpiryPaused func() bool
}

// mayExpire reports whether expired keys may be removed now.
func (ks *Keyspace) mayExpire() bool {
	return ks.ExpiryPaused == nil || !ks.ExpiryPaused()
}

// streamReady reports key to OnStreamReady.
func (ks *Keyspace) streamReady(s *Shard, key []byte) {
	if ks.OnStreamReady != nil {
		ks.OnStreamReady(s.Slot, key)
	}
}

// Stats are counters reported by INFO.
type Stats struct {
	ExpiredKeys  atomic.Int64
	KeyspaceHits atomic.Int64
	KeyspaceMiss atomic.Int64
	// ExpireTimeCap counts active expiry cycles that ended at their time
	// budget with expired keys left (expired_time_cap_reached_count).
	ExpireTimeCap atomic.Int64
}

// New returns an empty keyspace.
func New() *Keyspace {
	ks := &Keyspace{born: uint32(time.Now().Unix())}
	ks.keySeed = maphash.MakeSeed()
	for i := range ks.shards {
		ks.shards[i].Slot = uint16(i)
	}
	return ks
}

// Shard returns the shard of a slot.
func (ks *Keyspace) Shard(slot uint16) *Shard { return &ks.shards[slot] }

// ShardOf returns the shard holding key.
func (ks *Keyspace) ShardOf(key []byte) *Shard { return &ks.shards[slots.Slot(key)] }

// RLock/RUnlock take the keyspace shared, as every keyed command does;
// Lock/Unlock take it exclusively.
func (ks *Keyspace) RLock()   { ks.big.RLock() }
func (ks *Keyspace) RUnlock() { ks.big.RUnlock() }
func (ks *Keyspace) Lock()    { ks.big.Lock() }
func (ks *Keyspace) Unlock()  { ks.big.Unlock() }

// Lock and Unlock guard one shard.
func (s *Shard) Lock()   { s.mu.Lock() }
func (s *Shard) Unlock() { s.mu.Unlock() }

// Len is the number of keys stored, counting expired keys not yet removed
// (as Redis's DBSIZE does).
func (s *Shard) Len() int { return s.keys.Len() }

// Expires is the number of keys with an expiry.
func (s *Shard) Expires() int { return len(s.ttl) }

// Lookup returns the live entry of key, removing it first if it has expired.
// The caller holds the shard.
func (ks *Keyspace) Lookup(s *Shard, key []byte, now int64) *Entry {
	sec := uint32(now / 1000)
	s.clock = sec
	e := ks.Peek(s, key, now)
	if e != nil {
		e.Access = sec
		if e.Enc == EncInt {
			ks.touchShared(e, sec)
		}
	}
	return e
}

// Peek is Lookup without recording an access, for commands that Redis
// runs with LOOKUP_NOTOUCH (TYPE, EXISTS, TTL, OBJECT, ...): an expired
// key is still removed (unless ExpiryPaused).
func (ks *Keyspace) Peek(s *Shard, key []byte, now int64) *Entry {
	e := s.keys.get(ks.keySeed, key)
	if e == nil {
		return nil
	}
	if e.ExpiredAt(now) {
		if ks.mayExpire() {
			ks.expire(s, string(key), e)
		}
		return nil
	}
	return e
}

// Stored returns key's entry, expired or not, without removing or
// touching it: Redis's dbFind, which MEMORY USAGE reads.
func (ks *Keyspace) Stored(s *Shard, key []byte) *Entry {
	return s.keys.get(ks.keySeed, key)
}

// expire removes an expired key as Redis does on access: it counts in
// expired_keys and wakes watchers.
func (ks *Keyspace) expire(s *Shard, key string, e *Entry) {
	ks.remove(s, key, e)
	ks.Stats.ExpiredKeys.Add(1)
	s.Touch(key)
	if e.Kind == KindStream && ks.OnStreamLater != nil {
		ks.OnStreamLater(s.Slot)
	}
}

// Set stores e under key (copying key), replacing any old value. It does
// not touch watchers; callers call Touch once their change is complete.
func (ks *Keyspace) Set(s *Shard, key []byte, e *Entry) {
	if e.Access == 0 {
		e.Access = s.clock
	}
	old, stored := s.keys.set(ks.keySeed, key, e)
	if old != nil {
		e.created = old.created
		if old.Expire != 0 {
			ks.delExpire(s, stored)
		}
	} else {
		e.created = ks.keysCreated.Add(1)
		if s.keys.Len() == 1 {
			ks.used.add(s.Slot)
		}
	}
	if e.Expire != 0 {
		ks.addExpire(s, stored)
	}
	if e.Kind == KindList && ks.OnListPush != nil {
		ks.OnListPush(s.Slot, key)
	}
	if (old != nil && old.Kind == KindStream) || (e.Kind == KindStream && !streamOf(e).LastID().IsZero()) {
		// A replaced stream fails the blocked XREADGROUPs; a stream stored
		// with entries (RENAME, COPY) may serve blocked XREADs (Redis's
		// signalDeletedKeyAsReady and dbAdd's signalKeyAsReady). A new
		// empty one (XADD's, before its entry) can serve nobody yet.
		ks.streamReady(s, key)
	}
}

// SetExpire changes the expiry of e, stored under key (0 removes it).
func (ks *Keyspace) SetExpire(s *Shard, key []byte, e *Entry, at int64) {
	switch {
	case e.Expire == 0 && at != 0:
		ks.addExpire(s, s.keys.storedKey(ks.keySeed, key))
	case e.Expire != 0 && at == 0:
		ks.delExpire(s, string(key))
	}
	e.Expire = at
}

// addExpire notes that key (the table's string) has an expiry.
func (ks *Keyspace) addExpire(s *Shard, key string) {
	if s.ttl == nil {
		s.ttl = map[string]struct{}{}
		ks.expiring.add(s.Slot)
	}
	s.ttl[key] = struct{}{}
}

// delExpire notes that key no longer has an expiry.
func (ks *Keyspace) delExpire(s *Shard, key string) {
	delete(s.ttl, key)
	if len(s.ttl) == 0 {
		ks.expiring.remove(s.Slot)
		s.ttl = nil // a map keeps its buckets after deletes
	}
}

// Delete removes key if it is live, reporting whether it was.
func (ks *Keyspace) Delete(s *Shard, key []byte, now int64) bool {
	e := ks.Lookup(s, key, now)
	if e == nil {
		return false
	}
	ks.remove(s, string(key), e)
	return true
}

// DeleteStored removes key whether or not it has expired, reporting
// whether it was stored: Redis's dbDelete, which a command that replaces
// its destination with nothing calls without looking the key up (an
// expired destination counts as a change then, not as an expiry).
func (ks *Keyspace) DeleteStored(s *Shard, key []byte) bool {
	e := s.keys.get(ks.keySeed, key)
	if e == nil {
		return false
	}
	ks.remove(s, string(key), e)
	return true
}

func (ks *Keyspace) remove(s *Shard, key string, e *Entry) {
	if e.Expire != 0 {
		ks.delExpire(s, key)
	}
	s.keys.delete(ks.keySeed, key)
	if s.keys.Len() == 0 {
		ks.used.remove(s.Slot)
	} else if s.keys.sparse() && !ks.sparse.has(s.Slot) {
		ks.sparse.add(s.Slot)
	}
	if e.Kind == KindStream && ks.OnStreamReady != nil {
		ks.OnStreamReady(s.Slot, []byte(key)) // blocked XREADGROUPs fail
	}
}

// Touch marks key as changed for every client that WATCHes it.
func (s *Shard) Touch(key string) {
	if len(s.watched) == 0 {
		return
	}
	for _, w := range s.watched[key] {
		w.Dirty.Store(true)
	}
}

// TouchBytes is Touch for a []byte key, without allocating.
func (s *Shard) TouchBytes(key []byte) {
	if len(s.watched) == 0 {
		return
	}
	for _, w := range s.watched[string(key)] {
		w.Dirty.Store(true)
	}
}

// TouchAllWatched marks every key of s that a client WATCHes, present or
// not: the slot is leaving this node or coming back to it, and a watched
// key may change where this node cannot see it (Redis's RESTORE of a
// migrated key touches its watchers the same way). The caller holds the
// shard.
func (s *Shard) TouchAllWatched() {
	for _, ws := range s.watched {
		for _, w := range ws {
			w.Dirty.Store(true)
		}
	}
}

// touchAll marks every watched key of s (FLUSHALL), but only keys that
// exist, as Redis's touchAllWatchedKeysInDb does.
func (ks *Keyspace) touchAll(s *Shard) {
	for k, ws := range s.watched {
		if s.keys.getString(ks.keySeed, k) == nil {
			continue
		}
		for _, w := range ws {
			w.Dirty.Store(true)
		}
	}
}

// AddWatch registers w on key. The caller holds the shard.
func (s *Shard) AddWatch(key []byte, w *Watch) {
	if s.watched == nil {
		s.watched = make(map[string][]*Watch)
	}
	k := string(key)
	for _, x := range s.watched[k] {
		if x == w {
			return
		}
	}
	s.watched[k] = append(s.watched[k], w)
}

// RemoveWatch unregisters w from key. The caller holds the shard.
func (s *Shard) RemoveWatch(key string, w *Watch) {
	ws := s.watched[key]
	for i, x := range ws {
		if x == w {
			ws[i] = ws[len(ws)-1]
			ws = ws[:len(ws)-1]
			break
		}
	}
	if len(ws) == 0 {
		delete(s.watched, key)
	} else {
		s.watched[key] = ws
	}
}

// Keys calls fn for every key of the shard, live or not; fn must not
// change the shard.
func (s *Shard) Keys(fn func(key string, e *Entry) bool) {
	for k, e := range s.keys.all() {
		if !fn(k, e) {
			return
		}
	}
}

// Flush empties the shard, returning how many keys it held.
func (ks *Keyspace) Flush(s *Shard) int {
	n := s.keys.Len()
	ks.touchAll(s)
	if s.ttl != nil {
		ks.expiring.remove(s.Slot)
	}
	if n != 0 {
		ks.used.remove(s.Slot)
	}
	s.keys.reset()
	s.ttl = nil
	if n != 0 && ks.OnStreamReady != nil {
		ks.OnStreamReady(s.Slot, nil)
		if ks.OnStreamLater != nil {
			ks.OnStreamLater(s.Slot)
		}
	}
	return n
}

// Dirty counts a change (INFO's rdb_changes_since_last_save).
func (ks *Keyspace) Dirty(n int64) { ks.dirty.Add(n) }

// Changes is the number of changes counted by Dirty.
func (ks *Keyspace) Changes() int64 { return ks.dirty.Load() }

// Expiring reports whether any key has an expiry.
func (ks *Keyspace) Expiring() bool { return ks.expiring.count() > 0 }

// ShrinkSparse rebuilds, at their right size, the key tables that deletes
// left mostly empty, as Redis's cron resizes its dicts: otherwise only the
// next insertion into a shard would, and until then KEYS, SCAN and
// RANDOMKEY walk the old, big table. It stops when stop reports true
// (polled between shards) and returns how many tables it rebuilt.
func (ks *Keyspace) ShrinkSparse(stop func() bool) int {
	rebuilt := 0
	for slot := ks.sparse.next(0); slot >= 0; slot = ks.sparse.next(slot + 1) {
		s := &ks.shards[slot]
		ks.big.RLock()
		s.mu.Lock()
		// Under the shard's lock no command is walking its table.
		if s.keys.sparse() {
			s.keys.rebuild(s.keys.Len())
			rebuilt++
		}
		ks.sparse.remove(uint16(slot))
		s.mu.Unlock()
		ks.big.RUnlock()
		if stop() {
			break
		}
	}
	return rebuilt
}
