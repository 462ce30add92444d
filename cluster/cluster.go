package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Cluster is this process's membership in a shardgate cluster. Its exported
// methods are safe for concurrent use.
//
// Concurrency: memberlist's goroutines call the delegates (delegate.go),
// which only read atomics and queue events in the inbox. One state
// goroutine (run) owns st: it applies events, Handoff requests and the
// periodic tick, then publishes a new snapshot, persists and refreshes the
// node metadata. Other goroutines: metaLoop (memberlist.UpdateNode, which
// waits for its broadcast) and short-lived joins and direct sends. Locks:
// inbox.mu and chMu only guard appends and a channel swap; nothing is ever
// called with either held.
type Cluster struct {
	cfg    Config
	tm     timings
	log    *slog.Logger
	self   NodeID
	bootID string
	gossip string // our memberlist address, as others see it

	ml *memberlist.Memberlist
	bq *memberlist.TransmitLimitedQueue

	snap      atomic.Pointer[snapshot]
	meta      atomic.Pointer[[]byte]
	published atomic.Pointer[[]byte] // the meta memberlist last announced (metaLoop)
	clusterID atomic.Pointer[string]
	alive     atomic.Int64 // members memberlist sees alive (self included)
	// cut: this node has been on the minority side long enough that the
	// majority may take its slots (Cut).
	cut atomic.Bool
	// cutBy is when Cut turns on if no heartbeat arrives meanwhile (unix
	// nanoseconds; 0: never): a node paused longer (a stopped process, a
	// frozen VM) is cut the moment it resumes, before its next tick.
	cutBy atomic.Int64
	// mlReady is ml for memberlist's own callbacks, which may run before
	// Create has returned it.
	mlReady atomic.Pointer[memberlist.Memberlist]
	// clock0 is the origin of heartbeat stamps (monotonic).
	clock0 time.Time

	chMu    sync.Mutex
	changes chan struct{}

	in        inbox
	reqs      chan request
	metaKick  chan struct{} // capacity 1
	quit      chan struct{}
	loops     sync.WaitGroup // run
	bg        sync.WaitGroup // metaLoop, direct sends
	joins     sync.WaitGroup // the join in progress (startJoin)
	joining   atomic.Bool
	joinFails joinFailures // guarded by joining: one join runs at a time
	closeOnce sync.Once
	closeErr  error

	st state // owned by run
}

// snapshot is what the state goroutine publishes.
type snapshot struct {
	view  *View
	state []byte // the view's table as a msgState message, for push/pull
	// owned is the view's Table.OwnerDigests, for heartbeats.
	owned map[NodeID]uint64
}

// ownedBy returns OwnerDigest of id in the snapshot's table.
func (s *snapshot) ownedBy(id NodeID) uint64 {
	if h, ok := s.owned[id]; ok {
		return h
	}
	return emptyOwnerDigest
}

// request is a call run on the state goroutine (Handoff, Commit,
// SetDraining).
type request struct {
	fn    func(now time.Time) error
	reply chan error
}

// state is the state goroutine's model of the cluster.
type state struct {
	clusterID string
	table     Table
	digest    uint64
	owned     uint64                // the table's OwnerDigest of this node
	epoch     uint64                // the table's MaxEpoch
	members   map[NodeID]*memberRec // the others
	started   time.Time

	viewDirty, persistDirty, metaDirty bool

	draining bool // this node is being emptied (SetDraining)

	bootIDs      []NodeID // the candidate set of the pending bootstrap
	bootSince    time.Time
	bootSet      uint64 // published: BootSetDigest of the empty nodes seen alive
	warnedExpect bool
	warnedQuorum bool
	// minoritySince is when this node last found the alive nodes no
	// majority (zero: they are one), for the minority fence (fence).
	minoritySince time.Time
	fenced        time.Time // last run of fence
	fenceAgain    bool      // fence waits for the View to be published (settle)
	lastRejoin    time.Time
	mismatch      map[NodeID]time.Time // digest differs from ours since
	lastSent      map[NodeID]time.Time // our table last sent directly
}

