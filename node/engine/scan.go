package engine

import (
	"container/heap"
	"hash/maphash"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// SCAN's cursor.
//
// Redis walks its hash table in reverse-binary bucket order so that a
// cursor survives rehashing. Shardgate's keyspace is 16384 key tables
// whose order changes when they are rebuilt, so the order is made explicit
// instead: every
// key has a position (slot, h) where h is a keyed 39-bit hash of the key
// (the seed is fixed for the keyspace's life), and keys are visited in
// increasing (slot, h). The cursor is the next position to visit, packed as
// slot<<39 | h; 0 starts a scan and 0 ends it. 14+39 bits keep every cursor
// below 2^53, so clients that hold it in a float64 (JavaScript's numbers,
// node-redis) keep it exact, as they do Redis's table-sized cursors; a
// cursor past the last slot ends the scan.
//
// Why no key present for the whole scan is ever missed: its position
// never changes, the cursor only grows, and the call that moves the cursor
// from below the key's position to above it examines every key between
// the two positions with the key's shard locked (or the keyspace held), at
// a moment the key is present. Keys added or removed meanwhile may or may
// not be returned, as in Redis. No key is returned twice by one scan:
// a call never stops between keys of equal position (it takes the whole
// tie, so hash collisions are harmless), so each position is visited once.
//
// Cost: a call hashes every key of each shard it visits. COUNT is a hint
// (as in Redis): a call stops once it has looked at COUNT keys, but never
// inside a run of equal positions, and in a slot holding very many keys it
// takes at least 1/scanMinShare of them, so that scanning one huge slot
// costs O(keys) in total instead of O(keys²/COUNT).

const (
	scanPosBits  = 39
	scanPosMask  = 1<<scanPosBits - 1
	scanMinShare = 64
	// scanDefaultCount is Redis's default COUNT.
	scanDefaultCount = 10
)

// scanPos is a key's position within its slot.
func (ks *Keyspace) scanPos(key string) uint64 {
	return maphash.String(ks.scanSeed, key) & scanPosMask
}

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
	looked := 0
	for looked < o.count {
		slot = ks.used.next(slot)
		if slot < 0 {
			return out, 0
		}
		done := false
		c.withShard(slot, func(s *Shard) {
			var n int
			n, pos, done = c.scanShard(s, pos, o, o.count-looked, &out)
			looked += n
		})
		if !done {
			return out, uint64(slot)<<scanPosBits | pos
		}
		slot, pos = slot+1, 0
		if slot == slots.Count {
			return out, 0
		}
	}
	if slot >= slots.Count {
		return out, 0
	}
	return out, uint64(slot)<<scanPosBits | pos
}

// scanShard reports the keys of s from position pos on, about want of
// them (see the cost note above), appending the live ones that pass the
// filters to out. It returns how many keys it looked at, the position to
// resume at, and whether the shard is finished.
func (c *Ctx) scanShard(s *Shard, pos uint64, o scanOpts, want int, out *[]string) (looked int, next uint64, done bool) {
	ks := c.KS
	want = max(want, s.keys.Len()/scanMinShare)
	// Find the bound: the want-th smallest position >= pos.
	h := posHeap(make([]uint64, 0, min(want, s.keys.Len())))
	more := false // some key beyond the bound
	for k := range s.keys.all() {
		p := ks.scanPos(k)
		if p < pos {
			continue
		}
		switch {
		case len(h) < want:
			heap.Push(&h, p)
		case p < h[0]:
			h[0] = p
			heap.Fix(&h, 0)
			more = true
		case p > h[0]:
			more = true
		}
	}
	if len(h) == 0 {
		return 0, 0, true
	}
	bound := h[0]
	for k, e := range s.keys.all() {
		p := ks.scanPos(k)
		if p < pos || p > bound {
			continue
		}
		looked++
		// Redis 7.0's order: the pattern first (a key it filters out is
		// not even expired), then TYPE's lookup, which counts a keyspace
		// hit or miss as any read does, then the expiry.
		if o.pattern != nil && !MatchString(o.pattern, k) {
			continue
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
			}
			continue
		}
		if o.typ != nil && !equalFoldASCII(o.typ, e.Kind.String()) {
			continue
		}
		*out = append(*out, k)
	}
	if !more || bound == scanPosMask {
		return looked, 0, true
	}
	return looked, bound + 1, false
}

// posHeap is a max-heap of positions.
type posHeap []uint64

func (h posHeap) Len() int           { return len(h) }
func (h posHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h posHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *posHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *posHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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

// eachUsedShard is EachShard restricted to shards that hold keys.
func (c *Ctx) eachUsedShard(fn func(s *Shard) bool) {
	for slot := c.KS.used.next(0); slot >= 0; slot = c.KS.used.next(slot + 1) {
		ok := true
		c.withShard(slot, func(s *Shard) { ok = fn(s) })
		if !ok {
			return
		}
	}
}
