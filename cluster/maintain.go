package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// maybeAdopt gives a member without a cluster id the id its alive members
// have (the most common one, should they disagree).
func (c *Cluster) maybeAdopt() {
	st := &c.st
	if st.clusterID != "" {
		return
	}
	count := make(map[string]int)
	for _, r := range st.members {
		if r.State == StateAlive && r.clusterID != "" {
			count[r.clusterID]++
		}
	}
	best := ""
	for id, n := range count {
		if best == "" || n > count[best] || n == count[best] && id < best {
			best = id
		}
	}
	if best == "" {
		return
	}
	if len(count) > 1 {
		c.log.Warn("cluster: alive members disagree on the cluster id; adopting the most common", "ids", fmt.Sprint(count))
	}
	c.adopt(best, "adopted the cluster id of its members")
}

// maybeBootstrap bootstraps the cluster when this node has no cluster id,
// --bootstrap-expect N is set and exactly N nodes without a cluster id
// (itself included) have been alive together for the settle time, every
// one of them publishing that it sees the same set, and no other empty
// node it has seen is down (a flapping member must not make a smaller set
// look complete). They all compute the same claims and cluster id from
// the same sorted ids.
//
// The published set is what keeps N+1 empty nodes from bootstrapping
// with N: a node that has not yet heard of the last one still hears that
// the others see more than it does.
func (c *Cluster) maybeBootstrap(now time.Time) {
	st := &c.st
	if c.cfg.Role != RoleNode || st.clusterID != "" || !st.table.Empty() {
		c.publishBootSet(0)
		st.bootIDs = nil
		return
	}
	ids, complete := c.emptyNodes()
	set := BootSetDigest(ids)
	c.publishBootSet(set)
	n := c.cfg.BootstrapExpect
	if n <= 0 || !complete || len(ids) != n {
		st.bootIDs = nil
		if n > 0 && len(ids) > n && !st.warnedExpect {
			st.warnedExpect = true
			c.log.Warn("cluster: more empty nodes than --bootstrap-expect are alive; not bootstrapping", "alive", len(ids), "expect", n)
		}
		return
	}
	if !slices.Equal(ids, st.bootIDs) {
		st.bootIDs, st.bootSince = ids, now
		return
	}
	for _, id := range ids {
		if id != c.self && st.members[id].bootSet != set {
			st.bootSince = now // the settle time counts from agreement
			return
		}
	}
	if now.Sub(st.bootSince) < c.tm.bootstrapSettle {
		return
	}
	id := BootstrapClusterID(ids, c.cfg.ClusterName)
	c.adopt(id, "bootstrapped the cluster")
	applied := c.apply(BootstrapClaims(ids))
	c.log.Info("cluster: bootstrap assignment", "nodes", len(ids), "claims", fmt.Sprint(applied), "own_slots", st.table.Count(c.self))
	st.bootIDs = nil
	c.publishBootSet(0)
}

