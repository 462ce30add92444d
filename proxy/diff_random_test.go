package proxy_test

import (
	"flag"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// Flags for the random differential test of the proxy; the SHARDGATE_DIFF_*
// variables (difftest.Env*) override them:
//
//	go test ./proxy -run TestDiffRandomProxy -args -diff.n=50000
var (
	diffSeed     = flag.Uint64("diff.seed", 0, "seed of TestDiffRandomProxy (0: from the clock)")
	diffN        = flag.Int("diff.n", 3000, "commands TestDiffRandomProxy runs in each protocol")
	diffFamilies = flag.String("diff.families", "", "comma-separated command families, or all (default: proxyFamilies)")
)

// proxyFamilies are the generator's families the proxy is held to, with the
// exclusions of what must differ between a proxy over three nodes and one
// redis-server. The generator's key space has two hash tags and two
// untagged keys in other slots, so multi-key commands are sometimes
// cross-slot: a cluster-mode redis-server refuses them with CROSSSLOT just
// as the strict proxy must, which makes them part of the comparison.
var proxyFamilies = []string{
	"strings", "counters", "keyspace", "expire", "scan", "tx", "conn", "server", "arity", "bits", "hll", "bitfield", "lists",
	// As for the node (node/diff_random_test.go): the command table
	// covers only what shardgate implements, Redis lists all 240.
	"-COMMAND|", "-COMMAND|COUNT", "-COMMAND|LIST", "-COMMAND|INFO",
}

// refusedInMulti says whether the proxy refuses a command inside MULTI by
// design (resp.ErrProxyNotInMulti) where Redis queues it: HELLO, AUTH,
// CLIENT REPLY and KILL change the connection or the reply stream the
// transaction's replies are spliced into (the other CLIENT subcommands
// are queued: txLocalCommands), and the fan-out commands (DBSIZE,
// FLUSHALL, KEYS, SCAN, INFO ...) would see one node only.
func refusedInMulti(st difftest.Step, inMulti bool) bool {
	if !inMulti {
		return false
	}
	switch strings.ToUpper(st.Args[0]) {
	case "HELLO", "AUTH", "DBSIZE", "FLUSHALL", "FLUSHDB", "KEYS", "RANDOMKEY", "SCAN", "INFO":
		return true
	case "CLIENT":
		return len(st.Args) > 1 && slices.Contains([]string{"REPLY", "KILL"}, strings.ToUpper(st.Args[1]))
	case "CONFIG":
		return len(st.Args) > 1 && slices.Contains([]string{"SET", "RESETSTAT"}, strings.ToUpper(st.Args[1]))
	}
	return false
}

// proxyTarget starts three in-process nodes and a strict proxy in front of
// them; stop closes them all (a divergence's shrinking replays start many).
func proxyTarget(opts proxy.Options) difftest.Target {
	return func(t testing.TB) (string, func()) {
		t.Helper()
		var addrs []string
		var stops []func()
		for range 3 {
			_, addr, stop := nodetest.Start(t, node.Options{Logger: slog.New(slog.DiscardHandler)}, nil)
			addrs = append(addrs, addr)
			stops = append(stops, stop)
		}
		topo, err := proxy.NewStaticTopology(addrs)
		if err != nil {
			t.Fatal(err)
		}
		opts.Topology = topo
		_, addr, stopProxy := proxytest.StartProxy(t, opts)
		return addr, func() {
			stopProxy()
			for _, s := range stops {
				s()
			}
		}
	}
}

// TestDiffRandomProxy sends seeded random command sequences (the node's
// differential generator) to a real cluster-mode redis-server owning all
// slots and to the proxy over three nodes, in RESP2 and in RESP3, and stops
// at the first different reply with the seed and a short reproduction.
func TestDiffRandomProxy(t *testing.T) {
	fams := proxyFamilies
	if *diffFamilies != "" {
		fams = strings.Split(*diffFamilies, ",")
		if *diffFamilies == "all" {
			fams = difftest.Families()
		}
	}
	cfg, err := difftest.RandomConfigFromEnv(difftest.RandomConfig{
		Seed: *diffSeed, N: *diffN, Families: fams, Skip: refusedInMulti,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{2, 3} {
		t.Run(map[int]string{2: "resp2", 3: "resp3"}[proto], func(t *testing.T) {
			c := cfg
			c.Proto = proto
			p := difftest.StartTarget(t, proxyTarget(proxy.Options{}))
			difftest.RunRandom(t, p, c)
		})
	}
}
