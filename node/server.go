// Package node serves one shardgate node: a Redis 7.0-compatible engine
// (package node/engine) behind a RESP listener. It owns client connections,
// the command dispatcher (lookup, arity, auth, CROSSSLOT, transactions,
// locking) and the connection-level commands (HELLO, CLIENT, INFO, ...).
package node

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
	"github.com/shardgate/shardgate/internal/memlimit"
	"github.com/shardgate/shardgate/internal/monitor"
	"github.com/shardgate/shardgate/internal/netserve"
	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/reclaim"
	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/slowlog"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// ErrServerClosed is what Serve returns when Close came first.
var ErrServerClosed = errors.New("node: server closed")

// Server is a running node.
type Server struct {
	opts Options
	log  *slog.Logger
	// httpWarnings limits the SECURITY ATTACK log lines (refuseHTTP).
	httpWarnings cmdlookup.HTTPWarnings
	ks           *engine.Keyspace
	routes       []route // by slots.Command.ID
	start        time.Time

	clients netserve.Clients[*client]

	// expiryHeld is the unix ms until which a proxy's CLIENT PAUSE keeps
	// the dataset still here too (SHARDGATE EXPIRY-HOLD, pause.go).
	expiryHeld atomic.Int64

	stats  serverStats
	blk    blocker              // blocked clients (blocking.go)
	pause  clientpause.Pause    // CLIENT PAUSE (pause.go)
	cfg    *redisconf.Endpoint  // requirepass and maxclients, settable (config.go)
	config redisconf.Table      // CONFIG GET/SET's parameters
	errs   redisinfo.ErrorStats // INFO errorstats (info.go)
	rates  rateSampler          // INFO instantaneous_* (info.go)
	mem    *memlimit.Guard      // maxmemory, capped at MaxInt64 (config.go)
	runID  string               // INFO run_id, fresh for every node start
	replID string               // INFO master_replid
	nodeID string               // CLUSTER MYID of a standalone node, fresh for every start
	own    Ownership            // nil: standalone, every slot served (ownership.go)
	cut    cutter               // s.own, if it can find the node cut off from its majority
	served [slots.Count]bool    // slots served at the last ownership change (followOwnership's)
	// asked: slots a command has asked for since followOwnership's last
	// pass, set before the dispatcher reads the ownership, so that a
	// slot served between two passes (given and taken back before the
	// follower looked) is still emptied when it is seen lost.
	asked [slots.Count]atomic.Bool
	gate  gates     // per-slot migration state (migrate_gate.go)
	mig   *migrator // nil: no migrations (migrate.go)
	aof   *aof.Log  // nil: no append-only log (persist.go)
	saves saver     // snapshots and rewrites (save.go)
	// slotLSN is each slot's last record in the log, written and read
	// under the slot's lock (persist.go's appendRecord, snapshots).
	slotLSN [slots.Count]uint64

	// reclaim gives freed memory back after flushes and write bursts.
	reclaim *reclaim.Reclaimer
	// snapPause, for tests, runs between two slots of a snapshot.
	snapPause func(slot uint16)
	// fencedBatchEnd, for tests, runs as a batch refused at a fence ends
	// (a node descheduled before its next read).
	fencedBatchEnd func()
	wg             sync.WaitGroup
	stop           chan struct{}
	ready          chan struct{}   // closed once Serve serves commands ("node listening")
	draining       atomic.Bool     // set by Close: clients read no more commands
	maxMemory      atomic.Uint64   // maxmemory as configured (CONFIG GET, INFO)
	maxMemorySet   atomic.Bool     // CONFIG SET maxmemory has run
	startupMemory  int64           // INFO used_memory_startup: the heap before any data
	slowlog        *slowlog.Log    // SLOWLOG (slowlog.go)
	cmdStats       *cmdstats.Table // INFO commandstats and latencystats (cmdstats.go)
	monitors       monitor.Hub     // MONITOR (monitor.go)
	// load is Options.LoadWhileServing's state (loading.go).
	load loadState
	// metrics is nil unless Options.MetricsAddr is set (metrics.go).
	metrics *metricsServer
}

// serverStats are INFO's counters.
type serverStats struct {
	connections      atomic.Int64 // total_connections_received
	commands         atomic.Int64 // total_commands_processed
	rejected         atomic.Int64 // rejected_connections
	netInput         atomic.Int64
	netOutput        atomic.Int64
	reads            atomic.Int64 // total_reads_processed: reads of client sockets
	writes           atomic.Int64 // total_writes_processed
	expireCycle      atomic.Int64 // expire_cycle_cpu_milliseconds, in nanoseconds
	unexpectedErrors atomic.Int64
}

