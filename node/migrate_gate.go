package node

import (
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Slot gates: what a migration changes in the path of every command.
//
// While a slot is being copied to another node, the source records the
// keys that write commands touch in it (tracking), so that it can send
// them again. At the end it fences the slot: commands for it wait until
// the migration commits (they then get MOVED) or aborts (they run here);
// a command still waiting after fenceWait gets -TRYAGAIN, which the proxy
// and cluster clients retry.
//
// Both states change only under the slot's shard lock (with the keyspace
// held shared), and commands read them under the same lock, so a command
// either ran before the migration looked at the slot or sees its state.
// The dispatcher also waits for a fence before taking any lock, so that
// commands queue on the fence rather than on the shard mutex; the check
// under the lock catches the few that passed the first check just before
// the fence went up, and answers them TRYAGAIN.

// slotTrack is the tracking state of one slot being copied.
type slotTrack struct {
	dirty map[string]struct{} // keys written since they were last sent
	reset bool                // the slot was emptied (FLUSHALL): resend it whole
}

// fence is a raised fence: done closes when it comes down.
type fence struct{ done chan struct{} }

// gates is the per-slot migration state of a Server.
type gates struct {
	tracks [slots.Count]*slotTrack            // under the slot's shard lock
	fences [slots.Count]atomic.Pointer[fence] // set under the shard lock, read anywhere
	wait   time.Duration                      // how long a command waits for a fence

	// ntracks and nfences count the slots tracked and fenced. Every
	// command checks its slot's gates, and with random keys each array
	// read is a cache miss (128 KB per array); outside a migration both
	// counts are 0 and the arrays are not read at all. A count changes
	// under the slot's shard lock before the slot's entry is set (after
	// it is cleared), so a reader holding that lock never sees the entry
	// without the count.
	ntracks, nfences atomic.Int32
}

// setTrack starts (t != nil) or ends tracking of slot; the caller holds
// the slot's shard.
func (g *gates) setTrack(slot uint16, t *slotTrack) { setCounted(&g.tracks[slot], t, &g.ntracks) }

// setCounted stores v in *p and keeps n, the number of non-nil entries of
// p's array, in step: raised before an entry appears, lowered after one
// goes.
func setCounted[T any](p **T, v *T, n *atomic.Int32) {
	switch old := *p; {
	case old == nil && v != nil:
		n.Add(1)
	case old != nil && v == nil:
		defer n.Add(-1)
	}
	*p = v
}

// track returns slot's tracking state, or nil.
func (g *gates) track(slot int) *slotTrack {
	if g.ntracks.Load() == 0 {
		return nil
	}
	return g.tracks[slot]
}

// raiseFence fences slot with f; the caller holds the slot's shard.
func (g *gates) raiseFence(slot uint16, f *fence) {
	g.nfences.Add(1)
	if g.fences[slot].Swap(f) != nil {
		g.nfences.Add(-1) // it was fenced already
	}
}

// lowerFence takes f down from slot, if it is still there; the caller
// holds the slot's shard.
func (g *gates) lowerFence(slot uint16, f *fence) {
	if g.fences[slot].CompareAndSwap(f, nil) {
		g.nfences.Add(-1)
	}
}

// fenceOf returns slot's fence, or nil.
func (g *gates) fenceOf(slot int) *fence {
	if g.nfences.Load() == 0 {
		return nil
	}
	return g.fences[slot].Load()
}

// awaitFence waits, before any lock is taken, for a fence on slot to come
// down; false when it is still up after the wait bound.
func (g *gates) awaitFence(slot int) bool {
	f := g.fenceOf(slot)
	if f == nil {
		return true
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	for f != nil {
		select {
		case <-f.done:
		case <-t.C:
			return false
		}
		f = g.fences[slot].Load()
	}
	return true
}

// fenced reports whether slot is fenced; the caller holds its shard.
func (g *gates) fenced(slot uint16) bool { return g.fenceOf(int(slot)) != nil }

// markKeys records the keys of a write command that is about to run in
// slot; the caller holds the slot's shard (or the keyspace exclusively).
func (s *Server) markKeys(slot int, cmd *slots.Command, args [][]byte) {
	if slot < 0 {
		if cmd.Has(slots.FlagWrite) && !cmd.HasKeys() {
			s.markAllReset() // FLUSHALL and the like: every tracked slot may be emptied
		}
		return
	}
	if cmd.Has(slots.FlagWrite) {
		s.markChanged(slot, cmd, args)
	}
}

// markChanged records the keys of a command that changed them in slot: a
// write, or a read that did (PFCOUNT storing the count it computed in
// the HyperLogLog, engine.Ctx.Propagate), which a migration must send
// again as it would a write; the caller holds the slot's shard.
func (s *Server) markChanged(slot int, cmd *slots.Command, args [][]byte) {
	t := s.gate.track(slot)
	if t == nil {
		return
	}
	var buf [8]int
	for _, i := range cmd.RouteKeyIndexes(args, buf[:0]) {
		t.dirty[string(args[i])] = struct{}{}
	}
}

// markKey records one key written in slot outside a command's own run (a
// blocked client served by a push); the caller holds the slot's shard.
func (s *Server) markKey(slot uint16, key []byte) {
	if t := s.gate.track(int(slot)); t != nil {
		t.dirty[string(key)] = struct{}{}
	}
}

// markAllReset flags every tracked slot as emptied; the caller holds the
// keyspace exclusively.
func (s *Server) markAllReset() {
	for _, t := range s.gate.tracks {
		if t != nil {
			t.reset = true
		}
	}
}

// fenceRefusal is the reply of a command that reached a fenced slot under
// its lock.
const fenceRefusal = resp.ErrTryAgain
