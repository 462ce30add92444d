package proxy

import (
	"bytes"
	"fmt"
	"github.com/shardgate/shardgate/internal/clientpause"
	"github.com/shardgate/shardgate/internal/cmdlookup"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Transactions. MULTI ... EXEC is queued in the proxy, which checks each
// command as a Redis Cluster node would (unknown, arity, CROSSSLOT within
// one command: an error that makes EXEC answer EXECABORT) and answers
// QUEUED itself. At EXEC every queued command must be in one slot, or EXEC
// answers CROSSSLOT and the transaction is discarded, as on a Redis
// Cluster node that owns every slot. The transaction then goes to the
// slot's node as one contiguous MULTI ... EXEC block, which the node runs
// as one unit; only EXEC's reply is passed on.
//
// WATCH needs the node's per-connection state: each WATCH borrows a
// dedicated connection to its keys' node and keeps it until EXEC, DISCARD,
// UNWATCH or the client leaves. EXEC then checks the WATCHes on the other
// nodes (an empty MULTI/EXEC there answers nil if a watched key changed)
// and runs the transaction on its own node's WATCH connection, so the
// node's own check covers the keys there. Watched keys on other nodes are
// checked just before, not atomically with, the EXEC.

// txState is a client's open transaction.
type txState struct {
	buf     []byte // MULTI and the queued commands, encoded
	n       int    // queued commands
	listed  int    // of those, the ones Redis would hold (CLIENT LIST's multi=)
	slot    int    // the slot of the keys so far; -1 none yet
	cross   bool   // queued commands touch different slots
	aborted bool   // a queued command was refused
	// casDirty: a watched key had changed when the first command in
	// another slot was queued, so Redis would not have queued it.
	casDirty bool
	// monitored are the queued commands to show to the monitors when
	// EXEC sends them (monitor.go).
	monitored []monitored
	// crossCmd is the first command queued outside slot, in crossSlot,
	// for the log line of EXEC's CROSSSLOT.
	crossCmd  string
	crossSlot int
	// locals are the proxy's own commands queued (txLocalCommands).
	locals []txLocal
	// cmds are the queued commands' IDs + 1, for commandstats.
	cmds []int32
	// mayWrite: a queued command may write, so a CLIENT PAUSE WRITE
	// holds EXEC.
	mayWrite bool
	// fresh: MULTI has just opened it (logLocal); multiLog is MULTI's
	// slow log entry, logged only if the node never gets the MULTI,
	// which it logs itself (discardTx).
	fresh    bool
	multiLog *localEntry
}

// txLocal is a command the proxy answers itself, queued in a transaction:
// it runs when the node has run the rest (if it has: not after a WATCH
// failed or EXECABORT), its reply put in its place among the node's.
type txLocal struct {
	at   int // its index among the transaction's replies
	run  func(c *client, args [][]byte)
	args [][]byte
}

// txLocalCommands are the proxy's own commands that may be queued in a
// transaction: they answer from the proxy's state alone, into c.local,
// and touch nothing a node holds. HELLO, AUTH, CLIENT REPLY/KILL and the
// fan-outs (DBSIZE, KEYS, SCAN, FLUSHALL, INFO ...) are still refused:
// the fan-outs would run on the transaction's one node only.
var txLocalCommands = map[string]bool{
	"client|id": true, "client|setname": true, "client|getname": true, "client|list": true,
	"client|info": true, "client|no-evict": true, "client|help": true,
	"client|pause": true, "client|unpause": true,
	"readonly": true, "readwrite": true, "asking": true,
}

// queueLocal queues one of the proxy's own commands (txLocalCommands, or
// a CLUSTER view) in the open transaction.
func (c *client) queueLocal(run func(c *client, args [][]byte), args [][]byte) {
	tx := c.multi
	kept := make([][]byte, len(args)) // args live as long as the batch
	for i, a := range args {
		kept[i] = bytes.Clone(a)
	}
	tx.locals = append(tx.locals, txLocal{at: tx.n + len(tx.locals), run: run, args: kept})
	if cmd, _ := cmdlookup.Resolve(args); cmd != nil {
		c.queueMonitored(tx, cmd, args)
	}
	c.replyQueued(tx)
}

// replyQueued answers QUEUED for a command just queued in tx.
func (c *client) replyQueued(tx *txState) {
	if !tx.aborted && !tx.casDirty {
		// Redis counts (multi=) what it queues: nothing once the
		// transaction is doomed.
		tx.listed++
		c.listedMulti.Store(int32(tx.listed))
	}
	mark := len(c.local.B)
	c.local.Simple("QUEUED")
	c.addLocal(mark)
	c.uncounted++ // counted if EXEC runs it
	tx.cmds = append(tx.cmds, c.ops[len(c.ops)-1].cmd)
	c.ops[len(c.ops)-1].cmd = 0 // so in commandstats too
}

// spliceLocals makes the client's EXEC reply from the node's, exec: if
// the transaction ran (an array), the queued local commands run now and
// their replies go in their places. Anything else (nil after a WATCH,
// an error) is the reply as it is, and the local commands do not run.
func (c *client) spliceLocals(exec []byte, locals []txLocal) []byte {
	if len(exec) < 4 || exec[0] != '*' || exec[1] == '-' {
		return exec
	}
	nl := bytes.IndexByte(exec, '\n')
	if nl < 3 {
		return exec
	}
	n, err := strconv.Atoi(string(exec[1 : nl-1]))
	if err != nil {
		return exec
	}
	out := append([]byte(nil), '*')
	out = strconv.AppendInt(out, int64(n+len(locals)), 10)
	out = append(out, "\r\n"...)
	rest := exec[nl+1:]
	li := 0
	for k := 0; k < n+len(locals); k++ {
		if li < len(locals) && locals[li].at == k {
			// Run as when not queued, keeping only the reply bytes.
			mark, nops := len(c.local.B), len(c.ops)
			locals[li].run(c, locals[li].args)
			out = append(out, c.local.B[mark:]...)
			c.local.B, c.ops = c.local.B[:mark], c.ops[:nops]
			li++
			continue
		}
		l, err := resp.ReplyLen(rest)
		if err != nil || l == 0 {
			return exec // not what a node sends: pass it on untouched
		}
		out, rest = append(out, rest[:l]...), rest[l:]
	}
	return out
}

// txForwardable are the commands the proxy answers itself or spreads over
// nodes that may still be queued in a transaction: its node answers them
// identically inside EXEC. CONFIG GET shows that node's own requirepass,
// maxclients, bind and port there; WAIT does not block inside EXEC.
var txForwardable = map[string]bool{
	"ping": true, "echo": true, "time": true, "select": true, "cluster|keyslot": true,
	"unwatch": true, "config|get": true, "wait": true,
}

func cmdMulti(c *client, args [][]byte) {
	if c.multi != nil {
		c.multi.fresh = false // this MULTI is logged as it is
		c.local.Error(resp.ErrMultiNested)
		return
	}
	c.multi = &txState{slot: -1, buf: resp.AppendCommand(nil, [][]byte{[]byte("MULTI")}), fresh: true}
	c.listedMulti.Store(0)
	c.local.OK()
}

func cmdDiscard(c *client, args [][]byte) {
	if c.multi == nil {
		c.local.Error(resp.ErrDiscardNoMulti)
		return
	}
	c.discardTx()
	c.releaseWatches(false)
	c.local.OK()
}

// discardTx ends the transaction. A node that never got it has not
// logged its MULTI, which the proxy then does (cmdExec sends it after).
func (c *client) discardTx() {
	if tx := c.multi; tx != nil && tx.multiLog != nil {
		c.srv.slowlog.Push(c.srv.routes[tx.multiLog.cmd].cmd, tx.multiLog.args, tx.multiLog.d, c.raddr, tx.multiLog.name, tx.multiLog.at)
	}
	c.multi = nil
	c.listedMulti.Store(-1)
}

// queueTx queues a checked command of an open transaction.
func (c *client) queueTx(r *route, args [][]byte, slot int) {
	tx := c.multi
	// Fan-out commands (DBSIZE, FLUSHALL, KEYS, SCAN, INFO ...) would run
	// on the transaction's one node only: a partial FLUSHALL or a DBSIZE
	// of one node, so they are refused like the proxy's own commands.
	if (r.kind == routeLocal || r.kind == routeOps) && !txForwardable[r.cmd.FullName] {
		if r.kind == routeLocal && txLocalCommands[r.cmd.FullName] {
			c.queueLocal(r.handler, args)
			return
		}
		c.reject(fmt.Sprintf(resp.ErrProxyNotInMulti, r.cmd.FullName))
		return
	}
	// A Redis Cluster node checks each command's slot as it is queued:
	// one nobody serves (here: its node is dead or unreachable) gets
	// CLUSTERDOWN, and EXEC then answers EXECABORT.
	if slot >= 0 && !c.srv.route.serving(uint16(slot)) {
		c.reject(resp.ErrClusterDownSlot)
		return
	}
	// Redis stops queueing once the transaction is doomed
	// (queueMultiCommand), so later commands do not count towards
	// EXEC's CROSSSLOT check.
	if slot >= 0 && !tx.aborted {
		if tx.slot < 0 {
			tx.slot = slot
		} else if tx.slot != slot && !tx.cross {
			tx.cross = true
			tx.crossCmd, tx.crossSlot = r.cmd.FullName, slot
			// EXEC's reply is settled now: CROSSSLOT, unless a
			// watched key has already changed, in which case Redis
			// queued nothing since and EXEC answers EXECABORT or nil.
			// Checking ends the WATCHes, which no longer matter.
			tx.casDirty = len(c.watch) > 0 && c.watchBroken()
			c.releaseWatches(true)
		}
	}
	if !tx.aborted && clientpause.MayWrite(r.cmd) {
		tx.mayWrite = true
	}
	tx.buf = resp.AppendCommand(tx.buf, args)
	tx.n++
	c.queueMonitored(tx, r.cmd, args)
	c.replyQueued(tx)
}

// cmdExec runs the open transaction on its slot's node.
func cmdExec(c *client, args [][]byte) {
	tx := c.multi
	mark := len(c.local.B)
	switch {
	case tx == nil:
		c.local.Error(resp.ErrExecNoMulti)
		c.addLocal(mark)
		return
	case tx.cross && !tx.casDirty:
		// Redis checks EXEC's slots before the transaction's state, so
		// CROSSSLOT wins over EXECABORT.
		c.discardTx()
		c.releaseWatches(false)
		c.srv.stats.crossSlot.Add(1)
		c.srv.cross.txRefused(c, tx.slot, tx.crossCmd, tx.crossSlot)
		c.fedCmd = nil // refused before it runs, as by a cluster node
		c.local.Error(resp.ErrCrossSlot)
		c.addLocal(mark)
		return
	case tx.aborted:
		c.discardTx()
		c.releaseWatches(false)
		c.local.Error(resp.ErrExecAbort)
		c.addLocal(mark)
		return
	case tx.cross:
		c.discardTx()
		c.releaseWatches(false)
		c.local.NullArray()
		c.addLocal(mark)
		return
	}
	tx.multiLog = nil // the node logs the MULTI it gets
	c.discardTx()
	c.feedQueued(tx)
	if len(tx.locals) > 0 {
		c.uncounted -= len(tx.locals) // run with EXEC
		defer func() {
			// The node's EXEC reply is the last op: the client gets it
			// with the local replies spliced in. The local commands
			// run even when the reply is dropped (finishBatch).
			last := &c.ops[len(c.ops)-1]
			node := *last
			if node.merge != nil {
				return
			}
			*last = op{exec: true, cmd: node.cmd, txCmds: node.txCmds, merge: func(c *client) {
				exec := c.local.B[node.start:node.end]
				if node.req != nil {
					exec = node.req.reply
				}
				// Redis runs them still in the transaction: CLIENT
				// LIST/INFO show flags=x and multi=<queued>.
				prev := c.listedMulti.Swap(int32(tx.listed))
				c.w.Raw(c.spliceLocals(exec, tx.locals))
				c.listedMulti.Store(prev)
			}}
			// EXEC ends the batch then: the commands after it, in the
			// same read, must see what the local ones changed (a name).
			c.finishAfter = true
		}()
	}
	// A transaction without keys runs on any node that answers, as a
	// Redis Cluster node runs one while the cluster is down.
	node := c.srv.anyNode()
	switch {
	case tx.slot >= 0:
		node = c.srv.route.ownerOf(uint16(tx.slot))
	case len(c.watch) > 0:
		for n := range c.watch {
			node = n
			break
		}
	}
	if node < 0 {
		c.releaseWatches(false)
		c.localError(resp.ErrClusterDownSlot)
		return
	}
	tx.buf = resp.AppendCommand(tx.buf, [][]byte{[]byte("EXEC")})
	c.uncounted -= tx.n // the node runs them
	if len(c.watch) == 0 {
		// One block on the shared connection: the node runs it whole.
		// Redirected, it goes whole to the new node (moved.go).
		var first, last *request
		s := c.sendTo(node)
		start := len(s.buf)
		s.buf = append(s.buf, tx.buf...)
		for range tx.n + 2 {
			last = c.newRequest()
			last.node = int32(node)
			if first == nil {
				first = last
			}
			s.reqs = append(s.reqs, last)
		}
		first.cmd, first.unit = s.buf[start:], int32(tx.n+2)
		c.addReq(last)
		c.ops[len(c.ops)-1].exec = true
		c.ops[len(c.ops)-1].txCmds = tx.cmds
		return
	}
	// A refused pipeline (refuse.go) runs no transaction: the WATCHes'
	// connections go, as their node-side state is unknown to reuse.
	c.finishBatch()
	if c.refused.on {
		c.releaseWatches(false)
		c.localError(resp.ErrClusterDown)
		c.ops[len(c.ops)-1].exec = true
		c.ops[len(c.ops)-1].txCmds = tx.cmds
		return
	}
	// A watched slot that moved since its WATCH: the WATCH was on a node
	// that could not see its keys change, and the transaction would run
	// without it on the new owner. EXEC fails as if they had changed; the
	// client's next WATCH goes to the new owner.
	if c.watchMoved() {
		c.releaseWatches(false)
		mark := len(c.local.B)
		c.local.NullArray()
		c.addLocal(mark)
		c.ops[len(c.ops)-1].exec = true
		c.ops[len(c.ops)-1].txCmds = tx.cmds
		return
	}
	// WATCHes elsewhere first: a nil from any of them aborts.
	for n, conn := range c.watch {
		if n == node {
			continue
		}
		replies := c.roundTripOn(conn, [][]byte{c.srv.emptyTransaction()}, 2)
		if v := decodeReply(replies[1]); v.Null || v.IsError() {
			c.releaseWatches(false)
			mark := len(c.local.B)
			if v.IsError() {
				c.local.Raw(replies[1])
			} else {
				c.local.NullArray()
			}
			c.addLocal(mark)
			c.ops[len(c.ops)-1].exec = true
			c.ops[len(c.ops)-1].txCmds = tx.cmds
			return
		}
	}
	conn := c.watch[node]
	var replies [][]byte
	if conn != nil {
		replies = c.roundTripOn(conn, [][]byte{tx.buf}, tx.n+2)
	} else {
		replies = c.roundTripShared(node, tx.buf, tx.n+2)
	}
	c.releaseWatches(true)
	mark = len(c.local.B)
	if txMoved(c.srv, replies) {
		// The slot moved since the WATCH: nothing ran, and the watched
		// keys are not on this node any more, which for the client is
		// as if they had changed: EXEC's null makes it try again (the
		// next WATCH goes to the new owner).
		c.local.NullArray()
	} else {
		c.local.Raw(replies[len(replies)-1])
	}
	c.addLocal(mark)
	c.ops[len(c.ops)-1].exec = true
	c.ops[len(c.ops)-1].txCmds = tx.cmds
}

// txMoved reports whether a MULTI ... EXEC block's replies show that the
// node refused it for a moved slot (a queued command or EXEC answered
// MOVED, and EXEC did not run); the new owner is noted.
func txMoved(s *Server, replies [][]byte) bool {
	exec := replies[len(replies)-1]
	if len(exec) == 0 || exec[0] != '-' {
		return false
	}
	for _, r := range replies {
		if s.movedReply(r) {
			return true
		}
	}
	return false
}

// watchBroken reports whether a watched key changed, by running an empty
// transaction on every WATCH connection (which ends the WATCHes: call it
// only when they no longer matter).
func (c *client) watchBroken() bool {
	broken := c.watchMoved()
	for _, conn := range c.watch {
		replies := c.roundTripOn(conn, [][]byte{c.srv.emptyTransaction()}, 2)
		if v := decodeReply(replies[1]); v.Null {
			broken = true
		}
	}
	return broken
}

// switchWatchProto moves the client's WATCH connections to protocol ver
// after HELLO, so that EXEC's reply reaches the client in its protocol
// (the node keeps the WATCHes across HELLO, as Redis does).
func (c *client) switchWatchProto(ver int) {
	for _, conn := range c.watch {
		if conn.proto != ver {
			c.roundTripOn(conn, [][]byte{resp.AppendCommand(nil, c.srv.unlogged([][]byte{[]byte("HELLO"), []byte(strconv.Itoa(ver))}))}, 1)
			conn.proto = ver
		}
	}
}

// cmdWatch sends WATCH on a dedicated connection to the keys' node.
func cmdWatch(c *client, args [][]byte) {
	if c.multi != nil {
		c.answerHere() // as Redis, which runs WATCH to refuse it
		mark := len(c.local.B)
		c.local.Error(resp.ErrWatchInMulti)
		c.addLocal(mark)
		return
	}
	// The commands before it first: one may refuse the pipeline
	// (refuse.go), and then the WATCH does not run either.
	c.finishBatch()
	if c.refused.on {
		c.localError(resp.ErrClusterDown)
		return
	}
	cmd := resp.AppendCommand(nil, args)
	slot := slots.Slot(args[1])
	rt := c.srv.route
	node := rt.ownerOf(slot)
	asking := false // the last reply was ASK: the target serves the keys now
	var reply []byte
	for hop := 0; ; hop++ {
		if node < 0 {
			c.localError(resp.ErrClusterDownSlot)
			return
		}
		conn, fresh := c.watch[node], false
		if conn == nil {
			c.finishBatch()
			var err error
			conn, err = rt.pool(node).dedicatedConn(c.w.Proto)
			if err != nil {
				c.localError(connFailMsg(err))
				return
			}
			if c.watch == nil {
				c.watch = map[int]*nodeConn{}
			}
			c.watch[node], fresh = conn, true
		}
		if asking {
			// ASKING's +OK is nobody's reply.
			reply = c.roundTripOn(conn, [][]byte{resp.AppendCommand(nil, askingCmd), cmd}, 2)[1]
		} else {
			reply = c.roundTripOn(conn, [][]byte{cmd}, 1)[0]
		}
		// The keys' slot moved, or is moving (ASK): WATCH them where
		// they are. A connection taken for this WATCH holds nothing and
		// goes back.
		if hop == maxRedirects || !isRedirect(reply) {
			break
		}
		next := -1
		switch rd := parseRedirect(reply); rd.kind {
		case redirectMoved:
			next, asking = rt.noteMoved(rd.slot, rd.addr), false
		case redirectAsk:
			rt.redirects.ask.Add(1)
			next, asking = rt.poolFor(rd.addr), true
		}
		if next < 0 {
			break
		}
		if fresh {
			delete(c.watch, node)
			rt.pool(node).release(conn)
		}
		node = next
	}
	if len(reply) > 0 && reply[0] != '-' {
		if c.watchedAt == nil {
			c.watchedAt = map[uint16]int{}
		}
		if prev, ok := c.watchedAt[slot]; ok && prev != node {
			node = -1 // watched on two nodes: one of them has lost sight of its keys
		}
		c.watchedAt[slot] = node
	}
	mark := len(c.local.B)
	c.local.Raw(reply)
	c.addLocal(mark)
}

// watchMoved reports whether a watched slot's owner is no longer the node
// it was watched on (it moved, or was moving: the WATCH followed an ASK).
// That node cannot see the keys change any more, so EXEC must fail as if
// they had.
func (c *client) watchMoved() bool {
	for slot, n := range c.watchedAt {
		if c.srv.route.ownerOf(slot) != n {
			return true
		}
	}
	return false
}

// emptyTransaction is the MULTI/EXEC the proxy runs on a WATCH
// connection to learn whether a WATCH broke (EXEC is never in the slow
// log; the MULTI is the proxy's, unlogged).
func (s *Server) emptyTransaction() []byte {
	return resp.AppendCommand(resp.AppendCommand(nil, s.unlogged([][]byte{[]byte("MULTI")})), [][]byte{[]byte("EXEC")})
}

// cmdUnwatch drops every WATCH (outside MULTI; inside, UNWATCH is queued
// like any command).
func cmdUnwatch(c *client, args [][]byte) {
	c.answerHere()
	for _, conn := range c.watch {
		c.roundTripOn(conn, [][]byte{resp.AppendCommand(nil, c.srv.unlogged(args))}, 1)
	}
	c.releaseWatches(true)
	mark := len(c.local.B)
	c.local.OK()
	c.addLocal(mark)
}

// roundTripOn sends encoded commands (n replies expected) on a dedicated
// connection after finishing the batch, and returns the raw replies.
func (c *client) roundTripOn(conn *nodeConn, data [][]byte, n int) [][]byte {
	c.finishMidCommand()
	var buf []byte
	for _, d := range data {
		buf = append(buf, d...)
	}
	reqs := make([]*request, n)
	for i := range reqs {
		reqs[i] = c.newRequest()
	}
	c.b.start(n, len(c.w.B))
	if !conn.send(reqs, buf) {
		for _, r := range reqs {
			r.failWith(resp.ErrClusterDownSlot)
		}
	}
	<-c.b.done
	out := make([][]byte, n)
	for i, r := range reqs {
		out[i] = append([]byte(nil), r.reply...)
	}
	c.nreq = 0
	c.refused.batchReset()
	return out
}

// roundTripShared sends encoded commands (n replies) on the client's
// shared connection to node after finishing the batch.
func (c *client) roundTripShared(node int, data []byte, n int) [][]byte {
	c.finishBatch()
	var conn *nodeConn
	err := errNodeDown
	if node >= 0 {
		conn, err = c.srv.route.pool(node).sharedConn(c.w.Proto, c.connIdx())
	}
	if err != nil {
		out := make([][]byte, n)
		for i := range out {
			out[i] = []byte("-" + connFailMsg(err) + "\r\n")
		}
		return out
	}
	return c.roundTripOn(conn, [][]byte{data}, n)
}
