package node

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/cluster"
)

// The planner. One live node at a time plans: the alive data node with
// the lowest id. Every PlanInterval (and at once on SHARDGATE REBALANCE)
// it computes cluster.Plan over its View and sends each source its moves
// (SHARDGATE PLAN), which replace whatever that source was asked before;
// a source works through them batch by batch (migrate_source.go) and drops
// them when the planner stops repeating them. With AutoRebalance off the
// planner moves slots only when asked, or away from draining nodes.

// canDrain reports whether this node's slots have somewhere to go: it
// owns none, or another live node that is not draining could take them.
func (m *migrator) canDrain() bool {
	v := m.cl.View()
	if len(v.Ranges(m.self)) == 0 {
		return true
	}
	for _, mb := range v.Members {
		if mb.ID != m.self && mb.Role == cluster.RoleNode && mb.State == cluster.StateAlive && !mb.Draining {
			return true
		}
	}
	return false
}

// isPlanner reports whether this node is the planner in v.
func (m *migrator) isPlanner(v *cluster.View) bool {
	nodes := v.Alive(cluster.RoleNode)
	return len(nodes) > 0 && nodes[0].ID == m.self
}

// runPlanner plans until the server stops.
func (m *migrator) runPlanner() {
	t := time.NewTicker(m.o.PlanInterval)
	defer t.Stop()
	asked := false
	lastReason := ""
	// The last failure to hand each source its moves, logged when it
	// changes: a planner cut off from a source (it still reaches the
	// others, or gossip keeps it alive through them) would otherwise
	// stall the source's moves without a word.
	sendErr := map[cluster.NodeID]string{}
	for {
		select {
		case <-m.s.stop:
			return
		case <-t.C:
		case <-m.plan:
			asked = true
		}
		v := m.cl.View()
		if !m.isPlanner(v) {
			asked = false
			continue
		}
		draining := false
		for _, mb := range v.Alive(cluster.RoleNode) {
			if mb.Draining && len(v.Ranges(mb.ID)) > 0 {
				draining = true
			}
		}
		if !m.o.AutoRebalance && !asked && !draining {
			continue
		}
		moves, reason := cluster.Plan(v)
		if reason != "" {
			if reason != lastReason {
				m.s.log.Info("planner: not rebalancing", "reason", reason)
				lastReason = reason
			}
			continue
		}
		lastReason = ""
		if len(moves) == 0 {
			asked = false
			continue
		}
		bySource := map[cluster.NodeID][]cluster.Move{}
		for _, mv := range moves {
			bySource[mv.From] = append(bySource[mv.From], mv)
		}
		for src, mvs := range bySource {
			if src == m.self {
				m.setQueue(queueOf(mvs))
				continue
			}
			mb, ok := v.Member(src)
			if !ok || mb.Addr == "" {
				continue
			}
			err := m.sendPlan(mb.Addr, mvs)
			switch {
			case err == nil && sendErr[src] != "":
				m.s.log.Info("planner: the source takes its moves again", "source", src, "addr", mb.Addr)
				delete(sendErr, src)
			case err != nil && sendErr[src] != err.Error():
				m.s.log.Warn("planner: cannot hand a source its moves; its slots stay until it can be reached", "source", src, "addr", mb.Addr, "err", err)
				sendErr[src] = err.Error()
			}
		}
	}
}

func queueOf(mvs []cluster.Move) map[uint16]cluster.NodeID {
	q := map[uint16]cluster.NodeID{}
	for _, mv := range mvs {
		for _, sl := range mv.Slots {
			q[sl] = mv.To
		}
	}
	return q
}

// sendPlan sends a source its moves: SHARDGATE PLAN <to> <ranges> ...
func (m *migrator) sendPlan(addr string, mvs []cluster.Move) error {
	p, err := dialPeer(addr, m.s.cfg.RequirePass(), m.o.Timeout)
	if err != nil {
		return err
	}
	defer p.Close()
	args := []string{"SHARDGATE", "PLAN"}
	for _, mv := range mvs {
		args = append(args, string(mv.To), formatRanges(mv.Slots))
	}
	_, err = p.call(args...)
	return err
}

// askPlanner runs a planning round now: here if this node plans, else at
// the planner.
func (m *migrator) askPlanner() error {
	v := m.cl.View()
	if m.isPlanner(v) {
		select {
		case m.plan <- struct{}{}:
		default:
		}
		return nil
	}
	nodes := v.Alive(cluster.RoleNode)
	if len(nodes) == 0 {
		return fmt.Errorf("no alive node")
	}
	p, err := dialPeer(nodes[0].Addr, m.s.cfg.RequirePass(), m.o.Timeout)
	if err != nil {
		return err
	}
	defer p.Close()
	_, err = p.call("SHARDGATE", "REBALANCE")
	return err
}

