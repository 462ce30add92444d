package engine

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// The basic stream commands, as Redis 7.0's t_stream.c answers them:
// XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID, and XINFO STREAM / HELP
// (stream_info.go). Consumer groups and XREAD live elsewhere.
//
// Redis's order of checks is kept: XADD and XTRIM parse all their
// options before looking the key up, XRANGE parses ids and COUNT first,
// XDEL looks the key up before parsing its ids, XSETID parses everything
// first. Reads that Redis does with lookupKeyRead (XLEN, XRANGE, XINFO)
// count keyspace hits and misses; writes touch WATCHers and count Dirty as
// server.dirty (one per XADD or XSETID, one per entry XDEL or XTRIM
// removes). Options are compared as C strings, as Redis's strcasecmp
// sees them: an argument ends at its first NUL byte.

func registerStreams(h map[string]Handler) {
	h["xadd"] = cmdXadd
	h["xlen"] = cmdXlen
	h["xrange"] = func(c *Ctx) { xrangeGeneric(c, false) }
	h["xrevrange"] = func(c *Ctx) { xrangeGeneric(c, true) }
	h["xdel"] = cmdXdel
	h["xtrim"] = cmdXtrim
	h["xsetid"] = cmdXsetid
	h["xinfo|stream"] = cmdXinfoStream
	h["xinfo|help"] = func(c *Ctx) { writeHelp(c.W, xinfoHelp) }
}

// streamOf returns the stream of a stream entry.
func streamOf(e *Entry) *Stream {
	s, _ := e.Val.(*Stream)
	if s == nil { // an entry built without a value (tests): an empty stream
		s = &Stream{}
		e.Val = s
	}
	return s
}

// newStreamEntry wraps s in an entry.
func newStreamEntry(s *Stream) *Entry {
	return &Entry{Kind: KindStream, Enc: EncStream, Val: s}
}

// readStream looks key up for a reading command (counting a hit or a
// miss) and replies WRONGTYPE for other kinds: ok false means stop.
func readStream(c *Ctx, key []byte) (s *Stream, ok bool) {
	e := lookupRead(c, key)
	if e == nil {
		return nil, true
	}
	if e.Kind != KindStream {
		c.W.Error(resp.ErrWrongType)
		return nil, false
	}
	return streamOf(e), true
}

// writeStream looks key up for a writing command and replies WRONGTYPE
// for other kinds.
func writeStream(c *Ctx, key []byte) (e *Entry, ok bool) {
	e = c.Lookup(key)
	if e != nil && e.Kind != KindStream {
		c.W.Error(resp.ErrWrongType)
		return nil, false
	}
	return e, true
}

// isToken reports whether b, as a C string, is the single byte t.
func isToken(b []byte, t byte) bool {
	b = cString(b)
	return len(b) == 1 && b[0] == t
}

// Trim strategies, as Redis's TRIM_STRATEGY_*.
const (
	trimNone = iota
	trimMaxLen
	trimMinID
)

// approxTrimLimit is the default LIMIT of a "~" trim: 100 nodes' worth
// (100 * stream-node-max-entries).
const approxTrimLimit = 100 * streamNodeMaxEntries

// addTrimArgs are XADD's and XTRIM's parsed options.
type addTrimArgs struct {
	id         StreamID // XADD's explicit id
	idGiven    bool     // an id other than "*"
	autoSeq    bool     // "ms-*": the sequence is generated
	noMkStream bool
	strategy   int
	trim       TrimStrategy
}

// parseAddTrim is Redis's streamParseAddOrTrimArgsOrReply: the options
// from argument 2 on, in any order, up to XADD's id. It returns the
// index of the id (XADD), or an error text.
func parseAddTrim(args [][]byte, xadd bool) (a addTrimArgs, idpos int, errMsg string) {
	limitGiven := false
	i := 2
loop:
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := cString(args[i])
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			break loop // the common case: an automatic id
		case equalFoldASCII(opt, "maxlen") && more > 0:
			if a.strategy != trimNone {
				return a, 0, resp.ErrStreamMaxlenAndMinid
			}
			a.trim.Approx = false
			if more >= 2 && isToken(args[i+1], '~') {
				a.trim.Approx = true
				i++
			} else if more >= 2 && isToken(args[i+1], '=') {
				i++
			}
			n, ok := ksParseInt(args[i+1])
			if !ok {
				return a, 0, resp.ErrNotInteger
			}
			if n < 0 {
				return a, 0, resp.ErrStreamMaxlenNegative
			}
			i++
			a.strategy = trimMaxLen
			a.trim.MaxLen = true
			a.trim.Len = n
		case equalFoldASCII(opt, "minid") && more > 0:
			if a.strategy != trimNone {
				return a, 0, resp.ErrStreamMaxlenAndMinid
			}
			a.trim.Approx = false
			if more >= 2 && isToken(args[i+1], '~') {
				a.trim.Approx = true
				i++
			} else if more >= 2 && isToken(args[i+1], '=') {
				i++
			}
			id, ok := parseStrictID(args[i+1], 0)
			if !ok {
				return a, 0, resp.ErrStreamInvalidID
			}
			i++
			a.strategy = trimMinID
			a.trim.MinID = id
		case equalFoldASCII(opt, "limit") && more > 0:
			n, ok := ksParseInt(args[i+1])
			if !ok {
				return a, 0, resp.ErrNotInteger
			}
			if n < 0 {
				return a, 0, resp.ErrStreamLimitNegative
			}
			a.trim.Limit = n
			limitGiven = true
			i++
		case xadd && equalFoldASCII(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			// A syntax error or the id.
			p, ok := parseStreamID(args[i], idParse{strict: true, allowAuto: true})
			if !ok {
				return a, 0, resp.ErrStreamInvalidID
			}
			a.id, a.autoSeq, a.idGiven = p.id, p.autoSeq, true
			break loop
		default:
			return a, 0, resp.ErrSyntax
		}
	}
	if a.trim.Limit != 0 && a.strategy == trimNone {
		return a, 0, resp.ErrStreamLimitNoStrategy
	}
	if !xadd && a.strategy == trimNone {
		return a, 0, resp.ErrStreamXtrimNoStrategy
	}
	switch {
	case limitGiven && !a.trim.Approx:
		return a, 0, resp.ErrStreamLimitNoApprox
	case limitGiven:
		a.trim.HasLimit = true
	case a.trim.Approx:
		a.trim.Limit = approxTrimLimit
	default:
		a.trim.Limit = 0
	}
	return a, i, ""
}

