package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// TestDiffClientPause: the proxy's CLIENT PAUSE and UNPAUSE hold its
// clients' commands as Redis holds its own (difftest.ClientPauseScenario).
func TestDiffClientPause(t *testing.T) {
	difftest.ClientPauseScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}
