package node

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// The blocking list commands and CLIENT UNBLOCK (see blocking.go for the
// model). Arguments are checked in Redis 7.0's order; the keys share one
// slot (the dispatcher answered CROSSSLOT otherwise).

func registerBlockingCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["blpop"] = func(c *client, args [][]byte) { s.cmdBpop(c, args, true) }
	h["brpop"] = func(c *client, args [][]byte) { s.cmdBpop(c, args, false) }
	h["blmove"] = s.cmdBlmove
	h["brpoplpush"] = s.cmdBrpoplpush
	h["blmpop"] = s.cmdBlmpop
	h["client|unblock"] = s.cmdClientUnblock
	registerStreamBlocking(s, h)
}

// cmdBpop is BLPOP and BRPOP key [key ...] timeout.
func (s *Server) cmdBpop(c *client, args [][]byte, front bool) {
	ms, errText := engine.ParseTimeout(args[len(args)-1])
	if errText != "" {
		c.w.Error(errText)
		return
	}
	s.block(c, &blockReq{op: opPop, keys: args[1 : len(args)-1], front: front, timeoutMs: ms})
}

// cmdBlmove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
func (s *Server) cmdBlmove(c *client, args [][]byte) {
	from, ok := parseLeftRight(args[3])
	if !ok {
		c.w.Error(resp.ErrSyntax)
		return
	}
	to, ok := parseLeftRight(args[4])
	if !ok {
		c.w.Error(resp.ErrSyntax)
		return
	}
	ms, errText := engine.ParseTimeout(args[5])
	if errText != "" {
		c.w.Error(errText)
		return
	}
	s.block(c, &blockReq{op: opMove, keys: args[1:2], dst: args[2], front: from, dstFront: to, timeoutMs: ms})
}

// cmdBrpoplpush is BRPOPLPUSH source destination timeout: BLMOVE RIGHT LEFT.
func (s *Server) cmdBrpoplpush(c *client, args [][]byte) {
	ms, errText := engine.ParseTimeout(args[3])
	if errText != "" {
		c.w.Error(errText)
		return
	}
	s.block(c, &blockReq{op: opMove, keys: args[1:2], dst: args[2], front: false, dstFront: true, timeoutMs: ms})
}

// cmdBlmpop is BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT
// count]: numkeys, the direction and COUNT are checked before the
// timeout, as Redis's lmpopGenericCommand does.
func (s *Server) cmdBlmpop(c *client, args [][]byte) {
	numkeys, ok := resp.ParseInt(args[2])
	if !ok || numkeys < 1 {
		c.w.Error(resp.ErrNumkeysNotPositive)
		return
	}
	if numkeys >= int64(len(args))-3 {
		c.w.Error(resp.ErrSyntax)
		return
	}
	whereIdx := 3 + int(numkeys)
	front, ok := parseLeftRight(args[whereIdx])
	if !ok {
		c.w.Error(resp.ErrSyntax)
		return
	}
	count := int64(-1)
	for j := whereIdx + 1; j < len(args); j++ {
		if count == -1 && equalFoldASCII(slots.CString(args[j]), "count") && j < len(args)-1 {
			j++
			n, ok := resp.ParseInt(args[j])
			if !ok || n < 1 {
				c.w.Error(resp.ErrMpopCountNotPositive)
				return
			}
			count = n
			continue
		}
		c.w.Error(resp.ErrSyntax)
		return
	}
	if count == -1 {
		count = 1
	}
	ms, errText := engine.ParseTimeout(args[1])
	if errText != "" {
		c.w.Error(errText)
		return
	}
	// count is at most the list's length in practice; cap it to an int.
	s.block(c, &blockReq{op: opMpop, keys: args[3:whereIdx], front: front, count: int(min(count, 1<<62)), timeoutMs: ms})
}

// parseLeftRight reads LEFT or RIGHT as Redis does, as a C string.
func parseLeftRight(b []byte) (front, ok bool) {
	b = slots.CString(b)
	switch {
	case equalFoldASCII(b, "left"):
		return true, true
	case equalFoldASCII(b, "right"):
		return false, true
	}
	return false, false
}

