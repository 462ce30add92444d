package engine

import (
	"bytes"
	"fmt"

	"github.com/shardgate/shardgate/internal/resp"
)

// The list family, as Redis 7.0's t_list.c answers it: LPUSH RPUSH LPUSHX
// RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS LMOVE
// RPOPLPUSH LMPOP. The blocking variants live in the node (they wait);
// they pop and move with ListPop and ListMove (list_api.go).
//
// Redis's order of checks is kept: which arguments are parsed before the
// key is looked up differs from command to command (LRANGE and LTRIM
// parse their indexes first, LINDEX and LSET look the key up first), and
// the errors a client sees depend on it. Reads that Redis does with
// lookupKeyRead count keyspace hits and misses; writes touch WATCHers and
// count Dirty as server.dirty (one per element pushed or removed). A list
// that becomes empty is deleted. Values are always quicklist-encoded, as
// Redis 7.0 reports every list.

func registerLists(h map[string]Handler) {
	h["lpush"] = func(c *Ctx) { pushGeneric(c, true, false) }
	h["rpush"] = func(c *Ctx) { pushGeneric(c, false, false) }
	h["lpushx"] = func(c *Ctx) { pushGeneric(c, true, true) }
	h["rpushx"] = func(c *Ctx) { pushGeneric(c, false, true) }
	h["lpop"] = func(c *Ctx) { popGeneric(c, true, "lpop") }
	h["rpop"] = func(c *Ctx) { popGeneric(c, false, "rpop") }
	h["llen"] = cmdLlen
	h["lrange"] = cmdLrange
	h["lindex"] = cmdLindex
	h["lset"] = cmdLset
	h["linsert"] = cmdLinsert
	h["lrem"] = cmdLrem
	h["ltrim"] = cmdLtrim
	h["lpos"] = cmdLpos
	h["lmove"] = cmdLmove
	h["rpoplpush"] = func(c *Ctx) { lmoveGeneric(c, false, true) }
	h["lmpop"] = cmdLmpop
}

// listOf returns the list of a list entry.
func listOf(e *Entry) *List {
	l, _ := e.Val.(*List)
	if l == nil { // an entry built without a value (tests): an empty list
		l = &List{}
		e.Val = l
	}
	return l
}

// newListEntry wraps l in an entry.
func newListEntry(l *List) *Entry {
	return &Entry{Kind: KindList, Enc: EncQuicklist, Val: l}
}

// listPushed reports elements added to an existing list to OnListPush
// (a new list reports itself through Set).
func (ks *Keyspace) listPushed(s *Shard, key []byte) {
	if ks.OnListPush != nil {
		ks.OnListPush(s.Slot, key)
	}
}

// listRemoved ends a removal of n elements from key's list: the key goes
// when the list is empty, WATCHers are touched and the change counted.
func (ks *Keyspace) listRemoved(s *Shard, key []byte, e *Entry, n int) {
	if listOf(e).Len() == 0 {
		ks.remove(s, string(key), e)
	}
	s.TouchBytes(key)
	ks.Dirty(int64(n))
}

// pushGeneric is LPUSH, RPUSH and, with xx, LPUSHX and RPUSHX.
func pushGeneric(c *Ctx, front, xx bool) {
	key := c.Args[1]
	e := c.Lookup(key)
	if e != nil && e.Kind != KindList {
		c.W.Error(resp.ErrWrongType)
		return
	}
	if e == nil && xx {
		c.W.Int(0)
		return
	}
	var l *List
	if e == nil {
		l = &List{}
	} else {
		l = listOf(e)
	}
	for _, v := range c.Args[2:] {
		if front {
			l.PushFront(v)
		} else {
			l.PushBack(v)
		}
	}
	if e == nil {
		c.KS.Set(c.Shard, key, newListEntry(l))
	} else {
		c.KS.listPushed(c.Shard, key)
	}
	c.Shard.TouchBytes(key)
	c.KS.Dirty(int64(len(c.Args) - 2))
	c.W.Int(int64(l.Len()))
}

