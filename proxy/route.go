package proxy

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/cmdlookup"
	"github.com/shardgate/shardgate/internal/monitor"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// routeKind says how the proxy serves a command.
type routeKind uint8

const (
	// routeKeyed goes to the node that owns its keys' slot (keyless
	// instances, like SCAN-less KEYS... go to the first node).
	routeKeyed routeKind = iota
	// routeAnyNode is keyless and answered alike by every node (COMMAND,
	// CONFIG GET, the HELP subcommands, DEBUG's refusal): the first node
	// answers.
	routeAnyNode
	// routeLocal is answered by the proxy itself, into c.local.
	routeLocal
	// routeOps adds its own ops (fan-out with a merge, or round trips of
	// its own); handler does everything.
	routeOps
)

// route binds a command of the table to the proxy's way of serving it.
type route struct {
	cmd     *slots.Command
	kind    routeKind
	handler func(c *client, args [][]byte)
	// split serves the command over several slots in --cross-slot split
	// mode; nil means it is refused with CROSSSLOT.
	split func(c *client, args [][]byte, keys []int)
	// txControl commands run at once even inside MULTI.
	txControl bool
	// barrier commands change how the client's later commands are sent
	// (protocol version), or read or reset the statistics the commands
	// before them add to (INFO, CONFIG RESETSTAT, CONFIG SET of
	// latency-tracking, LATENCY HISTOGRAM): the batch before them is
	// finished first.
	barrier bool
	// blocking commands run on a dedicated connection (blocking.go).
	blocking bool
}

func buildRoutes() []route {
	local := localHandlers()
	ops := opsHandlers()
	split := splitHandlers()
	routes := make([]route, slots.NumIDs())
	var add func(cmd *slots.Command)
	add = func(cmd *slots.Command) {
		r := &routes[cmd.ID]
		r.cmd = cmd
		switch {
		case local[cmd.FullName] != nil:
			r.kind, r.handler = routeLocal, local[cmd.FullName]
		case ops[cmd.FullName] != nil:
			r.kind, r.handler = routeOps, ops[cmd.FullName]
		case cmd.HasKeys():
			r.kind = routeKeyed
		default:
			r.kind = routeAnyNode
		}
		r.split = split[cmd.FullName]
		r.txControl = txControlCommands[cmd.FullName]
		r.barrier = barrierCommands[cmd.FullName]
		r.blocking = r.kind == routeKeyed && cmd.Has(slots.FlagBlocking)
		for _, sub := range cmd.Subcommands {
			add(sub)
		}
	}
	for _, cmd := range slots.All() {
		add(cmd)
	}
	return routes
}

// barrierCommands finish the batch before them (route.barrier).
var barrierCommands = map[string]bool{
	"hello": true, "reset": true,
	"info": true, "config|resetstat": true, "config|set": true, "latency|histogram": true,
}

// txControlCommands are not queued by MULTI (as in Redis's processCommand).
var txControlCommands = map[string]bool{
	"exec": true, "discard": true, "multi": true, "watch": true,
	"quit": true, "reset": true,
}

// handle serves one command: the checks a Redis Cluster node makes, in its
// order (lookup, arity, auth, CROSSSLOT), then MULTI queueing or routing.
// Every command adds exactly one op to the batch.
func (c *client) handle(args [][]byte) {
	if c.statStart == 0 {
		c.statStart = c.srv.statClock()
	}
	c.curCmd, c.curBlocking, c.curBlockCounted = 0, false, false
	if c.srv.metrics != nil {
		c.handleMeasured(args)
	} else {
		c.handleCommand(args)
	}
	if cmd := c.fedCmd; cmd != nil {
		c.fedCmd = nil
		if c.monitor || c.srv.monitors.Active() {
			c.feedMonitors(cmd, args)
		}
	}
	switch c.reply {
	case replyOff:
		c.ops[len(c.ops)-1].skip = true
	case replySkipThis:
		c.ops[len(c.ops)-1].skip = true
		c.reply = replyOn
	case replySkipNext:
		c.reply = replySkipThis
	}
	if len(c.ownLines) > 0 {
		// A monitor's own line follows its command's reply, before the
		// next command's: the batch ends here.
		c.finishBatch()
		c.w.B = append(c.w.B, c.ownLines...)
		c.ownLines = c.ownLines[:0]
	}
	if c.finishAfter {
		c.finishAfter = false
		c.finishBatch()
	}
}

