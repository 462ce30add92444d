package node

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/cmdstats"
	"github.com/shardgate/shardgate/internal/outq"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// client is one connection's state. Fields under mu are read by other
// goroutines (CLIENT LIST, CLIENT KILL, INFO); the rest belong to the
// connection's own goroutine.
type client struct {
	srv *Server
	id  int64
	nc  net.Conn
	out *outq.Queue // replies the socket has not taken yet (flush)
	rd  *resp.Reader
	w   resp.Writer

	laddr, raddr string
	fd           int // socket descriptor for CLIENT LIST; -1 when unknown
	created      time.Time

	// lastCmd and lastAt (unix nanoseconds) are stored by the client's own
	// goroutine for every command and read by CLIENT LIST on other
	// goroutines; atomics keep the per-command cost to two stores.
	lastCmd atomic.Pointer[slots.Command]
	lastAt  atomic.Int64
	// listedMulti and listedWatch show other connections' CLIENT LIST
	// what only the own goroutine may touch: the number of commands the
	// open transaction holds (-1 outside MULTI; EXEC keeps it until it
	// ends, as Redis does) and the WATCH flag ('d' once a watched key
	// changed).
	listedMulti atomic.Int32
	listedWatch atomic.Pointer[engine.Watch]

	// mu guards the state other goroutines read (CLIENT LIST, INFO); the
	// client's own goroutine writes it only on rare commands (SETNAME,
	// HELLO, RESET, CLIENT NO-EVICT).
	mu      sync.Mutex
	name    string
	proto   int
	noEvict bool
	// readonly is READONLY's flag (under mu), shown as 'r' in CLIENT LIST.
	readonly bool

	authed  bool
	closing bool // close after this reply (QUIT, protocol error, KILL)
	// killed is set by CLIENT KILL from another connection as it closes
	// this one, so the client is neither listed nor killed twice while its
	// goroutine winds down.
	killed atomic.Bool
	// killedCh is closed with killed set: a client waiting out a CLIENT
	// PAUSE stops waiting (pause.go).
	killedCh chan struct{}
	// paused: a CLIENT PAUSE holds the client's command (pause.go);
	// CLIENT LIST shows it blocked, as Redis shows a postponed client.
	paused atomic.Bool
	// reply is the CLIENT REPLY state; only the own goroutine uses it.
	reply replyMode
	// replyFiltered: the command applied CLIENT REPLY to its reply as it
	// wrote it (EXEC, whose queued commands may change the mode).
	replyFiltered bool
	// fenceRefused: a command of the pipeline being served got TRYAGAIN
	// at a migration's fence, so the pipeline's later keyed commands get
	// it too, without running. A cluster client that retries a pipeline
	// whole when its first command fails with TRYAGAIN (go-redis) would
	// otherwise run the others twice: once where they ran or were
	// MOVED to, once more in the retry. A pipeline spans reads: see
	// pipelineGoesOn.
	fenceRefused bool
	// fenceRefusedAt is when fenceRefused was set; batchEnd is when the
	// last batch served under it ended, and moreWaiting whether more of
	// the client's bytes were there by then: a command still half read,
	// or bytes in the socket that no read had taken.
	fenceRefusedAt, batchEnd time.Time
	moreWaiting              bool
	// mark is where the current command's reply starts in w (CLIENT
	// REPLY drops it from there); a command that blocks flushes w and
	// resets it.
	mark int
	// blocked is the client's waiter while a blocking command waits
	// (CLIENT UNBLOCK reads it from other connections).
	blocked atomic.Pointer[waiter]

	multi *multiState // non-nil between MULTI and EXEC/DISCARD
	watch *watchState // non-nil while keys are WATCHed
	// txCtx is non-nil while EXEC runs the transaction's commands with the
	// keyspace locks held; node-level commands that read the keyspace use
	// it instead of locking (see multi.go).
	txCtx *engine.Ctx
	// txLog collects the write commands of the transaction EXEC runs,
	// logged as one record (persist.go).
	txLog *aof.Record
	// lsn is the log record the client's pending replies wait for;
	// synced is the last one known durable.
	lsn, synced uint64

	// nowMs and nowNs are the command clock, read once per batch of
	// pipelined commands (and every clockEvery commands within one) rather
	// than once per command: Redis too runs commands on a cached time.
	nowMs, nowNs int64
	// pendingCmds counts commands run (cmdEnd) or blocked (wait) not yet
	// added to the server's counter (total_commands_processed);
	// publishing once per batch keeps a shared atomic off the hot path.
	pendingCmds int64
	// cstats holds the commands' INFO commandstats notes until the
	// batch is published with pendingCmds (cmdstats.go).
	cstats cmdstats.Pending
	// errReplies counts the error replies written to c, which tells
	// whether a command failed (commandstats's failed_calls); errMark is
	// its value when the running command began (slowlog.go).
	errReplies, errMark int64
	// refusedRun: the running command refused itself as Redis refuses it
	// before running it (EXEC's cluster checks): a rejected call.
	refusedRun bool
	// running is the command between cmdBegin and cmdEnd; blockCounted
	// is set when it blocked and was counted then (wait), as Redis
	// counts a blocking command when it blocks.
	running      *slots.Command
	blockCounted bool

	// inLoop is set while the client is served inside rawio's ReadLoop;
	// held is a command that may block, left for after the loop.
	inLoop bool
	held   [][]byte

	// waited is how long the command being run was blocked, which the
	// slow log leaves out, and unblocked how the block ended, which
	// decides whether and how the slow log records it (slowlog.go).
	waited    time.Duration
	unblocked slowBlockEnd
	// slowMark is when the next command's time starts (slowlog.go).
	slowMark time.Duration
	// unlogged: the command being run is one the slow log does not take;
	// slowlogMicros: SLOWLOG GET gives each entry's time in microseconds
	// too. Both set by a proxy's SHARDGATE wrappers (proxycmds.go).
	unlogged, slowlogMicros bool
	// brief: the command runs with engine.Ctx.Brief (SHARDGATE BRIEF).
	brief bool
	// monitor is set by MONITOR (monitor.go).
	monitor bool

	keyBuf []int      // scratch for key indexes
	ctx    engine.Ctx // reused by every data command
	peek   [][]byte   // keys of the buffered commands, for prefetch
}

