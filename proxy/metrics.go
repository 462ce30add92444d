package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/slots"
)

// Prometheus metrics (Options.MetricsAddr), served at /metrics by the
// proxy's own HTTP server from a registry private to the Server:
//
//	shardgate_proxy_commands_total{command}            counter
//	shardgate_proxy_command_duration_seconds{command}  histogram
//	shardgate_proxy_crossslot_rejections_total         counter
//	shardgate_proxy_connected_clients                  gauge
//	shardgate_proxy_connections_received_total         counter
//	shardgate_proxy_rejected_connections_total         counter
//	shardgate_proxy_node_requests_total{node}          counter
//	shardgate_proxy_node_errors_total{node}            counter
//	shardgate_proxy_node_connections{node}             gauge
//	shardgate_proxy_node_up{node}                      gauge
//	shardgate_proxy_node_batch_duration_seconds{node}  histogram
//	shardgate_proxy_redirects_total{kind}              counter
//	shardgate_proxy_cluster_members{role,state}        gauge (cluster mode)
//	shardgate_proxy_cluster_epoch                      gauge (cluster mode)
//
// plus the Go runtime and process collectors. command is the command's
// full lower-case name ("get", "client|list"); a command the table does
// not know is counted under "unknown", an unknown subcommand under its
// parent's name. node is the node's address: the series follow the nodes
// the proxy knows, including those it met through the cluster view or a
// MOVED reply. kind is moved, ask or tryagain (redirections followed) or
// exhausted (commands that ran out of hops or of time).
//
// Command latency is measured per command, from when the proxy starts on
// the batch the command was read in (one clock read per batch: the
// commands a client pipelined arrive together) to when its reply is
// ready: for a command the proxy answers itself, right after it ran (one
// clock read per such command); for a forwarded or fanned-out command,
// when the last reply of the batch's round trip is in (one clock read per
// batch). It excludes writing the reply to the client.
//
// The hot path never touches the Prometheus library: each client keeps
// its batch's (command, start, ready) triples and adds them to per-command
// atomic buckets when the batch ends, one bucket and one sum update per
// run of equal commands. Everything else is read from the counters INFO
// already keeps, at scrape time. With MetricsAddr empty the cost is one
// nil check per command and one clock read per batch (CLIENT LIST's idle).

// latencyBounds are the histogram buckets' upper bounds, in nanoseconds.
var latencyBounds = [...]int64{
	10e3, 25e3, 50e3, 100e3, 250e3, 500e3,
	1e6, 2.5e6, 5e6, 10e6, 25e6, 50e6, 100e6, 250e6, 500e6,
	1e9, 2.5e9, 5e9, 10e9,
}

const numBuckets = len(latencyBounds) + 1 // the last is +Inf

func bucketOf(ns int64) int {
	for i, b := range latencyBounds {
		if ns <= b {
			return i
		}
	}
	return len(latencyBounds)
}

// latencyHist is a histogram of durations with non-cumulative buckets,
// updated with atomics only.
type latencyHist struct {
	buckets [numBuckets]atomic.Int64
	sumNs   atomic.Int64
}

// addN records n durations of ns nanoseconds each.
func (h *latencyHist) addN(ns, n int64) {
	h.buckets[bucketOf(ns)].Add(n)
	h.sumNs.Add(ns * n)
}

