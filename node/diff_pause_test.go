package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffClientPause: CLIENT PAUSE and UNPAUSE hold what Redis holds, for
// as long (difftest.ClientPauseScenario).
func TestDiffClientPause(t *testing.T) {
	difftest.ClientPauseScenario(t, difftest.Start(t))
}

// TestDiffExpiryPause: keys whose time runs out during a CLIENT PAUSE read
// as gone but stay stored until it ends, as in Redis
// (difftest.ExpiryPauseScenario).
func TestDiffExpiryPause(t *testing.T) {
	difftest.ExpiryPauseScenario(t, difftest.Start(t))
}
