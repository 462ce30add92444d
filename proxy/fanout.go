package proxy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Keyless commands that concern the whole keyspace go to every node and
// their replies are merged into the one reply a single Redis would give.
// A node's error fails the whole command (its error is passed on as is).

func opsHandlers() map[string]func(c *client, args [][]byte) {
	h := map[string]func(c *client, args [][]byte){
		"dbsize":           cmdSumInts,
		"flushall":         cmdFlush,
		"flushdb":          cmdFlush,
		"config|get":       cmdConfigGet,
		"config|resetstat": cmdResetStat,
		"config|set":       cmdConfigSet,
		"bgrewriteaof":     cmdAllOK,
		"bgsave":           cmdAllOK,
		"save":             cmdAllOK,
		"lastsave":         cmdMinInt,
		"keys":             cmdKeys,
		"randomkey":        cmdRandomKey,
		"scan":             cmdScan,
		"info":             cmdInfo,
		// CLUSTER COUNTKEYSINSLOT/GETKEYSINSLOT name their slot.
		"cluster|countkeysinslot": cmdBySlotArg,
		"cluster|getkeysinslot":   cmdBySlotArg,
		"exec":                    cmdExec,
		"watch":                   cmdWatch,
		"unwatch":                 cmdUnwatch,
		"client|unblock":          cmdClientUnblock,
		"wait":                    cmdWait,
	}
	registerSlowlogOps(h)
	registerMemoryOps(h)
	return h
}

// fanout is a command sent to every node: its requests, and the node each
// went to.
type fanout struct {
	reqs  []*request
	nodes []int
}

// toAll forwards args to every node the proxy knows but those retired
// (gone from the cluster, owning nothing) and those that own no slot and
// cannot be reached (neededByAll). A dead node's request answers
// CLUSTERDOWN, so a whole-keyspace command fails while part of the
// keyspace is missing. With no node at all the one request answers
// CLUSTERDOWN.
//
// The first node gets args as they are, the others wrapped in SHARDGATE
// UNLOGGED (node/proxycmds.go): the command is in the slow log SLOWLOG
// GET merges once, as one Redis logs it.
func (c *client) toAll(args [][]byte) fanout { return c.toNodes(args, true) }

// toAllUnlogged is toAll for a command the proxy makes up to answer the
// client's (INFO for MEMORY STATS, say): no node logs it, and the proxy
// logs the client's command (answerHere).
func (c *client) toAllUnlogged(args [][]byte) fanout {
	c.answerHere()
	return c.toNodes(args, false)
}

func (c *client) toNodes(args [][]byte, logFirst bool) fanout {
	pools := c.srv.route.all()
	f := fanout{reqs: make([]*request, 0, len(pools)), nodes: make([]int, 0, len(pools))}
	if c.srv.route.unreached.Load() > 0 {
		// Some slots' owner has no pool to send to: the command would
		// answer for part of the keys only.
		f.reqs = append(f.reqs, c.forward(noOwner, args))
		f.nodes = append(f.nodes, noOwner)
		return f
	}
	var unlogged [][]byte
	for i, p := range pools {
		if !p.neededByAll() {
			continue
		}
		a := args
		if len(f.reqs) > 0 || !logFirst {
			if unlogged == nil {
				unlogged = c.srv.unlogged(args)
			}
			a = unlogged
		}
		f.reqs = append(f.reqs, c.forward(i, a))
		f.nodes = append(f.nodes, i)
	}
	if len(f.reqs) == 0 {
		f.reqs = append(f.reqs, c.forward(noOwner, args))
		f.nodes = append(f.nodes, noOwner)
	}
	return f
}

var shardgateUnlogged = [][]byte{[]byte("SHARDGATE"), []byte("UNLOGGED")}

// unlogged wraps a command the proxy makes up in SHARDGATE UNLOGGED, so
// that the node's slow log keeps to the clients' commands (unless the
// nodes are redis-servers: PlainRedisNodes).
func (s *Server) unlogged(args [][]byte) [][]byte {
	if s.opts.PlainRedisNodes {
		return args
	}
	return append(shardgateUnlogged[:2:2], args...)
}

