package proxy

import (
	"bytes"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/cmdstats"
	"github.com/shardgate/shardgate/internal/outq"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// client is one client connection. Fields under mu are read by other
// goroutines (CLIENT LIST, INFO); the rest belong to the client's own
// goroutine.
type client struct {
	srv *Server
	id  int64
	nc  net.Conn
	out *outq.Queue // replies the socket has not taken yet (flush)
	rd  *resp.Reader
	w   resp.Writer // replies not yet written to the client

	laddr, raddr string
	created      time.Time
	lastCmd      atomic.Pointer[slots.Command]
	lastAt       atomic.Int64 // statClock at the end of the last batch
	// listedMulti is what other connections' CLIENT LIST shows as
	// multi=: the commands the open transaction holds, -1 outside MULTI.
	listedMulti atomic.Int32

	// segIndex are the segmented SETBITs of the batch whose index
	// commands run once the batch's replies are in (segments.go).
	segIndex []*segmentBit

	mu    sync.Mutex
	name  string
	proto int
	// noEvict is CLIENT NO-EVICT's flag (under mu).
	noEvict bool
	// readonly is READONLY's flag (under mu), shown as 'r' in CLIENT LIST.
	readonly bool

	authed  bool
	closing bool
	// returning: the batch holds only what the proxy gives back for a
	// client that has gone (returnPopped), whose redirections are
	// followed all the same: they are the proxy's commands, not the
	// client's, which it might send again elsewhere.
	returning bool
	// refusedHTTP: the client sent an HTTP request; it is dropped
	// without any reply, even those owed from the same batch (Redis's
	// securityWarningCommand).
	refusedHTTP bool
	killed      atomic.Bool
	// killedCh is closed with killed set: a client waiting out a CLIENT
	// PAUSE stops waiting (pause.go).
	killedCh chan struct{}
	// paused: a CLIENT PAUSE holds the client's command (pause.go);
	// CLIENT LIST and INFO count it blocked, as Redis counts a postponed
	// client.
	paused atomic.Bool
	// monitor is set by MONITOR, monitorStart until its reply is written
	// and other clients' lines may follow; ownLines is the line of its
	// own command, put after the command's reply (handle).
	monitor, monitorStart bool
	ownLines              []byte
	// fedCmd is the command being handled once it is routed, for the
	// monitors; nil if it was refused.
	fedCmd *slots.Command
	reply  replyMode
	// finishAfter: the command just handled ends the batch (an EXEC
	// whose local commands change what later commands see).
	finishAfter bool

	// The current batch: ops in the client's order, the requests they
	// wait for, and the encoded commands per node.
	b     *batch
	ops   []op
	local resp.Writer // replies the proxy made itself, referenced by ops
	reqs  []*request  // request pool; reqs[:nreq] are in use
	nreq  int
	// uncounted is how many of the batch's ops total_commands_processed
	// leaves out, as Redis counts only what call() runs: commands
	// refused before running (unknown, arity, NOAUTH, CROSSSLOT) and
	// commands queued by MULTI, which count when EXEC runs them (so an
	// EXEC adds its transaction's commands: negative).
	uncounted int
	// The command being handled, as op.cmd and op.blocking note it; the
	// current batch's start on the stats clock (0: no command yet); the
	// batch's commandstats notes (cmdstats.go).
	curCmd      int32
	curBlocking bool
	// curBlockCounted: the command blocked and was counted then
	// (blockingCall), as Redis counts a blocking command.
	curBlockCounted bool
	// logHere: the routeOps command being handled is answered by the
	// proxy (its nodes got only commands of the proxy's own, unlogged),
	// so the proxy's slow log takes it (runOps).
	logHere   bool
	statStart int64
	cstats    cmdstats.Pending
	sends     []nodeSend // by node index
	// conns caches the client's shared connection per node (for the
	// current protocol), so a batch takes no pool lock.
	conns  []*nodeConn
	keyBuf []int
	split  splitScratch // the batch's split commands' parts (split.go)

	m clientMetrics // this batch's commands, for metrics (metrics.go)

	multi *txState          // between MULTI and EXEC/DISCARD
	watch map[int]*nodeConn // dedicated connections holding WATCHes, by node
	// watchedAt is the node each watched slot was watched on: a slot
	// that has moved since makes EXEC fail (watchMoved).
	watchedAt map[uint16]int

	// blocked is set while a blocking command waits on a node; pending
	// holds the commands read meanwhile (blocking.go).
	blocked     atomic.Pointer[blockState]
	pending     [][][]byte
	pendingSize int
	pendingRaw  []int // each pending command's bytes as it came

	// refused: the first command of the pipeline being served could not
	// reach its node, so the pipeline's later commands are refused too;
	// readHead: the command being handled starts a pipeline (refuse.go).
	refused  pipelineRefusal
	readHead bool
	readCmds int // commands handled since the last read
}

// op is one command's place in the reply stream.
type op struct {
	// Exactly one of these says where the reply comes from: a request's
	// raw reply, bytes in c.local, or a merge over several requests.
	req        *request
	start, end int
	merge      func(c *client)
	skip       bool // CLIENT REPLY OFF/SKIP
	// exec: the reply is EXEC's, whose elements are the transaction's
	// replies, each error among them counted in errorstats as Redis
	// counts the failed commands of a transaction.
	exec bool

	// INFO commandstats (cmdstats.go): the command's ID + 1 (0: counted
	// nowhere, as an unknown command or one queued by MULTI), whether the
	// proxy refused it before it ran, whether it may block (its wait is
	// not its time), and for EXEC the IDs + 1 of its queued commands.
	cmd      int32
	rejected bool
	blocking bool
	txCmds   []int32
	// unblockError: a CLIENT UNBLOCK ... ERROR, failed if it unblocked.
	unblockError bool
	// blockCounted: counted when it blocked; its end adds only its
	// outcome.
	blockCounted bool
}

// nodeSend gathers one batch's commands for a node.
type nodeSend struct {
	buf  []byte
	reqs []*request
	// sent is how much of buf has been sent: redirected commands are
	// appended after it (moved.go) and buf is kept until the batch ends.
	sent int
	used bool // had requests in the last dispatch (latency accounting)
	// err is why the node cannot be sent to in this dispatch (nil: it
	// can, on conns[i]).
	err error
}

// replyMode is the CLIENT REPLY state of a connection.
type replyMode uint8

const (
	replyOn       replyMode = iota
	replyOff                // CLIENT REPLY OFF: drop every reply
	replySkipNext           // CLIENT REPLY SKIP was the current command
	replySkipThis           // drop the reply of the current command
)

// Batch bounds: a client's pipeline is forwarded in chunks so that a
// pipeline of any length needs bounded memory.
const (
	maxBatchOps   = 1024
	maxBatchBytes = 1 << 20
)

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		srv:     s,
		nc:      nc,
		out:     outq.New(nc),
		rd:      resp.NewReader(nc),
		laddr:   nc.LocalAddr().String(),
		raddr:   nc.RemoteAddr().String(),
		created: s.opts.Now(),
		proto:   2,
		authed:  s.cfg.RequirePass() == "",
		b:       newBatch(s.opts.ClientOutputLimit),
		sends:   make([]nodeSend, s.route.numPools()),
		conns:   make([]*nodeConn, s.route.numPools()),
		keyBuf:  make([]int, 0, 8),

		killedCh: make(chan struct{}),
	}
	c.w.Proto = 2
	c.local.Proto = 2
	c.rd.Unauthenticated = !c.authed
	c.lastAt.Store(s.statClock())
	c.listedMulti.Store(-1)
	return c
}

