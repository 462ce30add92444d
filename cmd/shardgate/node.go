package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/node"
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
}

func (g *nodeGossipFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.gossip, "gossip", "", "cluster mode: gossip listen address (host:port; port 0 picks a free one); with --join alone, "+defaultGossipAddr+". Without --gossip and --join the node is standalone and serves every slot")
	fs.StringVar(&g.join, "join", "", "cluster mode: comma-separated gossip addresses (host:port) of members to join, retried until one answers (may include this node's own)")
	fs.IntVar(&g.bootstrapExpect, "bootstrap-expect", 0, "cluster mode: once this many nodes with no cluster see each other, they divide the 16384 slots among themselves (once per cluster: the cluster id is persisted); 0: never bootstrap, join an existing cluster")
	fs.StringVar(&g.dir, "dir", "", "cluster mode: directory for the node's id, cluster id and slot table (created if missing), so that a restart resumes them; empty: a new id every start and nothing persisted")
	fs.StringVar(&g.key, "gossip-key", "", "cluster mode: key encrypting gossip, 16, 24 or 32 bytes in hex or base64; every member must have the same")
	fs.BoolVar(&g.fast, "gossip-fast", false, "cluster mode: test timings (a dead member detected in about a second on loopback) instead of memberlist's LAN profile")
	fs.DurationVar(&g.reassignAfter, "reassign-after", 0, "cluster mode: hand the slots of a node dead this long to live nodes, at a higher epoch (its data for them is lost); 0: never, its slots answer CLUSTERDOWN until it returns")
	fs.StringVar(&g.advertise, "gossip-advertise", "", "cluster mode: gossip address to advertise when the --gossip one is not reachable by the others (NAT, containers); empty: the --gossip one")
	fs.StringVar(&g.announce, "announce", "", "cluster mode: RESP address (host:port) announced to the cluster, in MOVED replies and CLUSTER SLOTS; empty: --addr, with an address of this machine if --addr listens on all interfaces")
}

// enabled reports whether cluster mode was asked for.
func (g *nodeGossipFlags) enabled() bool {
	return strings.TrimSpace(g.gossip) != "" || strings.TrimSpace(g.join) != ""
}

// nodeClusterFlags are the flags that only mean something in cluster mode.
var nodeClusterFlags = []string{"bootstrap-expect", "dir", "gossip-key", "gossip-fast", "reassign-after", "gossip-advertise", "announce"}

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
	fs.StringVar(&opts.Addr, "addr", d.Addr, "RESP listen address (host:port)")
	fs.StringVar(&opts.RequirePass, "requirepass", "", "password clients must AUTH with (empty: no password)")
	fs.IntVar(&opts.MaxClients, "maxclients", d.MaxClients, "maximum concurrent client connections")
	fs.Var((*byteSize)(&opts.QueryBufferLimit), "client-query-buffer-limit", "close a client whose unparsed requests exceed this many bytes, e.g. while it is blocked (units: kb, mb, gb)")
	fs.DurationVar(&opts.ActiveExpiryInterval, "active-expiry-interval", d.ActiveExpiryInterval, "how often expired keys are swept in the background")
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
		fs.PrintDefaults()
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	switch {
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
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate node: %v\n", err)
		return 2
	}
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
		log.Error("node stopped", "err", err)
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
	}
	srv, err := node.New(opts)
	if err != nil {
		log.Error("bad options", "err", err)
		return 2
	}
	if err := srv.Serve(ctx, ln); err != nil {
		log.Error("node stopped", "err", err)
		return 1
	}
	log.Info("node shut down")
	return 0
}