// snapshot returns the bucket counts, their total and the sum.
func (h *latencyHist) snapshot() (counts [numBuckets]int64, total, sumNs int64) {
	for i := range counts {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	return counts, total, h.sumNs.Load()
}

// quantile estimates the q-quantile in nanoseconds by interpolating in
// the bucket that holds it; above the last bound it says the last bound.
func quantile(counts [numBuckets]int64, total int64, q float64) int64 {
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var cum int64
	for i, n := range counts {
		if n == 0 || float64(cum+n) < rank {
			cum += n
			continue
		}
		if i == len(latencyBounds) {
			return latencyBounds[i-1]
		}
		lo := int64(0)
		if i > 0 {
			lo = latencyBounds[i-1]
		}
		frac := (rank - float64(cum)) / float64(n)
		return lo + int64(frac*float64(latencyBounds[i]-lo))
	}
	return latencyBounds[len(latencyBounds)-1]
}

// constHistogram turns a snapshot into a Prometheus histogram.
func constHistogram(desc *prometheus.Desc, h *latencyHist, labels ...string) (prometheus.Metric, int64) {
	counts, total, sum := h.snapshot()
	if total == 0 {
		return nil, 0
	}
	cum := make(map[float64]uint64, len(latencyBounds))
	var c int64
	for i, b := range latencyBounds {
		c += counts[i]
		cum[float64(b)/1e9] = uint64(c)
	}
	return prometheus.MustNewConstHistogram(desc, uint64(total), float64(sum)/1e9, cum, labels...), total
}

// latencyStats accumulates the round-trip times of a node's batches, for
// INFO (mean, p99) and the node histogram.
type latencyStats struct{ latencyHist }

func (l *latencyStats) add(d time.Duration) { l.addN(int64(d), 1) }

// Extra command ids after the table's: everything the table does not
// know (SEGBIT.* and unknown names) counts as "unknown".
const (
	extraUnknown = iota
	numExtra
)

var extraNames = [numExtra]string{"unknown"}

// metrics is a Server's Prometheus state.
type metrics struct {
	srv  *Server
	reg  *prometheus.Registry
	base time.Time // monotonic origin of clientMetrics times

	cmds  []latencyHist // by slots.Command.ID, then the extras
	names []string      // label per index of cmds

	cmdCount, cmdLatency, nodeLatency       *prometheus.Desc
	nodeRequests, nodeErrors, nodeConns     *prometheus.Desc
	nodeUp                                  *prometheus.Desc
	redirects, errorReplies, members, epoch *prometheus.Desc

	ln   net.Listener
	http *http.Server
}

// opMetric is one command of a client's current batch.
type opMetric struct {
	cmd          int32
	start, ready int64 // since metrics.base; ready 0: with the batch
}

// clientMetrics is a client's per-batch scratch, owned by its goroutine.
type clientMetrics struct {
	ops   []opMetric
	start int64 // the current batch's start; 0 before its first command
	// The last command looked up, to skip the table lookup for runs of
	// the same command.
	lastName []byte
	lastCmd  *slots.Command
}

// newMetrics builds the registry and listens on MetricsAddr (served from
// Serve on, closed by Close), so that a bad address is New's error.
func newMetrics(s *Server) (*metrics, error) {
	if _, _, err := net.SplitHostPort(s.opts.MetricsAddr); err != nil {
		return nil, fmt.Errorf("proxy: bad metrics address %q: %w", s.opts.MetricsAddr, err)
	}
	ln, err := net.Listen("tcp", s.opts.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics listener: %w", err)
	}
	m := &metrics{
		ln:    ln,
		srv:   s,
		reg:   prometheus.NewRegistry(),
		base:  s.clockBase, // the stats clock's: batchDone's end serves both
		cmds:  make([]latencyHist, slots.NumIDs()+numExtra),
		names: make([]string, slots.NumIDs()+numExtra),
		cmdCount: prometheus.NewDesc("shardgate_proxy_commands_total",
			"Commands received from clients, by command.", []string{"command"}, nil),
		cmdLatency: prometheus.NewDesc("shardgate_proxy_command_duration_seconds",
			"Time from reading a command (its pipelined batch) to its reply being ready, by command.", []string{"command"}, nil),
		nodeLatency: prometheus.NewDesc("shardgate_proxy_node_batch_duration_seconds",
			"Round-trip time of a client's batch of commands to a node, by node.", []string{"node"}, nil),
	}
	var walk func(c *slots.Command)
	walk = func(c *slots.Command) {
		m.names[c.ID] = c.FullName
		for _, sub := range c.Subcommands {
			walk(sub)
		}
	}
	for _, c := range slots.All() {
		walk(c)
	}
	for i, n := range extraNames {
		m.names[slots.NumIDs()+i] = n
	}

	m.nodeRequests = prometheus.NewDesc("shardgate_proxy_node_requests_total",
		"Commands sent to a node.", []string{"node"}, nil)
	m.nodeErrors = prometheus.NewDesc("shardgate_proxy_node_errors_total",
		"Failed connection attempts to a node and connections to it lost with requests in flight.", []string{"node"}, nil)
	m.nodeConns = prometheus.NewDesc("shardgate_proxy_node_connections",
		"Open connections to a node.", []string{"node"}, nil)
	m.nodeUp = prometheus.NewDesc("shardgate_proxy_node_up",
		"1 while the proxy sees a node as up (INFO nodes status=up), 0 while its connection attempts fail or it is dead in the cluster view.", []string{"node"}, nil)
	m.redirects = prometheus.NewDesc("shardgate_proxy_redirects_total",
		"Node redirections the proxy followed, by kind (moved, ask, tryagain), and commands whose redirections ran out of hops or of the redirect timeout (exhausted).", []string{"kind"}, nil)
	m.members = prometheus.NewDesc("shardgate_proxy_cluster_members",
		"Cluster members in the proxy's view, by role and state (cluster mode only).", []string{"role", "state"}, nil)
	m.errorReplies = prometheus.NewDesc("shardgate_proxy_error_replies_total",
		"Error replies sent to clients, by error code (the reply's first word: ERR, CLUSTERDOWN, CROSSSLOT, WRONGTYPE ...), as INFO errorstats counts them, but from the start (CONFIG RESETSTAT resets INFO's, not these).", []string{"code"}, nil)
	m.epoch = prometheus.NewDesc("shardgate_proxy_cluster_epoch",
		"The highest epoch in the slot table the proxy routes by (cluster mode only).", nil, nil)

	st := &s.stats
	counter := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m,
		counter("shardgate_proxy_crossslot_rejections_total", "Commands refused with CROSSSLOT.", st.crossSlot.Load),
		counter("shardgate_proxy_connections_received_total", "Client connections accepted.", st.connections.Load),
		counter("shardgate_proxy_rejected_connections_total", "Client connections refused (maxclients).", st.rejected.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shardgate_proxy_connected_clients", Help: "Open client connections."},
			func() float64 { return float64(s.numClients()) }),
	)
	return m, nil
}

