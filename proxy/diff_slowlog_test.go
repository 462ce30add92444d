package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
)

// TestDiffSlowlog: SLOWLOG through the proxy lists the commands one Redis
// 7.0 lists, those the proxy answers itself among those its nodes run
// (difftest.SlowlogScenario).
func TestDiffSlowlog(t *testing.T) {
	difftest.SlowlogScenario(t, difftest.StartTarget(t, proxyTarget(proxy.Options{})))
}
