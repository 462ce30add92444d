package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/shardgate/shardgate/cluster"
)

// proxyGossipFlags are the proxy's cluster-mode flags: with --join the
// proxy becomes a member of the gossip cluster that owns no slots and
// routes by the cluster's view instead of a --nodes list.
type proxyGossipFlags struct {
	gossip    string
	advertise string
	announce  string
	join      string
	key       string
	fast      bool
}

// defaultGossipAddr is memberlist's customary port, on loopback as the
// RESP defaults are: gossip members are trusted (without --gossip-key
// anyone who reaches the port can join and claim slots), so reaching
// other hosts is asked for explicitly, with --gossip.
const defaultGossipAddr = "127.0.0.1:7946"

func (g *proxyGossipFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.join, "join", "", "cluster mode: comma-separated gossip addresses (host:port) of cluster members to join; the proxy follows the cluster's slot table (exclusive with --nodes)")
	fs.StringVar(&g.gossip, "gossip", defaultGossipAddr, "cluster mode: gossip listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&g.advertise, "gossip-advertise", "", "cluster mode: gossip address to advertise when the --gossip one is not reachable by the others (NAT, containers); empty: the --gossip one")
	fs.StringVar(&g.announce, "announce", "", "cluster mode: RESP address (host:port) announced to the cluster and shown to cluster-aware clients when several proxies run; empty: --addr, with an address of this machine if --addr listens on all interfaces")
	fs.StringVar(&g.key, "gossip-key", "", "cluster mode: key encrypting gossip, 16, 24 or 32 bytes in hex or base64; must match the cluster's")
	fs.BoolVar(&g.fast, "gossip-fast", false, "cluster mode: test timings (a dead member detected in about a second on loopback) instead of memberlist's LAN profile")
}

// enabled reports whether cluster mode was asked for.
func (g *proxyGossipFlags) enabled() bool { return strings.TrimSpace(g.join) != "" }

// config builds the cluster member's configuration, all but the RESP
// address to announce (announceAddr, once the proxy listens).
func (g *proxyGossipFlags) config(log *slog.Logger) (cluster.Config, error) {
	cfg := cluster.Config{
		Role:      cluster.RoleProxy,
		Bind:      g.gossip,
		Advertise: g.advertise,
		Fast:      g.fast,
		Logger:    log,
	}
	err := checkGossipFlags(&cfg, g.join, g.key, g.announce)
	return cfg, err
}

// checkGossipFlags checks the cluster-mode flags nodes and proxies share
// (the gossip and advertised addresses already in cfg, --join, --gossip-key,
// --announce) and fills cfg.Join and cfg.Key from them.
func checkGossipFlags(cfg *cluster.Config, join, key, announce string) error {
	if _, _, err := net.SplitHostPort(cfg.Bind); err != nil {
		return fmt.Errorf("bad --gossip address %q: %v", cfg.Bind, err)
	}
	if cfg.Advertise != "" {
		if _, _, err := net.SplitHostPort(cfg.Advertise); err != nil {
			return fmt.Errorf("bad --gossip-advertise address %q: %v", cfg.Advertise, err)
		}
	}
	for _, a := range strings.Split(join, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("bad --join address %q: %v", a, err)
		}
		cfg.Join = append(cfg.Join, a)
	}
	if key != "" {
		k, err := cluster.ParseKey(key)
		if err != nil {
			return fmt.Errorf("bad --gossip-key: %v", err)
		}
		cfg.Key = k
	}
	if announce != "" {
		if _, err := announceAddr(announce, ""); err != nil {
			return err
		}
	}
	return nil
}

// announceAddr is the RESP address to announce: --announce, else the
// address the proxy listens on (addr), its host replaced by one of this
// machine's addresses when it listens on all interfaces.
func announceAddr(announce, addr string) (string, error) {
	if announce != "" {
		host, port, err := net.SplitHostPort(announce)
		if err != nil || host == "" || port == "" || port == "0" {
			return "", fmt.Errorf("bad --announce address %q: want host:port", announce)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return "", fmt.Errorf("bad --announce address %q: not an address others can reach", announce)
		}
		return announce, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("bad --addr %q: %v", addr, err)
	}
	if port == "0" {
		return "", errors.New("a listening port 0 cannot be announced: give --announce")
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return addr, nil
	}
	ip, err := machineIP()
	if err != nil {
		return "", fmt.Errorf("--addr %s listens on all interfaces and %v: give --announce", addr, err)
	}
	return net.JoinHostPort(ip, port), nil
}

// machineIP returns an IPv4 address of an interface that is up and not a
// loopback one (the first, as memberlist picks its advertise address), or
// the loopback address when there is none.
func machineIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "127.0.0.1", nil
}

// gossipFlagSet returns the name of a cluster-mode flag given on the
// command line, or "".
func gossipFlagSet(fs *flag.FlagSet) string {
	found := ""
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "gossip", "gossip-advertise", "announce", "gossip-key", "gossip-fast":
			if found == "" {
				found = f.Name
			}
		}
	})
	return found
}