// Describe and Collect make metrics the collector of the per-command and
// per-node series, which follow the nodes the proxy knows, and of the
// cluster view's.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.cmdCount
	ch <- m.cmdLatency
	ch <- m.nodeLatency
	ch <- m.nodeRequests
	ch <- m.nodeErrors
	ch <- m.nodeConns
	ch <- m.nodeUp
	ch <- m.redirects
	ch <- m.errorReplies
	ch <- m.members
	ch <- m.epoch
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for i := range m.cmds {
		h, total := constHistogram(m.cmdLatency, &m.cmds[i], m.names[i])
		if h == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.cmdCount, prometheus.CounterValue, float64(total), m.names[i])
		ch <- h
	}
	for _, p := range m.srv.route.all() {
		if p.getState() == poolRetired && p.numConns() == 0 {
			continue // gone from the cluster: its series end
		}
		if h, _ := constHistogram(m.nodeLatency, &p.latency.latencyHist, p.addr); h != nil {
			ch <- h
		}
		ch <- prometheus.MustNewConstMetric(m.nodeRequests, prometheus.CounterValue, float64(p.requests.Load()), p.addr)
		ch <- prometheus.MustNewConstMetric(m.nodeErrors, prometheus.CounterValue, float64(p.errors.Load()), p.addr)
		ch <- prometheus.MustNewConstMetric(m.nodeConns, prometheus.GaugeValue, float64(p.numConns()), p.addr)
		up := 0.0
		if p.status() == "up" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(m.nodeUp, prometheus.GaugeValue, up, p.addr)
	}
	rd := &m.srv.route.redirects
	for _, k := range []struct {
		kind string
		n    *atomic.Int64
	}{{"moved", &rd.moved}, {"ask", &rd.ask}, {"tryagain", &rd.tryAgain}, {"exhausted", &rd.exhausted}} {
		ch <- prometheus.MustNewConstMetric(m.redirects, prometheus.CounterValue, float64(k.n.Load()), k.kind)
	}
	for _, e := range m.srv.errs.Cumulative() {
		ch <- prometheus.MustNewConstMetric(m.errorReplies, prometheus.CounterValue, float64(e.N), e.Code)
	}
	if t := m.srv.route.view.Load(); t != nil {
		counts := map[[2]string]int{}
		for _, role := range []memberRole{roleNode, roleProxy} {
			for _, st := range []memberState{stateAlive, stateSuspect, stateDead, stateLeft} {
				counts[[2]string{role.String(), st.String()}] = 0
			}
		}
		for _, mb := range t.members {
			counts[[2]string{mb.role.String(), mb.state.String()}]++
		}
		for k, n := range counts {
			ch <- prometheus.MustNewConstMetric(m.members, prometheus.GaugeValue, float64(n), k[0], k[1])
		}
		ch <- prometheus.MustNewConstMetric(m.epoch, prometheus.GaugeValue, float64(t.epoch))
	}
}