// popGeneric is LPOP and RPOP key [count].
func popGeneric(c *Ctx, front bool, name string) {
	if len(c.Args) > 3 {
		c.W.Error(fmt.Sprintf(resp.ErrWrongArgs, name))
		return
	}
	hasCount := len(c.Args) == 3
	var count int64
	if hasCount {
		n, ok := ksParseInt(c.Args[2])
		if !ok || n < 0 {
			c.W.Error(resp.ErrPositiveCount)
			return
		}
		count = n
	}
	key := c.Args[1]
	e := c.Lookup(key)
	if e == nil {
		if hasCount {
			c.W.NullArray()
		} else {
			c.W.Null()
		}
		return
	}
	if e.Kind != KindList {
		c.W.Error(resp.ErrWrongType)
		return
	}
	if hasCount && count == 0 {
		c.W.Array(0)
		return
	}
	l := listOf(e)
	if !hasCount {
		if front {
			c.W.Bulk(l.PopFront())
		} else {
			c.W.Bulk(l.PopBack())
		}
		c.KS.listRemoved(c.Shard, key, e, 1)
		return
	}
	n := popRangeReply(c.W, l, front, count)
	c.KS.listRemoved(c.Shard, key, e, n)
}

// popRangeReply replies with the first (or last) count elements of l in
// the order they are popped, and removes them, returning how many.
func popRangeReply(w *resp.Writer, l *List, front bool, count int64) int {
	n := l.Len()
	if count < int64(n) {
		n = int(count)
	}
	w.Array(n)
	if n == 0 {
		return 0
	}
	each := func(v []byte) bool { w.Bulk(v); return true }
	if front {
		l.Range(0, n-1, false, each)
		l.TrimFront(n)
	} else {
		l.Range(l.Len()-n, l.Len()-1, true, each)
		l.TrimBack(n)
	}
	return n
}

// readList looks key up for a reading command (counting a hit or a miss)
// and replies WRONGTYPE for other kinds: ok false means stop.
func readList(c *Ctx, key []byte) (l *List, ok bool) {
	e := lookupRead(c, key)
	if e == nil {
		return nil, true
	}
	if e.Kind != KindList {
		c.W.Error(resp.ErrWrongType)
		return nil, false
	}
	return listOf(e), true
}

// writeList looks key up for a writing command and replies WRONGTYPE
// for other kinds.
func writeList(c *Ctx, key []byte) (e *Entry, ok bool) {
	e = c.Lookup(key)
	if e != nil && e.Kind != KindList {
		c.W.Error(resp.ErrWrongType)
		return nil, false
	}
	return e, true
}

func cmdLlen(c *Ctx) {
	l, ok := readList(c, c.Args[1])
	switch {
	case !ok:
	case l == nil:
		c.W.Int(0)
	default:
		c.W.Int(int64(l.Len()))
	}
}

// parseIndex parses an index argument, replying the integer error.
func parseIndex(c *Ctx, b []byte) (int64, bool) {
	n, ok := ksParseInt(b)
	if !ok {
		c.W.Error(resp.ErrNotInteger)
	}
	return n, ok
}

// rangeReply is Redis's addListRangeReply: start and end may be negative
// (counted from the tail) and out of range.
func rangeReply(w *resp.Writer, l *List, start, end int64, reverse bool) {
	n := int64(l.Len())
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		w.Array(0)
		return
	}
	if end >= n {
		end = n - 1
	}
	w.Array(int(end - start + 1))
	l.Range(int(start), int(end), reverse, func(v []byte) bool { w.Bulk(v); return true })
}

func cmdLrange(c *Ctx) {
	start, ok := parseIndex(c, c.Args[2])
	if !ok {
		return
	}
	end, ok := parseIndex(c, c.Args[3])
	if !ok {
		return
	}
	l, ok := readList(c, c.Args[1])
	switch {
	case !ok:
	case l == nil:
		c.W.Array(0)
	default:
		rangeReply(c.W, l, start, end, false)
	}
}

