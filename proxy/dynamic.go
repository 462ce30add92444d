package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/slots"
)

// Routing state. The proxy routes by a slot → backend table that can
// change while it serves: in static mode (Options.Topology) only MOVED
// replies change it; in cluster mode (Options.Cluster) the gossip view
// does too (dynamic_view.go applies each new view).
//
// Backends (nodePools) are known by their RESP address and numbered in the
// order the proxy first met them; a number is never reused, so a client's
// per-backend scratch (sends, cached connections, WATCH connections) stays
// valid when backends come and go. The list of pools only grows (a
// published slice, replaced on append); a pool whose node left is retired:
// its connections are closed and it answers CLUSTERDOWN at once, until its
// address shows up again. The slot table is 16384 atomics holding a pool
// number or -1 (nobody serves the slot), read without locks on every
// command. Pools are always published before any slot points at them.
//
// Lock order: routing.mu, then a nodePool's mu. A pool's mu is never held
// while taking routing.mu.

// poolState says whether a backend is served.
type poolState uint32

const (
	// poolLive: commands go to the node.
	poolLive poolState = iota
	// poolDead: the cluster view says the node is dead (or left while
	// owning slots): its slots answer CLUSTERDOWN at once.
	poolDead
	// poolRetired: the node is no longer a member and owns nothing. It
	// is left out of fan-outs; its idle connections are closed (and
	// again each watchdog tick), while a command routed to it just
	// before it left still goes there and is answered.
	poolRetired
)

func (s poolState) String() string {
	switch s {
	case poolDead:
		return "dead"
	case poolRetired:
		return "retired"
	}
	return "live"
}

// noOwner in the slot table: nobody serves the slot.
const noOwner = -1

// routing is the proxy's slot table and backend list.
type routing struct {
	srv *Server

	pools atomic.Pointer[[]*nodePool] // by number; only grows
	owner [slots.Count]atomic.Int32   // pool number or noOwner
	// unowned counts the slots whose owner is noOwner (nobody serves
	// them): for someDown, as a dead node's.
	unowned atomic.Int32
	// unreached counts the unowned slots that a member of the view
	// claims: a member whose address this proxy has never learned (one
	// that died before the proxy started), whose keys a command that
	// needs every node cannot reach.
	unreached atomic.Int32

	mu     sync.Mutex
	byAddr map[string]int       // pool number by address
	moved  map[uint16]movedHint // owners learned from MOVED that the view has not confirmed
	// table is the last cluster view applied; nil in static mode.
	table *clusterTable

	// view is table for lock-free readers (CLUSTER replies, INFO).
	view atomic.Pointer[clusterTable]
	// refresh asks the follower to re-read the cluster view (MOVED).
	refresh chan struct{}

	redirects redirectStats
}

// movedHint is an owner learned from a MOVED reply: pool serves slot, and
// the view's claim for it was at epoch when the reply came. A view whose
// claim for the slot has a higher epoch replaces it, and so does one that
// names the same owner, one in which the hinted address is a dead member
// and, after movedHintTTL, any view: a hint only bridges the time gossip
// takes to bring the claim, and one that outlived it (a MOVED that raced
// the view, the node then restarted elsewhere) must not pin the slot to an
// address nobody serves. A wrong drop costs one more MOVED.
type movedHint struct {
	pool  int32
	epoch uint64
	at    time.Time
}

// movedHintTTL is how long a MOVED hint may override the view.
const movedHintTTL = 10 * time.Second

// redirectStats count the node redirections the proxy followed.
type redirectStats struct {
	moved    atomic.Int64
	ask      atomic.Int64
	tryAgain atomic.Int64
	// exhausted counts commands whose redirections ran out of hops or of time (the
	// client got the node's last reply).
	exhausted atomic.Int64
}

func newRouting(s *Server) *routing {
	r := &routing{srv: s, byAddr: map[string]int{}, moved: map[uint16]movedHint{}, refresh: make(chan struct{}, 1)}
	r.pools.Store(&[]*nodePool{})
	for i := range r.owner {
		r.owner[i].Store(noOwner)
	}
	return r
}

// setStatic fills the table from a static topology: pool i is node i.
func (r *routing) setStatic(t Topology) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range t.Nodes() {
		r.poolForLocked(n.Addr)
	}
	owned := map[int32]bool{}
	for s := range r.owner {
		n := int32(t.Owner(uint16(s)))
		r.owner[s].Store(n)
		owned[n] = true
	}
	for i, p := range r.all() {
		p.ownsSlots.Store(owned[int32(i)])
	}
}

