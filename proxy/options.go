package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"time"
)

// CrossSlotMode says what the proxy does with a command whose keys are in
// more than one slot.
type CrossSlotMode int

const (
	// CrossSlotStrict refuses it with CROSSSLOT, as a Redis Cluster node.
	CrossSlotStrict CrossSlotMode = iota
	// CrossSlotSplit splits MGET, MSET, DEL, UNLINK, EXISTS and TOUCH into
	// one pipelined sub-request per node and merges the replies; every
	// other multi-slot command is still refused.
	CrossSlotSplit
)

// ParseCrossSlotMode parses the --cross-slot flag.
func ParseCrossSlotMode(s string) (CrossSlotMode, error) {
	switch s {
	case "strict":
		return CrossSlotStrict, nil
	case "split":
		return CrossSlotSplit, nil
	}
	return 0, fmt.Errorf("bad cross-slot mode %q (want strict or split)", s)
}

func (m CrossSlotMode) String() string {
	if m == CrossSlotSplit {
		return "split"
	}
	return "strict"
}

// Options configure a proxy. Zero values mean the defaults in
// DefaultOptions.
type Options struct {
	// Addr is the client listen address, e.g. "127.0.0.1:7379".
	Addr string
	// Topology says which node serves which slot (static mode: --nodes).
	// Exactly one of Topology and Cluster is required.
	Topology Topology
	// Cluster is the gossip cluster to follow (cluster mode: --join): the
	// proxy routes by its view, creating backends for nodes that join,
	// retiring those that leave, and answering a dead node's slots with
	// CLUSTERDOWN. The proxy takes the view's member id as its own.
	Cluster ClusterSource
	// CrossSlot is the cross-slot policy.
	CrossSlot CrossSlotMode
	// RequirePass, when set, makes clients AUTH before anything else.
	RequirePass string
	// NodePassword is sent with AUTH on every backend connection.
	NodePassword string
	// PlainRedisNodes says the nodes are redis-servers, not shardgate
	// nodes (the proxy's tests run the blocking commands against Redis
	// itself): the commands the proxy makes up then go as Redis's,
	// without the SHARDGATE wrappers (UNLOGGED, which keeps them out of a
	// node's slow log, and SLOT).
	PlainRedisNodes bool
	// MaxClients caps concurrent client connections.
	MaxClients int
	// QueryBufferLimit closes a client whose unparsed request bytes
	// exceed it, like Redis 7.0's client-query-buffer-limit (default 1 GB).
	QueryBufferLimit int64
	// ClientOutputLimit closes a client when the replies waiting to be
	// written to it exceed it, like Redis's client-output-buffer-limit
	// hard limit (default 1 GB; negative: no limit, Redis's default for
	// normal clients). The proxy stops reading from a client that does not
	// read its replies, so only one batch of replies is ever waiting.
	ClientOutputLimit int64
	// ConnsPerNode is the number of shared pipelined connections per node
	// and protocol version.
	ConnsPerNode int
	// DialTimeout bounds connecting to a node, and the check of a node
	// the cluster view declares dead while the proxy knew of no failure
	// (a dial and a PING: see verifyDead).
	DialTimeout time.Duration
	// NodeTimeout is how long a node may leave requests unanswered (with
	// no bytes moving either way) before the proxy gives up on the
	// connection and fails them.
	NodeTimeout time.Duration
	// RedialBackoff is how often the proxy tries to reach a node that is
	// down (its dial failed, or it left requests unanswered for
	// NodeTimeout); meanwhile the node's slots answer CLUSTERDOWN.
	RedialBackoff time.Duration
	// RedirectTimeout bounds the time a command (or a pipelined batch)
	// spends following the nodes' redirections, from the first one: a
	// slot migration's fence holds the slot's commands and answers
	// TRYAGAIN when it lasts longer than the node's wait, and the proxy
	// retries with a backoff (5 ms doubling to 200 ms) until this runs
	// out; then the client gets the node's last reply. Keep it below the
	// clients' read timeouts. A blocking command's own wait on a node
	// is not counted as following (blocking.go). Default 5 s.
	RedirectTimeout time.Duration
	// ShutdownGrace bounds how long Close lets clients finish: it stops
	// reading new commands at once, and each client gets the replies to
	// the commands it had sent (a blocked one is let go, as if it had
	// disconnected) before its connection closes; whoever is still busy
	// after this is disconnected. Default 5 s.
	ShutdownGrace time.Duration
	// SegmentKeys are glob patterns of keys served as segmented bitmaps.
	SegmentKeys []string
	// SegmentBits is the number of bits per bitmap segment (a power of
	// two).
	SegmentBits uint64
	// ClientAnnounce, when set (host:port), is the address CLUSTER
	// SLOTS, SHARDS and NODES show for this proxy when it presents itself
	// alone; empty, each client is shown the address it connected to.
	// Set it when clients reach the proxy through an address the proxy
	// cannot see, such as a container's published port or a NAT.
	ClientAnnounce string
	// MetricsAddr, when set, serves Prometheus metrics over HTTP.
	MetricsAddr string
	// Logger receives the proxy's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// DefaultOptions returns the options a proxy runs with unless told
// otherwise.
func DefaultOptions() Options {
	return Options{
		Addr:       "127.0.0.1:7379",
		MaxClients: 10000,
		// Redis's client-query-buffer-limit default.
		QueryBufferLimit:  1 << 30,
		ClientOutputLimit: 1 << 30,
		ConnsPerNode:      1,
		DialTimeout:       time.Second,
		NodeTimeout:       5 * time.Second,
		RedialBackoff:     500 * time.Millisecond,
		RedirectTimeout:   5 * time.Second,
		ShutdownGrace:     5 * time.Second,
		SegmentBits:       1 << 23,
	}
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Topology != nil && o.Cluster != nil:
		return o, errors.New("proxy: a static topology and a cluster source are exclusive")
	case o.Cluster != nil:
	case o.Topology == nil || len(o.Topology.Nodes()) == 0:
		return o, errors.New("proxy: a topology with at least one node (or a cluster source) is required")
	}
	return o.settings()
}