// replyMode is the CLIENT REPLY state of a connection.
type replyMode uint8

const (
	replyOn       replyMode = iota
	replyOff                // CLIENT REPLY OFF: drop every reply
	replySkipNext           // CLIENT REPLY SKIP was the current command
	replySkipThis           // drop the reply of the current command
)

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		srv:     s,
		nc:      nc,
		out:     outq.New(nc),
		rd:      resp.NewReader(nc),
		laddr:   nc.LocalAddr().String(),
		raddr:   nc.RemoteAddr().String(),
		fd:      redisinfo.ConnFD(nc),
		created: s.opts.Now(),
		proto:   2,
		authed:  s.cfg.RequirePass() == "",
		keyBuf:  make([]int, 0, 8),

		killedCh: make(chan struct{}),
	}
	c.w.Proto = 2
	c.w.OnError = func(msg string) {
		c.errReplies++
		s.errs.Record(msg)
	}
	c.rd.Unauthenticated = !c.authed
	c.lastAt.Store(c.created.UnixNano())
	c.listedMulti.Store(-1)
	return c
}

// setAuthed records the client's authentication state; the reader applies
// Redis's tighter request limits until a client has authenticated.
// ID, Authed, SetAuthed, SetName and SetProto let package conncmd
// answer HELLO and AUTH for the connection.
func (c *client) ID() int64         { return c.id }
func (c *client) Authed() bool      { return c.authed }
func (c *client) SetAuthed(ok bool) { c.setAuthed(ok) }
func (c *client) SetName(b []byte)  { c.setName(b) }
func (c *client) SetProto(p int)    { c.setProto(p) }

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

// setProto switches the reply protocol (HELLO, RESET).
func (c *client) setProto(p int) {
	c.w.Proto = p
	c.mu.Lock()
	c.proto = p
	c.mu.Unlock()
}

// afterCommand applies CLIENT REPLY OFF/SKIP to the reply the command just
// wrote from mark on, as Redis suppresses replies per command.
func (c *client) afterCommand(mark int) {
	filtered := c.replyFiltered
	c.replyFiltered = false
	switch c.reply {
	case replyOff:
		if !filtered {
			c.w.Truncate(mark)
		}
	case replySkipThis:
		if !filtered {
			c.w.Truncate(mark)
		}
		c.reply = replyOn
	case replySkipNext:
		c.reply = replySkipThis
	}
}

// serveClient reads and runs the client's commands until it goes away.
// Replies to a pipelined batch go out in one write, after the batch.
func (s *Server) serveClient(c *client) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("client goroutine panicked; connection closed", "client", c.id, "panic", r)
		}
		c.unwatchAll()
		c.publishStats()
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
	c.tick()
	rc, looped := c.nc.(*rawio.Conn)
	for {
		if !c.serveBatch() {
			return
		}
		if looped {
			c.inLoop = true
			err := rc.ReadLoop(c.rd.Space, c.onRead)
			c.inLoop = false
			if err != nil || c.held == nil {
				return // gone, or closing after a reply
			}
			// The loop was left for a command that may block (see
			// serveBatch): it runs here, where it may read the socket.
			args := c.held
			c.held = nil
			if !c.run(args) {
				return
			}
			continue
		}
		if s.draining.Load() {
			return // Close: every command read has had its reply
		}
		before := c.rd.Buffered()
		if err := c.rd.Fill(); err != nil {
			return
		}
		s.stats.netInput.Add(int64(c.rd.Buffered() - before))
		s.stats.reads.Add(1)
		c.tick()
		c.prefetch()
	}
}

