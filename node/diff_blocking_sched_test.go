package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffBlockingSchedule runs difftest.RunBlockingSchedule against a
// real redis-server and the node: a seeded random schedule of blocking
// and non-blocking list commands from four connections per server, in
// lock-step, every reply compared in each connection's order.
//
// The seed is printed; SHARDGATE_DIFF_SEED replays it and SHARDGATE_DIFF_N
// sets the number of steps:
//
//	SHARDGATE_DIFF_SEED=42 SHARDGATE_DIFF_N=5000 go test ./node -run TestDiffBlockingSchedule
func TestDiffBlockingSchedule(t *testing.T) {
	cfg, err := difftest.RandomConfigFromEnv(difftest.RandomConfig{N: 400})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		cfg.N = min(cfg.N, 150)
	}
	t.Logf("seed %d, %d steps (reproduce with %s=%d)", cfg.Seed, cfg.N, difftest.EnvSeed, cfg.Seed)
	p := difftest.Start(t)
	blocks, released := difftest.RunBlockingSchedule(t, p, cfg.Seed, cfg.N)
	t.Logf("%d commands blocked, %d of them released by another connection", blocks, released)
}
