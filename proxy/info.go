package proxy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/slots"
)

// INFO [section ...] on the proxy: Redis's section and field names where
// they apply to the proxy itself (server, clients, stats, cluster), a
// "nodes" section with one line per node (address, slots, connections,
// requests, errors, mean batch latency), replication as a master without
// replicas, the proxy's own CPU time, and the memory, persistence and
// keyspace sections and the data's stats (keyspace hits and misses,
// expired and evicted keys) merged over the nodes that answer (each
// node's own INFO, fetched in parallel). Memory is the data's: the
// nodes' used_memory, rss and peak, each node process counted once (the
// nodes of 'shardgate up' share one process, and each reports all of
// it), so that tools reading INFO (redis-cli --stat) see the cluster's
// memory.

type infoSection struct {
	name, title string
	deflt       bool
	// gen writes the proxy's own section when the command is read; merge,
	// for the sections made from the nodes' INFO (nodes names the node
	// sections it reads), writes it once they have answered.
	gen   func(c *client, b *infoBuf)
	nodes []string
	merge func(c *client, b *infoBuf, reqs []*request)
}

var infoSections = []infoSection{
	{name: "server", title: "Server", deflt: true, gen: infoServer},
	{name: "clients", title: "Clients", deflt: true, gen: infoClients},
	{name: "memory", title: "Memory", deflt: true, nodes: []string{"server", "memory"},
		merge: infoMemory},
	{name: "persistence", title: "Persistence", deflt: true, nodes: []string{"persistence"},
		merge: mergePersistence},
	{name: "stats", title: "Stats", deflt: true, nodes: []string{"stats"}, merge: infoStats},
	{name: "replication", title: "Replication", deflt: true, gen: func(c *client, b *infoBuf) { redisinfo.ReplicationFields(c.srv.replID, b.str) }},
	{name: "cpu", title: "CPU", deflt: true, gen: func(_ *client, b *infoBuf) { redisinfo.CPUFields(b.str) }},
	{name: "modules", title: "Modules", deflt: true, gen: func(*client, *infoBuf) {}}, // none, as a Redis without modules
	{name: "commandstats", title: "Commandstats", gen: func(c *client, b *infoBuf) { c.srv.cmdStats.CommandStats(b.str) }},
	{name: "errorstats", title: "Errorstats", deflt: true, gen: func(c *client, b *infoBuf) { c.srv.errs.Fields(b.str) }},
	{name: "latencystats", title: "Latencystats", gen: func(c *client, b *infoBuf) { c.srv.cmdStats.LatencyStats(b.str) }},
	{name: "cluster", title: "Cluster", deflt: true, gen: infoCluster},
	{name: "nodes", title: "Nodes", deflt: true, gen: infoNodes},
	{name: "keyspace", title: "Keyspace", deflt: true, nodes: []string{"keyspace"}, merge: infoKeyspace},
}

type infoBuf struct{ b []byte }

func (b *infoBuf) str(k, v string) {
	b.b = append(b.b, k...)
	b.b = append(b.b, ':')
	b.b = append(b.b, v...)
	b.b = append(b.b, "\r\n"...)
}

func (b *infoBuf) int(k string, v int64) { b.str(k, strconv.FormatInt(v, 10)) }