// ID, Authed, SetAuthed, SetName and SetProto let package conncmd
// answer HELLO and AUTH for the connection.
func (c *client) ID() int64         { return c.id }
func (c *client) Authed() bool      { return c.authed }
func (c *client) SetAuthed(ok bool) { c.setAuthed(ok) }
func (c *client) SetName(b []byte)  { c.setName(b) }
func (c *client) SetProto(p int)    { c.setProto(p); c.switchWatchProto(p) }

func (c *client) setAuthed(ok bool) {
	c.authed = ok
	c.rd.Unauthenticated = !ok
}

// authRequired is Redis's authRequired: the client has not authenticated
// and a password is set now. A password cleared by CONFIG SET frees the
// clients that connected while it was set (and lifts the reader's
// tighter limits for them); one set again binds them again.
func (c *client) authRequired() bool {
	if c.authed {
		return false
	}
	need := c.srv.cfg.RequirePass() != ""
	c.rd.Unauthenticated = need
	return need
}

func (c *client) setProto(p int) {
	clear(c.conns) // the connections speak the old protocol
	c.w.Proto = p
	c.local.Proto = p
	c.mu.Lock()
	c.proto = p
	c.mu.Unlock()
}

// connIdx is the client's shared connection per node: fixed, so that its
// commands to one node keep their order.
func (c *client) connIdx() int { return int(c.id % int64(c.srv.opts.ConnsPerNode)) }

