package node

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/shardgate/shardgate/internal/cmdlookup"
	"github.com/shardgate/shardgate/internal/monitor"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// route binds a command of the table to its implementation.
type route struct {
	cmd *slots.Command
	// data is an engine command, run under the keyspace locks.
	data engine.Handler
	// conn is a node-level command (connection state, server info); it
	// takes whatever locks it needs itself.
	conn func(c *client, args [][]byte)
	// exclusive commands hold the whole keyspace (FLUSHALL).
	exclusive bool
	// txControl commands run immediately even inside MULTI.
	txControl bool
}

// exclusiveCommands need every shard at one instant.
var exclusiveCommands = map[string]bool{"flushall": true, "flushdb": true}

// txControlCommands are not queued by MULTI (as in Redis's processCommand).
var txControlCommands = map[string]bool{
	"exec": true, "discard": true, "multi": true, "watch": true,
	"quit": true, "reset": true,
}

func buildRoutes(s *Server) []route {
	data := engine.Handlers()
	conn := s.connHandlers()
	routes := make([]route, slots.NumIDs())
	var add func(cmd *slots.Command)
	add = func(cmd *slots.Command) {
		r := &routes[cmd.ID]
		r.cmd = cmd
		r.data = data[cmd.FullName]
		r.conn = conn[cmd.FullName]
		r.exclusive = exclusiveCommands[cmd.FullName]
		r.txControl = txControlCommands[cmd.FullName]
		for _, sub := range cmd.Subcommands {
			add(sub)
		}
	}
	for _, cmd := range slots.All() {
		add(cmd)
	}
	return routes
}

// execute runs one command for c: lookup, arity, auth, CROSSSLOT, then
// MULTI queueing or the command itself, in Redis's order of checks.
func (s *Server) execute(c *client, args [][]byte) {
	cmd, refusal := cmdlookup.Resolve(args)
	// CLIENT LIST's cmd= is the last command looked up, rejected or not
	// (NULL for an unknown one), as Redis sets lastcmd before its checks.
	found := cmdlookup.Found(cmd, args)
	c.setLastCmd(found)
	if cmd == nil {
		if equalFoldASCII(args[0], "shardgate") && c.multi == nil && (s.mig != nil || proxyCommand(args) != nil) {
			if c.authRequired() {
				c.reject(resp.ErrNoAuth)
				return
			}
			if h := proxyCommand(args); h != nil {
				h(s, c, args)
				return
			}
			if s.load.active.Load() {
				c.reject(resp.ErrLoading) // no migration into or out of a half-loaded node
				return
			}
			s.mig.cmdShardgate(c, args)
			return
		}
		if cmdlookup.IsHTTPRequest(args[0]) {
			s.refuseHTTP(c)
			return
		}
		// A Redis command the node does not serve is refused as a Redis
		// Cluster node refuses it before running it (arity, NOAUTH,
		// CROSSSLOT); where Redis would run it, it is unknown.
		var kb [8]int
		if ucmd, _, msg := cmdlookup.Unserved(args, c.authRequired(), kb[:0]); msg != "" {
			if ucmd != nil {
				c.setLastCmd(ucmd)
				c.countRejected(ucmd)
			}
			c.reject(msg)
			return
		}
		c.reject(refusal)
		return
	}
	if refusal != "" {
		if found != nil { // not an unknown subcommand
			c.countRejected(cmd)
		} else if c.authRequired() {
			if msg := cmdlookup.Unauthenticated(args); msg != "" {
				refusal = msg // a Redis subcommand not served here
			}
		}
		c.rejectCmd(cmd, args, refusal)
		return
	}
	if !cmd.Has(slots.FlagNoAuth) && c.authRequired() {
		c.countRejected(cmd)
		c.rejectCmd(cmd, args, resp.ErrNoAuth)
		return
	}
	if c.multi != nil && cmd.Has(slots.FlagNoMulti) {
		c.countRejected(cmd)
		c.reject(resp.ErrNoMultiCommand)
		return
	}
	r := &s.routes[cmd.ID]
	if r.data == nil && r.conn == nil {
		c.reject(resp.UnknownCommand(args))
		return
	}
	slot, ok := c.commandSlot(cmd, args)
	if slot >= 0 {
		if c.multi == nil && !s.passFence(c, slot) {
			c.countRejected(cmd)
			c.reject(resp.ErrTryAgain)
			return
		}
		if msg := s.slotRefusal(slot, !ok); msg != "" {
			c.countRejected(cmd)
			c.reject(msg)
			return
		}
	}
	// Before the OOM check (Redis does not evict or refuse for memory
	// while loading) and anything that reads the log, which the load
	// opens.
	if s.load.active.Load() && !cmd.Has(slots.FlagLoading) {
		c.countRejected(cmd)
		c.rejectCmd(cmd, args, resp.ErrLoading)
		return
	}
	if s.mem.Over() && c.refusedOnOOM(cmd) {
		c.countRejected(cmd)
		c.rejectCmd(cmd, args, resp.ErrOOM)
		return
	}
	if c.monitor && monitor.Refused(cmd) {
		c.countRejected(cmd)
		c.rejectCmd(cmd, args, resp.ErrMonitorKeyspace)
		return
	}
	if s.aof != nil && (cmd.Has(slots.FlagWrite) || cmd.FullName == "ping") {
		if err := s.aof.Err(); err != nil {
			c.countRejected(cmd)
			c.rejectCmd(cmd, args, misconf(err)) // as Redis with a failing AOF
			return
		}
	}
	if s.pause.MayHold(c.mayWrite(cmd)) && !c.waitPause(cmd) {
		return // the client was killed, or the node is closing
	}
	if c.multi != nil && !r.txControl {
		c.queue(r, args, slot)
		return
	}
	s.run(c, r, args, slot)
}