// err returns the first error reply among the requests, or nil. A node
// that could not be reached is named: "Hash slot not served" would puzzle
// a client that named no slot.
func (f fanout) err(c *client) []byte {
	for i, r := range f.reqs {
		if len(r.reply) == 0 || (r.reply[0] != '-' && r.reply[0] != '!') {
			continue
		}
		if n := f.nodes[i]; n >= 0 && string(r.reply) == "-"+resp.ErrClusterDownSlot+"\r\n" {
			return []byte("-" + nodeDownMsg(c.srv.nodeAddr(n)) + "\r\n")
		}
		return r.reply
	}
	return nil
}

// withoutUnreachedSpare drops the requests of nodes that own no slot and
// could not be reached (toAll sent them while the node looked reachable):
// such a node answers for no key, so the command is whole without it.
// Requests are kept if none would be left.
func (f fanout) withoutUnreachedSpare(c *client) fanout {
	var out fanout
	for i, r := range f.reqs {
		n := f.nodes[i]
		if n >= 0 && len(r.reply) > 0 && r.reply[0] == '-' && nodeFailure(r.reply[1:]) && !c.srv.route.pool(n).ownsSlots.Load() {
			continue
		}
		out.reqs = append(out.reqs, r)
		out.nodes = append(out.nodes, n)
	}
	if len(out.reqs) == 0 {
		return f
	}
	return out
}

// mergeAll forwards args to every node (toAll); once all have answered,
// the client gets the first error among the replies (err) or what merge
// writes from the replies, one per node.
func (c *client) mergeAll(args [][]byte, merge func(c *client, reqs []*request)) {
	c.merged(c.toAll(args), merge)
}

// mergeAllUnlogged is mergeAll with toAllUnlogged.
func (c *client) mergeAllUnlogged(args [][]byte, merge func(c *client, reqs []*request)) {
	c.merged(c.toAllUnlogged(args), merge)
}

// merged adds the merge of fan-out f's replies.
func (c *client) merged(f fanout, merge func(c *client, reqs []*request)) {
	c.addMerge(func(c *client) {
		f = f.withoutUnreachedSpare(c)
		if e := f.err(c); e != nil {
			c.w.Raw(e)
			return
		}
		merge(c, f.reqs)
	})
}

// nodeDownMsg is the error of a command that needs every node while the
// node at addr cannot be reached.
func nodeDownMsg(addr string) string { return fmt.Sprintf(resp.ErrClusterDownNode, addr) }

// cmdSumInts: DBSIZE is the sum of the nodes' counts.
func cmdSumInts(c *client, args [][]byte) {
	c.mergeAll(args, func(c *client, reqs []*request) {
		var sum int64
		for _, r := range reqs {
			v := decodeReply(r.reply)
			sum += v.Int
		}
		c.w.Int(sum)
	})
}

// cmdMinInt: LASTSAVE through the proxy is the oldest of the nodes' last
// saves, so that "saved since T" holds for the whole keyspace.
func cmdMinInt(c *client, args [][]byte) {
	c.mergeAll(args, func(c *client, reqs []*request) {
		least := decodeReply(reqs[0].reply).Int
		for _, r := range reqs[1:] {
			least = min(least, decodeReply(r.reply).Int)
		}
		c.w.Int(least)
	})
}

// cmdAllOK: FLUSHALL, FLUSHDB, CONFIG RESETSTAT, BGREWRITEAOF, BGSAVE and SAVE
// apply to every node; the reply is the first node's unless one failed.
func cmdAllOK(c *client, args [][]byte) {
	c.mergeAll(args, func(c *client, reqs []*request) {
		c.w.Raw(reqs[0].reply)
	})
}

// cmdFlush is FLUSHALL and FLUSHDB: cmdAllOK, after which the recorded
// --segment-bits (a key like any other) is gone, so this proxy's next
// segmented command records its size again at once rather than after
// segmentBitsRecheck, leaving another proxy with a different size no
// window in which to record its own.
//
// A flush that reaches only some nodes would empty part of the keyspace
// and still answer an error, so while a node cannot be reached it is
// refused before anything is sent. (A node lost between this check and
// the flush still leaves a partial flush, reported by the error reply.)
func cmdFlush(c *client, args [][]byte) {
	if c.refusedNodeDown() {
		return
	}
	cmdAllOK(c, args)
	c.srv.segChecked.Store(0)
}