// nextStreamID is the id XADD gives a new entry after last: explicit,
// "ms-*" or automatic (now, or after last when the clock is behind). It
// returns Redis's error when no id above last can be made: "ms-*" with
// ms's sequences used up answers "Elements are too large to be stored",
// as 7.0.15 does (its streamAppendItem fails there without setting
// errno to EDOM, and XADD takes any other errno for ERANGE).
func nextStreamID(a *addTrimArgs, last StreamID, now int64) (StreamID, string) {
	var id StreamID
	switch {
	case a.idGiven && !a.autoSeq:
		id = a.id
	case a.idGiven:
		if last.Ms != a.id.Ms {
			id = a.id
			break
		}
		if last.Seq == math.MaxUint64 {
			return id, resp.ErrStreamTooLarge
		}
		id = StreamID{last.Ms, last.Seq + 1}
	default:
		if ms := uint64(now); ms > last.Ms {
			id = StreamID{Ms: ms}
		} else {
			id, _ = last.Incr() // XADD refused the greatest last id before
		}
	}
	if !last.Less(id) {
		return id, resp.ErrStreamIDTooSmall
	}
	return id, ""
}

// cmdXadd is XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT
// count]] *|id field value [field value ...].
func cmdXadd(c *Ctx) {
	a, idpos, msg := parseAddTrim(c.Args, true)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	fieldPos := idpos + 1
	if n := len(c.Args) - fieldPos; n < 2 || n%2 == 1 {
		c.W.Error(fmt.Sprintf(resp.ErrWrongArgs, "xadd"))
		return
	}
	// 0-0 is refused before the key is created.
	if a.idGiven && !a.autoSeq && a.id.IsZero() {
		c.W.Error(resp.ErrStreamIDZero)
		return
	}
	key := c.Args[1]
	e, ok := writeStream(c, key)
	if !ok {
		return
	}
	if e == nil {
		if a.noMkStream {
			c.W.Null()
			return
		}
		// Redis creates the key before adding: a refused entry leaves an
		// empty stream.
		e = newStreamEntry(&Stream{})
		c.KS.Set(c.Shard, key, e)
	}
	s := streamOf(e)
	if s.lastID == MaxStreamID {
		c.W.Error(resp.ErrStreamExhausted)
		return
	}
	id, msg := nextStreamID(&a, s.lastID, c.Now)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	fv := c.Args[fieldPos:]
	if elementsSize(fv) > streamMaxElements {
		c.W.Error(resp.ErrStreamTooLarge)
		return
	}
	s.Append(id, fv)
	var buf [44]byte
	c.W.Bulk(id.Append(buf[:0]))
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	if a.strategy != trimNone {
		s.Trim(a.trim)
	}
	c.KS.streamReady(c.Shard, key)
}

func cmdXlen(c *Ctx) {
	s, ok := readStream(c, c.Args[1])
	switch {
	case !ok:
	case s == nil:
		c.W.Int(0)
	default:
		c.W.Int(s.Len())
	}
}

// xrangeGeneric is XRANGE key start end [COUNT n] and, with rev,
// XREVRANGE key end start [COUNT n]. A "(" bound is exclusive; a bound
// without a sequence means seq 0 for the start and the greatest for the
// end. COUNT 0 or negative answers a null array (after the key check).
func xrangeGeneric(c *Ctx, rev bool) {
	startArg, endArg := c.Args[2], c.Args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, msg := rangeStart(startArg)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	end, msg := rangeEnd(endArg)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	count := int64(-1)
	for j := 4; j < len(c.Args); j++ {
		if !equalFoldASCII(cString(c.Args[j]), "count") || j+1 >= len(c.Args) {
			c.W.Error(resp.ErrSyntax)
			return
		}
		n, ok := ksParseInt(c.Args[j+1])
		if !ok {
			c.W.Error(resp.ErrNotInteger)
			return
		}
		count = max(n, 0)
		j++
	}
	s, ok := readStream(c, c.Args[1])
	switch {
	case !ok:
	case s == nil:
		c.W.Array(0)
	case count == 0:
		c.W.NullArray()
	default:
		writeStreamRange(c.W, s, start, end, max(count, 0), rev)
	}
}

