package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// TestDiffBlockingScheduleProxy runs difftest.RunBlockingSchedule against
// a real cluster-mode redis-server and the proxy over three nodes: blocking
// and non-blocking list commands from four connections per server in
// lock-step (a proxy client counts as blocked when its node counts it),
// CLIENT UNBLOCK with the proxy's ids, disconnects while blocked, every
// reply compared in each connection's order.
//
//	SHARDGATE_DIFF_SEED=42 SHARDGATE_DIFF_N=5000 go test ./proxy -run TestDiffBlockingScheduleProxy
func TestDiffBlockingScheduleProxy(t *testing.T) {
	cfg, err := difftest.RandomConfigFromEnv(difftest.RandomConfig{N: 300})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		cfg.N = min(cfg.N, 100)
	}
	t.Logf("seed %d, %d steps (reproduce with %s=%d)", cfg.Seed, cfg.N, difftest.EnvSeed, cfg.Seed)
	p := difftest.StartTarget(t, proxyTarget(proxy.Options{}))
	blocks, released := difftest.RunBlockingSchedule(t, p, cfg.Seed, cfg.N)
	t.Logf("%d commands blocked, %d of them released by another connection", blocks, released)
}
