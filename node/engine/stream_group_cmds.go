package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// The consumer-group commands, as Redis 7.0's t_stream.c answers them:
// XGROUP CREATE / SETID / DESTROY / CREATECONSUMER / DELCONSUMER / HELP,
// XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS and XINFO CONSUMERS.
// XREADGROUP, which delivers entries into the PELs, lives with XREAD.
//
// Redis's order of checks is kept, and it differs per command: XGROUP
// reads CREATE's and SETID's options before the key, XPENDING and
// XAUTOCLAIM parse all their arguments first, XCLAIM and XACK look the
// key up before anything else. XACK, XPENDING, XCLAIM, XAUTOCLAIM and
// XINFO look the key up as reads (a keyspace hit or miss); XGROUP as a
// write. Only XGROUP CREATE ... MKSTREAM touches WATCHers (when it makes
// the stream): Redis signals no key change for group state. Dirty counts
// as server.dirty: one per group created, set or destroyed, consumer
// created or deleted, entry acknowledged, claimed or dropped from a PEL.
//
// A consumer's seen-time moves when XCLAIM or XAUTOCLAIM claim something
// for it (and when XREADGROUP reads), never on XPENDING or XGROUP.

func registerStreamGroups(h map[string]Handler) {
	h["xgroup|create"] = func(c *Ctx) { xgroupGeneric(c, xgCreate) }
	h["xgroup|setid"] = func(c *Ctx) { xgroupGeneric(c, xgSetID) }
	h["xgroup|destroy"] = func(c *Ctx) { xgroupGeneric(c, xgDestroy) }
	h["xgroup|createconsumer"] = func(c *Ctx) { xgroupGeneric(c, xgCreateConsumer) }
	h["xgroup|delconsumer"] = func(c *Ctx) { xgroupGeneric(c, xgDelConsumer) }
	h["xgroup|help"] = func(c *Ctx) { writeHelp(c.W, xgroupHelp) }
	h["xack"] = cmdXack
	h["xpending"] = cmdXpending
	h["xclaim"] = cmdXclaim
	h["xautoclaim"] = cmdXautoclaim
	h["xinfo|groups"] = cmdXinfoGroups
	h["xinfo|consumers"] = cmdXinfoConsumers
}

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

// xgroupOp is an XGROUP subcommand.
type xgroupOp int

const (
	xgCreate xgroupOp = iota
	xgSetID
	xgDestroy
	xgCreateConsumer
	xgDelConsumer
)

// subcommandSyntax is Redis's addReplySubcommandSyntaxError.
func subcommandSyntax(c *Ctx) {
	c.W.Error(fmt.Sprintf(resp.ErrSubcommandSyntax, resp.CString(c.Args[1], 128),
		strings.ToUpper(string(cString(c.Args[0])))))
}

// argText is an argument as Redis's "%s" prints it.
func argText(b []byte) []byte { return resp.CString(b, len(b)) }

