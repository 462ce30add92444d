package proxy

import (
	"context"
	"errors"
	"github.com/shardgate/shardgate/internal/clientpause"
	"github.com/shardgate/shardgate/internal/cmdlookup"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/cmdstats"
	"github.com/shardgate/shardgate/internal/monitor"
	"github.com/shardgate/shardgate/internal/netserve"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/reclaim"
	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/slowlog"
	"github.com/shardgate/shardgate/proxy/segbit"
)

// ErrServerClosed is what Serve returns when Close came first.
var ErrServerClosed = errors.New("proxy: server closed")

// Server is a running proxy.
type Server struct {
	opts Options
	log  *slog.Logger
	// httpWarnings limits the SECURITY ATTACK log lines (unknownCommand).
	httpWarnings cmdlookup.HTTPWarnings
	route        *routing // slot table and backends (dynamic.go)
	// routes are the commands' ways of being served, by
	// slots.Command.ID.
	routes []route
	myID   string // the 40-hex node id CLUSTER replies present
	replID string // INFO replication's master_replid
	seg    *segbit.Handler
	// segRepairs are index commands of SETBITs whose segment was
	// written but not indexed (segments.go).
	segRepairs segmentRepairs
	// segChecked is when this proxy's --segment-bits last matched the
	// cluster's (unix nanoseconds; segments.go).
	segChecked atomic.Int64
	start      time.Time

	clients netserve.Clients[*client]

	stats serverStats
	errs  redisinfo.ErrorStats // INFO errorstats, total_error_replies
	cross crossSlotLog         // log lines for CROSSSLOT refusals
	// cmdStats is INFO commandstats and latencystats; clockBase the
	// origin of statClock (cmdstats.go).
	cmdStats  *cmdstats.Table
	clockBase time.Time
	// monitors are the MONITOR connections (monitor.go).
	monitors monitor.Hub
	wg       sync.WaitGroup // client goroutines
	bg       sync.WaitGroup // node readers, watchdog
	stop     chan struct{}
	pause    clientpause.Pause // CLIENT PAUSE (pause.go)
	// draining is set by Close: clients read no more commands.
	// nodesClosed is set once the grace is over and the node
	// connections are being closed: no new one is made from then on.
	draining    atomic.Bool
	drained     chan struct{} // closed when draining starts
	nodesClosed atomic.Bool
	// tableKnown is closed (tableSeen set) once a cluster-mode proxy
	// has the cluster's slot table (noteTable).
	tableKnown chan struct{}
	tableSeen  atomic.Bool

	// cfg holds requirepass and maxclients, settable by CONFIG SET;
	// config is CONFIG's view of the proxy's own parameters (config.go).
	cfg    *redisconf.Endpoint
	config redisconf.Table
	// slowlog holds the commands the proxy runs itself (PING, CLIENT,
	// CLUSTER, ...); the nodes log the rest (slowlog.go).
	slowlog *slowlog.Log

	rates infoRates // INFO instantaneous_* (metrics.go)
	// metrics is nil unless Options.MetricsAddr is set (metrics.go).
	metrics *metrics
}

// serverStats are INFO's counters.
type serverStats struct {
	connections atomic.Int64 // total_connections_received
	commands    atomic.Int64 // total_commands_processed
	rejected    atomic.Int64 // rejected_connections
	crossSlot   atomic.Int64 // commands refused with CROSSSLOT
	netInput    atomic.Int64
	netOutput   atomic.Int64
	reads       atomic.Int64 // total_reads_processed: reads of client sockets
	writes      atomic.Int64 // total_writes_processed

	// atReset are the counters' values at the last CONFIG RESETSTAT: INFO
	// shows what came since, as Redis's reset counters do, while the
	// metrics keep counting up (a Prometheus counter never goes down).
	atReset struct {
		connections, commands, rejected, crossSlot, netInput, netOutput, reads, writes atomic.Int64
	}
}

// reset starts INFO's counters again (CONFIG RESETSTAT).
func (st *serverStats) reset() {
	r := &st.atReset
	r.connections.Store(st.connections.Load())
	r.commands.Store(st.commands.Load())
	r.rejected.Store(st.rejected.Load())
	r.crossSlot.Store(st.crossSlot.Load())
	r.netInput.Store(st.netInput.Load())
	r.netOutput.Store(st.netOutput.Load())
	r.reads.Store(st.reads.Load())
	r.writes.Store(st.writes.Load())
}

// sinceReset is a counter's INFO value: its count since the last reset.
func sinceReset(n, atReset *atomic.Int64) int64 { return n.Load() - atReset.Load() }

