package node

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/internal/servercmd"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/slots"
)

// BGREWRITEAOF, BGSAVE, SAVE, LASTSAVE and SHUTDOWN, and the automatic
// rewrite.
//
// Redis has two files and one child process: the AOF, compacted by
// BGREWRITEAOF, and the RDB snapshot written by SAVE/BGSAVE. Here the
// snapshot is the compaction: with the log on, a rewrite and a save are
// the same job (start a new log file, dump every slot into a snapshot
// next to it, switch the manifest to {snapshot, new log}), and they differ
// only in the counters INFO and LASTSAVE report for them. With the log off
// and --dir set, SAVE/BGSAVE write DIR/dump.snap, which the node loads at
// start when there is no log (Redis's appendonly no with an RDB).
//
// As in Redis, one job runs at a time: a BGREWRITEAOF that finds a save
// running (or runs inside EXEC) is scheduled for when it ends, a BGSAVE
// that finds a rewrite running is refused unless SCHEDULE is given. SAVE
// runs in the caller's goroutine (other clients are served meanwhile,
// unlike Redis's SAVE, which blocks the server) after any running job.

// snapshotFileName is the standalone snapshot in --dir when the log is off.
const snapshotFileName = "dump.snap"

type jobKind int

const (
	jobNone jobKind = iota
	jobRewrite
	jobSave
)

// saver runs the node's snapshots one at a time and keeps INFO's
// persistence counters.
type saver struct {
	mu        sync.Mutex
	running   jobKind
	started   time.Time
	idle      *sync.Cond // on mu: running went back to jobNone
	schedRW   bool       // BGREWRITEAOF waits for the running job
	schedSave bool       // BGSAVE SCHEDULE waits for the running job

	lastSave      time.Time // LASTSAVE
	changesAtSave int64     // rdb_changes_since_last_save's base
	saves         int64
	saveStatus    string // rdb_last_bgsave_status
	saveSecs      int64  // rdb_last_bgsave_time_sec
	rewrites      int64
	rwFailsInRow  int64
	rwStatus      string // aof_last_bgrewrite_status
	rwSecs        int64  // aof_last_rewrite_time_sec
	rewriteBase   int64  // the log's size after the last rewrite (auto-rewrite's base)
	lastPause     time.Duration
	keysLoaded    int64
}

func (sv *saver) init(now time.Time) {
	sv.idle = sync.NewCond(&sv.mu)
	sv.lastSave = now
	sv.saveStatus, sv.rwStatus = "ok", "ok"
	sv.saveSecs, sv.rwSecs = -1, -1
}

// claim marks kind running from now; sv.mu is held and nothing runs.
func (sv *saver) claim(kind jobKind, now time.Time) {
	sv.running, sv.started = kind, now
}

// persistEnabled reports whether SAVE/BGSAVE/BGREWRITEAOF have somewhere
// to write.
func (s *Server) persistEnabled() bool { return s.loadedLog() != nil || s.opts.Dir != "" }

// launchJob claims the job slot for kind and runs it in the background;
// s.saves.mu is held and nothing runs.
func (s *Server) launchJob(kind jobKind) {
	s.saves.claim(kind, s.opts.Now())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runJob(kind)
	}()
}

// runJob performs kind and then any job scheduled meanwhile.
func (s *Server) runJob(kind jobKind) {
	for kind != jobNone {
		err := s.snapshotNow(kind)
		sv := &s.saves
		sv.mu.Lock()
		s.finishJob(kind, err)
		kind = jobNone
		switch {
		case sv.schedRW && !s.isClosed():
			sv.schedRW = false
			kind = jobRewrite
		case sv.schedSave && !s.isClosed():
			sv.schedSave = false
			kind = jobSave
		}
		if kind != jobNone {
			sv.claim(kind, s.opts.Now())
		} else {
			sv.idle.Broadcast()
		}
		sv.mu.Unlock()
	}
}

// finishJob records a job's outcome; s.saves.mu is held.
func (s *Server) finishJob(kind jobKind, err error) {
	sv := &s.saves
	secs := int64(s.opts.Now().Sub(sv.started) / time.Second)
	status := "ok"
	if err != nil {
		status = "err"
	}
	switch kind {
	case jobRewrite:
		sv.rwStatus, sv.rwSecs = status, secs
		if err == nil {
			sv.rewrites++
			sv.rwFailsInRow = 0
		} else {
			sv.rwFailsInRow++
		}
	case jobSave:
		sv.saveStatus, sv.saveSecs = status, secs
		if err == nil {
			sv.saves++
		}
	}
	sv.running = jobNone
}