func (c *client) handleCommand(args [][]byte) {
	cmd, refusal := cmdlookup.Resolve(args)
	// CLIENT LIST's cmd= is the last command looked up, rejected or not.
	found := cmdlookup.Found(cmd, args)
	c.lastCmd.Store(found)
	if found != nil {
		// Blocking: it may wait (XREAD only with BLOCK), so the proxy
		// cannot time it (cmdstats.go).
		c.curCmd, c.curBlocking = int32(found.ID+1), found.Has(slots.FlagBlocking) && blocksOnNode(found, args)
	}
	if slots.EqualFold("cluster", args[0]) && len(args) >= 2 && clusterSubcommand(args[1]) != nil {
		// The proxy's own views, queued in a transaction, are answered
		// when the node has run the rest (spliceLocals).
		if c.multi != nil {
			if cmd != nil && refusal != "" {
				c.rejectCmd(cmd, refusal) // arity first, as Redis checks it as it queues
				return
			}
			if !c.pauseHold(cmd) {
				return
			}
			c.queueLocal(clusterSubcommand(args[1]), args)
			return
		}
		if cmd != nil && refusal == "" && !c.pauseHold(cmd) {
			return
		}
		c.runLocal(clusterSubcommand(args[1]), args)
		c.fedCmd = cmd
		return
	}
	if cmd == nil {
		c.unknownCommand(args, refusal)
		return
	}
	if refusal != "" {
		if found == nil && c.authRequired() {
			if msg := cmdlookup.Unauthenticated(args); msg != "" {
				refusal = msg // a Redis subcommand not served here
			}
		}
		c.rejectCmd(cmd, refusal)
		return
	}
	if !cmd.Has(slots.FlagNoAuth) && c.authRequired() {
		c.rejectCmd(cmd, resp.ErrNoAuth)
		return
	}
	if c.multi != nil && cmd.Has(slots.FlagNoMulti) {
		c.reject(resp.ErrNoMultiCommand)
		return
	}
	r := &c.srv.routes[cmd.ID]
	if c.segmentCommand(cmd, args) {
		if !c.pauseHold(cmd) {
			return
		}
		c.fedCmd = cmd
		c.runSegments(args)
		return
	}
	slot, keys, cross := c.commandSlot(cmd, args)
	if cross {
		if r.split != nil && c.srv.opts.CrossSlot == CrossSlotSplit && c.multi == nil {
			if !c.pauseHold(cmd) {
				return
			}
			c.fedCmd = cmd
			r.split(c, args, keys)
			return
		}
		c.srv.stats.crossSlot.Add(1)
		c.srv.cross.refused(c, cmd.FullName, args, keys)
		c.reject(resp.ErrCrossSlot)
		return
	}
	if c.monitor && monitor.Refused(cmd) {
		c.rejectCmd(cmd, resp.ErrMonitorKeyspace)
		return
	}
	if !c.pauseHold(cmd) {
		return
	}
	if c.multi != nil && !r.txControl {
		c.queueTx(r, args, slot)
		return
	}
	c.fedCmd = cmd
	switch r.kind {
	case routeKeyed:
		n := c.srv.firstNode()
		if slot >= 0 {
			n = c.srv.route.ownerOf(uint16(slot))
		}
		if r.blocking && blocksOnNode(cmd, args) {
			// Shown as it starts to wait, as Redis shows it.
			if c.fedCmd = nil; c.monitor || c.srv.monitors.Active() {
				c.feedMonitors(cmd, args)
			}
			c.blockingCall(n, cmd, args)
			return
		}
		r := c.forward(n, args)
		if c.readHead {
			c.refused.markHead(r)
		}
		c.addReq(r)
	case routeAnyNode:
		c.addReq(c.forward(c.srv.anyNode(), args))
	case routeLocal:
		if r.barrier {
			c.finishBarrier()
		}
		c.runLocal(r.handler, args)
	case routeOps:
		if r.barrier {
			c.finishBarrier()
		}
		c.runOps(r.handler, args)
	}
}

// finishBarrier finishes the batch before a barrier command, whose own
// time then starts.
func (c *client) finishBarrier() {
	if len(c.ops) == 0 {
		return
	}
	c.finishBatch()
	c.statStart = c.srv.statClock()
}

// anyNode picks the node for commands every node answers alike: the
// first live one that is not known to be down (else the first live
// one, whose reply tells; noOwner when the proxy knows no node).
func (s *Server) anyNode() int {
	first := noOwner
	for i, p := range s.route.all() {
		if !p.live() {
			continue
		}
		if !p.down.Load() {
			return i
		}
		if first == noOwner {
			first = i
		}
	}
	return first
}

// firstNode is the node for keyed commands that name no key: the first
// live one (node 0 in static mode), or noOwner.
func (s *Server) firstNode() int {
	for i, p := range s.route.all() {
		if p.live() {
			return i
		}
	}
	return noOwner
}