// New returns a node with an empty keyspace; Serve starts it.
func New(opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:  o,
		log:   o.Logger,
		ks:    engine.New(),
		start: o.Now(),
		stop:  make(chan struct{}),
		ready: make(chan struct{}),
		// Before the config table, which serves its parameters.
		slowlog:  slowlog.New(),
		cmdStats: cmdstats.New(),
	}
	s.routes = buildRoutes(s)
	s.monitors.OnOverflow = func(addr string, pending int) {
		s.log.Warn("Client closed for overcoming of output buffer limits (MONITOR fell behind)", "addr", addr, "pending", pending)
	}
	s.ks.OnListPush = s.blk.onPush
	s.ks.OnStreamReady = s.blk.onStreamReady
	s.ks.OnStreamLater = s.serveLater
	s.ks.ExpiryPaused = func() bool {
		now := s.opts.Now().UnixMilli()
		return s.pause.Paused(now) || now < s.expiryHeld.Load()
	}
	var lowered int
	s.cfg, lowered = redisconf.NewEndpoint(o.RequirePass, o.MaxClients, 1)
	if lowered > 0 {
		s.log.Warn("maxclients lowered to what the open-files limit allows (raise ulimit -n / LimitNOFILE for more)",
			"asked", lowered, "maxclients", s.cfg.MaxClients(), "reserved_fds", redisconf.ReservedFDs)
	}
	writes := func() int64 { return s.ks.Changes() + s.ks.Stats.ExpiredKeys.Load() }
	s.mem = memlimit.New(writes)
	s.reclaim = reclaim.New(writes)
	s.config = s.configTable()
	s.runID = redisinfo.RandomHex(20)
	s.replID = redisinfo.RandomHex(20)
	s.nodeID = redisinfo.RandomHex(20)
	s.own = o.Ownership
	if s.own != nil {
		s.ks.Owns = func(slot uint16) bool { mine, _ := s.own.Slot(slot); return mine }
	}
	s.cut, _ = s.own.(cutter)
	s.gate.wait = time.Second
	s.saves.init(s.start)
	s.startupMemory = redisinfo.ReadMemory().Used
	if o.AOF != nil && o.Dir == "" {
		s.opts.Dir = o.AOF.Dir
	}
	if o.LoadWhileServing {
		s.load.pending = o.AOF != nil || o.Dir != ""
	} else if err := s.loadData(); err != nil {
		return nil, err
	}
	if o.Migration != nil {
		if o.Migration.Cluster == nil {
			return nil, errors.New("node: Migration needs a Cluster")
		}
		s.mig = newMigrator(s, *o.Migration)
		s.gate.wait = s.mig.o.FenceWait
	}
	// Last: nothing after it fails, so the listener cannot leak.
	if o.MetricsAddr != "" {
		if s.metrics, err = newMetricsServer(s, o.MetricsAddr); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Keyspace exposes the node's data (for tests and the embedded cluster).
func (s *Server) Keyspace() *engine.Keyspace { return s.ks }

// ListenAndServe listens on Options.Addr and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve accepts clients on ln until ctx ends or Close is called. It
// returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Held while the background goroutines start, so that a concurrent
	// Close waits for them rather than racing their Add.
	if err := s.clients.Attach(ln, func() { s.wg.Add(1) }); err != nil {
		return ErrServerClosed
	}
	started := sync.OnceFunc(s.wg.Done)
	defer started()
	if s.metrics != nil {
		s.metrics.serve(s.log)
		s.log.Info("metrics listening", "addr", s.metrics.ln.Addr().String())
	}
	accepted := make(chan error, 1)
	acceptLoop := func() {
		go func() { accepted <- s.clients.AcceptLoop(ln, s.isClosed, s.accept, s.log) }()
	}
	if s.load.pending {
		// Clients are served from now on, with LOADING until the data
		// is in (loading.go). "node listening" waits for the load:
		// scripts take it to mean ready.
		s.load.begin(s)
		if s.load.total > 0 {
			s.log.Info("node loading its data; clients get LOADING until it is in", "addr", ln.Addr().String(), "dir", s.opts.Dir, "bytes", s.load.total)
		}
		// SIGTERM stops the load (loadState.check).
		netserve.CloseOnDone(ctx, s.stop, func() { s.Close() })
		acceptLoop()
		if err := s.loadData(); err != nil {
			s.clients.Shut(func() { close(s.stop) }, func(c *client) { c.nc.Close() })
			started()
			<-accepted
			s.wg.Wait()
			if errors.Is(err, errLoadAborted) {
				s.log.Info("node closed while loading its data")
				return nil // Close asked for it
			}
			return err
		}
		if s.isClosed() {
			// Closed during a load too short to notice: nothing to start.
			started()
			<-accepted
			s.wg.Wait()
			return nil
		}
	}

	if s.opts.MaxMemory > 0 && !s.maxMemorySet.Load() {
		// After loading: replay and snapshots are not refused. A CONFIG
		// SET during the load wins, as in Redis.
		s.setMaxMemory(uint64(s.opts.MaxMemory))
	}
	s.wg.Add(4)
	go func() {
		defer s.wg.Done()
		s.activeExpiry()
	}()
	go func() {
		defer s.wg.Done()
		s.mem.Run(s.stop)
	}()
	go func() {
		defer s.wg.Done()
		s.reclaim.Run(s.stop)
	}()
	go func() {
		defer s.wg.Done()
		s.sampleRates()
	}()
	if s.own != nil {
		// Before the first connection (a migration's install among them).
		s.reconcileSlots(true)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.followOwnership()
		}()
	}
	if s.aof != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.autoRewrite()
		}()
	}
	if s.mig != nil {
		// A migration interrupted at its commit fences its slots before
		// the first client is served.
		if err := s.mig.recover(); err != nil {
			s.clients.Shut(func() { close(s.stop) }, func(c *client) { c.nc.Close() })
			started()
			if s.load.pending {
				<-accepted
			}
			s.wg.Wait()
			return err
		}
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			s.mig.runSource()
		}()
		go func() {
			defer s.wg.Done()
			s.mig.runPlanner()
		}()
	}
	s.load.end()
	s.log.Info("node listening", "addr", ln.Addr().String())
	close(s.ready)
	started()
	if !s.load.pending {
		netserve.CloseOnDone(ctx, s.stop, func() { s.Close() })
		acceptLoop()
	}
	if err := <-accepted; err != nil {
		return err
	}
	// Closed: wait for the clients and background goroutines (a
	// migration finishing its step among them) and for the log to be
	// flushed and closed, so that the caller's cleanup runs after the
	// node has really stopped.
	if err := s.Close(); err != nil {
		s.log.Error("closing the append-only log", "err", err)
	}
	return nil
}