// snapshotNow writes a snapshot (a log rewrite when the log is on).
func (s *Server) snapshotNow(kind jobKind) error {
	start := s.opts.Now()
	changes := s.ks.Changes()
	what := "snapshot"
	if kind == jobRewrite {
		what = "append-only log rewrite"
	}
	s.log.Info(what+" started", "with_log", s.aof != nil)
	var (
		st  snapshotStats
		err error
	)
	if s.aof != nil {
		st, err = s.rewriteLog()
	} else {
		st, err = s.saveStandalone()
	}
	if errors.Is(err, errStopping) {
		s.log.Info(what + " abandoned: the node is shutting down")
		return err
	}
	if err != nil {
		s.log.Error(what+" failed", "err", err)
		return err
	}
	sv := &s.saves
	sv.mu.Lock()
	sv.lastPause = time.Duration(st.maxHold)
	if kind == jobSave {
		sv.lastSave = s.opts.Now()
		sv.changesAtSave = changes
	}
	if s.aof != nil {
		ls := s.aof.Stats()
		sv.rewriteBase = ls.BaseSize + ls.LogsSize
	}
	sv.mu.Unlock()
	s.log.Info(what+" done", "keys", st.keys, "took", s.opts.Now().Sub(start).Round(time.Millisecond),
		"longest_slot_pause", time.Duration(st.maxHold).Round(time.Microsecond))
	return nil
}

// errStopping aborts a snapshot when the node shuts down.
var errStopping = errors.New("node shutting down")

// stoppable wraps a sink so that a snapshot stops when the node does.
type stoppable struct {
	snapshotSink
	stop <-chan struct{}
}

func (w stoppable) Slot(slot uint16, lsn uint64) error {
	select {
	case <-w.stop:
		return errStopping
	default:
	}
	return w.snapshotSink.Slot(slot, lsn)
}

// rewriteLog compacts the log: a new log file, a snapshot of every slot,
// and the switch to {snapshot, new log}.
func (s *Server) rewriteLog() (snapshotStats, error) {
	base, err := s.aof.Rotate()
	if err != nil {
		return snapshotStats{}, fmt.Errorf("starting a new log file: %w", err)
	}
	sw, err := s.aof.CreateSnapshot(base)
	if err != nil {
		return snapshotStats{}, fmt.Errorf("creating the snapshot: %w", err)
	}
	st, err := s.writeSnapshot(stoppable{sw, s.stop}, s.aof.LastLSN, base)
	if err == nil {
		// The slots' LSNs are on disk before the snapshot counts.
		err = s.aof.SyncAppended()
	}
	if err == nil {
		err = sw.Commit()
	}
	if err != nil {
		sw.Abort()
		return st, fmt.Errorf("writing the snapshot: %w", err)
	}
	return st, nil
}

// saveStandalone writes DIR/dump.snap (the log is off).
func (s *Server) saveStandalone() (snapshotStats, error) {
	sw, err := aof.CreateSnapshotFile(s.fsys(), s.opts.Dir, snapshotFileName)
	if err != nil {
		return snapshotStats{}, err
	}
	st, err := s.writeSnapshot(stoppable{sw, s.stop}, nil, 0)
	if err == nil {
		err = sw.Commit()
	}
	if err != nil {
		sw.Abort()
		return st, err
	}
	return st, nil
}

// saveForeground is SAVE: after any running job, a snapshot in the
// caller's goroutine.
func (s *Server) saveForeground() error {
	sv := &s.saves
	sv.mu.Lock()
	for sv.running != jobNone {
		sv.idle.Wait()
	}
	sv.claim(jobSave, s.opts.Now())
	sv.mu.Unlock()
	err := s.snapshotNow(jobSave)
	sv.mu.Lock()
	bgSecs := sv.saveSecs
	s.finishJob(jobSave, err)
	sv.saveSecs = bgSecs // rdb_last_bgsave_time_sec: Redis times only BGSAVE
	sv.idle.Broadcast()
	sv.mu.Unlock()
	return err
}

// autoRewrite starts a rewrite when the log has grown past the
// thresholds, as Redis's auto-aof-rewrite-percentage and -min-size do:
// larger than MinSize and grown by Percent over its size after the last
// rewrite (or at start).
func (s *Server) autoRewrite() {
	o := s.opts.AOF
	if o.RewritePercent <= 0 {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		st := s.aof.Stats()
		size := st.BaseSize + st.LogsSize
		sv := &s.saves
		sv.mu.Lock()
		base := max(sv.rewriteBase, 1)
		due := sv.running == jobNone && size > o.RewriteMinSize && (size*100/base)-100 >= int64(o.RewritePercent)
		if due && sv.rwFailsInRow > 0 && s.opts.Now().Sub(sv.started) < time.Minute {
			due = false // after a failure, retry at most once a minute
		}
		if due {
			sv.claim(jobRewrite, s.opts.Now())
		}
		sv.mu.Unlock()
		if due {
			s.log.Info("the append-only log grew past the rewrite threshold", "size", size, "base", base)
			s.runJob(jobRewrite)
		}
	}
}

// Commands.

