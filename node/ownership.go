package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Slot ownership: which slots this node serves in a cluster.
//
// A standalone node (Options.Ownership nil) serves every slot and answers
// the CLUSTER views as a Redis Cluster of one master owning them all.
//
// With an Ownership, the node is a Redis Cluster master among others and
// the authority for its slots, as Redis 7.0.15's getNodeByQuery makes a
// cluster node. A command with keys is refused, after the checks Redis
// makes first (unknown command, arity, NOAUTH, not allowed in MULTI),
// when:
//
//   - its first key's slot is served by nobody (unassigned, or its owner
//     is down): -CLUSTERDOWN Hash slot not served. This comes before
//     CROSSSLOT, since Redis looks the first key's slot up before it
//     meets a key of another slot;
//   - its keys are in several slots: -CROSSSLOT;
//   - the slot is another node's: -MOVED <slot> <host>:<port>.
//
// Keyless commands always run. A refused command inside MULTI is not
// queued and dooms the transaction (EXEC answers EXECABORT); EXEC itself
// checks its stored commands the same way (an owner that changed since
// they were queued gives EXEC the redirection and discards the
// transaction). READONLY, READWRITE and ASKING answer OK as on a master:
// this node has no replicas and never migrates a slot half-way (no ASK).
//
// The check is made before the command is queued or run, and again once
// the slot's shard is locked, so that a command racing with a change of
// owner never writes into a slot the node has just given up.
//
// Losing slots. When the ownership changes (Ownership.Changes), the node
// walks the slots it served and, for each one it no longer serves (a
// higher epoch gave it to another node, e.g. while this one was away),
// answers the clients blocked on its keys with the redirection and drops
// the slot's keys, as Redis's clusterUpdateSlotsConfigWith deletes the
// keys of the slots it lost, with one log line per change. Keys are
// dropped only after the ownership has changed, so no command can put
// them back: each one sees the new owner under the shard lock.

// Ownership tells the node which slots it serves and where the others
// are. Implementations must be safe for concurrent use; Slot is called
// for every command with keys, so it should be cheap. The node's adapter
// over a gossip cluster is NewClusterOwnership.
type Ownership interface {
	// Slot reports whether this node serves slot and, if not, the RESP
	// address (host:port) of the node that does, "" when nobody serves
	// it (unassigned, or its owner is down).
	Slot(slot uint16) (mine bool, owner string)
	// Layout describes the cluster for CLUSTER SLOTS, SHARDS, NODES, INFO
	// and MYID: every node, its ranges and epochs, this one marked
	// Myself. Never nil.
	Layout() *clusterfmt.Layout
	// Changes returns a channel closed when Slot's or Layout's answers
	// may have changed (closed and replaced: get the channel, read, then
	// wait on it).
	Changes() <-chan struct{}
}

// cutter is an Ownership that may find the node cut off from its
// cluster's majority (clusterOwnership): every command with keys then
// answers CLUSTERDOWN The cluster is down, as a Redis Cluster node whose
// cluster state is fail, while the majority may be taking its slots.
type cutter interface{ Cut() bool }

// isCut reports whether the node is cut off from its cluster's majority.
func (s *Server) isCut() bool { return s.cut != nil && s.cut.Cut() }

// slotRefusal is the error a command whose first key is in slot gets
// (cross: other keys are in other slots), or "" when this node runs it,
// in Redis's order: slot served by nobody, CROSSSLOT, MOVED.
func (s *Server) slotRefusal(slot int, cross bool) string {
	if s.own == nil {
		if cross {
			return resp.ErrCrossSlot
		}
		return ""
	}
	if a := &s.asked[slot]; !a.Load() {
		a.Store(true) // before the read below: see reconcileSlots
	}
	mine, owner := s.own.Slot(uint16(slot))
	switch {
	case !mine && owner == "":
		return resp.ErrClusterDownSlot
	case cross:
		return resp.ErrCrossSlot
	case s.isCut():
		return resp.ErrClusterDown
	case !mine:
		return movedError(slot, owner)
	}
	return ""
}

// notServed is the redirection for a slot this node does not serve, or
// "" when it does (always, standalone). Callers that hold the slot's
// shard use it to re-check after the dispatcher's check.
func (s *Server) notServed(slot uint16) string {
	if s.gate.fenced(slot) {
		return fenceRefusal
	}
	if msg := s.ownerRefusal(slot); msg != "" {
		return msg
	}
	if s.isCut() {
		return resp.ErrClusterDown
	}
	return ""
}

// ownerRefusal is notServed without the migration fence: the ownership
// alone.
func (s *Server) ownerRefusal(slot uint16) string {
	if s.own == nil {
		return ""
	}
	mine, owner := s.own.Slot(slot)
	switch {
	case mine:
		return ""
	case owner == "":
		return resp.ErrClusterDownSlot
	}
	return movedError(int(slot), owner)
}

func movedError(slot int, owner string) string {
	return fmt.Sprintf(resp.ErrMoved, slot, owner)
}