// now is the metrics clock: monotonic nanoseconds since base.
func (m *metrics) now() int64 { return int64(time.Since(m.base)) }

// commandIndex is the index in m.cmds of the command args name.
func (m *metrics) commandIndex(cm *clientMetrics, args [][]byte) int32 {
	cmd := cm.lastCmd
	if cmd == nil || !bytes.Equal(cm.lastName, args[0]) {
		cmd = slots.Lookup(args[0])
		if cmd == nil {
			return int32(slots.NumIDs() + extraUnknown)
		}
		cm.lastCmd = cmd
		cm.lastName = append(cm.lastName[:0], args[0]...)
	}
	if len(cmd.Subcommands) > 0 && len(args) >= 2 {
		if sub := slots.LookupSub(cmd, args[1]); sub != nil {
			return int32(sub.ID)
		}
	}
	return int32(cmd.ID)
}

// handleMeasured is handle's command step with metrics on: it notes the
// command, when its batch started and, for a reply the proxy made
// itself, when the reply was ready.
func (c *client) handleMeasured(args [][]byte) {
	m, cm := c.srv.metrics, &c.m
	if cm.start == 0 {
		cm.start = m.now()
	}
	start := cm.start // a barrier inside handleCommand may end the batch
	// Looked up first: a blocking command's args do not outlive it
	// (the client's reader is read while it blocks, blocking.go).
	idx := m.commandIndex(cm, args)
	c.handleCommand(args)
	var ready int64
	if n := len(c.ops); n > 0 && c.ops[n-1].req == nil && c.ops[n-1].merge == nil {
		ready = m.now()
	}
	cm.ops = append(cm.ops, opMetric{cmd: idx, start: start, ready: ready})
}

// batchDone runs when a batch's replies are all in, at end on the stats
// clock: it stamps the client's idle clock and, with metrics on, records
// the batch's commands.
func (c *client) batchDone(end int64) {
	c.lastAt.Store(end)
	m := c.srv.metrics
	if m == nil {
		return
	}
	cm := &c.m
	ops := cm.ops
	for i := 0; i < len(ops); {
		o := ops[i]
		j := i + 1
		if o.ready == 0 {
			for j < len(ops) && ops[j] == o {
				j++
			}
			o.ready = end
		}
		m.cmds[o.cmd].addN(max(0, o.ready-o.start), int64(j-i))
		i = j
	}
	cm.ops = ops[:0]
	cm.start = 0
}

// start serves /metrics on the listener.
func (m *metrics) start() {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	s := m.srv
	// Under the clients' lock: Close's stopStats then sees m.http.
	started := s.clients.IfOpen(func() {
		m.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics server stopped", "err", err)
			}
		}()
	})
	if started {
		s.log.Info("metrics listening", "addr", m.ln.Addr().String())
	}
}

// MetricsAddr is the address /metrics is served on; nil when metrics are
// off.
func (s *Server) MetricsAddr() net.Addr {
	if s.metrics == nil {
		return nil
	}
	return s.metrics.ln.Addr()
}

// startStats starts what Serve runs beside the clients: INFO's rate
// sampler and, if configured, the metrics server.
func (s *Server) startStats() {
	if s.metrics != nil {
		s.metrics.start()
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		t := time.NewTicker(redisinfo.RateInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case now := <-t.C:
				st := &s.stats
				s.rates.Tick(now, [3]int64{st.commands.Load(), st.netInput.Load(), st.netOutput.Load()})
			}
		}
	}()
}

// stopStats closes the metrics server and its listener; Close calls it
// from Shut, with the clients' lock held.
func (s *Server) stopStats() {
	if s.metrics == nil {
		return
	}
	if s.metrics.http != nil {
		s.metrics.http.Close()
	}
	s.metrics.ln.Close()
}

// numClients is the number of open client connections.
func (s *Server) numClients() int { return s.clients.Len() }

// numConns is the number of open connections to the node.
func (p *nodePool) numConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

// meanAndP99 are a node's mean and estimated p99 batch round trip.
func (l *latencyStats) meanAndP99() (mean, p99 time.Duration) {
	counts, total, sum := l.snapshot()
	if total == 0 {
		return 0, 0
	}
	return time.Duration(sum / total), time.Duration(quantile(counts, total, 0.99))
}

// infoRates samples INFO's instantaneous_* values (startStats).
type infoRates struct{ redisinfo.Rates }