func (s *Server) cmdBgrewriteaof(c *client, args [][]byte) {
	if !s.persistEnabled() {
		c.w.Error(resp.ErrNoDataDir)
		return
	}
	sv := &s.saves
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch {
	case sv.running == jobRewrite:
		c.w.Error(resp.ErrRewriteInProgress)
	case sv.running != jobNone:
		sv.schedRW = true
		sv.rwFailsInRow = 0
		c.w.Simple("Background append only file rewriting scheduled")
	case c.txCtx != nil:
		// Inside EXEC Redis schedules it for right after; nothing here
		// needs the transaction to end first.
		s.launchJob(jobRewrite)
		c.w.Simple("Background append only file rewriting scheduled")
	default:
		s.launchJob(jobRewrite)
		c.w.Simple("Background append only file rewriting started")
	}
}

func (s *Server) cmdBgsave(c *client, args [][]byte) {
	schedule := false
	if len(args) > 1 {
		if len(args) > 2 || !equalFoldASCII(slots.CString(args[1]), "schedule") {
			c.w.Error(resp.ErrSyntax)
			return
		}
		schedule = true
	}
	if !s.persistEnabled() {
		c.w.Error(resp.ErrNoDataDir)
		return
	}
	sv := &s.saves
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch {
	case sv.running == jobSave:
		c.w.Error(resp.ErrSaveInProgress)
	case sv.running != jobNone || c.txCtx != nil:
		if !schedule && c.txCtx == nil {
			c.w.Error(resp.ErrBgsaveBusy)
			return
		}
		c.w.Simple("Background saving scheduled")
		if sv.running == jobNone {
			s.launchJob(jobSave)
		} else {
			sv.schedSave = true
		}
	default:
		s.launchJob(jobSave)
		c.w.Simple("Background saving started")
	}
}

func (s *Server) cmdSave(c *client, args [][]byte) {
	if !s.persistEnabled() {
		c.w.Error(resp.ErrNoDataDir)
		return
	}
	sv := &s.saves
	sv.mu.Lock()
	busy := sv.running == jobSave
	sv.mu.Unlock()
	if busy {
		c.w.Error(resp.ErrSaveInProgress)
		return
	}
	if err := s.saveForeground(); err != nil {
		c.w.Error(resp.ErrSaveFailed)
		return
	}
	c.w.OK()
}

func (s *Server) cmdLastsave(c *client, args [][]byte) {
	sv := &s.saves
	sv.mu.Lock()
	t := sv.lastSave
	sv.mu.Unlock()
	c.w.Int(t.Unix())
}

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. With the
// log on, the log is flushed, fsynced and closed whatever the flags (as
// Redis flushes its AOF); SAVE also compacts it first. With the log off,
// SAVE writes the snapshot (there are no save points, so without SAVE
// nothing is written, as Redis with save ""). A failed save keeps the
// node running unless FORCE. The client gets no reply: its connection
// closes with the node.
func (s *Server) cmdShutdown(c *client, args [][]byte) {
	o, msg := servercmd.ParseShutdown(args)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	if o.Abort {
		c.w.Error(resp.ErrNoShutdown) // nothing waits here (no replicas to catch up)
		return
	}
	save, force := o.Save, o.Force
	if s.load.active.Load() {
		save = false // as Redis: never save a half-loaded dataset
	}
	if save {
		var err error
		if !s.persistEnabled() {
			err = errors.New("no --dir to save to")
		} else {
			err = s.saveForeground()
		}
		if err != nil && !force {
			s.log.Error("SHUTDOWN: the save failed, not shutting down (SHUTDOWN SAVE FORCE would)", "err", err)
			c.w.Error(resp.ErrShutdownFailed)
			return
		}
	}
	s.log.Info("SHUTDOWN: shutting down", "client", c.id, "addr", c.raddr)
	c.closing = true
	go s.Close() // Close waits for this client's goroutine
}

// loadStandalone loads DIR/dump.snap, if there is one; the keyspace is
// held exclusively.
func (s *Server) loadStandalone() (bool, error) {
	path := filepath.Join(s.opts.Dir, snapshotFileName)
	// A SAVE or BGSAVE cut short (a crash) leaves its temporary file;
	// the snapshot before it is whole and is what loads.
	if err := s.fsys().Remove(path + ".tmp"); err == nil {
		s.log.Info("removed an unfinished snapshot left by an interrupted save", "file", path+".tmp")
	}
	start := time.Now()
	ld := &snapshotLoader{s: s, cur: -1}
	_, err := aof.LoadSnapshotFile(s.loadFS(), path, ld)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("node: loading %s: %w", path, err)
	}
	s.saves.mu.Lock()
	s.saves.keysLoaded = int64(ld.keys)
	s.saves.mu.Unlock()
	s.log.Info("snapshot loaded", "file", path, "keys", ld.keys, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// fsys is the filesystem persistence uses (tests inject faults).
func (s *Server) fsys() aof.FS {
	if s.opts.AOF != nil && s.opts.AOF.FS != nil {
		return s.opts.AOF.FS
	}
	return aof.OSFS()
}
