package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/dirlock"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/aof"
)

// nodeGossipFlags are the node's cluster-mode flags. With --gossip or
// --join the node is a member of a gossip cluster and serves the slots
// the cluster's table gives it (MOVED for the others); without both it is
// a standalone node that serves every slot.
type nodeGossipFlags struct {
	gossip          string
	advertise       string
	announce        string
	join            string
	bootstrapExpect int
	dir             string
	key             string
	fast            bool
	reassignAfter   time.Duration

	// Slot migration (node/migrate.go).
	weight        uint
	autoRebalance bool
	drainOnExit   bool
	drainTimeout  time.Duration
	drainLinger   time.Duration
	migrateBatch  int
	fenceWait     time.Duration
}

func (g *nodeGossipFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.gossip, "gossip", "", "cluster mode: gossip listen address (host:port; port 0 picks a free one); with --join alone, "+defaultGossipAddr+". Without --gossip and --join the node is standalone and serves every slot")
	fs.StringVar(&g.join, "join", "", "cluster mode: comma-separated gossip addresses (host:port) of members to join, retried until one answers (may include this node's own)")
	fs.IntVar(&g.bootstrapExpect, "bootstrap-expect", 0, "cluster mode: once this many nodes with no cluster see each other, they divide the 16384 slots among themselves (once per cluster: the cluster id is persisted); 0: never bootstrap, join an existing cluster")
	fs.StringVar(&g.dir, "dir", "", "directory for the node's append-only log (its data) and, in cluster mode, its id, cluster id and slot table (created if missing), so that a restart resumes them; empty: nothing is kept across restarts")
	fs.StringVar(&g.key, "gossip-key", "", "cluster mode: key encrypting gossip, 16, 24 or 32 bytes in hex or base64; every member must have the same")
	fs.BoolVar(&g.fast, "gossip-fast", false, "cluster mode: test timings (a dead member detected in about a second on loopback) instead of memberlist's LAN profile")
	fs.DurationVar(&g.reassignAfter, "reassign-after", 0, "cluster mode: hand the slots of a node dead this long to live nodes, at a higher epoch (its data for them is lost); 0: never, its slots answer CLUSTERDOWN until it returns")
	fs.StringVar(&g.advertise, "gossip-advertise", "", "cluster mode: gossip address to advertise when the --gossip one is not reachable by the others (NAT, containers); empty: the --gossip one")
	fs.UintVar(&g.weight, "weight", 1, "cluster mode: this node's share of the slots relative to the other nodes' weights (a node of weight 2 gets twice the slots of one of weight 1)")
	fs.BoolVar(&g.autoRebalance, "auto-rebalance", true, "cluster mode: move slots online whenever nodes join or leave so every node holds its weight's share; false: only on 'shardgate cluster rebalance' (draining nodes are emptied either way)")
	fs.BoolVar(&g.drainOnExit, "drain-on-exit", false, "cluster mode: on SIGTERM/SIGINT, move every slot of this node to the others before exiting (bounded by --drain-timeout)")
	fs.DurationVar(&g.drainTimeout, "drain-timeout", 5*time.Minute, "cluster mode: how long --drain-on-exit waits for the slots to move before exiting anyway")
	fs.DurationVar(&g.drainLinger, "drain-linger", 5*time.Second, "cluster mode: once --drain-on-exit has moved every slot away, how long the node keeps answering MOVED before it exits, so cluster-aware clients that still route to it learn the new owners instead of meeting a closed port (0: exit at once)")
	fs.IntVar(&g.migrateBatch, "migrate-batch", 64, "cluster mode: the most slots one migration moves at once")
	fs.DurationVar(&g.fenceWait, "fence-wait", time.Second, "cluster mode: how long a command for a slot in the last step of its migration waits before it gets TRYAGAIN")
	fs.StringVar(&g.announce, "announce", "", "cluster mode: RESP address (host:port) announced to the cluster, in MOVED replies and CLUSTER SLOTS; empty: --addr, with an address of this machine if --addr listens on all interfaces")
}

