package engine

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// XREAD and XREADGROUP, as Redis 7.0.15's xreadCommand runs them.
//
// A read goes in three steps, which the node's blocking code also uses
// one by one (node/blocking_stream.go):
//
//  1. ParseXRead reads the options (COUNT, BLOCK, GROUP, NOACK, STREAMS)
//     without touching the keyspace, with Redis's errors in its order.
//  2. Keyspace.XRead, under the keys' shard lock, looks every key up and
//     resolves its id in argument order (so a WRONGTYPE or NOGROUP on one
//     key comes before a malformed id of the next one): "$" is the
//     stream's last id now, ">" the group's cursor (kept as MaxStreamID,
//     as Redis does: an explicit 18446744073709551615-18446744073709551615
//     means ">" too). Then it serves every stream that has something,
//     as Redis's synchronous path: XREAD the entries after the id,
//     XREADGROUP ">" the entries after the group's last delivered id
//     (which it advances, with entries-read, and records in the PELs
//     unless NOACK), XREADGROUP with an id the consumer's own pending
//     entries after it (deleted ones as [id, nil]). Nothing to serve
//     writes nothing: the caller blocks, or replies null.
//  3. Keyspace.XReadWake serves a blocked request woken on one of its keys
//     (Redis's serveClientsBlockedOnStreamKey): the reply holds that key's
//     stream only. Every blocked XREAD waiting for less than the stream's
//     last id is served by the same XADD; blocked XREADGROUP clients of
//     one group are served in turn, each from the cursor the previous one
//     left, so they get different entries. A blocked XREADGROUP fails when
//     its key is gone or no longer a stream, or its group was destroyed.
//
// Without BLOCK, or where blocking is not allowed (inside MULTI), the
// command handler here replies null when nothing was served.

// XReadBlockedCount is Redis's XREAD_BLOCKED_DEFAULT_COUNT: a blocked
// read without COUNT returns at most this many entries per stream.
const XReadBlockedCount = 1000

// XReadRequest is a parsed XREAD or XREADGROUP.
type XReadRequest struct {
	Group    []byte // XREADGROUP's group; nil for XREAD
	Consumer []byte
	NoAck    bool
	Count    int64 // COUNT; 0: no limit (a negative COUNT is 0 too)
	// Block is true with a BLOCK option; TimeoutMs is its timeout (0:
	// forever).
	Block     bool
	TimeoutMs int64
	Keys      [][]byte
	idArgs    [][]byte
	// IDs are the resolved ids, one per key (XRead sets them): entries
	// must be greater than these. MaxStreamID stands for ">".
	IDs []StreamID
}

// ParseXRead parses the options of XREAD (group false) or XREADGROUP
// (group true), as xreadCommand's option loop: options are compared as C
// strings and may repeat (the last one counts); STREAMS ends them. It
// returns the request or the error text to reply.
func ParseXRead(args [][]byte, group bool) (XReadRequest, string) {
	var r XReadRequest
	streamsArg := 0
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := cString(args[i])
		switch {
		case equalFoldASCII(o, "block") && more > 0:
			i++
			ms, ok := ksParseInt(args[i])
			if !ok {
				return r, resp.ErrTimeoutNotInt
			}
			if ms < 0 {
				return r, resp.ErrTimeoutNegative
			}
			r.Block, r.TimeoutMs = true, ms
		case equalFoldASCII(o, "count") && more > 0:
			i++
			n, ok := ksParseInt(args[i])
			if !ok {
				return r, resp.ErrNotInteger
			}
			r.Count = max(n, 0)
		case equalFoldASCII(o, "streams") && more > 0:
			streamsArg = i + 1
			if (len(args)-streamsArg)%2 != 0 {
				return r, resp.ErrXreadUnbalanced
			}
			i = len(args)
		case equalFoldASCII(o, "group") && more >= 2:
			if !group {
				return r, resp.ErrXreadGroupOption
			}
			r.Group, r.Consumer = args[i+1], args[i+2]
			if r.Group == nil {
				r.Group = []byte{} // a group named "": nil means XREAD
			}
			i += 2
		case equalFoldASCII(o, "noack"):
			if !group {
				return r, resp.ErrXreadNoackOption
			}
			r.NoAck = true
		default:
			return r, resp.ErrSyntax
		}
	}
	if streamsArg == 0 {
		return r, resp.ErrSyntax
	}
	if group && r.Group == nil {
		return r, resp.ErrXreadgroupNoGroupOpt
	}
	n := (len(args) - streamsArg) / 2
	r.Keys = args[streamsArg : streamsArg+n]
	r.idArgs = args[streamsArg+n:]
	return r, ""
}