// xgroupGeneric is Redis's xgroupCommand for the subcommands that take a
// key and a group: CREATE's and SETID's options first, then the key (it
// must exist, unless CREATE has MKSTREAM), then the group (SETID,
// CREATECONSUMER and DELCONSUMER need it), then the subcommand's own
// argument count and arguments.
func xgroupGeneric(c *Ctx, op xgroupOp) {
	args := c.Args
	mkstream := false
	entriesRead := int64(invalidEntriesRead)
	if op == xgCreate || op == xgSetID {
		for i := 5; i < len(args); {
			opt := cString(args[i])
			switch {
			case op == xgCreate && equalFoldASCII(opt, "mkstream"):
				mkstream = true
				i++
				continue
			case equalFoldASCII(opt, "entriesread") && i+1 < len(args):
				v, ok := ksParseInt(args[i+1])
				if !ok {
					c.W.Error(resp.ErrNotInteger)
					return
				}
				if v < 0 && v != invalidEntriesRead {
					c.W.Error(resp.ErrXgroupEntriesRead)
					return
				}
				entriesRead = v
				i += 2
				continue
			}
			subcommandSyntax(c)
			return
		}
	}
	key, name := args[2], args[3]
	e, ok := writeStream(c, key)
	if !ok {
		return
	}
	var s *Stream
	if e != nil {
		s = streamOf(e)
	}
	if s == nil && !mkstream {
		c.W.Error(resp.ErrXgroupKeyMissing)
		return
	}
	var g *StreamGroup
	if s != nil {
		g = s.Group(name)
	}
	if g == nil && (op == xgSetID || op == xgCreateConsumer || op == xgDelConsumer) {
		c.W.Error(fmt.Sprintf(resp.ErrXgroupNoGroup, argText(name), argText(key)))
		return
	}
	switch {
	case op == xgCreate && len(args) <= 8:
		var id StreamID
		if isToken(args[4], '$') {
			if s != nil {
				id = s.LastID()
			}
		} else if id, ok = parseStrictID(args[4], 0); !ok {
			c.W.Error(resp.ErrStreamInvalidID)
			return
		}
		if s == nil {
			s = &Stream{}
			c.KS.Set(c.Shard, key, newStreamEntry(s))
			c.Shard.TouchBytes(key)
		}
		if g != nil {
			c.W.Error(resp.ErrXgroupBusy)
			return
		}
		s.NewGroup(string(name), id, entriesRead)
		c.KS.Dirty(1)
		c.W.OK()
	case op == xgSetID && (len(args) == 5 || len(args) == 7):
		var id StreamID
		if isToken(args[4], '$') {
			id = s.LastID()
		} else if id, ok = parseID(args[4], 0); !ok {
			c.W.Error(resp.ErrStreamInvalidID)
			return
		}
		g.LastID = id
		g.EntriesRead = entriesRead
		c.KS.Dirty(1)
		c.W.OK()
	case op == xgDestroy && len(args) == 4:
		if g == nil {
			c.W.Int(0)
			return
		}
		s.DeleteGroup(name)
		c.KS.Dirty(1)
		c.W.Int(1)
		// Clients blocked in XREADGROUP on this group now fail (NOGROUP).
		c.KS.streamReady(c.Shard, key)
	case op == xgCreateConsumer && len(args) == 5:
		if g.Consumer(args[4]) != nil {
			c.W.Int(0)
			return
		}
		g.CreateConsumer(args[4], c.Now)
		c.KS.Dirty(1)
		c.W.Int(1)
	case op == xgDelConsumer && len(args) == 5:
		cons := g.Consumer(args[4])
		if cons == nil {
			c.W.Int(0)
			return
		}
		n := g.DeleteConsumer(cons)
		c.KS.Dirty(1)
		c.W.Int(int64(n))
	default:
		subcommandSyntax(c)
	}
}

// cmdXack is XACK key group id [id ...]: a missing key or group answers 0
// before the ids are read; then every id must parse before any is
// acknowledged.
func cmdXack(c *Ctx) {
	s, ok := readStream(c, c.Args[1])
	if !ok {
		return
	}
	var g *StreamGroup
	if s != nil {
		g = s.Group(c.Args[2])
	}
	if g == nil {
		c.W.Int(0)
		return
	}
	var idBuf [8]StreamID
	ids, ok := parseIDList(c, idBuf[:0], c.Args[3:])
	if !ok {
		return
	}
	var n int64
	for _, id := range ids {
		if e := g.Pending(id); e != nil {
			g.Ack(e)
			n++
		}
	}
	c.KS.Dirty(n)
	c.W.Int(n)
}

// noKeyOrGroup replies XPENDING's, XCLAIM's and XAUTOCLAIM's NOGROUP.
func noKeyOrGroup(c *Ctx) {
	c.W.Error(fmt.Sprintf(resp.ErrXNoKeyOrGroup, argText(c.Args[1]), argText(c.Args[2])))
}

// streamGroupOf returns s's group name, or nil (s may be nil).
func streamGroupOf(s *Stream, name []byte) *StreamGroup {
	if s == nil {
		return nil
	}
	return s.Group(name)
}

