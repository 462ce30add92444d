package node

import (
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// INFO [section ...], with Redis 7.0's section and field names and
// "\r\n" line endings (a verbatim string in RESP3).
//
// Every field carries the node's real value; where the node lacks the
// mechanism Redis measures, the field keeps Redis's name with the value
// that is true for the node (no fork: the copy-on-write sizes are 0; no
// replicas: connected_slaves:0; one thread: io_threads_active:0).
// Approximations, marked "approx" next to the field below:
//   - memory: used_memory is the Go heap in use, used_memory_rss the memory
//     the runtime holds from the OS, the allocator_* fields the Go heap's
//     spans, used_memory_startup the heap before any data (the overhead;
//     the rest is the dataset), the peak is sampled every 100 ms
//     (redisinfo.MemorySection);
//   - avg_ttl samples a few expiring keys per slot, like Redis's estimate;
//   - expired_stale_perc is 0.00 and client buffers are not counted
//     (mem_clients_normal, as CLIENT LIST's buffer fields);
//   - os, gcc_version, mem_allocator describe the Go build, not a C one.
//
// commandstats and latencystats come from internal/cmdstats, whose
// latency histograms have Redis's layout. The memory and stats sections
// have every field of Redis 7.0's; the others, Redis's fields about fork,
// COW, defrag, tracking, the replication backlog contents and I/O threads
// beyond the ones listed are not produced.

// infoSection is one section: its lower-case name, whether plain INFO
// includes it, and its writer.
type infoSection struct {
	name  string // as INFO's arguments name it
	title string // as its "# " header spells it
	deflt bool
	gen   func(s *Server, c *client, b *infoBuf)
}

// infoSections in Redis's order.
var infoSections = []infoSection{
	{"server", "Server", true, (*Server).infoServer},
	{"clients", "Clients", true, (*Server).infoClients},
	{"memory", "Memory", true, (*Server).infoMemory},
	{"persistence", "Persistence", true, (*Server).infoPersistence},
	{"stats", "Stats", true, (*Server).infoStats},
	{"replication", "Replication", true, (*Server).infoReplication},
	{"cpu", "CPU", true, (*Server).infoCPU},
	{"modules", "Modules", true, func(*Server, *client, *infoBuf) {}},
	{"commandstats", "Commandstats", false, func(s *Server, _ *client, b *infoBuf) { s.cmdStats.CommandStats(b.str) }},
	{"errorstats", "Errorstats", true, (*Server).infoErrorStats},
	{"latencystats", "Latencystats", false, func(s *Server, _ *client, b *infoBuf) { s.cmdStats.LatencyStats(b.str) }},
	{"cluster", "Cluster", true, func(_ *Server, _ *client, b *infoBuf) { b.int("cluster_enabled", 1) }},
	{"keyspace", "Keyspace", true, (*Server).infoKeyspace},
}

// cmdInfo answers INFO: no argument or "default" means the default
// sections, "all" and "everything" every section (there are no module
// sections), other words name sections; unknown names are ignored.
func (s *Server) cmdInfo(c *client, args [][]byte) {
	want := map[string]bool{}
	all := false
	deflt := len(args) == 1
	for _, a := range args[1:] {
		name := strings.ToLower(string(slots.CString(a))) // Redis: sdsnew(argv[i]->ptr)
		switch name {
		case "all", "everything":
			all = true
		case "default":
			deflt = true
		default:
			want[name] = true
		}
	}
	var b infoBuf
	for _, sec := range infoSections {
		if !(all || (deflt && sec.deflt) || want[sec.name]) {
			continue
		}
		if len(b.b) > 0 {
			b.b = append(b.b, "\r\n"...)
		}
		b.b = append(b.b, "# "...)
		b.b = append(b.b, sec.title...)
		b.b = append(b.b, "\r\n"...)
		sec.gen(s, c, &b)
	}
	c.w.Verbatim(string(b.b))
}

// infoBuf builds "field:value\r\n" lines.
type infoBuf struct{ b []byte }

func (b *infoBuf) str(k, v string) {
	b.b = append(b.b, k...)
	b.b = append(b.b, ':')
	b.b = append(b.b, v...)
	b.b = append(b.b, "\r\n"...)
}

func (b *infoBuf) int(k string, v int64) { b.str(k, strconv.FormatInt(v, 10)) }

func (s *Server) infoServer(c *client, b *infoBuf) {
	_, port := s.listenHostPort()
	redisinfo.ServerFields(redisinfo.Server{
		Version: redisVersion, Mode: "cluster", RunID: s.runID, Port: port,
		Now: s.opts.Now(), Start: s.start,
	}, b.str)
}

func (s *Server) infoClients(c *client, b *infoBuf) {
	b.int("connected_clients", int64(len(s.snapshotClients())))
	b.int("cluster_connections", 0)
	b.int("maxclients", int64(s.cfg.MaxClients()))
	b.int("client_recent_max_input_buffer", 0)  // approx: not tracked
	b.int("client_recent_max_output_buffer", 0) // approx: not tracked
	b.int("blocked_clients", s.blk.blocked.Load())
	b.int("tracking_clients", 0)
	b.int("clients_in_timeout_table", s.blk.timed.Load())
}

func (s *Server) infoMemory(c *client, b *infoBuf) {
	redisinfo.MemorySection(s.memory(), b.str)
}

func (s *Server) infoPersistence(c *client, b *infoBuf) {
	sv := &s.saves
	sv.mu.Lock()
	running, started := sv.running, sv.started
	changes := s.ks.Changes() - sv.changesAtSave
	lastSave, saveStatus, saveSecs, saves := sv.lastSave, sv.saveStatus, sv.saveSecs, sv.saves
	rwStatus, rwSecs, rewrites, rwFails := sv.rwStatus, sv.rwSecs, sv.rewrites, sv.rwFailsInRow
	schedRW, keysLoaded := sv.schedRW, sv.keysLoaded
	sv.mu.Unlock()
	current := func(k jobKind) int64 {
		if running != k {
			return -1
		}
		return int64(s.opts.Now().Sub(started) / time.Second)
	}
	flag := func(on bool) int64 {
		if on {
			return 1
		}
		return 0
	}
	loading := s.load.active.Load()
	b.int("loading", flag(loading))
	b.int("async_loading", 0)
	// No fork, so no copy-on-write: these stay 0 (Redis's values without
	// a child).
	b.int("current_cow_peak", 0)
	b.int("current_cow_size", 0)
	b.int("current_cow_size_age", 0)
	b.str("current_fork_perc", "0.00")
	b.int("current_save_keys_processed", 0)
	b.int("current_save_keys_total", 0)
	b.int("rdb_changes_since_last_save", changes)
	b.int("rdb_bgsave_in_progress", flag(running == jobSave))
	b.int("rdb_last_save_time", lastSave.Unix())
	b.str("rdb_last_bgsave_status", saveStatus)
	b.int("rdb_last_bgsave_time_sec", saveSecs)
	b.int("rdb_current_bgsave_time_sec", current(jobSave))
	b.int("rdb_saves", saves)
	b.int("rdb_last_cow_size", 0)
	b.int("rdb_last_load_keys_expired", 0)
	b.int("rdb_last_load_keys_loaded", keysLoaded)
	log := s.loadedLog() // nil while loading: the load opens it
	b.int("aof_enabled", flag(log != nil))
	b.int("aof_rewrite_in_progress", flag(running == jobRewrite))
	b.int("aof_rewrite_scheduled", flag(schedRW))
	b.int("aof_last_rewrite_time_sec", rwSecs)
	b.int("aof_current_rewrite_time_sec", current(jobRewrite))
	b.str("aof_last_bgrewrite_status", rwStatus)
	b.int("aof_rewrites", rewrites)
	b.int("aof_rewrites_consecutive_failures", rwFails)
	status := "ok"
	var st aof.Stats
	if log != nil {
		st = log.Stats()
		if st.LastWriteErr != "" && st.LastWriteErr != "ok" {
			status = "err" // as Redis: "ok" or "err"
		}
	}
	b.str("aof_last_write_status", status)
	b.int("aof_last_cow_size", 0)
	b.int("module_fork_in_progress", 0)
	b.int("module_fork_last_cow_size", 0)
	// While loading, Redis's log is off (aof_enabled:0) but configured:
	// its fields print, zero.
	if log != nil || loading && s.opts.AOF != nil {
		b.int("aof_current_size", st.BaseSize+st.LogsSize)
		b.int("aof_base_size", st.BaseSize)
		b.int("aof_pending_rewrite", flag(schedRW))
		b.int("aof_buffer_length", st.BufferedBytes)
		b.int("aof_pending_bio_fsync", 0)
		b.int("aof_delayed_fsync", 0)
	}
	if loading {
		s.infoLoading(b)
	}
}

func (s *Server) infoStats(c *client, b *infoBuf) {
	st := &s.stats
	ops, in, out := s.rates.Current()
	redisinfo.StatsSection(redisinfo.Stats{
		Connections:      st.connections.Load(),
		Commands:         st.commands.Load(),
		Ops:              ops,
		NetInput:         st.netInput.Load(),
		NetOutput:        st.netOutput.Load(),
		InputRate:        in,
		OutputRate:       out,
		Rejected:         st.rejected.Load(),
		ExpiredKeys:      s.ks.Stats.ExpiredKeys.Load(),
		ExpireCycleMs:    st.expireCycle.Load() / int64(time.Millisecond),
		ExpireTimeCap:    s.ks.Stats.ExpireTimeCap.Load(),
		KeyspaceHits:     s.ks.Stats.KeyspaceHits.Load(),
		KeyspaceMisses:   s.ks.Stats.KeyspaceMiss.Load(),
		UnexpectedErrors: st.unexpectedErrors.Load(),
		ErrorReplies:     s.errs.Total(),
		Reads:            st.reads.Load(),
		Writes:           st.writes.Load(),
	}, b.str)
}

func (s *Server) infoReplication(c *client, b *infoBuf) {
	redisinfo.ReplicationFields(s.replID, b.str)
}

func (s *Server) infoCPU(c *client, b *infoBuf) { redisinfo.CPUFields(b.str) }

func (s *Server) infoErrorStats(c *client, b *infoBuf) {
	s.errs.Fields(b.str)
}

// infoKeyspace prints db0 when it holds keys. Keys not yet reclaimed after
// expiring count, as in Redis. Inside EXEC the transaction already holds
// the keyspace (client.txCtx), so nothing is locked again.
func (s *Server) infoKeyspace(c *client, b *infoBuf) {
	ctx := c.txCtx
	if ctx == nil {
		s.ks.RLock()
		defer s.ks.RUnlock()
		ctx = &engine.Ctx{KS: s.ks}
	}
	now := s.opts.Now().UnixMilli()
	var keys, expires, ttlSum, ttlN int64
	ctx.EachShard(func(sh *engine.Shard) bool {
		keys += int64(sh.Len())
		n := sh.Expires()
		expires += int64(n)
		if n > 0 {
			// approx: avg_ttl from up to 3 expiring keys among the first
			// 20 of each slot, as Redis estimates it from samples.
			seen, found := 0, 0
			sh.Keys(func(_ string, e *engine.Entry) bool {
				seen++
				if e.Expire > now {
					ttlSum += e.Expire - now
					ttlN++
					found++
				}
				return found < 3 && seen < 20
			})
		}
		return true
	})
	if keys == 0 {
		return
	}
	avg := int64(0)
	if ttlN > 0 {
		avg = ttlSum / ttlN
	}
	b.str("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", keys, expires, avg))
}

// rateSampler computes INFO's instantaneous_* values (redisinfo.Rates,
// sampled by sampleRates) and keeps the heap peak for used_memory_peak.
type rateSampler struct {
	redisinfo.Rates
	peak atomic.Int64
}

// sampleRates runs until the server stops.
func (s *Server) sampleRates() {
	t := time.NewTicker(redisinfo.RateInterval)
	defer t.Stop()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.rates.Tick(now, [3]int64{s.stats.commands.Load(), s.stats.netInput.Load(), s.stats.netOutput.Load()})
			metrics.Read(heap)
			if heap[0].Value.Kind() == metrics.KindUint64 {
				s.rates.notePeak(int64(heap[0].Value.Uint64()))
			}
		}
	}
}

// notePeak records a heap size and returns the peak seen so far.
func (r *rateSampler) notePeak(n int64) int64 {
	for {
		p := r.peak.Load()
		if n <= p {
			return p
		}
		if r.peak.CompareAndSwap(p, n) {
			return n
		}
	}
}