// block serves req at once when a key has elements, else blocks the
// client until it is served, times out, is unblocked or goes away.
// Inside EXEC (the locks are held) it never blocks: nothing to pop
// answers as a timeout, as Redis's CLIENT_DENY_BLOCKING does.
func (s *Server) block(c *client, req *blockReq) {
	sh := s.ks.ShardOf(req.keys[0])
	if c.txCtx != nil {
		if !s.tryServe(c, sh, req, c.txCtx.Now) {
			writeNothing(&c.w, req.op)
		}
		return
	}
	w := s.serveOrRegister(c, sh, req)
	if w != nil {
		s.wait(c, w)
	}
}

// serveOrRegister runs req under its shard lock: served at once (nil), or
// a waiter registered before the lock is released.
func (s *Server) serveOrRegister(c *client, sh *engine.Shard, req *blockReq) *waiter {
	s.ks.RLock()
	defer s.ks.RUnlock()
	sh.Lock()
	defer sh.Unlock()
	if msg := s.notServed(sh.Slot); msg != "" {
		c.refuseUnserved(msg) // the slot moved since the dispatcher's check
		return nil
	}
	if s.tryServe(c, sh, req, c.nowMs) {
		s.serveBlocked(sh, c.nowMs) // a BLMOVE may have fed another waiter
		return nil
	}
	w := newWaiter(req, sh.Slot, c)
	c.blocked.Store(w) // before blocked_clients counts it: see wait
	s.blk.register(w)
	return w
}

// tryServe is the non-blocking step: the first key (in argument order)
// holding a non-empty list is popped (moved) and the reply written. A
// key of another type answers WRONGTYPE, as Redis checks each key in turn
// (for the moves, the destination's type is checked by the move itself).
// False means every key is empty and nothing was written.
func (s *Server) tryServe(c *client, sh *engine.Shard, req *blockReq, now int64) bool {
	for _, key := range req.keys {
		n, wrongType := s.ks.ListLen(sh, key, now)
		if wrongType {
			c.w.Error(resp.ErrWrongType)
			return true
		}
		if n > 0 {
			s.popFor(&c.w, sh, req, key, now, c)
			return true
		}
	}
	return false
}

// newWaiter copies what req needs past the command (its arguments live
// in the connection's read buffer).
func newWaiter(req *blockReq, slot uint16, c *client) *waiter {
	w := &waiter{req: *req, slot: slot, proto: c.w.Proto, conn: c.nc, killed: &c.killed, done: make(chan struct{})}
	w.req.keys = make([][]byte, len(req.keys))
	for i, k := range req.keys {
		w.req.keys[i] = []byte(string(k))
	}
	if req.dst != nil {
		w.req.dst = []byte(string(req.dst))
	}
	for _, k := range req.keys {
		dup := false
		for _, x := range w.keys {
			if x == string(k) {
				dup = true
				break
			}
		}
		if !dup {
			w.keys = append(w.keys, string(k))
		}
	}
	return w
}

