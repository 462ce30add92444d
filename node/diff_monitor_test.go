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
	// An EXEC refused for memory is shown (Redis's execCommandAbort
	// feeds the monitors), its queued commands are not.
	t.Run("ExecAbortOOM", func(t *testing.T) {
		p := difftest.Start(t)
		m := p.NewConnProto(t, 2)
		c := p.NewConnProto(t, 2)
		admin := p.NewConnProto(t, 2)
		m.Do(t, "MONITOR")
		c.Do(t, "MULTI")
		c.Do(t, "SET", "{k}a", "v")
		admin.Do(t, "CONFIG", "SET", "maxmemory", "1")
		defer admin.Do(t, "CONFIG", "SET", "maxmemory", "0")
		c.Do(t, "EXEC")
		c.Do(t, "PING")
		difftest.CompareMonitorLines(t, m, 3) // MULTI, EXEC, PING
	})
	t.Run("InTransaction", func(t *testing.T) {
		p := difftest.Start(t)
		p.Do(t, "MULTI")
		p.Do(t, "MONITOR")
		p.Do(t, "EXEC")
		p.Do(t, "PING") // not a monitor
	})
}