// serveClient reads the client's commands until it goes away. Each batch
// of pipelined commands is forwarded at once and answered in one write.
func (s *Server) serveClient(c *client) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("client goroutine panicked; connection closed", "client", c.id, "panic", r)
		}
		c.discardTx() // a transaction left open: its MULTI is logged
		c.releaseWatches(false)
		c.out.Wait() // the last replies (QUIT's) go before the close; a close from elsewhere ends the wait
		if s.draining.Load() {
			// Closed by Close: the replies written must reach the client
			// (the force after the grace period closes it anyway).
			rawio.CloseWhenSent(c.nc, s.opts.ShutdownGrace)
		} else {
			c.nc.Close()
		}
		s.removeClient(c)
	}()
	for {
		for {
			before := c.rd.Buffered()
			args, ok, err := c.next()
			if ok && int64(before-c.rd.Buffered()) > s.opts.QueryBufferLimit && c.argOverQueryBufferLimit(args) {
				// Redis closed at the read that completed the argument,
				// before running the command; those before it ran.
				c.finishBatch()
				c.flush()
				return
			}
			if err != nil {
				var pe *resp.ProtocolError
				if errors.As(err, &pe) {
					c.finishBatch()
					c.w.Error("ERR " + pe.Error())
					s.errs.Record("ERR")
				}
				c.finishBatch()
				c.flush()
				return
			}
			if !ok {
				if c.queryBufferExceeded() {
					c.finishBatch()
					c.flush()
					return
				}
				break
			}
			if c.killed.Load() {
				// Killed (CLIENT KILL, or the end of the shutdown
				// grace): the rest of its pipeline is not run.
				return
			}
			head := c.readHead
			c.handle(args)
			c.readHead = false
			c.readCmds++
			if head && !c.refused.on && c.srv.route.someDown() {
				c.settleHead()
			}
			if c.closing {
				c.finishBatch()
				if c.refusedHTTP {
					c.w.Reset()
				}
				c.flush()
				return
			}
			if len(c.ops) >= maxBatchOps || c.pendingBytes() >= maxBatchBytes {
				c.finishBatch()
				if len(c.w.B) > 64*1024 && !c.flush() {
					return
				}
			}
		}
		c.finishBatch()
		c.refusedBatchEnd()
		if !c.flush() {
			return
		}
		if c.monitorStart {
			c.startMonitor()
		}
		if c.rd.Buffered() == 0 {
			// Let the other ready clients run before reading: by the
			// time this one reads, its next request has often arrived,
			// where an immediate read would find nothing (EAGAIN), park
			// the goroutine and wait for the poller to wake it. At GET
			// -P 1, 50 clients (A/B, 10 interleaved rounds): 2.4 -> 1.9
			// reads per request, 13% more requests per second (median
			// of the per-round ratios), less CPU per request in the
			// proxy and in the nodes; at -P 16, 11% more.
			runtime.Gosched()
		}
		if s.draining.Load() {
			return // Close: every command read has had its reply
		}
		before := c.rd.Buffered()
		if err := c.rd.Fill(); err != nil {
			return
		}
		c.refusedNextRead()
		s.stats.netInput.Add(int64(c.rd.Buffered() - before))
		s.stats.reads.Add(1)
	}
}

func (c *client) pendingBytes() int {
	n := len(c.local.B)
	for i := range c.sends {
		n += len(c.sends[i].buf)
	}
	return n
}

// flush writes buffered replies; false means the connection is gone.
func (c *client) flush() bool {
	if len(c.w.B) == 0 {
		return true
	}
	// Never waits on the socket: a client that writes a whole pipeline
	// before reading would otherwise leave both sides waiting (outq).
	err := c.out.Write(c.w.B)
	c.srv.stats.netOutput.Add(int64(len(c.w.B)))
	c.srv.stats.writes.Add(1)
	if cap(c.w.B) > 1<<20 {
		c.w.B = nil
	} else {
		c.w.Reset()
	}
	if err == nil && c.outputExceeded() {
		return false
	}
	return err == nil
}