// unknownCommand serves the names the command table lacks: the proxy's
// own (SEGBIT.* ...), or else Redis's refusal (and for an HTTP
// request, Redis's silent disconnect).
func (c *client) unknownCommand(args [][]byte, refusal string) {
	if c.segmentCommand(nil, args) {
		if c.authRequired() {
			c.reject(resp.ErrNoAuth)
			return
		}
		c.runSegments(args)
		return
	}
	if cmdlookup.IsHTTPRequest(args[0]) {
		if c.srv.httpWarnings.Due(time.Now()) {
			c.srv.log.Warn("possible SECURITY ATTACK detected: a client sent an HTTP request line (POST or Host:); connection closed (logged once a minute at most)",
				"client", c.id, "addr", c.raddr)
		}
		c.refusedHTTP = true
		c.closing = true
		c.addLocal(len(c.local.B))
		return
	}
	// A Redis command shardgate does not serve is refused as a Redis
	// Cluster node refuses it before running it (arity, NOAUTH, and
	// CROSSSLOT in either cross-slot mode), so that code tried here meets
	// the refusals it would meet there; where Redis would run it, it is
	// unknown.
	var kb [8]int
	if cmd, keys, msg := cmdlookup.Unserved(args, c.authRequired(), kb[:0]); msg != "" {
		if cmd != nil {
			c.lastCmd.Store(cmd)
			c.curCmd = int32(cmd.ID + 1) // a rejected call in commandstats
		}
		if msg == resp.ErrCrossSlot {
			c.srv.stats.crossSlot.Add(1)
			c.srv.cross.refused(c, cmd.FullName, args, keys)
		}
		c.reject(msg)
		return
	}
	c.reject(refusal)
}

// runLocal runs a proxy-answered command, recording its reply.
func (c *client) runLocal(h func(c *client, args [][]byte), args [][]byte) {
	mark := len(c.local.B)
	if c.curCmd == 0 || c.srv.slowlog.Threshold() < 0 {
		h(c, args)
		c.addLocal(mark)
		return
	}
	start := time.Now()
	h(c, args)
	c.addLocal(mark)
	c.logLocal(args, time.Since(start))
}

// runOps runs a routeOps command. Most go to nodes as the client sent
// them, and a node logs them where they run; one the proxy answers
// itself (logHere) is logged here, with the proxy's own time on it.
func (c *client) runOps(h func(c *client, args [][]byte), args [][]byte) {
	c.logHere = false
	if c.curCmd == 0 || c.srv.slowlog.Threshold() < 0 {
		h(c, args)
		return
	}
	start := time.Now()
	h(c, args)
	if c.logHere {
		c.logHere = false
		c.logLocal(args, time.Since(start))
	}
}

// answerHere notes that the proxy answers the routeOps command being
// handled (runOps logs it).
func (c *client) answerHere() { c.logHere = true }

// commandSlot returns the slot of the command's keys (-1 when it has
// none), their argument indexes, and whether they span several slots.
func (c *client) commandSlot(cmd *slots.Command, args [][]byte) (slot int, keys []int, cross bool) {
	if !cmd.HasKeys() {
		return -1, nil, false
	}
	c.keyBuf = cmd.RouteKeyIndexes(args, c.keyBuf[:0])
	slot = -1
	for _, i := range c.keyBuf {
		sl := int(slots.Slot(args[i]))
		if slot < 0 {
			slot = sl
		} else if sl != slot {
			cross = true
		}
	}
	return slot, c.keyBuf, cross
}

// reject answers with an error that happens before a command runs; inside
// MULTI it also dooms the transaction, as Redis's flagTransaction does.
func (c *client) reject(msg string) {
	if c.multi != nil {
		c.multi.aborted = true
	}
	c.uncounted++
	c.localError(msg)
	c.ops[len(c.ops)-1].rejected = true
}

// rejectCmd is reject for a looked-up command: a rejected EXEC, inside
// MULTI or not, ends the transaction and the WATCHes instead, with
// EXECABORT naming the error (Redis's execCommandAbort).
func (c *client) rejectCmd(cmd *slots.Command, msg string) {
	if cmd.FullName == "exec" {
		c.discardTx()
		c.releaseWatches(false)
		c.uncounted++
		c.localError(fmt.Sprintf(resp.ErrExecAbortBecause, strings.TrimPrefix(msg, "ERR ")))
		c.ops[len(c.ops)-1].rejected = true
		c.fedCmd = cmd // shown to the monitors, as by execCommandAbort
		return
	}
	c.reject(msg)
}

// localError adds an error reply made by the proxy.
func (c *client) localError(msg string) {
	mark := len(c.local.B)
	c.local.Error(msg)
	c.addLocal(mark)
}