type memberRec struct {
	Member
	leaving   bool // it announced its Leave (msgLeave) with this BootID
	clusterID string
	bootSet   uint64    // its published bootstrap set digest (meta.BootSet)
	since     time.Time // last change of State
	heard     time.Time // its last heartbeat (nodes only)
	ip        net.IP
	port      uint16
}

// Start creates this member: loads or creates its identity in cfg.Dir,
// starts memberlist on cfg.Bind and joins cfg.Join in the background
// (retrying while no other member is alive). ctx bounds Start only; the
// member lives until Close.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:      cfg,
		tm:       lanTimings(),
		log:      cfg.Logger,
		bootID:   randomHex(8),
		clock0:   time.Now(),
		changes:  make(chan struct{}),
		reqs:     make(chan request),
		metaKick: make(chan struct{}, 1),
		quit:     make(chan struct{}),
	}
	c.in.kick = make(chan struct{}, 1)
	if cfg.Fast {
		c.tm = fastTimings()
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	now := time.Now()
	c.st = state{
		members:  make(map[NodeID]*memberRec),
		started:  now,
		mismatch: make(map[NodeID]time.Time),
		lastSent: make(map[NodeID]time.Time),
	}
	if err := c.loadIdentity(now); err != nil {
		return nil, err
	}
	c.log = c.log.With("node", string(c.self[:8]))
	c.st.digest, c.st.owned, c.st.epoch = c.st.table.Digest(), c.st.table.OwnerDigest(c.self), c.st.table.MaxEpoch()
	id := c.st.clusterID
	c.clusterID.Store(&id)
	if err := c.updateMeta(); err != nil {
		return nil, err
	}
	c.publish()

	mc := c.tm.memberlist()
	mc.Name = string(c.self)
	host, port, _ := splitHostPort(cfg.Bind)
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = "", port
	if cfg.Advertise != "" {
		mc.AdvertiseAddr, mc.AdvertisePort, _ = splitHostPort(cfg.Advertise)
	}
	mc.Logger = newMemberlistLogger(c.log.With("source", "memberlist"))
	if cfg.wrapTransport != nil {
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger})
		if err != nil {
			return nil, fmt.Errorf("cluster: gossip on %s: %w", cfg.Bind, err)
		}
		mc.BindPort = nt.GetAutoBindPort()
		if cfg.Advertise == "" {
			mc.AdvertisePort = mc.BindPort
		}
		mc.Transport = cfg.wrapTransport(nt)
	}
	d := (*delegate)(c)
	mc.Delegate, mc.Events, mc.Alive, mc.Merge = d, d, d, d
	mc.SecretKey = slices.Clone(cfg.Key)
	if cfg.ClusterName != "" {
		mc.Label = "shardgate/" + cfg.ClusterName
	}
	c.bq = &memberlist.TransmitLimitedQueue{
		NumNodes:       func() int { return max(1, int(c.alive.Load())) },
		RetransmitMult: mc.RetransmitMult,
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip on %s: %w", cfg.Bind, err)
	}
	c.ml = ml
	c.mlReady.Store(ml)
	// Read once now: memberlist rewrites its own node under its lock later.
	c.gossip = ml.LocalNode().Address()
	c.publish()
	c.log.Info("cluster: member started", "id", c.self, "role", cfg.Role, "gossip", c.gossip, "resp", cfg.RESPAddr, "cluster_id", c.st.clusterID, "slots", c.st.table.Count(c.self))

	c.st.lastRejoin = now
	c.loops.Add(1)
	go c.run()
	c.bg.Add(1)
	go c.metaLoop()
	if cfg.Role == RoleNode && cfg.ReassignAfter > 0 {
		c.bg.Add(1)
		go c.heartbeatLoop()
	}
	if len(cfg.Join) > 0 {
		c.startJoin(cfg.Join, true)
	}
	return c, nil
}

