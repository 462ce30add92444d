package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// Prometheus metrics (Options.MetricsAddr): what INFO reports, read when
// scraped, so serving them costs the command path nothing. The counters
// are INFO's and restart from 0 after CONFIG RESETSTAT, which Prometheus's
// rate() takes for a restart; error replies by code count from the start.

// metricsServer serves /metrics from New's listener between Serve and
// Close.
type metricsServer struct {
	ln   net.Listener
	reg  *prometheus.Registry
	mu   sync.Mutex
	http *http.Server // set by serve
	done chan struct{}
	shut bool
}

// newMetricsServer listens on addr, so that a bad or busy address is
// New's error.
func newMetricsServer(s *Server, addr string) (*metricsServer, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("node: bad metrics address %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("node: metrics listener: %w", err)
	}
	m := &metricsServer{ln: ln, reg: prometheus.NewRegistry(), done: make(chan struct{})}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newNodeCollector(s),
	)
	return m, nil
}

// serve starts the HTTP server unless close came first.
func (m *metricsServer) serve(log interface{ Error(string, ...any) }) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shut || m.http != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	m.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
}

// close stops the server (or only the listener, if it never started) and
// waits for it; later calls do nothing.
func (m *metricsServer) close() {
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return
	}
	m.shut = true
	srv := m.http
	m.mu.Unlock()
	if srv == nil {
		m.ln.Close()
		return
	}
	srv.Close()
	<-m.done
}

// MetricsAddr is the address /metrics is served on; nil when metrics are
// off.
func (s *Server) MetricsAddr() net.Addr {
	if s.metrics == nil {
		return nil
	}
	return s.metrics.ln.Addr()
}

// nodeCollector reads the node's state at each scrape.
type nodeCollector struct {
	s                                            *Server
	cmdCalls, cmdSeconds, cmdFailed, cmdRejected *prometheus.Desc
	errorReplies                                 *prometheus.Desc
	keys, expiring, slotsServed                  *prometheus.Desc
	aofLastWrite, aofSize                        *prometheus.Desc
	simple                                       []simpleMetric
}

// simpleMetric is one unlabelled series.
type simpleMetric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func() float64
}

func newNodeCollector(s *Server) *nodeCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("shardgate_node_"+name, help, labels, nil)
	}
	c := &nodeCollector{
		s:            s,
		cmdCalls:     desc("commands_total", "Commands run, by command (INFO commandstats calls).", "command"),
		cmdSeconds:   desc("command_duration_seconds_total", "Time spent running commands, by command (INFO commandstats usec).", "command"),
		cmdFailed:    desc("command_failures_total", "Commands that ran and replied an error, by command (INFO commandstats failed_calls).", "command"),
		cmdRejected:  desc("command_rejections_total", "Commands refused before running (arity, NOAUTH, MOVED, CROSSSLOT ...), by command (INFO commandstats rejected_calls).", "command"),
		errorReplies: desc("error_replies_total", "Error replies, by error code (the reply's first word), from the start (CONFIG RESETSTAT does not reset these).", "code"),
		keys:         desc("keys", "Keys held, expired ones not yet reclaimed included (INFO keyspace keys)."),
		expiring:     desc("expiring_keys", "Keys with a time to live (INFO keyspace expires)."),
		slotsServed:  desc("slots_served", "Hash slots this node serves: 16384 for a standalone node."),
		aofLastWrite: desc("aof_last_write_ok", "1 while the append-only log's last write succeeded, 0 after a failed one (INFO aof_last_write_status); absent without a log."),
		aofSize:      desc("aof_size_bytes", "Size of the append-only log, snapshot and increments (INFO aof_current_size); absent without a log."),
	}
	st := &s.stats
	add := func(name, help string, kind prometheus.ValueType, get func() int64) {
		c.simple = append(c.simple, simpleMetric{desc(name, help), kind, func() float64 { return float64(get()) }})
	}
	add("connected_clients", "Open client connections.", prometheus.GaugeValue,
		func() int64 { return int64(s.clients.Len()) })
	add("blocked_clients", "Clients blocked in BLPOP, BLMOVE, XREAD ... BLOCK and the like.", prometheus.GaugeValue, s.blk.blocked.Load)
	add("connections_received_total", "Client connections accepted (INFO total_connections_received).", prometheus.CounterValue, st.connections.Load)
	add("rejected_connections_total", "Client connections refused by maxclients (INFO rejected_connections).", prometheus.CounterValue, st.rejected.Load)
	add("commands_processed_total", "Commands processed (INFO total_commands_processed).", prometheus.CounterValue, st.commands.Load)
	add("net_input_bytes_total", "Bytes read from clients (INFO total_net_input_bytes).", prometheus.CounterValue, st.netInput.Load)
	add("net_output_bytes_total", "Bytes written to clients (INFO total_net_output_bytes).", prometheus.CounterValue, st.netOutput.Load)
	add("expired_keys_total", "Keys removed because their time to live ran out (INFO expired_keys).", prometheus.CounterValue, s.ks.Stats.ExpiredKeys.Load)
	add("keyspace_hits_total", "Successful key lookups (INFO keyspace_hits).", prometheus.CounterValue, s.ks.Stats.KeyspaceHits.Load)
	add("keyspace_misses_total", "Lookups of missing keys (INFO keyspace_misses).", prometheus.CounterValue, s.ks.Stats.KeyspaceMiss.Load)
	add("memory_used_bytes", "Live Go heap, which stands in for Redis's used_memory (INFO used_memory).", prometheus.GaugeValue,
		func() int64 { return redisinfo.ReadMemory().Used })
	add("maxmemory_bytes", "The maxmemory limit; 0: none (INFO maxmemory).", prometheus.GaugeValue,
		func() int64 { return int64(min(s.maxMemory.Load(), 1<<63-1)) })
	add("loading", "1 while the node loads its data at start and answers LOADING (INFO loading).", prometheus.GaugeValue,
		func() int64 { return int64(boolInt(s.load.active.Load())) })
	return c
}

