package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/proxy"
)

// parseFlags parses quietly, then prints: --help goes to stdout (exit 0),
// a bad flag to stderr with the usage (exit 2), each exactly once. It
// returns -1 when the command should go on.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		flagError(fs, err, stderr)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2
	}
	return -1
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// proxyFlags are the flags shared by 'proxy' and 'up'.
type proxyFlags struct {
	opts        proxy.Options
	procs       int
	crossSlot   string
	segmentKeys stringList
}

func (p *proxyFlags) register(fs *flag.FlagSet) {
	d := proxy.DefaultOptions()
	p.opts = d
	fs.Var((*hostPort)(&p.opts.Addr), "addr", "client listen address (`host:port`)")
	fs.StringVar(&p.crossSlot, "cross-slot", "strict", "multi-slot commands: strict (CROSSSLOT, as Redis Cluster) or split (MGET MSET DEL UNLINK EXISTS TOUCH split per node)")
	fs.StringVar(&p.opts.RequirePass, "requirepass", "", "password clients must AUTH with (empty: no password)")
	fs.StringVar(&p.opts.NodePassword, "node-password", "", "password the proxy sends with AUTH to every node")
	fs.IntVar(&p.opts.MaxClients, "maxclients", d.MaxClients, "maximum concurrent client connections")
	fs.Var((*byteSize)(&p.opts.QueryBufferLimit), "client-query-buffer-limit", "close a client whose query buffer exceeds this many bytes, as Redis 7.0: one argument longer than this, or the requests that pile up while it is blocked (units: kb, mb, gb; at least 1mb)")
	fs.Var((*byteSize)(&p.opts.ClientOutputLimit), "client-output-buffer-limit", "close a client whose unwritten replies exceed this many bytes (units: kb, mb, gb; 0: no limit)")
	fs.IntVar(&p.opts.ConnsPerNode, "conns-per-node", d.ConnsPerNode, "shared pipelined connections per node (and per protocol version), 1 to 64")
	fs.DurationVar(&p.opts.DialTimeout, "connect-timeout", d.DialTimeout, "timeout for connecting to a node, and for checking one that gossip declares dead (dial and PING)")
	fs.DurationVar(&p.opts.NodeTimeout, "node-timeout", d.NodeTimeout, "how long a node may leave requests unanswered before its connection is dropped and the requests fail")
	fs.DurationVar(&p.opts.RedirectTimeout, "redirect-timeout", d.RedirectTimeout, "how long a command may keep following a node's MOVED and TRYAGAIN (a slot moving to another node) before the client gets the node's reply")
	fs.DurationVar(&p.opts.ShutdownGrace, "shutdown-grace", d.ShutdownGrace, "on SIGTERM/SIGINT, how long clients get to receive the replies to the commands they had sent before they are disconnected")
	fs.DurationVar(&p.opts.RedialBackoff, "redial-backoff", d.RedialBackoff, "how often a node that is down (a failed connection, or no answer within --node-timeout) is tried again; meanwhile its slots answer CLUSTERDOWN")
	fs.Var(&p.segmentKeys, "segment-keys", "glob of keys served as segmented bitmaps (repeatable)")
	fs.StringVar(&p.opts.ClientAnnounce, "client-announce", "", "address (host:port) CLUSTER SLOTS/SHARDS/NODES show for this proxy when it is the only one, for clients that reach it through an address it cannot see (a container's published port, NAT); empty: the address each client connected to")
	fs.Uint64Var(&p.opts.SegmentBits, "segment-bits", d.SegmentBits, "bits per bitmap segment: a power of two from 4096 (2^12) to 4294967296 (2^32)")
	fs.Var((*hostPort)(&p.opts.MetricsAddr), "metrics", "serve Prometheus metrics on this address (`host:port`); empty: off")
	fs.IntVar(&p.procs, "procs", 0, "OS threads running Go code at once (GOMAXPROCS); 0 keeps Go's default of one per core. 1 is cheapest per request where the proxy shares a small machine with its nodes and load generator")
}