// statusText is SHARDGATE STATUS: the node's part in migrations, as
// "field:value" lines like INFO.
func (m *migrator) statusText() string {
	v := m.cl.View()
	self := v.SelfMember()
	m.mu.Lock()
	queued := len(m.queue)
	rec := m.rec
	m.mu.Unlock()
	m.tmu.Lock()
	incoming := len(m.incoming)
	m.tmu.Unlock()
	owned := 0
	for i := range v.Slots {
		if v.Slots[i].Owner == m.self {
			owned++
		}
	}
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	line("node_id", m.self)
	line("slots_owned", owned)
	line("table_converged", boolInt(v.Converged()))
	line("draining", boolInt(self.Draining))
	line("weight", self.Weight)
	line("planner", boolInt(m.isPlanner(v)))
	line("auto_rebalance", boolInt(m.o.AutoRebalance))
	line("slots_queued", queued)
	if rec != nil {
		line("migrating_to", rec.Target)
		line("migrating_slots", formatRanges(rec.Slots))
		line("migrating_phase", rec.Phase)
	}
	line("migrations_incoming", incoming)
	line("migrations_done", m.stats.migrations.Load())
	line("migrations_aborted", m.stats.aborts.Load())
	line("slots_migrated_out", m.stats.slotsOut.Load())
	line("slots_migrated_in", m.stats.slotsIn.Load())
	line("keys_sent", m.stats.keysSent.Load())
	line("bytes_sent", m.stats.bytesSent.Load())
	line("last_migration_us", m.stats.lastMoveUs.Load())
	line("last_migration_keys", m.stats.lastMoveKeys.Load())
	line("last_fence_us", m.stats.lastFenceUs.Load())
	line("max_fence_us", m.stats.maxFenceUs.Load())
	// The node's view of the members, in the proxy's INFO cluster format,
	// so that 'shardgate cluster status --resp' pointed at a node sees
	// the proxies and which members left (CLUSTER NODES has neither).
	line("cluster_id", v.ClusterID)
	line("cluster_my_id", v.Self)
	line("cluster_table_epoch", v.Epoch)
	memberLines(v, line)
	return b.String()
}

// memberLines writes the view's members as memberN:id=...,role=...,
// addr=...,state=...,slots=... lines, numbered from 0.
func memberLines(v *cluster.View, line func(k string, v any)) {
	i := 0
	for _, mb := range v.Members {
		if mb.Role == cluster.RoleObserver && mb.State != cluster.StateAlive {
			// A finished `cluster status` run: it owned and served
			// nothing, and its record lingers until it is reaped.
			continue
		}
		var rs []string
		for _, r := range v.Ranges(mb.ID) {
			if r[0] == r[1] {
				rs = append(rs, strconv.Itoa(int(r[0])))
			} else {
				rs = append(rs, strconv.Itoa(int(r[0]))+"-"+strconv.Itoa(int(r[1])))
			}
		}
		line("member"+strconv.Itoa(i), fmt.Sprintf("id=%s,role=%s,addr=%s,state=%s,slots=%s",
			mb.ID, mb.Role, mb.Addr, mb.State, strings.Join(rs, " ")))
		i++
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cmdShardgate is the SHARDGATE command: shardgate's own cluster
// operations, on nodes that migrate slots. Subcommands:
//
//	PLAN <to> <ranges> [<to> <ranges> ...]  the planner's moves for this node
//	REBALANCE                               plan now (at the planner)
//	DRAIN [ON|OFF]                          move every slot away / stop that
//	STATUS                                  migration state and figures
//	MIGRATE-BEGIN|PUT|DEL|RESET|COMMIT|ABORT|STATUS ...  a source's transfer (migrate_target.go)
func (m *migrator) cmdShardgate(c *client, args [][]byte) {
	if len(args) < 2 {
		c.w.Error("ERR wrong number of arguments for 'shardgate' command")
		return
	}
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "plan":
		if len(args)%2 != 0 {
			c.w.Error("ERR wrong number of arguments for 'shardgate|plan' command")
			return
		}
		q := map[uint16]cluster.NodeID{}
		for i := 2; i+1 < len(args); i += 2 {
			ss, err := parseRanges(string(args[i+1]))
			if err != nil {
				c.w.Error("ERR " + err.Error())
				return
			}
			for _, sl := range ss {
				q[sl] = cluster.NodeID(args[i])
			}
		}
		m.setQueue(q)
		c.w.OK()
	case "rebalance":
		if err := m.askPlanner(); err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
		c.w.OK()
	case "drain":
		on := true
		if len(args) == 3 {
			switch strings.ToLower(string(args[2])) {
			case "on":
			case "off":
				on = false
			default:
				c.w.Error("ERR syntax error")
				return
			}
		} else if len(args) != 2 {
			c.w.Error("ERR syntax error")
			return
		}
		if on && !m.canDrain() {
			c.w.Error("ERR no other live node that is not draining can take this node's slots: add a node (or undo another's drain) first")
			return
		}
		if err := m.cl.SetDraining(on); err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
		c.w.OK()
	case "status":
		c.w.BulkString(m.statusText())
	default:
		if strings.HasPrefix(sub, "migrate-") {
			m.cmdMigrateTarget(c, sub, args)
			return
		}
		c.w.Error("ERR unknown subcommand '" + string(args[1]) + "'. Try SHARDGATE STATUS.")
	}
}