// enabled reports whether cluster mode was asked for.
func (g *nodeGossipFlags) enabled() bool {
	return strings.TrimSpace(g.gossip) != "" || strings.TrimSpace(g.join) != ""
}

// nodeClusterFlags are the flags that only mean something in cluster mode.
var nodeClusterFlags = []string{"bootstrap-expect", "gossip-key", "gossip-fast", "reassign-after", "gossip-advertise", "announce",
	"weight", "auto-rebalance", "drain-on-exit", "drain-timeout", "drain-linger", "migrate-batch", "fence-wait"}

// config checks the flags and builds the cluster member's configuration,
// all but the RESP address to announce (known once the node listens).
func (g *nodeGossipFlags) config(log *slog.Logger) (cluster.Config, error) {
	cfg := cluster.Config{
		Role:            cluster.RoleNode,
		Bind:            strings.TrimSpace(g.gossip),
		Advertise:       g.advertise,
		BootstrapExpect: g.bootstrapExpect,
		Dir:             g.dir,
		Fast:            g.fast,
		ReassignAfter:   g.reassignAfter,
		Logger:          log,
	}
	if cfg.Bind == "" {
		cfg.Bind = defaultGossipAddr
	}
	if g.bootstrapExpect < 0 {
		return cfg, fmt.Errorf("--bootstrap-expect must be 0 (never bootstrap) or positive, got %d", g.bootstrapExpect)
	}
	switch {
	case g.weight < 1 || g.weight > 1<<20:
		return cfg, fmt.Errorf("--weight must be between 1 and %d, got %d", 1<<20, g.weight)
	case g.migrateBatch < 1 || g.migrateBatch > cluster.NumSlots:
		return cfg, fmt.Errorf("--migrate-batch must be between 1 and %d, got %d", cluster.NumSlots, g.migrateBatch)
	case g.fenceWait <= 0:
		return cfg, fmt.Errorf("--fence-wait must be a positive duration, got %s", g.fenceWait)
	case g.drainTimeout <= 0:
		return cfg, fmt.Errorf("--drain-timeout must be a positive duration, got %s", g.drainTimeout)
	case g.drainLinger < 0:
		return cfg, fmt.Errorf("--drain-linger must be 0 or a positive duration, got %s", g.drainLinger)
	}
	cfg.Weight = uint32(g.weight)
	if g.reassignAfter < 0 {
		return cfg, fmt.Errorf("--reassign-after must be 0 (never) or a positive duration, got %s", g.reassignAfter)
	}
	err := checkGossipFlags(&cfg, g.join, g.key, g.announce)
	return cfg, err
}

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := node.DefaultOptions()
	opts := d
	var lf logFlags
	var gf nodeGossipFlags
	fs.Var((*hostPort)(&opts.Addr), "addr", "RESP listen address (`host:port`)")
	fs.StringVar(&opts.RequirePass, "requirepass", "", "password clients must AUTH with (empty: no password)")
	fs.IntVar(&opts.MaxClients, "maxclients", d.MaxClients, "maximum concurrent client connections")
	fs.Var((*byteSize)(&opts.QueryBufferLimit), "client-query-buffer-limit", "close a client whose query buffer exceeds this many bytes, as Redis 7.0: one argument longer than this, or the requests that pile up while it is blocked (units: kb, mb, gb; at least 1mb)")
	fs.Var((*byteSize)(&opts.MaxMemory), "maxmemory", "Redis's maxmemory with the noeviction policy: while live data exceeds this many bytes, commands that may grow it get OOM errors; reads and deletes still work (units: kb, mb, gb; 0: no limit)")
	fs.DurationVar(&opts.ActiveExpiryInterval, "active-expiry-interval", d.ActiveExpiryInterval, "how often expired keys are swept in the background")
	fs.DurationVar(&opts.ShutdownGrace, "shutdown-grace", d.ShutdownGrace, "on SIGTERM/SIGINT or SHUTDOWN, how long clients get to receive the replies to the commands they had sent before they are disconnected")
	appendonly := fs.Bool("appendonly", true, "with --dir: log every write to DIR/appendonly.*.aof before replying and replay it at start (Redis's appendonly); false: --dir keeps the cluster state and what SAVE/BGSAVE write to DIR/dump.snap (loaded at start)")
	appendfsync := fs.String("appendfsync", "everysec", "with --appendonly: when the log reaches the disk: always (before every reply; clients share fsyncs), everysec (at most about a second lost on power loss, nothing on a crash), no (the OS decides)")
	rewritePercent := fs.Int("auto-aof-rewrite-percentage", 100, "with --appendonly: rewrite (compact) the log in the background once it has grown by this percentage since the last rewrite (0: never automatically; BGREWRITEAOF still works)")
	var rewriteMin int64 = 64 << 20
	fs.Var((*byteSize)(&rewriteMin), "auto-aof-rewrite-min-size", "with --appendonly: no automatic rewrite while the log is smaller than this (units: kb, mb, gb)")
	aofLoadCorrupt := fs.Bool("aof-load-corrupt", false, "start even if a log file is corrupt before its end, cutting it at the first bad record (what follows is lost); a torn last record is always cut. A corrupt snapshot or manifest still stops the start")
	fs.Var((*hostPort)(&opts.MetricsAddr), "metrics", "serve Prometheus metrics on this address (`host:port`) at /metrics; empty: off")
	procs := fs.Int("procs", 0, "OS threads running Go code at once (GOMAXPROCS); 0 keeps Go's default of one per core. Use 1 where a load generator shares a small machine, as Redis runs commands on one thread")
	gf.register(fs)
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: shardgate node [flags]
       shardgate node --gossip host:port [--join host:port,...] [--bootstrap-expect N] [--dir DIR] [flags]