// cmdInfo writes the proxy's sections; if the keyspace section is wanted
// it asks every node for theirs and sums them.
func cmdInfo(c *client, args [][]byte) {
	want := map[string]bool{}
	all := false
	deflt := len(args) == 1
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(slots.CString(a))); name {
		case "all", "everything":
			all = true
		case "default":
			deflt = true
		default:
			want[name] = true
		}
	}
	chosen := func(s infoSection) bool { return all || (deflt && s.deflt) || want[s.name] }
	// One INFO per node carries what the merged sections need.
	var nodeSections [][]byte
	asked := map[string]bool{}
	for _, sec := range infoSections {
		if sec.merge == nil || !chosen(sec) {
			continue
		}
		for _, n := range sec.nodes {
			if !asked[n] {
				asked[n] = true
				nodeSections = append(nodeSections, []byte(n))
			}
		}
	}
	var reqs []*request
	if nodeSections != nil {
		reqs = c.toAllUnlogged(append([][]byte{[]byte("INFO")}, nodeSections...)).reqs
	}
	c.answerHere()
	// The proxy's own sections are written now, the merged ones once the
	// nodes answer, each in its place.
	parts := make([]string, len(infoSections))
	for i, sec := range infoSections {
		if !chosen(sec) || sec.gen == nil {
			continue
		}
		var b infoBuf
		sec.gen(c, &b)
		parts[i] = string(b.b)
	}
	c.addMerge(func(c *client) {
		var b infoBuf
		for i, sec := range infoSections {
			if !chosen(sec) {
				continue
			}
			sectionHeader(&b, sec.title)
			if sec.merge != nil {
				sec.merge(c, &b, reqs)
			} else {
				b.b = append(b.b, parts[i]...)
			}
		}
		c.w.Verbatim(string(b.b))
	})
}

// infoKeyspace is db0 summed over the nodes that answer, as the memory:
// with a node down, INFO still shows the rest (DBSIZE, which must be
// exact, answers CLUSTERDOWN).
func infoKeyspace(_ *client, b *infoBuf, reqs []*request) {
	keys, expires, avgTTL := sumKeyspace(reqs)
	if keys > 0 {
		b.str("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", keys, expires, avgTTL))
	}
}

// mergePersistence is INFO persistence over the nodes that answer: a flag
// or a running time is the highest node's (loading:1 if any node loads),
// a status "err" if any node's is, rdb_last_save_time the oldest, and
// every other number (changes, saves, sizes) the sum. Fields come in the
// order the nodes give them.
func mergePersistence(_ *client, b *infoBuf, reqs []*request) {
	var order []string
	vals := map[string]string{}
	nodeInfoLines(reqs, func(_ int, section, k, v string) {
		if section != "Persistence" {
			return
		}
		old, seen := vals[k]
		if !seen {
			order = append(order, k)
			vals[k] = v
			return
		}
		vals[k] = mergePersistenceField(k, old, v)
	})
	for _, k := range order {
		b.str(k, vals[k])
	}
}

func mergePersistenceField(k, a, b string) string {
	switch {
	case strings.HasSuffix(k, "_status"):
		if a != "ok" {
			return a
		}
		return b
	case k == "current_fork_perc":
		return a
	}
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA != nil || errB != nil {
		return a
	}
	switch {
	case k == "rdb_last_save_time":
		x = min(x, y)
	case k == "loading", k == "async_loading", k == "aof_enabled",
		strings.HasSuffix(k, "_in_progress"), strings.HasSuffix(k, "_scheduled"),
		strings.HasSuffix(k, "_time_sec"), strings.HasSuffix(k, "_pending_rewrite"),
		strings.HasSuffix(k, "_consecutive_failures"), strings.HasSuffix(k, "_size_age"):
		x = max(x, y)
	default:
		x += y
	}
	return strconv.FormatInt(x, 10)
}

// nodeInfoLines calls f with each "field:value" line of each node's INFO
// reply that answered, with the title of the section it is in ("Stats"
// under "# Stats").
func nodeInfoLines(reqs []*request, f func(node int, section, field, value string)) {
	for i, r := range reqs {
		if r.info == nil {
			r.info = parseInfo(r.reply)
		}
		for _, l := range r.info {
			f(i, l.section, l.field, l.value)
		}
	}
}

// infoLine is one field of a node's INFO reply.
type infoLine struct{ section, field, value string }