// refusedOnOOM reports whether cmd is refused while used memory is over
// maxmemory, as Redis 7.0's processCommand decides: a command that may
// grow the data (denyoom), an EXEC whose transaction holds one, and,
// inside MULTI, anything but EXEC, DISCARD, QUIT and RESET (queueing
// takes memory too).
func (c *client) refusedOnOOM(cmd *slots.Command) bool {
	if cmd.Has(slots.FlagDenyOOM) {
		return true
	}
	if c.multi == nil {
		return false
	}
	switch cmd.FullName {
	case "exec":
		return c.multi.denyOOM
	case "discard", "quit", "reset":
		return false
	}
	return true
}

// commandSlot returns the slot of the command's keys (-1 when it has none)
// and false when they are in different slots (the slot is then the first
// key's).
func (c *client) commandSlot(cmd *slots.Command, args [][]byte) (int, bool) {
	if !cmd.HasKeys() {
		return -1, true
	}
	c.keyBuf = cmd.RouteKeyIndexes(args, c.keyBuf[:0])
	slot := -1
	for _, i := range c.keyBuf {
		sl := int(slots.Slot(args[i]))
		if slot < 0 {
			slot = sl
		} else if sl != slot {
			return slot, false
		}
	}
	return slot, true
}

// run executes a routed command with the locks it needs, timing it for
// the slow log.
func (s *Server) run(c *client, r *route, args [][]byte, slot int) {
	args, timing := s.cmdBegin(c, r.cmd, args)
	blocking := r.cmd.Has(slots.FlagBlocking)
	if blocking && s.monitors.Active() {
		s.feedMonitors(c, r.cmd, args) // as it starts to wait, as Redis
	}
	s.runCommand(c, r, args, slot)
	// Refused as Redis refuses before running (EXEC's cluster checks):
	// no monitor line either.
	refused := c.refusedRun
	s.cmdEnd(c, r.cmd, args, timing)
	if !blocking && !refused && s.monitors.Active() {
		s.feedMonitors(c, r.cmd, args)
	}
}

func (s *Server) runCommand(c *client, r *route, args [][]byte, slot int) {
	if r.conn != nil {
		// Node-level commands may report the counters (INFO): publish ours.
		c.publishStats()
		defer s.recoverCommand(c, r, c.w.Len())
		r.conn(c, args)
		return
	}
	// The context lives in the client so that a command allocates nothing.
	// Field by field: a whole-struct store costs a bulk write barrier.
	ctx := &c.ctx
	ctx.KS, ctx.Args, ctx.W, ctx.Now, ctx.Shard, ctx.Exclusive, ctx.Propagate, ctx.Brief = s.ks, args, &c.w, c.nowMs, nil, false, false, c.brief
	s.runData(c, r, ctx, slot)
	ctx.Args, ctx.Shard = nil, nil
}

