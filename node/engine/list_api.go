package engine

import (
	"bytes"
	"slices"

	"github.com/shardgate/shardgate/internal/resp"
)

// Entry points for the node's blocking commands (BLPOP BRPOP BLMPOP BLMOVE
// BRPOPLPUSH), which serve a waiter from code that is not a command
// handler. The caller holds the key's shard (or the keyspace exclusively),
// as for a command; each call is one atomic step with the effects the
// matching non-blocking command has: the key is deleted when its list
// empties, WATCHers are touched, Dirty counts the elements, OnListPush
// fires for a destination. A wrong type is reported as the error text to
// reply (resp.ErrWrongType), checked in Redis's order.

// ListLen returns the length of key's list: 0 when the key is missing,
// wrongType when it holds another kind.
func (ks *Keyspace) ListLen(s *Shard, key []byte, now int64) (n int, wrongType bool) {
	e := ks.Lookup(s, key, now)
	switch {
	case e == nil:
		return 0, false
	case e.Kind != KindList:
		return 0, true
	}
	return listOf(e).Len(), false
}

// ListPop pops up to count (>= 1) elements from the head (front) or the
// tail of key's list, in the order popped, as copies. No elements and no
// error means the key is missing. BLPOP/BRPOP take count 1 and reply
// [key, elems[0]]; BLMPOP replies [key, elems] as LMPOP does.
func (ks *Keyspace) ListPop(s *Shard, key []byte, front bool, count int, now int64) (elems [][]byte, errText string) {
	e := ks.Lookup(s, key, now)
	if e == nil {
		return nil, ""
	}
	if e.Kind != KindList {
		return nil, resp.ErrWrongType
	}
	l := listOf(e)
	n := min(count, l.Len())
	if n <= 0 {
		return nil, ""
	}
	elems = make([][]byte, 0, n)
	for range n {
		var v []byte
		if front {
			v = l.PopFront()
		} else {
			v = l.PopBack()
		}
		elems = append(elems, bytes.Clone(v))
	}
	ks.listRemoved(s, key, e, n)
	return elems, ""
}

// ListMove pops an element from src (from its head if srcFront) and
// pushes it onto dst (at its head if dstFront), as LMOVE; src == dst
// rotates the list. It returns the element (a copy), or nil when src is
// missing; a wrong type of src, then of dst, is an error and changes
// nothing.
func (ks *Keyspace) ListMove(s *Shard, src, dst []byte, srcFront, dstFront bool, now int64) (elem []byte, errText string) {
	se := ks.Lookup(s, src, now)
	if se == nil {
		return nil, ""
	}
	if se.Kind != KindList {
		return nil, resp.ErrWrongType
	}
	sl := listOf(se)
	if sl.Len() == 0 {
		return nil, ""
	}
	de := ks.Lookup(s, dst, now)
	if de != nil && de.Kind != KindList {
		return nil, resp.ErrWrongType
	}
	if srcFront {
		elem = slices.Clone(sl.PopFront())
	} else {
		elem = slices.Clone(sl.PopBack())
	}
	if elem == nil {
		elem = []byte{}
	}
	var dl *List
	if de == nil {
		dl = &List{}
	} else {
		dl = listOf(de)
	}
	if dstFront {
		dl.PushFront(elem)
	} else {
		dl.PushBack(elem)
	}
	if de == nil {
		ks.Set(s, dst, newListEntry(dl))
	} else {
		ks.listPushed(s, dst)
	}
	s.TouchBytes(dst)
	if sl.Len() == 0 {
		ks.remove(s, string(src), se)
	}
	s.TouchBytes(src)
	ks.Dirty(1)
	return elem, ""
}
