package proxy_test

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// TestDiffMonitor: MONITOR on the proxy shows its clients' commands as
// redis-server's MONITOR shows them (difftest.MonitorScenario).
func TestDiffMonitor(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			difftest.MonitorScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})), proto)
		})
	}
}