// finishMidCommand finishes the batch before the command being handled
// makes round trips of its own; the command's time (commandstats) starts
// then, not at the batch's start, which finishBatch has cleared.
func (c *client) finishMidCommand() {
	c.finishBatch()
	if c.statStart == 0 {
		c.statStart = c.srv.statClock()
	}
}

// newRequest takes a request from the client's pool.
func (c *client) newRequest() *request {
	if c.nreq == len(c.reqs) {
		c.reqs = append(c.reqs, &request{b: c.b})
	}
	r := c.reqs[c.nreq]
	c.nreq++
	r.cmd, r.node, r.unit, r.head, r.info = nil, noOwner, 0, false, nil
	return r
}

// forward queues args for node n and returns the request that will carry
// the reply. n is noOwner for a slot nobody serves: the reply is
// CLUSTERDOWN, sent nowhere.
func (c *client) forward(n int, args [][]byte) *request {
	r := c.newRequest()
	if n < 0 {
		r.preset(resp.ErrClusterDownSlot)
		return r
	}
	s := c.sendTo(n)
	start := len(s.buf)
	s.buf = resp.AppendCommand(s.buf, args)
	r.node, r.unit, r.cmd = int32(n), 1, s.buf[start:]
	s.reqs = append(s.reqs, r)
	return r
}

// sendTo returns the batch's commands for node n, making room for nodes
// the proxy met since the client's last look.
func (c *client) sendTo(n int) *nodeSend {
	if n >= len(c.sends) {
		c.grow()
	}
	return &c.sends[n]
}

// grow sizes the per-node scratch to the proxy's current number of pools.
func (c *client) grow() {
	n := c.srv.route.numPools()
	if n > len(c.sends) {
		c.sends = append(c.sends, make([]nodeSend, n-len(c.sends))...)
	}
	if n > len(c.conns) {
		c.conns = append(c.conns, make([]*nodeConn, n-len(c.conns))...)
	}
}

// addLocal closes a reply the proxy wrote into c.local since mark.
func (c *client) addLocal(mark int) {
	c.ops = append(c.ops, op{start: mark, end: len(c.local.B), cmd: c.curCmd, blocking: c.curBlocking, blockCounted: c.curBlockCounted})
}

// addReq adds a forwarded command's reply to the stream.
func (c *client) addReq(r *request) {
	c.ops = append(c.ops, op{req: r, cmd: c.curCmd, blocking: c.curBlocking})
}

// addMerge adds a reply computed from several requests once they are in.
func (c *client) addMerge(f func(c *client)) {
	c.ops = append(c.ops, op{merge: f, cmd: c.curCmd, blocking: c.curBlocking})
}

// dispatch sends the batch's commands to their nodes and waits for every
// reply, following the nodes' redirections (moved.go). A node that cannot
// be reached fails its requests at once.
//
// It returns the stats clock when the replies were in, or 0 if nothing was
// sent: one clock read serves the node latency and the batch's
// commandstats (each read costs tens of nanoseconds, and at -P 1 a batch
// is one command).
func (c *client) dispatch() (end int64) {
	if c.nreq == 0 {
		return 0
	}
	start := c.srv.statClock()
	if !c.sendQueued() {
		return 0
	}
	end = c.srv.statClock()
	d := time.Duration(end - start)
	for i := range c.sends {
		if c.sends[i].used {
			c.srv.route.pool(i).latency.add(d)
			c.sends[i].used = false
		}
	}
	if c.followRedirects() {
		end = c.srv.statClock()
	}
	for i := range c.sends {
		s := &c.sends[i]
		s.sent = 0
		if cap(s.buf) > 1<<20 {
			s.buf = nil
		} else {
			s.buf = s.buf[:0]
		}
	}
	return end
}