// parseInfo splits an INFO reply into its fields (none for an error).
// Parsed once per reply: every merged section walks the same ones, and
// splitting the text again for each was most of the proxy's INFO cost.
func parseInfo(reply []byte) []infoLine {
	v := decodeReply(reply)
	if v.IsError() {
		return []infoLine{}
	}
	text := strings.TrimPrefix(string(v.Str), "txt:")
	lines := make([]infoLine, 0, strings.Count(text, "\n"))
	section := ""
	for line := range strings.SplitSeq(text, "\r\n") {
		if t, ok := strings.CutPrefix(line, "# "); ok {
			section = t
		} else if k, val, found := strings.Cut(line, ":"); found {
			lines = append(lines, infoLine{section, k, val})
		}
	}
	return lines
}

// infoMemory sums the nodes' memory, each node process once; the
// machine's memory is the proxy's.
func infoMemory(_ *client, b *infoBuf, reqs []*request) {
	redisinfo.MemorySection(nodesMemory(reqs), b.str) // the proxy holds no data: no maxmemory
}

// nodesMemory sums the memory in the nodes' INFO server and memory
// replies, each node process once.
func nodesMemory(reqs []*request) redisinfo.Memory {
	type mem struct {
		pid string
		m   redisinfo.Memory
	}
	nodes := make([]mem, len(reqs))
	nodeInfoLines(reqs, func(i int, _, k, v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		m := &nodes[i].m
		switch k {
		case "process_id":
			nodes[i].pid = v
		case "used_memory":
			m.Used = n
		case "used_memory_rss":
			m.RSS = n
		case "used_memory_peak":
			m.Peak = n
		case "used_memory_startup":
			m.Startup = n
		case "allocator_active":
			m.Active = n
		case "allocator_resident":
			m.Resident = n
		}
	})
	var sum redisinfo.Memory
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.pid != "" {
			if seen[n.pid] {
				continue
			}
			seen[n.pid] = true
		}
		sum.Used += n.m.Used
		sum.RSS += n.m.RSS
		sum.Peak += n.m.Peak
		sum.Startup += n.m.Startup
		sum.Active += n.m.Active
		sum.Resident += n.m.Resident
	}
	sum.Peak = max(sum.Peak, sum.Used)
	sum.System = redisinfo.SystemMemory()
	return sum
}

func sectionHeader(b *infoBuf, title string) {
	if len(b.b) > 0 {
		b.b = append(b.b, "\r\n"...)
	}
	b.b = append(b.b, "# "...)
	b.b = append(b.b, title...)
	b.b = append(b.b, "\r\n"...)
}

// sumKeyspace adds up the "db0:keys=..,expires=..,avg_ttl=.." lines of
// the nodes that answered.
func sumKeyspace(reqs []*request) (keys, expires, avgTTL int64) {
	// avg_ttl is each node's estimate over its keys with a TTL, so the
	// cluster's is their mean weighted by those keys (in floating point:
	// milliseconds times keys can pass int64).
	var ttlSum float64
	var ttlKeys int64
	nodeInfoLines(reqs, func(_ int, _, field, value string) {
		if field != "db0" {
			return
		}
		var nodeExpires, nodeAvg int64
		for _, kv := range strings.Split(value, ",") {
			k, val, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "keys":
				keys += n
			case "expires":
				nodeExpires = n
			case "avg_ttl":
				nodeAvg = n
			}
		}
		expires += nodeExpires
		if nodeAvg > 0 && nodeExpires > 0 {
			ttlSum += float64(nodeAvg) * float64(nodeExpires)
			ttlKeys += nodeExpires
		}
	})
	if ttlKeys > 0 {
		avgTTL = int64(ttlSum / float64(ttlKeys))
	}
	return keys, expires, avgTTL
}

func infoServer(c *client, b *infoBuf) {
	s := c.srv
	port := c.laddr
	if i := strings.LastIndexByte(c.laddr, ':'); i >= 0 {
		port = c.laddr[i+1:]
	}
	redisinfo.ServerFields(redisinfo.Server{
		Version: redisVersion, Mode: "cluster", RunID: s.myID, Port: port,
		Now: s.opts.Now(), Start: s.start,
	}, b.str)
	b.str("shardgate_role", "proxy")
	b.str("cross_slot", s.opts.CrossSlot.String())
}