// normIndex turns a possibly negative index into a position, reporting
// whether it is inside the list.
func normIndex(i int64, n int) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	if i < 0 || i >= int64(n) {
		return 0, false
	}
	return int(i), true
}

// cmdLindex looks the key up before parsing the index, as Redis does.
func cmdLindex(c *Ctx) {
	l, ok := readList(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.W.Null()
		return
	}
	i, ok := parseIndex(c, c.Args[2])
	if !ok {
		return
	}
	if p, in := normIndex(i, l.Len()); in {
		c.W.Bulk(l.Index(p))
	} else {
		c.W.Null()
	}
}

func cmdLset(c *Ctx) {
	key := c.Args[1]
	e, ok := writeList(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.Error(resp.ErrNoSuchKey)
		return
	}
	i, ok := parseIndex(c, c.Args[2])
	if !ok {
		return
	}
	l := listOf(e)
	p, in := normIndex(i, l.Len())
	if !in {
		c.W.Error(resp.ErrIndexOutOfRange)
		return
	}
	l.Set(p, c.Args[3])
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	c.W.OK()
}

// cmdLinsert is LINSERT key BEFORE|AFTER pivot element: the new length,
// -1 when the pivot is missing, 0 when the key is.
func cmdLinsert(c *Ctx) {
	var after bool
	switch {
	case equalFoldASCII(c.Args[2], "after"):
		after = true
	case equalFoldASCII(c.Args[2], "before"):
	default:
		c.W.Error(resp.ErrSyntax)
		return
	}
	key := c.Args[1]
	e, ok := writeList(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(0)
		return
	}
	l := listOf(e)
	if !l.Insert(c.Args[3], c.Args[4], after) {
		c.W.Int(-1)
		return
	}
	c.KS.listPushed(c.Shard, key)
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	c.W.Int(int64(l.Len()))
}

// cmdLrem is LREM key count element; the whole list is compacted in one
// pass however many elements go (List.Remove).
func cmdLrem(c *Ctx) {
	count, ok := parseIndex(c, c.Args[2])
	if !ok {
		return
	}
	key := c.Args[1]
	e, ok := writeList(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(0)
		return
	}
	removed := listOf(e).Remove(c.Args[3], count)
	if removed > 0 {
		c.KS.listRemoved(c.Shard, key, e, int(removed))
	}
	c.W.Int(removed)
}

// cmdLtrim keeps elements start..end; WATCHers are touched even when
// nothing goes, as Redis does.
func cmdLtrim(c *Ctx) {
	start, ok := parseIndex(c, c.Args[2])
	if !ok {
		return
	}
	end, ok := parseIndex(c, c.Args[3])
	if !ok {
		return
	}
	key := c.Args[1]
	e, ok := writeList(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.OK()
		return
	}
	l := listOf(e)
	n := int64(l.Len())
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	var ltrim, rtrim int64
	if start > end || start >= n {
		ltrim, rtrim = n, 0
	} else {
		if end >= n {
			end = n - 1
		}
		ltrim, rtrim = start, n-end-1
	}
	l.TrimFront(int(ltrim))
	l.TrimBack(int(rtrim))
	c.KS.listRemoved(c.Shard, key, e, int(ltrim+rtrim))
	c.W.OK()
}