// cmdXpending is XPENDING key group [[IDLE min-idle] start end count
// [consumer]]: the summary (count, smallest and greatest id, consumers
// with pending entries) or the pending entries themselves. The range
// arguments are parsed before the key is looked up.
func cmdXpending(c *Ctx) {
	args := c.Args
	summary := len(args) == 3
	if !summary && (len(args) < 6 || len(args) > 9) {
		c.W.Error(resp.ErrSyntax)
		return
	}
	var (
		start, end StreamID
		count      int64
		minIdle    int64
		consumer   []byte
	)
	if !summary {
		at := 3
		if equalFoldASCII(cString(args[3]), "idle") {
			v, ok := ksParseInt(args[4])
			if !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			minIdle = v
			if len(args) < 8 {
				c.W.Error(resp.ErrSyntax)
				return
			}
			at += 2
		}
		v, ok := ksParseInt(args[at+2])
		if !ok {
			c.W.Error(resp.ErrNotInteger)
			return
		}
		count = max(v, 0)
		var msg string
		if start, msg = rangeStart(args[at]); msg != "" {
			c.W.Error(msg)
			return
		}
		if end, msg = rangeEnd(args[at+1]); msg != "" {
			c.W.Error(msg)
			return
		}
		if at+3 < len(args) {
			consumer = args[at+3]
		}
	}
	s, ok := readStream(c, args[1])
	if !ok {
		return
	}
	g := streamGroupOf(s, args[2])
	if g == nil {
		noKeyOrGroup(c)
		return
	}
	if summary {
		xpendingSummary(c, g)
		return
	}
	pel := &g.PEL
	if consumer != nil {
		cons := g.Consumer(consumer)
		if cons == nil {
			c.W.Array(0)
			return
		}
		pel = &cons.PEL
	}
	now := c.Now
	if minIdle > 0 {
		// Nothing delivered long enough ago: no need to walk the PEL.
		if oldest, ok := g.OldestDelivery(); !ok || now-oldest < minIdle {
			c.W.Array(0)
			return
		}
	}
	done := deferArray(c.W)
	n := 0
	var buf [44]byte
	if count > 0 {
		pel.Ascend(start, func(e *PendingEntry) bool {
			if end.Less(e.ID) {
				return false
			}
			if minIdle != 0 && now-e.DeliveryTime < minIdle {
				return true
			}
			c.W.Array(4)
			c.W.Bulk(e.ID.Append(buf[:0]))
			c.W.BulkString(e.Consumer.Name)
			c.W.Int(max(now-e.DeliveryTime, 0))
			c.W.Int(e.DeliveryCount)
			n++
			count--
			return count > 0
		})
	}
	done(n)
}

// xpendingSummary is XPENDING key group: [count, first id, last id,
// [[consumer, its count], ...]] with nulls for an empty PEL.
func xpendingSummary(c *Ctx, g *StreamGroup) {
	c.W.Array(4)
	c.W.Int(int64(g.PEL.Len()))
	if g.PEL.Len() == 0 {
		c.W.Null()
		c.W.Null()
		c.W.NullArray()
		return
	}
	var buf [44]byte
	var first, last StreamID
	g.PEL.Ascend(StreamID{}, func(e *PendingEntry) bool { first = e.ID; return false })
	g.PEL.Descend(MaxStreamID, func(e *PendingEntry) bool { last = e.ID; return false })
	c.W.Bulk(first.Append(buf[:0]))
	c.W.Bulk(last.Append(buf[:0]))
	consumers := g.Consumers()
	with := 0
	for _, cons := range consumers {
		if cons.PEL.Len() > 0 {
			with++
		}
	}
	c.W.Array(with)
	for _, cons := range consumers {
		if cons.PEL.Len() == 0 {
			continue
		}
		c.W.Array(2)
		c.W.BulkString(cons.Name)
		c.W.BulkInt(int64(cons.PEL.Len()))
	}
}

