package cluster

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// Config configures a Cluster member. Flags map onto it one to one.
type Config struct {
	Role            Role
	RESPAddr        string        // advertised RESP address host:port (node or proxy; "" for an observer)
	Bind            string        // gossip host:port to listen on (--gossip); port 0 picks a free one
	Advertise       string        // optional gossip host:port to advertise when Bind's is not reachable (containers)
	Join            []string      // gossip addresses to join (--join); retried until one answers
	BootstrapExpect int           // --bootstrap-expect (nodes only; 0 = never bootstrap)
	Dir             string        // identity, cluster id and table persisted here; "" = ephemeral id, nothing persisted
	Key             []byte        // gossip encryption key (16, 24 or 32 bytes; ParseKey) or nil
	ClusterName     string        // optional label: members with another name cannot talk (memberlist label)
	Fast            bool          // test timings (dead detected in about a second on loopback); default: memberlist's LAN profile
	ReassignAfter   time.Duration // 0 = never reassign a dead node's slots; else after this long, if the alive nodes are a majority
	Logger          *slog.Logger  // nil = slog.Default()
	Weight          uint32        // the node's relative share of the slots (--weight); 0 means 1

	// wrapTransport, for tests, wraps the gossip transport (to cut links).
	wrapTransport func(*memberlist.NetTransport) memberlist.NodeAwareTransport
	// dropHeartbeat, for tests, drops the heartbeats from one node to
	// another (a partition memberlist does not see).
	dropHeartbeat func(from, to NodeID) bool
}

// weight is Weight with its default.
func (cfg *Config) weight() uint32 { return max(cfg.Weight, 1) }

// maxLabel leaves room for the label's prefix within memberlist's 255.
const maxLabel = 200

func (cfg *Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	if !cfg.Role.valid() {
		return bad("unknown role %d", cfg.Role)
	}
	if _, _, err := splitHostPort(cfg.Bind); err != nil {
		return bad("gossip address %q: %v", cfg.Bind, err)
	}
	if cfg.Advertise != "" {
		if _, port, err := splitHostPort(cfg.Advertise); err != nil || port == 0 {
			return bad("gossip advertise address %q: want host:port with a port (%v)", cfg.Advertise, err)
		}
	}
	if cfg.RESPAddr == "" && cfg.Role != RoleObserver {
		return bad("no RESP address to advertise")
	}
	if cfg.BootstrapExpect < 0 {
		return bad("bootstrap-expect %d is negative", cfg.BootstrapExpect)
	}
	if cfg.BootstrapExpect > 0 && cfg.Role != RoleNode {
		return bad("only nodes bootstrap a cluster")
	}
	switch len(cfg.Key) {
	case 0, 16, 24, 32:
	default:
		return bad("gossip key of %d bytes (want 16, 24 or 32)", len(cfg.Key))
	}
	if len(cfg.ClusterName) > maxLabel {
		return bad("cluster name longer than %d bytes", maxLabel)
	}
	if cfg.ReassignAfter < 0 {
		return bad("reassign-after %v is negative", cfg.ReassignAfter)
	}
	return nil
}

// splitHostPort splits a gossip address; an empty host means all
// interfaces.
func splitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// ParseKey decodes a gossip key given as hex or base64 (standard or URL
// alphabet, padded or not); it must be 16, 24 or 32 bytes (AES-128/192/256).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	ok := func(b []byte) bool { return len(b) == 16 || len(b) == 24 || len(b) == 32 }
	if b, err := hex.DecodeString(s); err == nil && ok(b) {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && ok(b) {
			return b, nil
		}
	}
	return nil, ErrBadKey
}

// timings are the intervals of one profile (Fast or production).
type timings struct {
	memberlist      func() *memberlist.Config
	tick            time.Duration // the state goroutine's housekeeping period
	bootstrapSettle time.Duration // the same N nodes seen this long before bootstrapping
	rejoin          time.Duration // retry joins to dead members this often
	rejoinAlone     time.Duration // retry --join this often while no other member is alive (members start in any order)
	antiEntropy     time.Duration // a member's digest differs this long: send it our table
	reap            time.Duration // forget dead/left members that own nothing after this long
	leave           time.Duration // Close waits this long for the leave to spread
	metaTimeout     time.Duration // UpdateNode waits at most this long for its broadcast (Close waits for UpdateNode)
}

func fastTimings() timings {
	return timings{
		memberlist: func() *memberlist.Config {
			c := memberlist.DefaultLocalConfig()
			// About 100 ms probes and a suspicion of 400 ms to 1.6 s (less
			// with confirmations): a killed member is dead in about a
			// second. Tighter timings make members flap under -race on a
			// loaded machine.
			c.ProbeInterval = 100 * time.Millisecond
			c.ProbeTimeout = 60 * time.Millisecond
			c.GossipInterval = 50 * time.Millisecond
			c.SuspicionMult = 4
			c.SuspicionMaxTimeoutMult = 4
			c.PushPullInterval = time.Second
			c.TCPTimeout = 500 * time.Millisecond
			c.GossipToTheDeadTime = 500 * time.Millisecond
			c.DeadNodeReclaimTime = 200 * time.Millisecond
			return c
		},
		tick:            100 * time.Millisecond,
		bootstrapSettle: 300 * time.Millisecond,
		rejoin:          500 * time.Millisecond,
		rejoinAlone:     250 * time.Millisecond,
		antiEntropy:     500 * time.Millisecond,
		reap:            10 * time.Second,
		leave:           500 * time.Millisecond,
		metaTimeout:     100 * time.Millisecond,
	}
}

func lanTimings() timings {
	return timings{
		memberlist: func() *memberlist.Config {
			c := memberlist.DefaultLANConfig()
			c.DeadNodeReclaimTime = 5 * time.Second
			return c
		},
		tick:            500 * time.Millisecond,
		bootstrapSettle: 3 * time.Second,
		rejoin:          10 * time.Second,
		rejoinAlone:     time.Second,
		antiEntropy:     5 * time.Second,
		reap:            10 * time.Minute,
		leave:           5 * time.Second,
		metaTimeout:     500 * time.Millisecond,
	}
}