// New returns a proxy; Serve starts it.
func New(opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:       o,
		log:        o.Logger,
		start:      o.Now(),
		stop:       make(chan struct{}),
		drained:    make(chan struct{}),
		tableKnown: make(chan struct{}),
		myID:       stableClusterID(o.Addr),
		replID:     redisinfo.RandomHex(20),
		cmdStats:   cmdstats.New(),
		clockBase:  time.Now(),
	}
	s.cross.log = o.Logger
	s.monitors.OnOverflow = func(addr string, pending int) {
		s.log.Warn("Client closed for overcoming of output buffer limits (MONITOR fell behind)", "addr", addr, "pending", pending)
	}
	// One descriptor per client, as Redis counts; a client blocked in
	// BLPOP or holding a WATCH has a node connection of its own besides,
	// and when none can be opened its command fails as at maxclients.
	var lowered int
	s.cfg, lowered = redisconf.NewEndpoint(o.RequirePass, o.MaxClients, 1)
	if lowered > 0 {
		s.log.Warn("maxclients lowered to what the open-files limit allows (raise ulimit -n / LimitNOFILE for more)",
			"asked", lowered, "maxclients", s.cfg.MaxClients(), "reserved_fds", redisconf.ReservedFDs)
	}
	s.slowlog = slowlog.New()
	s.config = s.configTable()
	s.route = newRouting(s)
	s.routes = buildRoutes()
	if s.seg, err = newSegments(o); err != nil {
		return nil, err
	}
	if o.MetricsAddr != "" {
		if s.metrics, err = newMetrics(s); err != nil {
			return nil, err
		}
	}
	if o.Cluster != nil {
		s.startCluster()
	} else {
		s.route.setStatic(o.Topology)
	}
	return s, nil
}

// ListenAndServe listens on Options.Addr and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve accepts clients on ln until ctx ends or Close is called. It
// returns nil after a clean shutdown, once Close has finished.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Held while the background goroutines start, so that a concurrent
	// Close waits for them rather than racing their Add.
	if err := s.clients.Attach(ln, func() { s.bg.Add(1) }); err != nil {
		return ErrServerClosed
	}
	s.startStats()
	s.log.Info("proxy listening", "addr", ln.Addr().String(), "nodes", s.route.numPools(), "cross-slot", s.opts.CrossSlot.String())

	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		s.watchdog()
	}()
	go func() {
		defer s.bg.Done()
		// Big values pass through the clients' and nodes' buffers: give
		// that memory back once the traffic stops, not minutes later.
		traffic := func() int64 { return s.stats.netInput.Load() + s.stats.netOutput.Load() }
		reclaim.New(traffic).Run(s.stop)
	}()
	if s.opts.Cluster != nil {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.followCluster()
		}()
	}
	s.bg.Done()
	netserve.CloseOnDone(ctx, s.stop, func() { s.Close() })
	if s.opts.Cluster != nil {
		s.awaitTable(ctx)
	}
	if err := s.clients.AcceptLoop(ln, s.isClosed, s.accept, s.log); err != nil {
		return err
	}
	// Closed: return once the clients have had their replies and every
	// goroutine has ended, so that a process exiting after Serve does
	// not cut the shutdown's drain short.
	s.Close()
	return nil
}

// Addr is the listening address, once Serve has started.
func (s *Server) Addr() net.Addr { return s.clients.Addr() }

func (s *Server) isClosed() bool { return s.clients.Closed() }

// Close stops accepting, lets every client have the replies to the
// commands it has sent (for up to Options.ShutdownGrace), disconnects the
// clients, closes the node connections and waits for every goroutine to
// finish.
func (s *Server) Close() error {
	// A client idle in a read is woken by the deadline and leaves; one
	// mid-batch leaves once it has written the batch's replies
	// (serveClient checks draining before each read); one blocked on a
	// node gives up its wait as if it had disconnected (blocking.go).
	shut := s.clients.Shut(func() {
		s.log.Info("shutting down: no new commands; clients get the replies to those they sent", "grace", s.opts.ShutdownGrace)
		s.draining.Store(true)
		close(s.drained) // a command a pause holds will not run now
	}, func(c *client) { c.nc.SetReadDeadline(time.Unix(1, 0)) })
	if !shut {
		s.wg.Wait()
		s.bg.Wait()
		return nil
	}
	if !netserve.WaitGrace(&s.wg, s.opts.ShutdownGrace) {
		s.log.Warn("clients still busy after the shutdown grace period; disconnecting them", "grace", s.opts.ShutdownGrace)
		for _, c := range s.snapshotClients() {
			// Marked killed, so that it runs none of the commands it
			// still has buffered (serveClient), as CLIENT KILL does.
			c.killed.Store(true)
			c.nc.Close()
		}
	}
	close(s.stop)
	s.stopStats()
	s.nodesClosed.Store(true)
	// Close the node connections before waiting for the clients: a client
	// waiting for a node that does not answer would wait for the watchdog,
	// which has stopped. Connections dialed meanwhile are closed after.
	for _, p := range s.route.all() {
		p.closeAll()
	}
	s.wg.Wait()
	for _, p := range s.route.all() {
		p.closeAll()
	}
	s.bg.Wait()
	return nil
}

func (s *Server) accept(nc net.Conn) {
	c := newClient(s, rawio.Wrap(nc))
	admitted := func(id int64) {
		c.id = id
		// As Redis, total_connections_received counts the admitted
		// only (a refusal counts in rejected_connections).
		s.stats.connections.Add(1)
	}
	refused := func() { s.stats.rejected.Add(1) }
	s.clients.Serve(nc, c, s.cfg.MaxClients(), &s.wg, admitted, refused, func() { s.serveClient(c) })
}

func (s *Server) removeClient(c *client) {
	c.stopMonitor()
	s.clients.Remove(c.id)
}

// Topology returns the proxy's routing as it stands now: the backends it
// knows, numbered as the proxy numbers them everywhere (INFO's node<i>),
// and the slots each serves (a slot nobody serves has owner -1). In
// static mode this is Options.Topology until a node redirects a slot
// with MOVED.
func (s *Server) Topology() Topology { return s.route.snapshot() }