// claimConsumer returns the named consumer of g, refreshing its seen
// time, or creates it (counted as a change): XCLAIM and XAUTOCLAIM do
// this on their first claim only.
func claimConsumer(c *Ctx, g *StreamGroup, name []byte) *StreamConsumer {
	if cons := g.Consumer(name); cons != nil {
		cons.SeenTime = c.Now
		return cons
	}
	c.KS.Dirty(1)
	return g.CreateConsumer(name, c.Now)
}

// cmdXclaim is XCLAIM key group consumer min-idle-time id [id ...] [IDLE
// ms] [TIME ms-unix-time] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID
// id]. The ids run up to the first argument that is not a strict id;
// the options follow. Pending entries whose stream entry was deleted
// leave the PEL and are not in the reply (Redis 7.0).
func cmdXclaim(c *Ctx) {
	args := c.Args
	s, ok := readStream(c, args[1])
	if !ok {
		return
	}
	g := streamGroupOf(s, args[2])
	if g == nil {
		noKeyOrGroup(c)
		return
	}
	minIdle, ok := ksParseInt(args[4])
	if !ok {
		c.W.Error(resp.ErrXclaimMinIdle)
		return
	}
	minIdle = max(minIdle, 0)
	var ids []StreamID
	j := 5
	for ; j < len(args); j++ {
		id, ok := parseStrictID(args[j], 0)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := c.Now
	var (
		retryCount   int64 = -1
		deliveryTime int64 = -1
		force        bool
		justID       bool
		lastID       StreamID
	)
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := cString(args[j])
		switch {
		case equalFoldASCII(opt, "force"):
			force = true
		case equalFoldASCII(opt, "justid"):
			justID = true
		case equalFoldASCII(opt, "idle") && more > 0:
			j++
			v, ok := ksParseInt(args[j])
			if !ok {
				c.W.Error(resp.ErrXclaimIdle)
				return
			}
			deliveryTime = now - v
		case equalFoldASCII(opt, "time") && more > 0:
			j++
			v, ok := ksParseInt(args[j])
			if !ok {
				c.W.Error(resp.ErrXclaimTime)
				return
			}
			deliveryTime = v
		case equalFoldASCII(opt, "retrycount") && more > 0:
			j++
			v, ok := ksParseInt(args[j])
			if !ok {
				c.W.Error(resp.ErrXclaimRetryCount)
				return
			}
			retryCount = v
		case equalFoldASCII(opt, "lastid") && more > 0:
			j++
			id, ok := parseStrictID(args[j], 0)
			if !ok {
				c.W.Error(resp.ErrStreamInvalidID)
				return
			}
			lastID = id
		default:
			c.W.Error(fmt.Sprintf(resp.ErrXclaimOption, opt))
			return
		}
	}
	lastIDMoved := false
	if g.LastID.Less(lastID) {
		g.LastID = lastID
		lastIDMoved = true
	}
	// A delivery time in the future or before 1970 (IDLE or TIME out of
	// range) is taken as now, as Redis does rather than failing.
	if deliveryTime < 0 || deliveryTime > now {
		deliveryTime = now
	}
	var cons *StreamConsumer
	done := deferArray(c.W)
	n := 0
	var buf [44]byte
	var fv [][]byte
	entry := &fv // the claimed entry's fields, unless JUSTID
	if justID {
		entry = nil
	}
	for _, id := range ids {
		e := g.Pending(id)
		if !s.find(id, entry) {
			// The entry is gone from the stream: drop it from the PEL.
			if e != nil {
				g.Ack(e)
				c.KS.Dirty(1)
				lastIDMoved = false
			}
			continue
		}
		if e == nil {
			if !force {
				continue
			}
		} else if minIdle != 0 && now-e.DeliveryTime < minIdle {
			continue
		}
		if cons == nil {
			cons = claimConsumer(c, g, args[3])
		}
		if e == nil {
			// FORCE: a new pending entry, delivered once already (Redis
			// creates the NACK with a count of 1, then counts this claim).
			e = g.AddPending(id, cons, now)
		} else {
			g.Move(e, cons)
		}
		g.SetDelivery(e, deliveryTime)
		if retryCount >= 0 {
			e.DeliveryCount = retryCount
		} else if !justID {
			e.DeliveryCount++
		}
		if justID {
			c.W.Bulk(id.Append(buf[:0]))
		} else {
			writeStreamEntry(c.W, id, fv)
		}
		n++
		c.KS.Dirty(1)
		lastIDMoved = false
	}
	if lastIDMoved {
		c.KS.Dirty(1)
	}
	done(n)
}

