package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffCommandStats compares INFO commandstats and latencystats with
// redis-server's (difftest.CommandStatsScenario).
func TestDiffCommandStats(t *testing.T) {
	difftest.CommandStatsScenario(t, difftest.Start(t))
}