// all returns every pool, by number (retired ones included).
func (r *routing) all() []*nodePool { return *r.pools.Load() }

// pool returns pool n.
func (r *routing) pool(n int) *nodePool { return (*r.pools.Load())[n] }

// numPools is the number of pools ever created.
func (r *routing) numPools() int { return len(*r.pools.Load()) }

// someDown reports whether a pool is down or dead, or its node is loading
// its data, or some slot has no owner (a few atomic loads).
func (r *routing) someDown() bool {
	if r.unowned.Load() > 0 {
		return true
	}
	for _, p := range r.all() {
		if !p.ownsSlots.Load() {
			continue
		}
		if p.down.Load() || p.getState() == poolDead || p.loading() {
			return true
		}
	}
	return false
}

// ownerOf returns the pool serving slot, or noOwner.
func (r *routing) ownerOf(slot uint16) int {
	return int(r.owner[slot&(slots.Count-1)].Load())
}

// poolFor returns the number of the pool for addr, creating it (or
// reviving a retired one: a node answers there again) if needed.
func (r *routing) poolFor(addr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.poolForLocked(addr)
	if p := r.pool(n); p.getState() == poolRetired {
		r.setPoolState(p, poolLive)
	}
	return n
}

func (r *routing) poolForLocked(addr string) int {
	if n, ok := r.byAddr[addr]; ok {
		return n
	}
	old := r.all()
	n := len(old)
	p := newNodePool(r.srv, n, addr)
	pools := make([]*nodePool, n+1)
	copy(pools, old)
	pools[n] = p
	r.pools.Store(&pools)
	r.byAddr[addr] = n
	return n
}

// setPoolState moves p to st. A pool that goes dead has its connections
// closed, which fails what is in flight on them and wakes the clients
// blocked there (blocking.go); a retired one has its idle connections
// closed. r.mu is held.
func (r *routing) setPoolState(p *nodePool, st poolState) {
	old := p.getState()
	if old == st {
		return
	}
	p.state.Store(uint32(st))
	log := r.srv.log
	switch st {
	case poolLive:
		p.mu.Lock()
		p.down.Store(false)
		p.mu.Unlock()
		if old == poolDead {
			log.Info("node alive again; serving its slots", "node", p.addr)
		}
	case poolDead:
		log.Warn("node dead; its slots answer CLUSTERDOWN", "node", p.addr)
		p.closeAll()
		// Watched for an answer: one serves it again (recoverLoop).
		r.srv.recover(p)
	case poolRetired:
		if old == poolLive {
			log.Info("node no longer in the cluster; its backend is retired", "node", p.addr)
		}
		p.closeIdle()
	}
}

// verifyDead checks, in the background, a node the cluster view has just
// declared dead while the proxy knew of no failure: it dials the node and
// sends PING, within DialTimeout. If the node does not answer and the view
// still says dead, the pool goes dead (its slots answer CLUSTERDOWN). If it
// answers, the proxy keeps serving it and does not ask again while the
// view says dead, until the proxy's own failure detection (a failed dial,
// --node-timeout) finds it down: then it asks once more (markDown). The
// node serves its own slots whatever gossip says of it, so a working
// connection is the better witness; a false verdict used to fail the
// slots of a healthy node until gossip took it back.
func (s *Server) verifyDead(p *nodePool) {
	s.goUnlessRunning(&p.verifying, func() {
		timeout, stop := context.WithTimeout(context.Background(), s.opts.DialTimeout)
		defer stop()
		ctx, cancel := s.untilClose(timeout)
		defer cancel()
		nc, err := p.handshake(ctx, 2, true)
		r := s.route
		r.mu.Lock()
		defer r.mu.Unlock()
		if !p.viewDead.Load() || p.getState() == poolDead || s.isClosed() {
			if nc != nil {
				nc.Close()
			}
			return // a later view, or the proxy's own verdict, decided
		}
		if err != nil && !errors.Is(err, errNodeFull) {
			p.doubted = false
			r.setPoolState(p, poolDead)
			return
		}
		s.log.Info("the cluster view says the node is dead, but it answers the proxy; its slots are still served", "node", p.addr)
		p.doubted = true
		if nc == nil {
			return // full (maxclients): up all the same
		}
		p.mu.Lock()
		p.adoptLocked(nc)
		p.mu.Unlock()
	})
}