// xautoclaimMaxCount is the greatest COUNT of XAUTOCLAIM: Redis bounds
// it so that its attempts (count*10) and its deleted-ids buffer (16
// bytes an id) cannot overflow: LONG_MAX / max(sizeof(streamID), 10).
const xautoclaimMaxCount = math.MaxInt64 / 16

// xautoclaimMaxBuffered is the greatest COUNT for which Redis gets its
// deleted-ids buffer (COUNT ids of 16 bytes, allocated up front with a
// malloc allowed to fail): Debian's redis-server 7.0.15 (jemalloc, a
// 47-bit address space) maps at most 80 TiB at once, 5·2^40 ids, and a
// greater COUNT fails the command before it claims anything.
const xautoclaimMaxBuffered = 5 << 40

// xautoclaimAttempts is how many PEL entries XAUTOCLAIM looks at per
// COUNT.
const xautoclaimAttempts = 10

// cmdXautoclaim is XAUTOCLAIM key group consumer min-idle-time start
// [COUNT count] [JUSTID]: it walks the group's PEL from start, looking at
// most count*10 entries, claims up to count of those idle for at least
// min-idle-time, drops those whose stream entry was deleted (each counts
// against COUNT too), and answers
// [next cursor (0-0 at the end), claimed entries or ids, dropped ids].
func cmdXautoclaim(c *Ctx) {
	args := c.Args
	e := lookupRead(c, args[1])
	minIdle, ok := ksParseInt(args[4])
	if !ok {
		c.W.Error(resp.ErrXautoclaimMinIdle)
		return
	}
	minIdle = max(minIdle, 0)
	start, msg := rangeStart(args[5])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := cString(args[j])
		switch {
		case equalFoldASCII(opt, "count") && more > 0:
			j++
			v, ok := ksParseInt(args[j])
			if !ok || v < 1 || v > xautoclaimMaxCount {
				c.W.Error(resp.ErrXautoclaimCount)
				return
			}
			count = v
		case equalFoldASCII(opt, "justid"):
			justID = true
		default:
			c.W.Error(resp.ErrSyntax)
			return
		}
	}
	var s *Stream
	if e != nil {
		if e.Kind != KindStream {
			c.W.Error(resp.ErrWrongType)
			return
		}
		s = streamOf(e)
	}
	g := streamGroupOf(s, args[2])
	if g == nil {
		noKeyOrGroup(c)
		return
	}
	if count > xautoclaimMaxBuffered {
		c.W.Error(resp.ErrXautoclaimMemory)
		return
	}
	now := c.Now
	// When nothing in the PEL was delivered min-idle-time ago, no entry
	// can be claimed; the walk still drops deleted entries and moves the
	// cursor exactly as Redis's.
	noneIdle := false
	if minIdle > 0 {
		oldest, ok := g.OldestDelivery()
		noneIdle = !ok || now-oldest < minIdle
	}
	var (
		cons    *StreamConsumer
		deleted []StreamID
		buf     [44]byte
		n       int
	)
	// The claimed entries go to a side buffer: the cursor, known at the
	// end of the walk, comes first in the reply.
	claimed := &resp.Writer{Proto: c.W.Proto}
	// One lookup per pending entry finds it live and, unless JUSTID,
	// gives its fields for the reply.
	var fv [][]byte
	entry := &fv
	if justID {
		entry = nil
	}
	attempts := count * xautoclaimAttempts
	cur, more := start, true
	// Redis's loop: while (attempts-- && count && raxNext(&ri)).
	for attempts > 0 && count > 0 && more {
		attempts--
		p := pelFrom(&g.PEL, cur)
		if p == nil {
			more = false
			break
		}
		id := p.ID
		cur, more = id.Incr()
		if !s.find(id, entry) {
			// Gone from the stream: dropped from the PEL, and (as in
			// 7.0.15, which bounds its list of them by COUNT) counted.
			g.Ack(p)
			c.KS.Dirty(1)
			deleted = append(deleted, id)
			count--
			continue
		}
		if noneIdle || (minIdle != 0 && now-p.DeliveryTime < minIdle) {
			continue
		}
		if cons == nil {
			cons = claimConsumer(c, g, args[3])
		}
		g.Move(p, cons)
		g.SetDelivery(p, now)
		if justID {
			claimed.Bulk(id.Append(buf[:0]))
		} else {
			p.DeliveryCount++
			writeStreamEntry(claimed, id, fv)
		}
		n++
		count--
		c.KS.Dirty(1)
	}
	// The cursor is the next pending entry after the last one looked at.
	var next StreamID
	if more {
		if p := pelFrom(&g.PEL, cur); p != nil {
			next = p.ID
		}
	}
	c.W.Array(3)
	c.W.Bulk(next.Append(buf[:0]))
	c.W.Array(n)
	c.W.Raw(claimed.B)
	c.W.Array(len(deleted))
	for _, id := range deleted {
		c.W.Bulk(id.Append(buf[:0]))
	}
}

