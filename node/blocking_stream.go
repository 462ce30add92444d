package node

import (
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
)

// Blocked stream readers: XREAD and XREADGROUP with BLOCK, as Redis
// 7.0's t_stream.c and blocked.c run them, on the waiters of blocking.go
// (same queues, states, timeouts, CLIENT UNBLOCK and INFO counters).
//
// The engine parses, resolves ids and serves (engine/stream_read.go);
// here a read that found nothing registers a waiter (op opStream) on each
// of its keys, under the same shard lock, with its ids resolved then:
// XREAD's "$" is the stream's last id at that instant.
//
// Waking. The keyspace calls OnStreamReady (onStreamReady) when a stream
// gets an entry (XADD), loses a group (XGROUP DESTROY), or a stream key is
// deleted, replaced or stored (DEL, SET, RENAME, COPY, expiry, FLUSHALL),
// and the key is noted as ready like a pushed list. After the command,
// serveStreamKey offers the key to each of its stream readers in FIFO
// order: every XREAD whose id is below the stream's last id is answered
// (one XADD serves them all, unlike a list's element), XREADGROUP readers
// of one group take the entries in turn past the cursor the previous one
// left; a reader whose group is gone gets NOGROUP, one whose key is gone
// or no longer a stream UNBLOCKED, while a plain XREAD keeps waiting for
// a stream to come back. The reply names the woken key's stream only.
// The engine wins a waiter through the same compare-and-swap as a pop,
// before it changes anything (a delivery to a group), so a reader that
// timed out never takes entries.
//
// Expiry and FLUSHALL remove streams outside any command's serving step;
// for them the keyspace also calls OnStreamLater (serveLater), which has
// the slot served by a short-lived goroutine once the locks are free.

func registerStreamBlocking(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["xread"] = func(c *client, args [][]byte) { s.cmdXread(c, args, false) }
	h["xreadgroup"] = func(c *client, args [][]byte) { s.cmdXread(c, args, true) }
}

// cmdXread is XREAD and XREADGROUP: served at once when a stream has
// something, else blocked with BLOCK, else null. Inside EXEC nothing
// blocks: null, as Redis's CLIENT_DENY_BLOCKING.
func (s *Server) cmdXread(c *client, args [][]byte, group bool) {
	req, errText := engine.ParseXRead(args, group)
	if errText != "" {
		c.w.Error(errText)
		return
	}
	sh := s.ks.ShardOf(req.Keys[0])
	if c.txCtx != nil {
		if !s.ks.XRead(&c.w, sh, &req, c.txCtx.Now) {
			c.w.NullArray()
		}
		if group {
			s.logEffect(c, sh.Slot, c.txCtx.Now, args...)
		}
		return
	}
	if w := s.xreadOrRegister(c, sh, &req, args); w != nil {
		s.wait(c, w)
	}
}

// xreadOrRegister runs req under its shard lock: answered at once (nil),
// or a waiter registered before the lock is released.
func (s *Server) xreadOrRegister(c *client, sh *engine.Shard, req *engine.XReadRequest, args [][]byte) *waiter {
	s.ks.RLock()
	defer s.ks.RUnlock()
	sh.Lock()
	defer sh.Unlock()
	if msg := s.notServed(sh.Slot); msg != "" {
		c.refuseUnserved(msg) // the slot moved since the dispatcher's check
		return nil
	}
	for _, k := range req.Keys {
		s.markKey(sh.Slot, k) // XREADGROUP changes its groups even when it finds nothing
	}
	served := s.ks.XRead(&c.w, sh, req, c.nowMs)
	if req.Group != nil {
		// (even when it found nothing: it may have created the consumer)
		s.logEffect(c, sh.Slot, c.nowMs, args...)
	}
	if !served {
		if req.Block {
			w := newWaiter(&blockReq{op: opStream, keys: req.Keys, timeoutMs: req.TimeoutMs, xr: req.Clone()}, sh.Slot, c)
			c.blocked.Store(w) // before blocked_clients counts it: see wait
			s.blk.register(w)
			return w
		}
		c.w.NullArray()
	}
	if s.blk.waitersOf(sh.Slot) != nil {
		s.serveBlocked(sh, c.nowMs) // a lookup may have expired a stream others wait on
	}
	return nil
}

// onStreamReady is the keyspace's OnStreamReady hook: key is noted if a
// client waits on it; a nil key (FLUSHALL) notes every waited key of the
// slot. The caller holds the slot's shard.
func (b *blocker) onStreamReady(slot uint16, key []byte) {
	sw := b.waitersOf(slot)
	if sw == nil {
		return
	}
	if key != nil {
		b.onPush(slot, key)
		return
	}
	for k := range sw.keys {
		sw.markReady(k)
	}
}

// serveStreamKey offers key to its stream readers, first come first
// served (see the model above).
func (s *Server) serveStreamKey(sh *engine.Shard, sw *slotWaiters, key string, bkey []byte, now int64) {
	q := sw.keys[key]
	if q == nil {
		return
	}
	var readers []*waiter
	for el := q.Front(); el != nil; el = el.Next() {
		if w := el.Value.(*waiter); w.req.op == opStream {
			readers = append(readers, w)
		}
	}
	for _, w := range readers {
		if !w.linked {
			continue
		}
		if w.state.Load() != waitPending {
			s.blk.unlink(w) // finished meanwhile
			continue
		}
		// Whether the client is still there is asked only of a reader
		// about to be served (a system call): one XADD to a group with
		// many blocked consumers serves one of them, and asking all of
		// them at every XADD made n XADDs cost n² calls.
		rw := resp.Writer{Proto: w.proto, OnError: s.errs.Record}
		claim := func() bool { return !s.peerGone(w) && w.state.CompareAndSwap(waitPending, waitServed) }
		if s.ks.XReadWake(&rw, sh, w.req.xr, bkey, now, claim) {
			s.markKey(sh.Slot, bkey) // XREADGROUP's delivery changed the group
			if w.req.xr.Group != nil {
				w.lsn = s.logEffect(nil, sh.Slot, now, xreadGroupEffect(w.req.xr, bkey)...)
			}
			s.blk.served(w, rw.B)
		} else if w.state.Load() != waitPending {
			s.blk.unlink(w) // lost to a timeout or an unblock
		}
	}
}

// serveLater is the keyspace's OnStreamLater hook: when slot has keys
// noted as ready, a goroutine serves them once the caller's locks are
// released. The caller holds the slot's shard (or the keyspace
// exclusively).
func (s *Server) serveLater(slot uint16) {
	sw := s.blk.slots[slot]
	if sw == nil || len(sw.ready) == 0 {
		return
	}
	b := &s.blk
	b.laterMu.Lock()
	if !b.laterQueued[slot] {
		b.laterQueued[slot] = true
		b.later = append(b.later, slot)
	}
	start := !b.laterRunning
	b.laterRunning = true
	b.laterMu.Unlock()
	if start {
		go s.runLater()
	}
}

// runLater serves the slots serveLater queued, until none is left.
func (s *Server) runLater() {
	b := &s.blk
	for {
		b.laterMu.Lock()
		if len(b.later) == 0 {
			b.laterRunning = false
			b.laterMu.Unlock()
			return
		}
		slot := b.later[0]
		b.later = b.later[1:]
		b.laterQueued[slot] = false
		b.laterMu.Unlock()

		now := s.opts.Now().UnixMilli()
		s.ks.RLock()
		sh := s.ks.Shard(slot)
		sh.Lock()
		s.serveBlocked(sh, now)
		sh.Unlock()
		s.ks.RUnlock()
	}
}
