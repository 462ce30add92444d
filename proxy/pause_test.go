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

// TestDiffExpiryPause: under the proxy's CLIENT PAUSE the nodes keep
// their datasets still as Redis keeps its own (expired keys read as gone
// but stay stored until the pause ends; difftest.ExpiryPauseScenario).
func TestDiffExpiryPause(t *testing.T) {
	difftest.ExpiryPauseScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}