// loadIdentity reads the persisted identity, cluster id, table and
// members from cfg.Dir, or creates and persists a new identity.
func (c *Cluster) loadIdentity(now time.Time) error {
	if c.cfg.Dir == "" {
		c.self = NewNodeID()
		return nil
	}
	if err := os.MkdirAll(c.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	p, err := loadState(c.cfg.Dir)
	if err != nil {
		return err
	}
	if p == nil {
		c.self = NewNodeID()
		return c.persist()
	}
	c.self = p.NodeID
	c.st.clusterID = p.ClusterID
	c.st.draining = p.Draining
	t, _ := p.table() // validated by loadState
	c.st.table = *t
	for _, pm := range p.Members {
		if pm.ID == c.self {
			continue
		}
		role, _ := parseRole(pm.Role)
		ip, port := splitGossip(pm.Gossip)
		// One that left owning nothing (drained) counts in no majority;
		// one that left owning slots is expected back (a restart of
		// every node), and a dead member's address is retried (rejoin).
		state := StateDead
		if pm.Left && c.st.table.Count(pm.ID) == 0 {
			state = StateLeft
		}
		c.st.members[pm.ID] = &memberRec{
			Member: Member{ID: pm.ID, Role: role, Addr: pm.Addr, Gossip: pm.Gossip, State: state},
			since:  now,
			ip:     ip,
			port:   port,
		}
	}
	return nil
}

func splitGossip(addr string) (net.IP, uint16) {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil, 0
	}
	return net.ParseIP(host), uint16(port)
}

// ID returns this member's node id.
func (c *Cluster) ID() NodeID { return c.self }

// GossipAddr returns the memberlist address other members reach this one
// at (what --join takes).
func (c *Cluster) GossipAddr() string { return c.gossip }

// View returns the latest snapshot; never nil.
func (c *Cluster) View() *View { return c.snap.Load().view }

// Changes returns a channel closed when a View newer than the one
// returned by View after this call is published:
//
//	ch := c.Changes(); v := c.View(); use(v); <-ch
func (c *Cluster) Changes() <-chan struct{} {
	c.chMu.Lock()
	defer c.chMu.Unlock()
	return c.changes
}

// Handoff gives slots, all owned by this node, to the node to, at a new
// epoch (the highest this node knows plus one). It returns once the new
// claim is in this node's View, persisted and queued for gossip.
func (c *Cluster) Handoff(slots []uint16, to NodeID) error {
	for _, s := range slots {
		if int(s) >= NumSlots {
			return fmt.Errorf("%w: %d", ErrBadSlot, s)
		}
	}
	slots = slices.Clone(slots)
	return c.call(func(now time.Time) error { return c.handoff(slots, to, now) })
}

// call runs fn on the state goroutine and returns its result.
func (c *Cluster) call(fn func(now time.Time) error) error {
	r := request{fn: fn, reply: make(chan error, 1)}
	select {
	case c.reqs <- r:
	case <-c.quit:
		return ErrClosed
	}
	return <-r.reply
}

// Close leaves the cluster (the others see this member left, not dead),
// shuts memberlist down and persists the state. Later calls return the
// first one's result.
func (c *Cluster) Close() error { return c.shutdown(true) }

