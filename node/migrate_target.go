package node

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// incoming is a migration this node receives: its staged values, served
// to nobody until the commit installs them.
type incoming struct {
	id      string
	source  cluster.NodeID
	slots   []uint16
	client  int64                    // the connection it came on
	staged  map[string]*engine.Entry // key -> value
	partial map[string][]byte        // chunked values still arriving
}

// maxAborted bounds the remembered aborted migration ids.
const maxAborted = 4096

func (m *migrator) abortLocked(id string) {
	delete(m.incoming, id)
	if len(m.aborted) >= maxAborted {
		clear(m.aborted)
	}
	m.aborted[id] = true
}

// clientGone drops the staging of the migrations that came on a closed
// connection (the source starts afresh, or resolves by MIGRATE-STATUS).
func (m *migrator) clientGone(clientID int64) {
	m.tmu.Lock()
	defer m.tmu.Unlock()
	for id, in := range m.incoming {
		if in.client == clientID {
			m.abortLocked(id)
		}
	}
}

// notReceivingLocked returns ss without the slots of incoming migrations;
// the caller holds tmu.
func (m *migrator) notReceivingLocked(ss []uint16) []uint16 {
	return slices.DeleteFunc(ss, func(sl uint16) bool {
		for _, in := range m.incoming {
			if slices.Contains(in.slots, sl) {
				return true
			}
		}
		return false
	})
}

// cmdMigrateTarget handles the MIGRATE-* subcommands of SHARDGATE on the
// target; args[1] is the subcommand, args[2] the migration id.
func (m *migrator) cmdMigrateTarget(c *client, sub string, args [][]byte) {
	if len(args) < 3 {
		c.w.Error("ERR wrong number of arguments for 'shardgate|" + sub + "' command")
		return
	}
	id := string(args[2])
	m.tmu.Lock()
	defer m.tmu.Unlock()
	in := m.incoming[id]
	need := func(n int) bool {
		if len(args) != n {
			c.w.Error("ERR wrong number of arguments for 'shardgate|" + sub + "' command")
			return false
		}
		return true
	}
	known := func() bool {
		if in == nil {
			c.w.Error("ERR unknown or aborted migration " + id)
			return false
		}
		return true
	}
	switch sub {
	case "migrate-begin": // id source ranges
		if !need(5) {
			return
		}
		if m.aborted[id] {
			c.w.Error("ERR migration " + id + " was aborted")
			return
		}
		ss, err := parseRanges(string(args[4]))
		if err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
		v := m.cl.View()
		for _, sl := range ss {
			if v.Owns(sl) {
				c.w.Error("ERR slot " + strconv.Itoa(int(sl)) + " is already served here")
				return
			}
		}
		// A source retrying the same slots replaces its earlier staging.
		for oid, o := range m.incoming {
			if o.source == cluster.NodeID(args[3]) {
				m.abortLocked(oid)
			}
		}
		m.incoming[id] = &incoming{id: id, source: cluster.NodeID(args[3]), slots: ss, client: c.id,
			staged: map[string]*engine.Entry{}, partial: map[string][]byte{}}
		c.w.OK()
	case "migrate-put": // id key payload [MORE]
		if len(args) != 5 && len(args) != 6 {
			need(5)
			return
		}
		if !known() {
			return
		}
		key := string(args[3])
		if len(args) == 6 {
			in.partial[key] = append(in.partial[key], args[4]...)
			c.w.OK()
			return
		}
		b := args[4]
		if p, ok := in.partial[key]; ok {
			b = append(p, b...)
			delete(in.partial, key)
		}
		e, err := engine.DecodeLoaded(b)
		if err != nil {
			c.w.Error("ERR bad migrated value for key: " + err.Error())
			return
		}
		in.staged[key] = e
		c.w.OK()
	case "migrate-del": // id key
		if !need(4) || !known() {
			return
		}
		delete(in.staged, string(args[3]))
		delete(in.partial, string(args[3]))
		c.w.OK()
	case "migrate-reset": // id slot
		if !need(4) || !known() {
			return
		}
		sl, err := strconv.Atoi(string(args[3]))
		if err != nil || sl < 0 || sl >= slots.Count {
			c.w.Error("ERR bad slot")
			return
		}
		for k := range in.staged {
			if int(slots.Slot([]byte(k))) == sl {
				delete(in.staged, k)
			}
		}
		c.w.OK()
	case "migrate-abort": // id
		if !need(3) {
			return
		}
		m.abortLocked(id)
		c.w.OK()
	case "migrate-commit": // id epoch
		if !need(4) {
			return
		}
		epoch, err := strconv.ParseUint(string(args[3]), 10, 64)
		if err != nil || epoch == 0 {
			c.w.Error("ERR bad epoch")
			return
		}
		if m.aborted[id] {
			c.w.Error("ERR migration " + id + " was aborted")
			return
		}
		if !known() {
			return
		}
		if err := m.install(in, epoch); err != nil {
			m.abortLocked(id)
			c.w.Error("ERR commit refused: " + err.Error())
			return
		}
		delete(m.incoming, id)
		c.w.OK()
	case "migrate-status": // id epoch ranges
		if !need(5) {
			return
		}
		epoch, err1 := strconv.ParseUint(string(args[3]), 10, 64)
		ss, err2 := parseRanges(string(args[4]))
		if err1 != nil || err2 != nil {
			c.w.Error("ERR bad epoch or slots")
			return
		}
		// Committed: each slot has a claim at the commit's epoch or
		// later, this node's or, if it has passed the slots on since,
		// another's. "aborted" would let the source serve them again.
		v := m.cl.View()
		committed := true
		for _, sl := range ss {
			if v.Slots[sl].Epoch < epoch {
				committed = false
			}
		}
		if committed {
			c.w.Simple("committed")
			return
		}
		m.abortLocked(id) // from now on a late COMMIT fails
		c.w.Simple("aborted")
	default:
		c.w.Error("ERR unknown subcommand '" + sub + "'")
	}
}