// writeStreamRange replies with the entries of s from start to end (or
// back from end to start with rev), at most count of them unless count
// is 0: an array of [id, [field, value, ...]]. It returns how many.
func writeStreamRange(w *resp.Writer, s *Stream, start, end StreamID, count int64, rev bool) int64 {
	done := deferArray(w)
	var n int64
	s.Range(start, end, rev, func(id StreamID, fv [][]byte) bool {
		writeStreamEntry(w, id, fv)
		n++
		return count == 0 || n < count
	})
	done(int(n))
	return n
}

// writeStreamEntry writes one entry: [id, [field, value, ...]].
func writeStreamEntry(w *resp.Writer, id StreamID, fv [][]byte) {
	var buf [44]byte
	w.Array(2)
	w.Bulk(id.Append(buf[:0]))
	w.Array(len(fv))
	for _, b := range fv {
		w.Bulk(b)
	}
}

// deferArray is Redis's addReplyDeferredLen for an array: the elements
// are written first, and the returned function puts the header, with
// their number, in front of them.
func deferArray(w *resp.Writer) func(n int) {
	mark := w.Len()
	return func(n int) {
		hdr := strconv.AppendInt(append(make([]byte, 0, 24), '*'), int64(n), 10)
		hdr = append(hdr, '\r', '\n')
		w.B = slices.Insert(w.B, mark, hdr...)
	}
}

// cmdXdel is XDEL key id [id ...]: a missing key answers 0 before the
// ids are read; then every id must parse before any is deleted.
func cmdXdel(c *Ctx) {
	key := c.Args[1]
	e, ok := writeStream(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(0)
		return
	}
	var idBuf [8]StreamID
	ids, ok := parseIDList(c, idBuf[:0], c.Args[2:])
	if !ok {
		return
	}
	s := streamOf(e)
	var deleted int64
	for _, id := range ids {
		if s.Delete(id) {
			deleted++
		}
	}
	if deleted > 0 {
		c.Shard.TouchBytes(key)
		c.KS.Dirty(deleted)
	}
	c.W.Int(deleted)
}

// cmdXtrim is XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count].
func cmdXtrim(c *Ctx) {
	a, _, msg := parseAddTrim(c.Args, false)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	key := c.Args[1]
	e, ok := writeStream(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(0)
		return
	}
	deleted := streamOf(e).Trim(a.trim)
	if deleted > 0 {
		c.Shard.TouchBytes(key)
		c.KS.Dirty(deleted)
	}
	c.W.Int(deleted)
}

// cmdXsetid is XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
func cmdXsetid(c *Ctx) {
	id, ok := parseStrictID(c.Args[2], 0)
	if !ok {
		c.W.Error(resp.ErrStreamInvalidID)
		return
	}
	entriesAdded := int64(-1)
	var maxDeleted StreamID
	for i := 3; i < len(c.Args); i += 2 {
		more := len(c.Args) - 1 - i
		opt := cString(c.Args[i])
		switch {
		case equalFoldASCII(opt, "entriesadded") && more > 0:
			n, ok := ksParseInt(c.Args[i+1])
			if !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			if n < 0 {
				c.W.Error(resp.ErrXsetidEntriesNegative)
				return
			}
			entriesAdded = n
		case equalFoldASCII(opt, "maxdeletedid") && more > 0:
			m, ok := parseStrictID(c.Args[i+1], 0)
			if !ok {
				c.W.Error(resp.ErrStreamInvalidID)
				return
			}
			if id.Less(m) {
				c.W.Error(resp.ErrXsetidBelowMaxDeleted)
				return
			}
			maxDeleted = m
		default:
			c.W.Error(resp.ErrSyntax)
			return
		}
	}
	key := c.Args[1]
	e, ok := writeStream(c, key)
	if !ok {
		return
	}
	if e == nil {
		c.W.Error(resp.ErrNoSuchKey)
		return
	}
	s := streamOf(e)
	if s.Len() > 0 {
		if top, _ := s.Last(); id.Less(top) {
			c.W.Error(resp.ErrXsetidBelowTop)
			return
		}
		if entriesAdded != -1 && s.Len() > entriesAdded {
			c.W.Error(resp.ErrXsetidEntriesBelowSize)
			return
		}
	}
	if entriesAdded == -1 {
		entriesAdded = s.EntriesAdded()
	}
	if maxDeleted.IsZero() {
		maxDeleted = s.MaxDeletedID()
	}
	s.SetLastID(id, entriesAdded, maxDeleted)
	c.W.OK()
	// 7.0.15's XSETID counts a change but does not signal the key:
	// WATCHers are not touched.
	c.KS.Dirty(1)
}