// emptyNodes returns the sorted ids of the alive nodes without a cluster
// id, this one included; complete is false when an empty node seen
// before is down or some node already has a cluster id (maybeAdopt takes
// over then).
func (c *Cluster) emptyNodes() (ids []NodeID, complete bool) {
	ids = []NodeID{c.self}
	complete = true
	for id, r := range c.st.members {
		if r.Role != RoleNode || r.State == StateLeft {
			continue
		}
		switch {
		case r.State != StateAlive && r.clusterID == "":
			complete = false
		case r.State != StateAlive:
		case r.clusterID != "":
			complete = false
		default:
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, complete
}

// publishBootSet sets the bootstrap set digest this node publishes in its
// metadata.
func (c *Cluster) publishBootSet(set uint64) {
	if c.st.bootSet != set {
		c.st.bootSet = set
		c.st.metaDirty = true
	}
}

// tick is the periodic housekeeping of the state goroutine.
func (c *Cluster) tick(now time.Time) {
	c.reap(now)
	c.fence(now)
	c.reassign(now)
	c.rejoin(now)
	c.antiEntropy(now)
}

// owners returns the set of ids owning at least one slot.
func (c *Cluster) owners() map[NodeID]bool {
	o := make(map[NodeID]bool)
	for s := range c.st.table {
		if id := c.st.table[s].Owner; id != "" {
			o[id] = true
		}
	}
	return o
}

// reap forgets dead and left members that own no slot after a while.
func (c *Cluster) reap(now time.Time) {
	st := &c.st
	var owners map[NodeID]bool
	for id, r := range st.members {
		if r.State == StateAlive || now.Sub(r.since) < c.tm.reap {
			continue
		}
		if owners == nil {
			owners = c.owners()
		}
		if owners[id] {
			continue
		}
		delete(st.members, id)
		delete(st.mismatch, id)
		delete(st.lastSent, id)
		st.viewDirty, st.persistDirty = true, true
	}
}

// Cut reports whether this node has been cut off from the majority of
// the data nodes long enough that they may reassign its slots
// (Config.ReassignAfter): its slots then answer CLUSTERDOWN, so that a
// partition never leaves a slot writable on both sides, the writes on
// the minority side to be dropped when it heals. As Redis Cluster, whose
// master cut off from the majority stops taking writes. Only with
// reassignment on: without it nobody else may take the slots.
func (c *Cluster) Cut() bool {
	if c.cut.Load() {
		return true
	}
	by := c.cutBy.Load()
	return by != 0 && time.Now().UnixNano() >= by
}

// fence updates Cut: on when the data nodes this node hears from have
// been no majority for a quarter of ReassignAfter, off as soon as they are
// one again. A node counts as heard from while it is alive, unsuspected,
// and its last heartbeat is at most ReassignAfter/4 old. So a node cut
// off stops serving at most ReassignAfter/2 after the last heartbeat that
// crossed the partition, however long memberlist takes to suspect its
// peers, while the majority reassigns its slots no sooner than
// ReassignAfter after declaring it dead, which takes a suspicion timeout
// after the partition. cutBy carries that deadline to Cut between ticks.
func (c *Cluster) fence(now time.Time) {
	st := &c.st
	if c.cfg.ReassignAfter <= 0 || c.cfg.Role != RoleNode || st.clusterID == "" {
		c.cutBy.Store(0)
		return
	}
	st.fenced = now
	grace := c.cfg.ReassignAfter / 4
	heard, known := c.nodesHeard()
	// The majority holds until the heartbeat of the peer that completes
	// it (the known/2-th most recent) is a window old.
	need := known / 2
	if need == 0 { // the only node known: a majority of one
		st.minoritySince = time.Time{}
		c.cutBy.Store(0)
		c.cut.Store(false)
		return
	}
	var majorityEnds time.Time
	if len(heard) >= need && !heard[need-1].IsZero() {
		majorityEnds = heard[need-1].Add(grace)
	}
	if now.Before(majorityEnds) {
		if st.viewDirty {
			// The table changed (say, merged on the way back from a
			// pause) and the View commands are served by is not yet
			// published: serving now would serve the old one. Again
			// once it is (settle).
			st.fenceAgain = true
			return
		}
		st.minoritySince = time.Time{}
		c.cutBy.Store(majorityEnds.Add(grace).UnixNano())
		if c.cut.Swap(false) {
			c.log.Warn("cluster: the nodes heard from are a majority again: serving this node's slots again", "heard", 1+countAfter(heard, now.Add(-grace)), "known", known)
		}
		return
	}
	if st.minoritySince.IsZero() {
		// Since the last heartbeat aged out, if that is known and later
		// than the start (a pause ends here, a whole window late).
		st.minoritySince = now
		if !majorityEnds.IsZero() && majorityEnds.After(st.started) {
			st.minoritySince = majorityEnds
		}
	}
	c.cutBy.Store(st.minoritySince.Add(grace).UnixNano())
	if now.Sub(st.minoritySince) >= grace && !c.cut.Swap(true) {
		c.log.Warn("cluster: CUT OFF FROM THE MAJORITY: this node's slots answer CLUSTERDOWN until it is back, as the others may reassign them",
			"heard", 1+countAfter(heard, now.Add(-grace)), "known", known, "for", now.Sub(st.minoritySince).Round(time.Millisecond))
	}
}

// unsuspected returns the names of the members memberlist holds alive
// and does not suspect: alone, the cut-off side has nobody to confirm its
// suspicions, so a suspect counts as gone (nodesHeard, reassign).
func (c *Cluster) unsuspected() map[string]bool {
	out := map[string]bool{}
	for _, n := range c.ml.Members() {
		if n.State == memberlist.StateAlive {
			out[n.Name] = true
		}
	}
	return out
}

// countAfter counts the times in ts after t.
func countAfter(ts []time.Time, t time.Time) int {
	n := 0
	for _, x := range ts {
		if x.After(t) {
			n++
		}
	}
	return n
}

// nodesHeard returns the last heartbeats, most recent first, of the other
// data nodes that may count towards a majority (alive, and unsuspected by
// memberlist: alone, the cut-off side has nobody to confirm its
// suspicions), and the number of nodes the majority is counted over:
// members that are nodes, and every slot owner, this node included; a
// node that left owning nothing (drained) is not one.
func (c *Cluster) nodesHeard() (heard []time.Time, known int) {
	st := &c.st
	owners := c.owners()
	unsuspected := c.unsuspected()
	seen := map[NodeID]bool{c.self: true}
	for id, r := range st.members {
		if r.State == StateLeft && !owners[id] {
			continue
		}
		if r.Role == RoleNode {
			seen[id] = true
			if r.State == StateAlive && unsuspected[string(id)] {
				heard = append(heard, r.heard)
			}
		}
	}
	for id := range owners {
		seen[id] = true
	}
	slices.SortFunc(heard, func(a, b time.Time) int { return b.Compare(a) })
	return heard, len(seen)
}

// reassign hands the slots of nodes dead for Config.ReassignAfter to the
// alive nodes, if this node is the alive node with the lowest id and the
// alive nodes are a majority of the nodes it knows (but those that left
// owning nothing): a node cut off from the others by a partition must not
// claim their slots at a higher epoch (the claim would win when the
// partition heals).
func (c *Cluster) reassign(now time.Time) {
	st := &c.st
	if c.cfg.ReassignAfter <= 0 || c.cfg.Role != RoleNode || st.clusterID == "" {
		return
	}
	if c.Cut() {
		// Cut off from the majority: its verdicts are the minority's.
		// Gossip on this side may still call unreachable nodes alive
		// (suspicions need confirmations nobody here can give), so
		// counting those could make a "majority" of the cut-off side.
		return
	}
	owners := c.owners()
	// The nodes that count as alive and take the slots are those the
	// fence counts (alive, unsuspected, and acking heartbeats lately):
	// not one this node cannot reach.
	unsuspected := c.unsuspected()
	window := c.cfg.ReassignAfter / 4
	alive := []NodeID{c.self}
	known := map[NodeID]bool{c.self: true}
	for id, r := range st.members {
		if r.State == StateLeft && !owners[id] {
			// Left gracefully, owning nothing (drained): not a member a
			// partition could hide, so not one the majority is counted
			// over until it is forgotten.
			continue
		}
		if r.Role == RoleNode {
			known[id] = true
			if r.State == StateAlive && unsuspected[string(id)] && now.Sub(r.heard) <= window {
				alive = append(alive, id)
			}
		}
	}
	for id := range owners {
		known[id] = true
	}
	slices.Sort(alive)
	if alive[0] != c.self {
		return
	}
	var dead []NodeID
	deadFor := make(map[NodeID]time.Duration)
	for id := range owners {
		if id == c.self {
			continue
		}
		since := st.started // never heard of since this process started
		if r := st.members[id]; r != nil {
			if r.State == StateAlive {
				continue
			}
			if r.since.After(since) {
				since = r.since
			}
		}
		if d := now.Sub(since); d >= c.cfg.ReassignAfter {
			dead = append(dead, id)
			deadFor[id] = d
		}
	}
	if len(dead) == 0 {
		st.warnedQuorum = false
		return
	}
	if 2*len(alive) <= len(known) {
		if !st.warnedQuorum {
			st.warnedQuorum = true
			c.log.Warn("cluster: not reassigning the slots of dead nodes: the alive nodes are no majority", "alive", len(alive), "known", len(known), "dead", fmt.Sprint(dead))
		}
		return
	}
	st.warnedQuorum = false
	slices.Sort(dead)
	epoch := st.table.MaxEpoch() + 1
	var claims []Claim
	for _, id := range dead {
		var owned []uint16
		for s := range st.table {
			if st.table[s].Owner == id {
				owned = append(owned, uint16(s))
			}
		}
		n := len(alive)
		for i, to := range alive {
			part := owned[i*len(owned)/n : (i+1)*len(owned)/n]
			claims = append(claims, runs(part, SlotOwner{to, epoch})...)
		}
		c.log.Warn("cluster: REASSIGNING THE SLOTS OF A DEAD NODE: the keys it held in them are lost",
			"dead", id, "dead_for", deadFor[id].Round(time.Millisecond), "slots", len(owned),
			"ranges", fmt.Sprint(st.table.Ranges(id)), "to", fmt.Sprint(alive), "epoch", epoch)
	}
	c.apply(claims)
}

// rejoin retries joins: to nodes seen dead (a partition may have healed
// or they came back at the same address) and, while no other member is
// alive, to Config.Join. One join runs at a time. Dead proxies and
// observers are not chased: a proxy back from a partition rejoins by
// itself, and a restarted one (or an observer) has a new id, so its old
// records would only make every rejoin dial addresses nobody answers.
func (c *Cluster) rejoin(now time.Time) {
	st := &c.st
	var addrs []string
	others := false
	for _, id := range sortedIDs(st.members) {
		r := st.members[id]
		switch {
		case r.State == StateAlive:
			others = true
		case r.State == StateDead && r.Gossip != "" && r.Role == RoleNode:
			addrs = append(addrs, r.Gossip)
		}
	}
	// Alone, a member started before the others (a proxy is quick to
	// start) retries soon: they are likely coming up.
	every := c.tm.rejoin
	if !others {
		every = c.tm.rejoinAlone
	}
	if now.Sub(st.lastRejoin) < every {
		return
	}
	st.lastRejoin = now
	if !others {
		addrs = append(addrs, c.cfg.Join...)
	}
	if len(addrs) > 0 {
		c.startJoin(addrs, !others)
	}
}

// joinWaitOnClose bounds how long Close waits for a join in progress.
const joinWaitOnClose = time.Second

// startJoin joins addrs in the background unless a join is running. Each
// address is tried once (restarted members leave several dead records at
// one address), never our own. isolated: no other member is alive, so a
// failure leaves this one out of the cluster.
func (c *Cluster) startJoin(addrs []string, isolated bool) {
	addrs = slices.Clone(addrs)
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	addrs = slices.DeleteFunc(addrs, func(a string) bool { return a == c.gossip })
	if len(addrs) == 0 || !c.joining.CompareAndSwap(false, true) {
		return
	}
	c.joins.Add(1)
	go func() {
		defer c.joins.Done()
		defer c.joining.Store(false)
		n, err := c.ml.Join(addrs)
		c.joinFails.note(c.log, time.Now(), addrs, n, err, isolated)
	}()
}

// joinFailures decides when failed joins are worth a warning. Members
// started one after another fail to join for a moment as a matter of
// course, so a failure is debug until joins have failed for
// joinWarnAfter, and then a warning every joinWarnEvery; a gossip key
// mismatch, which never heals by itself, warns at once. A member that
// has other members alive is in the cluster: its joins only retry dead
// members' addresses, which a member drained and stopped, or restarted
// under a new address, never answers again until its record is reaped,
// so those failures stay debug.
type joinFailures struct {
	since, warned time.Time // first failure of the run; last warning
	last          time.Time // latest failure: a long gap starts a new run
	joined        bool      // a join has succeeded (the first is logged)
}

const (
	joinWarnAfter = 10 * time.Second
	joinWarnEvery = 30 * time.Second
	// joinRunGap: failures further apart are separate runs, so that
	// failing_for does not count from an episode long over.
	joinRunGap = 2 * joinWarnEvery
)

func (f *joinFailures) note(log *slog.Logger, now time.Time, addrs []string, contacted int, err error, isolated bool) {
	if err == nil {
		switch {
		case !f.warned.IsZero() || !f.joined && !f.since.IsZero():
			log.Info("cluster: joined", "addrs", addrs, "contacted", contacted, "after_failing_for", now.Sub(f.since).Round(time.Millisecond))
		case !f.joined:
			log.Info("cluster: joined", "addrs", addrs, "contacted", contacted)
		default:
			log.Debug("cluster: joined", "addrs", addrs, "contacted", contacted)
		}
		*f = joinFailures{joined: true}
		return
	}
	if f.since.IsZero() || now.Sub(f.last) > joinRunGap {
		f.since, f.warned = now, time.Time{}
	}
	f.last = now
	keys := isKeyMismatch(err.Error())
	if (!keys && (!isolated || now.Sub(f.since) < joinWarnAfter)) || (!f.warned.IsZero() && now.Sub(f.warned) < joinWarnEvery) {
		log.Debug("cluster: join", "addrs", addrs, "err", err)
		return
	}
	f.warned = now
	// memberlist's multierror spreads over lines; a log line should not.
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\t* ", " ")), " ")
	attrs := []any{"addrs", addrs, "failing_for", now.Sub(f.since).Round(time.Second), "err", msg}
	if keys {
		attrs = append(attrs, "hint", "every member needs the same --gossip-key (or none)")
	}
	log.Warn("cluster: cannot join any member; retrying", attrs...)
}

// antiEntropy sends our whole table directly to an alive member whose
// table digest has differed from ours for a while (broadcasts can be
// lost; push/pull picks a random member every PushPullInterval).
func (c *Cluster) antiEntropy(now time.Time) {
	st := &c.st
	if st.clusterID == "" {
		return
	}
	for id, r := range st.members {
		if !c.tableDiffers(r) {
			delete(st.mismatch, id)
			continue
		}
		since, ok := st.mismatch[id]
		if !ok {
			st.mismatch[id] = now
			continue
		}
		if now.Sub(since) < c.tm.antiEntropy || now.Sub(st.lastSent[id]) < c.tm.antiEntropy {
			continue
		}
		c.sendTable(id, r, now)
	}
}

// tableDiffers reports whether r is an alive member of our cluster, that
// we can reach, whose announced table differs from ours.
func (c *Cluster) tableDiffers(r *memberRec) bool {
	st := &c.st
	return r.State == StateAlive && (r.clusterID == "" || r.clusterID == st.clusterID) && r.TableDigest != st.digest && r.ip != nil
}

// sendTable sends our whole table to member id (record r) in the
// background.
func (c *Cluster) sendTable(id NodeID, r *memberRec, now time.Time) {
	c.st.lastSent[id] = now
	to := &memberlist.Node{Name: string(id), Addr: r.ip, Port: r.port}
	msg := c.snap.Load().state
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if err := c.ml.SendReliable(to, msg); err != nil {
			c.log.Debug("cluster: sending the table", "to", to.Name, "err", err)
		}
	}()
}

// PushTable sends our whole table now to every alive member whose
// announced table differs from ours, rather than after the anti-entropy
// delay: a node about to leave uses it so that no member goes on routing
// to it.
func (c *Cluster) PushTable() error {
	return c.call(func(now time.Time) error {
		for id, r := range c.st.members {
			if c.tableDiffers(r) {
				c.sendTable(id, r, now)
			}
		}
		return nil
	})
}