// followOwnership runs while the server serves: after every change, it
// gives up the slots the node no longer serves. Serve has made the first
// pass (reconcileSlots(true)) before accepting any connection.
func (s *Server) followOwnership() {
	for {
		ch := s.own.Changes()
		s.reconcileSlots(false)
		select {
		case <-ch:
		case <-s.stop:
			return
		}
	}
}

// reconcileSlots drops the slots served before (all of them the first
// time: a node restarting with keys of slots it lost meanwhile drops them)
// that the ownership no longer gives this node. Serve makes the first
// pass before it accepts a connection, then only the followOwnership
// goroutine calls it; it owns s.served. The first pass must not overlap
// a migration's install: it drops keys of every slot not yet claimed, and
// an incoming migration installs its keys before it claims their slots.
//
// A slot not served at either of two passes may still have been served
// between them (given and taken back before this goroutine ran): a
// command the dispatcher let in then marked it asked before reading the
// ownership, so a pass that reads the slot not served after that command
// found it served also finds it asked, and empties it (strays).
func (s *Server) reconcileSlots(first bool) {
	var lost, strays []uint16
	for i := range uint16(slots.Count) {
		mine, _ := s.own.Slot(i)
		asked := s.asked[i].Swap(false)
		switch {
		case !mine && (first || s.served[i]):
			lost = append(lost, i)
		case !mine && asked:
			strays = append(strays, i)
		}
		s.served[i] = mine
	}
	var keys, blocked int
	var dropped, handed []uint16
	if s.mig != nil {
		lost, handed = s.mig.takeHanded(lost)
		for _, slot := range handed {
			k, b, _ := s.dropSlot(slot)
			keys += k
			blocked += b
		}
		if len(handed) > 0 {
			s.log.Info("slots handed over by migration: local copies dropped", "slots", formatSlots(handed), "keys", keys, "blocked_clients_redirected", blocked)
			keys, blocked = 0, 0
		}
	}
	if len(strays) > 0 && s.mig != nil {
		// A slot being received is not served yet but holds what the
		// migration installs before its claim: install runs under tmu.
		s.mig.tmu.Lock()
		defer s.mig.tmu.Unlock()
		strays = s.mig.notReceivingLocked(strays)
	}
	for _, slot := range append(lost, strays...) {
		k, b, ok := s.dropSlot(slot)
		if ok && k+b > 0 {
			dropped = append(dropped, slot)
		}
		keys += k
		blocked += b
	}
	slices.Sort(dropped)
	if len(dropped) > 0 {
		s.log.Warn("slots served by another node now (a higher epoch took them): their keys are dropped",
			"slots", formatSlots(dropped), "keys", keys, "blocked_clients_redirected", blocked)
	} else if len(lost) > 0 && !first {
		s.log.Info("slots no longer served here", "slots", formatSlots(lost))
	}
}

// dropSlot answers the clients blocked on keys of slot with the slot's
// redirection and empties its shard, unless the slot is this node's again
// by the time its shard is locked (ok false).
func (s *Server) dropSlot(slot uint16) (keys, blocked int, ok bool) {
	s.ks.RLock()
	defer s.ks.RUnlock()
	sh := s.ks.Shard(slot)
	sh.Lock()
	defer sh.Unlock()
	msg := s.ownerRefusal(slot)
	if msg == "" {
		return 0, 0, false
	}
	blocked = s.blk.redirectSlot(slot, msg, s.errs.Record)
	sh.TouchAllWatched() // missing keys too: they may be written elsewhere now
	keys = s.ks.Flush(sh)
	if keys > 0 {
		// An empty slot's drop would change nothing on replay; logged
		// anyway, every restart added a record per slot not owned.
		s.logDrop(slot)
	}
	s.ks.Dirty(int64(keys))
	return keys, blocked, true
}

// redirectSlot answers every client blocked on a key of slot with the
// error msg (MOVED or CLUSTERDOWN), as Redis's
// clusterRedirectBlockedClientIfNeeded, and removes the slot's waiters.
// The caller holds the slot's shard.
func (b *blocker) redirectSlot(slot uint16, msg string, record func(string)) int {
	sw := b.slots[slot]
	if sw == nil {
		return 0
	}
	var ws []*waiter
	seen := map[*waiter]bool{}
	for _, q := range sw.keys {
		for el := q.Front(); el != nil; el = el.Next() {
			if w := el.Value.(*waiter); !seen[w] {
				seen[w] = true
				ws = append(ws, w)
			}
		}
	}
	sw.ready = nil
	n := 0
	for _, w := range ws {
		if !w.state.CompareAndSwap(waitPending, waitServed) {
			b.unlink(w) // timed out or gone meanwhile: its goroutine unlinks nothing more
			continue
		}
		rw := resp.Writer{Proto: w.proto, OnError: record}
		rw.Error(msg)
		b.served(w, rw.B)
		n++
	}
	b.setWaiters(slot, nil)
	return n
}

// formatSlots prints ascending slots as CLUSTER NODES prints ranges:
// "0-99 200".
func formatSlots(ss []uint16) string {
	var b strings.Builder
	for i := 0; i < len(ss); {
		j := i
		for j+1 < len(ss) && ss[j+1] == ss[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(ss[i])))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(ss[j])))
		}
		i = j + 1
	}
	return b.String()
}
