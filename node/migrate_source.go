package node

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/node/engine"
)

const (
	// chunkBytes is the most of one serialized value sent in one command.
	chunkBytes = 1 << 20
	// drainEvery bounds the commands in flight to the target before their
	// replies are read.
	drainEvery = 512
	// catchUpRounds bounds the rounds of resending written keys before the
	// fence; catchUpFew is the count at which they stop early.
	catchUpRounds = 8
	catchUpFew    = 64
)

// errAborted ends a migration that the target refused or that failed
// before the fence.
var errAborted = errors.New("node: migration aborted")

// runSource works through the planner's moves for this node, one batch at
// a time, until the server stops.
func (m *migrator) runSource() {
	t := time.NewTicker(m.o.PlanInterval)
	defer t.Stop()
	for {
		select {
		case <-m.s.stop:
			return
		case <-m.kick:
		case <-t.C:
		}
		for {
			to, batch := m.nextBatch()
			if batch == nil {
				break
			}
			if err := m.migrate(to, batch); err != nil {
				m.s.log.Warn("slot migration failed", "to", to.ID, "slots", formatSlots(batch), "err", err)
				select {
				case <-m.s.stop:
					return
				case <-time.After(m.o.PlanInterval):
				}
				break
			}
			select {
			case <-m.s.stop:
				return
			default:
			}
		}
	}
}

// setQueue replaces the moves this node is to make.
func (m *migrator) setQueue(q map[uint16]cluster.NodeID) {
	m.mu.Lock()
	m.queue = q
	m.queueAt = time.Now()
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// nextBatch takes up to BatchSlots queued slots that this node owns and
// that go to one alive target.
func (m *migrator) nextBatch() (cluster.Member, []uint16) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) == 0 {
		return cluster.Member{}, nil
	}
	if time.Since(m.queueAt) > 5*m.o.PlanInterval {
		m.queue = map[uint16]cluster.NodeID{} // the planner stopped asking
		return cluster.Member{}, nil
	}
	v := m.cl.View()
	var ss []uint16
	for sl := range m.queue {
		ss = append(ss, sl)
	}
	slices.Sort(ss)
	var to cluster.Member
	var batch []uint16
	for _, sl := range ss {
		t := m.queue[sl]
		if !v.Owns(sl) {
			delete(m.queue, sl)
			continue
		}
		if to.ID == "" {
			mb, ok := v.Member(t)
			if !ok || mb.State != cluster.StateAlive || mb.Role != cluster.RoleNode || mb.Addr == "" {
				delete(m.queue, sl)
				continue
			}
			to = mb
		}
		if t != to.ID {
			continue
		}
		batch = append(batch, sl)
		delete(m.queue, sl)
		if len(batch) == m.o.BatchSlots {
			break
		}
	}
	return to, batch
}

// migrate moves batch to the node to; see migrate.go for the steps.
func (m *migrator) migrate(to cluster.Member, batch []uint16) error {
	start := time.Now()
	rec := &migRecord{ID: redisinfo.RandomHex(8), Target: to.ID, Addr: to.Addr, Slots: batch, Phase: "copy"}
	if err := m.save(rec); err != nil {
		return fmt.Errorf("persisting the migration: %w", err)
	}
	p, err := dialPeer(to.Addr, m.s.cfg.RequirePass(), m.o.Timeout)
	if err != nil {
		m.save(nil)
		return err
	}
	defer p.Close()
	ranges := formatRanges(batch)
	if _, err := p.call("SHARDGATE", "MIGRATE-BEGIN", rec.ID, string(m.self), ranges); err != nil {
		m.save(nil)
		return err
	}
	m.track(batch, true)
	abort := func(err error) error {
		m.track(batch, false)
		p.call("SHARDGATE", "MIGRATE-ABORT", rec.ID)
		m.save(nil)
		m.stats.aborts.Add(1)
		return fmt.Errorf("%w: %v", errAborted, err)
	}
	keys := 0
	for _, sl := range batch {
		n, err := m.sendSlot(p, rec.ID, sl)
		if err != nil {
			return abort(err)
		}
		keys += n
	}
	if err := p.drain(); err != nil {
		return abort(err)
	}
	for range catchUpRounds {
		n, err := m.sendDirty(p, rec.ID, batch)
		if err != nil {
			return abort(err)
		}
		if err := p.drain(); err != nil {
			return abort(err)
		}
		keys += n
		if n < catchUpFew {
			break
		}
	}

	// The fence. Its epoch is persisted first: a restart finds the
	// record and fences again until it knows how the commit ended.
	// (A new record: the published one is read by SHARDGATE STATUS.)
	fenced := *rec
	fenced.Phase, fenced.Epoch = "fence", m.cl.View().Epoch+1
	rec = &fenced
	if err := m.save(rec); err != nil {
		return abort(err)
	}
	fenceStart := time.Now()
	f := m.raise(batch)
	n, err := m.sendDirty(p, rec.ID, batch)
	if err == nil {
		err = p.drain()
	}
	if err != nil {
		m.lower(batch, f)
		return abort(err)
	}
	keys += n
	_, err = p.call("SHARDGATE", "MIGRATE-COMMIT", rec.ID, strconv.FormatUint(rec.Epoch, 10))
	switch {
	case err == nil:
		err = m.finish(rec, f)
	case errors.Is(err, errPeerReply):
		m.lower(batch, f)
		return abort(err)
	default:
		// The answer is lost: the fence stays up until the outcome is known.
		m.s.log.Warn("slot migration: commit unanswered; slots stay fenced until the target says", "to", to.ID, "slots", formatSlots(batch), "err", err)
		err = m.resolve(rec, f)
	}
	fence := time.Since(fenceStart)
	m.stats.lastFenceUs.Store(fence.Microseconds())
	if us := fence.Microseconds(); us > m.stats.maxFenceUs.Load() {
		m.stats.maxFenceUs.Store(us)
	}
	m.stats.lastMoveUs.Store(time.Since(start).Microseconds())
	m.stats.lastMoveKeys.Store(int64(keys))
	if err == nil {
		m.s.log.Info("slots migrated", "to", to.ID, "slots", formatSlots(batch), "keys", keys,
			"took", time.Since(start).Round(time.Millisecond), "fence", fence.Round(time.Microsecond), "epoch", rec.Epoch)
	}
	return err
}