func infoClients(c *client, b *infoBuf) {
	s := c.srv
	blocked, timed := s.blockedClients()
	b.int("connected_clients", int64(len(s.snapshotClients())))
	b.int("cluster_connections", 0)
	b.int("maxclients", int64(s.cfg.MaxClients()))
	b.int("client_recent_max_input_buffer", 0)  // not tracked
	b.int("client_recent_max_output_buffer", 0) // not tracked
	// Clients waiting in a blocking command on a node (blocking.go), and
	// those of them whose command has a timeout.
	b.int("blocked_clients", int64(blocked))
	b.int("tracking_clients", 0)
	b.int("clients_in_timeout_table", int64(timed))
}

// infoStats is the proxy's own counters, with the data's (expired keys,
// the expire cycle's time and the cycles it cut short, keyspace hits and
// misses) summed over the nodes that answer; the fields of what the proxy
// does not do (replication, forks, Pub/Sub) are 0.
func infoStats(c *client, b *infoBuf, reqs []*request) {
	sums := map[string]int64{}
	nodeInfoLines(reqs, func(_ int, _, k, v string) {
		switch k {
		case "expired_keys", "expired_time_cap_reached_count", "expire_cycle_cpu_milliseconds", "keyspace_hits", "keyspace_misses":
			n, _ := strconv.ParseInt(v, 10, 64)
			sums[k] += n
		}
	})
	st := &c.srv.stats
	ops, in, out := c.srv.rates.Current()
	redisinfo.StatsSection(redisinfo.Stats{
		Connections:    sinceReset(&st.connections, &st.atReset.connections),
		Commands:       sinceReset(&st.commands, &st.atReset.commands),
		Ops:            ops,
		NetInput:       sinceReset(&st.netInput, &st.atReset.netInput),
		NetOutput:      sinceReset(&st.netOutput, &st.atReset.netOutput),
		InputRate:      in,
		OutputRate:     out,
		Rejected:       sinceReset(&st.rejected, &st.atReset.rejected),
		ExpiredKeys:    sums["expired_keys"],
		ExpireCycleMs:  sums["expire_cycle_cpu_milliseconds"],
		ExpireTimeCap:  sums["expired_time_cap_reached_count"],
		KeyspaceHits:   sums["keyspace_hits"],
		KeyspaceMisses: sums["keyspace_misses"],
		ErrorReplies:   c.srv.errs.Total(),
		Reads:          sinceReset(&st.reads, &st.atReset.reads),
		Writes:         sinceReset(&st.writes, &st.atReset.writes),
	}, b.str)
	b.int("crossslot_rejections", sinceReset(&st.crossSlot, &st.atReset.crossSlot))
}

// infoRanges renders slot ranges for a key=value field of an INFO line,
// separated by spaces ("0-99 200-5460"), as CLUSTER NODES separates them:
// a comma would start another key=value pair, and INFO parsers (redis-py's,
// which RedisCluster runs at connect) fail on a pair without '='.
func infoRanges(rs []SlotRange) string { return strings.ReplaceAll(FormatRanges(rs), ",", " ") }