// onRead is ReadLoop's handler: n more bytes are buffered. It runs the
// commands they complete; false leaves the loop, to close the connection
// or to run c.held.
func (c *client) onRead(n int) bool {
	c.rd.Advance(n, nil)
	c.srv.stats.netInput.Add(int64(n))
	c.srv.stats.reads.Add(1)
	c.tick()
	c.prefetch()
	return c.serveBatch() && c.held == nil && !c.srv.draining.Load()
}

// serveBatch runs the buffered commands and writes their replies; false
// means the connection is to close. Inside ReadLoop (c.inLoop) it stops
// before a command that may block, leaving it in c.held with its replies
// to earlier commands unwritten: a blocked client's goroutine watches the
// socket with a Read of its own, which the loop's hold on the socket's
// read side would keep waiting.
func (c *client) serveBatch() bool {
	if c.fenceRefused && !c.pipelineGoesOn() {
		c.fenceRefused = false
	}
	for n := 0; ; n++ {
		if n%clockEvery == clockEvery-1 {
			c.tick()
		}
		before := c.rd.Buffered()
		args, ok, err := c.rd.Next()
		if err != nil {
			var pe *resp.ProtocolError
			if asProtocolError(err, &pe) {
				c.srv.log.Debug("protocol error", "client", c.id, "addr", c.raddr, "err", pe.Msg)
				c.w.Error("ERR " + pe.Error())
			}
			c.flush()
			return false
		}
		if ok && int64(before-c.rd.Buffered()) > c.srv.opts.QueryBufferLimit && c.argOverQueryBufferLimit(args) {
			// Redis closed at the read that completed the argument,
			// before running the command; those before it ran.
			c.flush()
			return false
		}
		if !ok {
			if c.overQueryBufferLimit() {
				// The incomplete request (a huge argument still
				// arriving) is over it: closed without a reply.
				c.flush()
				return false
			}
			if c.fenceRefused {
				// Bytes already waiting were sent before the client
				// could read this batch's replies: the same pipeline,
				// however late the next read comes.
				c.batchEnd = time.Now()
				c.moreWaiting = c.rd.Buffered() > 0 || rawio.Unread(c.nc)
				if c.srv.fencedBatchEnd != nil {
					c.srv.fencedBatchEnd()
				}
			}
			break
		}
		if c.inLoop && slots.MayBlock(args[0]) {
			c.held = args
			return true
		}
		if !c.run(args) {
			return false
		}
	}
	if len(c.w.B) > 0 {
		// Let the other clients whose requests arrived with this
		// one run their batches first, so that the replies leave in
		// a burst, as from Redis's event loop (replies written in
		// beforeSleep). Written one by one as each batch ends, they
		// woke redis-benchmark 8 times as often (88,754 epoll_waits
		// per million GETs at -P 16, Redis 10,661; 12,396 with the
		// yield), and a client that wakes more serves fewer
		// requests: GET -P 16 went from 0.77-0.94x to 0.93-1.03x
		// redis-server, -P 1 from 0.80x to 0.88x.
		runtime.Gosched()
	}
	return c.flush()
}

// A pipeline refused at a fence goes on being refused while its bytes keep
// coming: more of them were already there when the last batch ended (a
// command cut in two, or bytes in the socket no read had taken), or the
// next read comes within fenceBatchGap of that end (a client that reads
// the replies before it sends again, as go-redis before a retry, which
// backs off 8 ms at least, leaves a longer gap); for at most
// fenceBatchMax, which bounds how long a connection that never pauses,
// the proxy's, is refused. Only a client that is itself descheduled for
// longer than fenceBatchGap in the middle of writing one pipeline is
// misjudged; a node descheduled between two reads (seen once at a load
// average of 26 on 2 cores, when only the gap counted) no longer is.
const (
	fenceBatchGap = 7 * time.Millisecond
	fenceBatchMax = time.Second
)

// pipelineGoesOn reports whether the bytes just read continue the
// pipeline whose earlier commands got TRYAGAIN at a fence.
func (c *client) pipelineGoesOn() bool {
	now := time.Now()
	if now.Sub(c.fenceRefusedAt) > fenceBatchMax {
		return false
	}
	return c.moreWaiting || now.Sub(c.batchEnd) < fenceBatchGap
}