// Clone copies what a blocked request needs past its command (the
// arguments live in the connection's buffer): keys, group, consumer and
// the resolved ids.
func (r *XReadRequest) Clone() *XReadRequest {
	c := *r
	c.Keys = make([][]byte, len(r.Keys))
	for i, k := range r.Keys {
		c.Keys[i] = bytes.Clone(k)
	}
	if r.Group != nil {
		c.Group = bytes.Clone(r.Group)
		c.Consumer = bytes.Clone(r.Consumer)
	}
	c.idArgs = nil
	c.IDs = slices.Clone(r.IDs)
	return &c
}

// XRead resolves req's ids and serves what it can at once (step 2 of
// the model above), writing either an error or the reply. It returns
// false when it wrote nothing: no stream had anything to serve. The
// caller holds the keys' shard (or the keyspace exclusively).
func (ks *Keyspace) XRead(w *resp.Writer, s *Shard, req *XReadRequest, now int64) bool {
	c := &Ctx{KS: ks, W: w, Shard: s, Now: now}
	group := req.Group != nil
	var groups []*StreamGroup
	if group {
		groups = make([]*StreamGroup, len(req.Keys))
	}
	req.IDs = make([]StreamID, len(req.Keys))
	for i, key := range req.Keys {
		st, ok := readStream(c, key)
		if !ok {
			return true
		}
		if group {
			g := streamGroupOf(st, req.Group)
			if g == nil {
				w.Error(fmt.Sprintf(resp.ErrXreadgroupNoGroup, argText(key), argText(req.Group)))
				return true
			}
			groups[i] = g
		}
		arg := req.idArgs[i]
		switch {
		case isToken(arg, '$'):
			if group {
				w.Error(resp.ErrXreadgroupDollar)
				return true
			}
			if st != nil {
				req.IDs[i] = st.LastID()
			}
		case isToken(arg, '>'):
			if !group {
				w.Error(resp.ErrXreadGreaterID)
				return true
			}
			req.IDs[i] = MaxStreamID
		default:
			id, ok := parseStrictID(arg, 0)
			if !ok {
				w.Error(resp.ErrStreamInvalidID)
				return true
			}
			req.IDs[i] = id
		}
	}

	served := 0
	mark := w.Len()
	for i, key := range req.Keys {
		e := lookupRead(c, key)
		if e == nil {
			continue
		}
		st := streamOf(e)
		gt := req.IDs[i]
		var g *StreamGroup
		history := false
		switch {
		case group:
			g = groups[i]
			if gt != MaxStreamID {
				history = true // the consumer's own pending entries
			} else if hasAfter(st, g.LastID) {
				gt = g.LastID
			} else {
				continue
			}
		default:
			if !hasAfter(st, gt) {
				continue
			}
		}
		served++
		if w.Proto < 3 {
			w.Array(2)
		}
		w.Bulk(key)
		start, _ := gt.Incr() // gt is below the last entry here, or a history id below the greatest
		if g == nil {
			writeStreamRange(w, st, start, MaxStreamID, req.Count, false)
			continue
		}
		cons := claimConsumer(c, g, req.Consumer)
		if history {
			writeConsumerPending(w, st, g, cons, start, req.Count, now)
		} else {
			deliverNew(w, st, g, cons, start, req.Count, req.NoAck, now)
		}
		ks.Dirty(1)
	}
	if served == 0 {
		return false
	}
	hdr := make([]byte, 0, 24)
	if w.Proto >= 3 {
		hdr = append(hdr, '%')
	} else {
		hdr = append(hdr, '*')
	}
	hdr = strconv.AppendInt(hdr, int64(served), 10)
	hdr = append(hdr, '\r', '\n')
	w.B = slices.Insert(w.B, mark, hdr...)
	return true
}

// hasAfter reports whether st has a live entry above id (Redis compares
// streamLastValidID): never when the last generated id is not above it,
// which answers an idle poll without walking the tail block.
func hasAfter(st *Stream, id StreamID) bool {
	if !id.Less(st.LastID()) {
		return false
	}
	last, ok := st.Last()
	return ok && id.Less(last)
}