// Addr is the listening address, once Serve has started.
func (s *Server) Addr() net.Addr { return s.clients.Addr() }

// Ready is closed once Serve serves commands (after loading the data in
// --dir, if any): when "node listening" is logged.
func (s *Server) Ready() <-chan struct{} { return s.ready }

func (s *Server) isClosed() bool { return s.clients.Closed() }

// Close stops accepting, lets every client have the replies to the
// commands it has sent (for up to Options.ShutdownGrace), disconnects the
// clients and waits for their goroutines to finish.
func (s *Server) Close() error {
	// Shutting the sockets' read side wakes every reader with EOF while
	// replies still go out: an idle client leaves at once, one mid-batch
	// once it has written the batch's replies (serveClient checks
	// draining before reading on), a blocked one as if it had left.
	shut := s.clients.Shut(func() {
		s.log.Info("shutting down: no new commands; clients get the replies to those they sent", "grace", s.opts.ShutdownGrace)
		s.draining.Store(true)
		close(s.stop)
	}, func(c *client) { rawio.CloseRead(c.nc) })
	if shut && !netserve.WaitGrace(&s.wg, s.opts.ShutdownGrace) {
		s.log.Warn("clients still busy after the shutdown grace period; disconnecting them", "grace", s.opts.ShutdownGrace)
		for _, c := range s.snapshotClients() {
			c.nc.Close()
		}
	}
	s.wg.Wait()
	if s.metrics != nil {
		s.metrics.close()
	}
	if s.aof != nil {
		return s.aof.Close() // flushed and fsynced; later calls return the same
	}
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
	s.stopMonitor(c)
	s.clients.Remove(c.id)
	if s.mig != nil {
		s.mig.clientGone(c.id)
	}
}

// activeExpiry removes expired keys in the background, as Redis's active
// expire cycle does, so that memory is reclaimed for keys nobody reads,
// and shrinks the key tables deletes emptied.
func (s *Server) activeExpiry() {
	t := time.NewTicker(s.opts.ActiveExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.ks.Expiring() {
				start := time.Now()
				s.ks.ExpireCycle(s.opts.Now().UnixMilli(), 20)
				s.stats.expireCycle.Add(int64(time.Since(start)))
			}
			// Key tables that deletes emptied shrink here, as Redis's
			// cron resizes its dicts.
			start := time.Now()
			s.ks.ShrinkSparse(func() bool { return time.Since(start) >= engine.DefaultExpireBudget })
		}
	}
}