// shutdown stops everything; without leave the others find this member
// dead, as after a crash.
func (c *Cluster) shutdown(leave bool) error {
	c.closeOnce.Do(func() {
		close(c.quit)
		c.loops.Wait()
		var errs []error
		if leave {
			c.announceLeave()
			if err := c.leave(); err != nil {
				errs = append(errs, fmt.Errorf("cluster: leave: %w", err))
			}
		}
		if err := c.ml.Shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: shutdown: %w", err))
		}
		c.bg.Wait()
		// A join dialing an address that no longer answers holds on for
		// memberlist's TCP timeout (10 s on a LAN) and cannot be
		// cancelled; a stopping member does not wait for it (what it
		// might still learn goes to a queue nobody reads).
		joined := make(chan struct{})
		go func() {
			c.joins.Wait()
			close(joined)
		}()
		select {
		case <-joined:
		case <-time.After(joinWaitOnClose):
			c.log.Debug("cluster: not waiting for the join in progress")
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// leave has memberlist announce the leave and waits, up to the profile's
// leave time, for its gossip to go out, or until no other member is alive
// to hear it: when a whole cluster stops at once, the last members see
// the others leave and have nobody to tell, where memberlist alone waits
// out its timeout (5 s on a LAN). memberlist's wait cannot be cut short;
// the goroutine left behind ends with that timeout.
func (c *Cluster) leave() error {
	done := make(chan error, 1)
	go func() { done <- c.ml.Leave(c.tm.leave) }()
	tick := time.NewTicker(leavePoll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if !c.otherAlive() {
				return nil
			}
		}
	}
}

// otherAlive reports whether memberlist knows another member that has
// neither left nor died (suspects count: they may still hear the leave).
func (c *Cluster) otherAlive() bool {
	for _, n := range c.ml.Members() {
		if n.Name != string(c.self) {
			return true
		}
	}
	return false
}

// leavePoll is how often leave looks for a member still alive.
const leavePoll = 20 * time.Millisecond

// announceLeave tells the alive members (directly, by UDP, and by gossip)
// that this member is leaving, so they record it left rather than dead.
func (c *Cluster) announceLeave() {
	v := c.View()
	msg := appendLeave(nil, v.ClusterID, c.self, c.bootID)
	c.bq.QueueBroadcast(&claimBroadcast{name: "leave:" + string(c.self), msg: msg})
	for _, m := range v.Members {
		if m.ID == c.self || m.State != StateAlive {
			continue
		}
		c.sendTo(c.ml, m, msg, "leave notice")
	}
}

// sendTo sends msg to member m by UDP, best effort; what names it in the
// debug log of a failure.
func (c *Cluster) sendTo(ml *memberlist.Memberlist, m Member, msg []byte, what string) {
	ip, port := splitGossip(m.Gossip)
	if ip == nil {
		return
	}
	if err := ml.SendBestEffort(&memberlist.Node{Name: string(m.ID), Addr: ip, Port: port}, msg); err != nil {
		c.log.Debug("cluster: "+what, "to", m.ID, "err", err)
	}
}

// heartbeatLoop sends every alive node a heartbeat each heartbeatEvery,
// by UDP, stamped with this node's clock; the ack echoes the stamp. The
// minority fence (fence) counts the nodes that acked lately, which does
// not wait for memberlist to suspect them one probe at a time (slower
// still on the isolated side, which Lifeguard slows). Only a node with
// ReassignAfter, which has a fence, asks; every node answers.
func (c *Cluster) heartbeatLoop() {
	defer c.bg.Done()
	ticker := time.NewTicker(c.heartbeatEvery())
	defer ticker.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-ticker.C:
		}
		snap := c.snap.Load()
		v := snap.view
		msg := appendHeartbeat(nil, v.ClusterID, c.self, uint64(time.Since(c.clock0)), snap.ownedBy(c.self))
		for _, m := range v.Members {
			if m.ID == c.self || m.Role != RoleNode || m.State != StateAlive {
				continue
			}
			if c.cfg.dropHeartbeat == nil || !c.cfg.dropHeartbeat(c.self, m.ID) {
				c.sendTo(c.ml, m, msg, "heartbeat")
			}
		}
	}
}

// heartbeatEvery is the heartbeat period: the housekeeping tick, or less
// so that the fence's window (ReassignAfter/4) spans several heartbeats.
func (c *Cluster) heartbeatEvery() time.Duration {
	return max(min(c.tm.tick, c.cfg.ReassignAfter/16), 10*time.Millisecond)
}

// run is the state goroutine.
func (c *Cluster) run() {
	defer c.loops.Done()
	ticker := time.NewTicker(c.tm.tick)
	defer ticker.Stop()
	for {
		select {
		case <-c.quit:
			c.flush()
			return
		case <-c.in.kick:
			now := time.Now()
			for _, e := range c.in.take() {
				c.handle(e, now)
			}
		case r := <-c.reqs:
			r.reply <- r.fn(time.Now())
		case now := <-ticker.C:
			c.tick(now)
		}
		c.settle(time.Now())
	}
}

// metaLoop republishes the node metadata when it changed. UpdateNode
// waits for its broadcast to go out, so it runs apart from run.
func (c *Cluster) metaLoop() {
	defer c.bg.Done()
	for {
		select {
		case <-c.quit:
			return
		case <-c.metaKick:
			meta := c.meta.Load() // what UpdateNode announces, or older
			if err := c.ml.UpdateNode(c.tm.metaTimeout); err != nil {
				c.log.Debug("cluster: metadata update", "err", err)
			} else {
				c.published.Store(meta)
			}
		}
	}
}

