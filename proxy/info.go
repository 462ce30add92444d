package proxy

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// INFO [section ...] on the proxy: Redis's section and field names where
// they apply to the proxy itself (server, clients, stats, cluster), a
// "nodes" section with one line per node (address, slots, connections,
// requests, errors, mean batch latency), and the keyspace section summed
// over the nodes (each node's own INFO keyspace, fetched in parallel).

type infoSection struct {
	name, title string
	deflt       bool
	gen         func(c *client, b *infoBuf)
}

var infoSections = []infoSection{
	{"server", "Server", true, infoServer},
	{"clients", "Clients", true, infoClients},
	{"stats", "Stats", true, infoStats},
	{"cluster", "Cluster", true, infoCluster},
	{"nodes", "Nodes", true, infoNodes},
	{"keyspace", "Keyspace", true, nil}, // merged from the nodes
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
	all := len(args) == 1
	deflt := len(args) == 1
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "all", "everything":
			all = true
		case "default":
			deflt = true
		default:
			want[name] = true
		}
	}
	chosen := func(s infoSection) bool { return all || (deflt && s.deflt) || want[s.name] }
	var reqs []*request
	if chosen(infoSections[len(infoSections)-1]) {
		reqs = c.toAll([][]byte{[]byte("INFO"), []byte("keyspace")})
	}
	var b infoBuf
	for _, sec := range infoSections {
		if !chosen(sec) || sec.gen == nil {
			continue
		}
		sectionHeader(&b, sec.title)
		sec.gen(c, &b)
	}
	head := string(b.b)
	c.addMerge(func(c *client) {
		b := infoBuf{b: []byte(head)}
		if reqs != nil {
			sectionHeader(&b, "Keyspace")
			keys, expires, ok := sumKeyspace(reqs)
			if ok && keys > 0 {
				b.str("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", keys, expires))
			}
		}
		c.w.Verbatim(string(b.b))
	})
}

func sectionHeader(b *infoBuf, title string) {
	if len(b.b) > 0 {
		b.b = append(b.b, "\r\n"...)
	}
	b.b = append(b.b, "# "...)
	b.b = append(b.b, title...)
	b.b = append(b.b, "\r\n"...)
}

// sumKeyspace adds up the nodes' "db0:keys=..,expires=.." lines; ok is
// false if a node did not answer.
func sumKeyspace(reqs []*request) (keys, expires int64, ok bool) {
	ok = true
	for _, r := range reqs {
		v := decodeReply(r.reply)
		if v.IsError() {
			ok = false
			continue
		}
		text := string(v.Str)
		text = strings.TrimPrefix(text, "txt:")
		for _, line := range strings.Split(text, "\r\n") {
			rest, found := strings.CutPrefix(line, "db0:")
			if !found {
				continue
			}
			for _, kv := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseInt(val, 10, 64)
				switch k {
				case "keys":
					keys += n
				case "expires":
					expires += n
				}
			}
		}
	}
	return keys, expires, ok
}

func infoServer(c *client, b *infoBuf) {
	s := c.srv
	now := s.opts.Now()
	up := int64(now.Sub(s.start).Seconds())
	_, port, _ := strings.Cut(c.laddr, ":")
	if i := strings.LastIndexByte(c.laddr, ':'); i >= 0 {
		port = c.laddr[i+1:]
	}
	b.str("redis_version", redisVersion)
	b.str("redis_mode", "cluster")
	b.str("shardgate_role", "proxy")
	b.str("os", runtime.GOOS+" "+runtime.GOARCH)
	b.int("arch_bits", strconv.IntSize)
	b.int("process_id", int64(os.Getpid()))
	b.str("run_id", s.myID)
	b.str("tcp_port", port)
	b.int("server_time_usec", now.UnixMicro())
	b.int("uptime_in_seconds", up)
	b.int("uptime_in_days", up/86400)
	b.str("cross_slot", s.opts.CrossSlot.String())
}

func infoClients(c *client, b *infoBuf) {
	s := c.srv
	b.int("connected_clients", int64(s.numClients()))
	b.int("cluster_connections", 0)
	b.int("maxclients", int64(s.cfg.MaxClients()))
	// Clients waiting in a blocking command on a node (blocking.go).
	b.int("blocked_clients", int64(s.blockedClients()))
}

func infoStats(c *client, b *infoBuf) {
	st := &c.srv.stats
	ops, in, out := c.srv.rates.Current()
	b.int("total_connections_received", st.connections.Load())
	b.int("total_commands_processed", st.commands.Load())
	b.int("instantaneous_ops_per_sec", int64(ops))
	b.int("total_net_input_bytes", st.netInput.Load())
	b.int("total_net_output_bytes", st.netOutput.Load())
	b.str("instantaneous_input_kbps", strconv.FormatFloat(in/1024, 'f', 2, 64))
	b.str("instantaneous_output_kbps", strconv.FormatFloat(out/1024, 'f', 2, 64))
	b.int("rejected_connections", st.rejected.Load())
	b.int("crossslot_rejections", st.crossSlot.Load())
}

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
		p.mu.Lock()
		conns := len(p.all)
		status := "up"
		if time.Now().Before(p.downUntil) || p.lastErr != nil {
			status = "down"
		}
		p.mu.Unlock()
		if st := p.getState(); st != poolLive {
			status = st.String()
		}
		avg, p99 := p.latency.meanAndP99()
		b.str("node"+strconv.Itoa(i), fmt.Sprintf("addr=%s,slots=%s,status=%s,connections=%d,requests=%d,errors=%d,avg_batch_latency_us=%d,p99_batch_latency_us=%d",
			p.addr, FormatRanges(rt.ranges(i)), status, conns, p.requests.Load(), p.errors.Load(), avg.Microseconds(), p99.Microseconds()))
	}
}

// infoCluster is the cluster section: cluster_enabled (the proxy always
// presents a cluster), the mode (static: --nodes; gossip: following a
// cluster view), the redirections followed, and in gossip mode the view:
// cluster id, this proxy's member id, the table's epoch, member counts,
// the slots assigned and those whose node is up, and one line per member:
//
//	member0:id=<40 hex>,role=node,addr=127.0.0.1:7001,state=alive,slots=0-5460
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
		if n := rt.ownerOf(uint16(s)); n >= 0 && rt.pool(n).live() {
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
			m.id, m.role, m.addr, m.state, FormatRanges(t.ranges(int32(i)))))
	}
}
