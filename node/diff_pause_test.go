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
