package node

import (
	"container/list"
	"net"
	"sync"
	"sync/atomic"

	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// Blocked clients: BLPOP BRPOP BLMPOP BLMOVE BRPOPLPUSH, as Redis 7.0's
// blocked.c and t_list.c run them, and XREAD/XREADGROUP with BLOCK on the
// same waiters (blocking_stream.go says how streams wake them).
//
// A blocking command first runs like its non-blocking variant under its
// slot's shard lock. When every key is empty it registers a waiter, still
// under that lock (so no push can slip between the check and the
// registration), on a FIFO queue per key; a waiter on several keys is on
// each key's queue. The lock is released, the client's earlier replies
// are flushed, and its goroutine waits for one of: served, timed out,
// CLIENT UNBLOCK, connection gone. Commands pipelined behind it wait too,
// as in Redis.
//
// Serving. The engine calls Keyspace.OnListPush (blocker.onPush) whenever
// elements are added to a list (pushes, LMOVE's destination, a list
// stored by RENAME or COPY) with the command's locks held; onPush only
// notes the key when someone waits on it. After the command, still under
// the same lock, serveBlocked hands the elements to the waiters of every
// noted key, first come first served, as Redis's handleClientsBlockedOnKeys
// does after each command (for a transaction: after EXEC). Each served
// waiter pops its element(s), its reply is produced there (in its
// protocol) and it is woken. A push of N elements thus serves up to N
// waiters; a BLMOVE waiter's push onto its destination notes that key in
// turn, so chains are served in the same step.
//
// States. A waiter leaves 'waiting' exactly once, through a
// compare-and-swap: to 'served' by the server holding the shard lock,
// before it pops anything, or to timed-out/unblocked/gone by a timer,
// CLIENT UNBLOCK or the client's own goroutine, which take no lock. A
// waiter that timed out can therefore never swallow an element: the
// server's CAS fails and it moves on to the next waiter. Queues are
// guarded by the shard lock: the server unlinks the waiters it serves
// (and any finished one it meets), a waiter that finished otherwise
// unlinks itself under the lock.
//
// Lock order is the keyspace's: big (shared), then the one shard. Timers
// and CLIENT UNBLOCK take no lock, so they are safe inside EXEC.

// Waiter states.
const (
	waitPending int32 = iota
	waitServed
	waitTimedOut       // its timeout passed
	waitUnblockTimeout // CLIENT UNBLOCK id [TIMEOUT]: replies as a timeout
	waitUnblockError   // CLIENT UNBLOCK id ERROR
	waitGone           // the connection closed
)

// blockOp is what a waiter does with the key that gets elements.
type blockOp uint8

const (
	opPop    blockOp = iota // BLPOP, BRPOP: [key, element]
	opMpop                  // BLMPOP: [key, [elements]]
	opMove                  // BLMOVE, BRPOPLPUSH: the element, pushed onto dst
	opStream                // XREAD, XREADGROUP with BLOCK (blocking_stream.go)
	opWait                  // WAIT (wait.go): no keys, ends by timeout or CLIENT UNBLOCK
)

// blockReq is a parsed blocking command.
type blockReq struct {
	op        blockOp
	keys      [][]byte // in argument order
	front     bool     // pop from the head
	dst       []byte   // opMove's destination
	dstFront  bool     // opMove pushes at the head
	count     int      // opMpop's COUNT
	timeoutMs int64    // 0: forever
	// xr is opStream's request, its keys and ids resolved (a copy).
	xr *engine.XReadRequest
}

// waiter is one blocked client.
type waiter struct {
	req   blockReq // keys and dst are copies
	keys  []string // distinct keys, in argument order
	slot  uint16
	proto int
	// conn is the client's connection, asked whether the client has
	// closed it before the waiter is served (peerGone); killed is the
	// client's CLIENT KILL mark, set before the kill closes conn from our
	// side, which the peer-closed check cannot see.
	conn   net.Conn
	killed *atomic.Bool

	state atomic.Int32
	done  chan struct{} // closed by whoever moves state off waitPending
	reply []byte        // the served reply, written before done closes
	lsn   uint64        // the log record of what serving it did, set before done closes

	// Guarded by the slot's shard lock.
	elems  []*list.Element // position in each key's queue
	linked bool
}

// blocker holds the waiters of every slot.
type blocker struct {
	// slots[i] is guarded by slot i's shard lock (or the keyspace held
	// exclusively); nil when nobody waits in the slot.
	slots [slots.Count]*slotWaiters
	// nslots counts the slots with waiters. Every data command asks
	// whether its slot has waiters to serve, and with random keys reading
	// slots[i] is a cache miss; with nobody blocked the count says no
	// without it. It changes with slots[i], under slot i's shard lock, so
	// a reader holding that lock sees the slot's entry and the count
	// agree.
	nslots atomic.Int32

	blocked atomic.Int64 // INFO blocked_clients
	timed   atomic.Int64 // INFO clients_in_timeout_table
	// peerChecks counts peerGone's questions (a system call each), for
	// tests of how often serving asks.
	peerChecks atomic.Int64

	// Slots to serve once the locks are free (blocking_stream.go's
	// serveLater), and whether a goroutine is serving them.
	laterMu      sync.Mutex
	later        []uint16
	laterQueued  [slots.Count]bool // slots in later
	laterRunning bool
}

// waitersOf returns slot's waiters, or nil; the caller holds the slot's
// shard.
func (b *blocker) waitersOf(slot uint16) *slotWaiters {
	if b.nslots.Load() == 0 {
		return nil
	}
	return b.slots[slot]
}

// setWaiters sets (sw != nil) or clears slot's waiters; the caller holds
// the slot's shard.
func (b *blocker) setWaiters(slot uint16, sw *slotWaiters) {
	setCounted(&b.slots[slot], sw, &b.nslots)
}

// slotWaiters are the queues of one slot.
type slotWaiters struct {
	keys map[string]*list.List // FIFO of *waiter per key
	// ready are the keys that got elements during the current command,
	// in that order (Redis serves them so); readySet holds the same keys,
	// so that noting one is not a walk of the others (a FLUSHALL notes
	// every waited key).
	ready    []string
	readySet map[string]struct{}
}

// markReady notes key as ready unless it is already.
func (sw *slotWaiters) markReady(key string) {
	if _, ok := sw.readySet[key]; ok {
		return
	}
	if sw.readySet == nil {
		sw.readySet = map[string]struct{}{}
	}
	sw.readySet[key] = struct{}{}
	sw.ready = append(sw.ready, key)
}

// popReady takes the first ready key, which may then be noted again.
func (sw *slotWaiters) popReady() string {
	key := sw.ready[0]
	sw.ready = sw.ready[1:]
	delete(sw.readySet, key)
	return key
}

// onPush is the keyspace's OnListPush hook: it notes key if a client
// waits on it. The caller holds the key's shard.
func (b *blocker) onPush(slot uint16, key []byte) {
	sw := b.waitersOf(slot)
	if sw == nil || sw.keys[string(key)] == nil {
		return
	}
	sw.markReady(string(key))
}

// finish moves w from waiting to state, reporting whether this call did
// it; only the winner closes done.
func (b *blocker) finish(w *waiter, state int32) bool {
	if !w.state.CompareAndSwap(waitPending, state) {
		return false
	}
	b.blocked.Add(-1)
	if w.req.timeoutMs > 0 {
		b.timed.Add(-1)
	}
	close(w.done)
	return true
}

// register queues w on each of its keys. The caller holds the shard.
func (b *blocker) register(w *waiter) {
	sw := b.slots[w.slot]
	if sw == nil {
		sw = &slotWaiters{keys: map[string]*list.List{}}
		b.setWaiters(w.slot, sw)
	}
	w.elems = make([]*list.Element, len(w.keys))
	for i, k := range w.keys {
		q := sw.keys[k]
		if q == nil {
			q = list.New()
			sw.keys[k] = q
		}
		w.elems[i] = q.PushBack(w)
	}
	w.linked = true
	b.count(w)
}

// count adds w to INFO's blocked_clients (and clients_in_timeout_table
// when it has a timeout); finish takes it off.
func (b *blocker) count(w *waiter) {
	b.blocked.Add(1)
	if w.req.timeoutMs > 0 {
		b.timed.Add(1)
	}
}

// unlink removes w from its queues. The caller holds the shard.
func (b *blocker) unlink(w *waiter) {
	if !w.linked {
		return
	}
	w.linked = false
	sw := b.slots[w.slot]
	for i, k := range w.keys {
		q := sw.keys[k]
		q.Remove(w.elems[i])
		if q.Len() == 0 {
			delete(sw.keys, k)
		}
	}
	w.elems = nil
	if len(sw.keys) == 0 && len(sw.ready) == 0 {
		b.setWaiters(w.slot, nil)
	}
}

// unlinkLocked is unlink for a waiter's own goroutine, which holds no lock.
func (s *Server) unlinkLocked(w *waiter) {
	if len(w.keys) == 0 {
		return // WAIT's: never queued
	}
	s.ks.RLock()
	sh := s.ks.Shard(w.slot)
	sh.Lock()
	s.blk.unlink(w)
	sh.Unlock()
	s.ks.RUnlock()
}

// serveBlocked serves the waiters of the keys that got elements in sh
// during the command that just ran. The caller holds sh (or the keyspace
// exclusively).
func (s *Server) serveBlocked(sh *engine.Shard, now int64) {
	sw := s.blk.waitersOf(sh.Slot)
	if sw == nil || len(sw.ready) == 0 {
		return
	}
	for len(sw.ready) > 0 {
		s.serveKey(sh, sw, sw.popReady(), now)
	}
	sw.ready, sw.readySet = nil, nil
	if len(sw.keys) == 0 {
		s.blk.setWaiters(sh.Slot, nil)
	}
}

// serveKey serves the waiters of a key that got something: the list
// waiters while its list has elements, then its stream readers (as Redis
// serves a ready key's clients by the key's type; readers of a key that
// is no longer a stream are answered too, see serveStreamKey).
func (s *Server) serveKey(sh *engine.Shard, sw *slotWaiters, key string, now int64) {
	bkey := []byte(key)
	s.serveListKey(sh, sw, key, bkey, now)
	s.serveStreamKey(sh, sw, key, bkey, now)
}

// serveListKey hands key's elements to its list waiters in FIFO order
// while the list has any.
func (s *Server) serveListKey(sh *engine.Shard, sw *slotWaiters, key string, bkey []byte, now int64) {
	q := sw.keys[key]
	if q == nil {
		return
	}
	for el := q.Front(); el != nil; {
		w := el.Value.(*waiter)
		el = el.Next() // w may leave the queue below
		if w.req.op == opStream {
			continue
		}
		if w.state.Load() != waitPending {
			s.blk.unlink(w) // finished meanwhile; its goroutine need not wait for us
			continue
		}
		if n, wrongType := s.ks.ListLen(sh, bkey, now); wrongType || n == 0 {
			return
		}
		if s.peerGone(w) {
			continue
		}
		if !w.state.CompareAndSwap(waitPending, waitServed) {
			continue // lost to a timeout or an unblock: the next one's turn
		}
		rw := resp.Writer{Proto: w.proto, OnError: s.errs.Record}
		w.lsn = s.popFor(&rw, sh, &w.req, bkey, now, nil)
		s.blk.served(w, rw.B)
	}
}

// peerGone reports whether w's client has closed its connection, or was
// killed by CLIENT KILL, which the client's own reader may not have
// noticed yet, and if so finishes
// and unlinks w. Serving it would hand an element (or a group's entry)
// to a client that can never read it: the element would be lost, where
// Redis, which reads the close before it runs the next command, keeps
// it. The caller holds w's shard.
func (s *Server) peerGone(w *waiter) bool {
	s.blk.peerChecks.Add(1)
	if !(w.killed != nil && w.killed.Load()) && (w.conn == nil || !rawio.PeerClosed(w.conn)) {
		return false
	}
	s.blk.finish(w, waitGone)
	s.blk.unlink(w)
	return true
}

// served completes a waiter the server won (its state is waitServed):
// it leaves its queues and is woken with reply. The caller holds the
// waiter's shard.
func (b *blocker) served(w *waiter, reply []byte) {
	w.reply = reply
	b.unlink(w)
	b.blocked.Add(-1)
	if w.req.timeoutMs > 0 {
		b.timed.Add(-1)
	}
	close(w.done)
}

// popFor pops for req from key, which holds a non-empty list, writing the
// reply the blocking command gives.
func (s *Server) popFor(w *resp.Writer, sh *engine.Shard, req *blockReq, key []byte, now int64, c *client) uint64 {
	s.markKey(sh.Slot, key)
	if req.op == opMove {
		s.markKey(sh.Slot, req.dst)
	}
	switch req.op {
	case opPop:
		elems, _ := s.ks.ListPop(sh, key, req.front, 1, now)
		w.Array(2)
		w.Bulk(key)
		w.Bulk(elems[0])
	case opMpop:
		elems, _ := s.ks.ListPop(sh, key, req.front, req.count, now)
		w.Array(2)
		w.Bulk(key)
		w.Array(len(elems))
		for _, e := range elems {
			w.Bulk(e)
		}
	case opMove:
		elem, errText := s.ks.ListMove(sh, key, req.dst, req.front, req.dstFront, now)
		if errText != "" {
			w.Error(errText)
			return 0
		}
		w.Bulk(elem)
	}
	// The log replays the pop as the plain command with its effect.
	return s.logEffect(c, sh.Slot, now, popEffect(req, key)...)
}

// writeNothing writes the reply of a blocking command that found nothing
// inside MULTI: a null array for the pops, a null bulk for the moves. A
// timeout (or CLIENT UNBLOCK TIMEOUT) is a null array for all of them,
// BLMOVE included, as Redis 7.0's replyToBlockedClientTimedOut answers.
func writeNothing(w *resp.Writer, op blockOp) {
	if op == opMove {
		w.Null()
		return
	}
	w.NullArray()
}
