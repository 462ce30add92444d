package engine

import (
	"unsafe"

	"github.com/shardgate/shardgate/internal/resp"
)

// OBJECT and MEMORY USAGE: introspection of one key. What Redis derives from
// its robj header is derived here from the Entry:
//
//   - ENCODING is Entry.Enc, kept by the value's commands.
//   - REFCOUNT is 1, except for integers 0..9999 stored with the int
//     encoding, which Redis shares (OBJ_SHARED_INTEGERS) and reports as
//     2147483647 — unless COPY made them a private object
//     (EncIntUnshared).
//   - IDLETIME is seconds since Entry.Access, which Lookup stamps on every
//     access and Set on creation, with one-second grain like Redis's LRU
//     clock. Commands Redis runs with LOOKUP_NOTOUCH use Peek and leave it.
//     A shared integer has one idle time for every key holding it, as in
//     Redis, where the keys point at one object: Lookup stamps
//     Keyspace.sharedAccess, which starts at the keyspace's birth, so a
//     fresh SET k 5 reports how long 5 went unused.
//   - FREQ needs an LFU maxmemory-policy, which shardgate does not have, so
//     it always gives Redis's "not selected" error (after the key check).

func registerObject(h map[string]Handler) {
	h["object|encoding"] = cmdObjectEncoding
	h["object|refcount"] = cmdObjectRefcount
	h["object|idletime"] = cmdObjectIdletime
	h["object|freq"] = cmdObjectFreq
	h["object|help"] = func(c *Ctx) { writeHelp(c.W, objectHelp) }
	h["memory|usage"] = cmdMemoryUsage
	h["memory|help"] = func(c *Ctx) { writeHelp(c.W, memoryHelp) }
}

// objectKey looks up OBJECT's key as Redis's objectCommandLookup does (no
// access recorded), replying null when it is missing.
func objectKey(c *Ctx) *Entry {
	e := readKey(c, c.Args[2], false)
	if e == nil {
		c.W.Null()
	}
	return e
}

func cmdObjectEncoding(c *Ctx) {
	if e := objectKey(c); e != nil {
		c.W.BulkString(e.Enc.String())
	}
}

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS; sharedRefcount is the
// refcount it reports for them (OBJ_SHARED_REFCOUNT).
const (
	sharedIntegers = 10000
	sharedRefcount = 1<<31 - 1
)

// sharedInt returns the shared integer object e's value is in Redis
// (OBJ_SHARED_INTEGERS), or -1 if it is its own object.
func sharedInt(e *Entry) int {
	if e.Kind != KindString || e.Enc != EncInt {
		return -1
	}
	if v, ok := ksParseInt(e.Str); ok && v >= 0 && v < sharedIntegers {
		return int(v)
	}
	return -1
}

// touchShared records an access of e's shared integer, if it is one. The
// store is skipped within the same second, so that keys read on many
// cores do not keep writing one cache line.
// StampAccess sets every key's access time, and the shared integers', to
// sec: a load that replayed commands at their logged times ends as if
// its keys had been made when it ran, as Redis's load makes them. The
// caller holds the whole keyspace.
func (ks *Keyspace) StampAccess(sec uint32) {
	for slot := ks.used.next(0); slot >= 0; slot = ks.used.next(slot + 1) {
		for _, e := range ks.shards[slot].keys.all() {
			e.Access = sec
		}
	}
	for i := range ks.sharedAccess {
		ks.sharedAccess[i].Store(sec)
	}
}

func (ks *Keyspace) touchShared(e *Entry, sec uint32) {
	if v := sharedInt(e); v >= 0 && ks.sharedAccess[v].Load() != sec {
		ks.sharedAccess[v].Store(sec)
	}
}

func cmdObjectRefcount(c *Ctx) {
	if e := objectKey(c); e != nil {
		if sharedInt(e) >= 0 {
			c.W.Int(sharedRefcount)
		} else {
			c.W.Int(1)
		}
	}
}

// cmdObjectIdletime reports seconds since the last access: of the key's
// value, or of its shared integer by any key. An entry stored in a shard
// no command had looked up yet carries no stamp (Set takes the time from
// the shard's last Lookup); it counts as fresh.
func cmdObjectIdletime(c *Ctx) {
	e := objectKey(c)
	if e == nil {
		return
	}
	access := e.Access
	if v := sharedInt(e); v >= 0 {
		if access = c.KS.sharedAccess[v].Load(); access == 0 {
			access = c.KS.born
		}
	}
	if access == 0 {
		c.W.Int(0)
		return
	}
	c.W.Int(max(c.Now/1000-int64(access), 0))
}

func cmdObjectFreq(c *Ctx) {
	if objectKey(c) != nil {
		c.W.Error(resp.ErrLFUNotSelected)
	}
}

// MemoryReporter is implemented by values of kinds other than string to
// estimate their own size for MEMORY USAGE; samples is the number of
// nested elements to look at (0: all), as Redis's SAMPLES option.
type MemoryReporter interface {
	MemoryUsage(samples int64) int64
}

// Parts of MEMORY USAGE's estimate, in bytes (64-bit Go runtime).
const (
	// memKeySlot is one slot of a shard's key table (keytable.go): the
	// key's hash (8), its string header (16) and the *Entry (8). Empty
	// slots (a table is 1/8 to 3/4 full) are not counted.
	memKeySlot = 32
	// memEntry is the Entry struct itself.
	memEntry = int64(unsafe.Sizeof(Entry{}))
	// memDefaultSamples is Redis's OBJ_COMPUTE_SIZE_DEF_SAMPLES.
	memDefaultSamples = 5
)

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count]. The number is
// shardgate's own estimate of what the key costs in this process, not
// Redis's: the key table slot, the key's bytes, the Entry, and the value (a
// string's buffer capacity, or what the value kind reports), each
// allocation rounded up to 8 bytes. It is meant for comparing keys and
// spotting big ones, as Redis's is.
func cmdMemoryUsage(c *Ctx) {
	samples := int64(memDefaultSamples)
	args := c.Args
	for j := 3; j < len(args); j++ {
		if !equalFoldASCII(args[j], "samples") || j+1 >= len(args) {
			c.W.Error(resp.ErrSyntax)
			return
		}
		n, ok := ksParseInt(args[j+1])
		if !ok {
			c.W.Error(resp.ErrNotInteger)
			return
		}
		if n < 0 {
			c.W.Error(resp.ErrSyntax)
			return
		}
		samples = n
		j++
	}
	key := args[2]
	// Redis looks with dbFind: a key expired but not yet removed (as
	// during a CLIENT PAUSE) still has a size.
	e := c.KS.Stored(c.Shard, key)
	if e == nil {
		c.W.Null()
		return
	}
	c.W.Int(entryMemory(key, e, samples))
}

// entryMemory is MEMORY USAGE's estimate for key holding e.
func entryMemory(key []byte, e *Entry, samples int64) int64 {
	n := memKeySlot + alloc8(int64(len(key))) + memEntry + alloc8(int64(cap(e.Str)))
	if r, ok := e.Val.(MemoryReporter); ok {
		n += r.MemoryUsage(samples)
	}
	return n
}

func alloc8(n int64) int64 { return (n + 7) &^ 7 }

// writeHelp writes a HELP reply as Redis's addReplyHelp: status lines,
// the command's usage first and the HELP entry last.
func writeHelp(w *resp.Writer, lines []string) {
	w.Array(len(lines))
	for _, l := range lines {
		w.Simple(l)
	}
}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}
