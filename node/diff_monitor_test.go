package node_test

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffMonitor: MONITOR on a node shows what redis-server's shows
// (difftest.MonitorScenario), in both protocols; MONITOR queued in a
// transaction is refused when EXEC runs it, as by Redis.
func TestDiffMonitor(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			difftest.MonitorScenario(t, difftest.Start(t), proto)
		})
	}
	t.Run("InTransaction", func(t *testing.T) {
		p := difftest.Start(t)
		p.Do(t, "MULTI")
		p.Do(t, "MONITOR")
		p.Do(t, "EXEC")
		p.Do(t, "PING") // not a monitor
	})
}