// Check reports what New would refuse in these options other than the
// topology, which a caller may build only afterwards: `shardgate up`
// checks its flags before it starts the nodes the topology lists.
func (o Options) Check() error {
	o, err := o.settings()
	if err != nil {
		return err
	}
	_, err = newSegments(o)
	return err
}

// settings fills in the defaults of everything but the topology and
// checks the values.
func (o Options) settings() (Options, error) {
	d := DefaultOptions()
	if o.Addr == "" {
		o.Addr = d.Addr
	}
	if o.MaxClients == 0 {
		o.MaxClients = d.MaxClients
	}
	if o.QueryBufferLimit == 0 {
		o.QueryBufferLimit = d.QueryBufferLimit
	}
	if o.ClientOutputLimit == 0 {
		o.ClientOutputLimit = d.ClientOutputLimit
	}
	if o.ConnsPerNode == 0 {
		o.ConnsPerNode = d.ConnsPerNode
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = d.DialTimeout
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = d.NodeTimeout
	}
	if o.RedialBackoff == 0 {
		o.RedialBackoff = d.RedialBackoff
	}
	if o.RedirectTimeout == 0 {
		o.RedirectTimeout = d.RedirectTimeout
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = d.ShutdownGrace
	}
	if o.SegmentBits == 0 {
		o.SegmentBits = d.SegmentBits
	}
	switch {
	case o.MaxClients < 0:
		return o, errors.New("proxy: MaxClients must be positive")
	case o.QueryBufferLimit < 1<<20:
		return o, errors.New("proxy: QueryBufferLimit must be at least 1 MB")
	case o.ConnsPerNode < 0 || o.ConnsPerNode > 64:
		return o, errors.New("proxy: ConnsPerNode must be between 1 and 64")
	case o.DialTimeout < 0 || o.NodeTimeout < 0 || o.RedialBackoff < 0 || o.RedirectTimeout < 0 || o.ShutdownGrace < 0:
		return o, errors.New("proxy: timeouts must be positive")
	case bits.OnesCount64(o.SegmentBits) != 1 || o.SegmentBits < 1<<12 || o.SegmentBits > 1<<32:
		return o, errors.New("proxy: SegmentBits must be a power of two between 2^12 and 2^32")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}