// refusedNodeDown answers a command that changes every node (FLUSHALL,
// CONFIG RESETSTAT, SLOWLOG RESET, CONFIG SET of the slowlog's
// parameters) with the error of a node that cannot be reached, if one
// cannot: run on the others only, it would change part of the cluster and
// still answer an error.
func (c *client) refusedNodeDown() bool {
	if c.srv.route.unreached.Load() > 0 {
		r := c.newRequest()
		r.preset(resp.ErrClusterDownSlot) // an owner with no address: see toNodes
		c.addReq(r)
		return true
	}
	for _, p := range c.srv.route.all() {
		if p.getState() == poolRetired || !p.ownsSlots.Load() {
			continue
		}
		if _, err := p.sharedConn(c.w.Proto, c.connIdx()); err != nil {
			msg := connFailMsg(err)
			if msg == resp.ErrClusterDownSlot {
				msg = nodeDownMsg(p.addr)
			}
			r := c.newRequest()
			r.preset(msg)
			c.addReq(r)
			return true
		}
	}
	return false
}

// cmdResetStat is CONFIG RESETSTAT: every node resets its counters and
// the proxy its own, as Redis's resetServerStats.
func cmdResetStat(c *client, args [][]byte) {
	if c.refusedNodeDown() {
		return
	}
	cmdAllOK(c, args)
	c.srv.stats.reset()
	c.srv.errs.Reset()
	c.srv.cmdStats.Reset()
	c.srv.rates.Reset()
}

// cmdKeys concatenates the nodes' KEYS replies.
//
// The nodes' arrays are joined as they came, without decoding their
// elements: KEYS * over a million keys would otherwise hold a value per
// key (the proxy's memory peaked at 27 times the reply's size).
func cmdKeys(c *client, args [][]byte) {
	c.mergeAll(args, func(c *client, reqs []*request) {
		total := 0
		bodies := make([][]byte, len(reqs))
		for i, r := range reqs {
			n, body, ok := arrayBody(r.reply)
			if !ok {
				c.w.Error("ERR bad reply from node")
				return
			}
			total += n
			bodies[i] = body
		}
		c.w.Array(total)
		for _, b := range bodies {
			c.w.Raw(b)
		}
	})
}

// arrayBody splits an array reply ("*<n>\r\n" and its elements) into its
// length and the bytes of its elements.
func arrayBody(reply []byte) (n int, body []byte, ok bool) {
	if len(reply) < 4 || reply[0] != '*' {
		return 0, nil, false
	}
	i := bytes.Index(reply, []byte("\r\n"))
	if i < 0 {
		return 0, nil, false
	}
	v, err := strconv.Atoi(string(reply[1:i]))
	if err != nil || v < 0 {
		return 0, nil, false
	}
	return v, reply[i+2:], true
}

// cmdBySlotArg sends a command that names a slot (args[2]) to the slot's
// node (slotBound); a slot that is not one goes to any node, which
// answers the exact error.
func cmdBySlotArg(c *client, args [][]byte) {
	if slot, ok := resp.ParseInt(args[2]); ok && slot >= 0 && slot < slots.Count {
		n := c.srv.route.ownerOf(uint16(slot))
		c.addReq(c.forward(n, c.srv.slotBound(uint16(slot), args)))
		return
	}
	c.addReq(c.forward(c.srv.anyNode(), args))
}

// slotBound wraps a keyless command about one slot in SHARDGATE SLOT
// (node/proxycmds.go): a node that no longer serves the slot answers
// MOVED (or TRYAGAIN mid-migration), which the proxy follows as for a
// key's command, rather than its own empty answer for a slot it gave
// away a moment before this proxy's table learned of it.
func (s *Server) slotBound(slot uint16, args [][]byte) [][]byte {
	if s.opts.PlainRedisNodes {
		return args
	}
	return append([][]byte{[]byte("SHARDGATE"), []byte("SLOT"), strconv.AppendUint(nil, uint64(slot), 10)}, args...)
}