Serve one Redis 7.0-compatible node. Alone (no --gossip, no --join) it
serves every hash slot. In cluster mode it is a member of a gossip cluster:
it serves the slots the cluster's table gives it, answers MOVED for the
others as a Redis Cluster node does, and CLUSTER SLOTS/SHARDS/NODES/INFO
describe the whole cluster, so cluster-aware clients can use the nodes
directly.

Flags:
`)
		printDefaults(fs)
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	switch {
	case *rewritePercent < 0:
		fmt.Fprintf(stderr, "shardgate node: --auto-aof-rewrite-percentage must be 0 (off) or positive, got %d\n", *rewritePercent)
		return 2
	case *procs < 0:
		fmt.Fprintf(stderr, "shardgate node: --procs must be 0 (one per core) or positive, got %d\n", *procs)
		return 2
	case opts.MaxClients <= 0:
		fmt.Fprintf(stderr, "shardgate node: --maxclients must be a positive number, got %d\n", opts.MaxClients)
		return 2
	case opts.QueryBufferLimit < 1<<20:
		fmt.Fprintf(stderr, "shardgate node: --client-query-buffer-limit must be at least 1mb, got %d\n", opts.QueryBufferLimit)
		return 2
	case opts.ActiveExpiryInterval <= 0:
		fmt.Fprintf(stderr, "shardgate node: --active-expiry-interval must be a positive duration, got %s\n", opts.ActiveExpiryInterval)
		return 2
	case opts.ShutdownGrace <= 0:
		fmt.Fprintf(stderr, "shardgate node: --shutdown-grace must be a positive duration, got %s\n", opts.ShutdownGrace)
		return 2
	}
	if !gf.enabled() {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			for _, name := range nodeClusterFlags {
				if f.Name == name {
					set = append(set, "--"+name)
				}
			}
		})
		if len(set) > 0 {
			fmt.Fprintf(stderr, "shardgate node: %s needs cluster mode (--gossip or --join)\n", strings.Join(set, ", "))
			return 2
		}
	}
	policy, err := aof.ParsePolicy(*appendfsync)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate node: --appendfsync: %v\n", err)
		return 2
	}
	if gf.dir != "" && *appendonly {
		if err := os.MkdirAll(gf.dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "shardgate node: --dir: %v\n", err)
			return 1
		}
		percent := *rewritePercent
		if percent == 0 {
			percent = -1 // node.AOFOptions: negative is off, zero the default
		}
		opts.AOF = &node.AOFOptions{Dir: gf.dir, Policy: policy, CutCorrupt: *aofLoadCorrupt,
			RewriteMinSize: rewriteMin, RewritePercent: percent}
	} else {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "appendfsync", "aof-load-corrupt", "auto-aof-rewrite-percentage", "auto-aof-rewrite-min-size":
				set = append(set, "--"+f.Name)
				return
			}
			if f.Name == "appendonly" && *appendonly {
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			fmt.Fprintf(stderr, "shardgate node: %s needs --dir (and --appendonly)\n", strings.Join(set, ", "))
			return 2
		}
	}
	if gf.dir != "" {
		if err := os.MkdirAll(gf.dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "shardgate node: --dir: %v\n", err)
			return 1
		}
		opts.Dir = gf.dir
		// Two processes on one directory would both append to its log and
		// claim its node id; the kernel drops the lock when the process
		// ends, however it ends.
		lock, err := dirlock.Acquire(gf.dir)
		if err != nil {
			hint := ""
			if errors.Is(err, dirlock.ErrLocked) {
				hint = ": every node needs a directory of its own"
			}
			fmt.Fprintf(stderr, "shardgate node: --dir: %v%s\n", err, hint)
			return 1
		}
		defer lock.Release()
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate node: %v\n", err)
		return 2
	}
	logStart(log, "node")
	opts.Logger = log
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	var cfg cluster.Config
	if gf.enabled() {
		if cfg, err = gf.config(log.With("component", "cluster")); err != nil {
			fmt.Fprintf(stderr, "shardgate node: %v\n", err)
			return 2
		}
	}
	// Listen first: the address announced to the cluster is the one the
	// node serves on (--addr may ask for port 0).
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		log.Error("node could not start", "err", err)
		return 1
	}
	defer ln.Close()
	if gf.enabled() {
		if cfg.RESPAddr, err = announceAddr(gf.announce, ln.Addr().String()); err != nil {
			fmt.Fprintf(stderr, "shardgate node: %v\n", err)
			return 2
		}
		member, err := cluster.Start(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "shardgate node: joining the cluster: %v\n", err)
			return 1
		}
		// Runs once Serve has returned: the node stops serving, then leaves.
		defer func() {
			if err := member.Close(); err != nil {
				log.Warn("leaving the cluster", "err", err)
			}
		}()
		log.Info("node is a cluster member", "id", member.ID(), "gossip", member.GossipAddr(), "announce", cfg.RESPAddr,
			"bootstrap_expect", cfg.BootstrapExpect, "dir", cfg.Dir)
		opts.Ownership = node.NewClusterOwnership(member, nil)
		mo := &node.MigrationOptions{
			Cluster: member, Dir: gf.dir, AutoRebalance: gf.autoRebalance,
			BatchSlots: gf.migrateBatch, FenceWait: gf.fenceWait,
		}
		if gf.fast {
			mo.PlanInterval = 250 * time.Millisecond
		}
		opts.Migration = mo
		if gf.drainOnExit {
			ctx = drainOnExit(ctx, member, gf.drainTimeout, gf.drainLinger, log)
		}
	}
	// Clients connecting while the data loads get LOADING, as from Redis,
	// rather than silence.
	opts.LoadWhileServing = true
	srv, err := node.New(opts)
	if err != nil {
		log.Error("node could not start", "err", err)
		return 1
	}
	if err := srv.Serve(ctx, ln); err != nil {
		if errors.Is(err, aof.ErrCorrupt) && !*aofLoadCorrupt {
			log.Error("node could not start", "err", err,
				"hint", "--aof-load-corrupt starts from a log file corrupt before its end by cutting it at the first bad record (what follows is lost); it cannot repair a snapshot or the manifest")
			return 1
		}
		log.Error("node stopped", "err", err)
		return 1
	}
	log.Info("node shut down")
	return 0
}

// pushTableEvery is how often a drained node about to exit sends its
// slot table again to members that have not announced it yet.
const pushTableEvery = 500 * time.Millisecond

// convergeWait bounds how long a drained node waits for the other members
// to announce its final slot table before it exits anyway.
const convergeWait = 10 * time.Second

// drainOnExit returns a context that ends once ctx has ended (the signal),
// the node has handed all its slots to the others and every member has
// learned so, or drainTimeout later: until then the node keeps serving,
// so the migrations can run.
//
// Once drained it serves linger longer, answering MOVED for every key:
// the members and proxies know the new owners, but a cluster-aware client
// learns them only from a MOVED (or its periodic refresh: every 60 s in
// go-redis), and one that still routes the last slots here would meet a
// closed port, which go-redis retries on the same node and then returns
// to the application.
func drainOnExit(ctx context.Context, member *cluster.Cluster, timeout, linger time.Duration, log *slog.Logger) context.Context {
	serve, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer stop()
		select {
		case <-ctx.Done():
		case <-serve.Done(): // the node stopped by itself
			return
		}
		// A second signal ends the wait: the operator means it.
		again := make(chan os.Signal, 1)
		signal.Notify(again, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(again)
		if !drainSlots(member, timeout, log, again) || linger <= 0 {
			return
		}
		log.Info("drained: answering MOVED before exiting, so cluster clients learn the new owners", "linger", linger)
		select {
		case <-time.After(linger):
		case <-again:
			log.Warn("second signal: exiting without lingering")
		}
	}()
	return serve
}

// drainSlots moves every slot of this node away and waits until the
// members know (see drainOnExit). It reports whether the node ended up
// drained (a timeout or a second signal leaves it not).
func drainSlots(member *cluster.Cluster, timeout time.Duration, log *slog.Logger, again <-chan os.Signal) bool {
	log.Info("draining before exit: moving this node's slots to the others (a second signal exits at once)", "timeout", timeout)
	if err := member.SetDraining(true); err != nil {
		log.Warn("draining", "err", err)
		return false
	}
	deadline := time.After(timeout)
	var (
		drainedAt time.Time
		push      <-chan time.Time // next push while drained but not converged
	)
	for {
		ch := member.Changes()
		v := member.View()
		n := len(v.Ranges(v.Self))
		if n == 0 {
			// Leaving before the others know the last slots moved would
			// leave them routing to a dead node (CLUSTERDOWN at the
			// proxies, redirections to a closed port) until gossip
			// caught up, seconds later: push them the table and wait
			// until every member announces it, for a while (a member
			// that never does must not hold the exit for the whole
			// drain timeout).
			if v.Converged() {
				log.Info("drained: no slots left here, and every member knows")
				return true
			}
			now := time.Now()
			if drainedAt.IsZero() {
				drainedAt = now
				log.Info("drained: no slots left here; waiting for the other members to learn the final slot table")
			} else if now.Sub(drainedAt) >= convergeWait {
				log.Warn("drained, but not every member announced the final slot table: exiting", "waited", convergeWait)
				return true
			}
			if push == nil {
				if err := member.PushTable(); err != nil {
					log.Warn("drained: sending the slot table", "err", err)
				}
				push = time.After(pushTableEvery)
			}
		}
		select {
		case <-ch:
		case <-push:
			push = nil
		case <-deadline:
			if n == 0 {
				log.Warn("drain timed out waiting for the other members to learn the final slot table: exiting")
				return true
			}
			log.Warn("drain timed out: exiting with slots still here", "ranges", n)
			return false
		case <-again:
			log.Warn("second signal: exiting without finishing the drain", "ranges", n)
			return false
		}
	}
}
