package engine

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// SCAN's cursor.
//
// Redis walks its hash table in reverse-binary bucket order so that a
// cursor survives rehashing. Shardgate's keyspace is 16384 key tables
// (one a slot) with open addressing, and does the same in each table: a
// key's position in its slot is its hash's low bits reversed (keyTable's
// scanPos), and visiting positions in increasing order visits home slots
// in reverse-binary order, whatever the table's size at each call. The
// cursor is the next position to visit, packed as slot<<39 | position;
// 0 starts a scan and 0 ends it. 14+39 bits keep every cursor below
// 2^53, so clients that hold it in a float64 (JavaScript's numbers,
// node-redis) keep it exact, as they do Redis's table-sized cursors; a
// cursor past the last slot ends the scan.
//
// Why no key present for the whole scan is ever missed: its position
// never changes, the cursor only grows, and the call that moves the cursor
// from below the key's position to above it examines every key between
// the two positions with the key's shard locked (or the keyspace held), at
// a moment the key is present. Keys added or removed meanwhile may or may
// not be returned, as in Redis. No key is returned twice by one scan
// (Redis may return some twice after its table shrank): a call never
// stops between keys of equal position, and keys below the cursor are
// skipped.
//
// Cost: as Redis's, a call visits home slots until it has looked at COUNT
// keys (a hint: it finishes the home slot it is at) or visited 10×COUNT
// home slots; each visit reads the run of the table from the home slot to
// the next empty one.

const (
	scanPosMask = 1<<scanPosBits - 1
	// scanDefaultCount is Redis's default COUNT.
	scanDefaultCount = 10
	// scanVisitsPerCount bounds the home slots a call visits, as Redis's
	// maxiterations (10×COUNT).
	scanVisitsPerCount = 10
)

// scanOpts are SCAN's options after the cursor.
type scanOpts struct {
	count   int
	pattern []byte // nil: no MATCH, or MATCH *
	typ     []byte // nil: no TYPE
}

// parseScanOpts parses COUNT, MATCH and TYPE as Redis does (later options
// win; a missing argument is a syntax error), writing the error reply.
func parseScanOpts(c *Ctx, args [][]byte) (scanOpts, bool) {
	o := scanOpts{count: scanDefaultCount}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.W.Error(resp.ErrSyntax)
			return o, false
		}
		switch {
		case equalFoldASCII(args[i], "count"):
			n, ok := ksParseInt(args[i+1])
			if !ok {
				c.W.Error(resp.ErrNotInteger)
				return o, false
			}
			if n < 1 {
				c.W.Error(resp.ErrSyntax)
				return o, false
			}
			o.count = int(min(n, 1<<31))
		case equalFoldASCII(args[i], "match"):
			o.pattern = args[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
		case equalFoldASCII(args[i], "type"):
			o.typ = args[i+1]
		default:
			c.W.Error(resp.ErrSyntax)
			return o, false
		}
	}
	return o, true
}

// cmdScan is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
func cmdScan(c *Ctx) {
	cursor, ok := resp.ParseCursor(c.Args[1])
	if !ok {
		c.W.Error(resp.ErrInvalidCursor)
		return
	}
	o, ok := parseScanOpts(c, c.Args[2:])
	if !ok {
		return
	}
	keys, next := c.scan(cursor, o)
	c.W.Array(2)
	var tmp [24]byte
	c.W.Bulk(strconv.AppendUint(tmp[:0], next, 10))
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k)
	}
}

// scan runs one SCAN step from cursor and returns the keys to report and
// the next cursor.
func (c *Ctx) scan(cursor uint64, o scanOpts) ([]string, uint64) {
	ks := c.KS
	slot := int(cursor >> scanPosBits)
	pos := cursor & scanPosMask
	var out []string
	looked, visits := 0, o.count*scanVisitsPerCount
	for looked < o.count && visits > 0 {
		if slot >= slots.Count {
			return out, 0
		}
		if next := ks.used.next(slot); next != slot {
			if next < 0 {
				return out, 0
			}
			slot, pos = next, 0
		}
		done := false
		c.withShard(slot, func(s *Shard) {
			pos, done = c.scanShard(s, pos, o, &looked, &visits, &out)
		})
		if done {
			slot, pos = slot+1, 0
		}
	}
	if slot >= slots.Count {
		return out, 0
	}
	return out, uint64(slot)<<scanPosBits | pos
}

// scanShard visits s's keys from position pos on, one home slot at a
// time, while looked is below COUNT and visits remain, appending the live
// keys that pass the filters to out. It returns the position to resume
// at, and whether the shard is finished.
func (c *Ctx) scanShard(s *Shard, pos uint64, o scanOpts, looked, visits *int, out *[]string) (next uint64, done bool) {
	ks := c.KS
	each := func(k string, e *Entry) {
		*looked++
		// Redis 7.0's order: the pattern first (a key it filters out is
		// not even expired), then TYPE's lookup, which counts a keyspace
		// hit or miss as any read does, then the expiry.
		if o.pattern != nil && !MatchString(o.pattern, k) {
			return
		}
		expired := e.ExpiredAt(c.Now)
		if o.typ != nil {
			if expired {
				ks.Stats.KeyspaceMiss.Add(1)
			} else {
				ks.Stats.KeyspaceHits.Add(1)
			}
		}
		if expired {
			if ks.mayExpire() {
				ks.expire(s, k, e)
				// TYPE's lookup deleted the key and named its type
				// "none"; the expiry check after it finds no key then,
				// so Redis returns the name.
				if o.typ != nil && equalFoldASCII(o.typ, "none") {
					*out = append(*out, k)
				}
			}
			return
		}
		if o.typ != nil && !equalFoldASCII(o.typ, e.Kind.String()) {
			return
		}
		*out = append(*out, k)
	}
	for *looked < o.count && *visits > 0 {
		if s.keys.Len() == 0 {
			return 0, true
		}
		*visits--
		pos = s.keys.scanInterval(pos, each)
		if pos > scanPosMask {
			return 0, true
		}
	}
	return pos, false
}

// withShard runs fn on the shard of slot, locking it unless the keyspace
// is held exclusively. Keyless commands use it to visit shards one at a
// time (the dispatcher already holds the keyspace shared).
func (c *Ctx) withShard(slot int, fn func(s *Shard)) {
	s := &c.KS.shards[slot]
	if !c.Exclusive {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	fn(s)
}

// eachUsedShard is EachShard restricted to the slots this node owns
// (Keyspace.Owns).
func (c *Ctx) eachUsedShard(fn func(s *Shard) bool) {
	owns := c.KS.Owns
	for slot := c.KS.used.next(0); slot >= 0; slot = c.KS.used.next(slot + 1) {
		if owns != nil && !owns(uint16(slot)) {
			continue
		}
		ok := true
		c.withShard(slot, func(s *Shard) { ok = fn(s) })
		if !ok {
			return
		}
	}
}