// finish completes a committed migration on the source: the claim, then
// the fence down (waiting commands see MOVED).
func (m *migrator) finish(rec *migRecord, f *fence) error {
	m.mu.Lock()
	for _, sl := range rec.Slots {
		m.handed[sl] = rec.Epoch
	}
	m.mu.Unlock()
	// The claim goes into the View at once and the fence comes down; the
	// disk write follows. A crash before it leaves the migration's record,
	// so the restart fences again and learns the outcome from the target.
	if err := m.cl.CommitUnsynced(rec.Slots, rec.Target, rec.Epoch); err != nil && !errors.Is(err, cluster.ErrStaleEpoch) {
		return fmt.Errorf("recording the commit: %w", err) // the fence stays: retried by resolve
	}
	m.lower(rec.Slots, f)
	m.track(rec.Slots, false)
	m.stats.migrations.Add(1)
	m.stats.slotsOut.Add(int64(len(rec.Slots)))
	if err := m.cl.Sync(); err != nil {
		return fmt.Errorf("persisting the commit (the record stays for the restart): %w", err)
	}
	return m.save(nil)
}

// resolve keeps the fence up until the commit's outcome is known: the
// target's table (gossip) or its answer to MIGRATE-STATUS.
func (m *migrator) resolve(rec *migRecord, f *fence) error {
	for {
		if m.committedInView(rec) {
			return m.finish(rec, f)
		}
		state, err := m.status(rec)
		switch {
		case err != nil:
			m.s.log.Debug("slot migration: asking the target", "err", err)
		case state == "committed":
			return m.finish(rec, f)
		case state == "aborted":
			m.lower(rec.Slots, f)
			m.track(rec.Slots, false)
			m.stats.aborts.Add(1)
			m.save(nil)
			return fmt.Errorf("%w: the target did not commit", errAborted)
		}
		select {
		case <-m.s.stop:
			return errors.New("node: stopping with a migration unresolved (resolved at restart)")
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// committedInView reports whether this node's table settles the
// migration: a claim at the commit's epoch or later for each slot. It is
// the target's commit, or a later move (the target passed the slots on,
// or they came back here): either way the fence's epoch is spent and the
// table says who serves the slots.
func (m *migrator) committedInView(rec *migRecord) bool {
	v := m.cl.View()
	for _, sl := range rec.Slots {
		if v.Slots[sl].Epoch < rec.Epoch {
			return false
		}
	}
	return true
}

func (m *migrator) status(rec *migRecord) (string, error) {
	p, err := dialPeer(rec.Addr, m.s.cfg.RequirePass(), m.o.Timeout)
	if err != nil {
		return "", err
	}
	defer p.Close()
	v, err := p.call("SHARDGATE", "MIGRATE-STATUS", rec.ID, strconv.FormatUint(rec.Epoch, 10), formatRanges(rec.Slots))
	if err != nil {
		return "", err
	}
	return string(v.Str), nil
}

// recover resolves a migration found persisted at start: a fenced one is
// fenced again (before any client is served) and resolved in the
// background; one still copying is abandoned.
func (m *migrator) recover() error {
	rec, err := m.load()
	if err != nil || rec == nil {
		return err
	}
	if rec.Phase != "fence" {
		m.s.log.Info("slot migration interrupted while copying: abandoned", "to", rec.Target, "slots", formatSlots(rec.Slots))
		if p, err := dialPeer(rec.Addr, m.s.cfg.RequirePass(), m.o.Timeout); err == nil {
			p.call("SHARDGATE", "MIGRATE-ABORT", rec.ID)
			p.Close()
		}
		return m.save(nil)
	}
	m.s.log.Warn("slot migration interrupted at its commit: slots fenced until the target says how it ended",
		"to", rec.Target, "slots", formatSlots(rec.Slots), "epoch", rec.Epoch)
	m.mu.Lock()
	m.rec = rec
	m.mu.Unlock()
	f := m.raise(rec.Slots)
	m.s.wg.Add(1)
	go func() {
		defer m.s.wg.Done()
		if err := m.resolve(rec, f); err != nil {
			m.s.log.Warn("slot migration", "err", err)
		}
	}()
	return nil
}

// track starts (on) or ends tracking of slots.
func (m *migrator) track(ss []uint16, on bool) {
	ks := m.s.ks
	for _, sl := range ss {
		ks.RLock()
		sh := ks.Shard(sl)
		sh.Lock()
		if on {
			m.s.gate.setTrack(sl, &slotTrack{dirty: map[string]struct{}{}})
		} else {
			m.s.gate.setTrack(sl, nil)
		}
		sh.Unlock()
		ks.RUnlock()
	}
}

// raise fences slots; lower takes the fence down and wakes the waiters.
func (m *migrator) raise(ss []uint16) *fence {
	f := &fence{done: make(chan struct{})}
	ks := m.s.ks
	for _, sl := range ss {
		ks.RLock()
		sh := ks.Shard(sl)
		sh.Lock()
		m.s.gate.raiseFence(sl, f)
		sh.Unlock()
		ks.RUnlock()
	}
	return f
}

func (m *migrator) lower(ss []uint16, f *fence) {
	ks := m.s.ks
	for _, sl := range ss {
		ks.RLock()
		sh := ks.Shard(sl)
		sh.Lock()
		m.s.gate.lowerFence(sl, f)
		sh.Unlock()
		ks.RUnlock()
	}
	close(f.done)
}

// sendSlot sends every key of slot.
func (m *migrator) sendSlot(p *peerConn, id string, sl uint16) (int, error) {
	ks := m.s.ks
	var keys []string
	ks.RLock()
	sh := ks.Shard(sl)
	sh.Lock()
	sh.Keys(func(k string, _ *engine.Entry) bool {
		keys = append(keys, k)
		return true
	})
	sh.Unlock()
	ks.RUnlock()
	for i, k := range keys {
		if err := m.sendKey(p, id, sl, k); err != nil {
			return i, err
		}
		if i%drainEvery == drainEvery-1 {
			if err := p.drain(); err != nil {
				return i, err
			}
		}
	}
	return len(keys), nil
}

// sendDirty sends the keys written in ss since they were last sent (the
// whole slot again if it was emptied meanwhile).
func (m *migrator) sendDirty(p *peerConn, id string, ss []uint16) (int, error) {
	ks := m.s.ks
	total := 0
	for _, sl := range ss {
		ks.RLock()
		sh := ks.Shard(sl)
		sh.Lock()
		t := m.s.gate.tracks[sl]
		var dirty map[string]struct{}
		reset := false
		if t != nil {
			dirty, reset = t.dirty, t.reset
			t.dirty, t.reset = map[string]struct{}{}, false
		}
		sh.Unlock()
		ks.RUnlock()
		if reset {
			if err := p.send([]byte("SHARDGATE"), []byte("MIGRATE-RESET"), []byte(id), []byte(strconv.Itoa(int(sl)))); err != nil {
				return total, err
			}
			n, err := m.sendSlot(p, id, sl)
			total += n
			if err != nil {
				return total, err
			}
			continue
		}
		for k := range dirty {
			if err := m.sendKey(p, id, sl, k); err != nil {
				return total, err
			}
			total++
			if total%drainEvery == 0 {
				if err := p.drain(); err != nil {
					return total, err
				}
			}
		}
	}
	return total, nil
}

// sendKey sends key's current value (or its deletion), serialized under
// the slot's lock and sent in chunks after it.
func (m *migrator) sendKey(p *peerConn, id string, sl uint16, key string) error {
	ks := m.s.ks
	now := m.s.opts.Now().UnixMilli()
	ks.RLock()
	sh := ks.Shard(sl)
	sh.Lock()
	e := ks.Peek(sh, []byte(key), now)
	var b []byte
	if e != nil {
		b = engine.AppendEntry(m.buf[:0], e)
	}
	sh.Unlock()
	ks.RUnlock()
	m.stats.keysSent.Add(1)
	if e == nil {
		return p.send([]byte("SHARDGATE"), []byte("MIGRATE-DEL"), []byte(id), []byte(key))
	}
	m.stats.bytesSent.Add(int64(len(b)))
	full := b
	for len(b) > chunkBytes {
		if err := p.send([]byte("SHARDGATE"), []byte("MIGRATE-PUT"), []byte(id), []byte(key), b[:chunkBytes], []byte("MORE")); err != nil {
			return err
		}
		b = b[chunkBytes:]
	}
	err := p.send([]byte("SHARDGATE"), []byte("MIGRATE-PUT"), []byte(id), []byte(key), b)
	if cap(full) <= 4<<20 {
		m.buf = full[:0] // reused: send copied it
	}
	return err
}