// passFence waits for slot's fence, if any; false (TRYAGAIN) when the
// fence outlasted the wait or refused an earlier command of the client's
// pipeline.
func (s *Server) passFence(c *client, slot int) bool {
	if c.fenceRefused || !s.gate.awaitFence(slot) {
		c.refuseAtFence()
		return false
	}
	return true
}

// refuseAtFence marks the pipeline being served as refused at a fence.
func (c *client) refuseAtFence() {
	if !c.fenceRefused {
		c.fenceRefused = true
		c.fenceRefusedAt = time.Now()
	}
}

// overQueryBufferLimit reports, logging it, whether what Redis's query
// buffer would hold of the incomplete request (resp.Reader.Pending)
// exceeds QueryBufferLimit (Redis's client-query-buffer-limit), for which
// the client is closed. Whether it holds does not depend on how the bytes
// were split into reads.
func (c *client) overQueryBufferLimit() bool {
	n := c.rd.Pending()
	if int64(n) <= c.srv.opts.QueryBufferLimit {
		return false
	}
	c.logQueryBufferLimit(n)
	return true
}

// argOverQueryBufferLimit is overQueryBufferLimit for a whole command: one
// of its arguments alone is over the limit.
func (c *client) argOverQueryBufferLimit(args [][]byte) bool {
	n := resp.QueryBufOf(args)
	if int64(n) <= c.srv.opts.QueryBufferLimit {
		return false
	}
	c.logQueryBufferLimit(n)
	return true
}

func (c *client) logQueryBufferLimit(qbuf int) {
	c.srv.log.Warn("Closing client that reached max query buffer length",
		"client", c.id, "addr", c.raddr, "qbuf", qbuf, "limit", c.srv.opts.QueryBufferLimit)
}

// run executes one command; false means the connection is to close.
func (c *client) run(args [][]byte) bool {
	if c.killed.Load() {
		return false // CLIENT KILL: the rest of its pipeline does not run
	}
	c.mark = c.w.Len()
	c.srv.execute(c, args)
	if c.reply != replyOn {
		c.afterCommand(c.mark)
	}
	c.replyFiltered = false
	if c.closing {
		c.flush()
		return false
	}
	if len(c.w.B) > 64*1024 {
		ok := c.flush()
		c.slowMark = c.srv.slowClock() // the write to a slow reader is no command's time
		return ok
	}
	return true
}

// prefetch starts loading what the pipelined commands just read will look
// up first (engine.Keyspace.Prefetch), so that their cache misses overlap.
// A lone command gains nothing from it, nor does a pipeline on one key
// (PFADD or BITFIELD INCRBY on a counter), whose key stays in cache: when
// the first two keys are the same, the rest is not even looked at, which
// kept such pipelines from paying about 2% of their CPU for nothing.
func (c *client) prefetch() {
	keys := c.rd.PeekKeys(c.peek[:0], 2)
	if len(keys) == 2 && string(keys[0]) != string(keys[1]) {
		keys = c.rd.PeekKeys(keys[:0], maxPrefetch)
		c.srv.ks.Prefetch(keys)
	}
	clear(keys)
	c.peek = keys[:0]
}

// maxPrefetch bounds the commands of a batch prefetched at once: sixteen
// misses in flight is about what a core sustains, and a longer pipeline's
// later commands would be evicted again before they run.
const maxPrefetch = 32

// clockEvery bounds how many commands of one batch share a clock reading.
const clockEvery = 64

// tick reads the clock for the commands that follow.
func (c *client) tick() {
	t := c.srv.opts.Now()
	c.nowNs = t.UnixNano()
	c.nowMs = c.nowNs / 1e6
	c.slowMark = c.srv.slowClock()
}

// publishStats adds the client's pending counters to the server's.
func (c *client) publishStats() {
	if c.pendingCmds != 0 {
		c.srv.stats.commands.Add(c.pendingCmds)
		c.pendingCmds = 0
	}
	c.srv.cmdStats.Publish(&c.cstats)
}

func asProtocolError(err error, pe **resp.ProtocolError) bool {
	p, ok := err.(*resp.ProtocolError)
	if ok {
		*pe = p
	}
	return ok
}

// flush writes buffered replies; false means the connection is gone.
func (c *client) flush() bool {
	c.publishStats()
	if len(c.w.B) == 0 {
		return true
	}
	if c.lsn > c.synced {
		// The replies acknowledge writes: they go once the log holds
		// them (group commit with the other clients).
		if err := c.srv.aof.Wait(c.lsn); err != nil {
			c.srv.log.Error("append-only log write failed: the client's replies are withheld and its connection closed",
				"client", c.id, "err", err)
			c.w.Reset()
			return false
		}
		c.synced = c.lsn
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
	return err == nil
}