// Describe sends every series' descriptor.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cmdCalls, c.cmdSeconds, c.cmdFailed, c.cmdRejected, c.errorReplies,
		c.keys, c.expiring, c.slotsServed, c.aofLastWrite, c.aofSize} {
		ch <- d
	}
	for _, m := range c.simple {
		ch <- m.desc
	}
}

// Collect reads the node's counters, counts its keys and slots, and
// sends them.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	for _, m := range c.simple {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get())
	}
	for _, st := range s.cmdStats.Snapshot() {
		ch <- prometheus.MustNewConstMetric(c.cmdCalls, prometheus.CounterValue, float64(st.Calls), st.Name)
		ch <- prometheus.MustNewConstMetric(c.cmdSeconds, prometheus.CounterValue, float64(st.Usec)/1e6, st.Name)
		ch <- prometheus.MustNewConstMetric(c.cmdFailed, prometheus.CounterValue, float64(st.Failed), st.Name)
		ch <- prometheus.MustNewConstMetric(c.cmdRejected, prometheus.CounterValue, float64(st.Rejected), st.Name)
	}
	for _, e := range s.errs.Cumulative() {
		ch <- prometheus.MustNewConstMetric(c.errorReplies, prometheus.CounterValue, float64(e.N), e.Code)
	}
	keys, expiring := s.countKeys()
	ch <- prometheus.MustNewConstMetric(c.keys, prometheus.GaugeValue, float64(keys))
	ch <- prometheus.MustNewConstMetric(c.expiring, prometheus.GaugeValue, float64(expiring))
	served := slots.Count
	if s.own != nil {
		served = 0
		for slot := range slots.Count {
			if mine, _ := s.own.Slot(uint16(slot)); mine {
				served++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.slotsServed, prometheus.GaugeValue, float64(served))
	if log := s.loadedLog(); log != nil {
		st := log.Stats()
		ok := 1.0
		if st.LastWriteErr != "" && st.LastWriteErr != "ok" {
			ok = 0
		}
		ch <- prometheus.MustNewConstMetric(c.aofLastWrite, prometheus.GaugeValue, ok)
		ch <- prometheus.MustNewConstMetric(c.aofSize, prometheus.GaugeValue, float64(st.BaseSize+st.LogsSize))
	}
}

// countKeys returns the keys held and those with a time to live, as INFO
// keyspace counts them.
func (s *Server) countKeys() (keys, expiring int64) {
	s.ks.RLock()
	defer s.ks.RUnlock()
	(&engine.Ctx{KS: s.ks}).EachShard(func(sh *engine.Shard) bool {
		keys += int64(sh.Len())
		expiring += int64(sh.Expires())
		return true
	})
	return keys, expiring
}
