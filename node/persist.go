package node

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/cmdlookup"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// Durability: the append-only log (node/aof).
//
// What is logged is every write command as it ran, with the clock it ran
// with: the engine takes all of its time from Ctx.Now and has no other
// source of nondeterminism, so replaying (now, args) in log order rebuilds
// the same data (XADD * gets the same id, SET EX the same absolute expiry,
// XREADGROUP the same delivery times). Effects that no client command
// spells out are logged as the command that has the same effect: a
// blocked BLPOP/BLMOVE/BLMPOP served by a push as LPOP/RPOP/LMOVE, a
// blocked XREADGROUP served by an XADD as the XREADGROUP with ">" it
// amounts to, a migrated value as an install record, a slot given away as
// a drop record. A transaction is one record, replayed whole or not at
// all.
//
// Records are appended while the command still holds its slot's lock, so
// the log orders the writes of one slot as they happened (writes to
// different slots commute; keyless writes hold the whole keyspace). A
// client's replies are sent only once its last record is durable by the
// --appendfsync policy (client.flush waits on the log): written for
// everysec and no, fsynced for always, many clients sharing one fsync.
// If the log cannot be written, the replies are not sent (the connection
// is closed) and, until a write succeeds again, write commands and PING
// get Redis's MISCONF error.
//
// The log is compacted by rewrites (save.go): a snapshot of every slot
// (snapshot.go) replaces the records before it; replay then skips, slot
// by slot, the records the snapshot already holds.

// AOFOptions turn on the append-only log.
type AOFOptions struct {
	Dir    string     // where the log lives
	Policy aof.Policy // --appendfsync
	// CutCorrupt loads a log with a corrupt record by cutting it there
	// (losing what follows), instead of refusing to start.
	CutCorrupt bool
	FS         aof.FS // nil: the real filesystem
	// The automatic rewrite, as Redis's auto-aof-rewrite-min-size and
	// auto-aof-rewrite-percentage: once the log is larger than
	// RewriteMinSize bytes and has grown by RewritePercent percent since
	// the last rewrite. Zero values mean Redis's defaults (64 MB, 100%);
	// a negative RewritePercent turns the automatic rewrite off.
	RewriteMinSize int64
	RewritePercent int
}

// loadAOF replays the log (after its snapshot, if the manifest names
// one) into the keyspace and opens it for appending. A node turning the
// log on for the first time over a DIR/dump.snap (saved while it was off)
// loads that snapshot and makes it the log's first snapshot.
func (s *Server) loadAOF(o *AOFOptions) error {
	start := time.Now()
	var out resp.Writer
	ks := s.ks
	ks.Lock()
	var filter replayFilter
	ld := &snapshotLoader{s: s, f: &filter, cur: -1}
	st, err := aof.Replay(aof.ReplayOptions{Dir: o.Dir, FS: s.loadFS(), Logger: s.log, CutCorrupt: o.CutCorrupt, Snapshot: ld},
		func(r *aof.Record) error {
			if err := s.load.check(s); err != nil {
				return err
			}
			out.Reset()
			return s.replayRecord(r, &filter, &out)
		})
	if err != nil {
		ks.Unlock()
		return fmt.Errorf("node: loading the append-only log: %w", err)
	}
	adopt := false
	if st.Files == 0 && s.opts.Dir != "" {
		if adopt, err = s.loadStandalone(); err != nil {
			ks.Unlock()
			return err
		}
	}
	// Replay ran each command at its logged time; the keys' idle times
	// count from the load, as after Redis's.
	ks.StampAccess(uint32(s.opts.Now().Unix()))
	s.saves.mu.Lock() // INFO reads it, also while loading
	s.saves.keysLoaded = int64(ld.keys) + s.saves.keysLoaded
	s.saves.mu.Unlock()
	if st.Records > 0 || ld.keys > 0 || adopt {
		s.log.Info("append-only log loaded", "snapshot_keys", ld.keys, "records", st.Records, "bytes", st.Bytes,
			"keys", s.keyCount(), "took", time.Since(start).Round(time.Millisecond))
	}
	ks.Unlock()
	l, err := aof.Open(aof.Options{Dir: o.Dir, Policy: o.Policy, FS: o.FS, Logger: s.log}, st.LastLSN)
	if err != nil {
		return fmt.Errorf("node: opening the append-only log: %w", err)
	}
	s.aof = l
	if adopt {
		s.log.Info("the append-only log is new and " + snapshotFileName + " exists: loaded it, writing it into the log")
		if _, err := s.rewriteLog(); err != nil {
			l.Close()
			return fmt.Errorf("node: writing %s into the new append-only log: %w", snapshotFileName, err)
		}
	}
	// Auto-rewrite measures growth from the base alone, as Redis 7.0 sets
	// aof_rewrite_base_size to the BASE file's size when it loads: a node
	// restarted before its log doubled still compacts it past the minimum.
	ls := l.Stats()
	s.saves.mu.Lock()
	s.saves.rewriteBase = ls.BaseSize
	s.saves.mu.Unlock()
	return nil
}