// runData runs an engine command under the keyspace locks.
func (s *Server) runData(c *client, r *route, ctx *engine.Ctx, slot int) {
	if r.exclusive {
		// FLUSHALL and FLUSHDB free the data: over maxmemory, a
		// collection confirms it before the reply, so the client's next
		// write is let in (deferred first, it runs after the unlock:
		// the other clients need not wait for the collection).
		defer s.mem.Freed()
		// And the memory goes back now, as Redis's allocator frees it,
		// not at Go's next collection (minutes on an idle node).
		defer s.reclaim.Now()
		s.ks.Lock()
		defer s.ks.Unlock()
		ctx.Exclusive = true
		if slot >= 0 {
			ctx.Shard = s.ks.Shard(uint16(slot))
			if msg := s.notServed(uint16(slot)); msg != "" {
				c.refuseUnserved(msg)
				return
			}
		}
		s.markKeys(slot, r.cmd, ctx.Args)
	} else {
		s.ks.RLock()
		defer s.ks.RUnlock()
		if slot >= 0 {
			sh := s.ks.Shard(uint16(slot))
			sh.Lock()
			defer sh.Unlock()
			ctx.Shard = sh
			if msg := s.notServed(sh.Slot); msg != "" {
				c.refuseUnserved(msg) // the slot moved since the dispatcher's check
				return
			}
			s.markKeys(slot, r.cmd, ctx.Args)
		}
	}
	if c.killed.Load() {
		// CLIENT KILL answered another client after this command was
		// read: as in Redis, nothing the killed client sent runs after
		// that answer. Checked under the locks, which the killer's
		// next command on these keys takes after setting killed, so a
		// BLPOP does not take what it pushes next.
		return
	}
	defer s.recoverCommand(c, r, c.w.Len())
	r.data(ctx)
	if ctx.Propagate && slot >= 0 && !r.cmd.Has(slots.FlagWrite) {
		s.markChanged(slot, r.cmd, ctx.Args)
	}
	if r.cmd.Has(slots.FlagWrite) || ctx.Propagate {
		s.logCommand(c, slot, ctx.Now, ctx.Args) // before the waiters it feeds log their pops
	}
	if sh := ctx.Shard; sh != nil && s.blk.waitersOf(sh.Slot) != nil {
		s.serveBlocked(sh, ctx.Now) // clients blocked on keys the command pushed to
	}
}

// recoverCommand, deferred around every command, turns a panic into an ERR
// reply and a log line: a bug in one command must never take the node
// down. mark is the reply length before the command, so a half-written
// reply is dropped.
func (s *Server) recoverCommand(c *client, r *route, mark int) {
	p := recover()
	if p == nil {
		return
	}
	s.stats.unexpectedErrors.Add(1)
	s.log.Error("command panicked", "command", r.cmd.FullName, "client", c.id,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	c.w.Truncate(mark)
	c.w.Error(resp.ErrInternalPanic)
}

// reject replies with an error that happens before a command runs; inside
// MULTI it also dooms the transaction, as Redis's flagTransaction does.
// refuseUnserved answers a command whose slot, checked under its lock, is
// fenced (TRYAGAIN) or not this node's (MOVED).
func (c *client) refuseUnserved(msg string) {
	if msg == fenceRefusal {
		c.refuseAtFence()
	}
	c.w.Error(msg)
}

func (c *client) reject(msg string) {
	if c.multi != nil {
		c.multi.aborted = true
	}
	c.w.Error(msg)
}

// rejectCmd is reject for a command that has been looked up: a rejected
// EXEC, even outside MULTI, ends the transaction and drops the WATCHes
// instead (Redis's execCommandAbort).
func (c *client) rejectCmd(cmd *slots.Command, args [][]byte, msg string) {
	if cmd.FullName == "exec" {
		c.execAbort(msg)
		// Redis's execCommandAbort shows the refused EXEC to monitors
		// (a cluster refusal does not come this way: nothing shown).
		if s := c.srv; s.monitors.Active() {
			s.feedMonitors(c, cmd, args)
		}
		return
	}
	c.reject(msg)
}

// countRejected counts a command refused before it ran in its
// commandstats rejected_calls, as Redis's rejectCommand does.
func (c *client) countRejected(cmd *slots.Command) {
	c.srv.cmdStats.Rejected(&c.cstats, cmd.ID)
}

func (c *client) setLastCmd(cmd *slots.Command) {
	c.lastCmd.Store(cmd)
	c.lastAt.Store(c.nowNs)
}

// refuseHTTP drops the client without a reply, discarding replies it is
// still owed from the same batch, as Redis's securityWarningCommand does.
func (s *Server) refuseHTTP(c *client) {
	if s.httpWarnings.Due(time.Now()) {
		s.log.Warn("possible SECURITY ATTACK detected: a client sent an HTTP request line (POST or Host:); connection closed (logged once a minute at most)",
			"client", c.id, "addr", c.raddr)
	}
	c.w.Truncate(0)
	c.closing = true
}
