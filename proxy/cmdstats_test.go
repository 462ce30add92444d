package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// TestDiffCommandStats compares the proxy's INFO commandstats and
// latencystats with redis-server's (difftest.CommandStatsScenario): the
// counts of the commands its clients sent, transactions and blocking
// pops included.
func TestDiffCommandStats(t *testing.T) {
	difftest.CommandStatsScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}