// cmdRandomKey asks every node and picks one of the keys they name, so an
// empty node never hides the others' keys.
func cmdRandomKey(c *client, args [][]byte) {
	c.mergeAll(args, func(c *client, reqs []*request) {
		var keys []*request
		for _, r := range reqs {
			if v := decodeReply(r.reply); !v.Null {
				keys = append(keys, r)
			}
		}
		if len(keys) == 0 {
			c.w.Raw(reqs[0].reply)
			return
		}
		c.w.Raw(keys[rand.IntN(len(keys))].reply)
	})
}

// cmdScan runs SCAN across the nodes one after the other. A node's cursor
// carries the slot it stands at in its top 14 bits (node/engine/scan.go:
// slot<<39 | position), so the proxy's cursor is the node's cursor as is:
// its slot says which node continues the scan. When a node finishes, the
// scan moves on to the first slot of the next node; the cursor stays
// valid whoever owns the slots by then.
func cmdScan(c *client, args [][]byte) {
	// Read as Redis reads it (strtoul): "", "+0" and "-0" are cursor 0
	// and start a full scan; an invalid one goes to a node, which
	// answers the exact error.
	cursor, ok := resp.ParseCursor(args[1])
	if !ok || cursor>>scanPosBits >= slots.Count {
		// A cursor past the last slot is the end of the scan on every
		// node, which answers it (or the option errors) alone.
		c.addReq(c.forward(c.srv.anyNode(), args))
		return
	}
	rt := c.srv.route
	sub := make([][]byte, len(args))
	copy(sub, args)
	for i := 2; i < len(sub); i++ {
		sub[i] = append([]byte(nil), sub[i]...)
	}
	filtered := scanFiltered(args)
	var (
		keys []resp.Value
		next uint64
	)
	for {
		slot := uint16(cursor >> scanPosBits)
		sub[1] = strconv.AppendUint(nil, cursor, 10)
		v := c.roundTrip([]int{rt.ownerOf(slot)}, [][][]byte{c.srv.slotBound(slot, sub)})[0]
		// The node that answered: a redirection has moved the slot in
		// the table.
		n := rt.ownerOf(slot)
		if v.IsError() || len(v.Elems) != 2 {
			mark := len(c.local.B)
			c.local.Raw(resp.AppendValue(nil, v))
			c.addLocal(mark)
			return
		}
		page := v.Elems[1].Elems
		next, _ = strconv.ParseUint(string(v.Elems[0].Str), 10, 64)
		rangeDone := false
		if end := rt.rangeEnd(n, slot); next == 0 || int(next>>scanPosBits) > end {
			// The node is done with this range of slots: go on with
			// the first slot after it. Its page may have run on into
			// its next range, which the scan reaches again later:
			// those keys wait for then, or they would come twice.
			rangeDone = true
			page = slices.DeleteFunc(page, func(k resp.Value) bool { return int(slots.Slot(k.Str)) > end })
			next = 0
			if end+1 < slots.Count {
				next = uint64(end+1) << scanPosBits
			}
		}
		keys = append(keys, page...)
		// An unfiltered empty page from a node done with its range means
		// the range had nothing left, so asking the next node costs
		// little, and spares the client a string of empty pages across
		// nodes. Anything else ends the call: a MATCH or TYPE scan may
		// find nothing for a long way, and each SCAN call must stay
		// about COUNT keys of work, as in Redis, empty page or not.
		if len(keys) > 0 || next == 0 || !rangeDone || filtered {
			break
		}
		cursor = next
	}
	mark := len(c.local.B)
	c.local.Array(2)
	c.local.BulkString(strconv.FormatUint(next, 10))
	c.local.Array(len(keys))
	for _, k := range keys {
		c.local.Bulk(k.Str)
	}
	c.addLocal(mark)
}

// scanFiltered reports whether a SCAN's options (after the cursor) hold
// MATCH or TYPE, which can leave pages empty in the middle of a range.
func scanFiltered(args [][]byte) bool {
	for i := 2; i+1 < len(args); i += 2 {
		opt := resp.CString(args[i], len(args[i])) // a C string to the node, as to Redis
		if bytes.EqualFold(opt, []byte("match")) || bytes.EqualFold(opt, []byte("type")) {
			return true
		}
	}
	return false
}

// scanPosBits is where a node's SCAN cursor keeps the slot (the same
// constant as node/engine/scan.go's).
const scanPosBits = 39