// pelFrom returns the first entry of l with an id at or after from.
func pelFrom(l *pelList, from StreamID) *PendingEntry {
	var found *PendingEntry
	l.Ascend(from, func(e *PendingEntry) bool {
		found = e
		return false
	})
	return found
}

// infoStream looks up XINFO's key: a hit or a miss, "no such key" when
// missing, WRONGTYPE for another kind.
func infoStream(c *Ctx) *Stream {
	e := lookupRead(c, c.Args[2])
	if e == nil {
		c.W.Error(resp.ErrNoSuchKey)
		return nil
	}
	if e.Kind != KindStream {
		c.W.Error(resp.ErrWrongType)
		return nil
	}
	return streamOf(e)
}

// cmdXinfoGroups is XINFO GROUPS key: for each group, in name order, its
// name, consumers, pending count, last delivered id, entries-read (null
// when unknown) and lag (null when unknown).
func cmdXinfoGroups(c *Ctx) {
	s := infoStream(c)
	if s == nil {
		return
	}
	var buf [44]byte
	c.W.Array(len(s.Groups()))
	for _, g := range s.Groups() {
		c.W.Map(6)
		c.W.BulkString("name")
		c.W.BulkString(g.Name)
		c.W.BulkString("consumers")
		c.W.Int(int64(g.NumConsumers()))
		c.W.BulkString("pending")
		c.W.Int(int64(g.PEL.Len()))
		c.W.BulkString("last-delivered-id")
		c.W.Bulk(g.LastID.Append(buf[:0]))
		c.W.BulkString("entries-read")
		if g.EntriesRead != invalidEntriesRead {
			c.W.Int(g.EntriesRead)
		} else {
			c.W.Null()
		}
		c.W.BulkString("lag")
		if lag, ok := s.GroupLag(g); ok {
			c.W.Int(lag)
		} else {
			c.W.Null()
		}
	}
}

// cmdXinfoConsumers is XINFO CONSUMERS key group: for each consumer, in
// name order, its name, pending count and idle time (since it was last
// seen). Redis 7.0 has no "inactive" field.
func cmdXinfoConsumers(c *Ctx) {
	s := infoStream(c)
	if s == nil {
		return
	}
	g := s.Group(c.Args[3])
	if g == nil {
		c.W.Error(fmt.Sprintf(resp.ErrXgroupNoGroup, argText(c.Args[3]), argText(c.Args[2])))
		return
	}
	cons := g.Consumers()
	c.W.Array(len(cons))
	for _, cn := range cons {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(cn.Name)
		c.W.BulkString("pending")
		c.W.Int(int64(cn.PEL.Len()))
		c.W.BulkString("idle")
		c.W.Int(max(c.Now-cn.SeenTime, 0))
	}
}
