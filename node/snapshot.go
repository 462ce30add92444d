package node

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"

	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// Snapshots: the keyspace written out slot by slot, in the serialized
// form slot migration uses (engine.AppendEntry), while clients keep
// writing.
//
// A snapshot is not a picture of one instant. Each slot is dumped under
// its own lock, and with it the log's last LSN at that moment: the slot's
// data then includes exactly the records of that slot up to that LSN
// (every record of a slot is appended under the slot's lock), and none
// after it. Replay after a snapshot therefore skips, slot by slot, the
// records the snapshot already holds (replayFilter). Keyless records
// (FLUSHALL) hold the whole keyspace, so they fall between two slots'
// dumps and apply to exactly the slots dumped before them.
//
// A slot's lock is held while its values are serialized into memory, not
// while they are written: a slot stalls its own clients for the time it
// takes to encode its data (microseconds for typical slots; a single
// value of hundreds of MB takes that value's encoding time), and no other
// slot waits.

// snapshotSink receives a snapshot (aof.SnapshotWriter in production).
type snapshotSink interface {
	Slot(slot uint16, lsn uint64) error
	Entry(key, value []byte) error
}

// snapshotStats describes a snapshot written.
type snapshotStats struct {
	keys int
	// maxHold is the longest time one slot was held (the rewrite's
	// pause, in ns).
	maxHold int64
}

// writeSnapshot dumps every slot to w. lastLSN returns the log's last
// LSN (nil for a snapshot without a log), base is the LSN the snapshot's
// log starts after. A slot is listed if it has keys or records after base
// (the records replay must skip); the others are empty at base and stay
// so until their first record after the snapshot, which replay applies.
func (s *Server) writeSnapshot(w snapshotSink, lastLSN func() uint64, base uint64) (snapshotStats, error) {
	var (
		st   snapshotStats
		buf  []byte // the slot's serialized entries: key len, key, value len, value
		keys int
	)
	ks := s.ks
	for i := range slots.Count {
		sl := uint16(i)
		// A fresh time slice: the scheduler preempts a goroutine after
		// 10 ms, and one preempted while it holds a slot would stall that
		// slot's clients for as long as it waits (measured: slot holds of
		// up to 12 ms on two cores without this, for 60 KB of keys).
		runtime.Gosched()
		ks.RLock()
		sh := ks.Shard(sl)
		sh.Lock()
		t0 := s.opts.Now() // the hold, not the wait for the locks
		var lsn uint64
		if lastLSN != nil {
			lsn = lastLSN()
		}
		buf, keys = appendShard(buf[:0], sh)
		listed := keys > 0 || (lastLSN != nil && s.slotLSN[sl] > base)
		sh.Unlock()
		ks.RUnlock()
		st.maxHold = max(st.maxHold, int64(s.opts.Now().Sub(t0)))
		if s.snapPause != nil {
			s.snapPause(sl)
		}
		if !listed {
			continue
		}
		if err := w.Slot(sl, lsn); err != nil {
			return st, err
		}
		if err := emitShard(w, buf, keys); err != nil {
			return st, err
		}
		st.keys += keys
		if cap(buf) > 64<<20 {
			buf = nil // one huge slot's buffer is not kept for the rest
		}
	}
	return st, nil
}

// appendShard serializes every entry of sh (live or expired: replay runs
// with each record's own clock, so a key that expired since must still
// be there for the records before its expiry).
func appendShard(dst []byte, sh *engine.Shard) ([]byte, int) {
	n := 0
	sh.Keys(func(k string, e *engine.Entry) bool {
		dst = appendLenPrefixed(dst, []byte(k))
		mark := len(dst)
		dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // value length, patched below
		dst = engine.AppendEntry(dst, e)
		binary.LittleEndian.PutUint64(dst[mark:], uint64(len(dst)-mark-8))
		n++
		return true
	})
	return dst, n
}