// wait blocks the client's goroutine on w. The replies of commands before
// this one are written first; the connection is read meanwhile (pipelined
// commands are buffered, not run) so that a client that disconnects or is
// killed is noticed at once and its waiter dropped.
//
// The caller stored w in c.blocked before registering it, under the
// shard lock: once INFO counts the client in blocked_clients, CLIENT
// UNBLOCK and CLIENT LIST must find it blocked too, as in Redis, where
// blocking is one step.
func (s *Server) wait(c *client, w *waiter) {
	defer c.blocked.Store(nil)
	began := s.slowClock()
	defer func() {
		c.waited = s.slowClock() - began
		switch w.state.Load() {
		case waitServed:
			c.unblocked = slowServed
		case waitUnblockTimeout, waitUnblockError:
			c.unblocked = slowUnblocked
		default:
			c.unblocked = slowUnserved
		}
	}()

	if cmd := c.running; cmd != nil {
		// Redis counts a blocking command as it blocks: INFO shows it
		// while it waits (published by the flush).
		c.pendingCmds++
		s.cmdStats.Blocked(&c.cstats, cmd.ID)
		c.blockCounted = true
	}
	if !c.flush() {
		s.blk.finish(w, waitGone)
		s.unlinkLocked(w)
		c.closing = true
		return
	}
	c.mark = 0 // the replies before this one are gone from c.w

	var timer *time.Timer
	if w.req.timeoutMs > 0 {
		d := time.Duration(w.req.timeoutMs) * time.Millisecond
		if w.req.timeoutMs < int64(maxTimeout/time.Millisecond) {
			timer = time.AfterFunc(d, func() { s.blk.finish(w, waitTimedOut) })
		}
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			before := c.rd.Buffered()
			err := c.rd.Fill()
			s.stats.netInput.Add(int64(c.rd.Buffered() - before))
			s.stats.reads.Add(1)
			if err != nil {
				readErr <- err
				return
			}
			if c.overQueryBufferLimit() {
				// A client that keeps sending while blocked.
				readErr <- errQueryBufferLimit
				return
			}
		}
	}()

	gone := false
	select {
	case <-w.done:
		// Stop the reader: a read deadline in the past ends its Read.
		c.nc.SetReadDeadline(time.Unix(1, 0))
		err := <-readErr
		c.nc.SetReadDeadline(time.Time{})
		gone = !errors.Is(err, os.ErrDeadlineExceeded)
	case <-readErr:
		gone = true
		if !s.blk.finish(w, waitGone) {
			<-w.done
		}
	}
	if timer != nil {
		timer.Stop()
	}
	state := w.state.Load()
	if state != waitServed {
		s.unlinkLocked(w)
	}
	if gone {
		c.closing = true
		if state != waitServed || !s.draining.Load() {
			return
		}
		// Woken by Close, which shut only the socket's read side, after
		// the waiter was served: the client is still there to get what
		// was popped for it (the reply goes out before the close).
	}
	switch state {
	case waitServed:
		c.w.Raw(w.reply)
		if len(w.reply) > 0 && w.reply[0] == '-' {
			c.errReplies++ // counted in errorstats where it was written
		}
		c.lsn = max(c.lsn, w.lsn)
	case waitUnblockError:
		c.w.Error(resp.ErrUnblocked)
	default:
		if w.req.op == opWait {
			c.w.Int(0) // the replicas that acknowledged: none
		} else {
			c.w.NullArray()
		}
	}
	c.tick()
}

var errQueryBufferLimit = errors.New("query buffer limit reached while blocked")

// maxTimeout is the longest timeout kept as a timer; longer ones (Redis
// takes up to ~292 million years) block forever in practice.
const maxTimeout = 100 * 365 * 24 * time.Hour

// cmdClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client
// was blocked and is now unblocked, else 0. TIMEOUT (the default) gives
// it its timeout reply, ERROR the UNBLOCKED error.
func (s *Server) cmdClientUnblock(c *client, args [][]byte) {
	if len(args) > 4 {
		c.w.Error(fmt.Sprintf(resp.ErrSubcommandSyntax, args[1], "CLIENT"))
		return
	}
	state := waitUnblockTimeout
	if len(args) == 4 {
		switch {
		case equalFoldASCII(slots.CString(args[3]), "timeout"):
		case equalFoldASCII(slots.CString(args[3]), "error"):
			state = waitUnblockError
		default:
			c.w.Error(resp.ErrUnblockReason)
			return
		}
	}
	id, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(resp.ErrNotInteger)
		return
	}
	if cl, ok := s.lookupClient(id); ok {
		if w := cl.blocked.Load(); w != nil && s.blk.finish(w, state) {
			if state == waitUnblockError {
				// Redis writes the UNBLOCKED error during this call, and
				// its one error count makes the call itself failed too
				// (commandstats's failed_calls).
				c.errReplies++
			}
			c.w.Int(1)
			return
		}
	}
	c.w.Int(0)
}