func (c *Cluster) handle(e event, now time.Time) {
	st := &c.st
	switch e.kind {
	case evJoin, evUpdate:
		m, err := decodeMeta(e.node.meta)
		if err != nil {
			c.log.Debug("cluster: member with bad metadata", "name", e.node.name, "err", err)
			return
		}
		if m.ID == c.self {
			return
		}
		rec := st.members[m.ID]
		if rec == nil {
			rec = &memberRec{Member: Member{ID: m.ID, State: StateDead}}
			st.members[m.ID] = rec
		}
		old := rec.Member
		if rec.BootID != m.BootID {
			rec.leaving = false
		}
		rec.BootID, rec.Role, rec.Addr = m.BootID, m.Role, m.Addr
		rec.Gossip, rec.ip, rec.port = e.node.gossip(), e.node.ip, e.node.port
		rec.clusterID, rec.bootSet = m.ClusterID, m.BootSet
		rec.TableEpoch, rec.TableDigest = m.Epoch, m.Digest
		rec.Weight, rec.Draining = m.Weight, m.Draining
		if rec.State != StateAlive {
			rec.State, rec.since = StateAlive, now
			c.log.Info("cluster: member alive", "id", m.ID, "role", m.Role, "addr", m.Addr, "gossip", rec.Gossip, "boot", m.BootID)
			// Back from the dead (restarted, or a pause or partition
			// ended): it may have missed claims, and serves or routes by
			// its stale table until it has ours; anti-entropy would wait.
			if c.tableDiffers(rec) {
				c.sendTable(m.ID, rec, now)
			}
		}
		if rec.Member != old {
			st.viewDirty = true
		}
		if rec.Role != old.Role || rec.Addr != old.Addr || rec.Gossip != old.Gossip || old.State == StateLeft {
			st.persistDirty = true
		}
	case evLeave:
		id := NodeID(e.node.name)
		rec := st.members[id]
		if rec == nil || id == c.self {
			return
		}
		// memberlist's Node.State is not filled in for the event
		// delegate: a leave is known from the member's msgLeave.
		s := StateDead
		if rec.leaving {
			s = StateLeft
		}
		c.setState(rec, s, now)
	case evMsg:
		if e.msg.kind == msgHeartbeat {
			// It disagrees with us on what it owns (answerHeartbeat): one
			// of us missed claims. Our table now, rather than after
			// anti-entropy's delay, as its fence counts only nodes that
			// agree (its own table, if newer, reaches us the same way).
			// (Not tableDiffers: the digest its metadata announced may lag.)
			if rec := st.members[e.msg.id]; rec != nil && rec.State == StateAlive && rec.ip != nil && now.Sub(st.lastSent[e.msg.id]) >= c.tm.tick {
				c.sendTable(e.msg.id, rec, now)
			}
			return
		}
		if e.msg.kind == msgHeartbeatAck {
			// Heard from as of when we asked, by our own clock: an
			// answer that waited out a pause or a partition in a socket
			// buffer is as old as its question. A node that disagrees on
			// what we own does not count yet, unless its table is older
			// than ours (so nothing in it can take our slots): we may be
			// back from a pause or partition during which our slots were
			// reassigned, and must not serve them before we have merged
			// its table (sent when it saw us return, or saw us disagree).
			asked := c.clock0.Add(time.Duration(min(e.msg.stamp, math.MaxInt64)))
			rec := st.members[e.msg.id]
			agrees := e.msg.owned == st.owned || e.msg.epoch < st.epoch
			if rec != nil && rec.Role == RoleNode && agrees && asked.After(rec.heard) && !asked.After(now) {
				rec.heard = asked
				// Moves cutBy on, which a tick may not do in time; at most
				// once a heartbeat period, so that acks do not keep the
				// state goroutine busy.
				if now.Sub(st.fenced) >= c.heartbeatEvery() {
					c.fence(now)
				}
			}
			return
		}
		if e.msg.kind == msgLeave {
			if rec := st.members[e.msg.id]; rec != nil && rec.BootID == e.msg.bootID && !rec.leaving {
				rec.leaving = true
				if rec.State == StateDead {
					c.setState(rec, StateLeft, now)
				}
			}
			return
		}
		c.mergeMessage(e.msg)
	}
}

