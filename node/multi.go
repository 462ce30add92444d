package node

import (
	"fmt"
	"github.com/shardgate/shardgate/internal/clientpause"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, as a Redis 7.0
// cluster node runs them.
//
// Queueing. Between MULTI and EXEC every command but the transaction
// controls (see txControlCommands) is checked as usual (unknown command,
// arity, NOAUTH, CROSSSLOT of its own keys) and then queued with +QUEUED.
// A check failing flags the transaction (multiState.aborted) and EXEC
// answers EXECABORT. Once the transaction is flagged, or a watched key has
// changed, commands still answer +QUEUED but are not stored, as Redis
// does: they can never run.
//
// EXEC, in Redis's order: its own arity or NOAUTH failing ends the
// transaction with "EXECABORT ... because of: <error>"; then the cluster
// rule over the stored commands (keys in two slots: CROSSSLOT, and the
// transaction is discarded); then EXECABORT for a flagged transaction; then
// a null array when a watched key changed or expired; then every command
// runs and EXEC replies with the array of their replies (a command failing
// at run time, e.g. WRONGTYPE, is one error element; the others still run).
// EXEC, DISCARD, the CROSSSLOT/EXECABORT/null outcomes and RESET all drop
// the client's WATCHes.
//
// Atomicity. A transaction runs under locks held for all of its commands:
// the keyspace shared plus the one shard of its slot when every command and
// every watched key is in that slot, else the keyspace exclusively (keyless
// data commands such as DBSIZE or FLUSHALL, node commands that read the
// keyspace, watched keys in other slots). A shard is locked at most once,
// and commands inside run with an engine.Ctx that says which locks are
// held, so no command locks anything again.
//
// WATCH. Each watched key registers the client's engine.Watch in its shard;
// writers set its Dirty flag (Shard.Touch). A key found logically expired
// at WATCH time is removed then, so that its later removal is not mistaken
// for a change: Redis gets the same outcome with its per-key "expired at
// WATCH" mark (checked against redis-server for SET, DEL, FLUSHALL and
// expiry afterwards). The one visible difference: Redis leaves such a key
// in place until it is accessed or swept, so DBSIZE can count it a little
// longer there. A watched key that expires before EXEC is removed by EXEC's
// lookup (or the active expiry), which touches it, so EXEC fails, as Redis
// 7.0's isWatchedKeyExpired makes it.

// multiState is a transaction being queued.
type multiState struct {
	cmds []queued
	// aborted: a queue-time error; EXEC must reply EXECABORT.
	aborted bool
	// slot is the slot of the stored commands' keys, -1 while none has
	// keys; crossSlot records stored commands in two slots.
	slot      int
	crossSlot bool
	// exclusive: some stored command needs the whole keyspace.
	exclusive bool
	// denyOOM: some stored command may grow the data, so EXEC is refused
	// while used memory is over maxmemory.
	denyOOM bool
	// mayWrite: some stored command may write, so a CLIENT PAUSE WRITE
	// holds EXEC.
	mayWrite bool
}

// queued is one stored command.
type queued struct {
	route *route
	args  [][]byte // copied: the reader's buffer is reused
	slot  int
}

// watchState is the keys a client WATCHes and its dirty flag.
type watchState struct {
	flag engine.Watch
	keys []watchedKey
}

type watchedKey struct {
	slot uint16
	key  string
}

// connKeyspaceCommands are node-level commands that read the keyspace
// (INFO's keyspace section, MEMORY STATS' key counts). Inside EXEC they
// run under the exclusive keyspace lock, and must use client.txCtx
// instead of locking (run with one slot's lock held, their walk of every
// shard would wait for that lock forever).
var connKeyspaceCommands = map[string]bool{"info": true, "memory|stats": true}

// registerTxCmds adds the transaction commands to the node-level handlers.
func registerTxCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["multi"] = s.cmdMulti
	h["exec"] = s.cmdExec
	h["discard"] = s.cmdDiscard
	h["watch"] = s.cmdWatch
	h["unwatch"] = s.cmdUnwatch
}

func (s *Server) cmdMulti(c *client, args [][]byte) {
	if c.multi != nil {
		c.w.Error(resp.ErrMultiNested)
		return
	}
	c.multi = &multiState{slot: -1}
	c.listedMulti.Store(0)
	c.w.OK()
}

func (s *Server) cmdDiscard(c *client, args [][]byte) {
	if c.multi == nil {
		c.w.Error(resp.ErrDiscardNoMulti)
		return
	}
	c.discardTransaction()
	c.w.OK()
}

// discardTransaction ends the client's transaction, if any, and drops its
// WATCHes (DISCARD, RESET, a failed EXEC).
func (c *client) discardTransaction() {
	c.multi = nil
	c.listedMulti.Store(-1)
	c.unwatchAll()
}