// replayRecord applies one record, but not what the snapshot already
// holds; the keyspace is held exclusively.
func (s *Server) replayRecord(r *aof.Record, f *replayFilter, out *resp.Writer) error {
	if r.Slot >= int32(slots.Count) {
		return fmt.Errorf("record %d: bad slot %d", r.LSN, r.Slot)
	}
	if r.Slot >= 0 && f.holds(uint16(r.Slot), r.LSN) {
		return nil
	}
	switch r.Kind {
	case aof.KindCommand, aof.KindTx:
		for _, args := range r.Cmds {
			if err := s.replayCommand(args, r.Now, r.LSN, f, out); err != nil {
				return fmt.Errorf("record %d: %w", r.LSN, err)
			}
		}
	case aof.KindInstall:
		if len(r.Cmds) != 1 || len(r.Cmds[0]) != 2 {
			return fmt.Errorf("record %d: malformed install", r.LSN)
		}
		e, err := engine.DecodeLoaded(r.Cmds[0][1])
		if err != nil {
			return fmt.Errorf("record %d: %w", r.LSN, err)
		}
		key := r.Cmds[0][0]
		s.ks.Set(s.ks.ShardOf(key), key, e)
	case aof.KindDropSlot:
		if r.Slot < 0 {
			return fmt.Errorf("record %d: bad slot %d", r.LSN, r.Slot)
		}
		s.ks.Flush(s.ks.Shard(uint16(r.Slot)))
	default:
		return fmt.Errorf("record %d: unknown kind %d", r.LSN, r.Kind)
	}
	return nil
}

// replayCommand runs one logged command with its clock, unless the
// snapshot already holds its effect.
func (s *Server) replayCommand(args [][]byte, now int64, lsn uint64, f *replayFilter, out *resp.Writer) error {
	if len(args) == 0 {
		return errors.New("empty command")
	}
	cmd, refusal := cmdlookup.Resolve(args)
	if cmd == nil || refusal != "" {
		return fmt.Errorf("command %q not replayable: %s", args[0], refusal)
	}
	ctx := engine.Ctx{KS: s.ks, Args: args, W: out, Now: now, Exclusive: true}
	var buf [8]int
	if idx := cmd.RouteKeyIndexes(args, buf[:0]); len(idx) > 0 {
		ctx.Shard = s.ks.ShardOf(args[idx[0]])
		if f.holds(ctx.Shard.Slot, lsn) {
			return nil // a command of a keyless transaction (FLUSHALL + ...)
		}
	} else if cmd.HasKeys() {
		// A keyed command whose arguments name no key (LMPOP with a
		// bad count): it failed when it ran, changing nothing.
		return nil
	} else if f.holdsAny(lsn) {
		// A keyless write the snapshot holds for the slots dumped after it.
		if !isFlush(args) {
			return fmt.Errorf("keyless command %q falls inside a snapshot", args[0])
		}
		s.replayFlush(f, lsn)
		return nil
	}
	r := &s.routes[cmd.ID]
	switch {
	case r.data != nil:
		r.data(&ctx)
	case cmd.FullName == "xreadgroup":
		req, errText := engine.ParseXRead(args, true)
		if errText != "" {
			return nil // it failed the same way when it ran
		}
		s.ks.XRead(out, s.ks.ShardOf(req.Keys[0]), &req, now)
	default:
		return fmt.Errorf("command %q has no replay", cmd.FullName)
	}
	return nil
}

// appendRecord appends rec to the log and notes, for a slot's record, the
// slot's last LSN (read by snapshots). The caller holds rec's slot, or the
// whole keyspace.
func (s *Server) appendRecord(rec *aof.Record) uint64 {
	lsn := s.aof.Append(rec)
	if rec.Slot >= 0 {
		s.slotLSN[rec.Slot] = lsn
		return lsn
	}
	// A record of the whole keyspace (a transaction over several slots,
	// or with a keyless command): each slot it wrote has a record after a
	// snapshot in progress, which must list the slot even if it ends up
	// empty, or replay would run the record again on the empty slot.
	for _, args := range rec.Cmds {
		cmd, _ := cmdlookup.Resolve(args)
		if cmd == nil {
			continue
		}
		var buf [8]int
		if idx := cmd.RouteKeyIndexes(args, buf[:0]); len(idx) > 0 {
			s.slotLSN[slots.Slot(args[idx[0]])] = lsn
		}
	}
	return lsn
}