func (c *Cluster) setState(rec *memberRec, s State, now time.Time) {
	if rec.State == s {
		return
	}
	if rec.State == StateLeft || s == StateLeft {
		c.st.persistDirty = true // a restart must know it left (persistedMember.Left)
	}
	rec.State, rec.since = s, now
	c.st.viewDirty = true
	c.log.Info("cluster: member "+s.String(), "id", rec.ID, "role", rec.Role, "addr", rec.Addr, "slots", c.st.table.Count(rec.ID))
}

// mergeMessage merges a peer's claims. Claims under another cluster id
// are dropped; a member without one adopts the sender's id only if an
// admitted alive member has it.
func (c *Cluster) mergeMessage(m message) {
	st := &c.st
	if m.clusterID == "" {
		return
	}
	if st.clusterID == "" {
		if !c.aliveMemberOf(m.clusterID) {
			return
		}
		c.adopt(m.clusterID, "adopted the cluster id of its members")
	}
	if m.clusterID != st.clusterID {
		c.log.Debug("cluster: dropped claims of another cluster", "cluster_id", m.clusterID)
		return
	}
	c.apply(m.claims)
}

// apply merges claims into the table and gossips those that changed it.
func (c *Cluster) apply(cs []Claim) []Claim {
	return c.announce(c.st.table.MergeClaims(cs))
}

// announce marks the claims just merged into the table for publishing,
// persisting and gossip.
func (c *Cluster) announce(applied []Claim) []Claim {
	st := &c.st
	if len(applied) == 0 {
		return nil
	}
	st.digest, st.owned, st.epoch = st.table.Digest(), st.table.OwnerDigest(c.self), st.table.MaxEpoch()
	st.viewDirty, st.persistDirty, st.metaDirty = true, true, true
	for _, a := range applied {
		c.bq.QueueBroadcast(newClaimBroadcast(st.clusterID, a))
	}
	c.log.Debug("cluster: table changed", "claims", fmt.Sprint(applied), "epoch", st.table.MaxEpoch())
	return applied
}

func (c *Cluster) aliveMemberOf(clusterID string) bool {
	for _, r := range c.st.members {
		if r.State == StateAlive && r.clusterID == clusterID {
			return true
		}
	}
	return false
}

func (c *Cluster) adopt(id, why string) {
	st := &c.st
	st.clusterID = id
	c.clusterID.Store(&id)
	st.viewDirty, st.persistDirty, st.metaDirty = true, true, true
	c.log.Info("cluster: "+why, "cluster_id", id)
}

// handoff is Handoff on the state goroutine.
func (c *Cluster) handoff(slots []uint16, to NodeID, now time.Time) error {
	st := &c.st
	slices.Sort(slots)
	slots = slices.Compact(slots)
	for _, s := range slots {
		if o := st.table[s].Owner; o != c.self {
			return fmt.Errorf("%w: slot %d is owned by %q", ErrNotOwner, s, o)
		}
	}
	if to == c.self || len(slots) == 0 {
		return nil
	}
	if r := st.members[to]; r == nil || r.Role != RoleNode {
		return fmt.Errorf("%w: %q", ErrUnknownNode, to)
	}
	epoch := st.table.MaxEpoch() + 1
	applied := c.apply(runs(slots, SlotOwner{to, epoch}))
	c.log.Info("cluster: handed slots off", "to", to, "epoch", epoch, "claims", fmt.Sprint(applied))
	c.settle(now)
	return nil
}

// Commit records that slots belong to owner from epoch on: the last step
// of a slot migration, made first by the target (owner is then this
// node) and then by the source once the target confirmed. It returns once
// the claim is in this node's View, persisted and queued for gossip.
// Committing again is harmless; ErrStaleEpoch means another owner already
// holds one of the slots at epoch or higher (the migration lost a race and
// must not go on). The claim is on disk before it enters the View or
// gossip; ErrNotPersisted means it could not be written and took no
// effect.
func (c *Cluster) Commit(slots []uint16, owner NodeID, epoch uint64) error {
	return c.commitCall(slots, owner, epoch, true)
}