// queue stores a command of the open transaction and replies QUEUED. slot
// is the slot of the command's keys (-1 for none).
func (c *client) queue(r *route, args [][]byte, slot int) {
	m := c.multi
	// A doomed transaction stores nothing: EXEC will not run it.
	if m.aborted || (c.watch != nil && c.watch.flag.Dirty.Load()) {
		c.w.Simple("QUEUED")
		return
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	cp := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		cp[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	m.cmds = append(m.cmds, queued{route: r, args: cp, slot: slot})
	c.listedMulti.Store(int32(len(m.cmds)))
	if slot >= 0 {
		if m.slot < 0 {
			m.slot = slot
		} else if m.slot != slot {
			m.crossSlot = true
		}
	}
	if r.cmd.Has(slots.FlagDenyOOM) {
		m.denyOOM = true
	}
	if clientpause.MayWrite(r.cmd) {
		m.mayWrite = true
	}
	if r.exclusive || (r.data != nil && slot < 0) ||
		(r.conn != nil && connKeyspaceCommands[r.cmd.FullName]) {
		m.exclusive = true
	}
	c.w.Simple("QUEUED")
}

// execAbort ends the transaction because EXEC itself was rejected (wrong
// arity, NOAUTH), as Redis's execCommandAbort: the error is quoted after
// "because of:" without its "ERR " prefix.
func (c *client) execAbort(msg string) {
	c.discardTransaction()
	c.w.Error(formatExecAbort(msg))
}

func formatExecAbort(msg string) string {
	return fmt.Sprintf(resp.ErrExecAbortBecause, strings.TrimPrefix(msg, "ERR "))
}

func (s *Server) cmdExec(c *client, args [][]byte) {
	m := c.multi
	if m == nil {
		c.w.Error(resp.ErrExecNoMulti)
		return
	}
	if m.slot >= 0 {
		if !s.passFence(c, m.slot) {
			c.discardTransaction()
			c.w.Error(resp.ErrTryAgain)
			c.refusedRun = true
			return
		}
		// The cluster rule over the stored commands (ownership.go).
		if msg := s.slotRefusal(m.slot, m.crossSlot); msg != "" {
			c.discardTransaction()
			c.w.Error(msg)
			c.refusedRun = true // Redis refuses EXEC before it runs
			return
		}
	}
	if m.aborted {
		c.discardTransaction()
		c.w.Error(resp.ErrExecAbort)
		return
	}
	c.multi = nil
	// The WATCHes end with EXEC whatever happens; they are unregistered
	// once the transaction's locks are released (unwatchAll locks shards).
	w := c.watch
	c.watch = nil
	defer func() {
		c.listedMulti.Store(-1)
		c.watch = w
		c.unwatchAll()
	}()

	lockSlot, exclusive := m.slot, m.exclusive
	if w != nil && !exclusive {
		for _, wk := range w.keys {
			if lockSlot < 0 {
				lockSlot = int(wk.slot)
			} else if int(wk.slot) != lockSlot {
				exclusive = true
				break
			}
		}
	}

	ks := s.ks
	var held *engine.Shard
	if exclusive {
		ks.Lock()
		defer ks.Unlock()
	} else {
		ks.RLock()
		defer ks.RUnlock()
		if lockSlot >= 0 {
			held = ks.Shard(uint16(lockSlot))
			held.Lock()
			defer held.Unlock()
		}
	}
	if c.killed.Load() {
		return // killed since its EXEC was read: see runData
	}
	now := s.opts.Now().UnixMilli()
	if m.slot >= 0 {
		if msg := s.notServed(uint16(m.slot)); msg != "" {
			c.refuseUnserved(msg) // the slot moved since the check above
			return
		}
	}

	if w != nil {
		// A watched key that expired since WATCH is removed here, which
		// touches it and so dirties w. A watched key whose slot this
		// node no longer serves (or is handing over) may be written on
		// its new owner unseen: the transaction fails as if it had
		// been.
		for _, wk := range w.keys {
			ks.Lookup(ks.Shard(wk.slot), []byte(wk.key), now)
			if s.notServed(wk.slot) != "" {
				w.flag.Dirty.Store(true)
			}
		}
		if w.flag.Dirty.Load() {
			c.w.NullArray()
			return
		}
	}

	// Redis drops replies as they are written while CLIENT REPLY is OFF
	// (or skipping this command), so a CLIENT REPLY queued here changes
	// what follows it only: the header and the replies before it stay.
	c.replyFiltered = true
	suppressed := func(mark int) {
		if c.reply == replyOff || c.reply == replySkipThis {
			c.w.Truncate(mark)
		}
	}
	mark := c.w.Len()
	c.w.Array(len(m.cmds))
	suppressed(mark)
	c.txCtx = &c.ctx
	defer func() { c.txCtx = nil }()
	if s.loadedLog() != nil {
		slot := int32(-1)
		if !exclusive {
			slot = int32(m.slot)
		}
		c.txLog = &aof.Record{Kind: aof.KindTx, Slot: slot, Now: now}
	}
	for i := range m.cmds {
		q := &m.cmds[i]
		if q.route.conn != nil {
			c.ctx = engine.Ctx{KS: ks, Args: q.args, W: &c.w, Now: now, Exclusive: exclusive}
			mark := c.w.Len()
			s.runTxConn(c, q)
			suppressed(mark)
			continue
		}
		c.ctx = engine.Ctx{KS: ks, Args: q.args, W: &c.w, Now: now, Live: s.opts.Now().UnixMilli(), Exclusive: exclusive}
		if q.slot >= 0 {
			c.ctx.Shard = ks.Shard(uint16(q.slot))
		}
		if q.slot >= 0 || exclusive {
			s.markKeys(q.slot, q.route.cmd, q.args)
		}
		mark := c.w.Len()
		s.runTxData(c, q)
		suppressed(mark)
		if c.ctx.Propagate && q.slot >= 0 && !q.route.cmd.Has(slots.FlagWrite) {
			s.markChanged(q.slot, q.route.cmd, q.args)
		}
		if q.route.cmd.Has(slots.FlagWrite) || c.ctx.Propagate {
			s.logCommand(c, q.slot, now, q.args)
		}
	}
	c.ctx = engine.Ctx{}
	if tx := c.txLog; tx != nil {
		c.txLog = nil
		if len(tx.Cmds) > 0 {
			c.lsn = max(c.lsn, s.appendRecord(tx)) // whole, before the waiters it feeds
		}
	}
	if m.slot >= 0 {
		// Clients blocked on keys the transaction pushed to are served
		// after it, with its locks still held (every key is in m.slot).
		s.serveBlocked(ks.Shard(uint16(m.slot)), now)
	}
}

// runTxConn runs a node-level command inside EXEC, turning a panic into an
// error element of the reply.
func (s *Server) runTxConn(c *client, q *queued) {
	args, timing := s.cmdBegin(c, q.route.cmd, q.args)
	if s.monitors.Active() {
		defer s.feedMonitors(c, q.route.cmd, args)
	}
	defer s.cmdEnd(c, q.route.cmd, args, timing)
	defer s.recoverCommand(c, q.route, c.w.Len())
	c.publishStats() // INFO in the transaction sees its commands so far
	q.route.conn(c, args)
}

// runTxData runs an engine command inside EXEC, whose locks are held.
func (s *Server) runTxData(c *client, q *queued) {
	args, timing := s.cmdBegin(c, q.route.cmd, q.args)
	if s.monitors.Active() {
		defer s.feedMonitors(c, q.route.cmd, args)
	}
	defer s.cmdEnd(c, q.route.cmd, args, timing)
	defer s.recoverCommand(c, q.route, c.w.Len())
	q.route.data(&c.ctx)
}

func (s *Server) cmdWatch(c *client, args [][]byte) {
	if c.multi != nil {
		c.w.Error(resp.ErrWatchInMulti)
		return
	}
	if c.watch == nil {
		c.watch = &watchState{}
		c.listedWatch.Store(&c.watch.flag)
	}
	w := c.watch
	ks := s.ks
	now := s.opts.Now().UnixMilli()
	// The dispatcher has checked that the keys share one slot.
	sh := ks.ShardOf(args[1])
	ks.RLock()
	sh.Lock()
	for _, key := range args[1:] {
		if w.has(sh.Slot, key) {
			continue
		}
		// Peek: an expired key goes now, but WATCH is no access (Redis
		// leaves the idle time alone).
		ks.Peek(sh, key, now)
		sh.AddWatch(key, &w.flag)
		w.keys = append(w.keys, watchedKey{slot: sh.Slot, key: string(key)})
	}
	sh.Unlock()
	ks.RUnlock()
	c.w.OK()
}

func (w *watchState) has(slot uint16, key []byte) bool {
	for i := range w.keys {
		if w.keys[i].slot == slot && w.keys[i].key == string(key) {
			return true
		}
	}
	return false
}

func (s *Server) cmdUnwatch(c *client, args [][]byte) {
	c.unwatchAll()
	c.w.OK()
}

// unwatchAll drops every WATCH of the client.
func (c *client) unwatchAll() {
	if c.watch == nil {
		return
	}
	ks := c.srv.ks
	ks.RLock()
	for _, wk := range c.watch.keys {
		sh := ks.Shard(wk.slot)
		sh.Lock()
		sh.RemoveWatch(wk.key, &c.watch.flag)
		sh.Unlock()
	}
	ks.RUnlock()
	c.watch = nil
	c.listedWatch.Store(nil)
}