// sendQueued sends what the nodes' sends hold beyond what was sent and
// waits for the replies; false if there was nothing to send.
//
// Every node's connection is made ready first: when the node of a
// pipeline's first command cannot be reached, the commands after it are
// refused, wherever they go (refuse.go).
func (c *client) sendQueued() bool {
	total := 0
	for i := range c.sends {
		total += len(c.sends[i].reqs)
	}
	if total == 0 {
		return false
	}
	c.b.start(total, len(c.w.B))
	refuse := c.refused.refuses()
	for i := range c.sends {
		s := &c.sends[i]
		if len(s.reqs) == 0 {
			continue
		}
		if s.err = c.connect(i); s.err != nil && s.reqs[0].head && refusesOn(connFailMsg(s.err)) {
			refuse = true
		}
	}
	if refuse {
		c.refused.begin()
	}
	for i := range c.sends {
		s := &c.sends[i]
		if len(s.reqs) == 0 {
			continue
		}
		reqs, refused := s.reqs, []*request(nil)
		if s.err == nil && refuse {
			reqs, refused = nil, reqs
		}
		if len(reqs) > 0 {
			if msg := c.sendNode(i, s.err, reqs, s.buf[s.sent:]); msg == "" {
				// Only what reaches the node counts as its requests
				// and latency: CLUSTERDOWN answered here is neither.
				s.used = true
				c.srv.route.pool(i).requests.Add(int64(len(reqs)))
			} else {
				if reqs[0].head && refusesOn(msg) {
					c.refused.begin()
				}
				for _, r := range reqs {
					r.failWith(msg)
				}
			}
		}
		for _, r := range refused {
			r.failWith(resp.ErrClusterDown)
		}
		s.err = nil
		clear(s.reqs)
		s.reqs = s.reqs[:0]
		s.sent = len(s.buf)
	}
	<-c.b.done
	return true
}

// connect readies c.conns[i], the client's connection to node i.
func (c *client) connect(i int) error {
	p := c.srv.route.pool(i)
	if !p.served() {
		return errNodeDown
	}
	if conn := c.conns[i]; conn != nil && !conn.isBroken() {
		return nil
	}
	conn, err := p.sharedConn(c.w.Proto, c.connIdx())
	c.conns[i] = conn
	return err
}

// sendNode sends reqs, encoded as data, on the connection connect readied
// (or failed to: err), and returns "" or the error reply for them.
func (c *client) sendNode(i int, err error, reqs []*request, data []byte) string {
	conn := c.conns[i]
	ok := err == nil && conn.send(reqs, data)
	if !ok && err == nil {
		// The connection broke since it was cached (nothing was
		// queued on it): one fresh one.
		p := c.srv.route.pool(i)
		if conn, err = p.sharedConn(c.w.Proto, c.connIdx()); err == nil {
			c.conns[i] = conn
			ok = conn.send(reqs, data)
		}
	}
	switch {
	case ok:
		return ""
	case err != nil:
		return connFailMsg(err)
	case conn != nil:
		return conn.failMsg()
	}
	return resp.ErrClusterDownSlot
}

// finishBatch forwards what the batch holds, waits for the replies and
// appends every reply, in order, to c.w.
func (c *client) finishBatch() {
	if len(c.ops) == 0 {
		return
	}
	end := c.dispatch()
	if len(c.segIndex) > 0 {
		if e := c.recordSegments(); e != 0 {
			end = e
		}
	}
	if end == 0 {
		end = c.srv.statClock()
	}
	for i := range c.ops {
		if c.b.over.Load() && c.outputExceeded() {
			break // replies were dropped as they arrived: closed
		}
		o := &c.ops[i]
		mark := len(c.w.B)
		// A reply CLIENT REPLY OFF or SKIP drops is made all the same
		// (a transaction's local commands run, its errors count) and
		// then cut.
		switch {
		case o.req != nil:
			c.w.Raw(o.req.reply)
		case o.merge != nil:
			o.merge(c)
		default:
			c.w.Raw(c.local.B[o.start:o.end])
		}
		failed := false
		if len(c.w.B) > mark {
			switch r := c.w.B[mark:]; {
			case r[0] == '-' || r[0] == '!':
				c.srv.errs.Record(errorReplyMsg(r))
				failed = true
				if !o.rejected && isRefusal(r) {
					// Refused before running, as a cluster node
					// refuses: not in total_commands_processed.
					o.rejected = true
					c.uncounted++
				}
			case o.exec:
				c.recordElementErrors(r, o.txCmds)
			}
		}
		if o.unblockError && string(c.w.B[mark:]) == ":1\r\n" {
			failed = true
		}
		if o.blockCounted {
			c.uncounted++ // counted when it blocked
		}
		if o.exec && !isArrayReply(c.w.B[mark:]) {
			// The transaction did not run (a WATCH failed, or an
			// error): its commands are not processed.
			c.uncounted += len(o.txCmds)
		}
		c.countOp(o, c.w.B[mark:], failed, end)
		if o.skip {
			c.w.B = c.w.B[:mark]
		}
		if c.outputExceeded() || c.killed.Load() {
			break // closed: the replies have nobody to go to
		}
	}
	c.srv.stats.commands.Add(int64(len(c.ops) - c.uncounted))
	c.uncounted = 0
	c.srv.cmdStats.Publish(&c.cstats)
	c.statStart = 0
	c.batchDone(end)
	clear(c.ops)
	c.ops = c.ops[:0]
	for _, r := range c.reqs[:c.nreq] {
		if cap(r.reply) > 64*1024 {
			r.reply = nil
		}
		r.cmd = nil
	}
	c.nreq = 0
	c.refused.batchReset()
	c.split.reset()
	c.local.Reset()
	if cap(c.local.B) > 1<<20 {
		c.local.B = nil
	}
}