// CommitUnsynced is Commit that returns once the claim is in this node's
// View, before it is persisted (Sync waits for that): the source of a
// migration uses it so that its fence comes down without waiting for the
// disk, and syncs before it forgets the migration's own record.
func (c *Cluster) CommitUnsynced(slots []uint16, owner NodeID, epoch uint64) error {
	return c.commitCall(slots, owner, epoch, false)
}

// Sync returns once the state as of the call is persisted in Dir.
func (c *Cluster) Sync() error {
	return c.call(func(now time.Time) error {
		c.settle(now)
		if c.st.persistDirty && c.cfg.Dir != "" {
			return fmt.Errorf("%w in %s", ErrNotPersisted, c.cfg.Dir)
		}
		return nil
	})
}

func (c *Cluster) commitCall(slots []uint16, owner NodeID, epoch uint64, sync bool) error {
	for _, s := range slots {
		if int(s) >= NumSlots {
			return fmt.Errorf("%w: %d", ErrBadSlot, s)
		}
	}
	if !owner.Valid() || epoch == 0 {
		return fmt.Errorf("%w: claim %q@%d", ErrBadConfig, owner, epoch)
	}
	slots = slices.Clone(slots)
	return c.call(func(now time.Time) error { return c.commit(slots, owner, epoch, sync, now) })
}