// install moves the staged values into the keyspace, then claims the
// slots: clients reach them only once every value is in place.
func (m *migrator) install(in *incoming, epoch uint64) error {
	ks := m.s.ks
	bySlot := map[uint16][]string{}
	for k := range in.staged {
		sl := slots.Slot([]byte(k))
		bySlot[sl] = append(bySlot[sl], k)
	}
	for _, sl := range in.slots {
		ks.RLock()
		sh := ks.Shard(sl)
		sh.Lock()
		if ks.Flush(sh) > 0 { // leftovers of a slot this node does not serve
			m.s.logDrop(sl)
		}
		// A WATCH from before the slot went away (it comes back) is
		// broken: its key may have changed on the other node.
		sh.TouchAllWatched()
		for _, k := range bySlot[sl] {
			ks.Set(sh, []byte(k), in.staged[k])
			m.s.logInstall(sl, k, in.staged[k])
		}
		sh.Unlock()
		ks.RUnlock()
	}
	undo := func() {
		for _, sl := range in.slots {
			ks.RLock()
			sh := ks.Shard(sl)
			sh.Lock()
			if m.s.ownerRefusal(sl) != "" && ks.Flush(sh) > 0 {
				m.s.logDrop(sl)
			}
			sh.Unlock()
			ks.RUnlock()
		}
	}
	if l := m.s.aof; l != nil {
		// The values are on disk (by the fsync policy) before the slots
		// are claimed: a crash after the claim must find them.
		if err := l.Wait(l.Stats().PendingLSN); err != nil {
			undo()
			return fmt.Errorf("logging the migrated values: %w", err)
		}
	}
	// Commit writes the claim to disk before it is heard of: an error
	// means it took no effect (cluster.ErrNotPersisted included).
	if err := m.cl.Commit(in.slots, m.self, epoch); err != nil {
		undo()
		return err
	}
	m.stats.slotsIn.Add(int64(len(in.slots)))
	m.s.log.Info("slots received", "from", in.source, "slots", formatSlots(in.slots), "keys", len(in.staged), "epoch", epoch)
	return nil
}