// XReadWake serves req, blocked since XRead found nothing, now that key
// (one of its keys) was signalled (step 3 of the model). When the
// waiter can be answered it first calls claim, which must win the
// waiter for this server (a compare-and-swap from waiting to served);
// only if claim returns true is anything changed or written, and
// XReadWake returns true. It returns false when the waiter stays blocked
// or claim failed. The caller holds key's shard (or the keyspace
// exclusively).
func (ks *Keyspace) XReadWake(w *resp.Writer, s *Shard, req *XReadRequest, key []byte, now int64, claim func() bool) bool {
	group := req.Group != nil
	e := ks.Lookup(s, key, now)
	if e == nil || e.Kind != KindStream {
		// Deleted, or replaced by another type: XREAD waits on (a new
		// stream may come), XREADGROUP fails as its group is gone.
		if !group || !claim() {
			return false
		}
		w.Error(resp.ErrXreadgroupKeyGone)
		return true
	}
	st := streamOf(e)
	i := slices.IndexFunc(req.Keys, func(k []byte) bool { return bytes.Equal(k, key) })
	if i < 0 {
		return false
	}
	gt := req.IDs[i]
	var g *StreamGroup
	if group {
		g = st.Group(req.Group)
		if g == nil {
			if !claim() {
				return false
			}
			w.Error(resp.ErrXreadgroupGroupGone)
			return true
		}
		gt = g.LastID
	}
	if !gt.Less(st.LastID()) || !claim() {
		return false
	}
	count := req.Count
	if count == 0 {
		count = XReadBlockedCount
	}
	if w.Proto >= 3 {
		w.Map(1)
	} else {
		w.Array(1)
		w.Array(2)
	}
	w.Bulk(key)
	start, _ := gt.Incr() // below the last id
	if g == nil {
		writeStreamRange(w, st, start, MaxStreamID, count, false)
		return true
	}
	c := &Ctx{KS: ks, W: w, Shard: s, Now: now}
	cons := claimConsumer(c, g, req.Consumer)
	deliverNew(w, st, g, cons, start, count, req.NoAck, now)
	return true
}

// deliverNew replies with the entries of st from start on (at most count
// unless 0) delivered to cons of g, as Redis's streamReplyWithRange with
// a group: each advances g's last delivered id and entries-read and,
// unless noack, becomes pending for cons with one delivery now (an entry
// already pending, which XGROUP SETID can cause, moves to cons afresh).
func deliverNew(w *resp.Writer, st *Stream, g *StreamGroup, cons *StreamConsumer, start StreamID, count int64, noack bool, now int64) {
	done := deferArray(w)
	var n int64
	st.Range(start, MaxStreamID, false, func(id StreamID, fv [][]byte) bool {
		st.GroupDelivered(g, id)
		writeStreamEntry(w, id, fv)
		if !noack {
			if pe := g.Pending(id); pe == nil {
				g.AddPending(id, cons, now)
			} else {
				g.Move(pe, cons)
				g.SetDelivery(pe, now)
				pe.DeliveryCount = 1
			}
		}
		n++
		return count == 0 || n < count
	})
	done(int(n))
}

// writeConsumerPending replies with cons's pending entries from start on
// (at most count unless 0), as Redis's streamReplyWithRangeFromConsumerPEL:
// an entry still in the stream is counted as delivered again now; one
// deleted meanwhile is [id, nil] and left as it is.
func writeConsumerPending(w *resp.Writer, st *Stream, g *StreamGroup, cons *StreamConsumer, start StreamID, count int64, now int64) {
	var pending []*PendingEntry
	cons.PEL.Ascend(start, func(pe *PendingEntry) bool {
		pending = append(pending, pe)
		return count == 0 || int64(len(pending)) < count
	})
	w.Array(len(pending))
	for _, pe := range pending {
		found := false
		st.Range(pe.ID, pe.ID, false, func(id StreamID, fv [][]byte) bool {
			writeStreamEntry(w, id, fv)
			found = true
			return false
		})
		if !found {
			var buf [44]byte
			w.Array(2)
			w.Bulk(pe.ID.Append(buf[:0]))
			w.NullArray()
			continue
		}
		g.SetDelivery(pe, now)
		pe.DeliveryCount++
	}
}

func registerStreamReads(h map[string]Handler) {
	h["xread"] = func(c *Ctx) { cmdXread(c, false) }
	h["xreadgroup"] = func(c *Ctx) { cmdXread(c, true) }
}

// cmdXread is XREAD [COUNT count] [BLOCK ms] STREAMS key ... id ... and
// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK]
// STREAMS key ... id ... where nothing can block (the node's own
// handlers block; this one answers as Redis does for a client that may
// not block, inside MULTI): null when no stream has anything.
func cmdXread(c *Ctx, group bool) {
	req, errText := ParseXRead(c.Args, group)
	if errText != "" {
		c.W.Error(errText)
		return
	}
	if !c.KS.XRead(c.W, c.Shard, &req, c.Now) {
		c.W.NullArray()
	}
}