// errorReplyMsg is the message of the error reply at the start of b: a
// simple error ("-ERR ...\r\n") or a RESP3 blob error ("!<n>\r\n...").
// Only its first word, the code, is kept by INFO, so a blob error's text
// is cut at its first line.
func errorReplyMsg(b []byte) string {
	if b[0] == '!' {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return ""
		}
		b = b[i:]
	}
	b = b[1:]
	if i := bytes.IndexByte(b, '\r'); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// recordElementErrors counts the error replies among the elements of the
// array reply b (EXEC's), and the transaction's commands, txCmds, in
// commandstats.
func (c *client) recordElementErrors(b []byte, txCmds []int32) {
	if b[0] != '*' {
		return
	}
	i := bytes.IndexByte(b, '\n')
	n, err := strconv.Atoi(string(b[1:max(i-1, 1)]))
	if i < 0 || err != nil {
		return
	}
	b = b[i+1:]
	for j := range n {
		l, err := resp.ReplyLen(b)
		if err != nil || l == 0 {
			return
		}
		failed := b[0] == '-' || b[0] == '!'
		if failed {
			c.srv.errs.Record(errorReplyMsg(b[:l]))
		}
		if j < len(txCmds) && txCmds[j] != 0 {
			// Timed as part of EXEC: the proxy does not see the node
			// run them one by one.
			c.srv.cmdStats.Call(&c.cstats, int(txCmds[j]-1), 0, failed)
		}
		b = b[l:]
	}
}

// roundTrip runs commands on the given nodes now, outside the batch
// (which must be empty), and returns their replies decoded. Used by
// multi-step operations (SCAN across nodes, segmented bitmaps).
func (c *client) roundTrip(nodes []int, cmds [][][]byte) []resp.Value {
	c.finishMidCommand()
	reqs := make([]*request, len(cmds))
	for i, args := range cmds {
		reqs[i] = c.forward(nodes[i], args)
	}
	c.dispatch()
	if c.b.over.Load() {
		c.outputExceeded() // the replies were dropped; the client is closed
	}
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		out[i] = decodeReply(r.reply)
		r.cmd = nil
	}
	c.nreq = 0
	c.refused.batchReset()
	return out
}

// decodeReply decodes a complete reply, copying it so that the value
// outlives the request's buffer.
func decodeReply(b []byte) resp.Value {
	v, n, err := resp.ParseValue(append([]byte(nil), b...))
	if err != nil || n == 0 { // n == 0: dropped over the output limit
		return resp.Value{Type: '-', Str: []byte("ERR bad reply from node")}
	}
	return v
}

// releaseWatches gives back the dedicated connections of WATCH. With
// clean set, the node-side WATCHes are already gone (EXEC, DISCARD,
// UNWATCH) and the connections can be reused; otherwise they are closed,
// which drops the node's state with them.
func (c *client) releaseWatches(clean bool) {
	for n, conn := range c.watch {
		if clean {
			c.srv.route.pool(n).release(conn)
		} else {
			conn.nc.Close()
		}
	}
	c.watch = nil
	c.watchedAt = nil
}