func appendLenPrefixed(dst, b []byte) []byte {
	return append(binary.LittleEndian.AppendUint64(dst, uint64(len(b))), b...)
}

// emitShard passes the n entries serialized in buf to w.
func emitShard(w snapshotSink, buf []byte, n int) error {
	for range n {
		kl := binary.LittleEndian.Uint64(buf)
		key := buf[8 : 8+kl]
		buf = buf[8+kl:]
		vl := binary.LittleEndian.Uint64(buf)
		val := buf[8 : 8+vl]
		buf = buf[8+vl:]
		if err := w.Entry(key, val); err != nil {
			return err
		}
	}
	return nil
}

// snapshotLoader installs a snapshot into the keyspace, which the caller
// holds exclusively, and remembers each slot's LSN for replayFilter.
type snapshotLoader struct {
	s    *Server
	f    *replayFilter
	cur  int // the slot of the entries that follow, -1 before the first
	keys int
}

func (ld *snapshotLoader) Slot(slot uint16, lsn uint64) error {
	if int(slot) >= slots.Count {
		return fmt.Errorf("snapshot: slot %d out of range", slot)
	}
	ld.cur = int(slot)
	if ld.f != nil {
		ld.f.set(slot, lsn)
	}
	return nil
}

func (ld *snapshotLoader) Entry(key, value []byte) error {
	if err := ld.s.load.check(ld.s); err != nil {
		return err
	}
	if ld.cur < 0 {
		return fmt.Errorf("snapshot: entry %q before any slot", key)
	}
	if int(slots.Slot(key)) != ld.cur {
		return fmt.Errorf("snapshot: key %q is in slot %d, listed under slot %d", key, slots.Slot(key), ld.cur)
	}
	e, err := engine.DecodeLoaded(value)
	if err != nil {
		return fmt.Errorf("snapshot: key %q: %w", key, err)
	}
	sh := ld.s.ks.Shard(uint16(ld.cur))
	ld.s.ks.Set(sh, key, e) // Set copies the key
	ld.keys++
	return nil
}

// replayFilter tells which records a snapshot already holds: a slot's
// records up to the LSN its dump recorded. A slot the snapshot does not
// list has no records between the snapshot's base and its dump, and the
// log holds none up to the base, so 0 skips exactly nothing for it. The
// zero filter skips nothing.
type replayFilter struct {
	lsn []uint64 // by slot; nil without a snapshot
}

func (f *replayFilter) set(slot uint16, lsn uint64) {
	if f.lsn == nil {
		f.lsn = make([]uint64, slots.Count)
	}
	f.lsn[slot] = lsn
}

// holds reports whether the snapshot includes record lsn of slot.
func (f *replayFilter) holds(slot uint16, lsn uint64) bool {
	return f.lsn != nil && lsn <= f.lsn[slot]
}

// holdsAny reports whether the snapshot includes record lsn for some
// slot (a keyless record then applies only to the others).
func (f *replayFilter) holdsAny(lsn uint64) bool {
	if f.lsn == nil {
		return false
	}
	for _, l := range f.lsn {
		if lsn <= l {
			return true
		}
	}
	return false
}

// isFlush reports whether args is FLUSHALL or FLUSHDB, the keyless
// writes a snapshot may hold for some slots and not others.
func isFlush(args [][]byte) bool {
	n := strings.ToLower(string(args[0]))
	return n == "flushall" || n == "flushdb"
}

// replayFlush applies a logged FLUSHALL/FLUSHDB to the slots the snapshot
// does not already hold it for.
func (s *Server) replayFlush(f *replayFilter, lsn uint64) {
	for i := range slots.Count {
		if !f.holds(uint16(i), lsn) {
			s.ks.Flush(s.ks.Shard(uint16(i)))
		}
	}
}

// ensure the production sink satisfies the interface.
var _ snapshotSink = (*aof.SnapshotWriter)(nil)