// logCommand appends a write command that just ran in slot (-1: keyless)
// to the log, or to the transaction being run. The caller holds the
// command's locks.
func (s *Server) logCommand(c *client, slot int, now int64, args [][]byte) uint64 {
	if s.aof == nil {
		return 0
	}
	if c != nil && c.txLog != nil {
		c.txLog.Cmds = append(c.txLog.Cmds, cloneArgs(args))
		return 0
	}
	rec := aof.Record{Kind: aof.KindCommand, Slot: int32(slot), Now: now, Cmds: [][][]byte{args}}
	lsn := s.appendRecord(&rec)
	if c != nil {
		c.lsn = max(c.lsn, lsn)
	}
	return lsn
}

// logEffect logs what a served blocked command did, as the plain command
// with the same effect; c is the client whose command (or transaction)
// caused it, nil for a waiter served by another client's push (the
// pusher's reply then waits for it: its own record comes first anyway).
func (s *Server) logEffect(c *client, slot uint16, now int64, args ...[]byte) uint64 {
	return s.logCommand(c, int(slot), now, args)
}

// popEffect is the plain command with the effect of popFor.
func popEffect(req *blockReq, key []byte) [][]byte {
	side := func(front bool) []byte {
		if front {
			return []byte("LEFT")
		}
		return []byte("RIGHT")
	}
	switch req.op {
	case opMove:
		return [][]byte{[]byte("LMOVE"), key, req.dst, side(req.front), side(req.dstFront)}
	case opMpop:
		name := "RPOP"
		if req.front {
			name = "LPOP"
		}
		return [][]byte{[]byte(name), key, []byte(strconv.Itoa(max(req.count, 1)))}
	}
	if req.front {
		return [][]byte{[]byte("LPOP"), key}
	}
	return [][]byte{[]byte("RPOP"), key}
}

// xreadGroupEffect is the XREADGROUP ">" that a blocked reader served on
// key amounts to. Its COUNT is always given: a blocked read without one
// took at most engine.XReadBlockedCount entries, where the same command
// replayed without BLOCK would take them all.
func xreadGroupEffect(xr *engine.XReadRequest, key []byte) [][]byte {
	count := xr.Count
	if count <= 0 {
		count = engine.XReadBlockedCount
	}
	args := [][]byte{[]byte("XREADGROUP"), []byte("GROUP"), xr.Group, xr.Consumer,
		[]byte("COUNT"), []byte(strconv.FormatInt(count, 10))}
	if xr.NoAck {
		args = append(args, []byte("NOACK"))
	}
	return append(args, []byte("STREAMS"), key, []byte(">"))
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// misconf is the refusal of writes while the log cannot be written, as
// Redis words it (strerror's text).
func misconf(err error) string {
	return "MISCONF Errors writing to the AOF file: " + strerror(err)
}

// strerror renders err as C's strerror does: the errno's text with a
// capital letter ("No space left on device").
func strerror(err error) string {
	var errno syscall.Errno
	msg := err.Error()
	if errors.As(err, &errno) {
		msg = errno.Error()
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}

// logDrop logs that slot's keys were dropped; the caller holds its shard.
func (s *Server) logDrop(slot uint16) {
	if s.aof != nil {
		s.appendRecord(&aof.Record{Kind: aof.KindDropSlot, Slot: int32(slot), Now: s.opts.Now().UnixMilli()})
	}
}

// logInstall logs a value a migration installed under key; the caller
// holds its shard.
func (s *Server) logInstall(slot uint16, key string, e *engine.Entry) {
	if s.aof != nil {
		rec := aof.Record{Kind: aof.KindInstall, Slot: int32(slot), Now: s.opts.Now().UnixMilli(),
			Cmds: [][][]byte{{[]byte(key), engine.AppendEntry(nil, e)}}}
		s.appendRecord(&rec)
	}
}

// keyCount counts the keys (for the load's log line); the keyspace is
// held exclusively.
func (s *Server) keyCount() int {
	n := 0
	for i := range slots.Count {
		n += s.ks.Shard(uint16(i)).Len()
	}
	return n
}
