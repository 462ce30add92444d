package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// TestDiffMemory: MEMORY STATS, DOCTOR, PURGE and MALLOC-STATS through the
// proxy as one Redis 7.0 replies, the keys of every node counted
// (difftest.MemoryScenario).
func TestDiffMemory(t *testing.T) {
	difftest.MemoryScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}