func (p *proxyFlags) finish() error {
	m, err := proxy.ParseCrossSlotMode(p.crossSlot)
	if err != nil {
		return err
	}
	p.opts.CrossSlot = m
	p.opts.SegmentKeys = p.segmentKeys
	if p.procs < 0 {
		return fmt.Errorf("--procs must be 0 (one per core) or positive, got %d", p.procs)
	}
	if p.procs > 0 {
		runtime.GOMAXPROCS(p.procs)
	}
	if p.opts.ClientOutputLimit == 0 {
		p.opts.ClientOutputLimit = -1 // no limit
	}
	switch {
	case p.opts.QueryBufferLimit < 1<<20:
		return fmt.Errorf("--client-query-buffer-limit must be at least 1mb, got %d", p.opts.QueryBufferLimit)
	case p.opts.ClientOutputLimit < -1:
		return fmt.Errorf("--client-output-buffer-limit must not be negative, got %d", p.opts.ClientOutputLimit)
	case p.opts.MaxClients <= 0:
		return fmt.Errorf("--maxclients must be a positive number, got %d", p.opts.MaxClients)
	case p.opts.ConnsPerNode <= 0 || p.opts.ConnsPerNode > 64:
		return fmt.Errorf("--conns-per-node must be between 1 and 64, got %d", p.opts.ConnsPerNode)
	case p.opts.ClientAnnounce != "" && !reachableHostPort(p.opts.ClientAnnounce):
		return fmt.Errorf("bad --client-announce address %q: want host:port that clients can reach", p.opts.ClientAnnounce)
	case bits.OnesCount64(p.opts.SegmentBits) != 1 || p.opts.SegmentBits < 1<<12 || p.opts.SegmentBits > 1<<32:
		return fmt.Errorf("--segment-bits must be a power of two from 4096 (2^12) to 4294967296 (2^32), got %d", p.opts.SegmentBits)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--connect-timeout", p.opts.DialTimeout},
		{"--node-timeout", p.opts.NodeTimeout},
		{"--redial-backoff", p.opts.RedialBackoff},
		{"--redirect-timeout", p.opts.RedirectTimeout},
		{"--shutdown-grace", p.opts.ShutdownGrace},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be a positive duration, got %v", d.flag, d.v)
		}
	}
	return nil
}

func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate proxy", flag.ContinueOnError)
	var pf proxyFlags
	var lf logFlags
	var gf proxyGossipFlags
	pf.register(fs)
	nodes := fs.String("nodes", "", "static mode: comma-separated node addresses (host:port); the 16384 slots are spread over them in contiguous ranges (exclusive with --join)")
	gf.register(fs)
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: shardgate proxy --nodes host:port,... [flags]
       shardgate proxy --join host:port,... [--gossip host:port] [flags]

Serve one Redis endpoint in front of shardgate nodes: in static mode over the
--nodes list, in cluster mode as a member of the gossip cluster reached
through --join, following its slot table (nodes joining, leaving, dying and
coming back). Exactly one of --nodes and --join is required.

