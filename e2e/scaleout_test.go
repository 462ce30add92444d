package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/bench/scaleload"
)

// Parameters of TestScaleOut. The rate is what the 2-core machine
// sustains with room to spare (proxy, four nodes and the load generator
// share it; the load generator alone reaches about 20,000 ops/s), so the
// phases' throughput and latency compare at the same offered load.
const (
	scaleKeys     = 200_000
	scaleRate     = 4000
	scaleKeysRace = 20_000 // under -race the load generator is several times slower
	scaleRateRace = 1500
	scaleSeed     = 1
	// scaleSteady is how long the load runs before and after the
	// changes, for the phases' figures.
	scaleSteady = 2 * time.Second
	// scaleSettleLimit bounds each rebalance (about 3 s each here).
	scaleSettleLimit = 90 * time.Second
)

// TestScaleOut is issue 8's scale-out under load, with real processes:
// two nodes bootstrap a gossip cluster and a proxy joins it; the load
// generator (bench/scaleload) writes 200,000 keys of every kind through
// the proxy (strings with and without TTL, counters, sparse bitmaps,
// HyperLogLogs, lists used as reliable queues, streams with a consumer
// group and pending entries) and then runs a paced mix of reads and
// writes over them while a third node joins, the planner moves slots to
// it until every node is within 10% of an even share and nothing is
// migrating, and then a fourth. Afterwards every key must hold what the
// acknowledged writes left (values, TTLs, queue contents, stream entries,
// PELs with their consumers and delivery counts, group positions), no
// reply may have contradicted the model, and the clients must have seen
// no error at all. Then, under the same load, node 2 is drained with
// `shardgate cluster drain`: it must end with no slot, the three others
// within 10% of even, and the same checks must hold.
//
// It logs each phase's throughput and p50/p99 latency and every node's
// longest fence. Under -race it writes 20,000 keys at a lower rate.
func TestScaleOut(t *testing.T) {
	bin := buildShardgate(t)
	keys, rate := scaleKeys, float64(scaleRate)
	if underRace() {
		keys, rate = scaleKeysRace, scaleRateRace
	}
	tmp := t.TempDir()
	n1 := startScaleNode(t, bin, "1", filepath.Join(tmp, "n1"), "", "--bootstrap-expect", "2")
	n2 := startScaleNode(t, bin, "2", filepath.Join(tmp, "n2"), n1.gossip, "--bootstrap-expect", "2")
	px := startGossipProc(t, bin, "proxy", "--addr", "127.0.0.1:0", "--join", n1.gossip)
	nodes := []*scaleNode{n1, n2}
	dump := func() string {
		var b strings.Builder
		for _, n := range nodes {
			fmt.Fprintf(&b, "\n--- node %s (%s), last lines:\n%s", n.name, n.addr, logTail(n.log, 80))
		}
		fmt.Fprintf(&b, "\n--- proxy, last lines:\n%s", logTail(px.log, 80))
		return b.String()
	}
	waitScaleBalanced(t, "bootstrap", scaleSettleLimit, nodes, nil, dump)
	waitProxyServes(t, px.addr, dump)

	cfg := scaleload.Config{Addr: px.addr, Keys: keys, Seed: scaleSeed, Rate: rate,
		Settle: 2 * time.Second, Window: 100 * time.Millisecond}
	t.Logf("seed %d, %d keys, %.0f ops/s", cfg.Seed, cfg.Keys, cfg.Rate)
	ctx := context.Background()
	started := time.Now()
	m, err := scaleload.Populate(ctx, cfg)
	if err != nil {
		t.Fatalf("populate: %v%s", err, dump())
	}
	t.Logf("populated %d keys (%d groups) in %v", m.Keys(), m.Groups(), time.Since(started).Round(time.Millisecond))

	// Scale out 2 → 3 → 4 under load.
	load := startScaleRun(t, cfg, m)
	time.Sleep(scaleSteady)
	join3 := time.Now()
	nodes = append(nodes, startScaleNode(t, bin, "3", filepath.Join(tmp, "n3"), n1.gossip))
	counts := waitScaleBalanced(t, "2 → 3 nodes", scaleSettleLimit, nodes, nil, dump)
	done3 := time.Now()
	t.Logf("2 → 3 nodes balanced in %v: slots %s", done3.Sub(join3).Round(time.Millisecond), counts)
	join4 := time.Now()
	nodes = append(nodes, startScaleNode(t, bin, "4", filepath.Join(tmp, "n4"), n2.gossip))
	counts = waitScaleBalanced(t, "3 → 4 nodes", scaleSettleLimit, nodes, nil, dump)
	done4 := time.Now()
	t.Logf("3 → 4 nodes balanced in %v: slots %s", done4.Sub(join4).Round(time.Millisecond), counts)
	time.Sleep(scaleSteady)
	st, err := load.stop()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	logPhases(t, st, []scalePhase{
		{"before", st.Start(), join3},
		{"during 2 → 3", join3, done3},
		{"during 3 → 4", join4, done4},
		{"after", done4, st.End()},
	})
	t.Logf("longest fence of the scale-out: %v", logFences(t, nodes))
	checkScaleRun(t, "scale-out", st, rate)
	verifyScale(t, "scale-out", cfg, m, dump)
	waitConsistent(t, bin, 4, 1, viaGossip(px.gossip)...)
	if t.Failed() {
		t.FailNow()
	}

	// Drain node 2 under the same load.
	load = startScaleRun(t, cfg, m)
	time.Sleep(scaleSteady)
	drain := time.Now()
	clusterDrain(t, bin, n2, dump)
	counts = waitScaleBalanced(t, "drain of node 2", scaleSettleLimit, nodes, []*scaleNode{n2}, dump)
	drained := time.Now()
	t.Logf("node 2 drained in %v: slots %s", drained.Sub(drain).Round(time.Millisecond), counts)
	time.Sleep(scaleSteady)
	st, err = load.stop()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	logPhases(t, st, []scalePhase{
		{"before drain", st.Start(), drain},
		{"during drain", drain, drained},
		{"after drain", drained, st.End()},
	})
	t.Logf("longest fence so far: %v", logFences(t, nodes))
	checkScaleRun(t, "drain", st, rate)
	verifyScale(t, "drain", cfg, m, dump)
	waitConsistent(t, bin, 4, 1, viaGossip(px.gossip)...)
}

// waitProxyServes waits until the proxy has the cluster's table: writes
// to keys spread over the slots succeed.
func waitProxyServes(t *testing.T, addr string, dump func() string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	ctx := testContext(t)
	var err error
	for deadline := time.Now().Add(e2eTimeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		err = nil
		for i := 0; i < 64 && err == nil; i++ {
			err = rdb.Set(ctx, fmt.Sprint("scaleout:probe:", i), i, time.Minute).Err()
		}
		if err == nil {
			return
		}
	}
	t.Fatalf("the proxy does not serve: %v%s", err, dump())
}

// verifyScale reads every key back through the proxy and fails the test
// if one differs from the model.
func verifyScale(t *testing.T, what string, cfg scaleload.Config, m *scaleload.Model, dump func() string) {
	t.Helper()
	rep, err := scaleload.Verify(context.Background(), cfg, m)
	if err != nil {
		t.Fatalf("%s: verify: %v", what, err)
	}
	t.Logf("%s: %v", what, rep)
	if !rep.OK() {
		t.Errorf("%s: not every acknowledged write is intact:\n%v%s", what, rep, dump())
	}
	if rep.Uncertain != 0 {
		t.Errorf("%s: %d groups left with an unresolved ambiguous write", what, rep.Uncertain)
	}
}