// noteMoved records that slot is served at addr (a MOVED reply) and asks
// for a fresh view. It returns the pool to retry on.
func (r *routing) noteMoved(slot uint16, addr string) int {
	r.redirects.moved.Add(1)
	r.mu.Lock()
	n := r.poolForLocked(addr)
	p := r.pool(n)
	if p.getState() == poolRetired {
		r.setPoolState(p, poolLive)
	}
	prev := r.owner[slot].Swap(int32(n))
	if t := r.table; t != nil {
		c := t.slots[slot]
		if r.claimPoolLocked(t, c) == n {
			// The view already says so: the MOVED answered a request
			// sent before the view came.
			delete(r.moved, slot)
		} else {
			r.moved[slot] = movedHint{pool: int32(n), epoch: c.epoch, at: time.Now()}
		}
	}
	r.mu.Unlock()
	if prev != int32(n) {
		r.srv.log.Debug("slot moved", "slot", slot, "to", addr)
	}
	r.requestRefresh()
	return n
}

// claimPoolLocked is the pool of the member claiming c in t, or noOwner
// when the claim names nobody or a member whose address has no pool yet.
// r.mu is held.
func (r *routing) claimPoolLocked(t *clusterTable, c slotClaim) int {
	if c.member < 0 || int(c.member) >= len(t.members) {
		return noOwner
	}
	m := t.members[c.member]
	if m.role != roleNode || m.addr == "" {
		return noOwner
	}
	if n, ok := r.byAddr[m.addr]; ok {
		return n
	}
	return noOwner
}

// expireHints re-applies the current table when a MOVED hint has outlived
// movedHintTTL, so that it gives way to the view even if no new view
// comes.
func (r *routing) expireHints(now time.Time) {
	r.mu.Lock()
	t := r.table
	stale := false
	for _, h := range r.moved {
		if now.Sub(h.at) > movedHintTTL {
			stale = true
			break
		}
	}
	r.mu.Unlock()
	if stale && t != nil {
		r.applyTableAt(t, now)
	}
}

// serving reports whether slot has an owner that is neither dead in the
// cluster view nor refusing connections (its last dial failed).
func (r *routing) serving(slot uint16) bool {
	n := r.ownerOf(slot)
	if n < 0 {
		return false
	}
	p := r.pool(n)
	return p.served() && !p.down.Load()
}

// requestRefresh asks the cluster follower to apply the source's current
// view now; a no-op in static mode or when a refresh is already pending.
func (r *routing) requestRefresh() {
	select {
	case r.refresh <- struct{}{}:
	default:
	}
}

// ranges returns the slot ranges pool n serves, ascending.
func (r *routing) ranges(n int) []SlotRange {
	var out []SlotRange
	for s := 0; s < slots.Count; s++ {
		if int(r.owner[s].Load()) != n {
			continue
		}
		first := s
		for s+1 < slots.Count && int(r.owner[s+1].Load()) == n {
			s++
		}
		out = append(out, SlotRange{uint16(first), uint16(s)})
	}
	return out
}

// rangeEnd is the last slot of the run of slots from slot on that pool n
// serves (slot itself if n does not serve it).
func (r *routing) rangeEnd(n int, slot uint16) int {
	end := int(slot)
	for end+1 < slots.Count && int(r.owner[end+1].Load()) == n {
		end++
	}
	return end
}

// nodeAddr is pool n's address, for messages; "-" for noOwner.
func (s *Server) nodeAddr(n int) string {
	if n < 0 || n >= s.route.numPools() {
		return "-"
	}
	return s.route.pool(n).addr
}

// snapshot is the routing state as a Topology: the pools in number
// order (retired ones included, so numbers match) and the owners now.
type snapshot struct {
	nodes []NodeInfo
	owner [slots.Count]int32
}

func (r *routing) snapshot() *snapshot {
	sn := &snapshot{}
	for s := range sn.owner {
		sn.owner[s] = r.owner[s].Load()
	}
	for i, p := range r.all() {
		sn.nodes = append(sn.nodes, NodeInfo{Addr: p.addr, Ranges: r.ranges(i)})
	}
	return sn
}

// Nodes implements Topology.
func (t *snapshot) Nodes() []NodeInfo { return t.nodes }

// Owner implements Topology: the node's index, or -1 when no node serves
// the slot.
func (t *snapshot) Owner(slot uint16) int { return int(t.owner[slot&(slots.Count-1)]) }