func (c *Cluster) commit(slots []uint16, owner NodeID, epoch uint64, sync bool, now time.Time) error {
	st := &c.st
	if st.clusterID == "" {
		return ErrNoCluster
	}
	claim := SlotOwner{owner, epoch}
	slices.Sort(slots)
	slots = slices.Compact(slots)
	var fresh []uint16
	for _, s := range slots {
		cur := st.table[s]
		switch {
		case cur.Owner == owner && cur.Epoch >= epoch:
			// committed already
		case cur.Beats(claim):
			return fmt.Errorf("%w: slot %d is %q@%d, not below %q@%d", ErrStaleEpoch, s, cur.Owner, cur.Epoch, owner, epoch)
		default:
			fresh = append(fresh, s)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	var applied []Claim
	if sync && c.cfg.Dir != "" {
		// The claim is on disk before anyone can hear of it (gossip,
		// the View): a target that crashed with its claim out but not
		// on disk would restart without it, drop the keys it had
		// installed and tell the source the migration never happened,
		// while the others hold the claim. If the write fails, the
		// claim is taken back and the commit refused.
		prev := make([]SlotOwner, len(fresh))
		for i, sl := range fresh {
			prev[i] = st.table[sl]
		}
		merged := st.table.MergeClaims(runs(fresh, claim))
		if err := c.persist(); err != nil {
			for i, sl := range fresh {
				st.table[sl] = prev[i]
			}
			c.log.Error("cluster: migration commit refused: the cluster state could not be written", "dir", c.cfg.Dir, "err", err)
			return fmt.Errorf("%w in %s: %v", ErrNotPersisted, c.cfg.Dir, err)
		}
		applied = c.announce(merged)
	} else {
		applied = c.apply(runs(fresh, claim))
	}
	c.log.Info("cluster: migration committed", "owner", owner, "epoch", epoch, "claims", fmt.Sprint(applied))
	if !sync {
		c.publish() // the state goroutine persists right after this call
		st.viewDirty = false
		return nil
	}
	c.settle(now) // publishes; the claim is on disk already
	return nil
}

// SetDraining marks this node as draining (its slots are to be moved to
// the other nodes, and it is given none) or not; the mark is persisted
// and announced in the node's metadata.
func (c *Cluster) SetDraining(on bool) error {
	return c.call(func(now time.Time) error {
		if c.st.draining == on {
			return nil
		}
		c.st.draining = on
		c.st.viewDirty, c.st.persistDirty, c.st.metaDirty = true, true, true
		c.log.Info("cluster: draining", "on", on)
		c.settle(now)
		return nil
	})
}

// runs turns sorted, distinct slots into claims of contiguous ranges.
func runs(slots []uint16, o SlotOwner) []Claim {
	var cs []Claim
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		cs = append(cs, Claim{slots[i], slots[j], o})
		i = j + 1
	}
	return cs
}

// settle runs after every step of the state goroutine: cluster id
// adoption and bootstrap, then publishing, persisting and metadata.
func (c *Cluster) settle(now time.Time) {
	st := &c.st
	c.maybeAdopt()
	c.maybeBootstrap(now)
	if st.viewDirty {
		st.viewDirty = false
		c.publish()
	}
	if st.fenceAgain {
		st.fenceAgain = false
		c.fence(now)
	}
	c.flush()
	if st.metaDirty {
		st.metaDirty = false
		if err := c.updateMeta(); err != nil {
			c.log.Error("cluster: metadata", "err", err)
		}
		select {
		case c.metaKick <- struct{}{}:
		default:
		}
	}
}

// flush persists the state if it changed; a failed write is retried at
// the next step.
func (c *Cluster) flush() {
	if !c.st.persistDirty || c.cfg.Dir == "" {
		return
	}
	if err := c.persist(); err != nil {
		c.log.Error("cluster: persisting the cluster state", "dir", c.cfg.Dir, "err", err)
		return
	}
	c.st.persistDirty = false
}

func (c *Cluster) persist() error {
	st := &c.st
	p := &persisted{Version: stateVersion, NodeID: c.self, ClusterID: st.clusterID, Draining: st.draining}
	for _, cl := range st.table.Claims() {
		p.Slots = append(p.Slots, persistedClaim{cl.First, cl.Last, cl.Owner, cl.Epoch})
	}
	for _, id := range sortedIDs(st.members) {
		r := st.members[id]
		p.Members = append(p.Members, persistedMember{ID: id, Role: r.Role.String(), Addr: r.Addr, Gossip: r.Gossip, Left: r.State == StateLeft})
	}
	return saveState(c.cfg.Dir, p)
}

func sortedIDs(ms map[NodeID]*memberRec) []NodeID {
	ids := make([]NodeID, 0, len(ms))
	for id := range ms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *Cluster) updateMeta() error {
	st := &c.st
	b, err := meta{
		Role:      c.cfg.Role,
		ID:        c.self,
		BootID:    c.bootID,
		ClusterID: st.clusterID,
		Addr:      c.cfg.RESPAddr,
		Digest:    st.digest,
		Epoch:     st.table.MaxEpoch(),
		Weight:    c.cfg.weight(),
		Draining:  st.draining,
		BootSet:   st.bootSet,
	}.encode()
	if err != nil {
		return err
	}
	c.meta.Store(&b)
	return nil
}

// publish stores a new snapshot and wakes Changes waiters.
func (c *Cluster) publish() {
	st := &c.st
	slotsCopy := new([NumSlots]SlotOwner)
	*slotsCopy = st.table
	v := &View{
		Self:      c.self,
		ClusterID: st.clusterID,
		Slots:     slotsCopy,
		Epoch:     st.table.MaxEpoch(),
	}
	v.Members = append(v.Members, Member{
		ID: c.self, BootID: c.bootID, Role: c.cfg.Role, Addr: c.cfg.RESPAddr, Gossip: c.gossip, State: StateAlive,
		TableEpoch: v.Epoch, TableDigest: st.digest, Weight: c.cfg.weight(), Draining: st.draining,
	})
	for _, r := range st.members {
		v.Members = append(v.Members, r.Member)
	}
	seen := make(map[NodeID]bool, len(v.Members))
	for _, m := range v.Members {
		seen[m.ID] = true
	}
	for _, cl := range st.table.Claims() {
		if !seen[cl.Owner] {
			seen[cl.Owner] = true
			v.Members = append(v.Members, Member{ID: cl.Owner, Role: RoleNode, State: StateDead})
		}
	}
	slices.SortFunc(v.Members, func(a, b Member) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	state := appendMessage(nil, msgState, st.clusterID, st.table.Claims())
	c.snap.Store(&snapshot{view: v, state: state, owned: (*Table)(v.Slots).OwnerDigests()})
	c.chMu.Lock()
	close(c.changes)
	c.changes = make(chan struct{})
	c.chMu.Unlock()
}