// infoNodes prints one line per node:
// node0:addr=127.0.0.1:7001,slots=0-5460,status=up,connections=2,
// requests=..,errors=..,avg_batch_latency_us=..,p99_batch_latency_us=..
//
// connections counts the node's open connections (shared and dedicated);
// errors counts failed connection attempts and connections lost with
// requests in flight; the latencies are of client batches' round trips to
// the node (the p99 estimated from histogram buckets, within a bucket's
// width).
//
// Nodes are numbered in the order the proxy met them (the static list's
// order in static mode). status is up, down (unreachable: its slots
// answer CLUSTERDOWN until a redial works), dead (the cluster view says
// so) or retired (no longer a member and owning nothing; its line stays so
// numbers keep their meaning).
func infoNodes(c *client, b *infoBuf) {
	rt := c.srv.route
	for i, p := range rt.all() {
		conns, status := p.numConns(), p.status()
		avg, p99 := p.latency.meanAndP99()
		b.str("node"+strconv.Itoa(i), fmt.Sprintf("addr=%s,slots=%s,status=%s,connections=%d,requests=%d,errors=%d,avg_batch_latency_us=%d,p99_batch_latency_us=%d",
			p.addr, infoRanges(rt.ranges(i)), status, conns, p.requests.Load(), p.errors.Load(), avg.Microseconds(), p99.Microseconds()))
	}
}

// status is the node's state as INFO nodes shows it: up, down (its last
// connection attempt failed, or the proxy cut it off), or the cluster
// view's word for a node that is not live (dead, retired, ...).
func (p *nodePool) status() string {
	if st := p.getState(); st != poolLive {
		return st.String()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down.Load() || p.lastErr != nil {
		return "down"
	}
	return "up"
}

// infoCluster is the cluster section: cluster_enabled (the proxy always
// presents a cluster), the mode (static: --nodes; gossip: following a
// cluster view), the redirections followed, and in gossip mode the view:
// cluster id, this proxy's member id, the table's epoch, member counts,
// the slots assigned and those the proxy can serve now (their node is
// neither dead in the view nor unreachable from here, as CLUSTER INFO's
// cluster_slots_ok counts them), and one line per member:
//
//	member0:id=<40 hex>,role=node,addr=127.0.0.1:7001,state=alive,slots=0-5460 10923-12000
func infoCluster(c *client, b *infoBuf) {
	rt := c.srv.route
	b.int("cluster_enabled", 1)
	// applyTable swaps the view and the slots' owners under rt.mu: holding
	// it here keeps the epoch, the claims and the slots served from one
	// view, not from either side of an update.
	rt.mu.Lock()
	defer rt.mu.Unlock()
	t := rt.view.Load()
	if t == nil {
		b.str("cluster_mode", "static")
	} else {
		b.str("cluster_mode", "gossip")
	}
	b.int("redirects_moved", rt.redirects.moved.Load())
	b.int("redirects_ask", rt.redirects.ask.Load())
	b.int("redirects_tryagain", rt.redirects.tryAgain.Load())
	b.int("redirects_exhausted", rt.redirects.exhausted.Load())
	if t == nil {
		return
	}
	var nodes, nodesUp, proxies, proxiesUp int64
	for _, m := range t.members {
		if m.role == roleProxy {
			proxies++
			if m.state.live() {
				proxiesUp++
			}
		} else {
			nodes++
			if m.state.live() {
				nodesUp++
			}
		}
	}
	assigned, ok := int64(0), int64(0)
	for s := range t.slots {
		if t.slots[s].member >= 0 {
			assigned++
		}
		if c.srv.slotServed(uint16(s)) {
			ok++
		}
	}
	b.str("cluster_id", t.clusterID)
	b.str("cluster_my_id", t.self)
	b.str("cluster_table_epoch", strconv.FormatUint(t.epoch, 10))
	b.int("cluster_members", int64(len(t.members)))
	b.int("cluster_nodes", nodes)
	b.int("cluster_nodes_alive", nodesUp)
	b.int("cluster_proxies", proxies)
	b.int("cluster_proxies_alive", proxiesUp)
	b.int("cluster_slots_assigned", assigned)
	b.int("cluster_slots_served", ok)
	for i, m := range t.members {
		b.str("member"+strconv.Itoa(i), fmt.Sprintf("id=%s,role=%s,addr=%s,state=%s,slots=%s",
			m.id, m.role, m.addr, m.state, infoRanges(t.ranges(int32(i)))))
	}
}
