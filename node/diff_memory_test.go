package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffMemory: MEMORY STATS, DOCTOR, PURGE and MALLOC-STATS as Redis
// 7.0 replies (difftest.MemoryScenario).
func TestDiffMemory(t *testing.T) {
	difftest.MemoryScenario(t, difftest.Start(t))
}