Flags:
`)
		printDefaults(fs)
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if err := pf.finish(); err != nil {
		fmt.Fprintf(stderr, "shardgate proxy: %v\n", err)
		return 2
	}
	var addrs []string
	for _, a := range strings.Split(*nodes, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	switch {
	case len(addrs) == 0 && !gf.enabled():
		fmt.Fprintf(stderr, "shardgate proxy: one of --nodes (static mode) or --join (cluster mode) is required\n")
		return 2
	case len(addrs) > 0 && gf.enabled():
		fmt.Fprintf(stderr, "shardgate proxy: --nodes and --join are exclusive\n")
		return 2
	case len(addrs) > 0:
		if f := gossipFlagSet(fs); f != "" {
			fmt.Fprintf(stderr, "shardgate proxy: --%s needs --join (cluster mode)\n", f)
			return 2
		}
	}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			fmt.Fprintf(stderr, "shardgate proxy: bad node address %q: %v\n", a, err)
			return 2
		}
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate proxy: %v\n", err)
		return 2
	}
	logStart(log, "proxy")
	var ln net.Listener // cluster mode listens first: the port is announced
	if gf.enabled() {
		cfg, err := gf.config(log.With("component", "cluster"))
		if err != nil {
			fmt.Fprintf(stderr, "shardgate proxy: %v\n", err)
			return 2
		}
		if ln, err = net.Listen("tcp", pf.opts.Addr); err != nil {
			log.Error("proxy could not start", "err", err)
			return 1
		}
		defer ln.Close()
		if cfg.RESPAddr, err = announceAddr(gf.announce, ln.Addr().String()); err != nil {
			fmt.Fprintf(stderr, "shardgate proxy: %v\n", err)
			return 2
		}
		cl, err := cluster.Start(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "shardgate proxy: joining the cluster: %v\n", err)
			return 1
		}
		defer func() {
			if err := cl.Close(); err != nil {
				log.Warn("leaving the cluster", "err", err)
			}
		}()
		// The join runs in the background ("cluster: joined" logs it):
		// the members named by --join may still be starting.
		log.Info("proxy is a gossip member", "id", cl.ID(), "gossip", cl.GossipAddr(), "announce", cfg.RESPAddr, "join", cfg.Join)
		pf.opts.Cluster = cl
	} else {
		topo, err := proxy.NewStaticTopology(addrs)
		if err != nil {
			fmt.Fprintf(stderr, "shardgate proxy: --nodes: %s\n", strings.TrimPrefix(err.Error(), "proxy: "))
			return 2
		}
		pf.opts.Topology = topo
	}
	pf.opts.Logger = log
	srv, err := proxy.New(pf.opts)
	if err != nil {
		if newExit(err) == 1 {
			// A listener (--metrics) that could not open: a runtime
			// failure, logged as the node logs it.
			log.Error("proxy could not start", "err", err)
			return 1
		}
		fmt.Fprintf(stderr, "shardgate proxy: %s\n", strings.TrimPrefix(err.Error(), "proxy: "))
		return 2
	}
	if ln != nil {
		err = srv.Serve(ctx, ln)
	} else {
		err = srv.ListenAndServe(ctx)
	}
	if err != nil {
		msg := "proxy stopped"
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "listen" {
			msg = "proxy could not start"
		}
		log.Error(msg, "err", err)
		return 1
	}
	log.Info("proxy shut down")
	return 0
}

// runUp runs an embedded local cluster: size nodes on free loopback ports
// and a proxy in front of them, in this one process.
func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate up", flag.ContinueOnError)
	var pf proxyFlags
	var lf logFlags
	pf.register(fs)
	size := fs.Int("size", 3, "number of nodes, 1 to 64")
	basePort := fs.Int("node-base-port", 0, "loopback port of the first node, the others on the ports after it (0: free ports)")
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: shardgate up [flags]\n\nRun a local cluster in one process: --size nodes on loopback ports (free ones\nunless --node-base-port) and a proxy on --addr in front of them. Ctrl-C stops\nit.\n\nFlags:\n")
		printDefaults(fs)
	}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue // a flag's value
		}
		if name == "nodes" || name == "join" || name == "announce" || strings.HasPrefix(name, "gossip") {
			fmt.Fprintf(stderr, "shardgate up: --%s is not an option of up, which runs a static cluster of its own; 'shardgate node' and 'shardgate proxy' take it\n", name)
			return 2
		}
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if err := pf.finish(); err != nil {
		fmt.Fprintf(stderr, "shardgate up: %v\n", err)
		return 2
	}
	if *size < 1 || *size > 64 {
		fmt.Fprintf(stderr, "shardgate up: --size must be between 1 and 64, got %d\n", *size)
		return 2
	}
	if *basePort != 0 && (*basePort < 1 || *basePort+*size-1 > 65535) {
		fmt.Fprintf(stderr, "shardgate up: --node-base-port must leave room for %d ports below 65536, got %d\n", *size, *basePort)
		return 2
	}
	// The proxy's options are checked before any node starts, so that a
	// usage error leaves nothing listening behind it.
	if err := pf.opts.Check(); err != nil {
		fmt.Fprintf(stderr, "shardgate up: %s\n", strings.TrimPrefix(err.Error(), "proxy: "))
		return 2
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate up: %v\n", err)
		return 2
	}
	logStart(log, "up")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The nodes stop after the proxy: stopped together, the proxy, still
	// finishing its clients' commands, redials nodes that are going away
	// and warns that they are unreachable.
	nodeCtx, stopNodes := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNodes()
	ln, err := net.Listen("tcp", pf.opts.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate up: %v\n", err)
		return 1
	}
	var (
		wg    sync.WaitGroup
		addrs []string
		nodes []*node.Server
	)
	// failed stops what has started and reports err.
	failed := func(err error, rc int) int {
		ln.Close()
		stopNodes()
		for _, n := range nodes {
			n.Close()
		}
		wg.Wait()
		fmt.Fprintf(stderr, "shardgate up: %s\n", strings.TrimPrefix(err.Error(), "proxy: "))
		return rc
	}
	// The nodes listen on loopback ports anyone on the machine can reach:
	// a password for clients guards them too, and the proxy sends it.
	if pf.opts.NodePassword == "" {
		pf.opts.NodePassword = pf.opts.RequirePass
	}
	for i := range *size {
		port := 0
		if *basePort != 0 {
			port = *basePort + i
		}
		nln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return failed(fmt.Errorf("node %d: %w", i, err), 1)
		}
		srv, err := node.New(node.Options{Addr: nln.Addr().String(), RequirePass: pf.opts.NodePassword, Logger: log.With("node", i)})
		if err != nil {
			nln.Close()
			return failed(err, 1)
		}
		nodes = append(nodes, srv)
		addrs = append(addrs, nln.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			// ErrServerClosed: closed by the clean-up after another
			// part failed to start, which says so itself.
			if err := srv.Serve(nodeCtx, nln); err != nil && !errors.Is(err, node.ErrServerClosed) {
				log.Error("node stopped", "node", i, "err", err)
				cancel()
			}
		}()
	}
	topo, err := proxy.NewStaticTopology(addrs)
	if err != nil {
		return failed(err, 1)
	}
	pf.opts.Topology = topo
	pf.opts.Logger = log.With("role", "proxy")
	px, err := proxy.New(pf.opts)
	if err != nil {
		return failed(err, newExit(err))
	}
	// The banner comes after every node's "listening" line (their
	// listeners already take connections), unless one failed to start.
	for _, n := range nodes {
		select {
		case <-n.Ready():
		case <-ctx.Done():
		}
	}
	nodesWord := "nodes"
	if *size == 1 {
		nodesWord = "node"
	}
	fmt.Fprintf(stdout, "shardgate: %d %s behind a proxy at %s (cross-slot %s)\n", *size, nodesWord, ln.Addr(), pf.opts.CrossSlot)
	for i, n := range topo.Nodes() {
		fmt.Fprintf(stdout, "  node %d  %s  slots %s\n", i, n.Addr, proxy.FormatRanges(n.Ranges))
	}
	fmt.Fprintf(stdout, "try: %s\n", redisCLICommand(ln.Addr(), pf.opts.RequirePass != ""))
	rc := 0
	if err := px.Serve(ctx, ln); err != nil {
		log.Error("proxy stopped", "err", err)
		rc = 1
	}
	cancel()
	stopNodes()
	for _, n := range nodes {
		n.Close()
	}
	wg.Wait()
	log.Info("local cluster shut down")
	return rc
}

// newExit is the exit status for proxy.New's error: 1 for a listener
// that could not open (a runtime failure, as for --addr), 2 for options
// it refused (a usage error).
func newExit(err error) int {
	var op *net.OpError
	if errors.As(err, &op) {
		return 1
	}
	return 2
}

// byteSize is a byte count flag that takes Redis's memory units: a plain
// number of bytes, or k, kb, m, mb, g, gb (k/m/g are powers of 1000, the
// kb/mb/gb forms powers of 1024, as in redis.conf).
type byteSize int64

// String gives the size in the largest binary unit that divides it, as
// the flags' defaults are written in the README (64mb, 1gb).
func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if n != 0 && n%u.mul == 0 {
			return strconv.FormatInt(n/u.mul, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(v string) error {
	n, ok := redisconf.ParseMemory(strings.TrimSpace(v))
	if !ok || n > math.MaxInt64 {
		return fmt.Errorf("bad size %q (want bytes, or a number with k, kb, m, mb, g or gb)", v)
	}
	*b = byteSize(n)
	return nil
}

// reachableHostPort reports whether a is host:port with a host and a
// non-zero port, the host not an unspecified address (0.0.0.0, ::).
func reachableHostPort(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" || port == "" || port == "0" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsUnspecified()
}

// hostPort is a host:port flag, checked as it is parsed so that a typo is
// a usage error (exit status 2) rather than a failed listen later. Empty
// is accepted: for the flags that take it, it means off.
type hostPort string

func (h *hostPort) String() string { return string(*h) }

func (h *hostPort) Set(v string) error {
	if v != "" {
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			return fmt.Errorf("want host:port: %v", err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return fmt.Errorf("bad port %q in %q", port, v)
		}
	}
	*h = hostPort(v)
	return nil
}

// redisCLICommand is the redis-cli command line that reaches addr: -h only
// when redis-cli's default host (127.0.0.1) would not.
func redisCLICommand(addr net.Addr, askpass bool) string {
	cmd := "redis-cli"
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || !(ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.IsUnspecified()) {
		cmd += " -h " + host
	}
	cmd += " -p " + port
	if askpass {
		cmd += " --askpass"
	}
	return cmd
}