// cmdLpos is LPOS key element [RANK rank] [COUNT num] [MAXLEN len].
// Redis's arithmetic is kept, overflow included: RANK -2^63 stays
// negative when negated and then matches from the first hit on.
func cmdLpos(c *Ctx) {
	args := c.Args
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch {
		case equalFoldASCII(args[j], "rank") && more:
			j++
			n, ok := parseIndex(c, args[j])
			if !ok {
				return
			}
			if n == 0 {
				c.W.Error(resp.ErrLposRankZero)
				return
			}
			rank = n
		case equalFoldASCII(args[j], "count") && more:
			j++
			n, ok := ksParseInt(args[j])
			if !ok || n < 0 {
				c.W.Error(resp.ErrLposCountNegative)
				return
			}
			count = n
		case equalFoldASCII(args[j], "maxlen") && more:
			j++
			n, ok := ksParseInt(args[j])
			if !ok || n < 0 {
				c.W.Error(resp.ErrLposMaxlenNegative)
				return
			}
			maxlen = n
		default:
			c.W.Error(resp.ErrSyntax)
			return
		}
	}
	reverse := false
	if rank < 0 {
		rank = -rank
		reverse = true
	}
	l, ok := readList(c, args[1])
	if !ok {
		return
	}
	if l == nil {
		if count != -1 {
			c.W.Array(0)
		} else {
			c.W.Null()
		}
		return
	}
	ele := args[2]
	llen := int64(l.Len())
	var index, matches int64
	matchIndex := int64(-1)
	var found []int64
	l.Walk(reverse, func(v []byte) bool {
		if maxlen != 0 && index >= maxlen {
			return false
		}
		if bytes.Equal(v, ele) {
			matches++
			if reverse {
				matchIndex = llen - index - 1
			} else {
				matchIndex = index
			}
			if matches >= rank {
				if count == -1 {
					return false
				}
				found = append(found, matchIndex)
				if count != 0 && matches-rank+1 >= count {
					return false
				}
			}
		}
		index++
		matchIndex = -1
		return true
	})
	if count != -1 {
		c.W.Array(len(found))
		for _, i := range found {
			c.W.Int(i)
		}
		return
	}
	if matchIndex != -1 {
		c.W.Int(matchIndex)
	} else {
		c.W.Null()
	}
}

// parseWhere parses LEFT or RIGHT (front: LEFT), replying a syntax error
// for anything else.
func parseWhere(c *Ctx, b []byte) (front, ok bool) {
	switch {
	case equalFoldASCII(b, "left"):
		return true, true
	case equalFoldASCII(b, "right"):
		return false, true
	}
	c.W.Error(resp.ErrSyntax)
	return false, false
}

func cmdLmove(c *Ctx) {
	from, ok := parseWhere(c, c.Args[3])
	if !ok {
		return
	}
	to, ok := parseWhere(c, c.Args[4])
	if !ok {
		return
	}
	lmoveGeneric(c, from, to)
}

// lmoveGeneric is LMOVE and RPOPLPUSH: null when the source is missing.
func lmoveGeneric(c *Ctx, from, to bool) {
	v, errText := c.KS.ListMove(c.Shard, c.Args[1], c.Args[2], from, to, c.Now)
	switch {
	case errText != "":
		c.W.Error(errText)
	case v == nil:
		c.W.Null()
	default:
		c.W.Bulk(v)
	}
}

// cmdLmpop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: the
// first non-empty list's key and up to count popped elements.
func cmdLmpop(c *Ctx) {
	args := c.Args
	numkeys, ok := ksParseInt(args[1])
	if !ok || numkeys < 1 {
		c.W.Error(resp.ErrNumkeysNotPositive)
		return
	}
	if numkeys >= int64(len(args))-2 {
		c.W.Error(resp.ErrSyntax)
		return
	}
	whereIdx := 2 + int(numkeys)
	front, ok := parseWhere(c, args[whereIdx])
	if !ok {
		return
	}
	count := int64(-1)
	for j := whereIdx + 1; j < len(args); j++ {
		if count == -1 && equalFoldASCII(args[j], "count") && j < len(args)-1 {
			j++
			n, ok := ksParseInt(args[j])
			if !ok || n < 1 {
				c.W.Error(resp.ErrMpopCountNotPositive)
				return
			}
			count = n
			continue
		}
		c.W.Error(resp.ErrSyntax)
		return
	}
	if count == -1 {
		count = 1
	}
	for _, key := range args[2:whereIdx] {
		e := c.Lookup(key)
		if e == nil {
			continue
		}
		if e.Kind != KindList {
			c.W.Error(resp.ErrWrongType)
			return
		}
		l := listOf(e)
		if l.Len() == 0 {
			continue
		}
		c.W.Array(2)
		c.W.Bulk(key)
		n := popRangeReply(c.W, l, front, count)
		c.KS.listRemoved(c.Shard, key, e, n)
		return
	}
	c.W.NullArray()
}
